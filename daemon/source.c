/* What every source shares: set-up, the harvest step (read, health-test, quarantine and
 * re-admission), and close. Per-source reading is in source_<name>.c. */
#include "source.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "log.h"

void source_init(struct source *s, const char *name, const struct source_ops *ops,
                 double entropy_per_byte, unsigned sample_bytes, bool kernel_creditable)
{
    *s = (struct source){
        .name = name,
        .ops = ops,
        .entropy_per_byte = entropy_per_byte,
        .sample_bytes = sample_bytes,
        .kernel_creditable = kernel_creditable,
        .assessed_entropy_per_byte = SOURCE_NOT_ASSESSED,
        .fd = -1,
        .wake_fd = -1,
    };
    health_init(&s->health, sample_bytes, entropy_per_byte * sample_bytes);
}

bool source_healthy(const struct source *s)
{
    return s->health.state == RANDD_SOURCE_HEALTHY;
}

/* A device fed from user space (a FIFO, a pty, a USB TRNG's tty) keeps what its writer
 * produced while randd was not reading, and that may be the very output that failed. The
 * retry's start-up test must judge what the device gives from now on, so what was queued
 * when the retry began (FIONREAD) is read and wiped first. A real /dev/hwrng queues
 * nothing, and a regular file is not a queue: both are left alone. */
#define STALE_DISCARD_MAX (1u << 20)      /* fs.pipe-max-size's default */

static void discard_stale_input(struct source *s)
{
    uint8_t sink[4096];
    struct stat st;
    int queued = 0;
    size_t left, discarded = 0;

    if (s->fd < 0 || fstat(s->fd, &st) < 0 || S_ISREG(st.st_mode) ||
        ioctl(s->fd, FIONREAD, &queued) < 0 || queued <= 0)
        return;
    left = (size_t)queued < STALE_DISCARD_MAX ? (size_t)queued : STALE_DISCARD_MAX;
    while (left > 0) {
        ssize_t got = read(s->fd, sink, left < sizeof(sink) ? left : sizeof(sink));

        if (got <= 0)
            break;
        discarded += (size_t)got;
        left -= (size_t)got;
    }
    OPENSSL_cleanse(sink, sizeof(sink));
    s->stale_discarded += discarded;
    log_info("source %s: discarded %zu bytes queued while quarantined", s->name, discarded);
}

/* The source's own stuck test (jitter) reports its longest run of dropped samples with each
 * read; the health module judges it beside the sample tests. */
static void judge_stuck_run(struct source *s, uint64_t now_ns)
{
    if (s->stuck_run == 0)
        return;
    health_feed_stuck(&s->health, s->stuck_run, now_ns);
    s->stuck_run = 0;
}

ssize_t source_harvest(struct source *s, uint8_t *buf, size_t n, uint64_t now_ns)
{
    enum randd_source_state before = s->health.state;
    ssize_t got;

    if (before == RANDD_SOURCE_QUARANTINED) {
        if (!health_retry_due(&s->health, now_ns)) {
            source_discard(s);       /* never used, and must not keep the loop awake */
            return 0;
        }
        log_info("source %s: retrying after quarantine (start-up test)", s->name);
        discard_stale_input(s);
        source_discard(s);
        health_readmit(&s->health, now_ns);
        before = s->health.state;
    }
    got = s->ops->read(s, buf, n);
    if (got < 0) {
        s->read_errors++;
        s->last_errno = (int)-got;
        return got;
    }
    judge_stuck_run(s, now_ns);
    if (got == 0 && s->health.state != RANDD_SOURCE_QUARANTINED) {
        s->empty_reads++;
        return 0;
    }
    s->bytes_read += (uint64_t)got;
    health_feed_buffer(&s->health, buf, (size_t)got, now_ns);
    switch (s->health.state) {
    case RANDD_SOURCE_QUARANTINED:
        log_warning("source %s: quarantined: %s", s->name, s->health.reason);
        break;
    case RANDD_SOURCE_HEALTHY:
        if (before == RANDD_SOURCE_HEALTHY) {
            s->bytes_used += (uint64_t)got;
            s->credited_bits += s->entropy_per_byte * (double)got;
            return got;
        }
        log_info("source %s: start-up test passed, in use", s->name);
        break;
    default:
        break;
    }
    OPENSSL_cleanse(buf, (size_t)got);   /* tested but not trusted: never used */
    return 0;
}

void source_want(struct source *s, bool wanted)
{
    if (!s->ops->want || s->wanted == wanted)
        return;
    s->wanted = wanted;
    s->ops->want(s, wanted);
}

void source_discard(struct source *s)
{
    if (s->ops->discard)
        s->ops->discard(s);
}

void source_set_assessed(struct source *s, double min_entropy)
{
    s->assessed_entropy_per_byte = min_entropy;
    if (s->ops->assessed)
        s->ops->assessed(s, min_entropy);
}

void source_close(struct source *s)
{
    if (s->ops && s->ops->want)
        source_want(s, false);
    if (s->ops && s->ops->close)
        s->ops->close(s);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}
