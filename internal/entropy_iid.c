/* SP 800-90B section 5, the IID track (entropy_iid.h): the most-common-value estimates, the
 * chi-square and longest-repeated-substring tests, the 19 statistics and their permutation
 * tests. Where the standard leaves room (how bins are merged, how binary data is converted,
 * which copy of the data a statistic reads), this follows NIST's ea_iid, whose figures the
 * tests compare with. The suffix array for the LRS test is entropy_assess_tuples.c's; the
 * shuffles' compression statistic is counted by bzip2_length.c once the count agrees with
 * libbz2 on the data and on shuffle 0. */
#include "entropy_iid.h"
#include "entropy_assess_internal.h"
#include "bzip2_length.h"

#include <endian.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bzlib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "randd.h"

const char *const randd_iid_names[RANDD_IID_STATISTICS] = {
    "excursion", "numDirectionalRuns", "lenDirectionalRuns", "numIncreasesDecreases",
    "numRunsMedian", "lenRunsMedian", "avgCollision", "maxCollision", "periodicity(1)",
    "periodicity(2)", "periodicity(8)", "periodicity(16)", "periodicity(32)", "covariance(1)",
    "covariance(2)", "covariance(8)", "covariance(16)", "covariance(32)", "compression",
};

enum { EXCURSION, DIR_RUNS, DIR_LENGTH, INC_DEC, MEDIAN_RUNS, MEDIAN_LENGTH, AVG_COLLISION,
       MAX_COLLISION, PERIODICITY, COVARIANCE = PERIODICITY + 5, COMPRESSION = COVARIANCE + 5 };

static const unsigned lags[5] = { 1, 2, 8, 16, 32 };

#define P_FAIL     0.001    /* 5.2: a chi-square p-value below this fails */
#define BZ_LEVEL   5        /* ea_iid's block size (x 100 kB) for the compression statistic */

/* --- the chi-square p-value --------------------------------------------------------------- */

/* Q(a, x) = 1 - P(a, x): by P's series below x < a + 1, else by Q's continued fraction
 * (modified Lentz), each to double precision. */
double randd_iid_chi_square_p(double score, int df)
{
    double a = df / 2.0, x = score / 2.0, lead, sum, term;

    if (df <= 0 || x <= 0)
        return 1.0;
    lead = a * log(x) - x - lgamma(a);
    if (x < a + 1) {
        sum = term = 1.0 / a;
        for (int i = 1; i < 100000 && fabs(term) > fabs(sum) * DBL_EPSILON; i++) {
            term *= x / (a + i);
            sum += term;
        }
        return fmax(0.0, 1.0 - sum * exp(lead));
    }
    double b = x + 1 - a, c = 1 / DBL_MIN, d = 1 / b, h = d;

    for (int i = 1; i < 100000; i++) {
        double an = -i * (i - a), delta;

        b += 2;
        d = an * d + b;
        d = fabs(d) < DBL_MIN ? DBL_MIN : d;
        c = b + an / c;
        c = fabs(c) < DBL_MIN ? DBL_MIN : c;
        d = 1 / d;
        delta = d * c;
        h *= delta;
        if (fabs(delta - 1) <= DBL_EPSILON)
            break;
    }
    return exp(lead) * h;
}

/* --- the data ----------------------------------------------------------------------------- */

/* What every statistic reads: the values as given (raw) and renumbered by rank (sym). */
struct iid_data {
    size_t n;
    unsigned k, bits;
    bool binary;
    double raw_mean, median;
    uint8_t rank[256];          /* sym[i] = rank[raw[i]] */
};

static void most_common(const uint8_t *s, size_t n, struct randd_iid_mcv *m)
{
    size_t count[256] = { 0 };

    m->mode = 0;
    for (size_t i = 0; i < n; i++)
        count[s[i]]++;
    for (unsigned v = 0; v < 256; v++)
        if (count[v] > m->mode)
            m->mode = count[v];
    m->p_hat = (double)m->mode / (double)n;
    m->p_u = fmin(1.0, m->p_hat + EA_Z * sqrt(m->p_hat * (1.0 - m->p_hat) / ((double)n - 1.0)));
}

/* Each value's share, summed 1/n at a time as ea_iid sums it: the chi-square bins depend on
 * the order of nearly equal expectations, so the shares must round as ea_iid's do. */
static void proportions(const uint8_t *s, size_t n, unsigned k, double *p)
{
    size_t count[256] = { 0 };
    double step = 1.0 / (double)n;

    for (size_t i = 0; i < n; i++)
        count[s[i]]++;
    for (unsigned v = 0; v < k; v++) {
        p[v] = 0.0;
        for (size_t c = 0; c < count[v]; c++)
            p[v] += step;
    }
}

/* --- 5.2.1-5.2.4 chi-square tests --------------------------------------------------------- */

/* Cells (a pair of values, or one value) with their expected counts, merged into bins that each
 * expect at least 5, smallest expectations first, as ea_iid merges them; a last bin short of 5
 * joins the one before. */
struct cell {
    double expected;
    unsigned id;
    unsigned bin;
};

static int by_expectation(const void *a, const void *b)
{
    const struct cell *x = a, *y = b;

    if (x->expected != y->expected)
        return x->expected < y->expected ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorts cells by expectation, assigns bins, fills expect[] (room for m), returns the number of
 * bins; bin_of[id] says where each cell went. */
static unsigned make_bins(struct cell *c, unsigned m, double *expect, unsigned *bin_of)
{
    unsigned bins = 0;
    double sum = 0.0;

    qsort(c, m, sizeof(*c), by_expectation);
    for (unsigned i = 0; i < m; i++) {
        if (sum >= 5.0) {
            expect[bins++] = sum;
            sum = 0.0;
        }
        c[i].bin = bins;
        sum += c[i].expected;
    }
    if (bins > 0 && sum < 5.0) {
        for (unsigned i = m; i-- > 0 && c[i].bin == bins;)
            c[i].bin = bins - 1;
        expect[bins - 1] += sum;
    } else {
        expect[bins++] = sum;
    }
    for (unsigned i = 0; i < m; i++)
        bin_of[c[i].id] = c[i].bin;
    return bins;
}

static double pearson(const double *expect, const size_t *observed, unsigned bins)
{
    double t = 0.0;

    for (unsigned b = 0; b < bins; b++)
        t += pow((double)observed[b] - expect[b], 2) / expect[b];
    return t;
}

/* 5.2.1: pairs of consecutive samples (non-overlapping) against the products of the values'
 * shares. */
static int independence(const uint8_t *s, size_t n, unsigned k, struct randd_iid_chi_square *r)
{
    unsigned m = k * k, bins, *bin_of = malloc(m * sizeof(*bin_of));
    struct cell *c = malloc(m * sizeof(*c));
    double p[256], *expect = malloc(m * sizeof(*expect));
    size_t *observed = calloc(m, sizeof(*observed));
    int rc = -ENOMEM;

    if (bin_of && c && expect && observed) {
        proportions(s, n, k, p);
        for (unsigned i = 0; i < m; i++)
            c[i] = (struct cell){ p[i / k] * p[i % k] * floor((double)n * 0.5), i, 0 };
        bins = make_bins(c, m, expect, bin_of);
        for (size_t j = 0; j + 1 < n; j += 2)
            observed[bin_of[s[j] * k + s[j + 1]]]++;
        r->score = pearson(expect, observed, bins);
        r->df = (int)bins - (int)k;
        rc = 0;
    }
    free(bin_of);
    free(c);
    free(expect);
    free(observed);
    return rc;
}

/* 5.2.2: each tenth of the samples against the shares of the values in all of them. */
static int goodness_of_fit(const uint8_t *s, size_t n, unsigned k,
                           struct randd_iid_chi_square *r)
{
    unsigned bins, bin_of[256];
    struct cell c[256];
    double p[256], expect[256];
    size_t block = n / 10;

    proportions(s, n, k, p);
    for (unsigned i = 0; i < k; i++)
        c[i] = (struct cell){ p[i] * floor((double)n / 10.0), i, 0 };
    bins = make_bins(c, k, expect, bin_of);
    r->score = 0.0;
    for (unsigned j = 0; j < 10; j++) {
        size_t observed[256] = { 0 };

        for (size_t i = j * block; i < (j + 1) * block; i++)
            observed[bin_of[s[i]]]++;
        r->score += pearson(expect, observed, bins);
    }
    r->df = 9 * ((int)bins - 1);
    return 0;
}

/* 5.2.3: m-bit words (m as large as 11 while each word still expects 5) against the bias. */
static void binary_independence(const uint8_t *s, size_t n, struct randd_iid_chi_square *r)
{
    double p1 = 0.0, p0, min_p;
    size_t ones = 0, words;
    unsigned m = 11, *count;

    for (size_t i = 0; i < n; i++)
        ones += s[i];
    p1 = (double)ones / (double)n;
    p0 = 1.0 - p1;
    min_p = fmin(p0, p1);
    while (m > 1 && pow(min_p, m) * (double)(n / m) < 5)
        m--;
    r->score = 0.0;
    r->df = 0;
    if (m < 2 || !(count = calloc(1u << m, sizeof(*count))))
        return;
    words = n / m;
    for (size_t i = 0; i < words; i++) {
        unsigned w = 0;

        for (unsigned j = 0; j < m; j++)
            w = w << 1 | s[i * m + j];
        count[w]++;
    }
    for (unsigned w = 0; w < 1u << m; w++) {
        int ones_in = __builtin_popcount(w);
        double e = pow(p1, ones_in) * pow(p0, (int)m - ones_in) * (double)words;

        r->score += pow(count[w] - e, 2) / e;
    }
    r->df = (1 << m) - 2;
    free(count);
}

/* 5.2.4: the ones in each tenth against the ones in all. */
static void binary_goodness_of_fit(const uint8_t *s, size_t n, struct randd_iid_chi_square *r)
{
    size_t block = n / 10, ones = 0;
    double p, e0, e1;

    for (size_t i = 0; i < n; i++)
        ones += s[i];
    p = (double)ones / (double)n;
    e0 = (1.0 - p) * (double)block;
    e1 = p * (double)block;
    r->score = 0.0;
    for (unsigned j = 0; j < 10; j++) {
        size_t o1 = 0;

        for (size_t i = j * block; i < (j + 1) * block; i++)
            o1 += s[i];
        r->score += pow((double)(block - o1) - e0, 2) / e0 + pow((double)o1 - e1, 2) / e1;
    }
    r->df = 9;
}

static int chi_square(const uint8_t *s, const struct iid_data *d, struct randd_iid_result *out)
{
    int rc = 0;

    if (d->binary) {
        binary_independence(s, d->n, &out->independence);
        binary_goodness_of_fit(s, d->n, &out->goodness_of_fit);
    } else if ((rc = independence(s, d->n, d->k, &out->independence)) == 0) {
        rc = goodness_of_fit(s, d->n, d->k, &out->goodness_of_fit);
    }
    out->independence.p_value = randd_iid_chi_square_p(out->independence.score,
                                                       out->independence.df);
    out->goodness_of_fit.p_value = randd_iid_chi_square_p(out->goodness_of_fit.score,
                                                          out->goodness_of_fit.df);
    out->chi_square_passed = out->independence.p_value >= P_FAIL &&
                             out->goodness_of_fit.p_value >= P_FAIL;
    return rc;
}

/* --- 5.2.5 longest repeated substring ----------------------------------------------------- */

/* Pr(X >= 1) = 1 - (1 - p_col^W)^N over the N = C(n - W + 1, 2) pairs of W-long substrings;
 * passes when at least 0.001. In logs, as p_col^W may be far below the epsilon of 1. */
static int lrs_test(const uint8_t *s, const struct iid_data *d, struct randd_iid_result *out)
{
    double p[256];
    long double p_col = 0.0L, log_none, pairs;
    size_t w;
    int rc;

    proportions(s, d->n, d->k, p);
    for (unsigned v = 0; v < d->k; v++)
        p_col += powl((long double)p[v], 2.0L);
    if ((rc = randd_ea_longest_repeat(s, d->n, d->k, &w)) < 0)
        return rc;
    out->lrs_p_col = (double)p_col;
    out->lrs_length = w;
    if (p_col > 1.0L - LDBL_EPSILON || w == 0) {
        out->lrs_probability = 1.0;
        out->lrs_passed = true;
        return 0;
    }
    log_none = log1pl(-powl(p_col, (long double)w));
    pairs = (long double)(d->n - w + 1) * (long double)(d->n - w) / 2.0L;
    out->lrs_probability = (double)(1.0L - expl(pairs * log_none));
    out->lrs_passed = logl(0.999L) >= pairs * log_none;
    return 0;
}

/* --- 5.1 the 19 statistics ---------------------------------------------------------------- */

/* A thread's working copies and buffers. For binary data 5.1 reads bytes made of 8 samples:
 * conversion I (ones per byte) for the directional runs, periodicity and covariance,
 * conversion II (the byte's value, first sample highest) for the collision statistics. */
struct scratch {
    uint8_t *sym, *raw;         /* this thread's shuffled copies */
    uint8_t *ones, *bytes;      /* conversions I and II, ceil(n / 8) each */
    char *text;                 /* the compression statistic's decimal text */
    size_t text_cap;
    char *packed;               /* bzip2's output */
    unsigned packed_cap;
    struct randd_bzlen *counter;    /* counts bzip2's length instead; NULL: libbz2 compresses */
    struct bz_arena {           /* bzip2's work arrays, kept from one shuffle to the next */
        void *block[4];
        size_t size[4];
        bool busy[4];
    } arena;
    uint32_t stamp[256], epoch; /* collision search: value seen since epoch */
};

/* Runs of x[i] > x[i+1] ("down") and x[i] <= x[i+1] ("up") over x[0..m): their number, the
 * longest, and the larger of the counts of ups and downs. */
static void directional(const uint8_t *x, size_t m, double *runs, double *longest, double *most)
{
    size_t number = 0, run = 0, longest_run = 0, up = 0;

    /* without branches on the data: as many mispredictions as runs cost more than the rest */
    if (m >= 2) {
        size_t last = x[0] <= x[1];

        number = run = longest_run = 1;
        up = last;
        for (size_t i = 1; i + 1 < m; i++) {
            size_t step = x[i] <= x[i + 1], same = step == last;

            up += step;
            number += !same;
            run = run * same + 1;
            longest_run = run > longest_run ? run : longest_run;
            last = step;
        }
    }
    *runs = (double)number;
    *longest = (double)longest_run;
    *most = (double)(up > m - 1 - up ? up : m - 1 - up);
}

/* Runs of values below the median and at or above it. */
static void median_runs(const uint8_t *x, size_t n, double median, double *runs,
                        double *longest)
{
    unsigned above = (unsigned)ceil(median);    /* an integer below the median is below this */
    size_t number = 1, run = 1, longest_run = 1, last = x[0] >= above;

    for (size_t i = 1; i < n; i++) {        /* without branches on the data, as above */
        size_t side = x[i] >= above, same = side == last;

        number += !same;
        run = run * same + 1;
        longest_run = run > longest_run ? run : longest_run;
        last = side;
    }
    *runs = (double)number;
    *longest = (double)longest_run;
}

/* From each start, the samples read until one repeats; the next search starts at the repeat.
 * Their mean and maximum. */
static void collisions(struct scratch *w, const uint8_t *x, size_t n, double *mean, double *max)
{
    size_t i = 0, found = 0, total = 0, longest = 0;

    while (i < n) {
        size_t j = 0;

        if (++w->epoch == 0) {
            memset(w->stamp, 0, sizeof(w->stamp));
            w->epoch = 1;
        }
        while (i + j < n && w->stamp[x[i + j]] != w->epoch)
            w->stamp[x[i + j++]] = w->epoch;
        if (i + j >= n)
            break;
        found++;
        total += j + 1;
        longest = j + 1 > longest ? j + 1 : longest;
        i += j + 1;
    }
    *mean = found ? (double)total / (double)found : NAN;
    *max = (double)longest;
}

static double periodicity(const uint8_t *x, size_t m, unsigned lag)
{
    size_t t = 0;

    for (size_t i = 0; i + lag < m; i++)
        t += x[i] == x[i + lag];
    return (double)t;
}

static double covariance(const uint8_t *x, size_t m, unsigned lag)
{
    uint64_t t = 0;

    for (size_t i = 0; i + lag < m; i++)
        t += (unsigned)x[i] * x[i + lag];
    return (double)t;
}

/* bzip2's allocator: its four arrays (4.3 MB at block size 5) are kept for the thread's next
 * shuffle rather than mapped afresh, and wiped once the thread is done, as they hold the
 * shuffled samples. */
static void *arena_alloc(void *opaque, int items, int size)
{
    struct bz_arena *a = opaque;
    size_t want = (size_t)items * (size_t)size;

    for (unsigned i = 0; i < 4; i++)
        if (a->block[i] && !a->busy[i] && a->size[i] == want) {
            a->busy[i] = true;
            return a->block[i];
        }
    for (unsigned i = 0; i < 4; i++)
        if (!a->block[i]) {
            if (!(a->block[i] = malloc(want)))
                return NULL;
            a->size[i] = want;
            a->busy[i] = true;
            return a->block[i];
        }
    return NULL;    /* libbz2 1.0 asks for four at most; more is a library we do not know */
}

static void arena_free(void *opaque, void *p)
{
    struct bz_arena *a = opaque;

    for (unsigned i = 0; i < 4; i++)
        if (a->block[i] == p)
            a->busy[i] = false;
}

/* The values written in decimal, separated by single spaces: the compression statistic's
 * text. Returns its length. */
static size_t decimal_text(char *text, const uint8_t *raw, size_t n)
{
    char word[256][4];          /* each value's word, padded; text has room for 4 a value */
    uint8_t len[256];
    char *t = text;

    /* from a table, without branches on the values: a branch on v >= 100 or v >= 10 would be
     * mispredicted on about every other random byte */
    for (unsigned v = 0; v < 256; v++) {
        char digits[8] = { 0 };

        len[v] = (uint8_t)snprintf(digits, sizeof(digits), "%u ", v);
        memcpy(word[v], digits, 4);
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(t, word[raw[i]], 4);
        t += len[raw[i]];
    }
    return (size_t)(t - text - 1);
}

/* The text's bzip2 length at ea_iid's settings (block size 5, the default work factor): what
 * BZ2_bzBuffToBuffCompress gives, from libbz2 itself. 0.0: libbz2 failed. */
static double compressed_length(struct scratch *w, size_t len)
{
    bz_stream z = { .bzalloc = arena_alloc, .bzfree = arena_free, .opaque = &w->arena };
    unsigned packed;
    int rc;

    if (BZ2_bzCompressInit(&z, BZ_LEVEL, 0, 0) != BZ_OK)
        return 0.0;
    z.next_in = w->text;
    z.avail_in = (unsigned)len;
    z.next_out = w->packed;
    z.avail_out = w->packed_cap;
    rc = BZ2_bzCompress(&z, BZ_FINISH);     /* BZ_FINISH_OK: the output did not fit */
    packed = z.total_out_lo32;
    BZ2_bzCompressEnd(&z);
    return rc == BZ_STREAM_END ? (double)packed : 0.0;
}

/* The compression statistic: counted when the thread has a counter, else by libbz2. */
static double compression(struct scratch *w, const uint8_t *raw, size_t n)
{
    size_t len = decimal_text(w->text, raw, n);

    if (w->counter)
        return (double)randd_bzlen_count(w->counter, (const uint8_t *)w->text, len);
    return compressed_length(w, len);
}

static void statistics(const struct iid_data *d, struct scratch *w, const bool *active,
                       double *t)
{
    const uint8_t *sym = w->sym, *raw = w->raw, *bytes = sym, *collide = sym;
    size_t n = d->n, m = n, running = 0;
    bool by_rank = false;

    /* A shuffle moves raw only; the statistics that read ranks get them from it. */
    for (unsigned j = DIR_RUNS; j < COVARIANCE; j++)
        by_rank |= active[j];
    for (unsigned j = COVARIANCE; j < COMPRESSION && d->binary; j++)
        by_rank |= active[j];
    if (!by_rank)
        goto raw_only;
    for (size_t i = 0; i < n; i++)
        w->sym[i] = d->rank[raw[i]];
    if (d->binary) {
        m = (n + 7) / 8;
        memset(w->ones, 0, m);
        memset(w->bytes, 0, m);
        for (size_t i = 0; i < n; i++) {
            w->ones[i / 8] += sym[i];
            w->bytes[i / 8] |= sym[i] << (7 - i % 8);
        }
        bytes = w->ones;
        collide = w->bytes;
    }
raw_only:
    if (active[EXCURSION]) {
        double most = 0.0;

        for (size_t i = 0; i < n; i++) {
            double dev = fabs((double)(running += raw[i]) - (double)(i + 1) * d->raw_mean);

            most = dev > most ? dev : most;
        }
        t[EXCURSION] = most;
    }
    if (active[DIR_RUNS] || active[DIR_LENGTH] || active[INC_DEC])
        directional(bytes, m, &t[DIR_RUNS], &t[DIR_LENGTH], &t[INC_DEC]);
    if (active[MEDIAN_RUNS] || active[MEDIAN_LENGTH])
        median_runs(sym, n, d->median, &t[MEDIAN_RUNS], &t[MEDIAN_LENGTH]);
    if (active[AVG_COLLISION] || active[MAX_COLLISION])
        collisions(w, collide, d->binary ? m : n, &t[AVG_COLLISION], &t[MAX_COLLISION]);
    for (unsigned l = 0; l < 5; l++) {
        if (active[PERIODICITY + l])
            t[PERIODICITY + l] = periodicity(bytes, m, lags[l]);
        /* ea_iid: covariance multiplies the values as given unless the data is binary */
        if (active[COVARIANCE + l])
            t[COVARIANCE + l] = covariance(d->binary ? bytes : raw, m, lags[l]);
    }
    if (active[COMPRESSION])
        t[COMPRESSION] = compression(w, raw, n);
}

static void scratch_free(struct scratch *w, size_t n)
{
    randd_ea_release(w->sym, n);
    randd_ea_release(w->raw, n);
    randd_ea_release(w->ones, n / 8 + 1);
    randd_ea_release(w->bytes, n / 8 + 1);
    randd_ea_release(w->text, w->text_cap);
    randd_ea_release(w->packed, w->packed_cap);
    for (unsigned i = 0; i < 4; i++)
        randd_ea_release(w->arena.block[i], w->arena.size[i]);
    randd_bzlen_free(w->counter);
    memset(w, 0, sizeof(*w));
}

/* counted: the compression statistic is counted (bzip2_length.h), not compressed. */
static int scratch_new(struct scratch *w, const uint8_t *sym, const uint8_t *raw, size_t n,
                       bool counted)
{
    memset(w, 0, sizeof(*w));
    w->text_cap = 4 * n;
    w->packed_cap = (unsigned)ceil(1.01 * (double)w->text_cap) + 600;
    w->sym = malloc(n);
    w->raw = malloc(n);
    w->ones = malloc(n / 8 + 1);
    w->bytes = malloc(n / 8 + 1);
    w->text = malloc(w->text_cap);
    w->packed = malloc(w->packed_cap);
    if (counted)
        w->counter = randd_bzlen_new(BZ_LEVEL);
    if (!w->sym || !w->raw || !w->ones || !w->bytes || !w->text || !w->packed ||
        (counted && !w->counter)) {
        scratch_free(w, n);
        return -ENOMEM;
    }
    memcpy(w->sym, sym, n);
    memcpy(w->raw, raw, n);
    return 0;
}

/* --- 5.1 the permutation tests ------------------------------------------------------------ */

bool randd_iid_decided(const unsigned c[3])
{
    return c[0] + c[1] > 5 && c[1] + c[2] > 5;
}

bool randd_iid_statistic_passed(const unsigned c[3])
{
    return randd_iid_decided(c);
}

/* Shuffle i's keystream: ChaCha20 keyed with the run's seed, its nonce i, so that shuffle i
 * is the same whichever thread makes it. 32-bit words: n < 2^28. */
struct stream {
    EVP_CIPHER_CTX *ctx;
    uint32_t word[1024];
    unsigned next;
};

static int stream_start(struct stream *g, const uint8_t *seed, uint64_t index)
{
    uint8_t iv[16] = { 0 };     /* OpenSSL's ChaCha20: a 32-bit block counter, then the nonce */

    for (unsigned b = 0; b < 8; b++)
        iv[4 + b] = (uint8_t)(index >> 8 * b);
    g->next = 1024;
    return EVP_EncryptInit_ex(g->ctx, EVP_chacha20(), NULL, seed, iv) == 1 ? 0 : -EIO;
}

static int stream_word(struct stream *g, uint32_t *word)
{
    static const uint8_t zeros[sizeof(g->word)];

    if (g->next == 1024) {
        int len;

        if (EVP_EncryptUpdate(g->ctx, (uint8_t *)g->word, &len, zeros, sizeof(zeros)) != 1 ||
            len != (int)sizeof(zeros))
            return -EIO;
        g->next = 0;
    }
    *word = le32toh(g->word[g->next++]);
    return 0;
}

/* Uniform in [0, bound] by Lemire's multiply-and-reject. */
static int draw_below(struct stream *g, uint32_t bound, uint32_t *r)
{
    uint32_t range = bound + 1, word;
    uint64_t m;
    int rc;

    if ((rc = stream_word(g, &word)) < 0)
        return rc;
    m = (uint64_t)word * range;
    if ((uint32_t)m < range) {
        uint32_t floor_ = (0u - range) % range;

        while ((uint32_t)m < floor_) {
            if ((rc = stream_word(g, &word)) < 0)
                return rc;
            m = (uint64_t)word * range;
        }
    }
    *r = (uint32_t)(m >> 32);
    return 0;
}

/* Shuffles still to be counted are held in a window: a thread takes shuffle i only while
 * i is within WINDOW of the first one not yet counted. */
#define WINDOW (2 * RANDD_IID_MAX_THREADS)

/* Shared by the threads, under lock: the shuffles handed out, the results waiting to be
 * counted in order, each statistic's counts, which are still undecided. */
struct permutation_run {
    pthread_mutex_t lock;
    pthread_cond_t moved;       /* the count moved on, or the run ended */
    const struct iid_data *d;
    const uint8_t *sym, *raw;   /* the data as given */
    const uint8_t *seed;
    bool count_length;          /* the shuffles' compression statistic is counted */
    const double *t;            /* the statistics on the data, once t_ready */
    bool t_ready;
    struct randd_iid_result *out;
    bool active[RANDD_IID_STATISTICS];
    unsigned handed, counted, undecided;
    int error;
    struct ea_progress progress;
    struct {
        bool ready;
        double tp[RANDD_IID_STATISTICS];
    } slot[WINDOW];
};

/* Fisher-Yates over a fresh copy of the data as given; statistics() ranks it. */
static int shuffle(struct stream *g, const struct permutation_run *run, unsigned index,
                   uint8_t *raw)
{
    size_t n = run->d->n;
    int rc;

    memcpy(raw, run->raw, n);
    if ((rc = stream_start(g, run->seed, index)) < 0)
        return rc;
    for (size_t i = n - 1; i > 0; i--) {
        uint32_t j;
        uint8_t tmp;

        if ((rc = draw_below(g, (uint32_t)i, &j)) < 0)
            return rc;
        tmp = raw[i], raw[i] = raw[j], raw[j] = tmp;
    }
    return 0;
}

/* Under lock: counts the waiting results in shuffle order, as ea_iid counts them, so that
 * which thread finished first never changes a count. A statistic decided by an earlier
 * shuffle ignores the later ones. */
static void count_ready(struct permutation_run *run)
{
    while (run->t_ready && run->slot[run->counted % WINDOW].ready) {
        const double *tp = run->slot[run->counted % WINDOW].tp;

        run->slot[run->counted % WINDOW].ready = false;
        run->counted++;
        if (run->undecided == 0)
            continue;
        for (unsigned j = 0; j < RANDD_IID_STATISTICS; j++) {
            unsigned *c = run->out->counts[j];

            if (!run->active[j])
                continue;
            c[tp[j] > run->t[j] ? 0 : tp[j] == run->t[j] ? 1 : 2]++;
            if (randd_iid_decided(c)) {
                run->active[j] = false;
                run->undecided--;
            }
        }
        run->out->shuffles++;
        if (run->out->shuffles % 16 == 0 || run->undecided == 0)
            randd_ea_tick(&run->progress, RANDD_IID_PERMUTATIONS * (RANDD_IID_STATISTICS -
                          run->undecided) / RANDD_IID_STATISTICS + run->out->shuffles *
                          run->undecided / RANDD_IID_STATISTICS, RANDD_IID_PERMUTATIONS);
    }
    pthread_cond_broadcast(&run->moved);
}

static void *permutation_worker(void *arg)
{
    struct permutation_run *run = arg;
    const size_t n = run->d->n;
    struct stream g = { EVP_CIPHER_CTX_new(), { 0 }, 0 };
    struct scratch w;
    int rc;

    if ((rc = scratch_new(&w, run->sym, run->raw, n, run->count_length)) == 0 && !g.ctx)
        rc = -ENOMEM;
    pthread_mutex_lock(&run->lock);
    for (;;) {
        bool active[RANDD_IID_STATISTICS];
        double tp[RANDD_IID_STATISTICS];
        unsigned index;

        if (rc < 0 && run->error == 0)
            run->error = rc;
        if (run->error || run->undecided == 0 || run->handed == RANDD_IID_PERMUTATIONS)
            break;
        if (run->handed - run->counted >= WINDOW) {
            pthread_cond_wait(&run->moved, &run->lock);
            continue;
        }
        index = run->handed++;
        /* still undecided now, so at least those undecided when this shuffle is counted */
        memcpy(active, run->active, sizeof(active));
        pthread_mutex_unlock(&run->lock);

        if ((rc = shuffle(&g, run, index, w.raw)) == 0)
            statistics(run->d, &w, active, tp);

        pthread_mutex_lock(&run->lock);
        if (rc == 0) {
            memcpy(run->slot[index % WINDOW].tp, tp, sizeof(tp));
            run->slot[index % WINDOW].ready = true;
            count_ready(run);
        }
    }
    pthread_cond_broadcast(&run->moved);
    pthread_mutex_unlock(&run->lock);
    EVP_CIPHER_CTX_free(g.ctx);
    OPENSSL_cleanse(&g, sizeof(g));
    scratch_free(&w, n);
    return NULL;
}

/* The shuffles start before the data's own statistics are known (the tests before them take
 * a few tenths of a second on a million samples, on one CPU): their results wait in the
 * window until permutation_finish gives the statistics. */
struct permutation_threads {
    pthread_t tid[RANDD_IID_MAX_THREADS];
    unsigned started;
};

static int permutation_start(struct permutation_run *run, struct permutation_threads *p,
                             unsigned threads)
{
    p->started = 0;
    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);

        threads = cpus < 1 ? 1 : cpus > RANDD_IID_MAX_THREADS ? RANDD_IID_MAX_THREADS :
                  (unsigned)cpus;
    }
    for (unsigned j = 0; j < RANDD_IID_STATISTICS; j++)
        run->active[j] = true;
    run->undecided = RANDD_IID_STATISTICS;
    if (pthread_mutex_init(&run->lock, NULL) != 0)
        return -ENOMEM;
    if (pthread_cond_init(&run->moved, NULL) != 0) {
        pthread_mutex_destroy(&run->lock);
        return -ENOMEM;
    }
    while (p->started < threads &&
           pthread_create(&p->tid[p->started], NULL, permutation_worker, run) == 0)
        p->started++;
    return 0;
}

/* Gives the threads the data's statistics (rc 0) or stops them (rc < 0), and waits. */
static int permutation_finish(struct permutation_run *run, struct permutation_threads *p,
                              int rc)
{
    pthread_mutex_lock(&run->lock);
    if (rc < 0 && run->error == 0)
        run->error = rc;
    if (rc == 0) {
        run->t_ready = true;
        count_ready(run);
    } else {
        /* Stopped: nothing is counted against statistics the data never got (t is not set),
         * and a thread waiting for room in the window sees the error. */
        pthread_cond_broadcast(&run->moved);
    }
    pthread_mutex_unlock(&run->lock);
    if (p->started == 0 && rc == 0)
        permutation_worker(run);    /* no thread could start: this one shuffles */
    for (unsigned i = 0; i < p->started; i++)
        pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&run->moved);
    pthread_mutex_destroy(&run->lock);
    return run->error;
}

/* The shuffles decide nothing once chi-square or LRS failed: the data are not IID whatever
 * they say. The progress says so at once; with RANDD_IID_STOP_WHEN_SETTLED they stop. */
static int settle_early(struct permutation_run *run, struct permutation_threads *p,
                        struct randd_iid_result *out, unsigned flags)
{
    int rc;

    if (out->chi_square_passed && out->lrs_passed)
        return 0;
    out->settled_early = true;
    pthread_mutex_lock(&run->lock);
    run->progress.what = flags & RANDD_IID_STOP_WHEN_SETTLED ?
                         "verdict settled (not IID): stopping the shuffles" :
                         "verdict settled (not IID); shuffles go on for the record";
    pthread_mutex_unlock(&run->lock);
    if (!(flags & RANDD_IID_STOP_WHEN_SETTLED))
        return 0;
    out->permutations_stopped = true;
    rc = permutation_finish(run, p, -ECANCELED);
    return rc == -ECANCELED ? 0 : rc;          /* else an error of the shuffles' own */
}

/* --- the track ---------------------------------------------------------------------------- */

static double median_of(const uint8_t *sym, size_t n, bool binary)
{
    size_t count[256] = { 0 }, seen = 0;
    int lower = -1, upper = -1;

    if (binary)
        return 0.5;     /* 5.1.5: the median of binary data is taken as 0.5 */
    for (size_t i = 0; i < n; i++)
        count[sym[i]]++;
    for (int v = 0; v < 256 && upper < 0; v++) {
        seen += count[v];
        if (lower < 0 && seen >= n / 2)
            lower = v;                  /* sorted[n / 2 - 1] */
        if (seen >= n / 2 + 1)
            upper = v;                  /* sorted[n / 2] */
    }
    return n % 2 ? upper : (lower + upper) / 2.0;
}

int randd_iid_assess(const uint8_t *samples, size_t n, unsigned bits, unsigned flags,
                     struct randd_iid_result *out, randd_ea_progress_fn *progress, void *arg)
{
    struct randd_iid_options o = { flags, NULL, 0 };

    return randd_iid_assess_with(samples, n, bits, &o, out, progress, arg);
}

/* One text's bzip2 length from libbz2 and, when asked, whether the count gives the same. */
struct length_check {
    struct scratch w;
    const uint8_t *raw;
    size_t n;
    double length;
    bool agreed;
};

static void *length_check(void *arg)
{
    struct length_check *c = arg;
    size_t len = decimal_text(c->w.text, c->raw, c->n);

    c->length = compressed_length(&c->w, len);
    c->agreed = c->w.counter && c->length > 0.0 &&
                (double)randd_bzlen_count(c->w.counter, (const uint8_t *)c->w.text, len) ==
                c->length;
    return NULL;
}

/* The data's compression statistic, from libbz2, and whether the count (bzip2_length.h) may
 * stand in for libbz2 on the shuffles: only when it gives libbz2's length to the byte on the
 * data and on shuffle 0, the two checked at once on two threads. A count that differs from
 * libbz2 on other shuffles but on neither of these would be a bug in bzip2_length.c that its
 * tests, which compare the two on thousands of texts, did not find. */
static int compression_on_data(const struct permutation_run *run, bool try_count, double *t,
                               bool *counted)
{
    struct length_check c[2] = { { .raw = run->raw, .n = run->d->n },
                                 { .n = run->d->n } };
    struct stream g = { NULL, { 0 }, 0 };
    pthread_t tid;
    bool threaded = false;
    int rc;

    *counted = false;
    if ((rc = scratch_new(&c[0].w, run->raw, run->raw, run->d->n, try_count)) < 0)
        return rc;
    if (try_count) {
        if ((rc = scratch_new(&c[1].w, run->raw, run->raw, run->d->n, true)) < 0)
            goto out;
        c[1].raw = c[1].w.raw;
        if (!(g.ctx = EVP_CIPHER_CTX_new())) {
            rc = -ENOMEM;
            goto out;
        }
        if ((rc = shuffle(&g, run, 0, c[1].w.raw)) < 0)
            goto out;
        threaded = pthread_create(&tid, NULL, length_check, &c[1]) == 0;
        if (!threaded)
            length_check(&c[1]);
    }
    length_check(&c[0]);
    if (threaded)
        pthread_join(tid, NULL);
    *t = c[0].length;
    *counted = try_count && c[0].agreed && c[1].agreed;
out:
    EVP_CIPHER_CTX_free(g.ctx);
    OPENSSL_cleanse(&g, sizeof(g));
    scratch_free(&c[0].w, run->d->n);
    if (try_count)
        scratch_free(&c[1].w, run->d->n);
    return rc;
}

/* A fresh seed for the shuffles from librandd's generator. */
static int fresh_seed(uint8_t seed[RANDD_IID_SEED_BYTES])
{
    randd_rng *rng;
    int rc = randd_rng_new(&rng, NULL);

    if (rc < 0)
        return rc;
    rc = randd_rng_bytes(rng, seed, RANDD_IID_SEED_BYTES);
    randd_rng_free(rng);
    return rc;
}

int randd_iid_assess_with(const uint8_t *samples, size_t n, unsigned bits,
                          const struct randd_iid_options *options,
                          struct randd_iid_result *out, randd_ea_progress_fn *progress,
                          void *arg)
{
    static const struct randd_iid_options defaults = { 0, NULL, 0 };
    unsigned flags;
    struct ea_progress p = { progress, arg, 0.0, 0.0, "" };
    uint8_t rank[256] = { 0 }, *sym = NULL, *bitstring = NULL;
    bool present[256] = { false };
    struct iid_data d = { n, 0, 0, false, 0.0, 0.0, { 0 } };
    double t[RANDD_IID_STATISTICS];
    struct permutation_run run = { .d = &d, .raw = samples, .seed = out->seed, .t = t,
                                   .out = out, .progress = { progress, arg, 0.03, 0.97,
                                                             "permutation tests" } };
    struct permutation_threads threads;
    bool shuffling = false;     /* threads started, not yet joined */
    uint64_t sum = 0;
    unsigned width;
    int rc;

    if (!options)
        options = &defaults;
    flags = options->flags;
    if (n < 2 || bits > 8 ||
        (flags & ~(RANDD_IID_NO_PERMUTATIONS | RANDD_IID_LIBBZ2 | RANDD_IID_STOP_WHEN_SETTLED)) ||
        options->threads > RANDD_IID_MAX_THREADS)
        return -EINVAL;
    if (n > RANDD_EA_MAX_SAMPLES)
        return -E2BIG;
    width = randd_ea_width(samples, n);
    if (bits && width > bits)
        return -ERANGE;
    d.bits = bits ? bits : width ? width : 1;

    memset(out, 0, sizeof(*out));
    out->h_bitstring = NAN;
    out->bits = d.bits;
    out->samples = n;
    for (size_t i = 0; i < n; i++) {
        present[samples[i]] = true;
        sum += samples[i];
    }
    for (unsigned v = 0; v < 256; v++)
        if (present[v])
            d.rank[v] = rank[v] = (uint8_t)d.k++;
    out->symbols = d.k;
    if (d.k < 2)
        return -EDOM;
    d.binary = out->binary = d.k == 2;
    if (!(sym = malloc(n)))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        sym[i] = rank[samples[i]];
    d.raw_mean = out->raw_mean = (double)sum / (double)n;
    d.median = out->median = median_of(sym, n, d.binary);
    if (!(flags & RANDD_IID_NO_PERMUTATIONS)) {
        if (options->seed)
            memcpy(out->seed, options->seed, RANDD_IID_SEED_BYTES);
        else if ((rc = fresh_seed(out->seed)) < 0)
            goto out;
        run.sym = sym;
        if ((rc = compression_on_data(&run, !(flags & RANDD_IID_LIBBZ2), &t[COMPRESSION],
                                      &run.count_length)) < 0)
            goto out;
        out->compression_counted = run.count_length;
        if ((rc = permutation_start(&run, &threads, options->threads)) < 0)
            goto out;
        shuffling = true;
    }

    p.what = "most common value";
    randd_ea_tick(&p, 0, 1);
    most_common(sym, n, &out->literal);
    out->h_original = -log2(out->literal.p_u);
    out->h_assessed = out->h_original;
    if (!d.binary) {
        size_t nbits = n * d.bits;

        if (!(bitstring = malloc(nbits))) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < nbits; i++)
            bitstring[i] = samples[i / d.bits] >> (d.bits - 1 - i % d.bits) & 1;
        most_common(bitstring, nbits, &out->bitstring);
        randd_ea_release(bitstring, nbits);
        bitstring = NULL;
        out->bitstring_bits = nbits;
        out->h_bitstring = -log2(out->bitstring.p_u);
        out->h_assessed = fmin(out->h_original, d.bits * out->h_bitstring);
    }

    p.what = "chi-square tests";
    randd_ea_tick(&p, 0, 1);
    if ((rc = chi_square(sym, &d, out)) < 0)
        goto out;
    p.what = "LRS test";
    randd_ea_tick(&p, 0, 1);
    if ((rc = lrs_test(sym, &d, out)) < 0)
        goto out;
    if (shuffling) {
        rc = settle_early(&run, &threads, out, flags);
        shuffling = !out->permutations_stopped;      /* stopped: joined, whatever rc says */
        if (rc < 0)
            goto out;
    }

    p.what = "statistics";
    p.base = 0.02;
    randd_ea_tick(&p, 0, 1);
    {
        struct scratch w;
        bool all[RANDD_IID_STATISTICS];

        for (unsigned j = 0; j < RANDD_IID_STATISTICS; j++)
            all[j] = true;
        all[COMPRESSION] = !shuffling;          /* else compression_on_data gave it */
        if ((rc = scratch_new(&w, sym, samples, n, false)) < 0)
            goto out;
        statistics(&d, &w, all, t);
        scratch_free(&w, n);
        memcpy(out->statistics, t, sizeof(t));
    }
    if (shuffling) {
        shuffling = false;
        if ((rc = permutation_finish(&run, &threads, 0)) < 0)
            goto out;
        out->permutations_ran = true;
        out->permutation_passed = true;
        for (unsigned j = 0; j < RANDD_IID_STATISTICS; j++)
            if (!randd_iid_statistic_passed(out->counts[j]))
                out->permutation_passed = false;
    }
    out->iid = out->chi_square_passed && out->lrs_passed && out->permutation_passed;
    p.base = 1.0, p.span = 0.0, p.what = "done";
    randd_ea_tick(&p, 1, 1);
    rc = 0;
out:
    if (shuffling)
        permutation_finish(&run, &threads, rc);
    randd_ea_release(sym, n);
    return rc;
}
