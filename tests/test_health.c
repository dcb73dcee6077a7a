/* The SP 800-90B health tests (daemon/health.c): cutoffs, the failure modes of CPU
 * generators, the start-up test, and quarantine back-off. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "health.h"
#include "runner.h"
#include "scripted_source.h"

#define S 1000000000ull

/* Independent check of the APT cutoff: P(B >= c) for B = 1 + Binomial(W - 1, p), summed
 * upwards in plain doubles from the mass function's recurrence. */
static double apt_tail(unsigned window, double p, unsigned c)
{
    unsigned n = window - 1;
    double pmf = pow(1 - p, n), below = 0;

    for (unsigned y = 0; y + 1 < c; y++) {       /* P(B < c) = P(Y <= c - 2) */
        below += pmf;
        pmf *= (double)(n - y) / (y + 1) * p / (1 - p);
    }
    return 1 - below;
}

START_TEST(cutoffs_follow_sp800_90b_at_alpha_2_to_minus_40)
{
    struct health h;
    const double alpha = ldexp(1, -40);

    health_init(&h, 1, 8);                          /* bytes, full entropy */
    ck_assert_uint_eq(h.rct_cutoff, 6);             /* 1 + ceil(40 / 8) */
    ck_assert_uint_eq(h.apt_window, 512);
    ck_assert_msg(apt_tail(512, 1.0 / 256, h.apt_cutoff) <= alpha &&
                  apt_tail(512, 1.0 / 256, h.apt_cutoff - 1) > alpha,
                  "APT cutoff %u for H = 8 is not the smallest with tail <= 2^-40", h.apt_cutoff);
    health_init(&h, 1, 2);
    ck_assert_uint_eq(h.rct_cutoff, 21);
    ck_assert(apt_tail(512, 0.25, h.apt_cutoff) <= alpha &&
              apt_tail(512, 0.25, h.apt_cutoff - 1) > alpha);
    health_init(&h, 8, 32);                         /* RDSEED words, 4 bits a byte */
    ck_assert_uint_eq(h.rct_cutoff, 3);
    ck_assert_uint_eq(h.apt_cutoff, 3);             /* any value thrice in 512 words */
    health_init(&h, 8, 100);                        /* capped at 64 bits */
    ck_assert_double_eq(h.entropy, 64);
    ck_assert_uint_eq(h.rct_cutoff, 2);
}
END_TEST

static enum randd_source_state feed_words(struct health *h, uint64_t (*next)(uint64_t *),
                                          uint64_t *st, int n, uint64_t now)
{
    for (int i = 0; i < n && h->state != RANDD_SOURCE_QUARANTINED; i++)
        health_feed(h, next(st), now);
    return h->state;
}

static uint64_t zero(uint64_t *st) { (void)st; return 0; }
static uint64_t ones(uint64_t *st) { (void)st; return ~0ull; }
static uint64_t period(uint64_t *st) { return 0x1111111111111111ull * (++*st % 2 + 1); }

START_TEST(good_data_passes_startup_and_a_million_samples)
{
    struct health h;
    uint64_t st = 42;

    health_init(&h, 8, 32);
    feed_words(&h, splitmix64, &st, HEALTH_STARTUP_SAMPLES - 1, 0);
    ck_assert_str_eq(randd_source_state_name(h.state), "startup");
    feed_words(&h, splitmix64, &st, 1, 0);
    ck_assert_str_eq(randd_source_state_name(h.state), "healthy");
    feed_words(&h, splitmix64, &st, 1000000, 0);
    ck_assert_msg(h.state == RANDD_SOURCE_HEALTHY, "false alarm: %s", h.reason);
}
END_TEST

START_TEST(stuck_words_fail_the_repetition_count_test)
{
    struct health h;
    uint64_t st = 0;

    health_init(&h, 8, 32);
    ck_assert_int_eq(feed_words(&h, zero, &st, 3, 0), RANDD_SOURCE_QUARANTINED);
    ck_assert_ptr_nonnull(strstr(h.reason, "repetition count test: 0x0000000000000000"));
    health_init(&h, 8, 32);
    ck_assert_int_eq(feed_words(&h, ones, &st, 3, 0), RANDD_SOURCE_QUARANTINED);
    ck_assert_ptr_nonnull(strstr(h.reason, "0xffffffffffffffff repeated 3 times"));
}
END_TEST

START_TEST(short_cycles_fail_the_adaptive_proportion_test)
{
    struct health h;
    uint64_t st = 0;

    health_init(&h, 8, 32);
    ck_assert_int_eq(feed_words(&h, period, &st, 100, 0), RANDD_SOURCE_QUARANTINED);
    ck_assert_ptr_nonnull(strstr(h.reason, "adaptive proportion test"));
    ck_assert_uint_le(h.samples, 5);
}
END_TEST

START_TEST(quarantine_backs_off_and_readmits_only_after_a_fresh_startup)
{
    struct health h;
    uint64_t st = 1, t = 10 * S;

    health_init(&h, 8, 32);
    feed_words(&h, zero, &st, 3, t);
    ck_assert_uint_eq(h.failures, 1);
    ck_assert(!health_retry_due(&h, t + S - 1));
    ck_assert(health_retry_due(&h, t + S));          /* first back-off: 1 s */
    health_readmit(&h, t += S);
    feed_words(&h, zero, &st, 3, t);                 /* still broken: 2 s */
    ck_assert(!health_retry_due(&h, t + 2 * S - 1));
    ck_assert(health_retry_due(&h, t + 2 * S));
    for (int i = 0; i < 12; i++) {                   /* doubling stops at 300 s */
        health_readmit(&h, t);
        feed_words(&h, zero, &st, 3, t);
    }
    ck_assert_uint_eq(h.backoff_s, HEALTH_BACKOFF_MAX_S);
    health_readmit(&h, t);
    ck_assert_str_eq(randd_source_state_name(h.state), "startup");
    ck_assert_int_eq(health_feed(&h, 0, t), RANDD_SOURCE_STARTUP);   /* fresh counters */
    feed_words(&h, splitmix64, &st, HEALTH_STARTUP_SAMPLES, t);
    ck_assert_str_eq(randd_source_state_name(h.state), "healthy");
    /* Healthy again, it still says which test failed last, as its reason does (STATUS). */
    ck_assert_int_eq(h.failed_test, RANDD_TEST_RCT);
    ck_assert_ptr_nonnull(strstr(h.reason, "repetition count test"));
}
END_TEST

START_TEST(samples_while_quarantined_are_ignored)
{
    struct health h;
    uint64_t st = 3;

    health_init(&h, 8, 32);
    feed_words(&h, zero, &st, 3, 0);
    feed_words(&h, splitmix64, &st, 5000, 0);
    ck_assert_str_eq(randd_source_state_name(h.state), "quarantined");
    ck_assert_uint_eq(h.samples, 3);
}
END_TEST

START_TEST(buffers_are_cut_into_samples_of_the_declared_width)
{
    struct health h;
    uint8_t buf[24] = { 0 };

    health_init(&h, 8, 32);
    ck_assert_int_eq(health_feed_buffer(&h, buf, 23, 0), RANDD_SOURCE_STARTUP);   /* 2 samples */
    ck_assert_uint_eq(h.samples, 2);
    ck_assert_int_eq(health_feed_buffer(&h, buf, 8, 0), RANDD_SOURCE_QUARANTINED);
}
END_TEST

/* --- the jitter source's extra tests ------------------------------------------------------ */

static uint64_t random_byte(uint64_t *st) { return splitmix64(st) & 0xff; }
static uint64_t cycle7(uint64_t *st) { return 0x31 * (++*st % 7); }

/* Claimed 1 bit a sample (jitter's claim), a cycle of 7 byte values leaves every value at a
 * seventh of a window: far under the APT's cutoff, caught by the lag test at lag 7. */
START_TEST(lag_test_catches_a_cycle_the_apt_allows_at_a_low_claim)
{
    struct health h;
    uint64_t st = 0;

    health_init(&h, 1, 1);
    ck_assert_int_eq(feed_words(&h, cycle7, &st, 100000, 0), RANDD_SOURCE_HEALTHY);
    health_init(&h, 1, 1);
    health_enable_lag_test(&h);
    ck_assert(h.lag_cutoff > h.apt_window / 2 && h.lag_cutoff < h.apt_window);
    st = 0;
    ck_assert_int_eq(feed_words(&h, cycle7, &st, 100000, 0), RANDD_SOURCE_QUARANTINED);
    ck_assert_msg(strstr(h.reason, "lag test: samples repeated the one 7 before them"),
                  "reason: %s", h.reason);
    ck_assert_uint_le(h.samples, h.apt_window);
}
END_TEST

START_TEST(lag_test_passes_good_bytes_and_restarts_on_readmission)
{
    struct health h;
    uint64_t st = 5;

    health_init(&h, 1, 1);
    health_enable_lag_test(&h);
    ck_assert_int_eq(feed_words(&h, random_byte, &st, 1000000, 0), RANDD_SOURCE_HEALTHY);
    health_readmit(&h, 0);
    ck_assert_uint_eq(h.lag_filled, 0);
    ck_assert_uint_eq(h.lag_seen, 0);
}
END_TEST

/* Stuck samples never reach the sample tests (the source drops them); their run does. */
START_TEST(a_run_of_stuck_samples_as_long_as_the_rct_cutoff_quarantines)
{
    struct health h;

    health_init(&h, 1, 1);
    ck_assert_uint_eq(h.rct_cutoff, 41);
    ck_assert_int_eq(health_feed_stuck(&h, 40, 0), RANDD_SOURCE_STARTUP);
    ck_assert_int_eq(health_feed_stuck(&h, 41, 0), RANDD_SOURCE_QUARANTINED);
    ck_assert_msg(strstr(h.reason, "stuck test: 41 samples in a row"), "reason: %s", h.reason);
    ck_assert_uint_eq(h.failures, 1);
}
END_TEST

/* Disabled (an assessment found the source unfit): out with the reason, no retry ever due,
 * and not counted as a test failure. */
/* randctl inject-failure's patterns, fed through health_feed, trip the test they name and
 * no other, on bytes at 1 bit (jitter's tests) and on 64-bit words at 32 (RDSEED's), from a
 * source in its start-up test and from one healthy mid-window. */
START_TEST(each_injected_pattern_trips_its_own_test)
{
    static const struct { unsigned bytes; double h; bool lag; } kinds[] = {
        { 1, 1.0, true }, { 1, 0.75, true }, { 8, 32, false }, { 4, 16, false },
        { 1, 8, false },
    };
    uint8_t good[4096];
    struct health h;

    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (int test = 0; test < RANDD_HEALTH_TEST_COUNT; test++)
            for (int warm = 0; warm < 2; warm++) {
                health_init(&h, kinds[k].bytes, kinds[k].h);
                if (kinds[k].lag) {
                    health_enable_lag_test(&h);
                    health_enable_stuck_test(&h);
                }
                if (warm) {
                    uint64_t seed = 7;

                    for (size_t i = 0; i < sizeof(good); i += 8) {
                        uint64_t w = splitmix64(&seed);

                        memcpy(good + i, &w, 8);
                    }
                    health_feed_buffer(&h, good, 2049 - kinds[k].bytes, 0);
                    ck_assert(h.state != RANDD_SOURCE_QUARANTINED);
                }
                if (!health_runs(&h, test)) {
                    ck_assert_int_eq(health_inject(&h, test, 5 * S), -ENOTSUP);
                    ck_assert(h.state != RANDD_SOURCE_QUARANTINED);
                    continue;
                }
                ck_assert_msg(health_inject(&h, test, 5 * S) == 0, "%u-byte samples at H = %g: "
                              "%s injected, quarantined by %s: %s", kinds[k].bytes, kinds[k].h,
                              randd_health_test_name(test),
                              randd_health_test_name(h.failed_test), h.reason);
                ck_assert_int_eq(h.state, RANDD_SOURCE_QUARANTINED);
                ck_assert_int_eq(h.failed_test, test);
                ck_assert_uint_eq(h.failures, 1);
                ck_assert_int_eq(health_inject(&h, test, 5 * S), -EALREADY);
            }
}
END_TEST

/* The self-tests' known answers of the health tests hold. */
START_TEST(health_known_answers_pass)
{
    char why[160] = "";

    ck_assert_msg(health_selftest(why, sizeof(why)) == 0, "%s", why);
}
END_TEST

START_TEST(disabled_is_never_retried_and_not_a_test_failure)
{
    struct health h;

    health_init(&h, 1, 1);
    health_disable(&h, "assessed too low");
    ck_assert_int_eq(h.state, RANDD_SOURCE_QUARANTINED);
    ck_assert_str_eq(h.reason, "assessed too low");
    ck_assert(!health_retry_due(&h, UINT64_MAX - 1));
    ck_assert_uint_eq(h.failures, 0);
    /* A source that failed a test, was re-admitted and is then disabled names no test. */
    health_init(&h, 1, 1);
    ck_assert_int_eq(health_inject(&h, RANDD_TEST_RCT, 0), 0);
    health_readmit(&h, 2 * S);
    health_disable(&h, "read error");
    ck_assert_int_eq(h.failed_test, -1);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("health");
    TCase *tc = tcase_create("sp800-90b");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, cutoffs_follow_sp800_90b_at_alpha_2_to_minus_40);
    tcase_add_test(tc, good_data_passes_startup_and_a_million_samples);
    tcase_add_test(tc, stuck_words_fail_the_repetition_count_test);
    tcase_add_test(tc, short_cycles_fail_the_adaptive_proportion_test);
    tcase_add_test(tc, quarantine_backs_off_and_readmits_only_after_a_fresh_startup);
    tcase_add_test(tc, samples_while_quarantined_are_ignored);
    tcase_add_test(tc, buffers_are_cut_into_samples_of_the_declared_width);
    tcase_add_test(tc, lag_test_catches_a_cycle_the_apt_allows_at_a_low_claim);
    tcase_add_test(tc, lag_test_passes_good_bytes_and_restarts_on_readmission);
    tcase_add_test(tc, a_run_of_stuck_samples_as_long_as_the_rct_cutoff_quarantines);
    tcase_add_test(tc, disabled_is_never_retried_and_not_a_test_failure);
    tcase_add_test(tc, each_injected_pattern_trips_its_own_test);
    tcase_add_test(tc, health_known_answers_pass);
    suite_add_tcase(s, tc);
    return s;
}
