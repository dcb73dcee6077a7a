/* SP 800-90B 3.1.5 conditioning (internal/entropy_conditioning.c) against NIST's
 * ea_conditioning: Output_Entropy and h_out of its vetted and non-vetted outputs (the files in
 * tests/vectors/sp800-90b/conditioning, read relative to the repository root), figures
 * computed to 300 digits where omega rather than psi decides, and the ranges refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_conditioning.h"
#include "runner.h"

#define VECTORS "tests/vectors/sp800-90b/conditioning/"
#define AGREEMENT 1e-6L

/* "name = value" from an ea_conditioning output; NAN when absent. */
static long double nist(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long double v = NAN;

    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root): %s", path,
                  strerror(errno));
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, name, strlen(name)) && !strncmp(line + strlen(name), " = ", 3))
            v = strtold(line + strlen(name) + 3, NULL);
    fclose(f);
    ck_assert_msg(!isnan(v), "%s: no \"%s = \"", path, name);
    return v;
}

static void agree(const char *what, long double got, long double want)
{
    ck_assert_msg(fabsl(got - want) <= AGREEMENT * fabsl(want), "%s: %.19Lg, NIST %.19Lg", what,
                  got, want);
}

static void check_file(const char *file, int vetted)
{
    char path[256];
    struct randd_ea_conditioning c;
    long double h_prime;

    snprintf(path, sizeof(path), VECTORS "%s", file);
    h_prime = vetted ? NAN : nist(path, "h'");
    ck_assert_int_eq(randd_ea_conditioning(vetted, (unsigned)nist(path, "n_in"),
                                           (unsigned)nist(path, "n_out"),
                                           (unsigned)nist(path, "nw"), nist(path, "h_in"),
                                           h_prime, &c), 0);
    agree("Output_Entropy", c.output_entropy, nist(path, "Output_Entropy(*)"));
    agree("h_out", c.h_out, nist(path, vetted ? "(Vetted) h_out" : "(Non-vetted) h_out"));
    if (!vetted) {
        agree("0.999 * n_out", c.full_bound, nist(path, "0.999 * n_out"));
        agree("h' * n_out", c.h_prime_bound, nist(path, "h' * n_out"));
    }
}

START_TEST(vetted_outputs_agree_with_ea_conditioning)
{
    check_file("cond-v_2048_512_512_511.txt", 1);
    check_file("cond-v_512_256_256_200.txt", 1);
}
END_TEST

START_TEST(non_vetted_output_agrees_with_ea_conditioning)
{
    check_file("cond-n_4096_512_1024_300_0p99.txt", 0);
}
END_TEST

/* Output_Entropy to 300 digits (Python's decimal, the formula of 3.1.5.1.2 as written). The
 * first two are decided by omega (n_in = n: no compression, the count's spread), the others
 * by psi; nw above n_in is lowered to n_in. */
START_TEST(output_entropy_agrees_with_a_300_digit_computation)
{
    static const struct {
        unsigned n_in, n_out, nw;
        long double h_in, want;
    } cases[] = {
        { 512, 512, 512, 512.0L, 507.21122307693401442845874724L },
        { 64, 256, 128, 63.5L, 60.618816293181131448918763038L },
        { 512, 512, 512, 0.5L, 0.4999999999999999999999999999L },
        { 1024, 512, 512, 300.25L, 300.24999999999999999999999999L },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        agree("Output_Entropy", randd_ea_output_entropy(cases[i].n_in, cases[i].n_out,
                                                        cases[i].nw, cases[i].h_in),
              cases[i].want);
}
END_TEST

START_TEST(h_out_is_bounded_by_h_in_n_out_and_the_non_vetted_caps)
{
    struct randd_ea_conditioning c;

    ck_assert_int_eq(randd_ea_conditioning(0, 8192, 512, 512, 4096.0L, 0.9L, &c), 0);
    ck_assert(c.output_entropy <= 512.0L && c.output_entropy > 511.0L);
    ck_assert_msg(c.h_out == 0.9L * 512, "h' caps a non-vetted function: %.19Lg", c.h_out);
    ck_assert_int_eq(randd_ea_conditioning(0, 8192, 512, 512, 4096.0L, 1.0L, &c), 0);
    ck_assert_msg(c.h_out == 0.999L * 512, "0.999 n_out caps it: %.19Lg", c.h_out);
    ck_assert_int_eq(randd_ea_conditioning(1, 8192, 512, 512, 4096.0L, NAN, &c), 0);
    ck_assert(c.h_out == c.output_entropy && isnan(c.h_prime));
}
END_TEST

START_TEST(out_of_range_arguments_are_refused)
{
    struct randd_ea_conditioning c;

    ck_assert_int_eq(randd_ea_conditioning(1, 0, 512, 512, 1.0L, NAN, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(1, 512, 0, 512, 1.0L, NAN, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(1, 512, 512, 0, 1.0L, NAN, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(1, 512, 512, 512, 0.0L, NAN, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(1, 512, 512, 512, 513.0L, NAN, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(0, 512, 512, 512, 100.0L, 0.0L, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(0, 512, 512, 512, 100.0L, 1.5L, &c), -EINVAL);
    ck_assert_int_eq(randd_ea_conditioning(0, 512, 512, 512, 100.0L, NAN, &c), -EINVAL);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("entropy_conditioning");
    TCase *tc = tcase_create("entropy_conditioning");

    suite_add_tcase(s, tc);
    tcase_add_test(tc, vetted_outputs_agree_with_ea_conditioning);
    tcase_add_test(tc, non_vetted_output_agrees_with_ea_conditioning);
    tcase_add_test(tc, output_entropy_agrees_with_a_300_digit_computation);
    tcase_add_test(tc, h_out_is_bounded_by_h_in_n_out_and_the_non_vetted_caps);
    tcase_add_test(tc, out_of_range_arguments_are_refused);
    return s;
}
