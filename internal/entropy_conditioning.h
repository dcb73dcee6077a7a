/* SP 800-90B section 3.1.5: the entropy a conditioning component's output may be credited
 * with, as NIST's ea_conditioning computes it. For `randctl assess --conditioning` and for
 * the daemon, which reports it for its own BLAKE2b conditioning (daemon/pool.c). Internal to
 * randd.
 *
 * Output_Entropy (3.1.5.1.2) of a function of n_in input bits, n_out output bits and
 * narrowest internal width nw, given h_in bits of min-entropy in its input:
 *   P_high = 2^-h_in, P_low = (1 - P_high) / (2^n_in - 1), n = min(n_out, nw),
 *   psi = 2^(n_in - n) P_low + P_high, U = 2^(n_in - n) + sqrt(2 n 2^(n_in - n) ln 2),
 *   omega = U P_low, Output_Entropy = -log2(max(psi, omega)),
 * with nw first lowered to n_in (Appendix E) and psi, omega at most 1, as ea_conditioning
 * does. It is computed in the log domain in long double, so any n_in (to 2^32 - 1) works
 * without arbitrary precision: the figures agree with ea_conditioning's MPFR ones to long
 * double's precision.
 * A vetted function's (3.1.5.1.1) h_out is Output_Entropy; a non-vetted one's (3.1.5.2) is
 * min(Output_Entropy, 0.999 n_out, h' n_out), h' being the min-entropy per bit measured on
 * the function's output (a conditioned sequential dataset). */
#ifndef RANDD_ENTROPY_CONDITIONING_H
#define RANDD_ENTROPY_CONDITIONING_H

#include <stdbool.h>

struct randd_ea_conditioning {
    bool vetted;
    unsigned n_in, n_out, nw;   /* nw as used: at most n_in */
    long double h_in;
    long double h_prime;        /* non-vetted only; NAN when vetted */
    long double output_entropy; /* Output_Entropy(n_in, n_out, nw, h_in) */
    long double full_bound;     /* 0.999 n_out (non-vetted) */
    long double h_prime_bound;  /* h' n_out (non-vetted) */
    long double h_out;
};

/* Output_Entropy alone; the arguments as below. */
long double randd_ea_output_entropy(unsigned n_in, unsigned n_out, unsigned nw,
                                    long double h_in);

/* h_out of a vetted (h_prime ignored) or non-vetted function. Returns 0, or -EINVAL when
 * n_in, n_out or nw is 0, h_in is not in (0, n_in], or (non-vetted) h_prime not in (0, 1]:
 * the ranges ea_conditioning accepts. */
int randd_ea_conditioning(bool vetted, unsigned n_in, unsigned n_out, unsigned nw,
                          long double h_in, long double h_prime,
                          struct randd_ea_conditioning *out);

#endif
