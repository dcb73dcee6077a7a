/* The real sources (daemon/source_*.c): the CPU's noise instruction (RDSEED, RNDRRS, DARN, the
 * TRNG) read and health-tested when the CPU has it,
 * getrandom, /dev/hwrng when present, and CPU timing jitter, with a scripted clock for its
 * faults; and their assessments (source_assess.c): jitter's credit from a scripted estimator,
 * the CPU source's and hwrng's warnings from the real one. Skips say what the machine lacks. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"
#include "scripted_source.h"
#include "source.h"

static struct source src;

static void teardown(void)
{
    source_close(&src);
    source_use_estimator(NULL);
}

static double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads until the start-up test is over, then checks a healthy batch is usable. Reads are
 * non-blocking and a virtio-rng gives 64 bytes at a time, so pause between empty reads, for
 * a minute at most: a busy machine's virtio-rng is slow. */
static void check_admitted_and_usable(struct source *s)
{
    double end = seconds_now() + 60;
    uint8_t buf[512];
    ssize_t got = 0;

    while (s->health.state == RANDD_SOURCE_STARTUP && seconds_now() < end) {
        uint64_t before = s->bytes_read;

        ck_assert_int_ge(source_harvest(s, buf, sizeof(buf), 1), 0);
        if (s->bytes_read == before)
            usleep(5000);                /* polling interval */
    }
    ck_assert_msg(s->health.state == RANDD_SOURCE_HEALTHY, "%s is %s after %llu bytes: %s", s->name,
                  randd_source_state_name(s->health.state), (unsigned long long)s->bytes_read,
                  s->health.reason);
    for (end = seconds_now() + 60; got == 0 && seconds_now() < end;) {
        got = source_harvest(s, buf, sizeof(buf), 2);
        if (got == 0)
            usleep(5000);
    }
    ck_assert_int_gt(got, 0);
    ck_assert_uint_eq(s->bytes_used, (uint64_t)got);
}

/* Where /proc/cpuinfo lists the CPU source on this architecture: the line ("flags" on x86,
 * "Features" on arm64) and the word in it; NULL where it lists none. The kernel's view, which
 * the source must agree with. */
static const char *cpuinfo_line(const char **word)
{
#if defined(__x86_64__)
    *word = "rdseed";
    return "flags";
#elif defined(__aarch64__)
    *word = "rng";                          /* FEAT_RNG */
    return "Features";
#else
    *word = NULL;
    return NULL;
#endif
}

/* 1 when the first line named line_name lists word, 0 when it does not, -1 without one. */
static int cpuinfo_lists(const char *line_name, const char *word)
{
    char line[4096];
    int found = -1;
    FILE *f = fopen("/proc/cpuinfo", "re");

    while (f && found < 0 && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':'), *save = NULL;

        if (!colon || strncmp(line, line_name, strlen(line_name)))
            continue;
        found = 0;
        for (char *w = strtok_r(colon + 1, " \t\n", &save); w && !found;
             w = strtok_r(NULL, " \t\n", &save))
            found = !strcmp(w, word);
    }
    if (f)
        fclose(f);
    return found;
}

/* Opened exactly where the kernel lists the instruction, and named after it. */
START_TEST(cpu_source_opens_where_the_kernel_lists_it)
{
    char why[256];
    int rc = source_cpu_open(&src, why, sizeof(why)), listed;
    const char *word, *line_name = cpuinfo_line(&word);

    if (!line_name || (listed = cpuinfo_lists(line_name, word)) < 0) {
        /* qemu-user shows the host's /proc/cpuinfo, which has no such line */
        fprintf(stderr, "SKIP cpu_source_opens_where_the_kernel_lists_it: /proc/cpuinfo has "
                        "no \"%s\" line for this CPU\n", line_name ? line_name : "(none)");
        return;
    }
    ck_assert_msg((rc == 0) == listed, "source_cpu_open: %s; /proc/cpuinfo %s \"%s\"",
                  rc ? why : "opened", listed ? "lists" : "does not list", word);
    if (rc == 0)
        ck_assert_str_eq(src.name, source_cpu_name());
}
END_TEST

START_TEST(cpu_source_is_named_after_its_instruction)
{
#if defined(__x86_64__)
    ck_assert_str_eq(source_cpu_name(), "rdseed");
#elif defined(__aarch64__)
    ck_assert_str_eq(source_cpu_name(), "rndrrs");
#elif defined(__powerpc64__)
    ck_assert_str_eq(source_cpu_name(), "darn");
#elif defined(__s390x__)
    ck_assert_str_eq(source_cpu_name(), "trng");
#else
    ck_assert_str_eq(source_cpu_name(), "cpu");
#endif
}
END_TEST

START_TEST(cpu_source_is_read_and_health_tested)
{
    char why[256];

    if (source_cpu_open(&src, why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP cpu_source_is_read_and_health_tested: %s\n", why);
        return;
    }
    ck_assert_str_eq(src.name, source_cpu_name());
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
    for (size_t i = 0; i < sizeof(noise); i += 256)     /* getentropy's most per call */
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

static void write_all(int fd, const uint8_t *buf, size_t n)
{
    ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
}

static void write_noise(int fd, size_t n)
{
    uint8_t noise[256];

    for (; n > 0; n -= sizeof(noise)) {
        ck_assert_int_eq(getentropy(noise, sizeof(noise)), 0);
        write_all(fd, noise, sizeof(noise));
    }
}

/* A FIFO fed from user space keeps what its writer produced while the source sat out its
 * quarantine. The retry discards that queue, so its start-up test judges only what comes
 * after: one failure, one retry, back in use; the stale zeros are counted, never used. */
START_TEST(hwrng_fifo_retry_discards_what_was_queued_while_quarantined)
{
    char dir[] = "/tmp/randd-fifo-XXXXXX", path[64], why[256];
    static const uint8_t zeros[32768];
    uint8_t buf[512];
    uint64_t t = 1000000000u;
    int writer;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/hwrng", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(source_hwrng_open(&src, path, why, sizeof(why)), 0);
    writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    ck_assert_int_ge(writer, 0);
    unlink(path);
    rmdir(dir);

    write_noise(writer, 2048 + 1024);               /* start-up test and a healthy batch */
    while (src.health.state == RANDD_SOURCE_STARTUP && src.bytes_read < 2048)
        ck_assert_int_ge(source_harvest(&src, buf, sizeof(buf), t), 0);
    ck_assert_str_eq(randd_source_state_name(src.health.state), "healthy");
    while (source_harvest(&src, buf, sizeof(buf), t) > 0)
        ;

    write_all(writer, zeros, sizeof(zeros));        /* sticks; all of it queued at once */
    ck_assert_int_eq(source_harvest(&src, buf, sizeof(buf), t), 0);
    ck_assert_str_eq(randd_source_state_name(src.health.state), "quarantined");
    ck_assert_uint_eq(src.health.failures, 1);

    t += (HEALTH_BACKOFF_MIN_S + 1) * 1000000000ull;  /* the retry: the queue goes first */
    ck_assert_int_eq(source_harvest(&src, buf, sizeof(buf), t), 0);
    ck_assert_uint_eq(src.stale_discarded, sizeof(zeros) - sizeof(buf));
    ck_assert_str_eq(randd_source_state_name(src.health.state), "startup");

    write_noise(writer, 2048);                      /* recovered */
    while (src.health.state == RANDD_SOURCE_STARTUP &&
           source_harvest(&src, buf, sizeof(buf), t) == 0)
        ;
    ck_assert_msg(src.health.state == RANDD_SOURCE_HEALTHY, "hwrng is %s after the retry: %s",
                  randd_source_state_name(src.health.state), src.health.reason);
    ck_assert_uint_eq(src.health.failures, 1);
    close(writer);
}
END_TEST

/* --- the CPU source's read loop with a scripted instruction ----------------------------- */

static enum { CARRY_CLEAR, CARRY_CLEAR_EVERY_OTHER, STUCK_AFTER_N } cpu_fault;
static uint64_t cpu_calls, cpu_good_left, cpu_state;

static bool scripted_cpu(uint64_t *value)
{
    cpu_calls++;
    switch (cpu_fault) {
    case CARRY_CLEAR:
        return false;
    case CARRY_CLEAR_EVERY_OTHER:
        if (cpu_calls % 2)
            return false;
        *value = splitmix64(&cpu_state);
        return true;
    case STUCK_AFTER_N:
        *value = cpu_good_left ? (cpu_good_left--, splitmix64(&cpu_state))
                                  : 0x243f6a8885a308d3ull;
        return true;
    }
    return false;
}

static void open_scripted_cpu(int fault, uint64_t good_words)
{
    cpu_fault = fault;
    cpu_calls = 0;
    cpu_good_left = good_words;
    cpu_state = 42;
    source_cpu_init(&src, scripted_cpu);
}

/* A CPU whose instruction never has a value: every read gives up after a bounded number of tries,
 * counts an empty read, and the source never passes its start-up test. */
START_TEST(cpu_source_carry_clear_forever_gives_nothing_and_never_hangs)
{
    uint8_t buf[512];

    open_scripted_cpu(CARRY_CLEAR, 0);
    for (int i = 1; i <= 100; i++) {
        ck_assert_int_eq(source_harvest(&src, buf, sizeof(buf), (uint64_t)i * 1000000000u), 0);
        ck_assert_uint_eq(src.empty_reads, (uint64_t)i);
    }
    ck_assert_uint_eq(cpu_calls, 100 * 64);          /* CPU_NOISE_RETRIES a read, no more */
    ck_assert_uint_eq(src.bytes_read, 0);
    ck_assert_uint_eq(src.bytes_used, 0);
    ck_assert(!source_healthy(&src));
}
END_TEST

/* Carry clear on every other try (a busy CPU): the retries get every word through. */
START_TEST(cpu_source_intermittent_carry_clear_is_retried)
{
    uint8_t buf[512];

    open_scripted_cpu(CARRY_CLEAR_EVERY_OTHER, 0);
    ck_assert_int_eq(source_harvest(&src, buf, sizeof(buf), 1), 0);     /* start-up test */
    ck_assert_uint_eq(src.bytes_read, sizeof(buf));
    ck_assert_uint_eq(cpu_calls, 2 * sizeof(buf) / 8);
    check_admitted_and_usable(&src);
}
END_TEST

/* Admitted, then the CPU's generator sticks at one value: the batch holding the stuck words
 * is thrown away and the source is quarantined with the repetition count test's reason. */
START_TEST(cpu_source_stuck_after_n_good_words_is_quarantined_at_runtime)
{
    uint8_t buf[512];

    open_scripted_cpu(STUCK_AFTER_N, 4000);
    check_admitted_and_usable(&src);
    for (int i = 0; i < 100 && source_healthy(&src); i++)
        ck_assert_int_ge(source_harvest(&src, buf, sizeof(buf), 3), 0);
    ck_assert_str_eq(randd_source_state_name(src.health.state), "quarantined");
    ck_assert_msg(strstr(src.health.reason, "repetition"), "reason: %s", src.health.reason);
    ck_assert_uint_eq(src.health.failures, 1);
    ck_assert_uint_le(src.bytes_used, 4000 * 8);          /* good words only, */
    ck_assert_uint_eq(src.bytes_used % sizeof(buf), 0);   /* in whole healthy batches */
    for (size_t i = 0; i < sizeof(buf); i++)
        ck_assert_uint_eq(buf[i], 0);                     /* the failed batch is wiped */
    ck_assert_int_eq(source_harvest(&src, buf, sizeof(buf), 4), 0);   /* still out */
}
END_TEST

/* --- timing jitter --------------------------------------------------------------------- */

/* Waits for the jitter worker's next batch, for a minute at most (both cores may be busy
 * and the worker runs at SCHED_IDLE), and harvests it at now. */
static ssize_t harvest_next_batch(struct source *s, uint8_t *buf, size_t n, uint64_t now)
{
    struct pollfd pfd = { .fd = s->wake_fd, .events = POLLIN };

    ck_assert_msg(poll(&pfd, 1, 60000) == 1, "no jitter batch within 60 s");
    return source_harvest(s, buf, n, now);
}

START_TEST(jitter_is_read_only_while_wanted_and_credits_nothing_unassessed)
{
    char why[256];
    uint8_t buf[512];
    struct pollfd pfd;
    ssize_t got = 0;

    if (source_jitter_open(&src, 4, why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP jitter_is_read_only_while_wanted_and_credits_nothing_unassessed: "
                "%s\n", why);
        return;
    }
    ck_assert(src.kernel_creditable);
    ck_assert_uint_eq(src.sample_bytes, 1);
    ck_assert_double_eq(src.entropy_per_byte, 0);      /* nothing until assessed */
    ck_assert_int_ge(src.wake_fd, 0);
    pfd = (struct pollfd){ .fd = src.wake_fd, .events = POLLIN };
    ck_assert_int_eq(poll(&pfd, 1, 0), 0);             /* not wanted: nothing produced */
    source_want(&src, true);
    while (src.health.state == RANDD_SOURCE_STARTUP)
        ck_assert_int_ge(harvest_next_batch(&src, buf, sizeof(buf), 1), 0);
    ck_assert_msg(src.health.state == RANDD_SOURCE_HEALTHY, "jitter is %s: %s",
                  randd_source_state_name(src.health.state), src.health.reason);
    while (got == 0)
        got = harvest_next_batch(&src, buf, sizeof(buf), 2);
    ck_assert_uint_eq(src.bytes_used, (uint64_t)got);
    ck_assert_double_eq(src.credited_bits, 0);          /* used, but never assessed */
    ck_assert(src.cpu_seconds > 0);
    ck_assert_double_eq(src.assessed_entropy_per_byte, SOURCE_NOT_ASSESSED);
}
END_TEST

/* Harvests batches until the source has taken in its assessments'th assessment (or been
 * disabled by it). */
static void harvest_until_assessed(uint64_t assessments, uint64_t now)
{
    uint8_t buf[512];

    while (src.assessments < assessments && src.health.retry_at_ns != UINT64_MAX)
        harvest_next_batch(&src, buf, sizeof(buf), now);
}

/* The real estimator on the real clock: a number within a sample's 8 bits, and a credit half
 * a bit below it (at most the 1-bit claim) over the oversampling of 4. */
START_TEST(jitter_credits_a_margin_below_its_own_assessment)
{
    char why[256];
    uint8_t buf[512];
    ssize_t got = 0;
    double credit, before;

    if (source_jitter_open(&src, 4, why, sizeof(why)) < 0) {
        fprintf(stderr, "SKIP jitter_credits_a_margin_below_its_own_assessment: %s\n", why);
        return;
    }
    source_want(&src, true);
    source_assess(&src);
    harvest_until_assessed(1, 1);
    ck_assert_msg(src.health.state != RANDD_SOURCE_QUARANTINED, "jitter disabled: %s",
                  src.health.reason);
    ck_assert_msg(src.assessed_entropy_per_byte > 0.75 && src.assessed_entropy_per_byte <= 8,
                  "assessed %g bits a sample", src.assessed_entropy_per_byte);
    credit = src.assessed_entropy_per_byte - 0.5;
    credit = (credit < 1 ? credit : 1) / 4;
    ck_assert_double_eq_tol(src.entropy_per_byte, credit, 1e-12);
    while (src.health.state == RANDD_SOURCE_STARTUP)
        harvest_next_batch(&src, buf, sizeof(buf), 1);
    before = src.credited_bits;
    while (got == 0)
        got = harvest_next_batch(&src, buf, sizeof(buf), 2);
    ck_assert_double_eq_tol(src.credited_bits - before, credit * (double)got, 1e-9);
}
END_TEST

/* The scripted clock: the worker thread reads it, the test switches its mode. */
static enum { CLOCK_GOOD, CLOCK_COARSE, CLOCK_CONSTANT, CLOCK_PERIODIC, CLOCK_24MHZ_NS,
              CLOCK_24MHZ_NS_SLOW, CLOCK_1GHZ, CLOCK_WARMING } clock_mode;
static uint64_t clock_now, clock_state, clock_calls, clock_true_ns;
#define WARMING_CALLS 4096     /* about how long a 1 MiB buffer takes to come in (x86 VM) */

/* An Arm generic timer read through CLOCK_MONOTONIC_RAW: true time advances by a measurement
 * of base..base+spread ns a call; the clock shows it in ns, counted at hz. */
static uint64_t generic_timer_ns(uint64_t hz, uint64_t base, uint64_t spread)
{
    clock_true_ns += base + splitmix64(&clock_state) % spread;
    return clock_true_ns * hz / 1000000000u * 1000000000u / hz;
}

static uint64_t scripted_clock(void)
{
    static const uint64_t cycle[5] = { 1000, 1037, 1011, 1090, 1003 };
    uint64_t step;

    switch (__atomic_load_n(&clock_mode, __ATOMIC_RELAXED)) {
    case CLOCK_24MHZ_NS: return generic_timer_ns(24000000, 150, 200);
    case CLOCK_24MHZ_NS_SLOW: return generic_timer_ns(24000000, 1500, 1000);
    case CLOCK_1GHZ: return generic_timer_ns(1000000000, 150, 200);
    case CLOCK_COARSE: step = 1000000 * (1 + splitmix64(&clock_state) % 3); break;
    case CLOCK_CONSTANT: step = 1000; break;
    case CLOCK_PERIODIC: step = cycle[clock_calls % 5]; break;
    /* A buffer coming into the caches, on a clock counting in 16s: the first WARMING_CALLS
     * deltas after restart_clock give samples 128-255, the steady ones after 0-127. */
    case CLOCK_WARMING:
        step = splitmix64(&clock_state);
        step = 16 * (256 + (step >> 8) % 16 * 256 + step % 128 +
                     (clock_calls < WARMING_CALLS ? 128 : 0));
        break;
    default: step = 1000 + splitmix64(&clock_state) % 4096; break;
    }
    clock_calls++;
    return clock_now += step;
}

static int open_scripted_jitter(int mode, char *why, size_t whylen)
{
    clock_mode = mode;
    clock_now = clock_calls = clock_true_ns = 0;
    clock_state = 7;
    return source_jitter_init(&src, 4, scripted_clock, why, whylen);
}

static void set_clock(int mode)
{
    __atomic_store_n(&clock_mode, mode, __ATOMIC_RELAXED);
}

/* Before the worker reads it: the worker must not be running (not wanted, not assessing). */
static void restart_clock(int mode)
{
    clock_calls = 0;
    set_clock(mode);
}

/* The scripted estimator: the figures it returns in turn (the last one again after), or an
 * error. It runs on the worker; what it records is read after the harvest that took the
 * result in, under the worker's lock. */
static double script_figure[4];
static unsigned script_figures, script_calls;
static int script_error;
static size_t script_samples;

static uint8_t script_highest_sample;

static int scripted_estimator(const uint8_t *samples, size_t n, double *min_entropy)
{
    script_samples = n;
    script_highest_sample = 0;
    for (size_t i = 0; i < n; i++)
        if (samples[i] > script_highest_sample)
            script_highest_sample = samples[i];
    if (script_error)
        return script_error;
    *min_entropy = script_figure[script_calls < script_figures ? script_calls
                                                               : script_figures - 1];
    script_calls++;
    return 0;
}

static void script_assessments(int error, unsigned n, const double *figures)
{
    script_error = error;
    script_figures = n;
    script_calls = 0;
    script_samples = 0;
    if (n > 0)
        memcpy(script_figure, figures, n * sizeof(*figures));
    source_use_estimator(scripted_estimator);
}

/* A jitter source on the good scripted clock, wanted, its first assessment asked for. */
static void open_assessed_jitter(void)
{
    char why[256];

    ck_assert_int_eq(open_scripted_jitter(CLOCK_GOOD, why, sizeof(why)), 0);
    source_want(&src, true);
    source_assess(&src);
}

/* A clock that counts in large steps (as some VMs' do) resolves no jitter: the source is
 * off from the start, and the reason says so. */
START_TEST(jitter_with_a_coarse_clock_is_disabled_with_the_reason)
{
    char why[256];

    ck_assert_int_eq(open_scripted_jitter(CLOCK_COARSE, why, sizeof(why)), -ENODEV);
    ck_assert_msg(strstr(why, "clock too coarse for jitter: it counts in steps of 1000000"),
                  "why: %s", why);
}
END_TEST

/* A 24 MHz generic timer (older Arm cores) read in ns units: its deltas are 41 or 42 ns
 * apart, whose GCD is 1, yet a ~250 ns measurement spans only about 6 of its ticks. The check
 * judges by the 41.67 ns it resolves, not by its units, and refuses it. */
START_TEST(jitter_with_a_24mhz_timer_in_ns_units_is_disabled_with_its_real_step)
{
    unsigned long long step = 0;
    const char *at;
    char why[256];

    ck_assert_int_eq(open_scripted_jitter(CLOCK_24MHZ_NS, why, sizeof(why)), -ENODEV);
    at = strstr(why, "clock too coarse for jitter: it counts in steps of ");
    ck_assert_msg(at && sscanf(at + strlen("clock too coarse for jitter: it counts in steps "
                                           "of "), "%llu", &step) == 1, "why: %s", why);
    ck_assert_msg(step >= 40 && step <= 42, "a 24 MHz timer's step found as %llu ns, wanted "
                  "about 41.67: %s", step, why);
}
END_TEST

/* The same timer under measurements ten times as long resolves them (36 to 60 ticks); a 1 GHz
 * generic timer (ARMv8.6 on) resolves the short ones. Both are accepted. */
START_TEST(jitter_accepts_a_timer_that_resolves_its_measurements)
{
    char why[256] = "";

    ck_assert_msg(open_scripted_jitter(CLOCK_24MHZ_NS_SLOW, why, sizeof(why)) == 0,
                  "24 MHz timer, 1.5-2.5 us measurements: %s", why);
    source_close(&src);
    ck_assert_msg(open_scripted_jitter(CLOCK_1GHZ, why, sizeof(why)) == 0,
                  "1 GHz timer, 150-350 ns measurements: %s", why);
}
END_TEST

/* Harvests at now until healthy; the first batch may be the retry after a quarantine. */
static void run_until_healthy(uint64_t now)
{
    uint64_t failures = src.health.failures;
    uint8_t buf[512];

    do
        harvest_next_batch(&src, buf, sizeof(buf), now);
    while (src.health.state == RANDD_SOURCE_STARTUP ||
           (src.health.state == RANDD_SOURCE_QUARANTINED && src.health.failures == failures &&
            health_retry_due(&src.health, now)));
    ck_assert_msg(src.health.state == RANDD_SOURCE_HEALTHY, "jitter is %s: %s",
                  randd_source_state_name(src.health.state), src.health.reason);
}

static void run_until_quarantined(uint64_t now)
{
    uint8_t buf[512];

    for (int i = 0; i < 64 && src.health.state != RANDD_SOURCE_QUARANTINED; i++)
        harvest_next_batch(&src, buf, sizeof(buf), now);
    ck_assert_msg(src.health.state == RANDD_SOURCE_QUARANTINED, "jitter is still %s after 64 batches",
                  randd_source_state_name(src.health.state));
}

/* The clock recovers: batches that may hold the faulty mode are discarded while the source
 * sits out its quarantine, then the retry's start-up test admits it again. */
static void recover_and_readmit(uint64_t quarantined_at)
{
    uint8_t buf[512];
    uint64_t retry = quarantined_at + (HEALTH_BACKOFF_MIN_S + 1) * 1000000000ull;

    set_clock(CLOCK_GOOD);
    for (int i = 0; i < 2; i++)           /* the batch in progress, then a whole good one */
        ck_assert_int_eq(harvest_next_batch(&src, buf, sizeof(buf), quarantined_at), 0);
    run_until_healthy(retry);
    ck_assert_uint_eq(src.health.failures, 1);
}

START_TEST(jitter_constant_samples_are_stuck_quarantined_and_readmitted_on_recovery)
{
    char why[256];
    uint64_t t = 1000000000u;

    ck_assert_int_eq(open_scripted_jitter(CLOCK_GOOD, why, sizeof(why)), 0);
    source_want(&src, true);
    run_until_healthy(t);
    set_clock(CLOCK_CONSTANT);
    run_until_quarantined(t);
    ck_assert_msg(strstr(src.health.reason, "stuck test"), "reason: %s", src.health.reason);
    ck_assert_uint_gt(src.stuck_discarded, 0);
    recover_and_readmit(t);
}
END_TEST

/* A short cycle of distinct deltas is not stuck, and a source claiming 1 bit a sample
 * passes the RCT and APT with it; the lag test catches it. */
START_TEST(jitter_periodic_samples_fail_the_lag_test_and_are_readmitted_on_recovery)
{
    char why[256];
    uint64_t t = 1000000000u;

    ck_assert_int_eq(open_scripted_jitter(CLOCK_GOOD, why, sizeof(why)), 0);
    source_want(&src, true);
    run_until_healthy(t);
    set_clock(CLOCK_PERIODIC);
    run_until_quarantined(t);
    ck_assert_msg(strstr(src.health.reason, "lag test"), "reason: %s", src.health.reason);
    recover_and_readmit(t);
}
END_TEST

/* --- measured credit: jitter's assessments ------------------------------------------------ */

/* 1.2 bits a sample assessed: credited 1.2 - 0.5 = 0.7 bits, over the oversampling of 4, on
 * a sample of the assessment's own size; STATUS's figure is the assessed one. */
START_TEST(jitter_credit_is_a_margin_below_the_assessment)
{
    open_assessed_jitter();
    script_assessments(0, 1, (double[]){ 1.2 });
    ck_assert_double_eq(src.entropy_per_byte, 0);
    harvest_until_assessed(1, 1);
    ck_assert_uint_eq(script_samples, SOURCE_ASSESS_SAMPLES);
    ck_assert_double_eq_tol(src.assessed_entropy_per_byte, 1.2, 1e-12);
    ck_assert_double_eq_tol(src.entropy_per_byte, 0.7 / 4, 1e-12);
}
END_TEST

/* The assessment samples the steady state, not the warm-up after a start or a sleep, whose
 * deltas are wider and assess higher: none of the scripted warm-up's samples (128-255)
 * reaches the estimator, though a start's assessment is the first thing the worker does. */
START_TEST(jitter_assesses_the_steady_state_not_the_warm_up)
{
    char why[256];

    ck_assert_int_eq(open_scripted_jitter(CLOCK_WARMING, why, sizeof(why)), 0);
    restart_clock(CLOCK_WARMING);
    script_assessments(0, 1, (double[]){ 1.2 });
    source_want(&src, true);
    source_assess(&src);
    harvest_until_assessed(1, 1);
    ck_assert_uint_eq(script_samples, SOURCE_ASSESS_SAMPLES);
    ck_assert_msg(script_highest_sample < 128, "a warm-up sample (%u) was assessed",
                  script_highest_sample);
}
END_TEST

/* Above the claim of 1 bit plus the margin, the claim caps the credit: 1/4 a sample. */
START_TEST(jitter_credit_is_capped_by_the_claim)
{
    open_assessed_jitter();
    script_assessments(0, 1, (double[]){ 3.5 });
    harvest_until_assessed(1, 1);
    ck_assert_double_eq_tol(src.entropy_per_byte, 0.25, 1e-12);
    ck_assert_str_eq(src.assessment_warning, "");
}
END_TEST

/* Reassessments: 1.3 (credit 0.2), then 0.9 lowers it to 0.1, then 2.0 leaves it there, and
 * STATUS keeps the lowest figure the credit answers to. The fall, and only it, moves
 * source_distrusts: what was credited at 0.2 must leave the noise reservoir (pool.c). */
START_TEST(jitter_lower_reassessment_lowers_credit_and_a_higher_one_does_not_raise_it)
{
    uint64_t distrusts;

    open_assessed_jitter();
    script_assessments(0, 3, (double[]){ 1.3, 0.9, 2.0 });
    distrusts = source_distrusts(&src);
    harvest_until_assessed(1, 1);
    ck_assert_double_eq_tol(src.entropy_per_byte, 0.8 / 4, 1e-12);
    ck_assert_uint_eq(source_distrusts(&src), distrusts);         /* from 0: a rise */
    source_assess(&src);
    harvest_until_assessed(2, 2);
    ck_assert_double_eq_tol(src.entropy_per_byte, 0.4 / 4, 1e-12);
    ck_assert_double_eq_tol(src.assessed_entropy_per_byte, 0.9, 1e-12);
    ck_assert_msg(source_distrusts(&src) == distrusts + 1, "a credit fall left "
                  "source_distrusts at %llu", (unsigned long long)source_distrusts(&src));
    source_assess(&src);
    harvest_until_assessed(3, 3);
    ck_assert_uint_eq(source_distrusts(&src), distrusts + 1);
    ck_assert_uint_eq(script_calls, 3);
    ck_assert_double_eq_tol(src.entropy_per_byte, 0.4 / 4, 1e-12);
    ck_assert_double_eq_tol(src.assessed_entropy_per_byte, 0.9, 1e-12);
    ck_assert_msg(src.health.state != RANDD_SOURCE_QUARANTINED, "jitter quarantined: %s",
                  src.health.reason);
}
END_TEST

/* SP 800-90B's cutoffs at alpha = 2^-40 for H bits a sample, computed here from the
 * binomial distribution by its mass function's recurrence (daemon/health.c sums logs of
 * lgamma): RCT C = 1 + ceil(40 / H) (4.4.1); APT C = 1 + CRITBINOM(W, 2^-H, 1 - alpha)
 * (4.4.2), the smallest count whose CDF reaches 1 - alpha, plus one; the lag test's, the
 * smallest c with P(Binomial(W, 2^-H) >= c) <= alpha / 16 (alpha shared by the 16 lags). */
static unsigned critbinom(unsigned n, double p, double alpha)
{
    long double pmf = powl(1 - p, n), below = 0;

    for (unsigned k = 0; k <= n; k++) {
        below += pmf;
        if (1 - below <= alpha)
            return k;
        pmf *= (long double)(n - k) / (k + 1) * p / (1 - p);
    }
    return n;
}

/* Assessed at 0.8 bits a sample, below the claim of 1: the cutoffs are 0.8's, the figures
 * SP 800-90B's formulas give (51, 372 and 376); the tests go on where they were. */
START_TEST(jitter_cutoffs_follow_a_lower_assessment)
{
    const double h = 0.8, alpha = ldexp(1, -40), p = exp2(-h);

    open_assessed_jitter();
    ck_assert_uint_eq(src.health.rct_cutoff, 41);           /* the claim, 1 bit, until then */
    script_assessments(0, 1, (double[]){ h });
    harvest_until_assessed(1, 1);
    ck_assert_double_eq_tol(src.health.entropy, h, 1e-12);
    ck_assert_uint_eq(src.health.rct_cutoff, 1 + (unsigned)ceil(40 / h));
    ck_assert_uint_eq(src.health.rct_cutoff, 51);
    ck_assert_uint_eq(src.health.apt_window, 512);
    ck_assert_uint_eq(src.health.apt_cutoff, 1 + critbinom(512, p, alpha));
    ck_assert_uint_eq(src.health.apt_cutoff, 372);
    ck_assert_uint_eq(src.health.lag_cutoff, 1 + critbinom(512, p, alpha / 16));
    ck_assert_uint_eq(src.health.lag_cutoff, 376);
    ck_assert_msg(src.health.state != RANDD_SOURCE_QUARANTINED, "jitter quarantined: %s",
                  src.health.reason);
}
END_TEST

/* Assessed above the claim: the cutoffs stay the claim's (1 bit: RCT 41). */
START_TEST(jitter_cutoffs_stay_at_the_claim_when_assessed_above_it)
{
    open_assessed_jitter();
    script_assessments(0, 1, (double[]){ 1.6 });
    harvest_until_assessed(1, 1);
    ck_assert_double_eq_tol(src.health.entropy, 1.0, 1e-12);
    ck_assert_uint_eq(src.health.rct_cutoff, 41);
}
END_TEST

/* 0.3 bits a sample is under the floor: out for good, the reason says why, nothing credited,
 * and no retry an hour later; the worker is no longer wanted. */
START_TEST(jitter_assessed_below_the_floor_is_disabled_with_the_reason)
{
    uint8_t buf[512];

    open_assessed_jitter();
    script_assessments(0, 1, (double[]){ 0.3 });
    harvest_until_assessed(1, 1);
    ck_assert_str_eq(randd_source_state_name(src.health.state), "quarantined");
    ck_assert_msg(strstr(src.health.reason, "found 0.3 bits a sample, under the floor"),
                  "reason: %s", src.health.reason);
    ck_assert_double_eq(src.entropy_per_byte, 0);
    ck_assert_double_eq(src.credited_bits, 0);
    ck_assert_uint_eq(src.health.failures, 0);            /* not a health test failure */
    ck_assert_int_eq(source_harvest(&src, buf, sizeof(buf), 3600 * 1000000000ull), 0);
    ck_assert_str_eq(randd_source_state_name(src.health.state), "quarantined");
    source_want(&src, false);
    ck_assert(!src.wanted);
}
END_TEST

/* A first assessment that cannot run leaves nothing to credit by: disabled, saying why. */
START_TEST(jitter_whose_first_assessment_fails_is_disabled_with_the_reason)
{
    open_assessed_jitter();
    script_assessments(-ENOMEM, 0, NULL);
    harvest_until_assessed(1, 1);
    ck_assert_str_eq(randd_source_state_name(src.health.state), "quarantined");
    ck_assert_msg(strstr(src.health.reason, "could not be assessed (Cannot allocate memory)"),
                  "reason: %s", src.health.reason);
    ck_assert_double_eq(src.entropy_per_byte, 0);
    ck_assert_uint_eq(src.assessments, 0);
}
END_TEST

/* The samples an assessment took are wiped on the way out, whatever the estimator said. */
START_TEST(estimate_wipes_the_samples)
{
    uint8_t sample[64];
    double h;

    script_assessments(0, 1, (double[]){ 1.0 });
    memset(sample, 0xa5, sizeof(sample));
    ck_assert_int_eq(source_estimate(sample, sizeof(sample), &h), 0);
    for (size_t i = 0; i < sizeof(sample); i++)
        ck_assert_uint_eq(sample[i], 0);
    script_assessments(-EINVAL, 0, NULL);
    memset(sample, 0xa5, sizeof(sample));
    ck_assert_int_eq(source_estimate(sample, sizeof(sample), &h), -EINVAL);
    ck_assert_uint_eq(sample[0], 0);
}
END_TEST

/* --- measured credit: the CPU source and hwrng keep theirs, and warn --------------------- */

/* Waits for the assessment thread (its eventfd is the source's wake_fd) and takes its outcome
 * in with a harvest. */
static void wait_for_assessment(void)
{
    struct pollfd pfd = { .fd = src.wake_fd, .events = POLLIN };
    uint8_t buf[512];

    ck_assert_int_ge(src.wake_fd, 0);
    ck_assert_msg(poll(&pfd, 1, 60000) == 1, "no assessment of %s within 60 s", src.name);
    ck_assert_int_ge(source_harvest(&src, buf, sizeof(buf), 1), 0);
    ck_assert_uint_eq(src.assessments, 1);
}

/* A file of n bytes standing in for a hardware RNG: urandom's, masked to mask. */
static void open_file_hwrng(size_t n, uint8_t mask)
{
    char path[] = "/tmp/randd-hwrng-XXXXXX", why[256];
    uint8_t noise[256];
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    for (size_t done = 0; done < n; done += sizeof(noise)) {
        ck_assert_int_eq(getentropy(noise, sizeof(noise)), 0);
        for (size_t i = 0; i < sizeof(noise); i++)
            noise[i] &= mask;
        write_all(fd, noise, sizeof(noise));
    }
    close(fd);
    ck_assert_int_eq(source_hwrng_open(&src, path, why, sizeof(why)), 0);
    unlink(path);
}

/* Bytes of four values carry at most 2 bits, and an assessment's confidence bound puts them
 * below: under the 2 bits a byte hwrng is credited. The credit stays; the warning says why. */
START_TEST(hwrng_assessed_below_its_credit_keeps_it_and_warns)
{
    open_file_hwrng(65536, 0x03);
    source_assess(&src);
    wait_for_assessment();
    ck_assert_msg(src.assessed_entropy_per_byte < 2, "assessed %g",
                  src.assessed_entropy_per_byte);
    ck_assert_double_eq(src.entropy_per_byte, 2);
    ck_assert_msg(strstr(src.assessment_warning, "below the 2 credited"), "warning: \"%s\"",
                  src.assessment_warning);
    check_admitted_and_usable(&src);      /* and still in use */
}
END_TEST

START_TEST(hwrng_assessed_above_its_credit_has_no_warning)
{
    open_file_hwrng(65536, 0xff);
    source_assess(&src);
    wait_for_assessment();
    ck_assert_msg(src.assessed_entropy_per_byte > 2, "assessed %g",
                  src.assessed_entropy_per_byte);
    ck_assert_str_eq(src.assessment_warning, "");
}
END_TEST

/* A device that gives nothing keeps the assessment waiting; closing the source stops it at
 * once, not at its one-minute deadline. */
START_TEST(hwrng_assessment_of_a_silent_device_stops_at_close)
{
    char dir[] = "/tmp/randd-fifo-XXXXXX", path[64], why[256];
    double started;
    int writer;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/hwrng", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(source_hwrng_open(&src, path, why, sizeof(why)), 0);
    writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    unlink(path);
    rmdir(dir);
    source_assess(&src);
    usleep(200000);                       /* let it wait on the device (no state to await) */
    started = seconds_now();
    source_close(&src);
    ck_assert_msg(seconds_now() - started < 5, "close took %.1f s", seconds_now() - started);
    ck_assert_uint_eq(src.assessments, 0);
    close(writer);
}
END_TEST

/* An estimator that holds on until the test lets it go, standing in for one that takes
 * seconds of CPU on a machine whose cores are all busy. */
static sem_t estimate_started, estimate_released;
static atomic_int estimates_returned;

static int held_estimator(const uint8_t *samples, size_t n, double *min_entropy)
{
    (void)samples;
    (void)n;
    sem_post(&estimate_started);
    while (sem_wait(&estimate_released) < 0 && errno == EINTR)
        ;
    *min_entropy = 7;
    atomic_fetch_add(&estimates_returned, 1);
    return 0;
}

/* randd stopping does not wait for an estimate: the source closes while it runs, and the
 * estimate's thread, left on its own, finishes later without touching the closed source. */
START_TEST(closing_a_source_does_not_wait_for_its_estimate)
{
    ck_assert_int_eq(sem_init(&estimate_started, 0, 0), 0);
    ck_assert_int_eq(sem_init(&estimate_released, 0, 0), 0);
    atomic_store(&estimates_returned, 0);
    source_use_estimator(held_estimator);
    open_file_hwrng(65536, 0xff);
    source_assess(&src);
    while (sem_wait(&estimate_started) < 0 && errno == EINTR)
        ;
    source_close(&src);                    /* with the estimate still held: returns */
    ck_assert_int_eq(atomic_load(&estimates_returned), 0);
    ck_assert_int_eq(src.fd, -1);
    memset(&src, 0xa5, sizeof(src));      /* anything it touched now would be garbage */
    sem_post(&estimate_released);
    for (double end = seconds_now() + 60; atomic_load(&estimates_returned) == 0; usleep(1000))
        ck_assert_msg(seconds_now() < end, "the estimate never returned");
    memset(&src, 0, sizeof(src));
    src.fd = -1;
    src.wake_fd = -1;
}
END_TEST

/* The same for jitter's worker, which estimates on its own thread; it frees its state
 * itself once the estimate returns (check-asan's LeakSanitizer would see it lost if not). */
START_TEST(closing_jitter_does_not_wait_for_its_estimate)
{
    ck_assert_int_eq(sem_init(&estimate_started, 0, 0), 0);
    ck_assert_int_eq(sem_init(&estimate_released, 0, 0), 0);
    atomic_store(&estimates_returned, 0);
    source_use_estimator(held_estimator);
    double started;

    open_assessed_jitter();
    while (sem_wait(&estimate_started) < 0 && errno == EINTR)
        ;
    started = seconds_now();
    source_close(&src);                    /* with the estimate still held: returns */
    /* after its 200 ms wait for the worker: a bound of wall time, not of speed */
    ck_assert_msg(seconds_now() - started < 1.5, "close took %.2f s", seconds_now() - started);
    ck_assert_int_eq(atomic_load(&estimates_returned), 0);
    sem_post(&estimate_released);
    for (double end = seconds_now() + 60; atomic_load(&estimates_returned) == 0; usleep(1000))
        ck_assert_msg(seconds_now() < end, "the estimate never returned");
}
END_TEST

/* CPU words whose bytes take four values: the same warning, and the same kept credit. */
static bool four_valued_cpu(uint64_t *value)
{
    *value = splitmix64(&cpu_state) & 0x0303030303030303ull;
    return true;
}

START_TEST(cpu_source_assessed_below_its_credit_keeps_it_and_warns)
{
    cpu_state = 42;
    source_cpu_init(&src, four_valued_cpu);
    source_assess(&src);
    wait_for_assessment();
    ck_assert_double_eq(src.entropy_per_byte, 4);
    ck_assert_msg(strstr(src.assessment_warning, "below the 4 credited"), "warning: \"%s\"",
                  src.assessment_warning);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("source");
    TCase *tc = tcase_create("real sources");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 150);          /* two waits of a minute at most */
    tcase_add_test(tc, cpu_source_is_named_after_its_instruction);
    tcase_add_test(tc, cpu_source_opens_where_the_kernel_lists_it);
    tcase_add_test(tc, cpu_source_is_read_and_health_tested);
    tcase_add_test(tc, getrandom_is_read_but_never_credited_to_the_kernel);
    tcase_add_test(tc, hwrng_is_read_when_present);
    tcase_add_test(tc, hwrng_device_the_kernel_does_not_read_is_kernel_creditable);
    tcase_add_test(tc, missing_hwrng_device_says_why);
    tcase_add_test(tc, hwrng_fifo_retry_discards_what_was_queued_while_quarantined);
    suite_add_tcase(s, tc);

    tc = tcase_create("cpu source faults");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, cpu_source_carry_clear_forever_gives_nothing_and_never_hangs);
    tcase_add_test(tc, cpu_source_intermittent_carry_clear_is_retried);
    tcase_add_test(tc, cpu_source_stuck_after_n_good_words_is_quarantined_at_runtime);
    suite_add_tcase(s, tc);

    tc = tcase_create("jitter");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 150);          /* waits of a minute at most for a batch */
    tcase_add_test(tc, jitter_is_read_only_while_wanted_and_credits_nothing_unassessed);
    tcase_add_test(tc, jitter_credits_a_margin_below_its_own_assessment);
    tcase_add_test(tc, jitter_with_a_coarse_clock_is_disabled_with_the_reason);
    tcase_add_test(tc, jitter_with_a_24mhz_timer_in_ns_units_is_disabled_with_its_real_step);
    tcase_add_test(tc, jitter_accepts_a_timer_that_resolves_its_measurements);
    tcase_add_test(tc, jitter_constant_samples_are_stuck_quarantined_and_readmitted_on_recovery);
    tcase_add_test(tc, jitter_periodic_samples_fail_the_lag_test_and_are_readmitted_on_recovery);
    suite_add_tcase(s, tc);

    tc = tcase_create("measured credit");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 150);          /* waits of a minute at most */
    tcase_add_test(tc, jitter_credit_is_a_margin_below_the_assessment);
    tcase_add_test(tc, jitter_assesses_the_steady_state_not_the_warm_up);
    tcase_add_test(tc, jitter_credit_is_capped_by_the_claim);
    tcase_add_test(tc, jitter_lower_reassessment_lowers_credit_and_a_higher_one_does_not_raise_it);
    tcase_add_test(tc, jitter_assessed_below_the_floor_is_disabled_with_the_reason);
    tcase_add_test(tc, jitter_whose_first_assessment_fails_is_disabled_with_the_reason);
    tcase_add_test(tc, estimate_wipes_the_samples);
    tcase_add_test(tc, hwrng_assessed_below_its_credit_keeps_it_and_warns);
    tcase_add_test(tc, hwrng_assessed_above_its_credit_has_no_warning);
    tcase_add_test(tc, hwrng_assessment_of_a_silent_device_stops_at_close);
    tcase_add_test(tc, closing_a_source_does_not_wait_for_its_estimate);
    tcase_add_test(tc, closing_jitter_does_not_wait_for_its_estimate);
    tcase_add_test(tc, cpu_source_assessed_below_its_credit_keeps_it_and_warns);
    tcase_add_test(tc, jitter_cutoffs_follow_a_lower_assessment);
    tcase_add_test(tc, jitter_cutoffs_stay_at_the_claim_when_assessed_above_it);
    suite_add_tcase(s, tc);
    return s;
}
