/* Montgomery multiplication (P. L. Montgomery, "Modular multiplication without trial
 * division", 1985) for one and two 64-bit limbs: set-up, conversions and exponentiation; the
 * multiplications themselves are inline in montgomery.h. Moduli up to R - 1 work. */
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

randd_u128 randd_mod128_add(randd_u128 a, randd_u128 b, randd_u128 n)
{
    randd_u128 s = a + b;

    return s < a || s >= n ? s - n : s;
}

randd_u128 randd_mod128_sub(randd_u128 a, randd_u128 b, randd_u128 n)
{
    return a >= b ? a - b : a + (n - b);
}

void randd_mont128_init(struct randd_mont128 *m, randd_u128 n)
{
    randd_u128 inv = n, x;

    for (int i = 0; i < 6; i++)        /* 3 -> 192 correct bits */
        inv *= 2 - n * inv;
    m->n = n;
    m->ninv = inv;
    m->one = -n % n;                   /* 2^128 mod n */
    /* R^2 mod n: R mod n doubled 128 times, with no 256-bit division. */
    x = m->one;
    for (int i = 0; i < 128; i++)
        x = randd_mod128_add(x, x, n);
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
