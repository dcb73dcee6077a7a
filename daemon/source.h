/* The entropy source interface: one struct per raw source (RDSEED, getrandom, /dev/hwrng, CPU
 * timing jitter, or a scripted source in tests) with its health state and counters, and the
 * harvest step that reads a batch and health-tests it. What the bytes are used for is the
 * pool's business; when a source that costs CPU (jitter) runs is the pool's call too. */
#ifndef RANDD_SOURCE_H
#define RANDD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "health.h"

struct source;

struct source_ops {
    /* Reads up to n raw bytes without blocking. Returns the count (0: nothing this round)
     * or a negative errno. */
    ssize_t (*read)(struct source *s, uint8_t *buf, size_t n);
    void (*close)(struct source *s);
    /* Optional, for a source that produces on a thread of its own only while its credit is
     * wanted (jitter): starts or stops it. Its wake_fd turns readable with a batch ready. */
    void (*want)(struct source *s, bool wanted);
    /* Optional: wipes what was produced but not yet read (a VM clone shares it). */
    void (*discard)(struct source *s);
    /* Optional: an assessment found min_entropy bits per raw byte; a source whose credit
     * follows assessments (jitter) sets entropy_per_byte from it. */
    void (*assessed)(struct source *s, double min_entropy);
};

/* assessed_entropy_per_byte before an assessment has set it. */
#define SOURCE_NOT_ASSESSED (-1.0)

struct source {
    const char *name;
    const struct source_ops *ops;
    double entropy_per_byte;    /* bits credited per raw byte: the documented estimate, or
                                 * for jitter the credit in force (an assessment may set it) */
    double assessed_entropy_per_byte;   /* min-entropy an assessment of the raw bytes found;
                                         * SOURCE_NOT_ASSESSED until one has */
    unsigned sample_bytes;      /* width of one health-test sample */
    bool kernel_creditable;     /* may be credited to the kernel (not its own output) */
    int fd;
    int wake_fd;                /* readable when a batch is ready (jitter); -1: none */
    bool wanted;                /* last told to want(); sources without want() ignore it */
    void *state;                /* the source's own state (jitter's worker) */
    struct health health;
    /* status */
    uint64_t bytes_read;        /* raw bytes read and tested */
    uint64_t bytes_used;        /* of those, passed on while healthy */
    uint64_t empty_reads;       /* rounds that gave nothing (RDSEED exhausted, EAGAIN) */
    uint64_t read_errors;
    uint64_t stale_discarded;   /* bytes queued while quarantined, wiped at the retry */
    uint64_t stuck_discarded;   /* samples the source found stuck and dropped (jitter) */
    unsigned stuck_run;         /* set by read: the longest run of stuck samples it saw */
    double credited_bits;       /* bits of credit in the bytes passed on */
    double cpu_seconds;         /* CPU time spent producing them (jitter's worker) */
    int last_errno;
};

/* Each opener returns 0, or -ENODEV with the reason the source is absent in why. */
int source_rdseed_open(struct source *s, char *why, size_t whylen);
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
 * and hands it to the source's assessed op: jitter credits a safety margin below it, the
 * others keep their configured credit. */
void source_set_assessed(struct source *s, double min_entropy_per_byte);
/* One RDSEED attempt: true with a value, false when the CPU had none ready (carry clear). */
typedef bool rdseed_step_fn(uint64_t *value);

/* The RDSEED source around step instead of the instruction, without CPU detection: fault
 * injection into the real read loop (carry clear forever, a value stuck after N good ones).
 * The daemon opens RDSEED with source_rdseed_open only. */
void source_rdseed_init(struct source *s, rdseed_step_fn *step);

/* Sets up the common fields; openers and test sources call it. */
void source_init(struct source *s, const char *name, const struct source_ops *ops,
                 double entropy_per_byte, unsigned sample_bytes, bool kernel_creditable);

/* Reads up to n bytes and health-tests them. Returns how many bytes may be used (only
 * bytes read while the source was and stayed healthy; others are wiped), 0, or a negative
 * errno from the read. A quarantined source is re-admitted here once its back-off is over,
 * after what its device queued meanwhile is discarded. */
ssize_t source_harvest(struct source *s, uint8_t *buf, size_t n, uint64_t now_ns);

bool source_healthy(const struct source *s);
void source_close(struct source *s);

/* Tells an on-demand source whether its credit is wanted; only a change reaches it. */
void source_want(struct source *s, bool wanted);
/* Wipes what an on-demand source produced but has not handed over. */
void source_discard(struct source *s);


#endif
