/* SP 800-90B non-IID assessment (entropy_assess.h): the samples and their two tracks, the
 * estimators that need no more than a pass or two (6.3.1-6.3.4), the bound the predictors
 * share, and the minimum that makes the assessment. The tuple estimators are in
 * entropy_assess_tuples.c, the predictors in entropy_assess_predict.c.
 *
 * Where SP 800-90B leaves room (a tie, a search's stopping point, a dictionary's size), this
 * follows NIST's ea_non_iid, whose figures the tests compare with. */
#include "entropy_assess_internal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

const char *const randd_ea_names[RANDD_EA_ESTIMATORS] = {
    [RANDD_EA_MCV] = "most common value",
    [RANDD_EA_COLLISION] = "collision",
    [RANDD_EA_MARKOV] = "Markov",
    [RANDD_EA_COMPRESSION] = "compression",
    [RANDD_EA_T_TUPLE] = "t-tuple",
    [RANDD_EA_LRS] = "LRS",
    [RANDD_EA_MULTI_MCW] = "MultiMCW prediction",
    [RANDD_EA_LAG] = "lag prediction",
    [RANDD_EA_MULTI_MMC] = "MultiMMC prediction",
    [RANDD_EA_LZ78Y] = "LZ78Y prediction",
};

const char *const randd_ea_sections[RANDD_EA_ESTIMATORS] = {
    "6.3.1", "6.3.2", "6.3.3", "6.3.4", "6.3.5", "6.3.6", "6.3.7", "6.3.8", "6.3.9", "6.3.10",
};

#define TRUNCATED_BITS 1000000u     /* ea_non_iid -t: the bitstring's first MIN_SIZE bits */

/* --- shared by the estimators --------------------------------------------------------------- */

void randd_ea_tick(const struct ea_progress *p, size_t done, size_t total)
{
    if (p && p->fn && total)
        p->fn(p->arg, p->base + p->span * (double)done / (double)total, p->what);
}

void randd_ea_release(void *p, size_t len)
{
    if (p)
        OPENSSL_cleanse(p, len);
    free(p);
}

/* 6.3.7 step 5's equation for P_local, solved for the probability that no run of r correct
 * predictions occurs in n; returns its log. x is the fixed point of x = 1 + q p^r x^(r+1),
 * found by iteration from 1 (it climbs monotonically to its limit). */
static double no_run_log_probability(long double p, uint64_t r, uint64_t n)
{
    long double q = 1.0L - p, x = 1.0L, last = 0.0L;

    for (int i = 0; i <= 65 && x - last > LDBL_EPSILON * x; i++) {
        last = x;
        x = 1.0L + q * powl(p, (long double)r) * powl(x, r + 1.0L);
    }
    return (double)(logl(1.0L - p * x) - logl((r + 1.0L - r * x) * q) - (n + 1.0L) * logl(x));
}

/* The p in [lo, 1) at which that probability falls to 0.99, by bisection to the last bit. */
static double solve_p_local(uint64_t r, uint64_t n, double lo)
{
    const double target = log(0.99);
    double hi = 1.0;

    for (;;) {
        double mid = lo + (hi - lo) / 2;

        if (mid <= lo || mid >= hi)
            return hi;
        if (no_run_log_probability(mid, r, n) > target)
            lo = mid;
        else
            hi = mid;
    }
}

/* 6.3.7 steps 4-5: the larger of P_global' (the 99% upper bound on the rate of correct
 * predictions; with none, the rate at which none is 1% likely) and P_local (the rate at
 * which the longest run is 1% likely), but at least 1/k. */
double randd_ea_prediction_bound(uint64_t correct, uint64_t n, uint64_t longest_run, unsigned k)
{
    double p_global = (double)correct / (double)n, p = 1.0 / k, bound;

    if (correct)
        bound = fmin(1.0, p_global + EA_Z * sqrt(p_global * (1.0 - p_global) / ((double)n - 1.0)));
    else
        bound = 1.0 - pow(0.01, 1.0 / (double)n);
    if (bound > p)
        p = bound;
    if (p < 1.0 && no_run_log_probability(p, longest_run + 1, n) > log(0.99))
        p = fmax(p, solve_p_local(longest_run + 1, n, p));
    return -log2(p);
}

/* --- 6.3.1 most common value ---------------------------------------------------------------- */

static double most_common_value(const uint8_t *s, size_t n)
{
    size_t count[256] = { 0 }, mode = 0;
    double p;

    for (size_t i = 0; i < n; i++)
        count[s[i]]++;
    for (unsigned v = 0; v < 256; v++)
        if (count[v] > mode)
            mode = count[v];
    p = (double)mode / (double)n;
    return -log2(fmin(1.0, p + EA_Z * sqrt(p * (1.0 - p) / ((double)n - 1.0))));
}

/* --- 6.3.2 collision (binary) --------------------------------------------------------------- */

/* The mean wait for a repeated bit, lowered to its 99% bound X', is 2 + 2p - 2p^2 for the
 * most likely bit's probability p (the standard's expression reduced for bits, as in
 * ea_non_iid); solved for p >= 1/2. */
static double collision(const uint8_t *s, size_t n)
{
    size_t i = 0, waits = 0;
    double squares = 0.0, mean, sigma;

    while (i + 1 < n) {
        unsigned wait = s[i] == s[i + 1] ? 2 : 3;

        if (wait == 3 && i + 2 >= n)
            break;
        waits++;
        squares += wait * wait;
        i += wait;
    }
    if (waits < 2)
        return NAN;
    mean = (double)i / (double)waits;
    sigma = sqrt((squares - (double)i * mean) / (double)(waits - 1));
    mean = fmax(2.0, mean - EA_Z * sigma / sqrt((double)waits));
    return mean < 2.5 ? -log2(0.5 + sqrt(1.25 - 0.5 * mean)) : 1.0;
}

/* --- 6.3.3 Markov (binary) ------------------------------------------------------------------ */

/* The six 128-bit sequences among which the most likely one lies: the first bit, and how
 * many times each transition a -> b occurs after it. */
static const struct {
    uint8_t first, n[2][2];
} markov_sequences[] = {
    { 0, { { 127, 0 }, { 0, 0 } } },        /* 00...0 */
    { 0, { { 0, 64 }, { 63, 0 } } },        /* 0101...01 */
    { 0, { { 0, 1 }, { 0, 126 } } },        /* 011...1 */
    { 1, { { 126, 0 }, { 1, 0 } } },        /* 100...0 */
    { 1, { { 0, 63 }, { 64, 0 } } },        /* 1010...10 */
    { 1, { { 0, 0 }, { 0, 127 } } },        /* 11...1 */
};

static double markov(const uint8_t *s, size_t n)
{
    uint64_t from[2] = { 0, 0 }, to0[2] = { 0, 0 };
    double p[2], t[2][2], h_min = 128.0;

    if (n < 2)
        return NAN;
    for (size_t i = 0; i + 1 < n; i++) {
        from[s[i]]++;
        to0[s[i]] += s[i + 1] == 0;
    }
    for (unsigned a = 0; a < 2; a++) {
        t[a][0] = from[a] ? (double)to0[a] / (double)from[a] : 0.0;
        t[a][1] = from[a] ? 1.0 - t[a][0] : 0.0;
    }
    p[0] = (double)(from[0] + (s[n - 1] == 0)) / (double)n;
    p[1] = 1.0 - p[0];
    for (size_t q = 0; q < sizeof(markov_sequences) / sizeof(markov_sequences[0]); q++) {
        double h = -log2(p[markov_sequences[q].first]);
        bool possible = true;

        for (unsigned a = 0; a < 2; a++)
            for (unsigned b = 0; b < 2; b++)
                if (markov_sequences[q].n[a][b]) {
                    possible = possible && t[a][b] > 0.0;
                    h -= markov_sequences[q].n[a][b] * log2(t[a][b]);
                }
        if (possible && h < h_min)
            h_min = h;
    }
    return fmin(h_min / 128.0, 1.0);
}

/* --- 6.3.4 compression (binary) ------------------------------------------------------------- */

#define COMP_B 6                    /* bits per block */
#define COMP_D 1000                 /* blocks that only fill the dictionary */

/* G(z) of 6.3.4 step 6, for z the probability of one block value:
 *   G(z) = 1/v sum_{t=d+1..L} sum_{u=1..t} log2(u) F(z, t, u),
 * F = z^2 (1-z)^(u-1) for u < t, z (1-z)^(t-1) for u = t. With a_u = log2(u) (1-z)^(u-1),
 * the double sum is z sum_{u=d+1..L} a_u + z^2 ((L-d) sum_{u<=d} a_u + sum_{u=d+1..L-1}
 * (L-u) a_u): one pass. The terms fall geometrically; the pass stops once what is left
 * cannot move the sum by a part in 10^19. */
static long double compression_g(long double z, uint64_t blocks)
{
    const uint64_t d = COMP_D;
    long double pw = 1.0L - z, low = 0.0L, high = 0.0L, weighted = 0.0L;
    long double tail = log2l((long double)blocks) * (1.0L / z + (long double)blocks);

    for (uint64_t u = 2; u <= blocks && pw > 0.0L; u++, pw *= 1.0L - z) {
        long double a = log2l((long double)u) * pw;

        if (u <= d) {
            low += a;
            continue;
        }
        high += a;
        weighted += (long double)(blocks - u) * a;
        if (pw * tail < 1e-19L * (high + z * weighted))
            break;
    }
    return z / (long double)(blocks - d) * (high + z * ((long double)(blocks - d) * low + weighted));
}

/* The expected mean of log2(distance) when one block value has probability p and the other
 * 63 share the rest: 6.3.4 step 7's right-hand side. Falls as p grows. */
static double compression_expected(double p, uint64_t blocks)
{
    long double q = (1.0L - p) / ((1u << COMP_B) - 1);

    return (double)(compression_g(p, blocks) + ((1u << COMP_B) - 1) * compression_g(q, blocks));
}

static double compression(const uint8_t *s, size_t n)
{
    uint64_t blocks = n / COMP_B, last[1u << COMP_B] = { 0 }, v;
    long double sum = 0.0L, squares = 0.0L;
    double mean, sigma, lo = 1.0 / (1u << COMP_B), hi = 1.0;

    if (blocks <= COMP_D)
        return NAN;
    for (uint64_t i = 0; i < blocks; i++) {
        unsigned b = 0;

        for (unsigned j = 0; j < COMP_B; j++)
            b = b << 1 | s[i * COMP_B + j];
        if (i >= COMP_D) {
            double l = log2((double)(i + 1 - last[b]));

            sum += l;
            squares += (long double)l * l;
        }
        last[b] = i + 1;
    }
    v = blocks - COMP_D;
    mean = (double)(sum / v);
    sigma = 0.5907 * sqrt((double)(squares / (v - 1.0L)) - mean * mean);
    mean -= EA_Z * sigma / sqrt((double)v);
    if (compression_expected(lo, blocks) <= mean)
        return 1.0;                         /* even uniform blocks would not be this far apart */
    for (;;) {
        double mid = lo + (hi - lo) / 2;

        if (mid <= lo || mid >= hi)
            break;
        if (compression_expected(mid, blocks) > mean)
            lo = mid;
        else
            hi = mid;
    }
    return hi > 1.0 / (1u << COMP_B) ? -log2(hi) / COMP_B : 1.0;
}

/* --- the tracks ----------------------------------------------------------------------------- */

struct track {
    const char *name;           /* "literal", "bitstring" */
    const uint8_t *s;
    size_t n;
    unsigned k;                 /* symbols are 0..k-1 */
    double *h;                  /* the result's row */
};

struct assessment {
    struct ea_progress p;
    double work, done;          /* in units of samples x cost */
    char what[64];
};

/* Roughly the CPU time per sample of each estimator (ns, measured on binary and on 8-bit
 * data), for the progress bar; the t-tuple's covers LRS too. */
static double cost(enum randd_ea_estimator e, unsigned k)
{
    static const double binary[RANDD_EA_ESTIMATORS] = { 1, 1, 1, 15, 80, 0, 30, 60, 180, 130 };
    static const double wide[RANDD_EA_ESTIMATORS] = { 1, 1, 1, 15, 80, 0, 50, 10, 700, 350 };

    return k == 2 ? binary[e] : wide[e];
}

/* Whether e runs on a track over k symbols: the binary estimators only on binary data, and
 * LRS together with the t-tuple. */
static bool runs(enum randd_ea_estimator e, unsigned k)
{
    if (e == RANDD_EA_LRS)
        return false;
    return k == 2 || (e != RANDD_EA_COLLISION && e != RANDD_EA_MARKOV && e != RANDD_EA_COMPRESSION);
}

static double track_work(size_t n, unsigned k)
{
    double w = 0.0;

    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
        if (runs(e, k))
            w += cost(e, k) * (double)n;
    return w;
}

static int run_track(struct assessment *a, const struct track *t)
{
    int rc = 0;

    for (int e = 0; e < RANDD_EA_ESTIMATORS && rc == 0; e++) {
        if (!runs(e, t->k))
            continue;
        snprintf(a->what, sizeof(a->what), "%s %s", t->name,
                 e == RANDD_EA_T_TUPLE ? "t-tuple and LRS" : randd_ea_names[e]);
        a->p.base = a->done / a->work;
        a->p.span = cost(e, t->k) * (double)t->n / a->work;
        a->p.what = a->what;
        randd_ea_tick(&a->p, 0, 1);
        switch ((enum randd_ea_estimator)e) {
        case RANDD_EA_MCV:         t->h[e] = most_common_value(t->s, t->n); break;
        case RANDD_EA_COLLISION:   t->h[e] = collision(t->s, t->n); break;
        case RANDD_EA_MARKOV:      t->h[e] = markov(t->s, t->n); break;
        case RANDD_EA_COMPRESSION: t->h[e] = compression(t->s, t->n); break;
        case RANDD_EA_T_TUPLE:
            rc = randd_ea_tuples(t->s, t->n, t->k, &t->h[e], &t->h[RANDD_EA_LRS], &a->p);
            break;
        case RANDD_EA_MULTI_MCW:   rc = randd_ea_multi_mcw(t->s, t->n, t->k, &t->h[e], &a->p); break;
        case RANDD_EA_LAG:         rc = randd_ea_lag(t->s, t->n, t->k, &t->h[e], &a->p); break;
        case RANDD_EA_MULTI_MMC:   rc = randd_ea_multi_mmc(t->s, t->n, t->k, &t->h[e], &a->p); break;
        case RANDD_EA_LZ78Y:       rc = randd_ea_lz78y(t->s, t->n, t->k, &t->h[e], &a->p); break;
        default: break;
        }
        a->done += cost(e, t->k) * (double)t->n;
    }
    return rc;
}

/* The smallest estimate that ran, and no more than cap. */
static double track_min(const double *h, double cap)
{
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
        if (!isnan(h[e]) && h[e] < cap)
            cap = h[e];
    return cap;
}

/* --- the assessment ------------------------------------------------------------------------- */

unsigned randd_ea_width(const uint8_t *samples, size_t n)
{
    unsigned all = 0, w = 0;

    for (size_t i = 0; i < n; i++)
        all |= samples[i];
    while (all >> w)
        w++;
    return w;
}

int randd_ea_assess(const uint8_t *samples, size_t n, unsigned bits, unsigned flags,
                    struct randd_ea_result *out, randd_ea_progress_fn *progress, void *arg)
{
    struct assessment a = { { progress, arg, 0.0, 0.0, "" }, 0.0, 0.0, "" };
    uint8_t rank[256] = { 0 }, *literal = NULL, *bitstring = NULL;
    bool present[256] = { false };
    unsigned width, k = 0;
    size_t nbits = 0;
    int rc = 0;

    if (n == 0 || bits > 8 || (flags & ~(RANDD_EA_TRUNCATE | RANDD_EA_LITERAL_ONLY)))
        return -EINVAL;
    if (n > RANDD_EA_MAX_SAMPLES)
        return -E2BIG;
    width = randd_ea_width(samples, n);
    if (bits && width > bits)
        return -ERANGE;
    bits = bits ? bits : width ? width : 1;

    memset(out, 0, sizeof(*out));
    for (int e = 0; e < RANDD_EA_ESTIMATORS; e++)
        out->literal[e] = out->bitstring[e] = NAN;
    out->h_bitstring = NAN;
    out->bits = bits;
    out->samples = n;
    for (size_t i = 0; i < n; i++)
        present[samples[i]] = true;
    for (unsigned v = 0; v < 256; v++)      /* the literal track numbers values by rank */
        if (present[v])
            rank[v] = (uint8_t)k++;
    out->symbols = k;
    if (k < 2)
        return 0;                           /* one value: no entropy */

    if (!(literal = malloc(n)))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        literal[i] = rank[samples[i]];
    if (k > 2 && !(flags & RANDD_EA_LITERAL_ONLY)) {  /* the bitstring, most significant first */
        nbits = (size_t)n * bits;
        if ((flags & RANDD_EA_TRUNCATE) && nbits > TRUNCATED_BITS)
            nbits = TRUNCATED_BITS;
        if (!(bitstring = malloc(nbits))) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < nbits; i++)
            bitstring[i] = samples[i / bits] >> (bits - 1 - i % bits) & 1;
        out->bitstring_bits = nbits;
    }

    a.work = track_work(n, k) + (nbits ? track_work(nbits, 2) : 0.0);
    rc = run_track(&a, &(struct track){ "literal", literal, n, k, out->literal });
    if (rc == 0 && nbits)
        rc = run_track(&a, &(struct track){ "bitstring", bitstring, nbits, 2, out->bitstring });
    if (rc < 0)
        goto out;
    out->h_original = track_min(out->literal, bits);
    out->h_assessed = out->h_original;
    if (nbits) {
        out->h_bitstring = track_min(out->bitstring, 1.0);
        out->h_assessed = fmin(out->h_assessed, bits * out->h_bitstring);
    }
    a.p.base = 1.0, a.p.span = 0.0;
    randd_ea_tick(&a.p, 1, 1);
out:
    randd_ea_release(literal, n);
    randd_ea_release(bitstring, nbits);
    return rc;
}
