/* What every source shares: set-up, the harvest step (read, health-test, quarantine and
 * re-admission), what an assessment's figure does to the credit, and close. Per-source
 * reading is in source_<name>.c, the assessments' threads in source_assess.c. */
#include "source.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "log.h"
#include "privileges.h"

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

enum randd_source_state source_state(const struct source *s)
{
    return s->health.state;
}

const char *source_reason(const struct source *s)
{
    return s->health.reason;
}

uint64_t source_retry_at_ns(const struct source *s)
{
    return s->health.state == RANDD_SOURCE_QUARANTINED ? s->health.retry_at_ns : UINT64_MAX;
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

/* --- assessments -----------------------------------------------------------------------------
 * A source's assessments run off the event loop (source_assess.c, jitter's worker) and their
 * outcomes are taken in here, with the harvests their wake_fd triggers. A source whose credit
 * follows them (jitter) credits nothing until the first, and is disabled if that one fails:
 * unassessed, it has nothing to credit by. */

static void take_finished_assessment(struct source *s)
{
    char why[160];
    double h;
    int rc;

    if (!s->ops->assessment || (rc = s->ops->assessment(s, &h)) == 0)
        return;
    if (rc > 0) {
        source_set_assessed(s, h);
        return;
    }
    if (s->ops->assessed && s->assessments == 0) {
        snprintf(why, sizeof(why), "its raw samples could not be assessed (%s), and it "
                 "credits nothing unassessed", strerror(-rc));
        source_disable(s, why);
    } else {
        log_warning("source %s: assessment of its raw samples failed: %s", s->name,
                    strerror(-rc));
    }
}

static void note_below_credit(struct source *s, double h)
{
    snprintf(s->assessment_warning, sizeof(s->assessment_warning),
             "SP 800-90B assessment found %.3g bits a byte, below the %.3g credited", h,
             s->entropy_per_byte);
    log_warning("source %s: %s; keeping the configured credit", s->name,
                s->assessment_warning);
}

void source_set_assessed(struct source *s, double h)
{
    double credit;

    if (s->assessed_entropy_per_byte == SOURCE_NOT_ASSESSED || h < s->assessed_entropy_per_byte)
        s->assessed_entropy_per_byte = h;
    s->assessments++;
    if (!s->ops->assessed) {
        if (h < s->entropy_per_byte)
            note_below_credit(s, h);
        else
            log_info("source %s: assessed %.3g bits a byte, credited %.3g", s->name, h,
                     s->entropy_per_byte);
        return;
    }
    credit = s->entropy_per_byte;
    s->ops->assessed(s, s->assessed_entropy_per_byte);   /* the lowest: never a rise */
    if (s->entropy_per_byte < credit)
        s->credit_falls++;
    if (s->health.state != RANDD_SOURCE_QUARANTINED)
        log_info("source %s: assessed %.3g bits a byte (lowest %.3g): crediting %.3g", s->name,
                 h, s->assessed_entropy_per_byte, s->entropy_per_byte);
}

void source_assess(struct source *s)
{
    if (s->ops->assess)
        s->ops->assess(s);
}

void source_disable(struct source *s, const char *why)
{
    health_disable(&s->health, why);
    log_warning("source %s: disabled: %s", s->name, why);
}

uint64_t source_distrusts(const struct source *s)
{
    return s->health.failures + s->health.disables + s->credit_falls;
}

/* --- induced failures ------------------------------------------------------------------ */

#define INDUCED_MARK " (induced: randctl inject-failure)"

int source_inject_failure(struct source *s, int test, uint64_t now_ns, char *msg,
                          size_t msglen)
{
    const char *name = randd_health_test_name(test);
    int rc = health_inject(&s->health, test, now_ns);
    size_t len;

    if (rc == -ENOTSUP)
        return snprintf(msg, msglen, "source %s runs no %s test", s->name, name), rc;
    if (rc == -EALREADY)
        return snprintf(msg, msglen, "source %s is quarantined already: %s", s->name,
                        s->health.reason), rc;
    if (rc < 0)
        return snprintf(msg, msglen, "source %s: the %s pattern did not trip the %s test: %s",
                        s->name, name, name, s->health.reason), rc;
    s->injected_failures++;
    len = strlen(s->health.reason);
    if (len + sizeof(INDUCED_MARK) > sizeof(s->health.reason))
        len = sizeof(s->health.reason) - sizeof(INDUCED_MARK);
    memcpy(s->health.reason + len, INDUCED_MARK, sizeof(INDUCED_MARK));
    log_warning("source %s: quarantined: %s", s->name, s->health.reason);
    snprintf(msg, msglen, "source %s quarantined by its %s test: %s", s->name, name,
             s->health.reason);
    return 0;
}

/* --- the harvest -------------------------------------------------------------------------- */

ssize_t source_harvest(struct source *s, uint8_t *buf, size_t n, uint64_t now_ns)
{
    enum randd_source_state before;
    ssize_t got;

    take_finished_assessment(s);
    before = s->health.state;
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

/* --- threads a source runs besides the event loop ----------------------------------------- */

/* Sources open before main blocks the signals it reads from a signalfd, and before
 * privileges_drop: privileges_start_thread blocks every signal in the new thread and has it
 * give up its privileges before it runs fn. */
int source_start_thread(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
    return privileges_start_thread(thread, name, fn, arg);
}

/* Producing and assessing samples must never take CPU that work wants, once a source's
 * bounded start-up work is done. One way only: a thread may always leave SCHED_OTHER for
 * SCHED_IDLE and raise its nice value, but needs RLIMIT_NICE (or CAP_SYS_NICE) to come back.
 * Under a seccomp filter that denies these calls the thread still runs, at the default
 * priority. */
void source_lower_thread_priority(void)
{
    struct sched_param param = { 0 };

    pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
    setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
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

void source_close(struct source *s)
{
    source_reader_free(s);       /* it reads through the source: first */
    if (s->ops && s->ops->want)
        source_want(s, false);
    if (s->ops && s->ops->close)
        s->ops->close(s);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}
