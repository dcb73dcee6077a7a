/* CPU timing jitter as an entropy source, for machines that give nothing else (a VM without
 * RDSEED or virtio-rng). A worker thread times a memory-access and mixing loop with the CPU's
 * cycle counter; the variation of that time is the noise. Owns the worker, its batches of
 * raw samples, the clock check at start and the stuck test; the sample tests and the credit
 * are source.c's and pool.c's, as for every source.
 *
 * After Mueller's jitterentropy design ("CPU Time Jitter Based Non-Physical True Random
 * Number Generator") and SP 800-90B, in randd's own code:
 *  - one measurement: read the clock, run the loop (pointer-chasing reads and writes over a
 *    buffer larger than a core's L2, so cache and memory latency vary), read the clock; the
 *    difference is the time delta;
 *  - the stuck test: a delta whose first, second or third difference is zero carries no
 *    entropy; it is dropped, and a long run of them quarantines the source (health.c);
 *  - each kept delta, divided by the clock's step (the GCD found at start: a VM's TSC may
 *    count in 13s or 26s), is reduced to its low 8 bits: one raw sample per byte, the form
 *    SP 800-90B tooling reads and the one that is health-tested, assessed and credited;
 *  - the health tests hold the samples to a claim of JITTER_CLAIM_BITS, or to the lowest
 *    assessment when that is lower (their cutoffs follow it);
 *  - the credit is measured: the worker assesses a sample of its own (SP 800-90B non-IID, on
 *    SOURCE_ASSESS_SAMPLES samples never handed out) before its first batch and again every
 *    JITTER_REASSESS_S while it runs, and the source credits a margin below the lowest
 *    figure so far, at most the claim, over the oversampling (0.25 bits a sample at most by
 *    default); nothing until the first assessment.
 *
 * Cost: the worker runs only while the pool wants credit (want op), at SCHED_IDLE and nice
 * 19 once its bounded start-up work is done (settle_priority), and sleeps on an eventfd
 * otherwise: an idle daemon makes no wakeups for it. Batches go through a small ring in
 * locked memory; an eventfd wakes the event loop, whose read op only copies what is ready.
 * An assessment costs about 0.07 s of the worker's CPU.
 *
 * No lock between the two. At SCHED_IDLE beside busy cores the worker may be preempted
 * anywhere, for seconds, and the event loop (which serves clients with workers = 1, and
 * holds the pool lock every other loop needs) must never wait for it: a mutex the worker
 * held when preempted stalled ordinary requests for up to 1.9 s while full-entropy
 * requests kept jitter wanted (issue 42). So the ring is single-producer single-consumer
 * (counters with acquire and release), requests to the worker are atomic flags followed by
 * a write to its own eventfd, and an assessment's outcome is one atomic word. The one mutex
 * left is the leaving worker's and its closer's, when randd stops. */
#include "source.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "loop.h"
#include "secmem.h"

#define JITTER_MEMORY_WORDS  (1u << 17)  /* 1 MiB: beyond a core's L2 on most x86 servers */
#define JITTER_ACCESSES      16          /* reads and writes a measurement: about 300 ns */
#define JITTER_BATCH         512         /* measurements a batch (the pool reads 512 bytes) */
#define JITTER_RING          4           /* batches ready at most: backpressure on the worker */
#define JITTER_CALIBRATION   1024        /* measurements of the clock check at start */
#define JITTER_MIN_STEPS     8           /* a typical delta must span this many clock steps */
#define JITTER_ROUNDING      2           /* clock units one step may be rounded by, either way */
/* The min-entropy per 8-bit sample the health tests hold the source to (their cutoffs) and
 * the most the credit may follow an assessment up to. On the EPYC VM this was written on,
 * SP 800-90B assessed 1.7 bits a sample on a million, 1.46 at the lowest on 8192
 * (docs/assessment.md). */
#define JITTER_CLAIM_BITS    1.0
#define JITTER_ASSESS_MARGIN 0.5         /* bits kept below an assessed figure */
/* Below this the source is disabled: what the margin leaves (a sixteenth of a bit a sample
 * at the default oversampling) is not worth its CPU, and the samples are far from the claim
 * their health tests assume: the clock or the machine is not what the design expects. */
#define JITTER_ASSESS_FLOOR  0.75
#define JITTER_REASSESS_S    3600        /* while it runs: an idle worker never wakes for it */
/* Measurements one assessment may take to keep SOURCE_ASSESS_SAMPLES unstuck samples. */
#define JITTER_ASSESS_TRIES  (4 * SOURCE_ASSESS_SAMPLES)
/* Measurements an assessment runs and throws away before its sample. After a start, or any
 * sleep, the buffer is out of the caches and each measurement is a run of memory misses:
 * deltas about ten times the steady ones and spread over every 8-bit value. The loop pulls
 * the buffer in as it goes, and by 4,000-6,000 measurements the deltas have narrowed to the
 * steady state of a worker that runs on (an Intel Xeon VM: first 2,000 after a wake, mean
 * delta 160 clock steps; from 6,000 on, 16; docs/assessment.md). The daemon credits both
 * kinds, and the steady kind assesses lower (2.3 against 3.7 bits a sample, medians of five
 * 8,192-sample assessments), so the sample is taken from it: the credit follows the lower. */
#define JITTER_ASSESS_WARMUP (SOURCE_ASSESS_SAMPLES)

struct jitter_batch {
    uint8_t sample[JITTER_BATCH];
    unsigned len;            /* kept samples (stuck ones are dropped) */
    unsigned taken;          /* already copied out by read */
    unsigned stuck;          /* dropped as stuck */
    unsigned stuck_run;      /* longest run of stuck measurements, carried across batches */
};

/* Raw samples are secret until conditioned: locked, wiped, never swapped. */
struct jitter_secrets {
    struct jitter_batch ring[JITTER_RING];
};

/* An assessment's outcome in one word, so the worker posts it and the loop takes it without
 * a lock: 0 none; the sign bit and a figure's bits (figures are >= 0); else -errno. */
#define OUTCOME_FIGURE (1ull << 63)

struct jitter {
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t leaving;         /* guards worker_done and abandoned: randd stopping */
    bool worker_done;                /* the worker has left its loop and touches nothing more */
    bool abandoned;                  /* the owner left without joining: the worker frees all */
    /* The event loop's requests: set, then worker_efd written (tell_worker). */
    _Atomic bool wanted;
    _Atomic bool stop;               /* also read between measurements */
    _Atomic bool assess_on;          /* assess op called: reassess every JITTER_REASSESS_S */
    _Atomic bool assess_due;         /* assess before the next batch */
    /* The ring: ring[produced % JITTER_RING] is the worker's to fill while fewer than
     * JITTER_RING wait; ring[consumed % JITTER_RING] the oldest the loop has not finished.
     * Each counter has one writer (store release, the other's load acquire). */
    _Atomic unsigned produced, consumed;
    _Atomic double cpu_seconds;      /* the worker's CPU time so far */
    _Atomic uint64_t outcome;        /* an assessment not yet taken: OUTCOME_* below */
    int worker_efd;                  /* the worker sleeps on it; the loop writes it */
    /* the worker's own; set before it starts */
    struct jitter_secrets *secret;
    jitter_clock_fn *clock;
    uint64_t step;                   /* the clock's granularity, found at start */
    unsigned oversampling;           /* raw samples per credited bit */
    uint64_t *memory;                /* the loop's buffer: timing, not secrets */
    bool memory_touched;             /* pages in use since the last release */
    uint64_t walk, walk_index;       /* the loop's state and address generator */
    uint64_t assessed_at_ns;         /* CLOCK_MONOTONIC of the last assessment */
    unsigned long startup_samples;   /* kept before the worker drops to SCHED_IDLE */
    bool idle_priority;              /* dropped: its start-up work is done */
    uint64_t last_time, last_delta;
    int64_t last_delta2;
    unsigned stuck_run;
    int efd;
};

/* --- the clock ---------------------------------------------------------------------------- */

/* The TSC where there is one: cycle resolution, a few ns to read. Elsewhere the raw
 * monotonic clock: on arm64 the generic timer scaled to ns, whatever its frequency (24 MHz to
 * 1 GHz), so check_clock judges what it resolves, not its units. */
static uint64_t cpu_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* --- one measurement ---------------------------------------------------------------------- */

/* Pointer chasing: each address depends on the word read before, so the accesses cannot
 * overlap and every cache or TLB miss, DRAM refresh and neighbour's eviction shows in the
 * time. A full-period LCG drives the addresses (the word read only perturbs them), so the
 * walk never settles into a short cycle that the cache holds: a walk driven by the data
 * alone did, on a long capture, and its timing turned periodic. The mixing step (a murmur3
 * finaliser round) is the "hash loop" of the design. */
static void noise_loop(struct jitter *j)
{
    uint64_t w = j->walk, x = j->walk_index, v = 0;

    for (unsigned i = 0; i < JITTER_ACCESSES; i++) {
        size_t at;

        x = x * 6364136223846793005ull + 1442695040888963407ull;   /* Knuth's MMIX LCG */
        at = (size_t)((x >> 40) ^ (v & 0x3f)) & (JITTER_MEMORY_WORDS - 1);
        v = j->memory[at];
        w = (w ^ v) * 0xff51afd7ed558ccdull;
        w ^= w >> 29;
        j->memory[at] = v + w;
    }
    j->walk = w;
    j->walk_index = x;
}

/* One delta. Stuck (jitterentropy's test): the clock did not move, or the delta repeats
 * the last one, or changes by the same amount as last time: nothing new was measured. */
static uint64_t measure(struct jitter *j, bool *stuck)
{
    uint64_t now, delta;
    int64_t delta2, delta3;

    noise_loop(j);
    now = j->clock();
    delta = now - j->last_time;
    delta2 = (int64_t)(delta - j->last_delta);
    delta3 = delta2 - j->last_delta2;
    j->last_time = now;
    j->last_delta = delta;
    j->last_delta2 = delta2;
    *stuck = delta == 0 || delta2 == 0 || delta3 == 0;
    return delta;
}

static uint8_t reduce(const struct jitter *j, uint64_t delta)
{
    return (uint8_t)(delta / j->step);
}

/* Seen between measurements: at SCHED_IDLE on a machine whose cores are busy, a whole batch
 * or assessment sample may take the worker seconds, and randd stopping would wait for it. */
static bool stopping(struct jitter *j)
{
    return atomic_load_explicit(&j->stop, memory_order_relaxed);
}

static void fill_batch(struct jitter *j, struct jitter_batch *b)
{
    memset(b, 0, sizeof(*b));
    b->stuck_run = j->stuck_run;
    for (unsigned i = 0; i < JITTER_BATCH && !stopping(j); i++) {
        bool stuck;
        uint64_t delta = measure(j, &stuck);

        if (stuck) {
            b->stuck++;
            if (++j->stuck_run > b->stuck_run)
                b->stuck_run = j->stuck_run;
            continue;
        }
        j->stuck_run = 0;
        b->sample[b->len++] = reduce(j, delta);
    }
}

/* --- assessing its own samples ----------------------------------------------------------- */

/* The hourly one only while the worker runs anyway: it is asked before a batch, never on a
 * timer of its own. Takes the request: one the loop makes from here on comes again. */
static bool assessment_due(struct jitter *j)
{
    return atomic_exchange(&j->assess_due, false) ||
           (atomic_load(&j->assess_on) &&
            loop_now_ns() - j->assessed_at_ns >= JITTER_REASSESS_S * NS_PER_S);
}

/* A sample of its own, measured as batches are (stuck deltas dropped) and never handed out:
 * the estimators' unlocked working memory holds nothing the pool was given. It follows
 * JITTER_ASSESS_WARMUP measurements thrown away, so it is the steady state's. A clock stuck
 * through most of it gives no sample (-ENODATA). */
static int assess_own_samples(struct jitter *j, double *min_entropy)
{
    uint8_t *sample = malloc(SOURCE_ASSESS_SAMPLES);
    size_t kept = 0;
    int rc;

    if (!sample)
        return -ENOMEM;
    for (unsigned i = 0; i < JITTER_ASSESS_WARMUP && !stopping(j); i++) {
        bool stuck;

        measure(j, &stuck);
    }
    for (unsigned i = 0; i < JITTER_ASSESS_TRIES && kept < SOURCE_ASSESS_SAMPLES; i++) {
        bool stuck;
        uint64_t delta;

        if (stopping(j)) {
            OPENSSL_clear_free(sample, SOURCE_ASSESS_SAMPLES);
            return -ECANCELED;
        }
        delta = measure(j, &stuck);
        if (!stuck)
            sample[kept++] = reduce(j, delta);
    }
    rc = kept < SOURCE_ASSESS_SAMPLES ? -ENODATA : source_estimate(sample, kept, min_entropy);
    OPENSSL_clear_free(sample, SOURCE_ASSESS_SAMPLES);
    return rc;
}

static uint64_t figure_word(double min_entropy)
{
    uint64_t bits;

    memcpy(&bits, &min_entropy, sizeof(bits));
    return bits | OUTCOME_FIGURE;
}

static double word_figure(uint64_t word)
{
    double figure;

    word &= ~OUTCOME_FIGURE;
    memcpy(&figure, &word, sizeof(figure));
    return figure;
}

/* For the assessment op. Two outcomes before the loop takes one: the lower figure wins, and
 * a failure never hides a figure. */
static void post_assessment(struct jitter *j, int rc, double min_entropy)
{
    uint64_t old = atomic_load(&j->outcome), word;

    if (rc == 0 && min_entropy < 0)
        min_entropy = 0;                 /* the sign bit is the mark */
    do {
        bool figure_posted = old & OUTCOME_FIGURE;

        if (rc == 0 && figure_posted && word_figure(old) <= min_entropy)
            return;
        if (rc < 0 && figure_posted)
            return;
        word = rc == 0 ? figure_word(min_entropy) : (uint64_t)(unsigned)-rc;
    } while (!atomic_compare_exchange_weak(&j->outcome, &old, word));
}

/* --- the worker --------------------------------------------------------------------------- */

static double thread_cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wake_loop(struct jitter *j)
{
    eventfd_write(j->efd, 1);
}

/* An idle daemon should not hold the loop's megabyte: the pages go back to the kernel when
 * nothing is wanted, and come back zeroed (and cold, as they would be anyway) next time. */
static void release_memory(struct jitter *j)
{
    if (!j->memory_touched)
        return;
    madvise(j->memory, JITTER_MEMORY_WORDS * sizeof(uint64_t), MADV_DONTNEED);
    j->memory_touched = false;
}

/* Runs the estimators on a sample of its own. */
static void assess(struct jitter *j)
{
    double min_entropy = 0;
    int rc;

    j->last_time = j->clock();
    j->memory_touched = true;
    rc = assess_own_samples(j, &min_entropy);
    j->assessed_at_ns = loop_now_ns();
    post_assessment(j, rc, min_entropy);
    atomic_store(&j->cpu_seconds, thread_cpu_seconds());
    wake_loop(j);
}

/* The loop's side: a request is set before this, so a worker about to sleep finds the
 * eventfd written and looks again. Never blocks (a counter that cannot overflow). */
static void tell_worker(struct jitter *j)
{
    eventfd_write(j->worker_efd, 1);
}

/* Until the loop tells it something (or a signal it does not take ends the wait early: it
 * looks again either way). */
static void wait_for_news(struct jitter *j)
{
    struct pollfd pfd = { .fd = j->worker_efd, .events = POLLIN };
    eventfd_t ignored;

    if (poll(&pfd, 1, -1) > 0)
        eventfd_read(j->worker_efd, &ignored);
}

static bool ring_full(struct jitter *j)
{
    return atomic_load_explicit(&j->produced, memory_order_relaxed) -
               atomic_load_explicit(&j->consumed, memory_order_acquire) ==
           JITTER_RING;
}

/* The start-up work (the samples of the start-up test, then the first assessment) is bounded,
 * about 0.1-0.2 s of CPU, and until it is done the source credits nothing. So it runs at the
 * default priority, as the other sources' start-up assessment does (source_assess.c). At
 * SCHED_IDLE beside busy cores it got so few slices that jitter took over a minute to come
 * up (CI's check-loaded, beside stress-ng on both cores), and over 300 s beside three busy
 * tasks a core. After it, or after JITTER_STARTUP_CAP samples whatever happened (an
 * assessment never asked for), the worker runs only on CPU no one else wants. */
#define JITTER_STARTUP_CAP (16 * HEALTH_STARTUP_SAMPLES)

static void settle_priority(struct jitter *j, unsigned new_samples)
{
    if (j->idle_priority)
        return;
    j->startup_samples += new_samples;
    if ((j->assessed_at_ns && j->startup_samples >= HEALTH_STARTUP_SAMPLES) ||
        j->startup_samples >= JITTER_STARTUP_CAP) {
        source_lower_thread_priority();
        j->idle_priority = true;
    }
}

static void destroy_jitter(struct jitter *j);

static void *worker(void *arg)
{
    struct jitter *j = arg;
    struct jitter_batch *b;
    bool abandoned;

    for (;;) {
        while (!stopping(j) && (!atomic_load(&j->wanted) || ring_full(j))) {
            if (!atomic_load(&j->wanted))
                release_memory(j);
            wait_for_news(j);
        }
        if (stopping(j))
            break;
        if (assessment_due(j)) {
            assess(j);
            settle_priority(j, 0);
            continue;
        }
        b = &j->secret->ring[atomic_load_explicit(&j->produced, memory_order_relaxed) %
                             JITTER_RING];
        j->last_time = j->clock();   /* a pause since the last batch is not a delta */
        j->memory_touched = true;
        fill_batch(j, b);
        if (stopping(j)) {                  /* a batch cut short: no one will read it */
            OPENSSL_cleanse(b, sizeof(*b));
            break;
        }
        settle_priority(j, b->len);         /* before the loop may take and wipe it */
        atomic_fetch_add_explicit(&j->produced, 1, memory_order_release);
        atomic_store(&j->cpu_seconds, thread_cpu_seconds());
        wake_loop(j);
    }
    pthread_mutex_lock(&j->leaving);
    j->worker_done = true;
    abandoned = j->abandoned;
    pthread_mutex_unlock(&j->leaving);
    if (abandoned)
        destroy_jitter(j);
    return NULL;
}

/* --- the source ops (event loop thread) --------------------------------------------------- */

/* Copies whole or partial batches. The eventfd is reset first and set again if anything is
 * left, so a batch the worker adds meanwhile is never missed. */
static ssize_t jitter_read(struct source *s, uint8_t *buf, size_t n)
{
    struct jitter *j = s->state;
    unsigned produced, consumed = atomic_load_explicit(&j->consumed, memory_order_relaxed);
    eventfd_t ignored;
    size_t done = 0;
    bool freed = false;

    eventfd_read(j->efd, &ignored);
    produced = atomic_load_explicit(&j->produced, memory_order_acquire);
    while (consumed != produced && done < n) {
        struct jitter_batch *b = &j->secret->ring[consumed % JITTER_RING];
        size_t take = b->len - b->taken < n - done ? b->len - b->taken : n - done;

        if (b->taken == 0) {          /* first look at this batch: its stuck test result */
            s->stuck_discarded += b->stuck;
            if (b->stuck_run > s->stuck_run)
                s->stuck_run = b->stuck_run;
        }
        memcpy(buf + done, b->sample + b->taken, take);
        done += take;
        b->taken += (unsigned)take;
        if (b->taken == b->len) {
            OPENSSL_cleanse(b, sizeof(*b));
            atomic_store_explicit(&j->consumed, ++consumed, memory_order_release);
            freed = true;
        }
    }
    if (freed)
        tell_worker(j);                  /* it may wait for room in the ring */
    s->cpu_seconds = atomic_load(&j->cpu_seconds);
    if (consumed != produced || atomic_load(&j->outcome) != 0)   /* the next harvest takes it */
        wake_loop(j);
    return (ssize_t)done;
}

static void jitter_want(struct source *s, bool wanted)
{
    struct jitter *j = s->state;

    atomic_store(&j->wanted, wanted);
    tell_worker(j);
}

/* Every batch published is wiped; one the worker is filling comes after, as before. */
static void jitter_discard(struct source *s)
{
    struct jitter *j = s->state;
    unsigned produced, consumed = atomic_load_explicit(&j->consumed, memory_order_relaxed);
    eventfd_t ignored;

    eventfd_read(j->efd, &ignored);
    produced = atomic_load_explicit(&j->produced, memory_order_acquire);
    for (; consumed != produced; consumed++)
        OPENSSL_cleanse(&j->secret->ring[consumed % JITTER_RING], sizeof(struct jitter_batch));
    atomic_store_explicit(&j->consumed, consumed, memory_order_release);
    tell_worker(j);
}

/* Now, before the next batch, and hourly after while it runs. */
static void jitter_assess(struct source *s)
{
    struct jitter *j = s->state;

    atomic_store(&j->assess_on, true);
    atomic_store(&j->assess_due, true);
    tell_worker(j);
}

static int jitter_assessment(struct source *s, double *min_entropy)
{
    struct jitter *j = s->state;
    uint64_t word = atomic_exchange(&j->outcome, 0);

    if (word & OUTCOME_FIGURE) {
        *min_entropy = word_figure(word);
        return 1;
    }
    return -(int)word;
}

/* The credit: a margin below the lowest assessment so far, at most the claim the health
 * tests hold the samples to, over the oversampling. Given the lowest figure, it can only
 * fall: whoever controls the machine's load may lower the credit, never raise it. */
static void jitter_assessed(struct source *s, double lowest)
{
    struct jitter *j = s->state;
    double bits = lowest - JITTER_ASSESS_MARGIN;
    char why[160];

    if (lowest < JITTER_ASSESS_FLOOR) {
        s->entropy_per_byte = 0;
        snprintf(why, sizeof(why), "SP 800-90B assessment found %.3g bits a sample, under "
                 "the floor of %.3g; a restart assesses it again", lowest, JITTER_ASSESS_FLOOR);
        source_disable(s, why);
        return;
    }
    if (bits > JITTER_CLAIM_BITS)
        bits = JITTER_CLAIM_BITS;
    s->entropy_per_byte = bits / j->oversampling;
    /* SP 800-90B 4.4: the cutoffs follow the entropy the samples are assessed to have, at
     * most the claim; a lower figure loosens them, or a healthy source would false-alarm
     * far more often than alpha says. */
    health_set_entropy(&s->health, lowest < JITTER_CLAIM_BITS ? lowest : JITTER_CLAIM_BITS);
}

/* An idle worker, or one between measurements with a core to run on, is gone in well under
 * a millisecond. One at SCHED_IDLE beside busy cores runs in rare slices: on a machine of
 * the project's kind beside stress-ng it took 1-3 s to leave, and randd's stop with it. */
#define JITTER_STOP_WAIT_MS 200

/* pthread_join with a deadline: true once the thread is joined. */
static bool join_within(pthread_t thread, long ms)
{
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    return pthread_timedjoin_np(thread, NULL, &deadline) == 0;
}

static void free_jitter(struct jitter *j)
{
    if (!j)
        return;
    if (j->thread_started) {
        atomic_store(&j->stop, true);
        tell_worker(j);
        if (!join_within(j->thread, JITTER_STOP_WAIT_MS)) {
            /* An estimate cannot be stopped, and may take seconds of CPU; and starved at the
             * lowest priority (every core busy), the worker may take long to see the stop
             * even between measurements. The closer (randd stopping, or a capture's next
             * restart) must not wait: the worker frees its state itself when it leaves, or
             * the process ends first. (The process's own exit still waits for it to be
             * scheduled once: about 1-2 s beside stress-ng on 2 cores.) */
            bool done;

            pthread_mutex_lock(&j->leaving);
            done = j->worker_done;
            j->abandoned = !done;
            if (!done)
                pthread_detach(j->thread);  /* under the lock: once it drops, j may be freed */
            pthread_mutex_unlock(&j->leaving);
            if (!done)
                return;
            pthread_join(j->thread, NULL);  /* it left between the deadline and the lock */
        }
    }
    destroy_jitter(j);
}

static void destroy_jitter(struct jitter *j)
{
    pthread_mutex_destroy(&j->leaving);
    if (j->secret)
        randd_secure_free(j->secret, sizeof(*j->secret));
    if (j->efd >= 0)
        close(j->efd);
    if (j->worker_efd >= 0)
        close(j->worker_efd);
    if (j->memory)
        munmap(j->memory, JITTER_MEMORY_WORDS * sizeof(uint64_t));
    OPENSSL_cleanse(j, sizeof(*j));
    free(j);
}

static void jitter_close(struct source *s)
{
    free_jitter(s->state);
    s->state = NULL;
    s->wake_fd = -1;
}

static const struct source_ops jitter_ops = {
    .read = jitter_read,
    .close = jitter_close,
    .want = jitter_want,
    .discard = jitter_discard,
    .assess = jitter_assess,
    .assessment = jitter_assessment,
    .assessed = jitter_assessed,
};

/* --- the clock check at start ------------------------------------------------------------- */

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;

        a = b;
        b = r;
    }
    return a;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The step a clock resolves, judged from the deltas it shows (sorted) rather than from its
 * units. A clock that counts in its own ticks has deltas that are multiples of the tick, and
 * their GCD finds it. But a clock that reports nanoseconds while counting coarser ticks does
 * not: arm64's CLOCK_MONOTONIC_RAW is the generic timer (CNTVCT_EL0), 1 GHz from ARMv8.6
 * but 24 to 100 MHz on many cores, scaled to ns, so 2 ticks of a 24 MHz timer read as 83 or
 * 84 ns and the GCD of such deltas is 1 ns. Its deltas bunch around multiples of the tick,
 * each bunch a few units wide from the scaling's rounding: the step is the smallest gap
 * between bunches (values within JITTER_ROUNDING of each other are one bunch). A clock that
 * resolves finely shows deltas too dense to leave such gaps, and the GCD stands. */
static uint64_t resolved_step(const uint64_t *sorted, size_t n, uint64_t gcd_step)
{
    uint64_t step = 0, start = 0, end = 0;
    size_t bunches = 0;

    for (size_t i = 0; i < n; i++) {
        if (sorted[i] == 0)
            continue;
        if (bunches && sorted[i] - end <= JITTER_ROUNDING) {
            end = sorted[i];
            continue;
        }
        if (bunches && (step == 0 || sorted[i] - end < step))
            step = sorted[i] - end;
        start = end = sorted[i];
        bunches++;
    }
    /* One bunch no wider than rounding: every measurement read the same, nothing resolved. */
    if (bunches == 1 && end - start <= JITTER_ROUNDING && start > gcd_step)
        step = start;
    return step > gcd_step ? step : gcd_step;
}

/* Some clocks count in large steps (a VM's trapped or emulated TSC, a jiffy clock, an Arm
 * generic timer at 24 MHz read in ns): then a measurement spans a handful of steps and its
 * variation is mostly rounding. Finds the step the clock resolves (resolved_step) and refuses
 * a clock whose median delta is under JITTER_MIN_STEPS steps, or that does not move. */
static int check_clock(struct jitter *j, char *why, size_t whylen)
{
    uint64_t delta[JITTER_CALIBRATION], step = 0, median;
    unsigned zero = 0;
    bool stuck;

    j->last_time = j->clock();
    for (unsigned i = 0; i < JITTER_CALIBRATION; i++) {
        delta[i] = measure(j, &stuck);
        zero += delta[i] == 0;
        step = gcd(delta[i], step);
    }
    qsort(delta, JITTER_CALIBRATION, sizeof(delta[0]), compare_u64);
    median = delta[JITTER_CALIBRATION / 2];
    if (step)
        step = resolved_step(delta, JITTER_CALIBRATION, step);
    OPENSSL_cleanse(delta, sizeof(delta));
    if (step == 0 || zero > JITTER_CALIBRATION / 10) {
        snprintf(why, whylen, "clock too coarse for jitter: it did not move across %u of %u "
                 "measurements", zero, JITTER_CALIBRATION);
        return -ENODEV;
    }
    if (median / step < JITTER_MIN_STEPS) {
        snprintf(why, whylen, "clock too coarse for jitter: it counts in steps of %llu, and "
                 "a measurement (median %llu) spans %llu of them, under %u",
                 (unsigned long long)step, (unsigned long long)median,
                 (unsigned long long)(median / step), JITTER_MIN_STEPS);
        return -ENODEV;
    }
    j->step = step;
    return 0;
}

/* --- opening ------------------------------------------------------------------------------ */

int source_jitter_init(struct source *s, unsigned oversampling, jitter_clock_fn *clock,
                       char *why, size_t whylen)
{
    struct jitter *j = calloc(1, sizeof(*j));
    int lock_errno, rc;

    if (!j) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&j->leaving, NULL);
    j->clock = clock;
    j->oversampling = oversampling ? oversampling : 1;
    j->walk = 0x243f6a8885a308d3ull;                     /* any start: the walk is public */
    j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    j->worker_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    j->memory = mmap(NULL, JITTER_MEMORY_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (j->memory == MAP_FAILED)
        j->memory = NULL;
    j->secret = randd_secure_alloc(sizeof(*j->secret), &lock_errno);
    if (j->efd < 0 || j->worker_efd < 0 || !j->memory || !j->secret) {
        snprintf(why, whylen, "%s", strerror(errno));
        free_jitter(j);
        return -ENOMEM;
    }
    j->memory_touched = true;
    if ((rc = check_clock(j, why, whylen)) < 0) {
        free_jitter(j);
        return rc;
    }
    if ((rc = source_start_thread(&j->thread, "randd-jitter", worker, j)) != 0) {
        snprintf(why, whylen, "worker thread: %s", strerror(rc));
        free_jitter(j);
        return -rc;
    }
    j->thread_started = true;
    source_init(s, "jitter", &jitter_ops, JITTER_CLAIM_BITS / j->oversampling, 1, true);
    s->noise = true;
    s->entropy_per_byte = 0;         /* until assessed: it must never credit more than that */
    /* Held to the claim, credited less: the tests catch a source that falls below it. */
    health_init(&s->health, 1, JITTER_CLAIM_BITS);
    health_enable_lag_test(&s->health);
    health_enable_stuck_test(&s->health);
    s->state = j;
    s->wake_fd = j->efd;
    return 0;
}

int source_jitter_open(struct source *s, unsigned oversampling, char *why, size_t whylen)
{
    return source_jitter_init(s, oversampling, cpu_clock, why, whylen);
}
