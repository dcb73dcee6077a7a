/* Primality and random primes (prime.h).
 *
 * Candidates: RNG-BC-8 draws x uniform below 2^(bits-1); the candidate is 2^(bits-1) + x with
 * its low bit set. Every odd number of the size is then equally likely, and a composite is
 * rejected and replaced by a fresh draw (never stepped from, as an incremental search would,
 * which favours primes after long gaps), so every prime of the size is equally likely.
 * A candidate is sieved by the odd primes below 2^11 before any exponentiation. */
#include "prime.h"

#include <errno.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>

/* --- small primes ------------------------------------------------------------------------- */

#define SIEVE_LIMIT 2048
static uint16_t small_primes[320];      /* the odd primes below SIEVE_LIMIT: 308 of them */
static size_t nsmall;
#define SMALL_SIEVE_64 48                /* primes tried before Miller-Rabin below 2^64 */

static void init_small_primes(void)
{
    static uint8_t composite[SIEVE_LIMIT];

    if (__atomic_load_n(&nsmall, __ATOMIC_ACQUIRE))
        return;
    size_t count = 0;

    for (unsigned i = 3; i < SIEVE_LIMIT; i += 2) {
        if (composite[i])
            continue;
        small_primes[count++] = (uint16_t)i;
        for (unsigned j = i * i; j < SIEVE_LIMIT; j += 2 * i)
            composite[j] = 1;
    }
    __atomic_store_n(&nsmall, count, __ATOMIC_RELEASE);     /* same value from any thread */
}

/* 1: n is one of the small primes; 0: a small prime divides it; -1: no verdict. */
static int trial_division_u128(randd_u128 n)
{
    if (n < 2)
        return 0;
    if ((n & 1) == 0)
        return n == 2;
    init_small_primes();
    if (n >> 64 == 0) {
        /* 64-bit division is a single instruction; 128-bit is a libgcc call. A few dozen
         * primes weed out most composites; more cost more than the Miller-Rabin they save. */
        uint64_t v = (uint64_t)n;

        for (size_t i = 0; i < SMALL_SIEVE_64; i++) {
            if (v == small_primes[i])
                return 1;
            if (v % small_primes[i] == 0)
                return 0;
        }
        return (uint64_t)small_primes[SMALL_SIEVE_64] * small_primes[SMALL_SIEVE_64] > v ? 1 : -1;
    }
    /* One 128-bit division per group of primes whose product fits 64 bits. */
    for (size_t i = 0; i < nsmall;) {
        uint64_t product = 1, rem;
        size_t first = i;

        while (i < nsmall && product <= UINT64_MAX / small_primes[i])
            product *= small_primes[i++];
        rem = (uint64_t)(n % product);
        for (size_t k = first; k < i; k++)
            if (rem % small_primes[k] == 0)
                return 0;
    }
    return -1;
}

/* --- Miller-Rabin up to 2^64 --------------------------------------------------------------- */

/* One strong-probable-prime round in Montgomery space; n - 1 = d * 2^s. */
static bool spp64(const struct randd_mont64 *m, uint64_t a, uint64_t d, int s)
{
    uint64_t minus_one = m->n - m->one, x;

    a %= m->n;
    if (a == 0)
        return true;                     /* a base that is a multiple of n says nothing */
    x = randd_mont64_pow(m, randd_mont64_to(m, a), d);
    if (x == m->one || x == minus_one)
        return true;
    while (--s > 0) {
        x = randd_mont64_mul(m, x, x);
        if (x == minus_one)
            return true;
    }
    return false;
}

bool randd_is_prime_u64(uint64_t n)
{
    /* Jim Sinclair's seven bases decide every n < 2^64 (see Forisek and Jancina 2015). */
    static const uint64_t bases[] = { 2, 325, 9375, 28178, 450775, 9780504, 1795265022 };
    struct randd_mont64 m;
    uint64_t d = n - 1;
    int s = 0, verdict = trial_division_u128(n);

    if (verdict >= 0)
        return verdict;
    while ((d & 1) == 0)
        d >>= 1, s++;
    randd_mont64_init(&m, n);
    for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
        if (!spp64(&m, bases[i], d, s))
            return false;
    return true;
}

/* --- Baillie-PSW from 2^64 to 2^128 -------------------------------------------------------- */

bool randd_strong_probable_prime_u128(randd_u128 n, randd_u128 a)
{
    struct randd_mont128 m;
    randd_u128 d = n - 1, minus_one, x;
    int s = 0;

    while ((d & 1) == 0)
        d >>= 1, s++;
    randd_mont128_init(&m, n);
    minus_one = n - m.one;
    x = randd_mont128_pow(&m, randd_mont128_to(&m, a), d);
    if (x == m.one || x == minus_one)
        return true;
    while (--s > 0) {
        x = randd_mont128_mul(&m, x, x);
        if (x == minus_one)
            return true;
    }
    return false;
}

/* The Jacobi symbol (a/n), n odd and positive, a given as sign and magnitude. */
static int jacobi(randd_u128 a_abs, bool a_negative, randd_u128 n)
{
    int j = 1;
    randd_u128 a = a_abs % n;

    if (a_negative && a)
        a = n - a;
    while (a) {
        while ((a & 1) == 0) {
            a >>= 1;
            if ((n & 7) == 3 || (n & 7) == 5)
                j = -j;
        }
        randd_u128 t = a;
        a = n;
        n = t;
        if ((a & 3) == 3 && (n & 3) == 3)
            j = -j;
        a %= n;
    }
    return n == 1 ? j : 0;
}

static bool is_square(randd_u128 n)
{
    randd_u128 lo = 0, hi = (randd_u128)1 << 64;            /* isqrt(n) < 2^64 */

    while (hi - lo > 1) {                                   /* largest r with r^2 <= n */
        randd_u128 mid = lo + (hi - lo) / 2;

        if (mid * mid <= n)
            lo = mid;
        else
            hi = mid;
    }
    return lo * lo == n;
}

/* x / 2 mod n for odd n: x itself when even, else (x + n) / 2 without overflowing. */
static randd_u128 half(randd_u128 x, randd_u128 n)
{
    return (x & 1) ? (x >> 1) + (n >> 1) + 1 : x >> 1;
}

/* Strong Lucas probable prime test, Selfridge's method A: D the first of 5, -7, 9, -11, ...
 * with (D/n) = -1, P = 1, Q = (1 - D) / 4 (Baillie and Wagstaff 1980; FIPS 186-5 B.3.3). */
bool randd_strong_lucas_u128(randd_u128 n)
{
    struct randd_mont128 m;
    randd_u128 d_abs = 5, d = n + 1, u, v, qk, q, dm;
    bool d_negative = false;
    int s = 0, bit;

    for (;;) {
        int j = jacobi(d_abs, d_negative, n);

        if (j == -1)
            break;
        if (j == 0 && d_abs != n)
            return false;                                  /* |D| shares a factor with n */
        d_abs += 2;
        d_negative = !d_negative;
        if (d_abs > 1000000)
            return false;                                  /* only squares get here */
    }
    randd_mont128_init(&m, n);
    /* Q = (1 - D) / 4 as a residue: D > 0 gives -(D - 1) / 4, D < 0 gives (|D| + 1) / 4. */
    q = d_negative ? randd_mont128_to(&m, (d_abs + 1) / 4)
                   : randd_mod128_sub(0, randd_mont128_to(&m, (d_abs - 1) / 4), n);
    dm = d_negative ? randd_mod128_sub(0, randd_mont128_to(&m, d_abs), n) : randd_mont128_to(&m, d_abs);
    while ((d & 1) == 0)
        d >>= 1, s++;

    /* U_1 = 1, V_1 = P = 1, then the binary ladder over d's remaining bits. */
    u = m.one;
    v = m.one;
    qk = q;
    for (bit = 127; bit >= 0 && !((d >> bit) & 1); bit--)
        ;
    for (bit--; bit >= 0; bit--) {
        u = randd_mont128_mul(&m, u, v);                                     /* U_2k */
        v = randd_mod128_sub(randd_mont128_mul(&m, v, v),
                             randd_mod128_add(qk, qk, n), n);                /* V_2k */
        qk = randd_mont128_mul(&m, qk, qk);
        if ((d >> bit) & 1) {
            randd_u128 u1 = half(randd_mod128_add(u, v, n), n);              /* (P U + V) / 2 */
            randd_u128 v1 = half(randd_mod128_add(randd_mont128_mul(&m, dm, u), v, n), n);

            u = u1;
            v = v1;
            qk = randd_mont128_mul(&m, qk, q);
        }
    }
    if (u == 0 || v == 0)
        return true;
    for (int r = 1; r < s; r++) {
        v = randd_mod128_sub(randd_mont128_mul(&m, v, v), randd_mod128_add(qk, qk, n), n);
        qk = randd_mont128_mul(&m, qk, qk);
        if (v == 0)
            return true;
    }
    return false;
}

bool randd_is_prime_u128(randd_u128 n)
{
    int verdict;

    if (n >> 64 == 0)
        return randd_is_prime_u64((uint64_t)n);
    verdict = trial_division_u128(n);
    if (verdict >= 0)
        return verdict;
    return randd_strong_probable_prime_u128(n, 2) && !is_square(n) && randd_strong_lucas_u128(n);
}

/* --- any size -------------------------------------------------------------------------------- */

/* Groups of small primes whose product fits a BN_ULONG: one BN_mod_word per group, then the
 * group's primes divide the 64-bit remainder. */
static bool survives_sieve(const BIGNUM *n)
{
    init_small_primes();
    for (size_t i = 0; i < nsmall;) {
        BN_ULONG product = 1, rem;
        size_t first = i;

        while (i < nsmall && product <= (BN_ULONG)-1 / small_primes[i])
            product *= small_primes[i++];
        rem = BN_mod_word(n, product);
        if (rem == (BN_ULONG)-1)
            return true;                 /* cannot fail for a non-zero word; be safe */
        for (size_t k = first; k < i; k++)
            if (rem % small_primes[k] == 0)
                return false;
    }
    return true;
}

/* Above 128 bits: sieve, then BN_check_prime with the rounds OpenSSL picks for the size. */
static int is_prime_bn(const uint8_t *n, size_t len, BIGNUM *bn, BN_CTX *ctx)
{
    int rc;

    if ((n[len - 1] & 1) == 0)
        return 0;
    if (!BN_bin2bn(n, (int)len, bn))
        return -ENOMEM;
    if (!survives_sieve(bn))
        return 0;
    rc = BN_check_prime(bn, ctx, NULL);
    return rc < 0 ? -ENOMEM : rc;
}

static int is_prime_any(const uint8_t *n, size_t len, BIGNUM *bn, BN_CTX *ctx)
{
    size_t skip = 0;

    while (skip < len && n[skip] == 0)
        skip++;
    n += skip;
    len -= skip;
    if (len <= 16) {
        randd_u128 v = 0;

        for (size_t i = 0; i < len; i++)
            v = v << 8 | n[i];
        return randd_is_prime_u128(v);
    }
    return is_prime_bn(n, len, bn, ctx);
}

int randd_is_prime_bytes(const uint8_t *n, size_t len)
{
    BN_CTX *ctx = BN_CTX_secure_new();
    BIGNUM *bn = BN_secure_new();
    int rc = ctx && bn ? is_prime_any(n, len, bn, ctx) : -ENOMEM;

    BN_clear_free(bn);
    BN_CTX_free(ctx);
    return rc;
}

int randd_prime_generate(unsigned bits, uint8_t *out, const struct randd_byte_source *src)
{
    size_t len = (bits + 7) / 8;
    uint8_t top = (uint8_t)(1u << ((bits - 1) % 8)), r[RANDD_PRIME_BITS_MAX / 8];
    struct randd_rngbc_range range;
    int rc;

    if (bits < RANDD_PRIME_BITS_MIN)
        return -EINVAL;
    if (bits > RANDD_PRIME_BITS_MAX)
        return -E2BIG;
    BN_CTX *ctx = NULL;
    BIGNUM *bn = NULL;

    memset(r, 0, len);
    r[0] = top;                                       /* r = 2^(bits-1) */
    rc = randd_rngbc_prepare(&range, r, len);
    if (rc == 0 && bits > 128 && (!(ctx = BN_CTX_secure_new()) || !(bn = BN_secure_new())))
        rc = -ENOMEM;
    while (rc == 0) {
        rc = randd_rngbc8(&range, out, src, NULL);
        if (rc < 0)
            break;
        out[0] |= top;
        out[len - 1] |= 1;
        rc = is_prime_any(out, len, bn, ctx);
        if (rc == 1) {
            rc = 0;
            break;
        }
    }
    if (rc < 0)
        OPENSSL_cleanse(out, len);
    BN_clear_free(bn);
    BN_CTX_free(ctx);
    return rc;
}
