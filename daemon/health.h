/* Continuous health tests of NIST SP 800-90B section 4.4 on one source's raw samples, the
 * 1024-sample start-up test of section 4.3, and quarantine with back-off. Pure logic: time
 * comes in as nanoseconds, nothing is logged or read here. */
#ifndef RANDD_HEALTH_H
#define RANDD_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"               /* enum randd_source_state: the states STATUS names */

#define HEALTH_STARTUP_SAMPLES 1024     /* SP 800-90B 4.3: at least 1024 consecutive samples */
#define HEALTH_ALPHA_LOG2      40       /* false alarm probability 2^-40 per test */
#define HEALTH_BACKOFF_MIN_S   1
#define HEALTH_BACKOFF_MAX_S   300
#define HEALTH_FORGIVE_S       3600     /* healthy this long: back-off starts over at 1 s */
#define HEALTH_LAGS            16       /* the lag test looks for periods of 1 to 16 samples */

struct health {
    unsigned sample_bytes;          /* 1..8, big-endian within the buffer */
    double entropy;                 /* H: claimed min-entropy per sample, in bits */
    unsigned rct_cutoff;            /* SP 800-90B 4.4.1 */
    unsigned apt_window;            /* SP 800-90B 4.4.2 */
    unsigned apt_cutoff;
    uint64_t rct_value, apt_value;
    unsigned rct_run, apt_count, apt_seen;
    /* The lag test (opt-in, for low-entropy sources such as timing jitter): in each window
     * of apt_window samples, how often a sample equals the one k samples before it. */
    bool lag_test;
    unsigned lag_cutoff;
    uint64_t lag_history[HEALTH_LAGS];
    unsigned lag_matches[HEALTH_LAGS];      /* [k - 1]: matches at lag k in this window */
    unsigned lag_seen;                      /* samples in this window */
    unsigned lag_filled;                    /* history entries valid since the (re)start */
    bool stuck_test;                /* the source runs a stuck test (health_feed_stuck) */
    enum randd_source_state state;
    int failed_test;                /* enum randd_health_test that last failed; -1: none */
    uint64_t startup_tested;        /* samples passed since the (re)start */
    uint64_t samples;               /* every sample tested */
    uint64_t failures;
    uint64_t disables;              /* health_disable calls: out of use, not a test failure */
    char reason[160];               /* why it was last quarantined */
    uint64_t healthy_since_ns;
    uint64_t retry_at_ns;
    unsigned backoff_s;
};

/* entropy is the documented estimate per sample, capped at the sample width. */
void health_init(struct health *h, unsigned sample_bytes, double entropy);

/* Turns on the lag test: a sample that repeats the one k = 1..HEALTH_LAGS samples before it
 * more often in a window than a source of the claimed entropy would (alpha 2^-40 over all
 * lags) fails it. The RCT and APT miss a short cycle of distinct values when the claimed
 * entropy is low (their cutoffs then allow most of a window); this catches it. */
void health_enable_lag_test(struct health *h);

/* The claimed entropy per sample changed (an assessment): the cutoffs follow it, and the
 * tests go on where they were. Capped at the sample width as in health_init. */
void health_set_entropy(struct health *h, double entropy);

/* The source reports stuck runs (health_feed_stuck): a test it runs, that may be induced. */
void health_enable_stuck_test(struct health *h);

/* Whether the source runs test (enum randd_health_test): RCT and APT always. */
bool health_runs(const struct health *h, int test);

/* Induces a failure of test in the running tests: feeds them, sample by sample, the
 * pattern that must trip that test (a repeated value, a window's first value over and
 * over, a short cycle, a stuck run) and nothing that would trip another first. Returns 0
 * once test quarantined the source, -ENOTSUP for a test it does not run, -EALREADY while it
 * is quarantined, -EIO if the pattern failed to trip it (a bug: the known answers below). */
int health_inject(struct health *h, int test, uint64_t now_ns);

/* The health tests' own known answers, for the self-tests: the cutoffs at 1 bit a byte
 * (SP 800-90B 4.4.1 and 4.4.2 at alpha 2^-40), and each test tripped by its pattern on a
 * fresh source. Returns 0, or -1 with the failed check in why. */
int health_selftest(char *why, size_t whylen);

/* Tests one sample; returns the state after it. Ignored while quarantined. */
enum randd_source_state health_feed(struct health *h, uint64_t sample, uint64_t now_ns);

/* Tests a buffer as whole samples (a trailing partial sample is not tested). */
enum randd_source_state health_feed_buffer(struct health *h, const uint8_t *buf,
                                           size_t len, uint64_t now_ns);

/* A run of run samples that the source itself found stuck (timing jitter: a zero first,
 * second or third time difference) and dropped as carrying no entropy. A run as long as the
 * repetition count test's cutoff fails like a repeated value would. */
enum randd_source_state health_feed_stuck(struct health *h, unsigned run, uint64_t now_ns);

/* Quarantined for good, with why as the reason: no retry is ever due. For a source found
 * unfit by other means than these tests (an assessment); not counted as a test failure. */
void health_disable(struct health *h, const char *why);

/* Quarantined and the back-off is over: time to re-run the start-up test. */
int health_retry_due(const struct health *h, uint64_t now_ns);
/* Starts a fresh start-up test. */
void health_readmit(struct health *h, uint64_t now_ns);

#endif
