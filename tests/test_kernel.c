/* The kernel feed (daemon/kernel.c): the real RNDADDENTROPY and RNDRESEEDCRNG with
 * CAP_SYS_ADMIN, the EPERM path in a child that dropped it, and the not-yet-initialised
 * branch driven through the same code with the readiness probe replaced. */
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel.h"
#include "runner.h"
#include "scripted_source.h"

static struct pool pool;
static struct scripted cpu;
static struct kernel k;

static void setup(void)
{
    ck_assert_int_eq(pool_init(&pool, 60, 1u << 30), 0);
    scripted_init(&cpu, "cpu", SCRIPT_RANDOM, 99, true);
    pool_add_source(&pool, &cpu.source);
    pool_harvest(&pool, 1);
}

static void teardown(void)
{
    kernel_fini(&k);
    pool_fini(&pool);
}

static bool have_sys_admin(void)
{
    cap_t caps = cap_get_proc();
    cap_flag_value_t v = CAP_CLEAR;

    if (caps) {
        cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v);
        cap_free(caps);
    }
    return v == CAP_SET;
}

/* Whether RNDADDENTROPY reaches a kernel at all: with no bytes it adds nothing where it does
 * (or is refused, EPERM). qemu-user, which make check-cross runs these tests under, has no
 * translation for it and answers ENOSYS itself; the tests that need it then skip. */
static bool rndaddentropy_reaches_the_kernel(void)
{
    struct rand_pool_info empty = { 0 };
    int fd = open("/dev/random", O_WRONLY | O_CLOEXEC);
    bool reached;

    if (fd < 0)
        return true;            /* the test itself says what is wrong with /dev/random */
    reached = ioctl(fd, RNDADDENTROPY, &empty) == 0 || errno != ENOSYS;
    close(fd);
    return reached;
}

#define SKIP_WITHOUT_RNDADDENTROPY(test)                                                     \
    do {                                                                                     \
        if (!rndaddentropy_reaches_the_kernel()) {                                           \
            fprintf(stderr, "SKIP " test ": ioctl RNDADDENTROPY answers ENOSYS (qemu-user "  \
                            "does not pass it to the kernel)\n");                            \
            return;                                                                          \
        }                                                                                    \
    } while (0)

static bool initialised_now;
static bool fake_probe(void) { return initialised_now; }

START_TEST(feeds_and_reseeds_the_initialised_kernel)
{
    SKIP_WITHOUT_RNDADDENTROPY("feeds_and_reseeds_the_initialised_kernel");
    if (!have_sys_admin()) {
        fprintf(stderr, "SKIP feeds_and_reseeds_the_initialised_kernel: needs CAP_SYS_ADMIN\n");
        return;
    }
    kernel_init(&k, true, NULL, 0);
    ck_assert_msg(k.enabled, "feed off: %s", k.off_reason);
    ck_assert_msg(k.initialised, "a booted machine's kernel reports not initialised");
    ck_assert_msg(kernel_feed(&k, &pool, 2) == 0, "feed failed: %s", k.last_error);
    ck_assert_uint_eq(k.topups, 1);
    ck_assert_uint_eq(k.reseeds, 1);                 /* RNDRESEEDCRNG returned 0 */
    ck_assert_uint_eq(k.bits_offered, POOL_KERNEL_BYTES * 8);
}
END_TEST

START_TEST(uninitialised_kernel_is_fed_without_reseed_until_it_is_ready)
{
    SKIP_WITHOUT_RNDADDENTROPY("uninitialised_kernel_is_fed_without_reseed_until_it_is_ready");
    if (!have_sys_admin()) {
        fprintf(stderr, "SKIP uninitialised_kernel_...: needs CAP_SYS_ADMIN for the ioctl\n");
        return;
    }
    initialised_now = false;
    kernel_init(&k, true, fake_probe, 1000);
    ck_assert(!k.initialised);
    ck_assert_int_eq(kernel_feed(&k, &pool, 2000), 0);
    ck_assert_uint_eq(k.topups, 1);
    ck_assert_uint_eq(k.reseeds, 0);                 /* credit counts; no reseed asked */
    initialised_now = true;
    ck_assert(kernel_became_initialised(&k, 5000));
    ck_assert(k.init_seen);
    ck_assert_uint_eq(k.init_after_ns, 4000);
    ck_assert(!kernel_became_initialised(&k, 6000));  /* the transition is reported once */
    ck_assert_int_eq(kernel_feed(&k, &pool, 7000), 0);
    ck_assert_uint_eq(k.reseeds, 1);
}
END_TEST

/* Without CAP_SYS_ADMIN: EPERM, the feed switches itself off with the reason, and the
 * pool still serves. Run in a child so the capability stays in this process. */
START_TEST(without_cap_sys_admin_the_feed_turns_off_and_serving_goes_on)
{
    pid_t child;
    int status;

    SKIP_WITHOUT_RNDADDENTROPY("without_cap_sys_admin_the_feed_turns_off_and_serving_goes_on");
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        cap_t caps = cap_get_proc();
        cap_value_t admin = CAP_SYS_ADMIN;
        uint8_t out[16];

        /* The pool's secrets are wiped in a forked child (MADV_WIPEONFORK): start afresh. */
        pool_fini(&pool);
        setup();
        cap_set_flag(caps, CAP_EFFECTIVE, 1, &admin, CAP_CLEAR);
        cap_set_flag(caps, CAP_PERMITTED, 1, &admin, CAP_CLEAR);
        if (cap_set_proc(caps) < 0)
            _exit(10);
        cap_free(caps);
        kernel_init(&k, true, NULL, 0);
        if (!k.enabled)
            _exit(11);
        if (kernel_feed(&k, &pool, 2) != -EPERM)
            _exit(12);
        if (k.enabled || !strstr(k.off_reason, "CAP_SYS_ADMIN"))
            _exit(13);
        if (kernel_feed(&k, &pool, 3) != -ENOTCONN)   /* off stays off: logged once */
            _exit(14);
        if (pool_generate(&pool, out, sizeof(out), 4) != 0)
            _exit(15);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(!WIFSIGNALED(status), "child killed by signal %d", WTERMSIG(status));
    ck_assert_msg(WEXITSTATUS(status) == 0, "child failed at step %d (see its _exit codes)",
                  WEXITSTATUS(status));
}
END_TEST

START_TEST(no_creditable_source_means_nothing_is_credited)
{
    struct pool os_only;
    struct scripted os;

    ck_assert_int_eq(pool_init(&os_only, 60, 1u << 30), 0);
    scripted_init(&os, "os", SCRIPT_RANDOM, 5, false);
    pool_add_source(&os_only, &os.source);
    pool_harvest(&os_only, 1);
    kernel_init(&k, true, NULL, 0);
    if (k.enabled) {
        ck_assert_int_eq(kernel_feed(&k, &os_only, 2), -ENODATA);
        ck_assert_uint_eq(k.topups, 0);
        ck_assert_ptr_nonnull(strstr(k.last_error, "kernel-creditable"));
    }
    pool_fini(&os_only);
}
END_TEST

START_TEST(kernel_topup_no_keeps_the_feed_off)
{
    kernel_init(&k, false, NULL, 0);
    ck_assert(!k.enabled);
    ck_assert_str_eq(k.off_reason, "kernel_topup = no");
    ck_assert_int_eq(kernel_feed(&k, &pool, 1), -ENOTCONN);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("kernel");
    TCase *tc = tcase_create("feed");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, feeds_and_reseeds_the_initialised_kernel);
    tcase_add_test(tc, uninitialised_kernel_is_fed_without_reseed_until_it_is_ready);
    tcase_add_test(tc, without_cap_sys_admin_the_feed_turns_off_and_serving_goes_on);
    tcase_add_test(tc, no_creditable_source_means_nothing_is_credited);
    tcase_add_test(tc, kernel_topup_no_keeps_the_feed_off);
    suite_add_tcase(s, tc);
    return s;
}
