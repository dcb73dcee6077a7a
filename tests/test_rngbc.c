/* RNG-BC-8 (internal/rngbc.c): hand-worked cases with a scripted byte source, the bound v < r for
 * awkward sizes, uniformity by chi-square with a fixed seed, and the bits it consumes. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "cymric.h"
#include "rngbc.h"
#include "runner.h"

/* --- a scripted source: hands out the bytes of a script, then fails ------------------- */

struct script {
    const uint8_t *bytes;
    size_t len, pos;
};

static int script_fill(void *ctx, void *buf, size_t n)
{
    struct script *s = ctx;

    if (n > s->len - s->pos)
        return -ENODATA;
    memcpy(buf, s->bytes + s->pos, n);
    s->pos += n;
    return 0;
}

/* Draws one value below r from the script; checks the value, the bytes consumed, and that
 * the script was used up exactly. */
static void check_scripted(const uint8_t *r, size_t len, const uint8_t *script, size_t slen,
                           const uint8_t *want)
{
    struct script s = { script, slen, 0 };
    struct randd_byte_source src = { script_fill, &s };
    struct randd_rngbc_range range;
    uint8_t out[16];
    uint64_t consumed = 0;

    ck_assert_int_eq(randd_rngbc_prepare(&range, r, len), 0);
    ck_assert_int_eq(randd_rngbc8(&range, out, &src, &consumed), 0);
    ck_assert_mem_eq(out, want, len);
    ck_assert_msg(s.pos == slen, "used %zu of %zu scripted bytes", s.pos, slen);
    ck_assert_uint_eq(consumed, slen);
}

START_TEST(range_accepts_a_smaller_top_byte_at_once)
{
    static const uint8_t r[] = { 0x12, 0x34 }, script[] = { 0x11, 0xff }, want[] = { 0x11, 0xff };

    check_scripted(r, 2, script, sizeof(script), want);
}
END_TEST

START_TEST(range_rejects_on_top_byte_and_redraws_only_it)
{
    /* 0x13 > 0x12: only the top byte is drawn again; 0x99 below it stays. */
    static const uint8_t r[] = { 0x12, 0x34 }, script[] = { 0x13, 0x99, 0x05 };
    static const uint8_t want[] = { 0x05, 0x99 };

    check_scripted(r, 2, script, sizeof(script), want);
}
END_TEST

START_TEST(range_rejects_on_middle_byte)
{
    /* Top equal, middle 0x40 > 0x34: bytes 0 and 1 are drawn again, byte 2 (0x99) kept. */
    static const uint8_t r[] = { 0x12, 0x34, 0x56 };
    static const uint8_t script[] = { 0x12, 0x40, 0x99, 0x12, 0x30 };
    static const uint8_t want[] = { 0x12, 0x30, 0x99 };

    check_scripted(r, 3, script, sizeof(script), want);
}
END_TEST

START_TEST(range_rejects_on_bottom_byte)
{
    static const uint8_t r[] = { 0x12, 0x34 }, script[] = { 0x12, 0x35, 0x12, 0x33 };
    static const uint8_t want[] = { 0x12, 0x33 };

    check_scripted(r, 2, script, sizeof(script), want);
}
END_TEST

START_TEST(range_redraws_everything_when_all_bytes_equal_r)
{
    static const uint8_t r[] = { 0x12, 0x34 }, script[] = { 0x12, 0x34, 0x01, 0x02 };
    static const uint8_t want[] = { 0x01, 0x02 };

    check_scripted(r, 2, script, sizeof(script), want);
}
END_TEST

START_TEST(range_masks_top_byte_to_bit_length)
{
    /* r = 0x05 has 3 bits: 0xff masks to 0x07 (> 5, redraw), 0xfc masks to 0x04. */
    static const uint8_t r[] = { 0x05 }, script[] = { 0xff, 0xfc }, want[] = { 0x04 };

    check_scripted(r, 1, script, sizeof(script), want);
}
END_TEST

START_TEST(range_zero_pads_leading_zero_bytes_of_r)
{
    /* r = 0x000105: the candidate is two bytes with the top masked to 1 bit. */
    static const uint8_t r[] = { 0x00, 0x01, 0x05 }, script[] = { 0xff, 0x06, 0xfe, 0x06 };
    static const uint8_t want[] = { 0x00, 0x00, 0x06 };

    check_scripted(r, 3, script, sizeof(script), want);
}
END_TEST

START_TEST(range_one_is_always_zero)
{
    /* r = 1 is one bit: a candidate of 1 equals r and is drawn again, 0 is accepted. */
    static const uint8_t r[] = { 0x00, 0x01 }, script[] = { 0xff, 0xfe };
    static const uint8_t want[] = { 0x00, 0x00 };

    check_scripted(r, 2, script, sizeof(script), want);
}
END_TEST

START_TEST(range_refuses_zero_empty_and_oversized_r)
{
    static const uint8_t zero[3];
    static uint8_t big[RANDD_RNGBC_MAX_BYTES + 1] = { 1 };
    struct randd_rngbc_range range;

    ck_assert_int_eq(randd_rngbc_prepare(&range, zero, sizeof(zero)), -EINVAL);
    ck_assert_int_eq(randd_rngbc_prepare(&range, zero, 0), -EINVAL);
    ck_assert_int_eq(randd_rngbc_prepare(&range, big, sizeof(big)), -E2BIG);
    ck_assert_int_eq(randd_rngbc_prepare(&range, big, RANDD_RNGBC_MAX_BYTES), 0);
}
END_TEST

START_TEST(range_passes_source_errors_on_and_wipes_output)
{
    /* The candidate is rejected and the script runs dry before the redraw. */
    static const uint8_t r[] = { 0x12, 0x34 }, script[] = { 0x13, 0x77 };
    struct script s = { script, sizeof(script), 0 };
    struct randd_byte_source src = { script_fill, &s };
    struct randd_rngbc_range range;
    uint8_t out[2];

    ck_assert_int_eq(randd_rngbc_prepare(&range, r, sizeof(r)), 0);
    ck_assert_int_eq(randd_rngbc8(&range, out, &src, NULL), -ENODATA);
    ck_assert_msg(out[0] == 0 && out[1] == 0, "output not wiped: %02x%02x", out[0], out[1]);
}
END_TEST

/* --- the real generator as the source ---------------------------------------------- */

static struct randd_cymric g;
static struct randd_byte_source gen_src;

static int generator_fill(void *ctx, void *buf, size_t n)
{
    return randd_cymric_read(ctx, buf, n);
}

/* A fixed seed makes every statistical test below deterministic: it can never flake. */
static void setup_generator(void)
{
    ck_assert_int_eq(randd_cymric_init(&g, RANDD_CYMRIC_DETERMINISTIC), 0);
    ck_assert_int_eq(randd_cymric_seed(&g, "randd rngbc tests", 17), 0);
    gen_src = (struct randd_byte_source){ generator_fill, &g };
}

static void teardown_generator(void)
{
    randd_cymric_fini(&g);
}

/* r = 2^k + delta (delta in -1, 0, 1), big-endian in len bytes. */
static void power_of_two_plus(uint8_t *r, size_t len, unsigned k, int delta)
{
    memset(r, 0, len);
    r[len - 1 - k / 8] = (uint8_t)(1u << (k % 8));
    if (delta > 0) {
        r[len - 1] |= 1;
    } else if (delta < 0) {             /* 2^k - 1: k one bits */
        memset(r, 0, len);
        memset(r + len - k / 8, 0xff, k / 8);
        if (k % 8)
            r[len - 1 - k / 8] = (uint8_t)((1u << (k % 8)) - 1);
    }
}

static void check_always_below(const uint8_t *r, size_t len, int samples)
{
    struct randd_rngbc_range range;
    uint8_t out[RANDD_RNGBC_MAX_BYTES];

    ck_assert_int_eq(randd_rngbc_prepare(&range, r, len), 0);
    for (int i = 0; i < samples; i++) {
        ck_assert_int_eq(randd_rngbc8(&range, out, &gen_src, NULL), 0);
        ck_assert_msg(memcmp(out, r, len) < 0, "sample %d of a %zu-byte range is not below r",
                      i, len);
    }
}

START_TEST(range_values_stay_below_small_r)
{
    static const unsigned small[] = { 1, 2, 3, 255, 256, 257, 1000, 65535, 65536, 65537 };

    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
        uint8_t r[3] = { (uint8_t)(small[i] >> 16), (uint8_t)(small[i] >> 8), (uint8_t)small[i] };

        check_always_below(r, sizeof(r), 2000);
    }
}
END_TEST

START_TEST(range_values_stay_below_powers_of_two_and_neighbours)
{
    static const unsigned bits[] = { 7, 8, 9, 13, 31, 64, 127, 128, 255, 256, 521, 4095, 8191 };
    static uint8_t r[RANDD_RNGBC_MAX_BYTES];

    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
        for (int delta = -1; delta <= 1; delta++) {
            power_of_two_plus(r, RANDD_RNGBC_MAX_BYTES, bits[i], delta);
            check_always_below(r, RANDD_RNGBC_MAX_BYTES, 200);
        }
    }
}
END_TEST

START_TEST(range_values_stay_below_random_odd_sizes)
{
    static uint8_t r[RANDD_RNGBC_MAX_BYTES];

    for (unsigned len = 1; len <= 67; len += 3) {
        ck_assert_int_eq(randd_cymric_read(&g, r, len), 0);
        r[0] = (uint8_t)((r[0] >> (len % 8)) | 1);   /* vary the bit length, keep r >= 1 */
        check_always_below(r, len, 500);
    }
}
END_TEST

/* Upper critical value of chi-square with df degrees of freedom at p = 1e-4
 * (Wilson-Hilferty approximation; z = 3.719 for a one-sided 1e-4 tail). */
static double chi_square_critical(unsigned df)
{
    double a = 2.0 / (9.0 * df);

    return df * pow(1.0 - a + 3.719 * sqrt(a), 3);
}

static double chi_square(const unsigned *counts, unsigned bins, unsigned samples)
{
    double expected = (double)samples / bins, sum = 0;

    for (unsigned v = 0; v < bins; v++)
        sum += (counts[v] - expected) * (counts[v] - expected) / expected;
    return sum;
}

START_TEST(range_is_uniform_by_chi_square)
{
    static const unsigned ranges[] = { 2, 3, 10, 200, 257, 499, 1000 };
    static unsigned counts[1000];

    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        unsigned rv = ranges[i], samples = rv * 200;
        uint8_t r[2] = { (uint8_t)(rv >> 8), (uint8_t)rv }, out[2];
        struct randd_rngbc_range range;
        double stat, limit = chi_square_critical(rv - 1);

        memset(counts, 0, sizeof(counts));
        ck_assert_int_eq(randd_rngbc_prepare(&range, r, 2), 0);
        for (unsigned n = 0; n < samples; n++) {
            ck_assert_int_eq(randd_rngbc8(&range, out, &gen_src, NULL), 0);
            counts[out[0] << 8 | out[1]]++;
        }
        stat = chi_square(counts, rv, samples);
        ck_assert_msg(stat < limit, "r = %u: chi-square %.1f above the p=1e-4 limit %.1f",
                      rv, stat, limit);
    }
}
END_TEST

/* The chi-square test above has the power to see a real bias: a byte reduced mod 200
 * makes 0..55 twice as likely, and the same test must reject it. */
START_TEST(chi_square_test_detects_modulo_bias)
{
    static unsigned counts[200];
    const unsigned samples = 200 * 200;
    uint8_t byte;

    for (unsigned n = 0; n < samples; n++) {
        ck_assert_int_eq(randd_cymric_read(&g, &byte, 1), 0);
        counts[byte % 200]++;
    }
    ck_assert_msg(chi_square(counts, 200, samples) > chi_square_critical(199),
                  "a biased sampler passed the uniformity test");
}
END_TEST

/* The point of the method: for r = 2^255 plain rejection needs 64 bytes a sample on average,
 * RNG-BC-8 about 33 (the paper: 264.07 bits), since a rejection redraws one byte. */
START_TEST(range_consumes_what_the_paper_predicts)
{
    uint8_t r[32] = { 0x80 }, out[32];
    struct randd_rngbc_range range;
    uint64_t consumed = 0;
    const int samples = 50000;
    double bits;

    ck_assert_int_eq(randd_rngbc_prepare(&range, r, sizeof(r)), 0);
    for (int i = 0; i < samples; i++)
        ck_assert_int_eq(randd_rngbc8(&range, out, &gen_src, &consumed), 0);
    bits = 8.0 * (double)consumed / samples;
    ck_assert_msg(fabs(bits - 264.07) < 0.01 * 264.07,
                  "r = 2^255: %.2f bits a sample, the paper has 264.07", bits);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("rngbc");
    TCase *scripted = tcase_create("scripted source");
    TCase *generated = tcase_create("generator source");

    tcase_add_test(scripted, range_accepts_a_smaller_top_byte_at_once);
    tcase_add_test(scripted, range_rejects_on_top_byte_and_redraws_only_it);
    tcase_add_test(scripted, range_rejects_on_middle_byte);
    tcase_add_test(scripted, range_rejects_on_bottom_byte);
    tcase_add_test(scripted, range_redraws_everything_when_all_bytes_equal_r);
    tcase_add_test(scripted, range_masks_top_byte_to_bit_length);
    tcase_add_test(scripted, range_zero_pads_leading_zero_bytes_of_r);
    tcase_add_test(scripted, range_one_is_always_zero);
    tcase_add_test(scripted, range_refuses_zero_empty_and_oversized_r);
    tcase_add_test(scripted, range_passes_source_errors_on_and_wipes_output);
    suite_add_tcase(s, scripted);

    tcase_add_checked_fixture(generated, setup_generator, teardown_generator);
    tcase_set_timeout(generated, 60);
    tcase_add_test(generated, range_values_stay_below_small_r);
    tcase_add_test(generated, range_values_stay_below_powers_of_two_and_neighbours);
    tcase_add_test(generated, range_values_stay_below_random_odd_sizes);
    tcase_add_test(generated, range_is_uniform_by_chi_square);
    tcase_add_test(generated, chi_square_test_detects_modulo_bias);
    tcase_add_test(generated, range_consumes_what_the_paper_predicts);
    suite_add_tcase(s, generated);
    return s;
}
