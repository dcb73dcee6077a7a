/* The SP 800-90B assessment (internal/entropy_assess*.c) against NIST's ea_non_iid: every
 * estimate, H_original, H_bitstring and the assessed min-entropy of its reference files,
 * parsed from its own `ea_non_iid -vv` output (the .res files beside the samples); the
 * suffix array against a plain sort; the API's edges. RANDD_ASSESS_LONG=1 (make
 * check-assess-long) adds the 1,000,000-sample ringOsc file. Vector files are read from
 * tests/vectors/sp800-90b, relative to the repository root the tests run from. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entropy_assess_internal.h"
#include "runner.h"

#define VECTORS "tests/vectors/sp800-90b/"
#define AGREEMENT 1e-6          /* relative; the .res files print 17 digits */

/* --- ea_non_iid's figures ------------------------------------------------------------------- */

/* How the .res files name each estimator: "<Literal|Bitstring> <label> Estimate: ...". */
static const char *const res_labels[RANDD_EA_ESTIMATORS] = {
    [RANDD_EA_MCV] = "Most Common Value",
    [RANDD_EA_COLLISION] = "Collision",
    [RANDD_EA_MARKOV] = "Markov",
    [RANDD_EA_COMPRESSION] = "Compression",
    [RANDD_EA_T_TUPLE] = "t-Tuple",
    [RANDD_EA_LRS] = "LRS",
    [RANDD_EA_MULTI_MCW] = "MultiMCW Prediction",
    [RANDD_EA_LAG] = "Lag Prediction",
    [RANDD_EA_MULTI_MMC] = "MultiMMC Prediction",
    [RANDD_EA_LZ78Y] = "LZ78Y Prediction",
};

/* NAN where ea_non_iid printed nothing: the estimator did not run on that track. */
struct nist {
    double literal[RANDD_EA_ESTIMATORS], bitstring[RANDD_EA_ESTIMATORS];
    double h_original, h_bitstring, assessed;
};

static FILE *open_vector(const char *path)
{
    FILE *f = fopen(path, "rb");

    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root): %s", path,
                  strerror(errno));
    return f;
}

/* value of "prefix<number>" at the start of line, or false. */
static bool field(const char *line, const char *prefix, double *value)
{
    char *end;

    if (strncmp(line, prefix, strlen(prefix)) != 0)
        return false;
    *value = strtod(line + strlen(prefix), &end);
    ck_assert_msg(end != line + strlen(prefix), "not a number after \"%s\": %s", prefix, line);
    return true;
}

static void parse_res(const char *path, struct nist *r)
{
    FILE *f = open_vector(path);
    char line[512];

    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
        r->literal[e] = r->bitstring[e] = NAN;
    r->h_original = r->h_bitstring = r->assessed = NAN;
    while (fgets(line, sizeof(line), f)) {
        double v;

        if (field(line, "H_original: ", &r->h_original) || field(line, "H_bitstring = ", &r->h_bitstring) ||
            field(line, "Assessed min entropy: ", &r->assessed))
            continue;
        for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
            char prefix[96];

            snprintf(prefix, sizeof(prefix), "Literal %s Estimate: min entropy = ", res_labels[e]);
            if (field(line, prefix, &v))
                r->literal[e] = v;
            snprintf(prefix, sizeof(prefix), "Bitstring %s Estimate: min entropy = ", res_labels[e]);
            if (field(line, prefix, &v))
                r->bitstring[e] = v;
        }
    }
    fclose(f);
    ck_assert_msg(!isnan(r->h_original) && !isnan(r->assessed),
                  "%s: no H_original or assessed min entropy line", path);
}

static uint8_t *read_samples(const char *path, size_t *n)
{
    FILE *f = open_vector(path);
    size_t cap = 1 << 16;
    uint8_t *buf = malloc(cap);

    *n = 0;
    ck_assert_ptr_nonnull(buf);
    for (size_t got; (got = fread(buf + *n, 1, cap - *n, f)) > 0;) {
        *n += got;
        if (*n == cap)
            ck_assert_ptr_nonnull(buf = realloc(buf, cap *= 2));
    }
    fclose(f);
    return buf;
}

/* --- agreement ------------------------------------------------------------------------------ */

struct agreement {
    const char *file;
    int figures;
    double worst;
    char worst_name[64];
};

/* ours agrees with ea_non_iid's figure, or both say the estimator did not run. */
static void agree(struct agreement *a, const char *name, double ours, double nist)
{
    double rel;

    ck_assert_msg(isnan(ours) == isnan(nist), "%s: %s: ea_non_iid %s, we %s (%.17g)", a->file, name,
                  isnan(nist) ? "did not run it" : "ran it", isnan(ours) ? "did not" : "did", ours);
    if (isnan(nist))
        return;
    rel = fabs(ours - nist) / fabs(nist);
    ck_assert_msg(rel <= AGREEMENT, "%s: %s: ea_non_iid %.17g, we %.17g (relative error %.3g)",
                  a->file, name, nist, ours, rel);
    a->figures++;
    if (rel >= a->worst) {
        a->worst = rel;
        snprintf(a->worst_name, sizeof(a->worst_name), "%s", name);
    }
}

static void check_against_nist(const char *name)
{
    char bin[128], res[128], label[96];
    struct agreement a = { name, 0, 0.0, "" };
    struct randd_ea_result r;
    struct nist want;
    struct timespec t0, t1;
    uint8_t *samples;
    size_t n;

    snprintf(bin, sizeof(bin), VECTORS "%s.bin", name);
    snprintf(res, sizeof(res), VECTORS "%s.res", name);
    parse_res(res, &want);
    samples = read_samples(bin, &n);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    ck_assert_int_eq(randd_ea_assess(samples, n, 0, 0, &r, NULL, NULL), 0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
        snprintf(label, sizeof(label), "literal %s", randd_ea_names[e]);
        agree(&a, label, r.literal[e], want.literal[e]);
        snprintf(label, sizeof(label), "bitstring %s", randd_ea_names[e]);
        agree(&a, label, r.bitstring[e], want.bitstring[e]);
    }
    agree(&a, "H_original", r.h_original, want.h_original);
    agree(&a, "H_bitstring", r.h_bitstring, want.h_bitstring);
    agree(&a, "assessed min-entropy", r.h_assessed, want.assessed);
    printf("test_entropy_assess: %s: %zu samples of %u bit%s, %d figures agree with ea_non_iid; "
           "largest relative error %.2g (%s); %.2f s of CPU\n", name, n, r.bits,
           r.bits == 1 ? "" : "s", a.figures, a.worst, a.worst_name,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    free(samples);
}

START_TEST(binary_samples_agree_with_ea_non_iid)
{
    check_against_nist("rand1_short");
}
END_TEST

START_TEST(four_bit_samples_agree_with_ea_non_iid)
{
    check_against_nist("rand4_short");
}
END_TEST

START_TEST(byte_samples_agree_with_ea_non_iid)
{
    check_against_nist("rand8_short");
}
END_TEST

START_TEST(a_million_ring_oscillator_bits_agree_with_ea_non_iid)
{
    check_against_nist("ringOsc-nist");
}
END_TEST

/* --- the suffix array ----------------------------------------------------------------------- */

static const uint8_t *sort_text;
static size_t sort_n;

static int suffix_cmp(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    size_t common = sort_n - (size_t)(a > b ? a : b);
    int c = memcmp(sort_text + a, sort_text + b, common);

    return c ? c : a > b ? -1 : 1;          /* a proper prefix sorts first */
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

START_TEST(suffix_array_matches_a_plain_sort)
{
    uint8_t s[1500];
    int32_t sa[1500], want[1500];
    uint64_t seed = 7;

    /* Random text over small and large alphabets, long runs, periodic text: the shapes that
     * make SA-IS recurse. */
    for (int round = 0; round < 400; round++) {
        size_t n = 1 + splitmix(&seed) % sizeof(s);
        unsigned k = round % 4 == 0 ? 256 : 1 + (unsigned)(splitmix(&seed) % 4), shape = round % 3;

        for (size_t i = 0; i < n; i++)
            s[i] = shape == 0 ? splitmix(&seed) % k : shape == 1 ? (splitmix(&seed) % 8 == 0) % k
                                                               : (i * i / 7 + i / 3) % k;
        ck_assert_int_eq(randd_ea_suffix_array(s, (int32_t)n, k, sa), 0);
        for (size_t i = 0; i < n; i++)
            want[i] = (int32_t)i;
        sort_text = s, sort_n = n;
        qsort(want, n, sizeof(want[0]), suffix_cmp);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(sa[i] == want[i], "round %d (n %zu, k %u, shape %u): rank %zu is suffix "
                          "%d, a sort says %d", round, n, k, shape, i, sa[i], want[i]);
    }
}
END_TEST

/* --- the API -------------------------------------------------------------------------------- */

START_TEST(bad_arguments_are_refused)
{
    static const uint8_t s[4] = { 0, 1, 2, 9 };
    struct randd_ea_result r;

    ck_assert_int_eq(randd_ea_assess(s, 0, 0, 0, &r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_ea_assess(s, 4, 9, 0, &r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_ea_assess(s, 4, 0, 4, &r, NULL, NULL), -EINVAL);   /* no such flag */
    ck_assert_int_eq(randd_ea_assess(s, 4, 3, 0, &r, NULL, NULL), -ERANGE);  /* 9 needs 4 bits */
    ck_assert_int_eq(randd_ea_assess(s, (size_t)RANDD_EA_MAX_SAMPLES + 1, 0, 0, &r, NULL, NULL),
                     -E2BIG);
}
END_TEST

START_TEST(width_is_that_of_the_largest_value_unless_given)
{
    uint8_t s[64];
    struct randd_ea_result r;

    for (size_t i = 0; i < sizeof(s); i++)
        s[i] = (uint8_t)(i % 5);            /* 0..4: three bits */
    ck_assert_int_eq(randd_ea_assess(s, sizeof(s), 0, 0, &r, NULL, NULL), 0);
    ck_assert_uint_eq(r.bits, 3);
    ck_assert_uint_eq(r.symbols, 5);
    ck_assert_uint_eq(r.bitstring_bits, 3 * sizeof(s));
    ck_assert_int_eq(randd_ea_assess(s, sizeof(s), 8, 0, &r, NULL, NULL), 0);
    ck_assert_uint_eq(r.bits, 8);
    ck_assert_uint_eq(r.bitstring_bits, 8 * sizeof(s));
    ck_assert(r.h_assessed <= 8 * r.h_bitstring);
}
END_TEST

START_TEST(one_value_has_no_entropy)
{
    uint8_t s[5000];
    struct randd_ea_result r;

    memset(s, 6, sizeof(s));
    ck_assert_int_eq(randd_ea_assess(s, sizeof(s), 0, 0, &r, NULL, NULL), 0);
    ck_assert_uint_eq(r.symbols, 1);
    ck_assert(r.h_original == 0.0 && r.h_assessed == 0.0 && isnan(r.h_bitstring));
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
        ck_assert_msg(isnan(r.literal[e]) && isnan(r.bitstring[e]), "%s ran", randd_ea_names[e]);
}
END_TEST

START_TEST(two_values_are_assessed_as_binary_data_without_a_bitstring)
{
    uint8_t s[8000];
    struct randd_ea_result r;
    uint64_t seed = 3;

    for (size_t i = 0; i < sizeof(s); i++)
        s[i] = splitmix(&seed) & 1 ? 0x0c : 0x03;
    ck_assert_int_eq(randd_ea_assess(s, sizeof(s), 0, 0, &r, NULL, NULL), 0);
    ck_assert_uint_eq(r.bits, 4);
    ck_assert_uint_eq(r.bitstring_bits, 0);
    ck_assert(!isnan(r.literal[RANDD_EA_COLLISION]) && !isnan(r.literal[RANDD_EA_MARKOV]) &&
              !isnan(r.literal[RANDD_EA_COMPRESSION]));
    ck_assert(r.h_original <= 1.0 && r.h_assessed == r.h_original);
}
END_TEST

START_TEST(truncate_assesses_the_first_million_bitstring_bits)
{
    static const uint8_t values[3] = { 0x00, 0x01, 0x80 };
    size_t n = 125001;                      /* 8 bits each: 1,000,008 bits */
    uint8_t *s = malloc(n);
    struct randd_ea_result all, cut;
    uint64_t seed = 11;

    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < n; i++)
        s[i] = values[splitmix(&seed) % 3];
    ck_assert_int_eq(randd_ea_assess(s, n, 0, RANDD_EA_TRUNCATE, &cut, NULL, NULL), 0);
    ck_assert_uint_eq(cut.bitstring_bits, 1000000);
    ck_assert_int_eq(randd_ea_assess(s, 10000, 0, 0, &all, NULL, NULL), 0);
    ck_assert_uint_eq(all.bitstring_bits, 80000);
    free(s);
}
END_TEST

struct progress_log {
    int calls;
    double last;
    bool backwards;
};

static void log_progress(void *arg, double done, const char *what)
{
    struct progress_log *log = arg;

    log->backwards |= done < log->last;
    log->last = done;
    log->calls++;
    ck_assert_ptr_nonnull(what);
}

START_TEST(progress_runs_forward_to_one)
{
    struct progress_log log = { 0, 0.0, false };
    struct randd_ea_result r;
    uint8_t *s;
    size_t n;

    s = read_samples(VECTORS "rand4_short.bin", &n);
    ck_assert_int_eq(randd_ea_assess(s, n, 0, 0, &r, log_progress, &log), 0);
    ck_assert_msg(log.calls > 10 && !log.backwards && fabs(log.last - 1.0) < 1e-9,
                  "%d calls, last %g, backwards %d", log.calls, log.last, log.backwards);
    free(s);
}
END_TEST

/* ea_restart runs the literal track alone: so does RANDD_EA_LITERAL_ONLY, on data that
 * would otherwise get a bitstring track. */
START_TEST(literal_only_runs_no_bitstring_track)
{
    uint8_t s[20000];
    struct randd_ea_result r;

    for (size_t i = 0; i < sizeof(s); i++)
        s[i] = (uint8_t)((i * 7 + i / 13) % 16);
    ck_assert_int_eq(randd_ea_assess(s, sizeof(s), 4, RANDD_EA_LITERAL_ONLY, &r, NULL, NULL), 0);
    ck_assert_int_eq(r.symbols, 16);
    ck_assert_msg(r.bitstring_bits == 0 && isnan(r.h_bitstring) && isnan(r.bitstring[RANDD_EA_MCV]),
                  "a bitstring track ran: %zu bits", r.bitstring_bits);
    ck_assert(r.h_assessed == r.h_original && !isnan(r.literal[RANDD_EA_MCV]));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("entropy_assess");
    TCase *tc = tcase_create("entropy_assess");

    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, binary_samples_agree_with_ea_non_iid);
    tcase_add_test(tc, four_bit_samples_agree_with_ea_non_iid);
    tcase_add_test(tc, byte_samples_agree_with_ea_non_iid);
    tcase_add_test(tc, suffix_array_matches_a_plain_sort);
    tcase_add_test(tc, bad_arguments_are_refused);
    tcase_add_test(tc, width_is_that_of_the_largest_value_unless_given);
    tcase_add_test(tc, one_value_has_no_entropy);
    tcase_add_test(tc, two_values_are_assessed_as_binary_data_without_a_bitstring);
    tcase_add_test(tc, truncate_assesses_the_first_million_bitstring_bits);
    tcase_add_test(tc, literal_only_runs_no_bitstring_track);
    tcase_add_test(tc, progress_runs_forward_to_one);
    if (getenv("RANDD_ASSESS_LONG")) {
        TCase *lc = tcase_create("long");

        tcase_set_timeout(lc, 600);
        tcase_add_test(lc, a_million_ring_oscillator_bits_agree_with_ea_non_iid);
        suite_add_tcase(s, lc);
    } else {
        printf("test_entropy_assess: the 1,000,000-sample ringOsc file is make check-assess-long's\n");
    }
    return s;
}
