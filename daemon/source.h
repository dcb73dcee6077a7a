/* The entropy source interface: one struct per raw source (RDSEED, getrandom, /dev/hwrng, or
 * a scripted source in tests) with its health state and counters, and the harvest step that
 * reads a batch and health-tests it. What the bytes are used for is the pool's business. */
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
};

struct source {
    const char *name;
    const struct source_ops *ops;
    double entropy_per_byte;    /* bits credited per raw byte: the documented estimate */
    unsigned sample_bytes;      /* width of one health-test sample */
    bool kernel_creditable;     /* may be credited to the kernel (not its own output) */
    int fd;
    struct health health;
    /* status */
    uint64_t bytes_read;        /* raw bytes read and tested */
    uint64_t bytes_used;        /* of those, passed on while healthy */
    uint64_t empty_reads;       /* rounds that gave nothing (RDSEED exhausted, EAGAIN) */
    uint64_t read_errors;
    uint64_t stale_discarded;   /* bytes queued while quarantined, wiped at the retry */
    int last_errno;
};

/* Each opener returns 0, or -ENODEV with the reason the source is absent in why. */
int source_rdseed_open(struct source *s, char *why, size_t whylen);
int source_getrandom_open(struct source *s, char *why, size_t whylen);
int source_hwrng_open(struct source *s, const char *path, char *why, size_t whylen);

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


#endif
