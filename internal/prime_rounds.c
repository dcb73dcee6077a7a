/* How many random-base Miller-Rabin rounds a uniformly random odd k-bit candidate needs
 * (prime.h). Owns the average-case error bounds and nothing else: no arithmetic on
 * candidates, no randomness.
 *
 * Damgard, Landrock and Pomerance ("Average case error estimates for the strong probable
 * prime test", Math. Comp. 61, 1993) bound p(k,t): the chance that a candidate drawn
 * uniformly from the odd k-bit numbers, having passed t rounds with independent uniform
 * bases, is composite. It falls far below the 4^-t that holds for any single n, because most
 * composites have far fewer than n/4 liars. The bound needs the candidates to be uniform and
 * fresh, as randd_prime_generate's are; it says nothing about a number someone hands us. */
#include "prime.h"

#include <math.h>

/* log2 of a sum of terms given as log2 values, without leaving double's range (2^-2048
 * terms appear at 4096 bits). */
static double log2_sum(const double *lg, int n)
{
    double top = lg[0], sum = 0;

    for (int i = 1; i < n; i++)
        top = fmax(top, lg[i]);
    for (int i = 0; i < n; i++)
        sum += exp2(lg[i] - top);
    return top + log2(sum);
}

/* -log2 of the best proven bound on p(k,t): 4^-t for every k >= 2 (Burthe, Math. Comp. 65,
 * 1996), and the four estimates of Damgard, Landrock and Pomerance where they apply (as
 * stated in the Handbook of Applied Cryptography, Fact 4.48). */
static double error_bits(double k, double t)
{
    double best = 2 * t, lk = log2(k);

    if (t == 1 && k >= 2)                                   /* k^2 4^(2 - sqrt k) */
        best = fmax(best, -(2 * lk + 2 * (2 - sqrt(k))));
    if ((t == 2 && k >= 88) || (t >= 3 && t <= k / 9 && k >= 21))
        /* k^(3/2) 2^t t^(-1/2) 4^(2 - sqrt(t k)) */
        best = fmax(best, -(1.5 * lk + t - 0.5 * log2(t) + 2 * (2 - sqrt(t * k))));
    if (t >= k / 9 && t <= k / 4 && k >= 21) {
        /* (7/20) k 2^-5t + (1/7) k^(15/4) 2^(-k/2 - 2t) + 12 k 2^(-k/4 - 3t) */
        double lg[3] = { log2(7.0 / 20) + lk - 5 * t,
                         log2(1.0 / 7) + 3.75 * lk - k / 2 - 2 * t,
                         log2(12.0) + lk - k / 4 - 3 * t };

        best = fmax(best, -log2_sum(lg, 3));
    }
    if (t >= k / 4 && k >= 21)                              /* (1/7) k^(15/4) 2^(-k/2 - 2t) */
        best = fmax(best, -(log2(1.0 / 7) + 3.75 * lk - k / 2 - 2 * t));
    return best;
}

unsigned randd_prime_rounds_for(unsigned bits, unsigned error_log2)
{
    unsigned t = 1;

    while (error_bits(bits, t) < error_log2)                /* ends by t = error_log2 / 2 */
        t++;
    return t;
}

unsigned randd_prime_rounds(unsigned bits)
{
    /* OpenSSL 3's bound for BN_generate_prime_ex and BN_check_prime: 64 rounds, 2^-128, up
     * to 2048 bits; 128 rounds, 2^-256, above. */
    return randd_prime_rounds_for(bits, bits > 2048 ? 256 : 128);
}
