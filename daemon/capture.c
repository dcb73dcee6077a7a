/* Raw-noise capture for SP 800-90B assessment (`randd --capture SOURCE --count N --output
 * FILE`): opens one source as the daemon would, with the same config, reads N raw samples
 * through the source's own read op and writes them one sample per byte (the CPU source's
 * words and hwrng's bytes byte by byte, jitter's 8-bit samples as they are). It runs as a process of
 * its own with no pool and no generator, so nothing captured ever feeds one. The samples are
 * health-tested on the way and the outcome reported, but every sample is written: an
 * assessment needs them as the source gives them.
 *
 * With --restarts R it writes the row dataset of SP 800-90B 3.1.4.1: R rows of N samples,
 * the source opened afresh before each row and closed after it, exactly as a start of randd
 * opens it (new state, new buffers, new health tests, and for jitter a new worker thread, a
 * new memory buffer, its clock check and its first assessment). What a reopen can restart
 * differs by source; randd(8) says where it cannot mean much.
 *
 * On a terminal, a line on stderr shows how far it is and about how long is left, redrawn at
 * most twice a second; elsewhere (a log, a pipe) it says nothing until the end. */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "output_file.h"
#include "source.h"

#define CAPTURE_CHUNK 4096
#define CAPTURE_WAIT_MS 60000    /* a device or the jitter worker silent this long: give up */

/* "cpu" is the CPU source under any name; its own name (rdseed, rndrrs, ...) works too. */
static const char *const capture_sources[] = { "cpu", "hwrng", "jitter", "getrandom" };

static bool is_cpu_source(const char *name)
{
    return !strcmp(name, "cpu") || !strcmp(name, source_cpu_name());
}

bool capture_is_source(const char *name)
{
    for (size_t i = 0; i < sizeof(capture_sources) / sizeof(capture_sources[0]); i++)
        if (!strcmp(name, capture_sources[i]))
            return true;
    return is_cpu_source(name);
}

const char *capture_source_list(void)
{
    static char list[96];

    if (strcmp(source_cpu_name(), "cpu"))
        snprintf(list, sizeof(list), "cpu (%s here), hwrng, jitter or getrandom",
                 source_cpu_name());
    else
        snprintf(list, sizeof(list), "cpu (none here), hwrng, jitter or getrandom");
    return list;
}

/* The config key that turns source name off, or NULL when the config lets it run: a capture
 * reads only what the daemon would (jitter = auto may run, so it may be captured). */
const char *capture_config_turns_off(const struct config *c, const char *name)
{
    if (is_cpu_source(name))
        return c->cpu_source ? NULL : c->cpu_source_key;
    if (!strcmp(name, "hwrng"))
        return c->hwrng ? NULL : "hwrng";
    if (!strcmp(name, "jitter"))
        return c->jitter != JITTER_NO ? NULL : "jitter";
    if (!strcmp(name, "getrandom"))
        return c->getrandom ? NULL : "getrandom";
    return NULL;
}

static int open_source(struct source *s, const struct config *c, const char *name, char *why,
                       size_t whylen)
{
    if (is_cpu_source(name))
        return source_cpu_open(s, why, whylen);
    if (!strcmp(name, "hwrng"))
        return source_hwrng_open(s, c->hwrng_device, why, whylen);
    if (!strcmp(name, "jitter"))
        return source_jitter_open(s, c->jitter_oversampling, why, whylen);
    if (!strcmp(name, "getrandom"))
        return source_getrandom_open(s, why, whylen);
    snprintf(why, whylen, "%s: not a source (%s)", name, capture_source_list());
    return -EINVAL;
}

/* Waits until the source may have more: its wake fd (jitter), its device, or not at all. */
static int wait_for_more(const struct source *s)
{
    struct pollfd pfd = { .fd = s->wake_fd >= 0 ? s->wake_fd : s->fd, .events = POLLIN };

    if (pfd.fd < 0)
        return 0;
    return poll(&pfd, 1, CAPTURE_WAIT_MS) == 1 ? 0 : -ETIMEDOUT;
}

/* --- progress on a terminal ---------------------------------------------------------------- */

struct progress {
    bool on;                          /* stderr is a terminal */
    double total;                     /* samples, every row (count x rows may pass 2^64) */
    unsigned long long done;
    double started, drawn;            /* CLOCK_MONOTONIC seconds */
};

static double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_start(struct progress *p, double total)
{
    *p = (struct progress){ .on = isatty(STDERR_FILENO), .total = total };
    p->started = p->drawn = seconds_now();
}

/* "123,456 of 1,000,000 samples (12%), about 3 min left": the estimate from the rate so far. */
static void progress_add(struct progress *p, size_t samples)
{
    double now, left;

    p->done += samples;
    if (!p->on || (now = seconds_now()) - p->drawn < 0.5)
        return;
    p->drawn = now;
    left = (now - p->started) / (double)p->done * (p->total - (double)p->done);
    fprintf(stderr, "\rrandd: capture: %llu of %.0f samples (%.0f%%), about %.0f %s left  ",
            p->done, p->total, 100.0 * (double)p->done / p->total,
            left >= 90 ? left / 60 : left, left >= 90 ? "min" : "s");
}

static void progress_end(const struct progress *p)
{
    if (p->on && p->drawn > p->started)
        fputs("\r\033[K", stderr);      /* the line goes: the summary follows */
}

static int write_all(int fd, const uint8_t *buf, size_t n)
{
    while (n > 0) {
        ssize_t put = write(fd, buf, n);

        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0)
            return -errno;
        buf += put;
        n -= (size_t)put;
    }
    return 0;
}

static int capture(struct source *s, unsigned long long count, int out,
                   struct progress *progress, char *why, size_t whylen)
{
    static uint8_t buf[CAPTURE_CHUNK];
    unsigned long long done = 0;
    int rc = 0;

    source_want(s, true);
    while (done < count && rc == 0) {
        size_t want = count - done < sizeof(buf) ? (size_t)(count - done) : sizeof(buf);
        ssize_t got = s->ops->read(s, buf, want);

        if (got < 0) {
            snprintf(why, whylen, "reading %s: %s", s->name, strerror((int)-got));
            rc = (int)got;
        } else if (got == 0) {
            if ((rc = wait_for_more(s)) < 0)
                snprintf(why, whylen, "%s gave nothing for %d s", s->name,
                         CAPTURE_WAIT_MS / 1000);
        } else {
            health_feed_buffer(&s->health, buf, (size_t)got, 0);
            if ((rc = write_all(out, buf, (size_t)got)) < 0)
                snprintf(why, whylen, "writing: %s", strerror(-rc));
            done += (unsigned long long)got;
            progress_add(progress, (size_t)got);
        }
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

/* The rows: each opens the source (as_started: as a start of randd does), writes count
 * samples into out and closes it. Counts the rows whose health tests failed in *failed,
 * keeping the first reason. */
static int capture_rows(const struct config *c, const char *name, unsigned long long count,
                        unsigned long long rows, bool as_started, int out,
                        unsigned long long *row,
                        unsigned *failed, char *reason, size_t reasonlen, char *why,
                        size_t whylen)
{
    struct progress progress;
    int rc = 0;

    progress_start(&progress, (double)count * (double)rows);
    for (unsigned long long r = 1; r <= rows && rc == 0; r++) {
        struct source s;

        *row = r;
        if ((rc = open_source(&s, c, name, why, whylen)) < 0)
            break;
        /* As randd starts it: jitter's worker assesses samples of its own before its first
         * batch, so the row holds the first samples a started daemon would be given. (The CPU
         * source's and hwrng's start assessments read the device beside the pool, taking
         * nothing from what it reads: left out.) */
        if (as_started && !strcmp(name, "jitter"))
            source_assess(&s);
        rc = capture(&s, count, out, &progress, why, whylen);
        if (rc == 0 && s.health.state == RANDD_SOURCE_QUARANTINED && (*failed)++ == 0)
            snprintf(reason, reasonlen, "%s", s.health.reason);
        source_close(&s);
    }
    progress_end(&progress);
    return rc;
}

int capture_run(const struct config *c, const char *name, unsigned long long count,
                unsigned long long restarts, const char *path, bool replace, char *why,
                size_t whylen)
{
    struct randd_output out;
    unsigned long long row = 0;
    unsigned failed = 0;
    char reason[160] = "", inner_count[64];
    int rc;

    /* Before any source opens: a path it cannot write fails at once, not after a capture
     * of an hour. The samples go to a file of our own beside it, put at the path only when
     * all are written: a failed capture leaves the path as it was. */
    if ((rc = randd_output_open(&out, path, 0600,
                                replace ? RANDD_OUTPUT_REPLACE : RANDD_OUTPUT_NEW, why,
                                whylen)) < 0) {
        if (rc == -EEXIST)
            snprintf(why + strlen(why), whylen - strlen(why), " (--force replaces a file of "
                     "yours)");
        return rc;
    }
    rc = capture_rows(c, name, count, restarts ? restarts : 1, restarts > 0, out.fd, &row,
                      &failed, reason, sizeof(reason), why, whylen);
    if (rc == 0)
        rc = randd_output_commit(&out, why, whylen);
    else
        randd_output_abort(&out);
    if (rc < 0 && restarts) {
        char inner[256];

        snprintf(inner, sizeof(inner), "%s", why);
        snprintf(why, whylen, "restart %llu of %llu: %s", row, restarts, inner);
    }
    if (failed)
        snprintf(inner_count, sizeof(inner_count), "failed after %u restart%s, the first: ",
                 failed, failed == 1 ? "" : "s");
    if (rc == 0 && restarts)
        snprintf(why, whylen, "%llu restarts x %llu raw samples of %s in %s; health tests: "
                 "%s%s", restarts, count, name, path, failed ? inner_count : "passed", reason);
    else if (rc == 0)
        snprintf(why, whylen, "%llu raw samples of %s in %s; health tests: %s%s", count, name,
                 path, failed ? "failed: " : "passed", reason);
    return rc;
}
