/* The SP 800-90B IID track (internal/entropy_iid.c) against NIST's ea_iid: every figure
 * `ea_iid -i -a -v` prints before its permutation tests (MCV, H_original, H_bitstring, both
 * chi-square tests, the LRS test, the 19 statistics), parsed from its own output in
 * tests/vectors/sp800-90b/iid/, and the verdicts where NIST's runs always agree; the
 * permutation counts' rules; the API's edges. Run from the repository root. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_iid.h"
#include "runner.h"

#define VECTORS "tests/vectors/sp800-90b/"
#define AGREEMENT 1e-6          /* relative, or half a unit of ea_iid's last printed digit */

/* --- ea_iid's figures --------------------------------------------------------------------- */

struct printed {
    double value, half_unit;    /* half a unit in the last digit printed */
};

/* What ea_iid printed, by its label; a figure is NAN when absent. */
struct nist {
    struct printed mode, p_hat, p_u, bmode, bp_hat, bp_u, h_original, h_bitstring;
    struct printed score[2], df[2], p[2], p_col, lrs_length, lrs_p;
    struct printed stat[RANDD_IID_STATISTICS];
    int chi_square_passed, lrs_passed, permutation_passed;     /* -1: not printed */
};

static struct printed parse_number(const char *text)
{
    struct printed r = { NAN, 0.0 };
    const char *dot, *e;
    char *end;
    int decimals = 0, exponent = 0;

    r.value = strtod(text, &end);
    ck_assert_msg(end != text, "not a number: %s", text);
    dot = memchr(text, '.', (size_t)(end - text));
    e = memchr(text, 'e', (size_t)(end - text));
    if (dot)
        decimals = (int)((e ? e : end) - dot - 1);
    if (e)
        exponent = atoi(e + 1);
    r.half_unit = 0.5 * pow(10.0, exponent - decimals);
    return r;
}

static bool after(const char *line, const char *label, struct printed *v)
{
    const char *at = strstr(line, label);

    if (!at)
        return false;
    *v = parse_number(at + strlen(label));
    return true;
}

static void parse_iid(const char *path, struct nist *r)
{
    FILE *f = fopen(path, "r");
    struct printed none = { NAN, 0.0 }, *slot;
    char line[512];
    int chi = -1;           /* 0: independence, 1: goodness of fit */

    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root): %s", path,
                  strerror(errno));
    for (struct printed *p = &r->mode; p <= &r->stat[RANDD_IID_STATISTICS - 1]; p++)
        *p = none;
    r->chi_square_passed = r->lrs_passed = r->permutation_passed = -1;
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "Literal MCV", 11) || !strncmp(line, "Bitstring MCV", 13)) {
            bool literal = line[0] == 'L';

            after(line, "mode = ", literal ? &r->mode : &r->bmode);
            after(line, "p-hat = ", literal ? &r->p_hat : &r->bp_hat);
            after(line, "p_u = ", literal ? &r->p_u : &r->bp_u);
            continue;
        }
        if (after(line, "H_original: ", &r->h_original) ||
            after(line, "H_bitstring: ", &r->h_bitstring))
            continue;
        if (!strncmp(line, "Chi square independence", 23))
            chi = 0;
        else if (!strncmp(line, "Chi square goodness of fit", 26))
            chi = 1;
        if (chi >= 0 && (after(line, "score = ", &r->score[chi]) ||
                         after(line, "degrees of freedom = ", &r->df[chi]) ||
                         after(line, "p-value = ", &r->p[chi])))
            continue;
        if (after(line, "P_col: ", &r->p_col) ||
            after(line, "Length of LRS: ", &r->lrs_length) ||
            after(line, "Pr(X >= 1): ", &r->lrs_p))
            continue;
        if (strstr(line, "chi square tests"))
            r->chi_square_passed = strstr(line, "Passed") != NULL;
        if (strstr(line, "longest repeated substring test"))
            r->lrs_passed = strstr(line, "Passed") != NULL;
        if (strstr(line, "IID permutation tests"))
            r->permutation_passed = strstr(line, "Passed") != NULL;
        for (int i = 0; i < RANDD_IID_STATISTICS && strstr(line, ": "); i++) {
            char label[64];

            snprintf(label, sizeof(label), "%23s: ", randd_iid_names[i]);
            if (!strncmp(line, label, strlen(label)) && (slot = &r->stat[i]))
                *slot = parse_number(line + strlen(label));
        }
    }
    fclose(f);
}

static uint8_t *read_samples(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *s = malloc(1 << 21);

    ck_assert_msg(f && s, "cannot open %s: %s", path, strerror(errno));
    *n = fread(s, 1, 1 << 21, f);
    fclose(f);
    return s;
}

struct agreement {
    int figures;
    double worst;
    const char *worst_name;
};

static void agree(struct agreement *a, const char *name, double ours, struct printed nist)
{
    double slack = fmax(AGREEMENT * fabs(nist.value), nist.half_unit * (1 + 1e-9));
    double off = fabs(ours - nist.value);

    ck_assert_msg(!isnan(nist.value), "%s: ea_iid printed no figure", name);
    ck_assert_msg(off <= slack, "%s: ours %.17g, ea_iid's %.17g (off by %.3g, allowed %.3g)",
                  name, ours, nist.value, off, slack);
    a->figures++;
    if (nist.value != 0 && off / fabs(nist.value) > a->worst) {
        a->worst = off / fabs(nist.value);
        a->worst_name = name;
    }
}

/* Compares the deterministic figures; the permutation tests run unless only_figures. */
static void check_against_nist(const char *name, bool only_figures, struct randd_iid_result *r)
{
    char path[256];
    struct agreement a = { 0, 0.0, "-" };
    struct nist want;
    uint8_t *samples;
    size_t n;

    snprintf(path, sizeof(path), VECTORS "iid/%s.iid.txt", name);
    parse_iid(path, &want);
    snprintf(path, sizeof(path), VECTORS "%s.bin", name);
    samples = read_samples(path, &n);
    ck_assert_int_eq(randd_iid_assess(samples, n, 0,
                                      only_figures ? RANDD_IID_NO_PERMUTATIONS : 0, r, NULL,
                                      NULL), 0);
    agree(&a, "literal MCV mode", (double)r->literal.mode, want.mode);
    agree(&a, "literal p-hat", r->literal.p_hat, want.p_hat);
    agree(&a, "literal p_u", r->literal.p_u, want.p_u);
    agree(&a, "H_original", r->h_original, want.h_original);
    if (!r->binary) {
        agree(&a, "bitstring MCV mode", (double)r->bitstring.mode, want.bmode);
        agree(&a, "bitstring p-hat", r->bitstring.p_hat, want.bp_hat);
        agree(&a, "bitstring p_u", r->bitstring.p_u, want.bp_u);
        agree(&a, "H_bitstring", r->h_bitstring, want.h_bitstring);
    } else {
        ck_assert_msg(isnan(want.h_bitstring.value), "ea_iid gave binary data an H_bitstring");
    }
    agree(&a, "independence score", r->independence.score, want.score[0]);
    agree(&a, "independence df", r->independence.df, want.df[0]);
    agree(&a, "independence p-value", r->independence.p_value, want.p[0]);
    agree(&a, "goodness-of-fit score", r->goodness_of_fit.score, want.score[1]);
    agree(&a, "goodness-of-fit df", r->goodness_of_fit.df, want.df[1]);
    agree(&a, "goodness-of-fit p-value", r->goodness_of_fit.p_value, want.p[1]);
    agree(&a, "LRS P_col", r->lrs_p_col, want.p_col);
    agree(&a, "LRS length", (double)r->lrs_length, want.lrs_length);
    agree(&a, "LRS Pr(X >= 1)", r->lrs_probability, want.lrs_p);
    for (int i = 0; i < RANDD_IID_STATISTICS; i++)
        agree(&a, randd_iid_names[i], r->statistics[i], want.stat[i]);
    ck_assert_msg(r->chi_square_passed == want.chi_square_passed,
                  "chi-square: ours %s, ea_iid %s",
                  r->chi_square_passed ? "passed" : "failed",
                  want.chi_square_passed ? "passed" : "failed");
    ck_assert_msg(r->lrs_passed == want.lrs_passed, "LRS: ours %s, ea_iid %s",
                  r->lrs_passed ? "passed" : "failed", want.lrs_passed ? "passed" : "failed");
    printf("test_entropy_iid: %s: %d figures agree with ea_iid; largest relative error "
           "%.2g (%s)\n", name, a.figures, a.worst, a.worst_name);
    free(samples);
}

/* Every statistic's counts are decided, or the shuffling ran to the end. */
static void check_counts(const struct randd_iid_result *r)
{
    ck_assert(r->permutations_ran);
    ck_assert_uint_le(r->shuffles, RANDD_IID_PERMUTATIONS);
    for (int i = 0; i < RANDD_IID_STATISTICS; i++) {
        const unsigned *c = r->counts[i];

        ck_assert_uint_le(c[0] + c[1] + c[2], r->shuffles);
        ck_assert_msg(randd_iid_decided(c) || r->shuffles == RANDD_IID_PERMUTATIONS,
                      "%s undecided (%u %u %u) after %u shuffles", randd_iid_names[i], c[0],
                      c[1], c[2], r->shuffles);
    }
}

START_TEST(binary_samples_agree_with_ea_iid_and_pass)
{
    struct randd_iid_result r;

    check_against_nist("rand1_short", false, &r);
    check_counts(&r);
    ck_assert_msg(r.permutation_passed && r.iid, "rand1_short: ea_iid finds it IID, we do not");
}
END_TEST

START_TEST(four_bit_samples_agree_with_ea_iid)
{
    struct randd_iid_result r;

    check_against_nist("rand4_short", false, &r);
    check_counts(&r);       /* its permutation verdict varies between runs of ea_iid too */
}
END_TEST

START_TEST(byte_samples_agree_with_ea_iid_and_fail_chi_square)
{
    struct randd_iid_result r;

    check_against_nist("rand8_short", false, &r);
    check_counts(&r);
    ck_assert_msg(!r.iid, "rand8_short fails ea_iid's chi-square test, yet we call it IID");
}
END_TEST

START_TEST(ring_oscillator_agrees_with_ea_iid_and_is_not_iid)
{
    struct randd_iid_result r;

    check_against_nist("ringOsc-nist", true, &r);
    ck_assert(!r.permutations_ran && !r.iid);
}
END_TEST

/* Values that climb in a ramp are as far from IID as data gets: the directional runs of the
 * data as given are far fewer than any shuffle's, so the permutation tests fail it. */
START_TEST(a_ramp_fails_the_permutation_tests)
{
    enum { N = 1024 };
    static uint8_t s[N];
    struct randd_iid_result r;

    for (int i = 0; i < N; i++)
        s[i] = (uint8_t)(i % 64);
    ck_assert_int_eq(randd_iid_assess(s, N, 0, 0, &r, NULL, NULL), 0);
    check_counts(&r);
    ck_assert_msg(!randd_iid_statistic_passed(r.counts[1]), "numDirectionalRuns %u %u %u",
                  r.counts[1][0], r.counts[1][1], r.counts[1][2]);
    ck_assert(!r.permutation_passed && !r.iid);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
    static const uint8_t s[4] = { 0, 1, 2, 9 }, same[4] = { 7, 7, 7, 7 };
    struct randd_iid_result r;

    ck_assert_int_eq(randd_iid_assess(s, 1, 0, 0, &r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_iid_assess(s, 4, 9, 0, &r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_iid_assess(s, 4, 0, 2, &r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_iid_assess(s, 4, 3, 0, &r, NULL, NULL), -ERANGE);
    ck_assert_int_eq(randd_iid_assess(same, 4, 0, 0, &r, NULL, NULL), -EDOM);
    ck_assert_int_eq(randd_iid_assess(s, (size_t)RANDD_EA_MAX_SAMPLES + 1, 0, 0, &r, NULL,
                                      NULL), -E2BIG);
    struct randd_iid_options many = { 0, NULL, RANDD_IID_MAX_THREADS + 1 };
    ck_assert_int_eq(randd_iid_assess_with(s, 4, 0, &many, &r, NULL, NULL), -EINVAL);
}
END_TEST

/* The p-value at a few points whose chi-square upper tails are known in closed form:
 * df 2: e^(-x/2); df 4: (1 + x/2) e^(-x/2). */
START_TEST(chi_square_p_value_matches_closed_forms)
{
    for (double x = 0.5; x < 60; x *= 1.7) {
        double two = exp(-x / 2), four = (1 + x / 2) * exp(-x / 2);

        ck_assert_msg(fabs(randd_iid_chi_square_p(x, 2) - two) <= 1e-12 * two + 1e-300,
                      "df 2, x %g: %.17g, not %.17g", x, randd_iid_chi_square_p(x, 2), two);
        ck_assert_msg(fabs(randd_iid_chi_square_p(x, 4) - four) <= 1e-12 * four + 1e-300,
                      "df 4, x %g: %.17g, not %.17g", x, randd_iid_chi_square_p(x, 4), four);
    }
    ck_assert(randd_iid_chi_square_p(3.0, 0) == 1.0);
}
END_TEST

struct progress_log {
    int calls;
    double last;
    bool backwards;
};

static void log_progress(void *arg, double done, const char *what)
{
    struct progress_log *l = arg;

    (void)what;
    if (done < l->last - 1e-9)
        l->backwards = true;
    l->last = done;
    l->calls++;
}

START_TEST(progress_runs_forward_to_one)
{
    struct progress_log log = { 0, 0.0, false };
    struct randd_iid_result r;
    size_t n;
    uint8_t *s = read_samples(VECTORS "rand4_short.bin", &n);

    ck_assert_int_eq(randd_iid_assess(s, n, 0, 0, &r, log_progress, &log), 0);
    ck_assert_msg(log.calls > 5 && !log.backwards && fabs(log.last - 1.0) < 1e-9,
                  "%d calls, last %g, backwards %d", log.calls, log.last, log.backwards);
    free(s);
}
END_TEST

/* One seed, the same shuffles and the same counts on one thread or several: results are
 * counted in shuffle order, whichever thread finishes first. rand4_short's statistics take
 * dozens to hundreds of shuffles to decide, so an order that slipped would show. Another
 * seed gives other counts, and without a seed each run draws its own. */
static void run_seeded(const uint8_t *s, size_t n, const uint8_t *seed, unsigned threads,
                       struct randd_iid_result *r)
{
    struct randd_iid_options o = { 0, seed, threads };

    ck_assert_int_eq(randd_iid_assess_with(s, n, 0, &o, r, NULL, NULL), 0);
    ck_assert(r->permutations_ran);
    if (seed)
        ck_assert(memcmp(r->seed, seed, RANDD_IID_SEED_BYTES) == 0);
}

START_TEST(a_seed_repeats_the_counts_on_any_number_of_threads)
{
    uint8_t seed[RANDD_IID_SEED_BYTES], other[RANDD_IID_SEED_BYTES];
    static struct randd_iid_result one, two, three, moved, fresh1, fresh2;
    size_t n;
    uint8_t *s = read_samples(VECTORS "rand4_short.bin", &n);

    for (unsigned i = 0; i < sizeof(seed); i++) {
        seed[i] = (uint8_t)(i * 7 + 1);
        other[i] = (uint8_t)(i * 7 + 2);
    }
    run_seeded(s, n, seed, 1, &one);
    run_seeded(s, n, seed, 2, &two);
    run_seeded(s, n, seed, 3, &three);
    ck_assert_msg(one.shuffles > 20, "%u shuffles decided every statistic", one.shuffles);
    for (unsigned i = 0; i < RANDD_IID_STATISTICS; i++)
        for (unsigned k = 0; k < 3; k++)
            ck_assert_msg(one.counts[i][k] == two.counts[i][k] &&
                          one.counts[i][k] == three.counts[i][k],
                          "%s C[%u]: %u on 1 thread, %u on 2, %u on 3", randd_iid_names[i], k,
                          one.counts[i][k], two.counts[i][k], three.counts[i][k]);
    ck_assert_uint_eq(one.shuffles, two.shuffles);
    ck_assert_uint_eq(one.shuffles, three.shuffles);
    ck_assert(one.permutation_passed == two.permutation_passed);

    run_seeded(s, n, other, 2, &moved);
    ck_assert_msg(memcmp(moved.counts, one.counts, sizeof(one.counts)) != 0,
                  "another seed gave the same counts");
    run_seeded(s, n, NULL, 0, &fresh1);
    run_seeded(s, n, NULL, 0, &fresh2);
    ck_assert_msg(memcmp(fresh1.seed, fresh2.seed, RANDD_IID_SEED_BYTES) != 0,
                  "two runs without a seed drew the same one");
    free(s);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("entropy_iid");
    TCase *tc = tcase_create("entropy_iid");

    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, binary_samples_agree_with_ea_iid_and_pass);
    tcase_add_test(tc, four_bit_samples_agree_with_ea_iid);
    tcase_add_test(tc, byte_samples_agree_with_ea_iid_and_fail_chi_square);
    tcase_add_test(tc, ring_oscillator_agrees_with_ea_iid_and_is_not_iid);
    tcase_add_test(tc, a_ramp_fails_the_permutation_tests);
    tcase_add_test(tc, bad_arguments_are_refused);
    tcase_add_test(tc, chi_square_p_value_matches_closed_forms);
    tcase_add_test(tc, progress_runs_forward_to_one);
    tcase_add_test(tc, a_seed_repeats_the_counts_on_any_number_of_threads);
    return s;
}
