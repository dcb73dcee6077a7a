/* SP 800-90B section 3.1.4: the restart tests on a row dataset of 1,000 restarts of 1,000
 * samples each (one sample per byte, restart i's samples at [1000 i, 1000 i + 1000)), as
 * NIST's ea_restart -n computes them: the sanity check (3.1.4.3), then the non-IID
 * assessment of the rows and of the columns (3.1.4.2) with entropy_assess.c's estimators,
 * and the validation min(H_r, H_c) >= H_I / 2. Internal to randd, for `randctl assess
 * --restart`.
 *
 * The sanity check's cutoff: ea_restart finds X_cutoff by simulating, five million times,
 * the most frequent value's count in 1,000 samples drawn from the worst distribution an
 * initial estimate H_I allows (floor(2^H_I) values of probability p = 2^-H_I, the rest shared
 * by the other values seen), and takes the (1 - alpha) quantile, alpha = 1 - 0.99^(1/2000)
 * (a 1% false-failure rate over 2,000 rows and columns). Here that quantile is computed
 * exactly (the multinomial's largest count through Poisson generating functions), so it is
 * the same on every run; ea_restart's simulated figure can differ from run to run by one
 * where the exact tail lies close to alpha. */
#ifndef RANDD_ENTROPY_RESTART_H
#define RANDD_ENTROPY_RESTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entropy_assess.h"

#define RANDD_EA_RESTARTS          1000u     /* rows: restarts (SP 800-90B 3.1.4.1) */
#define RANDD_EA_RESTART_SAMPLES   1000u     /* columns: samples after each restart */
#define RANDD_EA_RESTART_MATRIX    (RANDD_EA_RESTARTS * RANDD_EA_RESTART_SAMPLES)

struct randd_ea_restart_result {
    unsigned bits;              /* W */
    unsigned symbols;           /* k, distinct values in the matrix */
    double h_initial;           /* H_I, the claim under test */
    double alpha;               /* 1 - 0.99^(1/2000) */
    unsigned x_cutoff;          /* a row or column whose most common value is seen more
                                 * often than this fails the sanity check */
    uint16_t row_max[RANDD_EA_RESTARTS];          /* each row's most common value's count */
    uint16_t col_max[RANDD_EA_RESTART_SAMPLES];   /* each column's */
    unsigned x_rows, x_cols, x_max;               /* their maxima, and the larger */
    unsigned rows_over, cols_over;                /* rows and columns over x_cutoff */
    bool sanity_passed;
    /* The rest only when the sanity check passed (otherwise NAN, as ea_restart stops). */
    struct randd_ea_result rows, cols;  /* literal track only, as ea_restart runs it */
    double h_r, h_c;            /* min(W, the rows' / the columns' estimates) */
    bool validation_passed;     /* min(H_r, H_c) >= H_I / 2 */
    double h_restart;           /* min(H_r, H_c, H_I) when both checks passed; else NAN */
};

/* alpha and X_cutoff for k distinct values and the claim h_initial (0 <= H_I <= log2 k).
 * Returns the cutoff (at most 1000). */
unsigned randd_ea_restart_cutoff(unsigned k, double h_initial, double alpha);

/* The restart tests on n = RANDD_EA_RESTART_MATRIX samples of bits bits (1..8; 0: the width
 * of the largest value), claim h_initial bits per sample. A matrix of one value only has no
 * entropy: symbols = 1, h_restart = 0, nothing else run. Returns 0, -EINVAL (n not a
 * 1000 x 1000 matrix, bits > 8, h_initial not in [0, W]), -ERANGE (a value wider than bits),
 * -EDOM (h_initial above log2 k: no distribution over the k values seen has that much
 * min-entropy, so no worst case to check against), -ENOMEM. */
int randd_ea_restart(const uint8_t *samples, size_t n, unsigned bits, double h_initial,
                     struct randd_ea_restart_result *out, randd_ea_progress_fn *progress,
                     void *arg);

#endif
