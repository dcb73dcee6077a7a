/* SP 800-90B section 6.3: the ten non-IID min-entropy estimators and the assessment that
 * combines them (section 3.1.3), computed as NIST's ea_non_iid computes them, so the figures
 * agree with it. For the daemon, which assesses a noise source's raw samples, and for
 * `randctl assess`. Internal to randd: not part of randd.h nor of librandd.so.
 *
 * Units: every estimate is min-entropy in bits per symbol of the track it ran on. On the
 * literal track a symbol is one sample (0..W bits); on the bitstring track it is one bit
 * (0..1). h_assessed is in bits per sample.
 *
 * The tracks, as ea_non_iid runs them (k = the number of distinct values in the samples):
 *  - literal: the samples themselves, each value renumbered by its rank among the values
 *    present (0..k-1). Most common value, t-tuple, LRS and the four predictors always;
 *    collision, Markov and compression only when k = 2 (the standard defines them for binary
 *    data only).
 *  - bitstring: only when k > 2. Each sample expanded to its W bits, most significant first;
 *    all ten estimators. With RANDD_EA_TRUNCATE (ea_non_iid -t) only the first 1,000,000
 *    bits; by default all of them (ea_non_iid -a).
 *  H_original = min(W, literal estimates), H_bitstring = min(1, bitstring estimates),
 *  h_assessed = min(W, H_original, W * H_bitstring).
 * An estimator that cannot run (too few samples, nothing repeats often enough) is left out
 * of the minimum, as ea_non_iid leaves it out.
 *
 * Cost: time linear in n (the predictors look back a bounded window); a million 1-bit
 * samples take about half a second of CPU, a million 8-bit ones (an 8-million-bit
 * bitstring) about six. Memory: 9 bytes per symbol of the longer track for the suffix array
 * and its LCP, and, on data of many values, up to about 100 MB for the MultiMMC
 * dictionaries (ea_non_iid's caps bound them, whatever n). All of it is wiped before it is
 * freed: the samples may be secret (a source may feed the samples it assessed to the pool). */
#ifndef RANDD_ENTROPY_ASSESS_H
#define RANDD_ENTROPY_ASSESS_H

#include <stddef.h>
#include <stdint.h>

/* The estimators, in the order of SP 800-90B 6.3. randd_ea_names[] names them. */
enum randd_ea_estimator {
    RANDD_EA_MCV,           /* 6.3.1  most common value */
    RANDD_EA_COLLISION,     /* 6.3.2  binary only */
    RANDD_EA_MARKOV,        /* 6.3.3  binary only */
    RANDD_EA_COMPRESSION,   /* 6.3.4  binary only */
    RANDD_EA_T_TUPLE,       /* 6.3.5 */
    RANDD_EA_LRS,           /* 6.3.6  longest repeated substring */
    RANDD_EA_MULTI_MCW,     /* 6.3.7  multi most common in window prediction */
    RANDD_EA_LAG,           /* 6.3.8  lag prediction */
    RANDD_EA_MULTI_MMC,     /* 6.3.9  multi Markov model with counting prediction */
    RANDD_EA_LZ78Y,         /* 6.3.10 LZ78Y prediction */
    RANDD_EA_ESTIMATORS
};

/* Short names ("most common value", ...) and the standard's section ("6.3.1"). */
extern const char *const randd_ea_names[RANDD_EA_ESTIMATORS];
extern const char *const randd_ea_sections[RANDD_EA_ESTIMATORS];

#define RANDD_EA_MAX_SAMPLES  ((1u << 28) - 1)  /* bitstrings are indexed by int32_t */
#define RANDD_EA_MIN_SAMPLES  1000000u    /* what SP 800-90B 3.1.1 asks of a source's data */
#define RANDD_EA_TRUNCATE     1u          /* flag: assess only the first 1,000,000 bitstring bits */
#define RANDD_EA_LITERAL_ONLY 2u          /* flag: no bitstring track (ea_restart runs none) */

struct randd_ea_result {
    unsigned bits;              /* W, the symbol width used */
    unsigned symbols;           /* k, distinct values among the samples */
    size_t samples;             /* n */
    size_t bitstring_bits;      /* bits the bitstring track assessed; 0: it did not run */
    double literal[RANDD_EA_ESTIMATORS];    /* bits per sample; NAN: not run */
    double bitstring[RANDD_EA_ESTIMATORS];  /* bits per bit; NAN: not run */
    double h_original;          /* bits per sample */
    double h_bitstring;         /* bits per bit; NAN when the bitstring track did not run */
    double h_assessed;          /* bits per sample */
};

/* The width of the largest of n samples (0 when all are 0): the width ea_non_iid infers,
 * and the least --bits that holds them. */
unsigned randd_ea_width(const uint8_t *samples, size_t n);

/* Called between and during the estimators: done in [0, 1], what is running now
 * ("bitstring LRS"). */
typedef void randd_ea_progress_fn(void *arg, double done, const char *what);

/* Assesses n samples, one per byte, each a value of bits bits (1..8; 0: the width of the
 * largest value, as ea_non_iid infers it). flags: 0, RANDD_EA_TRUNCATE or
 * RANDD_EA_LITERAL_ONLY (then h_assessed = h_original). progress may be
 * NULL. Samples all of one value have no entropy: every estimate NAN, h_original and
 * h_assessed 0. Returns 0, -EINVAL (n = 0, bits > 8, unknown flags), -ERANGE (a value wider
 * than bits), -E2BIG (n > RANDD_EA_MAX_SAMPLES), -ENOMEM. */
int randd_ea_assess(const uint8_t *samples, size_t n, unsigned bits, unsigned flags,
                    struct randd_ea_result *out, randd_ea_progress_fn *progress, void *arg);

#endif
