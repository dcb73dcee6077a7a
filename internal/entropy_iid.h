/* SP 800-90B section 5: the tests that decide whether samples may be taken as IID
 * (independent and identically distributed), and the most-common-value estimate an IID source
 * is credited with (6.3.1), computed as NIST's `ea_iid -i -a` computes them, so the figures
 * agree with it. For `randctl assess --iid`. Internal to randd, like entropy_assess.h.
 *
 * What runs, in ea_iid's order:
 *  - H_original (MCV of the samples, renumbered by rank) and, on data of more than two
 *    values, H_bitstring (MCV of all W*n bits, most significant first);
 *  - the chi-square independence and goodness-of-fit tests (5.2.1, 5.2.2; 5.2.3-5.2.4 for
 *    binary data), binned as ea_iid bins them; each fails at a p-value below 0.001;
 *  - the longest-repeated-substring test (5.2.5), which fails when so long a repeat is less
 *    than 0.1% likely;
 *  - the 19 statistics of 5.1 on the data as given, then on 10,000 Fisher-Yates shuffles of it.
 *    C[i][0] counts the shuffles whose statistic came out greater, C[i][1] equal, C[i][2]
 *    less. A statistic is decided, and no longer computed, once C[i][0]+C[i][1] > 5 and
 *    C[i][1]+C[i][2] > 5; the shuffling stops when all 19 are. A statistic still undecided
 *    after 10,000 shuffles fails: the data ranks at an extreme of its own shuffles.
 * The samples are IID by this track when all three tests pass.
 *
 * Shuffle i is a fresh Fisher-Yates shuffle of the data as given, drawn from ChaCha20 keyed
 * with a 32-byte seed and i as its nonce; the seed comes from librandd's in-process generator
 * (randd_rng) unless the caller gives one. Shuffles run on every online CPU (at most 8), but
 * their results are counted in the order of i, so one seed gives the same counts on any
 * number of threads: a run can be repeated. Without a seed given the counts differ from run
 * to run, as ea_iid's do; everything before them is deterministic.
 *
 * The compression statistic (the bzip2 length of the values in decimal) is four fifths of a
 * shuffle's time when libbz2 compresses it. So the shuffles count the length instead
 * (bzip2_length.h, several times faster), once the count has given libbz2's own figure, to
 * the byte, on the data: compression_counted says so. When the two differ, or with
 * RANDD_IID_LIBBZ2, libbz2 compresses every shuffle, as ea_iid does. Memory: about 14 bytes
 * per sample (suffix array, each thread's copies, the compression test's text and bzip2's
 * work arrays), and 23 MB a thread for the count's, wiped before it is freed, as the samples
 * may be secret. */
#ifndef RANDD_ENTROPY_IID_H
#define RANDD_ENTROPY_IID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entropy_assess.h"

#define RANDD_IID_STATISTICS   19
#define RANDD_IID_PERMUTATIONS 10000
#define RANDD_IID_NO_PERMUTATIONS 1u    /* flag: stop before the permutation tests */
#define RANDD_IID_LIBBZ2       4u       /* flag: libbz2 compresses every shuffle (below) */
/* flag: once the chi-square or LRS test fails, the verdict is settled (not IID) whatever the
 * shuffles say: stop them then. Without it they run on, so the record is whole. */
#define RANDD_IID_STOP_WHEN_SETTLED 8u
#define RANDD_IID_SEED_BYTES   32
#define RANDD_IID_MAX_THREADS  8

struct randd_iid_options {
    unsigned flags;             /* RANDD_IID_NO_PERMUTATIONS, _LIBBZ2, _STOP_WHEN_SETTLED */
    const uint8_t *seed;        /* RANDD_IID_SEED_BYTES, or NULL: a fresh one from randd_rng */
    unsigned threads;           /* 0: every online CPU; at most RANDD_IID_MAX_THREADS */
};

/* ea_iid's names of the 19 statistics: "excursion", ..., "compression". */
extern const char *const randd_iid_names[RANDD_IID_STATISTICS];

struct randd_iid_mcv {
    size_t mode;                /* occurrences of the most common value */
    double p_hat, p_u;          /* its share, and the share's 99% upper bound */
};

struct randd_iid_chi_square {
    double score;
    int df;                     /* degrees of freedom (0: too few samples to test) */
    double p_value;
};

struct randd_iid_result {
    unsigned bits;              /* W */
    unsigned symbols;           /* k, distinct values */
    size_t samples;             /* n */
    bool binary;                /* k = 2: 5.1's conversions and 5.2.3-5.2.4 apply */
    double raw_mean, median;    /* of the values as given; the median of their ranks */

    struct randd_iid_mcv literal, bitstring;   /* bitstring: mode 0 when it did not run */
    size_t bitstring_bits;      /* 0: not run (binary data) */
    double h_original;          /* bits per sample */
    double h_bitstring;         /* bits per bit; NAN when not run */
    double h_assessed;          /* min(H_original, W * H_bitstring) */

    struct randd_iid_chi_square independence, goodness_of_fit;
    bool chi_square_passed;

    double lrs_p_col;           /* collision probability of one symbol */
    size_t lrs_length;          /* W, the longest repeated substring */
    double lrs_probability;     /* Pr(X >= 1): a repeat that long somewhere, if IID */
    bool lrs_passed;

    double statistics[RANDD_IID_STATISTICS];       /* on the data as given */
    bool permutations_ran;
    uint8_t seed[RANDD_IID_SEED_BYTES];            /* the shuffles' seed, when they ran */
    unsigned shuffles;          /* shuffles whose statistics were counted */
    unsigned counts[RANDD_IID_STATISTICS][3];      /* C[i][0..2] */
    bool permutation_passed;    /* false also when the permutation tests did not run */
    bool compression_counted;   /* the shuffles' compression statistic was counted (below) */

    bool iid;                   /* all three tests passed */
    bool settled_early;         /* not IID before the shuffles ended: chi-square or LRS failed */
    bool permutations_stopped;  /* ... and they were stopped (RANDD_IID_STOP_WHEN_SETTLED) */
};

/* Runs the track on n samples, one per byte, each a value of bits bits (1..8; 0: the width of
 * the largest value). flags: 0 or a mix of the two above. progress (may be NULL) is called
 * from whichever thread made progress, never two at once. Samples of one value cannot be
 * tested: -EDOM. Returns 0, -EINVAL (n < 2, bits > 8, unknown flags), -ERANGE (a value wider
 * than bits), -E2BIG (n > RANDD_EA_MAX_SAMPLES), -EDOM, -ENOMEM, or the generator's error. */
int randd_iid_assess(const uint8_t *samples, size_t n, unsigned bits, unsigned flags,
                     struct randd_iid_result *out, randd_ea_progress_fn *progress, void *arg);
/* The same with options (NULL: as randd_iid_assess with flags 0); also -EINVAL for threads
 * above RANDD_IID_MAX_THREADS. */
int randd_iid_assess_with(const uint8_t *samples, size_t n, unsigned bits,
                          const struct randd_iid_options *options,
                          struct randd_iid_result *out, randd_ea_progress_fn *progress,
                          void *arg);

/* Whether statistic i's counts decide it, and whether they pass it (5.1 step 5). */
bool randd_iid_decided(const unsigned c[3]);
bool randd_iid_statistic_passed(const unsigned c[3]);

/* The chi-square p-value: the upper regularised incomplete gamma Q(df/2, score/2). */
double randd_iid_chi_square_p(double score, int df);

#endif
