/* The real sources (daemon/source_*.c): RDSEED read and health-tested when the CPU has it,
 * getrandom, and /dev/hwrng when present. Skips say what the machine lacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"
#include "source.h"

static struct source src;

static void teardown(void)
{
    source_close(&src);
}

/* Reads until the start-up test is over, then checks a healthy batch is usable. Reads are
 * non-blocking and a virtio-rng gives 64 bytes at a time, so pause between empty reads
 * (for at most about 10 s). */
static void check_admitted_and_usable(struct source *s)
{
    uint8_t buf[512];
    ssize_t got = 0;

    for (int i = 0; i < 2000 && s->health.state == HEALTH_STARTUP; i++) {
        uint64_t before = s->bytes_read;

        ck_assert_int_ge(source_harvest(s, buf, sizeof(buf), 1), 0);
        if (s->bytes_read == before)
            usleep(5000);
    }
    ck_assert_msg(s->health.state == HEALTH_HEALTHY, "%s is %s after %llu bytes: %s", s->name,
                  health_state_name(s->health.state), (unsigned long long)s->bytes_read,
                  s->health.reason);
    for (int i = 0; i < 2000 && got == 0; i++) {
        got = source_harvest(s, buf, sizeof(buf), 2);
        if (got == 0)
            usleep(5000);
    }
    ck_assert_int_gt(got, 0);
    ck_assert_uint_eq(s->bytes_used, (uint64_t)got);
}

START_TEST(rdseed_is_read_and_health_tested)
{
    char why[256];

    if (source_rdseed_open(&src, why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP rdseed_is_read_and_health_tested: %s\n", why);
        return;
    }
    ck_assert(src.kernel_creditable);
    ck_assert_uint_eq(src.sample_bytes, 8);
    check_admitted_and_usable(&src);
}
END_TEST

START_TEST(getrandom_is_read_but_never_credited_to_the_kernel)
{
    char why[256];

    ck_assert_int_eq(source_getrandom_open(&src, why, sizeof(why)), 0);
    ck_assert(!src.kernel_creditable);
    check_admitted_and_usable(&src);
}
END_TEST

START_TEST(hwrng_is_read_when_present)
{
    char why[256];

    if (source_hwrng_open(&src, "/dev/hwrng", why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP hwrng_is_read_when_present: %s\n", why);
        return;
    }
    check_admitted_and_usable(&src);
}
END_TEST

/* A device other than the kernel's hw_random (here a file of random bytes standing in for a
 * USB TRNG) is never read by the kernel itself, so randd may credit it to the kernel. */
START_TEST(hwrng_device_the_kernel_does_not_read_is_kernel_creditable)
{
    char path[] = "/tmp/randd-hwrng-XXXXXX", why[256];
    uint8_t noise[4096];
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(getentropy(noise, 256), 0);
    for (size_t i = 256; i < sizeof(noise); i += 256)
        ck_assert_int_eq(getentropy(noise + i, 256), 0);
    ck_assert_int_eq(write(fd, noise, sizeof(noise)), (ssize_t)sizeof(noise));
    close(fd);
    ck_assert_int_eq(source_hwrng_open(&src, path, why, sizeof(why)), 0);
    unlink(path);
    ck_assert(src.kernel_creditable);
    check_admitted_and_usable(&src);
}
END_TEST

START_TEST(missing_hwrng_device_says_why)
{
    char why[256];

    ck_assert_int_lt(source_hwrng_open(&src, "/nonexistent/hwrng", why, sizeof(why)), 0);
    ck_assert_str_eq(why, "/nonexistent/hwrng: No such file or directory");
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("source");
    TCase *tc = tcase_create("real sources");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, rdseed_is_read_and_health_tested);
    tcase_add_test(tc, getrandom_is_read_but_never_credited_to_the_kernel);
    tcase_add_test(tc, hwrng_is_read_when_present);
    tcase_add_test(tc, hwrng_device_the_kernel_does_not_read_is_kernel_creditable);
    tcase_add_test(tc, missing_hwrng_device_says_why);
    suite_add_tcase(s, tc);
    return s;
}
