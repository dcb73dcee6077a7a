/* SP 800-90B 3.1.4 restart tests (entropy_restart.h): the sanity check's exact cutoff, the
 * restart matrix's row and column counts, and the row and column assessments, which are
 * entropy_assess.c's literal track run on the matrix read by rows and by columns. */
#include "entropy_restart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define N RANDD_EA_RESTART_SAMPLES      /* samples in a row (and in a column) */

/* --- the sanity check's cutoff (3.1.4.3) -----------------------------------------------------
 * The count of the most common value among N samples drawn from k values with probabilities
 * q_1..q_k is M; P(M <= x) = P(every count <= x). With independent Poisson(N q_i) counts Y_i,
 * the multinomial is their law given sum Y_i = N, so
 *     P(M <= x) = P(sum Y_i = N and every Y_i <= x) / P(sum Y_i = N),
 * the numerator being the N-th coefficient of the product of the truncated Poisson
 * probability series. The worst case H_I allows has only two probabilities (p on floor(1/p)
 * values, an equal share of the rest on the others), so the product is two powers, each found
 * by squaring. Every term is a probability, so doubles lose nothing that matters: the tail
 * near alpha (~5e-6) comes out with an absolute error near 1e-13. */

/* Poisson(lambda)'s probabilities of 0..x in pmf[0..N], zero beyond x. */
static void truncated_poisson(double lambda, unsigned x, double *pmf)
{
    for (unsigned j = 0; j <= N; j++) {
        if (j > x)
            pmf[j] = 0.0;
        else if (lambda == 0.0)
            pmf[j] = j == 0;
        else
            pmf[j] = exp(-lambda + j * log(lambda) - lgamma(j + 1.0));
    }
}

/* out = a * b, up to the N-th power (out may not be a or b). */
static void series_multiply(const double *a, const double *b, double *out)
{
    memset(out, 0, (N + 1) * sizeof(*out));
    for (unsigned i = 0; i <= N; i++) {
        if (a[i] == 0.0)
            continue;
        for (unsigned j = 0; i + j <= N; j++)
            out[i + j] += a[i] * b[j];
    }
}

/* acc *= base^e; base is used up. */
static void series_power_into(double *acc, double *base, unsigned e)
{
    double t[N + 1];

    for (; e; e >>= 1) {
        if (e & 1) {
            series_multiply(acc, base, t);
            memcpy(acc, t, sizeof(t));
        }
        if (e > 1) {
            series_multiply(base, base, t);
            memcpy(base, t, sizeof(t));
        }
    }
}

struct worst_case {
    double p, q;            /* the likeliest values' probability, the others' */
    unsigned np, nq;        /* how many values have each */
};

/* P(M > x) under w. */
static double most_common_tail(const struct worst_case *w, unsigned x)
{
    double acc[N + 1] = { 1.0 }, base[N + 1], total = N * (w->p * w->np + w->q * w->nq);
    double all_n = exp(-total + N * log(total) - lgamma(N + 1.0));

    truncated_poisson(N * w->p, x, base);
    series_power_into(acc, base, w->np);
    if (w->nq) {
        truncated_poisson(N * w->q, x, base);
        series_power_into(acc, base, w->nq);
    }
    return 1.0 - acc[N] / all_n;
}

unsigned randd_ea_restart_cutoff(unsigned k, double h_initial, double alpha)
{
    struct worst_case w = { exp2(-h_initial), 0.0, 0, 0 };
    unsigned lo = 0, hi = N;

    w.np = (unsigned)floor(1.0 / w.p);
    if (w.np > k)
        w.np = k;
    if (w.np < k) {
        w.nq = k - w.np;
        w.q = fmax(0.0, (1.0 - w.p * w.np) / w.nq);
    }
    while (lo < hi) {                   /* the least x with P(M > x) <= alpha */
        unsigned mid = lo + (hi - lo) / 2;

        if (most_common_tail(&w, mid) <= alpha)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* --- the restart matrix ---------------------------------------------------------------- */

/* The count of the most common value among n samples stride apart. */
static unsigned most_common_count(const uint8_t *s, size_t n, size_t stride)
{
    unsigned count[256] = { 0 }, top = 0;

    for (size_t i = 0; i < n; i++)
        if (++count[s[i * stride]] > top)
            top = count[s[i * stride]];
    return top;
}

static void sanity_check(const uint8_t *m, struct randd_ea_restart_result *out)
{
    for (unsigned r = 0; r < RANDD_EA_RESTARTS; r++) {
        out->row_max[r] = (uint16_t)most_common_count(m + (size_t)r * N, N, 1);
        out->x_rows = out->row_max[r] > out->x_rows ? out->row_max[r] : out->x_rows;
        out->rows_over += out->row_max[r] > out->x_cutoff;
    }
    for (unsigned c = 0; c < N; c++) {
        out->col_max[c] = (uint16_t)most_common_count(m + c, RANDD_EA_RESTARTS, N);
        out->x_cols = out->col_max[c] > out->x_cols ? out->col_max[c] : out->x_cols;
        out->cols_over += out->col_max[c] > out->x_cutoff;
    }
    out->x_max = out->x_rows > out->x_cols ? out->x_rows : out->x_cols;
    out->sanity_passed = out->x_max <= out->x_cutoff;
}

/* --- the assessment (3.1.4.2) ---------------------------------------------------------- */

/* The row assessment owns the first half of the progress bar, the columns the second. */
struct half {
    randd_ea_progress_fn *fn;
    void *arg;
    double base;
    const char *name;
};

static void half_progress(void *arg, double done, const char *what)
{
    struct half *h = arg;
    char line[80];

    snprintf(line, sizeof(line), "%s: %s", h->name, what);
    h->fn(h->arg, h->base + done / 2, line);
}

static int assess_half(const uint8_t *s, unsigned bits, struct half *h,
                       struct randd_ea_result *r)
{
    return randd_ea_assess(s, RANDD_EA_RESTART_MATRIX, bits, RANDD_EA_LITERAL_ONLY, r,
                           h->fn ? half_progress : NULL, h);
}

int randd_ea_restart(const uint8_t *samples, size_t n, unsigned bits, double h_initial,
                     struct randd_ea_restart_result *out, randd_ea_progress_fn *progress,
                     void *arg)
{
    bool present[256] = { false };
    unsigned width;
    uint8_t *cols;
    int rc;

    if (n != RANDD_EA_RESTART_MATRIX || bits > 8)
        return -EINVAL;
    width = randd_ea_width(samples, n);
    if (bits && width > bits)
        return -ERANGE;
    bits = bits ? bits : width ? width : 1;
    if (!(h_initial >= 0.0 && h_initial <= bits))
        return -EINVAL;

    memset(out, 0, sizeof(*out));
    out->bits = bits;
    out->h_initial = h_initial;
    out->h_r = out->h_c = out->h_restart = NAN;
    for (size_t i = 0; i < n; i++)
        present[samples[i]] = true;
    for (unsigned v = 0; v < 256; v++)
        out->symbols += present[v];
    if (out->symbols < 2) {
        out->h_restart = 0.0;               /* one value: no entropy, as ea_restart says */
        return 0;
    }
    if (exp2(h_initial) > out->symbols * (1.0 + 1e-12))
        return -EDOM;

    out->alpha = -expm1(log(0.99) / (RANDD_EA_RESTARTS + N));
    out->x_cutoff = randd_ea_restart_cutoff(out->symbols, h_initial, out->alpha);
    sanity_check(samples, out);
    if (!out->sanity_passed)
        return 0;

    if (!(cols = malloc(n)))
        return -ENOMEM;
    for (unsigned r = 0; r < RANDD_EA_RESTARTS; r++)
        for (unsigned c = 0; c < N; c++)
            cols[(size_t)c * RANDD_EA_RESTARTS + r] = samples[(size_t)r * N + c];
    rc = assess_half(samples, bits, &(struct half){ progress, arg, 0.0, "rows" }, &out->rows);
    if (rc == 0)
        rc = assess_half(cols, bits, &(struct half){ progress, arg, 0.5, "columns" },
                         &out->cols);
    OPENSSL_clear_free(cols, n);
    if (rc < 0)
        return rc;
    out->h_r = out->rows.h_original;
    out->h_c = out->cols.h_original;
    out->validation_passed = fmin(out->h_r, out->h_c) >= h_initial / 2.0;
    if (out->validation_passed)
        out->h_restart = fmin(fmin(out->h_r, out->h_c), h_initial);
    return 0;
}
