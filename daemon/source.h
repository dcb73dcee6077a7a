/* The entropy source interface: one struct per raw source (the CPU's noise instruction,
 * getrandom, /dev/hwrng, CPU timing jitter, or a scripted source in tests) with its health
 * state and counters, and the harvest step that reads a batch and health-tests it. What the
 * bytes are used for is the pool's business; when a source that costs CPU (jitter) runs is the
 * pool's call too. */
#ifndef RANDD_SOURCE_H
#define RANDD_SOURCE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "health.h"

struct source;

struct source_ops {
    /* Reads up to n raw bytes without blocking. Returns the count (0: nothing this round)
     * or a negative errno. A source assessed by reading (source_assess_by_reading) has it
     * called on its assessment thread too, at the same time as on the event loop. */
    ssize_t (*read)(struct source *s, uint8_t *buf, size_t n);
    void (*close)(struct source *s);
    /* Optional, for a source that produces on a thread of its own only while its credit is
     * wanted (jitter): starts or stops it. Its wake_fd turns readable with a batch ready. */
    void (*want)(struct source *s, bool wanted);
    /* Optional: wipes what was produced but not yet read (a VM clone shares it). */
    void (*discard)(struct source *s);
    /* Optional: starts an SP 800-90B assessment of the source's own raw samples off the
     * event loop (source_assess.c has the one for sources read on a thread). */
    void (*assess)(struct source *s);
    /* Optional, with assess: a finished assessment, once. Returns 1 with its min-entropy
     * per raw byte, 0 while none has finished, or a negative errno when one failed. */
    int (*assessment)(struct source *s, double *min_entropy);
    /* Optional: assessments have found at lowest min_entropy bits per raw byte; a source
     * whose credit follows them (jitter) sets entropy_per_byte from it, or disables itself.
     * A source without it keeps its configured credit. */
    void (*assessed)(struct source *s, double min_entropy);
};

/* assessed_entropy_per_byte before an assessment has set it. */
#define SOURCE_NOT_ASSESSED (-1.0)

/* Raw samples one assessment takes: 8-bit samples, ~0.07 s of CPU and 6.6 MB of heap at the
 * peak on this project's machine (docs/assessment.md). SP 800-90B 3.1.1 asks a million of a
 * validation; fewer widen the estimators' confidence bounds: a small sample assesses lower. */
#define SOURCE_ASSESS_SAMPLES 8192

struct source_reader;

struct source {
    const char *name;
    const struct source_ops *ops;
    double entropy_per_byte;    /* bits credited per raw byte: the documented estimate, or
                                 * for jitter the credit in force (an assessment may set it) */
    double assessed_entropy_per_byte;   /* the lowest min-entropy an assessment of the raw
                                         * bytes found; SOURCE_NOT_ASSESSED until one has */
    uint64_t assessments;       /* assessments that finished */
    char assessment_warning[160];   /* why the credit is above what was assessed; "": none */
    struct source_reader *reader;   /* the thread reading a sample to assess (cpu, hwrng) */
    unsigned sample_bytes;      /* width of one health-test sample */
    bool kernel_creditable;     /* may be credited to the kernel (not its own output) */
    bool noise;                 /* a noise source (cpu, hwrng, jitter): may fill the noise
                                 * reservoir for full entropy and prediction resistance;
                                 * getrandom's output is the kernel's DRBG, not noise */
    int fd;
    int wake_fd;                /* readable when a batch is ready (jitter); -1: none */
    bool wanted;                /* last told to want(); sources without want() ignore it */
    void *state;                /* the source's own state (jitter's worker) */
    struct health health;
    /* status */
    uint64_t bytes_read;        /* raw bytes read and tested */
    uint64_t bytes_used;        /* of those, passed on while healthy */
    uint64_t empty_reads;       /* rounds that gave nothing (the CPU source out, EAGAIN) */
    uint64_t read_errors;
    uint64_t stale_discarded;   /* bytes queued while quarantined, wiped at the retry */
    uint64_t stuck_discarded;   /* samples the source found stuck and dropped (jitter) */
    uint64_t injected_failures; /* health test failures induced (randctl inject-failure) */
    unsigned stuck_run;         /* set by read: the longest run of stuck samples it saw */
    double credited_bits;       /* bits of credit in the bytes passed on */
    uint64_t credit_falls;      /* times entropy_per_byte fell (an assessment): what was
                                 * credited before is judged too high (pool.c wipes it) */
    double cpu_seconds;         /* CPU time spent producing them (jitter's worker) */
    int last_errno;
};

/* Each opener returns 0, or -ENODEV with the reason the source is absent in why. */
/* The CPU's noise source (source_cpu.c): RDSEED, RNDRRS, DARN or the s390x TRNG, named so. */
int source_cpu_open(struct source *s, char *why, size_t whylen);
int source_getrandom_open(struct source *s, char *why, size_t whylen);
int source_hwrng_open(struct source *s, const char *path, char *why, size_t whylen);

/* CPU timing jitter (source_jitter.c). oversampling: raw samples per credited bit. A clock
 * too coarse for jitter gives -ENODEV with why. */
int source_jitter_open(struct source *s, unsigned oversampling, char *why, size_t whylen);

/* A clock for the jitter source: a reading in its own units (TSC ticks, nanoseconds). */
typedef uint64_t jitter_clock_fn(void);

/* The jitter source around clock instead of the CPU's: tests make it coarse, constant or
 * periodic. The daemon opens jitter with source_jitter_open only. */
int source_jitter_init(struct source *s, unsigned oversampling, jitter_clock_fn *clock,
                       char *why, size_t whylen);

/* Records an assessed min-entropy per raw byte (for jitter, per 8-bit sample) for STATUS,
 * keeping the lowest, and hands the lowest to the source's assessed op: jitter credits a
 * safety margin below it. The others keep their configured credit, and a figure below it
 * sets assessment_warning and is logged. */
void source_set_assessed(struct source *s, double min_entropy_per_byte);

/* Starts an assessment of the source's raw output, if it has one (jitter: at once, and again
 * hourly while it runs; the CPU source and hwrng: once, at start). Results arrive with
 * harvests. */
void source_assess(struct source *s);

/* randctl inject-failure: makes the health test (enum randd_health_test) fail on the source
 * by feeding the running test its pattern (health_inject); quarantined, logged and re-admitted
 * after a fresh start-up test as for any failure, the reason marked as induced. Returns 0, or
 * -ENOTSUP (the source runs no such test), -EALREADY (quarantined now), -EIO; msg says it. */
int source_inject_failure(struct source *s, int test, uint64_t now_ns, char *msg,
                          size_t msglen);

/* Takes the source out of use for good, with the reason in STATUS and the log. */
void source_disable(struct source *s, const char *why);

/* Moves whenever what the source credited so far stops being trusted: a health test failed,
 * it was disabled, or its credit per byte fell. The noise reservoir wipes on any change. */
uint64_t source_distrusts(const struct source *s);

/* --- source_assess.c: shared by the sources' assessments ---------------------------------- */

/* The estimator: min-entropy per 8-bit sample of n samples (SP 800-90B non-IID), 0 or a
 * negative errno. Tests put a scripted one in place with source_use_estimator. */
typedef int source_estimator_fn(const uint8_t *samples, size_t n, double *min_entropy);
void source_use_estimator(source_estimator_fn *fn);

/* Runs the estimator on n samples and wipes them. One assessment runs at a time in the whole
 * daemon, and the memory it took goes back to the kernel after. Call it off the event loop. */
int source_estimate(uint8_t *samples, size_t n, double *min_entropy);


/* The assess and assessment ops of a source whose read op may run on a second thread (it
 * keeps no state between calls: the CPU source, hwrng): a thread at the lowest priority reads
 * SOURCE_ASSESS_SAMPLES raw bytes of its own, never used otherwise, and assesses them; its
 * eventfd becomes the source's wake_fd, so the event loop hears when it is done. */
void source_assess_by_reading(struct source *s);
int source_assessment_by_reading(struct source *s, double *min_entropy);
/* Stops and frees that thread (source_close does). */
void source_reader_free(struct source *s);
/* What the CPU source is called on this machine: "rdseed", "rndrrs", "darn" or "trng" after
 * its instruction, "cpu" where the architecture has none. */
const char *source_cpu_name(void);

/* One attempt at the CPU's instruction: true with a value, false when the CPU had none ready. */
typedef bool cpu_step_fn(uint64_t *value);

/* The CPU source around step instead of the instruction, without CPU detection: fault
 * injection into the real read loop (no value forever, a value stuck after N good ones).
 * The daemon opens it with source_cpu_open only. */
void source_cpu_init(struct source *s, cpu_step_fn *step);

/* Sets up the common fields; openers and test sources call it. */
void source_init(struct source *s, const char *name, const struct source_ops *ops,
                 double entropy_per_byte, unsigned sample_bytes, bool kernel_creditable);

/* Reads up to n bytes and health-tests them. Returns how many bytes may be used (only
 * bytes read while the source was and stayed healthy; others are wiped), 0, or a negative
 * errno from the read. A quarantined source is re-admitted here once its back-off is over,
 * after what its device queued meanwhile is discarded. */
ssize_t source_harvest(struct source *s, uint8_t *buf, size_t n, uint64_t now_ns);

bool source_healthy(const struct source *s);
/* Its health state, and why it was last quarantined or disabled ("": never). */
enum randd_source_state source_state(const struct source *s);
const char *source_reason(const struct source *s);
/* When a quarantined source's back-off ends (its retry is due at a harvest), in
 * loop_now_ns() time; UINT64_MAX when it is not quarantined. */
uint64_t source_retry_at_ns(const struct source *s);
void source_close(struct source *s);

/* A thread a source runs besides the event loop (jitter's worker, an assessment's reader):
 * started with every signal blocked, since the loop reads them from a signalfd, and named
 * (at most 15 characters) so that top -H, perf and ps tell it from the loop. Returns
 * pthread_create's 0 or error number. */
int source_start_thread(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg);
/* Called by such a thread once its bounded start-up work is done: SCHED_IDLE and nice 19,
 * only CPU no one else wants from then on. */
void source_lower_thread_priority(void);

/* Tells an on-demand source whether its credit is wanted; only a change reaches it. */
void source_want(struct source *s, bool wanted);
/* Wipes what an on-demand source produced but has not handed over. */
void source_discard(struct source *s);


#endif
