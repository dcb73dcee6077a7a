/* SP 800-90B continuous health tests. The cutoffs follow from the claimed entropy H per
 * sample and alpha = 2^-40, so a healthy source false-alarms about once in 2^40 windows:
 *   repetition count (4.4.1): C = 1 + ceil(40 / H): a value repeated C times in a row;
 *   adaptive proportion (4.4.2): the first value of a window of W samples is counted again
 *     in the other W - 1; the count B is 1 + Binomial(W - 1, 2^-H) for a healthy source,
 *     and C is the smallest count with P(B >= C) <= 2^-40, computed exactly below.
 * Stuck words fail the first test within a few samples; short cycles fail the second when
 * the claimed entropy is high. For low claims (timing jitter, about a bit a sample) the
 * opt-in lag test below catches short cycles instead. */
#include "health.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loop.h"

static unsigned rct_cutoff(double h)
{
    return 1 + (unsigned)ceil(HEALTH_ALPHA_LOG2 / h);
}

/* Smallest c with P(Y >= c) <= 2^-alpha_log2, Y ~ Binomial(n, p), summing the upper tail of
 * the probability mass function in log space so that p = 2^-64 still works. */
static unsigned binomial_cutoff(unsigned n, double p, double alpha_log2)
{
    double alpha = exp2(-alpha_log2), tail = 0;

    for (unsigned y = n + 1; y-- > 0;) {
        double log_pmf = lgamma(n + 1.0) - lgamma(y + 1.0) - lgamma(n - y + 1.0) +
                         y * log(p) + (n - y) * log1p(-p);

        tail += exp(log_pmf);                /* tail = P(Y >= y) */
        if (tail > alpha)
            return y + 1;                    /* P(Y >= y + 1) <= alpha */
    }
    return 1;
}

/* The APT's count is B = 1 + Binomial(W - 1, 2^-H). */
static unsigned apt_cutoff(unsigned window, double h)
{
    return 1 + binomial_cutoff(window - 1, exp2(-h), HEALTH_ALPHA_LOG2);
}

/* At lag k a healthy source matches with probability sum p_i^2 <= max p_i = 2^-H; alpha is
 * shared among the lags (Bonferroni), so the test as a whole keeps 2^-40. */
static unsigned lag_cutoff(unsigned window, double h)
{
    return binomial_cutoff(window, exp2(-h), HEALTH_ALPHA_LOG2 + log2(HEALTH_LAGS));
}

void health_set_entropy(struct health *h, double entropy)
{
    double bits = 8.0 * h->sample_bytes;

    h->entropy = entropy > bits ? bits : entropy;
    h->rct_cutoff = rct_cutoff(h->entropy);
    h->apt_cutoff = apt_cutoff(h->apt_window, h->entropy);
    if (h->lag_test)
        h->lag_cutoff = lag_cutoff(h->apt_window, h->entropy);
}

void health_init(struct health *h, unsigned sample_bytes, double entropy)
{
    memset(h, 0, sizeof(*h));
    h->sample_bytes = sample_bytes;
    h->apt_window = sample_bytes * 8 == 1 ? 1024 : 512;
    health_set_entropy(h, entropy);
    h->state = RANDD_SOURCE_STARTUP;
    h->failed_test = -1;
    h->backoff_s = HEALTH_BACKOFF_MIN_S;
}

void health_enable_lag_test(struct health *h)
{
    h->lag_test = true;
    h->lag_cutoff = lag_cutoff(h->apt_window, h->entropy);
}

void health_enable_stuck_test(struct health *h)
{
    h->stuck_test = true;
}

bool health_runs(const struct health *h, int test)
{
    return test == RANDD_TEST_RCT || test == RANDD_TEST_APT ||
           (test == RANDD_TEST_LAG && h->lag_test) ||
           (test == RANDD_TEST_STUCK && h->stuck_test);
}

static void quarantine(struct health *h, uint64_t now_ns)
{
    if (h->state == RANDD_SOURCE_HEALTHY &&
        now_ns - h->healthy_since_ns >= HEALTH_FORGIVE_S * NS_PER_S)
        h->backoff_s = HEALTH_BACKOFF_MIN_S;
    else if (h->failures > 0 && h->backoff_s < HEALTH_BACKOFF_MAX_S)
        h->backoff_s = h->backoff_s * 2 > HEALTH_BACKOFF_MAX_S ? HEALTH_BACKOFF_MAX_S
                                                              : h->backoff_s * 2;
    h->state = RANDD_SOURCE_QUARANTINED;
    h->failures++;
    h->retry_at_ns = now_ns + h->backoff_s * NS_PER_S;
}

static int repetition_count_fails(struct health *h, uint64_t sample)
{
    if (h->rct_run > 0 && sample == h->rct_value) {
        h->rct_run++;
    } else {
        h->rct_value = sample;
        h->rct_run = 1;
    }
    if (h->rct_run < h->rct_cutoff)
        return 0;
    snprintf(h->reason, sizeof(h->reason),
             "repetition count test: 0x%0*llx repeated %u times (cutoff %u)",
             (int)h->sample_bytes * 2, (unsigned long long)sample, h->rct_run, h->rct_cutoff);
    return 1;
}

static int adaptive_proportion_fails(struct health *h, uint64_t sample)
{
    if (h->apt_seen == 0) {
        h->apt_value = sample;
        h->apt_count = 1;
    } else if (sample == h->apt_value) {
        h->apt_count++;
    }
    if (++h->apt_seen == h->apt_window)
        h->apt_seen = 0;
    if (h->apt_count < h->apt_cutoff)
        return 0;
    snprintf(h->reason, sizeof(h->reason),
             "adaptive proportion test: 0x%0*llx seen %u times in a window of %u (cutoff %u)",
             (int)h->sample_bytes * 2, (unsigned long long)h->apt_value, h->apt_count,
             h->apt_window, h->apt_cutoff);
    return 1;
}

static int lag_fails(struct health *h, uint64_t sample)
{
    unsigned lags = h->lag_filled < HEALTH_LAGS ? h->lag_filled : HEALTH_LAGS, failed = 0;

    if (!h->lag_test)
        return 0;
    if (h->lag_seen == 0)
        memset(h->lag_matches, 0, sizeof(h->lag_matches));
    for (unsigned k = 1; k <= lags; k++)
        if (h->lag_history[(h->lag_filled - k) % HEALTH_LAGS] == sample &&
            ++h->lag_matches[k - 1] >= h->lag_cutoff && !failed)
            failed = k;
    h->lag_history[h->lag_filled++ % HEALTH_LAGS] = sample;
    if (h->lag_filled >= 2 * HEALTH_LAGS)        /* keeps the index small, the order intact */
        h->lag_filled -= HEALTH_LAGS;
    if (++h->lag_seen == h->apt_window)
        h->lag_seen = 0;
    if (!failed)
        return 0;
    snprintf(h->reason, sizeof(h->reason),
             "lag test: samples repeated the one %u before them %u times in a window of %u "
             "(cutoff %u): a cycle", failed, h->lag_matches[failed - 1], h->apt_window,
             h->lag_cutoff);
    return 1;
}

enum randd_source_state health_feed(struct health *h, uint64_t sample, uint64_t now_ns)
{
    int failed = -1;

    if (h->state == RANDD_SOURCE_QUARANTINED)
        return h->state;
    h->samples++;
    /* The first test to fail names the cause, kept until another fails (STATUS's failed_test
     * is the one that failed last, as reason is); all restart on re-admission. */
    if (repetition_count_fails(h, sample))
        failed = RANDD_TEST_RCT;
    else if (adaptive_proportion_fails(h, sample))
        failed = RANDD_TEST_APT;
    else if (lag_fails(h, sample))
        failed = RANDD_TEST_LAG;
    if (failed >= 0) {
        h->failed_test = failed;
        quarantine(h, now_ns);
    } else if (h->state == RANDD_SOURCE_STARTUP && ++h->startup_tested >= HEALTH_STARTUP_SAMPLES) {
        h->state = RANDD_SOURCE_HEALTHY;
        h->healthy_since_ns = now_ns;
    }
    return h->state;
}

enum randd_source_state health_feed_buffer(struct health *h, const uint8_t *buf,
                                           size_t len, uint64_t now_ns)
{
    for (size_t at = 0; at + h->sample_bytes <= len && h->state != RANDD_SOURCE_QUARANTINED;
         at += h->sample_bytes) {
        uint64_t sample = 0;

        for (unsigned i = 0; i < h->sample_bytes; i++)
            sample = sample << 8 | buf[at + i];
        health_feed(h, sample, now_ns);
    }
    return h->state;
}

enum randd_source_state health_feed_stuck(struct health *h, unsigned run, uint64_t now_ns)
{
    if (h->state == RANDD_SOURCE_QUARANTINED || run < h->rct_cutoff)
        return h->state;
    snprintf(h->reason, sizeof(h->reason),
             "stuck test: %u samples in a row with a zero first, second or third time "
             "difference (cutoff %u)", run, h->rct_cutoff);
    h->failed_test = RANDD_TEST_STUCK;
    quarantine(h, now_ns);
    return h->state;
}

void health_disable(struct health *h, const char *why)
{
    h->state = RANDD_SOURCE_QUARANTINED;
    h->retry_at_ns = UINT64_MAX;
    h->disables++;
    h->failed_test = -1;             /* no test failed: an older one's name would mislead */
    snprintf(h->reason, sizeof(h->reason), "%s", why);
}

int health_retry_due(const struct health *h, uint64_t now_ns)
{
    return h->state == RANDD_SOURCE_QUARANTINED && now_ns >= h->retry_at_ns;
}

void health_readmit(struct health *h, uint64_t now_ns)
{
    (void)now_ns;
    h->state = RANDD_SOURCE_STARTUP;
    h->startup_tested = 0;
    h->rct_run = 0;
    h->apt_seen = 0;
    h->lag_seen = 0;
    h->lag_filled = 0;
}

/* --- induced failures ----------------------------------------------------------------------
 * randctl inject-failure: the running tests are fed the pattern that must trip one of them,
 * through health_feed like any sample, so what is shown to fail is the shipped test itself.
 * Each sample is first tried on a copy: one that would trip another test first (a run grown
 * to the RCT's cutoff while the APT is the target, a lag match too many) is replaced by a
 * filler no test counts. */

#define INJECT_CYCLE 4           /* the lag test's pattern: four values over and over */

/* A value none of the tests holds now: not the RCT's or APT's, not one of the lags'. */
static uint64_t filler(const struct health *h, uint64_t *next)
{
    uint64_t mask = h->sample_bytes >= 8 ? UINT64_MAX : (1ull << (8 * h->sample_bytes)) - 1;

    for (;;) {
        uint64_t v = (*next)++ & mask;
        bool held = v == h->rct_value || v == h->apt_value;

        for (unsigned k = 0; k < HEALTH_LAGS && !held; k++)
            held = h->lag_history[k] == v;
        if (!held)
            return v;
    }
}

static int inject_samples(struct health *h, int test, uint64_t now_ns)
{
    uint64_t next = 0x5a, value = filler(h, &next), cycle[INJECT_CYCLE];
    unsigned limit = 8 * h->apt_window + 2 * h->rct_cutoff;
    bool aligned = false;

    for (unsigned i = 0; i < INJECT_CYCLE; i++)
        cycle[i] = filler(h, &next);     /* distinct: next only grows */
    for (unsigned i = 0; i < limit; i++) {
        struct health trial;
        uint64_t sample;

        /* The APT counts the first value of a window: start one with it. */
        aligned = aligned || h->apt_seen == 0;
        if (test == RANDD_TEST_RCT || (test == RANDD_TEST_APT && aligned))
            sample = value;
        else if (test == RANDD_TEST_LAG)
            sample = cycle[i % INJECT_CYCLE];
        else
            sample = filler(h, &next);
        trial = *h;
        health_feed(&trial, sample, now_ns);
        if (trial.state == RANDD_SOURCE_QUARANTINED && trial.failed_test != test)
            sample = filler(h, &next);
        health_feed(h, sample, now_ns);
        if (h->state == RANDD_SOURCE_QUARANTINED)
            return h->failed_test == test ? 0 : -EIO;
    }
    return -EIO;
}

int health_inject(struct health *h, int test, uint64_t now_ns)
{
    if (!health_runs(h, test))
        return -ENOTSUP;
    if (h->state == RANDD_SOURCE_QUARANTINED)
        return -EALREADY;
    if (test == RANDD_TEST_STUCK) {
        health_feed_stuck(h, h->rct_cutoff, now_ns);
        return h->failed_test == test ? 0 : -EIO;
    }
    return inject_samples(h, test, now_ns);
}

/* --- the tests' own known answers ------------------------------------------------------- */

/* At 1 bit an 8-bit sample and alpha 2^-40: C = 1 + ceil(40 / 1) (4.4.1); the APT's and the
 * lag test's critical values of the binomial tails (4.4.2), as tests/test_health.c derives
 * them by another route. */
#define KAT_RCT_CUTOFF 41
#define KAT_APT_CUTOFF 337
#define KAT_LAG_CUTOFF 340

int health_selftest(char *why, size_t whylen)
{
    struct health h;

    health_init(&h, 1, 1.0);
    health_enable_lag_test(&h);
    health_enable_stuck_test(&h);
    if (h.rct_cutoff != KAT_RCT_CUTOFF || h.apt_cutoff != KAT_APT_CUTOFF ||
        h.lag_cutoff != KAT_LAG_CUTOFF) {
        snprintf(why, whylen, "health test cutoffs at 1 bit a sample are %u, %u, %u, not the "
                 "known %u, %u, %u", h.rct_cutoff, h.apt_cutoff, h.lag_cutoff, KAT_RCT_CUTOFF,
                 KAT_APT_CUTOFF, KAT_LAG_CUTOFF);
        return -1;
    }
    for (int test = 0; test < RANDD_HEALTH_TEST_COUNT; test++) {
        health_init(&h, 1, 1.0);
        health_enable_lag_test(&h);
        health_enable_stuck_test(&h);
        if (health_inject(&h, test, 0) < 0) {
            snprintf(why, whylen, "health test %s known answer: its pattern did not trip "
                     "it%s%s", randd_health_test_name(test), h.reason[0] ? "; " : "", h.reason);
            return -1;
        }
    }
    return 0;
}
