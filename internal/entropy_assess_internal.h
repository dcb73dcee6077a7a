/* What the files of the entropy assessment share (entropy_assess*.c): progress reporting,
 * wiping, the predictors' bound, and each file's estimators. Not for other modules; the
 * tests include it to reach the suffix array. */
#ifndef RANDD_ENTROPY_ASSESS_INTERNAL_H
#define RANDD_ENTROPY_ASSESS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "entropy_assess.h"

/* Z for a 99% upper bound: the 0.995 quantile of the standard normal (SP 800-90B 6.3.1). */
#define EA_Z     2.5758293035489008
#define EA_Z_L   2.575829303548900384158L

/* One stage of the assessment owns [base, base + span) of the progress bar. */
struct ea_progress {
    randd_ea_progress_fn *fn;
    void *arg;
    double base, span;
    const char *what;
};

/* Reports done of total within the stage, cheaply enough to call every 64 Ki steps. */
void randd_ea_tick(const struct ea_progress *p, size_t done, size_t total);

/* Wipes len bytes at p and frees it (p may be NULL). */
void randd_ea_release(void *p, size_t len);

/* The min-entropy that correct predictions of n, with the longest run of correct ones,
 * give over an alphabet of k (SP 800-90B 6.3.7 steps 4-5, shared by 6.3.8-6.3.10). */
double randd_ea_prediction_bound(uint64_t correct, uint64_t n, uint64_t longest_run, unsigned k);

/* entropy_assess_tuples.c. Symbols s[i] < k. */
int randd_ea_suffix_array(const uint8_t *s, int32_t n, unsigned k, int32_t *sa);
int randd_ea_tuples(const uint8_t *s, size_t n, unsigned k, double *t_tuple, double *lrs,
                    const struct ea_progress *p);
/* The length of the longest substring of s that occurs twice (overlaps allowed); 0 if none. */
int randd_ea_longest_repeat(const uint8_t *s, size_t n, unsigned k, size_t *length);

/* entropy_assess_predict.c. Symbols s[i] < k; each stores NAN when n is too short. */
int randd_ea_multi_mcw(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p);
int randd_ea_lag(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p);
int randd_ea_multi_mmc(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p);
int randd_ea_lz78y(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p);

#endif
