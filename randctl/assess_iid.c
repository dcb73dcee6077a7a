/* randctl assess --iid: SP 800-90B section 5 on a file of samples, printed with the figures
 * NIST's `ea_iid -i -a -v` prints, in its order. The tests are internal/entropy_iid.c's; this
 * file owns their output and hands them to the report. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "assess.h"
#include "randctl.h"

static const char *passed(bool ok)
{
    return ok ? "passed" : "FAILED";
}

static void print_chi_square(const char *name, const struct randd_iid_chi_square *c)
{
    printf("%s: score %.6f, %d degrees of freedom, p-value %.6f: %s\n", name, c->score, c->df,
           c->p_value, passed(c->p_value >= 0.001));
}

/* Why the verdict is what it is, in one line. */
static void print_verdict(const struct randd_iid_result *r)
{
    if (r->iid) {
        printf("verdict: IID (chi-square, LRS and permutation tests passed); "
               "min-entropy %.6f bits per sample\n", r->h_assessed);
        return;
    }
    printf("verdict: %s (", r->chi_square_passed && r->lrs_passed && !r->permutations_ran ?
           "undecided" : "not IID");
    const char *sep = "";
    if (!r->chi_square_passed)
        printf("%schi-square failed", sep), sep = "; ";
    if (!r->lrs_passed)
        printf("%sLRS failed", sep), sep = "; ";
    if (r->permutations_stopped)
        printf("%spermutation tests stopped once it was settled", sep);
    else if (!r->permutations_ran)
        printf("%spermutation tests not run", sep);
    else if (!r->permutation_passed)
        printf("%spermutation tests failed", sep);
    printf("): use the non-IID track (randctl assess without --iid)\n");
}

static void print_iid(const char *path, const struct randd_iid_result *r)
{
    printf("file: %s\n", path);
    printf("samples: %zu, %u bit%s each, %u distinct values%s\n", r->samples, r->bits,
           r->bits == 1 ? "" : "s", r->symbols, r->binary ? " (binary)" : "");
    printf("raw mean: %.6f, median: %.6f\n", r->raw_mean, r->median);
    printf("literal MCV: mode %zu, p-hat %.17g, p_u %.17g\n", r->literal.mode, r->literal.p_hat,
           r->literal.p_u);
    if (r->bitstring_bits)
        printf("bitstring MCV: mode %zu of %zu bits, p-hat %.17g, p_u %.17g\n",
               r->bitstring.mode, r->bitstring_bits, r->bitstring.p_hat, r->bitstring.p_u);
    printf("H_original: %.8f bits per sample\n", r->h_original);
    if (r->bitstring_bits) {
        printf("H_bitstring: %.8f bits per bit (x %u = %.8f per sample)\n", r->h_bitstring,
               r->bits, r->bits * r->h_bitstring);
        printf("min(H_original, %u x H_bitstring): %.8f bits per sample\n", r->bits,
               r->h_assessed);
    }
    print_chi_square("chi-square independence (5.2.1)", &r->independence);
    print_chi_square("chi-square goodness of fit (5.2.2)", &r->goodness_of_fit);
    printf("chi-square tests: %s\n", passed(r->chi_square_passed));
    printf("longest repeated substring (5.2.5): length %zu, P_col %.6f, Pr(X >= 1) %.6f: %s\n",
           r->lrs_length, r->lrs_p_col, r->lrs_probability, passed(r->lrs_passed));
    if (r->settled_early)
        printf("verdict settled here: not IID, whatever the shuffles say; %s\n",
               r->permutations_stopped ? "the shuffles were stopped (--stop-when-settled)" :
               "the shuffles ran on for the record (--stop-when-settled stops them)");
    printf("%-24s %16s %8s %8s %8s\n", "statistic (5.1)", "on the data", "C[i][0]", "C[i][1]",
           "C[i][2]");
    for (int i = 0; i < RANDD_IID_STATISTICS; i++) {
        const unsigned *c = r->counts[i];

        printf("%-24s %16.10g", randd_iid_names[i], r->statistics[i]);
        if (r->permutations_ran)
            printf(" %8u %8u %8u%s", c[0], c[1], c[2],
                   randd_iid_statistic_passed(c) ? "" : "  FAILED");
        printf("\n");
    }
    if (r->permutations_ran) {
        unsigned ok = 0;

        for (int i = 0; i < RANDD_IID_STATISTICS; i++)
            ok += randd_iid_statistic_passed(r->counts[i]);
        printf("permutation tests (5.1): %s, %u of %u statistics passed, %u shuffles\n",
               passed(r->permutation_passed), ok, RANDD_IID_STATISTICS, r->shuffles);
        printf("shuffle seed: ");
        for (int i = 0; i < RANDD_IID_SEED_BYTES; i++)
            printf("%02x", r->seed[i]);
        printf(" (--seed repeats these counts)\n");
        if (!r->compression_counted)    /* the count differed from libbz2 (entropy_iid.h) */
            printf("compression statistic: libbz2 compressed every shuffle: its length count "
                   "disagreed with libbz2 on the data or on shuffle 0\n");
    } else if (r->permutations_stopped) {
        printf("permutation tests (5.1): stopped once the verdict was settled "
               "(--stop-when-settled)\n");
    } else {
        printf("permutation tests (5.1): not run (--no-permutations)\n");
    }
    print_verdict(r);
}

int assess_iid(const struct assess_request *req, const uint8_t *samples, size_t n)
{
    struct assess_progress progress = { isatty(STDERR_FILENO), -1, "" };
    struct randd_iid_options o = { (req->no_permutations ? RANDD_IID_NO_PERMUTATIONS : 0) |
                                   (req->stop_when_settled ? RANDD_IID_STOP_WHEN_SETTLED : 0),
                                   req->seeded ? req->seed : NULL, 0 };
    struct randd_iid_result r;
    int rc, verdict;

    rc = randd_iid_assess_with(samples, n, req->bits, &o, &r,
                               req->progress ? assess_show_progress : NULL, &progress);
    if (req->progress)
        assess_progress_done(&progress);
    if (rc == -EDOM)
        return data_error(&cmd_assess, "%s: one value only: the IID tests cannot run, and the "
                           "samples have no entropy", req->path);
    if (rc == -EINVAL && n < 2)
        return data_error(&cmd_assess, "%s: one sample: the IID tests need more", req->path);
    if (rc < 0)
        return fail("assess", rc);
    print_iid(req->path, &r);
    verdict = assess_claim_verdict(req, r.iid ? r.h_assessed : NAN);
    if (fflush(stdout) != 0)
        return fail("assess", -EIO);
    if (req->report) {
        struct assess_report page = { req->path, samples, n, r.bits, req->claim, NULL, &r,
                                      NULL };

        if ((rc = assess_report_write(req->report_file, &page)) != EXIT_OK)
            return rc;
    }
    return verdict;
}
