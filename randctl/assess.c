/* randctl assess: SP 800-90B on a file of samples, one per byte. Owns the options (one table),
 * reading the file, and the non-IID track's output (NIST's ea_non_iid's figures; the
 * estimators are internal/entropy_assess.c's). The IID track is assess_iid.c's, the HTML
 * report assess_report.c's. Needs no daemon. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "assess.h"
#include "randctl.h"

/* --- progress ------------------------------------------------------------------------------- */

/* On a terminal one line, redrawn as the percentage moves; otherwise (--progress into a
 * file or pipe) a line per stage. */
void assess_show_progress(void *arg, double done, const char *what)
{
    struct assess_progress *p = arg;
    int percent = (int)(done * 100.0);
    bool next = strcmp(what, p->what) != 0;

    if (!next && (!p->tty || percent == p->percent))
        return;
    p->percent = percent;
    snprintf(p->what, sizeof(p->what), "%s", what);
    fprintf(stderr, p->tty ? "\r\033[Kassess: %3d%% %s" : "assess: %3d%% %s\n", percent, what);
}

void assess_progress_done(const struct assess_progress *p)
{
    if (p->tty)
        fprintf(stderr, "\r\033[K");
}

/* --- the file ------------------------------------------------------------------------------- */

/* Reads all of path (- for stdin), up to one byte more than the assessment takes. Returns
 * the buffer (NULL with errno set) and its length in *n. */
static uint8_t *read_samples(const char *path, size_t *n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 1 << 20, limit = (size_t)RANDD_EA_MAX_SAMPLES + 1;
    uint8_t *buf = NULL, *bigger;
    int err = 0;

    *n = 0;
    if (!f)
        return NULL;
    for (;;) {
        size_t got;

        if (!(bigger = malloc(cap))) {
            err = ENOMEM;
            break;
        }
        if (buf)
            memcpy(bigger, buf, *n);
        OPENSSL_clear_free(buf, *n);
        buf = bigger;
        while (*n < cap && (got = fread(buf + *n, 1, cap - *n, f)) > 0)
            *n += got;
        if (ferror(f))
            err = EIO;
        if (*n < cap || cap >= limit || err)
            break;
        cap = cap * 2 < limit ? cap * 2 : limit;
    }
    if (f != stdin)
        fclose(f);
    if (err) {
        OPENSSL_clear_free(buf, *n);
        errno = err;
        return NULL;
    }
    return buf;
}

/* --- the report ----------------------------------------------------------------------------- */

static void print_estimate(double h)
{
    if (isnan(h))
        printf(" %10s", "-");
    else
        printf(" %10.8f", h);
}

static void print_non_iid(const char *path, const struct randd_ea_result *r)
{
    bool bitstring = r->bitstring_bits > 0;

    printf("file: %s\n", path);
    printf("samples: %zu, %u bit%s each, %u distinct value%s\n", r->samples, r->bits,
           r->bits == 1 ? "" : "s", r->symbols, r->symbols == 1 ? "" : "s");
    if (bitstring)
        printf("bitstring: %zu bits%s\n", r->bitstring_bits,
               r->bitstring_bits < (size_t)r->samples * r->bits ? " (truncated)" : "");
    if (r->symbols < 2) {
        printf("assessed min-entropy: 0 bits per sample (one value only)\n");
        return;
    }
    printf("%-30s %10s%s\n", "estimate (SP 800-90B)", "literal", bitstring ? "  bitstring" : "");
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
        char name[48];

        snprintf(name, sizeof(name), "%s (%s)", randd_ea_names[e], randd_ea_sections[e]);
        printf("%-30s", name);
        print_estimate(r->literal[e]);
        if (bitstring)
            print_estimate(r->bitstring[e]);
        printf("\n");
    }
    printf("H_original: %.8f bits per sample\n", r->h_original);
    if (bitstring)
        printf("H_bitstring: %.8f bits per bit (x %u = %.8f per sample)\n", r->h_bitstring,
               r->bits, r->bits * r->h_bitstring);
    printf("assessed min-entropy: %.8f bits per sample\n", r->h_assessed);
}

/* --- the non-IID track (the default) ------------------------------------------------------ */

int assess_claim_verdict(const struct assess_request *req, double h)
{
    if (isnan(req->claim))
        return EXIT_OK;
    if (isnan(h)) {
        printf("claim: %.4f bits per sample: NOT SUPPORTED: the IID track credits nothing "
               "here (the samples were not shown to be IID; assess without --iid)\n",
               req->claim);
        return EXIT_FAILED;
    }
    if (req->claim <= h + 1e-12) {
        printf("claim: %.4f bits per sample: supported (assessed %.4f)\n", req->claim, h);
        return EXIT_OK;
    }
    printf("claim: %.4f bits per sample: NOT SUPPORTED: above the %.4f assessed\n", req->claim,
           h);
    return EXIT_FAILED;
}

static int assess_non_iid(const struct assess_request *req, const uint8_t *samples, size_t n)
{
    struct assess_progress progress = { isatty(STDERR_FILENO), -1, "" };
    struct randd_ea_result r;
    int rc, verdict;

    rc = randd_ea_assess(samples, n, req->bits, req->flags, &r,
                         req->progress ? assess_show_progress : NULL, &progress);
    if (req->progress)
        assess_progress_done(&progress);
    if (rc < 0)
        return fail("assess", rc);
    print_non_iid(req->path, &r);
    verdict = assess_claim_verdict(req, r.symbols < 2 ? 0.0 : r.h_assessed);
    if (fflush(stdout) != 0)
        return fail("assess", -EIO);
    if (req->report) {
        struct assess_report page = { req->path, samples, n, r.bits, req->claim, &r, NULL,
                                      NULL };

        if ((rc = assess_report_write(req->report_file, &page)) != EXIT_OK)
            return rc;
    }
    return verdict;
}

/* --- the options -------------------------------------------------------------------------- */

/* One entry an option; value is NULL for a flag. Returns EXIT_OK or usage_error's code. */
struct assess_option {
    const char *name;
    bool takes_value;
    int (*apply)(struct assess_request *req, const char *value);
};

static int opt_bits(struct assess_request *req, const char *value)
{
    unsigned long long bits;

    if (!parse_count(value, 8, &bits) || bits == 0)
        return usage_error(&cmd_assess, "--bits: not a number from 1 to 8: %s", value);
    req->bits = (unsigned)bits;
    return EXIT_OK;
}

static int opt_truncate(struct assess_request *req, const char *value)
{
    (void)value;
    req->flags |= RANDD_EA_TRUNCATE;
    return EXIT_OK;
}

static int opt_progress(struct assess_request *req, const char *value)
{
    (void)value;
    req->progress = true;
    return EXIT_OK;
}

static int opt_iid(struct assess_request *req, const char *value)
{
    (void)value;
    req->iid = true;
    return EXIT_OK;
}

static int opt_no_permutations(struct assess_request *req, const char *value)
{
    (void)value;
    req->no_permutations = true;
    return EXIT_OK;
}

static int opt_stop_when_settled(struct assess_request *req, const char *value)
{
    (void)value;
    req->stop_when_settled = true;
    return EXIT_OK;
}

/* 64 hex digits, as assess --iid prints the seed it used. */
static int opt_seed(struct assess_request *req, const char *value)
{
    size_t len = strlen(value);

    if (len != 2 * RANDD_IID_SEED_BYTES || strspn(value, "0123456789abcdefABCDEF") != len)
        return usage_error(&cmd_assess, "--seed: not %d hex digits: %s",
                           2 * RANDD_IID_SEED_BYTES, value);
    for (size_t i = 0; i < RANDD_IID_SEED_BYTES; i++) {
        char pair[3] = { value[2 * i], value[2 * i + 1], 0 };

        req->seed[i] = (uint8_t)strtoul(pair, NULL, 16);
    }
    req->seeded = true;
    return EXIT_OK;
}

static int opt_report(struct assess_request *req, const char *value)
{
    if (!*value)
        return usage_error(&cmd_assess, "--report: an empty file name");
    req->report = value;
    return EXIT_OK;
}

static int opt_force(struct assess_request *req, const char *value)
{
    (void)value;
    req->force = true;
    return EXIT_OK;
}

static int opt_claim(struct assess_request *req, const char *value)
{
    char *end;
    double h = strtod(value, &end);

    if (end == value || *end || !(h >= 0.0 && h <= 8.0))
        return usage_error(&cmd_assess, "--claim: not a number of bits from 0 to 8: %s", value);
    req->claim = h;
    return EXIT_OK;
}

static const struct assess_option options[] = {
    { "--bits", true, opt_bits },
    { "--truncate", false, opt_truncate },
    { "--progress", false, opt_progress },
    { "--iid", false, opt_iid },
    { "--no-permutations", false, opt_no_permutations },
    { "--stop-when-settled", false, opt_stop_when_settled },
    { "--seed", true, opt_seed },
    { "--report", true, opt_report },
    { "--force", false, opt_force },
    { "--claim", true, opt_claim },
};

static int parse_options(int argc, char **argv, struct assess_request *req)
{
    for (int i = 1; i < argc; i++) {
        const struct assess_option *o = NULL;
        int rc;

        for (size_t j = 0; j < sizeof(options) / sizeof(options[0]); j++)
            if (!strcmp(argv[i], options[j].name))
                o = &options[j];
        if (o && o->takes_value && i + 1 >= argc)
            return usage_error(&cmd_assess, "%s needs a value", o->name);
        if (o) {
            if ((rc = o->apply(req, o->takes_value ? argv[++i] : NULL)) != EXIT_OK)
                return rc;
        } else if (!req->path && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
            req->path = argv[i];
        } else {
            return usage_error(&cmd_assess, "bad argument: %s", argv[i]);
        }
    }
    if (!req->path)
        return usage_error(&cmd_assess, "FILE is missing");
    if (req->no_permutations && !req->iid)
        return usage_error(&cmd_assess, "--no-permutations: only with --iid");
    if (req->stop_when_settled && (!req->iid || req->no_permutations))
        return usage_error(&cmd_assess, "--stop-when-settled: only with --iid and its shuffles");
    if (req->seeded && (!req->iid || req->no_permutations))
        return usage_error(&cmd_assess, "--seed: only with --iid and its shuffles");
    if (req->iid && (req->flags & RANDD_EA_TRUNCATE))
        return usage_error(&cmd_assess, "--truncate: not with --iid (ea_iid -a: all bits)");
    if (req->force && !req->report)
        return usage_error(&cmd_assess, "--force: only with --report (it may replace the page)");
    if (req->bits && req->claim > req->bits)
        return usage_error(&cmd_assess, "--claim %g: more than the %u bits a sample holds "
                           "(--bits %u)", req->claim, req->bits, req->bits);
    return EXIT_OK;
}

/* --- the command -------------------------------------------------------------------------- */

static int run_assess(int argc, char **argv)
{
    struct assess_request req = { .progress = isatty(STDERR_FILENO), .claim = NAN };
    struct randd_output report_file = { 0 };
    unsigned width;
    uint8_t *samples;
    size_t n;
    int rc;

    /* Line by line, even into a file or a pipe: a run killed after an hour keeps what it
     * printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);

    for (int i = 1; i < argc; i++) {    /* modes that parse their own arguments */
        if (!strcmp(argv[i], "--restart"))
            return run_assess_restart(argc, argv);
        if (!strcmp(argv[i], "--conditioning"))
            return run_assess_conditioning(argc, argv);
    }
    if ((rc = parse_options(argc, argv, &req)) != EXIT_OK)
        return rc;
    req.report_file = &report_file;
    if (req.report && (rc = assess_report_open(&report_file, req.report, req.force)) != EXIT_OK)
        return rc;
    if (!(samples = read_samples(req.path, &n))) {
        fprintf(stderr, "randctl: %s: %s\n", req.path, strerror(errno));
        randd_output_abort(&report_file);
        return EXIT_FAILED;
    }
    width = randd_ea_width(samples, n);
    if (n == 0 || n > RANDD_EA_MAX_SAMPLES || (req.bits && width > req.bits)) {
        OPENSSL_clear_free(samples, n);
        randd_output_abort(&report_file);
        if (n == 0)
            return data_error(&cmd_assess, "%s: empty: no samples", req.path);
        if (n > RANDD_EA_MAX_SAMPLES)
            return data_error(&cmd_assess, "%s: more than %u samples", req.path,
                               RANDD_EA_MAX_SAMPLES);
        return data_error(&cmd_assess, "%s: values up to %u bits wide, wider than --bits %u",
                           req.path, width, req.bits);
    }
    if (!isnan(req.claim) && req.claim > (req.bits ? req.bits : width)) {
        OPENSSL_clear_free(samples, n);
        randd_output_abort(&report_file);
        return data_error(&cmd_assess, "--claim %g: more than the %u bit%s a sample of %s "
                           "holds", req.claim, width, width == 1 ? "" : "s", req.path);
    }
    if (n < RANDD_EA_MIN_SAMPLES)
        fprintf(stderr, "randctl: assess: warning: %zu samples; SP 800-90B 3.1.1 asks for at "
                "least %u\n", n, RANDD_EA_MIN_SAMPLES);
    if (req.bits && width < req.bits)
        fprintf(stderr, "randctl: assess: warning: the values need only %u bit%s, fewer than "
                "--bits %u\n", width, width == 1 ? "" : "s", req.bits);
    rc = req.iid ? assess_iid(&req, samples, n) : assess_non_iid(&req, samples, n);
    OPENSSL_clear_free(samples, n);
    randd_output_abort(&report_file);     /* a page not written (an error): nothing left */
    return rc;
}

const struct command cmd_assess = {
    "assess", "assess FILE [--bits W] [--truncate] [--iid [--no-permutations|--seed HEX] "
              "[--stop-when-settled]] "
              "[--progress] "
              "[--report OUT.html [--force]] [--claim H] | FILE --restart --h-initial H "
              "[--bits W] [--progress] [--report OUT.html [--force]] | --conditioning "
              "--vetted|--non-vetted N_IN N_OUT NW H_IN "
              "[H_PRIME|--conditioned-file FILE]  SP 800-90B min-entropy, IID tests, restart "
              "tests, conditioning, report",
    run_assess,
};
