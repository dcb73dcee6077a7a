/* SP 800-90B 3.1.5 conditioning (entropy_conditioning.h): Output_Entropy in the log domain,
 * and the vetted and non-vetted h_out. */
#include "entropy_conditioning.h"

#include <errno.h>
#include <math.h>

#define LN2 0.693147180559945309417232121458176568L

/* log2(1 - 2^-x) for x > 0, exact however small or large x is. */
static long double log2_one_minus_exp2_neg(long double x)
{
    return log2l(-expm1l(-x * LN2));
}

/* log2(2^u + 2^v). */
static long double log2_sum(long double u, long double v)
{
    long double hi = fmaxl(u, v), lo = fminl(u, v);

    return hi + log1pl(exp2l(lo - hi)) / LN2;
}

long double randd_ea_output_entropy(unsigned n_in, unsigned n_out, unsigned nw,
                                    long double h_in)
{
    unsigned n = n_out < (nw < n_in ? nw : n_in) ? n_out : (nw < n_in ? nw : n_in);
    long double a = (long double)n_in - n;
    /* log2(2^n_in P_low) = log2(1 - 2^-h_in) - log2(1 - 2^-n_in) */
    long double low = log2_one_minus_exp2_neg(h_in) - log2_one_minus_exp2_neg(n_in);
    long double psi = log2_sum(-h_in, low - n);
    long double omega = low - n + log1pl(sqrtl(2.0L * n * LN2) * exp2l(-a / 2)) / LN2;

    return -fminl(0.0L, fmaxl(psi, omega));    /* psi and omega count at most 1 */
}

int randd_ea_conditioning(bool vetted, unsigned n_in, unsigned n_out, unsigned nw,
                          long double h_in, long double h_prime,
                          struct randd_ea_conditioning *out)
{
    if (n_in == 0 || n_out == 0 || nw == 0 || !(h_in > 0.0L && h_in <= n_in) ||
        (!vetted && !(h_prime > 0.0L && h_prime <= 1.0L)))
        return -EINVAL;
    out->vetted = vetted;
    out->n_in = n_in;
    out->n_out = n_out;
    out->nw = nw < n_in ? nw : n_in;
    out->h_in = h_in;
    out->output_entropy = randd_ea_output_entropy(n_in, n_out, nw, h_in);
    out->h_out = out->output_entropy;
    if (vetted) {
        out->h_prime = out->full_bound = out->h_prime_bound = NAN;
        return 0;
    }
    out->h_prime = h_prime;
    out->full_bound = 0.999L * n_out;
    out->h_prime_bound = h_prime * n_out;
    out->h_out = fminl(out->h_out, fminl(out->full_bound, out->h_prime_bound));
    return 0;
}
