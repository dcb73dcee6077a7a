/* Montgomery arithmetic modulo an odd n below 2^64 (R = 2^64) or below 2^128 (R = 2^128,
 * two limbs in unsigned __int128): n^-1 mod R by Newton iteration, R^2 mod n kept for
 * conversion, every multiplication in Montgomery space. Pure arithmetic: holds no secrets of
 * its own and does no primality testing (prime.c). Not constant-time. */
#ifndef RANDD_MONTGOMERY_H
#define RANDD_MONTGOMERY_H

#include <stdint.h>

typedef unsigned __int128 randd_u128;

/* ninv is n^-1 mod R, not the textbook n' = -n^-1 mod R: REDC then subtracts u n instead of
 * adding it (below), which needs no carry out of the top limb even for n close to R. */
struct randd_mont64 {
    uint64_t n, ninv;      /* ninv = n^-1 mod 2^64 */
    uint64_t one, r2;      /* R mod n, R^2 mod n */
};

struct randd_mont128 {
    randd_u128 n, ninv;    /* ninv = n^-1 mod 2^128 */
    randd_u128 one, r2;
};

/* REDC in its subtractive form: with u = t * n^-1 mod R, t - u n is divisible by R exactly
 * (the low halves cancel with no borrow), and (t - u n) / R = hi(t) - hi(u n) lies in
 * (-n, n): one conditional add of n makes it canonical. Inline: these are the hot loops. */
static inline uint64_t randd_mont64_redc(const struct randd_mont64 *m, randd_u128 t)
{
    uint64_t u = (uint64_t)t * m->ninv;
    uint64_t hi = (uint64_t)(t >> 64), un_hi = (uint64_t)(((randd_u128)u * m->n) >> 64);

    return hi >= un_hi ? hi - un_hi : hi - un_hi + m->n;
}

static inline uint64_t randd_mont64_mul(const struct randd_mont64 *m, uint64_t a, uint64_t b)
{
    return randd_mont64_redc(m, (randd_u128)a * b);
}

/* n must be odd and > 1. */
void randd_mont64_init(struct randd_mont64 *m, uint64_t n);
uint64_t randd_mont64_to(const struct randd_mont64 *m, uint64_t a);      /* a mod n, any a */
uint64_t randd_mont64_from(const struct randd_mont64 *m, uint64_t a);
uint64_t randd_mont64_pow(const struct randd_mont64 *m, uint64_t base, uint64_t e); /* both Montgomery */
/* base^e mod n on plain numbers: to, pow, from. */
uint64_t randd_modexp64(uint64_t base, uint64_t e, uint64_t n);

/* The 256-bit product a * b as hi:lo, from four 64-bit products. */
static inline void randd_mul128(randd_u128 a, randd_u128 b, randd_u128 *hi, randd_u128 *lo)
{
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64), b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    randd_u128 p00 = (randd_u128)a0 * b0, p01 = (randd_u128)a0 * b1;
    randd_u128 p10 = (randd_u128)a1 * b0, p11 = (randd_u128)a1 * b1;
    randd_u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10;      /* < 3 * 2^64 */

    *lo = (mid << 64) | (uint64_t)p00;
    *hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
}

/* a + b and a - b mod n, for a, b < n (no Montgomery factor involved; works the same on
 * Montgomery residues). The sum may carry out of 128 bits when n > 2^127. */
static inline randd_u128 randd_mod128_add(randd_u128 a, randd_u128 b, randd_u128 n)
{
    randd_u128 s = a + b;

    return s < a || s >= n ? s - n : s;
}

static inline randd_u128 randd_mod128_sub(randd_u128 a, randd_u128 b, randd_u128 n)
{
    return a >= b ? a - b : a + (n - b);
}

static inline randd_u128 randd_mont128_mul(const struct randd_mont128 *m, randd_u128 a, randd_u128 b)
{
    randd_u128 hi, lo, un_hi, un_lo;

    randd_mul128(a, b, &hi, &lo);
    randd_mul128(lo * m->ninv, m->n, &un_hi, &un_lo);
    return hi >= un_hi ? hi - un_hi : hi - un_hi + m->n;
}

/* n must be odd and > 1. */
void randd_mont128_init(struct randd_mont128 *m, randd_u128 n);
randd_u128 randd_mont128_to(const struct randd_mont128 *m, randd_u128 a);
randd_u128 randd_mont128_from(const struct randd_mont128 *m, randd_u128 a);
randd_u128 randd_mont128_pow(const struct randd_mont128 *m, randd_u128 base, randd_u128 e);
randd_u128 randd_modexp128(randd_u128 base, randd_u128 e, randd_u128 n);


#endif
