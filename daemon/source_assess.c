/* Sources assessing their own raw output (SP 800-90B non-IID, lib/entropy_assess.h) off the
 * event loop: the estimator every assessment runs, one at a time, on threads at the lowest
 * priority, and the thread that reads and assesses a sample of a source with no thread of
 * its own (the CPU source, hwrng). What a figure does to the credit is source.c's; when
 * jitter assesses itself is source_jitter.c's.
 *
 * The samples assessed are taken for the assessment alone and never feed the pool: the
 * estimators' working memory (copies, suffix arrays, dictionaries: megabytes) is ordinary
 * heap, not locked, and must hold nothing a generator was seeded with. They are wiped after
 * use all the same, as the estimators wipe their own copies. */
#include "source.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "entropy_assess.h"
#include "footprint.h"

#define READ_DEADLINE_S 60       /* less than a sample in this: the device is not assessed */
#define READ_WAIT_MS    100      /* polling a device; also how soon a stop is seen */
#define PAUSE_MIN_US    1000     /* after an empty read of a device that polls ready anyway */
#define PAUSE_MAX_US    100000

/* --- the estimator ------------------------------------------------------------------------ */

/* Every source's samples are bytes: the width is 8, never inferred from the values. A window
 * of jitter samples that happens to stay below 64 would be judged as 6-bit samples, and the
 * bitstring estimates (per bit, times the width) swing with it: 1.5 bits a sample at width 8,
 * 0.6 at width 6, on the same 8192 samples. By hand: randd --capture, then randctl assess
 * --bits 8. */
static int non_iid_estimate(const uint8_t *samples, size_t n, double *min_entropy)
{
    struct randd_ea_result r;
    int rc = randd_ea_assess(samples, n, 8, 0, &r, NULL, NULL);

    if (rc == 0)
        *min_entropy = r.h_assessed;
    return rc;
}

static source_estimator_fn *estimator = non_iid_estimate;
static pthread_mutex_t estimating = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t malloc_tuned = PTHREAD_ONCE_INIT;

/* The estimators allocate megabytes in the arena of whichever thread runs them, and glibc
 * would keep most of it: malloc_trim does not shrink a thread arena's top, and freeing a large
 * mapped block raises the mapping threshold (and the trim threshold with it) so that the next
 * ones land in the arena and stay. Fixed at glibc's starting values, the thresholds keep every
 * block over 128 KiB mapped and handed back whole, and an arena's free top trimmed; the
 * server's 66 KiB replies still come from the arena, as before. */
static void tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

void source_use_estimator(source_estimator_fn *fn)
{
    estimator = fn ? fn : non_iid_estimate;
}

/* Serialised: sources assessed at start (jitter, the CPU source, hwrng) would otherwise peak
 * at a few times the memory of one. Afterwards the estimators' megabytes go back to the kernel (an
 * idle randd is meant to stay small): the large blocks as they are freed (tune_malloc), the
 * rest by malloc_trim. */
int source_estimate(uint8_t *samples, size_t n, double *min_entropy)
{
    int rc;

    pthread_once(&malloc_tuned, tune_malloc);
    pthread_mutex_lock(&estimating);
    /* The estimators' megabytes come on top of whatever start-up left resident: hand that
     * back first, so the two never add up to randd's peak. */
    footprint_release_code();
    rc = estimator(samples, n, min_entropy);
    OPENSSL_cleanse(samples, n);
    malloc_trim(0);
    footprint_release_code();      /* and the estimators' libm and libbz2 code pages */
    pthread_mutex_unlock(&estimating);
    return rc;
}

/* --- a sample read on a thread of its own (the CPU source, hwrng) ------------------------- */

struct source_reader {
    struct source *source;
    pthread_t thread;
    int efd;                 /* the source's wake_fd: written once the outcome is in */
    atomic_bool stop;
    atomic_int outcome;      /* 0 while running; 1: min_entropy is set; or a negative errno */
    double min_entropy;
    bool taken;              /* the event loop's: the outcome was handed over, thread joined */
    pthread_mutex_t lock;    /* guards the three below */
    pthread_cond_t left_source;
    bool reading;            /* the thread may still touch source: the owner must wait */
    bool finished;           /* outcome set and efd written: the thread only returns now */
    bool abandoned;          /* the owner left while it estimated: the thread frees all */
};

static void reader_destroy(struct source_reader *r)
{
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->left_source);
    close(r->efd);
    free(r);
}

static double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* After an empty read: a device is polled until it has more. One that polls ready but still
 * reads empty gets a pause instead, or the thread would spin: /dev/hwrng (rng_core has no
 * poll, and a virtio-rng refills 64 bytes every few ms), a file at its end, a FIFO without a
 * writer, the CPU source out of values. The pause doubles while reads stay empty, from 1 ms (8 KiB
 * of a virtio-rng in about a second) to 100 ms (a device that gives nothing costs ten
 * wakeups a second, for a minute at most). */
static bool wait_for_more(int fd, bool polled_ready, unsigned *pause_us)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    if (fd >= 0 && !polled_ready)
        return poll(&pfd, 1, READ_WAIT_MS) > 0;
    nanosleep(&(struct timespec){ .tv_nsec = (long)*pause_us * 1000 }, NULL);
    *pause_us = *pause_us * 2 < PAUSE_MAX_US ? *pause_us * 2 : PAUSE_MAX_US;
    return false;
}

static int read_sample(struct source_reader *r, uint8_t *buf, size_t n)
{
    struct source *s = r->source;
    double deadline = seconds_now() + READ_DEADLINE_S;
    bool polled_ready = false;
    unsigned pause_us = PAUSE_MIN_US;
    size_t done = 0;

    while (done < n) {
        ssize_t got;

        if (atomic_load(&r->stop))
            return -ECANCELED;
        if ((got = s->ops->read(s, buf + done, n - done)) < 0)
            return (int)got;
        if (got > 0) {
            done += (size_t)got;
            polled_ready = false;
            pause_us = PAUSE_MIN_US;
        } else if (seconds_now() >= deadline) {
            return -ETIMEDOUT;
        } else {
            polled_ready = wait_for_more(s->fd, polled_ready, &pause_us);
        }
    }
    return 0;
}

static void *reader_main(void *arg)
{
    struct source_reader *r = arg;
    uint8_t *sample;
    bool abandoned;
    int rc;

    sample = malloc(SOURCE_ASSESS_SAMPLES);
    rc = sample ? 0 : -ENOMEM;

    /* Not at the lowest priority, unlike jitter's worker: this is bounded work, once, at
     * start (a sample and one estimate, well under a second of CPU), and the daemon joins it
     * waits for its reading when it stops. A SCHED_IDLE thread on a machine whose cores are
     * busy gets almost no CPU, and randd would hang on SIGTERM waiting for it (seen beside
     * stress-ng). The estimate, though, may take seconds of CPU there: randd does not wait
     * for that (source_reader_free). */
    if (rc == 0)
        rc = read_sample(r, sample, SOURCE_ASSESS_SAMPLES);
    pthread_mutex_lock(&r->lock);
    r->reading = false;                   /* nothing of the source is touched from here */
    pthread_cond_signal(&r->left_source);
    pthread_mutex_unlock(&r->lock);
    if (rc == 0)
        rc = source_estimate(sample, SOURCE_ASSESS_SAMPLES, &r->min_entropy);
    if (sample)
        OPENSSL_clear_free(sample, SOURCE_ASSESS_SAMPLES);   /* a partial one too */

    pthread_mutex_lock(&r->lock);
    abandoned = r->abandoned;
    if (!abandoned) {
        atomic_store(&r->outcome, rc == 0 ? 1 : rc);
        eventfd_write(r->efd, 1);
    }
    r->finished = true;
    pthread_mutex_unlock(&r->lock);
    if (abandoned)
        reader_destroy(r);
    return NULL;
}

/* Once per source: a second call, or one that cannot start its thread, leaves the source
 * unassessed (STATUS: null), which is no worse than before assessments existed. */
void source_assess_by_reading(struct source *s)
{
    struct source_reader *r;

    if (s->reader || !(r = calloc(1, sizeof(*r))))
        return;
    r->source = s;
    r->reading = true;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->left_source, NULL);
    r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->efd < 0 || source_start_thread(&r->thread, "randd-assess", reader_main, r) != 0) {
        reader_destroy(r);
        return;
    }
    s->reader = r;
    if (s->wake_fd < 0)
        s->wake_fd = r->efd;
}

int source_assessment_by_reading(struct source *s, double *min_entropy)
{
    struct source_reader *r = s->reader;
    eventfd_t ignored;
    int outcome;

    if (!r || r->taken || (outcome = atomic_load(&r->outcome)) == 0)
        return 0;
    eventfd_read(r->efd, &ignored);       /* level-triggered: it must not wake the loop again */
    pthread_join(r->thread, NULL);        /* done but for its return: its stack goes now */
    r->taken = true;
    if (outcome == 1)
        *min_entropy = r->min_entropy;
    return outcome;
}

/* The source is closing (randd stops, or a capture ends). A reader still reading sees the
 * stop within READ_WAIT_MS, and is waited for: it reads through the source. One still
 * estimating is not: on a machine whose cores are all busy the estimate may take 15 s more
 * (seen beside stress-ng), which SIGTERM would wait through. It touches only its own memory
 * from then on, and frees it when done, unless the process has ended first. */
void source_reader_free(struct source *s)
{
    struct source_reader *r = s->reader;

    if (!r)
        return;
    s->reader = NULL;
    if (s->wake_fd == r->efd)
        s->wake_fd = -1;
    atomic_store(&r->stop, true);
    if (!r->taken) {
        pthread_mutex_lock(&r->lock);
        while (r->reading)
            pthread_cond_wait(&r->left_source, &r->lock);
        if (!r->finished) {
            r->abandoned = true;
            pthread_mutex_unlock(&r->lock);
            pthread_detach(r->thread);
            return;
        }
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    reader_destroy(r);
}
