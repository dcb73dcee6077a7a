/* The SP 800-90B restart tests (internal/entropy_restart.c) against NIST's ea_restart: the
 * sanity check's alpha, X_cutoff and X_max, every row and column estimate, H_r, H_c and
 * min(H_r, H_c, H_I) of a passing 1-bit dataset, and the failing sanity check of a 4-bit one,
 * parsed from `ea_restart -n -v` output; the exact cutoff against a plain binomial sum where
 * the worst case is one; the API's edges. Vectors are read from tests/vectors/sp800-90b/restart
 * relative to the repository root the tests run from. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_restart.h"
#include "runner.h"

#define VECTORS "tests/vectors/sp800-90b/restart/"
#define AGREEMENT 1e-6

/* How ea_restart -v names each estimator: "\t<label> (Rows) = ..." */
static const char *const labels[RANDD_EA_ESTIMATORS] = {
    [RANDD_EA_MCV] = "Most Common Value Estimate",
    [RANDD_EA_COLLISION] = "Collision Test Estimate",
    [RANDD_EA_MARKOV] = "Markov Test Estimate",
    [RANDD_EA_COMPRESSION] = "Compression Test Estimate",
    [RANDD_EA_T_TUPLE] = "T-Tuple Test Estimate",
    [RANDD_EA_LRS] = "LRS Test Estimate",
    [RANDD_EA_MULTI_MCW] = "Multi Most Common in Window (MultiMCW) Prediction Test Estimate",
    [RANDD_EA_LAG] = "Lag Prediction Test Estimate",
    [RANDD_EA_MULTI_MMC] =
        "Multi Markov Model with Counting (MultiMMC) Prediction Test Estimate",
    [RANDD_EA_LZ78Y] = "LZ78Y Prediction Test Estimate",
};

struct nist {
    double alpha, x_cutoff, x_max, h_r, h_c, h_min;
    double rows[RANDD_EA_ESTIMATORS], cols[RANDD_EA_ESTIMATORS];
};

static bool after(const char *line, const char *prefix, double *v)
{
    const char *at = strstr(line, prefix);

    if (!at)
        return false;
    *v = strtod(at + strlen(prefix), NULL);
    return true;
}

static void read_nist(const char *path, struct nist *n)
{
    FILE *f = fopen(path, "r");
    char line[1024], key[160];

    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root): %s", path,
                  strerror(errno));
    n->alpha = n->x_cutoff = n->x_max = n->h_r = n->h_c = n->h_min = NAN;
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
        n->rows[e] = n->cols[e] = NAN;
    while (fgets(line, sizeof(line), f)) {
        after(line, "ALPHA: ", &n->alpha);
        after(line, "X_cutoff: ", &n->x_cutoff);
        if (!strncmp(line, "X_max: ", 7))
            after(line, "X_max: ", &n->x_max);
        if (!strncmp(line, "H_r: ", 5))
            after(line, "H_r: ", &n->h_r);
        if (!strncmp(line, "H_c: ", 5))
            after(line, "H_c: ", &n->h_c);
        after(line, "min(H_r, H_c, H_I): ", &n->h_min);
        for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
            snprintf(key, sizeof(key), "\t%s (Rows) = ", labels[e]);
            after(line, key, &n->rows[e]);
            snprintf(key, sizeof(key), "\t%s (Cols) = ", labels[e]);
            after(line, key, &n->cols[e]);
        }
    }
    fclose(f);
}

static uint8_t *read_matrix(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *m = malloc(RANDD_EA_RESTART_MATRIX);

    ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
    ck_assert(m != NULL);
    ck_assert_msg(fread(m, 1, RANDD_EA_RESTART_MATRIX, f) == RANDD_EA_RESTART_MATRIX,
                  "%s: shorter than a restart matrix", path);
    fclose(f);
    return m;
}

/* a agrees with NIST's b, printed to 6 decimals (%f): relative 1e-6 or the print's rounding */
static void agree(const char *what, double a, double b)
{
    ck_assert_msg(!isnan(b), "%s: ea_restart's output has no figure", what);
    ck_assert_msg(fabs(a - b) <= AGREEMENT * fabs(b) + 5e-7, "%s: %.9f, ea_restart %.9f", what,
                  a, b);
}

START_TEST(passing_binary_dataset_agrees_with_ea_restart)
{
    struct randd_ea_restart_result *r = malloc(sizeof(*r));
    uint8_t *m = read_matrix(VECTORS "restart_pass_1bit.bin");
    struct nist n;

    read_nist(VECTORS "restart_pass_1bit.restart.txt", &n);
    ck_assert_int_eq(randd_ea_restart(m, RANDD_EA_RESTART_MATRIX, 1, 0.95, r, NULL, NULL), 0);
    ck_assert_msg(fabs(r->alpha - n.alpha) <= AGREEMENT * n.alpha, "alpha %.17g, NIST %.17g",
                  r->alpha, n.alpha);
    ck_assert_msg(r->x_cutoff == n.x_cutoff, "X_cutoff %u, NIST %.0f", r->x_cutoff, n.x_cutoff);
    ck_assert_msg(r->x_max == n.x_max, "X_max %u, NIST %.0f", r->x_max, n.x_max);
    ck_assert(r->sanity_passed && r->rows_over == 0 && r->cols_over == 0);
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++) {
        char what[80];

        snprintf(what, sizeof(what), "rows %s", randd_ea_names[e]);
        agree(what, r->rows.literal[e], n.rows[e]);
        snprintf(what, sizeof(what), "columns %s", randd_ea_names[e]);
        agree(what, r->cols.literal[e], n.cols[e]);
    }
    agree("H_r", r->h_r, n.h_r);
    agree("H_c", r->h_c, n.h_c);
    ck_assert(r->validation_passed);
    agree("min(H_r, H_c, H_I)", r->h_restart, n.h_min);
    free(m);
    free(r);
}
END_TEST

START_TEST(failing_four_bit_dataset_fails_the_sanity_check_as_in_ea_restart)
{
    struct randd_ea_restart_result *r = malloc(sizeof(*r));
    uint8_t *m = read_matrix(VECTORS "restart_fail_4bit.bin");
    struct nist n;

    read_nist(VECTORS "restart_fail_4bit.restart.txt", &n);
    ck_assert_int_eq(randd_ea_restart(m, RANDD_EA_RESTART_MATRIX, 4, 3.9, r, NULL, NULL), 0);
    ck_assert_int_eq(r->symbols, 16);
    ck_assert_msg(r->x_cutoff == n.x_cutoff, "X_cutoff %u, NIST %.0f", r->x_cutoff, n.x_cutoff);
    ck_assert_msg(r->x_max == n.x_max, "X_max %u, NIST %.0f", r->x_max, n.x_max);
    ck_assert(!r->sanity_passed);
    ck_assert_msg(r->x_cols == 666 && r->col_max[0] == 666 && r->cols_over == 1,
                  "the first column holds the biased first samples: X_c %u, column 0 %u, "
                  "%u over",
                  r->x_cols, r->col_max[0], r->cols_over);
    ck_assert(isnan(r->h_r) && isnan(r->h_c) && isnan(r->h_restart));
    free(m);
    free(r);
}
END_TEST

/* With H_I = 1 over two values the worst case is a fair coin: M = max(X, 1000 - X), X
 * binomial, so P(M > x) = 2 P(X > x) for x >= 500: a sum of exact terms to check against. */
START_TEST(cutoff_of_a_fair_coin_is_the_binomial_quantile)
{
    double alpha = -expm1(log(0.99) / 2000), tail = 0.0;
    unsigned want = 1000;

    for (unsigned x = 999; x >= 500; x--) {
        tail += 2 * exp(lgamma(1001.0) - lgamma(x + 2.0) - lgamma(1000.0 - x) -
                        1000 * log(2.0));
        if (tail > alpha)
            break;
        want = x;
    }
    ck_assert_uint_eq(randd_ea_restart_cutoff(2, 1.0, alpha), want);
    ck_assert_uint_eq(randd_ea_restart_cutoff(2, 0.0, alpha), 1000);   /* one sure value */
    ck_assert_uint_lt(randd_ea_restart_cutoff(256, 8.0, alpha), 20);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
    struct randd_ea_restart_result *r = malloc(sizeof(*r));
    uint8_t *m = calloc(RANDD_EA_RESTART_MATRIX, 1);

    const size_t n = RANDD_EA_RESTART_MATRIX;

    ck_assert_int_eq(randd_ea_restart(m, n - 1, 1, 0.5, r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_ea_restart(m, n, 9, 0.5, r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_ea_restart(m, n, 1, 1.5, r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_ea_restart(m, n, 1, -0.1, r, NULL, NULL), -EINVAL);
    ck_assert_int_eq(randd_ea_restart(m, n, 1, NAN, r, NULL, NULL), -EINVAL);
    m[5] = 2;
    ck_assert_int_eq(randd_ea_restart(m, n, 1, 0.5, r, NULL, NULL), -ERANGE);
    m[6] = 3;       /* three values, 2 bits: no distribution over them has 1.9 bits */
    ck_assert_int_eq(randd_ea_restart(m, n, 2, 1.9, r, NULL, NULL), -EDOM);
    free(m);
    free(r);
}
END_TEST

START_TEST(one_value_has_no_entropy)
{
    struct randd_ea_restart_result *r = malloc(sizeof(*r));
    uint8_t *m = calloc(RANDD_EA_RESTART_MATRIX, 1);

    ck_assert_int_eq(randd_ea_restart(m, RANDD_EA_RESTART_MATRIX, 1, 0.5, r, NULL, NULL), 0);
    ck_assert_int_eq(r->symbols, 1);
    ck_assert(r->h_restart == 0.0 && !r->sanity_passed);
    free(m);
    free(r);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("entropy_restart");
    TCase *tc = tcase_create("entropy_restart");

    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, passing_binary_dataset_agrees_with_ea_restart);
    tcase_add_test(tc, failing_four_bit_dataset_fails_the_sanity_check_as_in_ea_restart);
    tcase_add_test(tc, cutoff_of_a_fair_coin_is_the_binomial_quantile);
    tcase_add_test(tc, bad_arguments_are_refused);
    tcase_add_test(tc, one_value_has_no_entropy);
    return s;
}
