/* Montgomery multiplication (P. L. Montgomery, "Modular multiplication without trial
 * division", Math. Comp. 44, 1985) for one and two 64-bit limbs: set-up, conversions and
 * exponentiation; the multiplications are inline in montgomery.h, primality is prime.c's. */
#include "montgomery.h"

/* --- R = 2^64 ------------------------------------------------------------------------------- */

void randd_mont64_init(struct randd_mont64 *m, uint64_t n)
{
    uint64_t inv = n;                  /* n * n = 1 mod 8: correct to 3 bits */

    for (int i = 0; i < 5; i++)        /* Newton doubles the correct bits: 6, 12, 24, 48, 96 */
        inv *= 2 - n * inv;
    m->n = n;
    m->ninv = inv;
    m->one = -n % n;                   /* 2^64 mod n */
    m->r2 = (uint64_t)((randd_u128)m->one * m->one % n);
}

uint64_t randd_mont64_to(const struct randd_mont64 *m, uint64_t a)
{
    return randd_mont64_mul(m, a % m->n, m->r2);
}

uint64_t randd_mont64_from(const struct randd_mont64 *m, uint64_t a)
{
    return randd_mont64_redc(m, a);
}

uint64_t randd_mont64_pow(const struct randd_mont64 *m, uint64_t base, uint64_t e)
{
    uint64_t result = m->one;

    for (; e; e >>= 1) {
        if (e & 1)
            result = randd_mont64_mul(m, result, base);
        base = randd_mont64_mul(m, base, base);
    }
    return result;
}

uint64_t randd_modexp64(uint64_t base, uint64_t e, uint64_t n)
{
    struct randd_mont64 m;

    randd_mont64_init(&m, n);
    return randd_mont64_from(&m, randd_mont64_pow(&m, randd_mont64_to(&m, base), e));
}

/* --- R = 2^128 ------------------------------------------------------------------------------ */

void randd_mont128_init(struct randd_mont128 *m, randd_u128 n)
{
    randd_u128 inv = n, x;

    for (int i = 0; i < 6; i++)        /* 3 -> 192 correct bits */
        inv *= 2 - n * inv;
    m->n = n;
    m->ninv = inv;
    m->one = -n % n;                   /* 2^128 mod n */
    /* R^2 mod n with no 256-bit division: R mod n doubled 8 times is 2^8 R; each Montgomery
     * squaring then turns 2^k R into 2^2k R, so four of them give 2^128 R = R^2. */
    x = m->one;
    for (int i = 0; i < 8; i++)
        x = randd_mod128_add(x, x, n);
    for (int i = 0; i < 4; i++)
        x = randd_mont128_mul(m, x, x);
    m->r2 = x;
}

randd_u128 randd_mont128_to(const struct randd_mont128 *m, randd_u128 a)
{
    return randd_mont128_mul(m, a % m->n, m->r2);
}

randd_u128 randd_mont128_from(const struct randd_mont128 *m, randd_u128 a)
{
    return randd_mont128_mul(m, a, 1);
}

randd_u128 randd_mont128_pow(const struct randd_mont128 *m, randd_u128 base, randd_u128 e)
{
    randd_u128 result = m->one;

    for (; e; e >>= 1) {
        if (e & 1)
            result = randd_mont128_mul(m, result, base);
        base = randd_mont128_mul(m, base, base);
    }
    return result;
}

randd_u128 randd_modexp128(randd_u128 base, randd_u128 e, randd_u128 n)
{
    struct randd_mont128 m;

    randd_mont128_init(&m, n);
    return randd_mont128_from(&m, randd_mont128_pow(&m, randd_mont128_to(&m, base), e));
}
