/* Primality and random primes (prime.h).
 *
 * Candidates: RNG-BC-8 draws x uniform below 2^(bits-1); the candidate is 2^(bits-1) + x with
 * its low bit set. Every odd number of the size is then equally likely, and a composite is
 * rejected and replaced by a fresh draw (never stepped from, as an incremental search would,
 * which favours primes after long gaps), so every prime of the size is equally likely.
 * A candidate is sieved by small odd primes before any exponentiation: a fixed few dozen to
 * a few hundred up to 128 bits, more as the size grows above (sieve_groups). Where the CPU
 * has AVX-512 IFMA, the tests above 128 bits run eight at a time (prime_fermat.c, and the
 * batches below).
 *
 * Above 128 bits a random candidate that survives the sieve takes Miller-Rabin to base 2,
 * then to randd_prime_rounds(bits) uniform random bases: the average-case bound of
 * prime_rounds.c, which only fresh uniform candidates earn, keeps OpenSSL 3's 2^-128 (2^-256
 * above 2048 bits) in 3 to 44 rounds instead of its 64 (128). randd_is_prime_bytes, which
 * judges numbers nobody drew at random, keeps BN_check_prime and its worst-case rounds. */
#include "prime.h"
#include "prime_fermat.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>

/* --- small primes ------------------------------------------------------------------------- */

/* Trial division without dividing: for odd p, v is a multiple of p exactly when
 * v * p^-1 mod 2^64 <= (2^64 - 1) / p (multiplication by p^-1 maps the multiples of p onto
 * 0 .. (2^64 - 1) / p and everything else above; Granlund and Montgomery, "Division by
 * invariant integers using multiplication", PLDI 1994, section 9). The same holds mod 2^128. */
#define SIEVE_LIMIT 65536                /* the odd primes below it: 6541 */
#define NSMALL 6541
#define NSMALL_128 256                   /* with 128-bit inverses */
#define SIEVE_64 64                      /* primes tried before Miller-Rabin below 2^64 */
#define SIEVE_128 160                    /* and before BPSW below 2^128 */

static uint16_t small_primes[NSMALL];
static uint64_t small_inv[NSMALL], small_lim[NSMALL];
static randd_u128 small_inv128[NSMALL_128], small_lim128[NSMALL_128];

/* Consecutive primes whose product fits 64 bits: one pass over the candidate per group. */
struct prime_group {
    uint32_t first, end;
    uint64_t product, inverse;           /* product^-1 mod 2^64 */
};
static struct prime_group groups[NSMALL];
static size_t ngroups;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void init_tables(void)
{
    static uint8_t composite[SIEVE_LIMIT];
    size_t count = 0;

    for (unsigned i = 3; i < SIEVE_LIMIT; i += 2) {
        if (composite[i])
            continue;
        for (unsigned j = i * i; j < SIEVE_LIMIT; j += 2 * i)
            composite[j] = 1;

        uint64_t inv = i;                /* Newton from 3 correct bits, as in montgomery.c */
        for (int k = 0; k < 5; k++)
            inv *= 2 - i * inv;
        small_primes[count] = (uint16_t)i;
        small_inv[count] = inv;
        small_lim[count] = UINT64_MAX / i;
        if (count < NSMALL_128) {
            randd_u128 inv128 = inv;

            inv128 *= 2 - i * inv128;    /* 64 -> 128 bits */
            small_inv128[count] = inv128;
            small_lim128[count] = ~(randd_u128)0 / i;
        }
        count++;
    }
    for (size_t i = 0; i < count;) {
        struct prime_group *g = &groups[ngroups++];

        g->first = (uint32_t)i;
        g->product = 1;
        while (i < count && g->product <= UINT64_MAX / small_primes[i])
            g->product *= small_primes[i++];
        g->inverse = g->product;             /* Newton, as in montgomery.c */
        for (int k = 0; k < 5; k++)
            g->inverse *= 2 - g->product * g->inverse;
        g->end = (uint32_t)i;
    }
}

static inline bool divides64(size_t i, uint64_t v)
{
    return v * small_inv[i] <= small_lim[i];
}

/* 1: n is one of the small primes; 0: a small prime divides it; -1: no verdict. */
static int trial_division_u128(randd_u128 n)
{
    if (n < 2)
        return 0;
    if ((n & 1) == 0)
        return n == 2;
    pthread_once(&tables_once, init_tables);
    if (n >> 64 == 0) {
        uint64_t v = (uint64_t)n;

        for (size_t i = 0; i < SIEVE_64; i++)
            if (divides64(i, v))
                return v == small_primes[i];
        return (uint64_t)small_primes[SIEVE_64] * small_primes[SIEVE_64] > v ? 1 : -1;
    }
    for (size_t i = 0; i < SIEVE_128; i++)
        if (n * small_inv128[i] <= small_lim128[i])
            return 0;                    /* n > 2^64 is not itself a small prime */
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

/* V_2k = V_k^2 - 2 Q^k and Q^2k = (Q^k)^2: the doubling step the ladder and the strong
 * test's tail share. */
static void lucas_double(const struct randd_mont128 *m, randd_u128 *v, randd_u128 *qk)
{
    *v = randd_mod128_sub(randd_mont128_mul(m, *v, *v), randd_mod128_add(*qk, *qk, m->n), m->n);
    *qk = randd_mont128_mul(m, *qk, *qk);
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
        lucas_double(&m, &v, &qk);                                           /* V_2k */
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
        lucas_double(&m, &v, &qk);
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

/* How deep to sieve above 128 bits: a prime p is worth trying while its share of the
 * survivors (1/p) times one Fermat or Miller-Rabin test costs more than a quarter of a group's
 * residue_scaled. Both grow with the size, the exponentiation faster: primes up to about 12
 * times the bit length (3072 at 256 bits, 12288 at 1024, 49152 at 4096). With the IFMA tests
 * and the division-free residues each about 4 times cheaper, anything from 1 to 24 times the
 * length measured the same within noise at 256 and 1024 bits (issue 32). */
static size_t sieve_groups(size_t bits)
{
    size_t limit = bits * 12, g = 0;

    while (g < ngroups && small_primes[groups[g].first] < limit)
        g++;
    return g;
}

/* n 2^(-64 len) mod q for n in len little-endian limbs, odd q, without dividing: each step
 * adds a limb and divides by 2^64 modulo q, Montgomery's REDC on one word (u q matches the
 * low word exactly, so (y - u q) / 2^64 = carry - hi(u q)). A prime of q divides n exactly
 * when it divides the result, 2^64 being a unit modulo an odd q. */
static uint64_t residue_scaled(const uint64_t *limbs, size_t len, const struct prime_group *g)
{
    uint64_t r = 0;

    for (size_t i = 0; i < len; i++) {
        uint64_t y = r + limbs[i], carry = y < r;
        uint64_t h = (uint64_t)(((unsigned __int128)(y * g->inverse) * g->product) >> 64);

        r = h > carry ? carry - h + g->product : carry - h;
    }
    return r;
}

/* n big-endian in len bytes as little-endian 64-bit limbs; returns their number. */
static size_t to_limbs(uint64_t *limbs, const uint8_t *n, size_t len)
{
    size_t nlimbs = (len + 7) / 8;

    memset(limbs, 0, nlimbs * sizeof(*limbs));
    for (size_t i = 0; i < len; i++)
        limbs[i / 8] |= (uint64_t)n[len - 1 - i] << (8 * (i % 8));
    return nlimbs;
}

static bool survives_sieve(const uint8_t *n, size_t len, size_t ngroup)
{
    uint64_t limbs[RANDD_PRIME_BITS_MAX / 64];
    size_t nlimbs = to_limbs(limbs, n, len);
    bool survives = true;

    for (size_t g = 0; survives && g < ngroup; g++) {
        uint64_t rem = residue_scaled(limbs, nlimbs, &groups[g]);

        for (size_t k = groups[g].first; survives && k < groups[g].end; k++)
            survives = !divides64(k, rem);
    }
    OPENSSL_cleanse(limbs, sizeof(limbs));
    return survives;
}

/* Above 128 bits: sieve, then BN_check_prime with the rounds OpenSSL picks for the size. */
static int is_prime_bn(const uint8_t *n, size_t len, BIGNUM *bn, BN_CTX *ctx)
{
    int rc;

    if ((n[len - 1] & 1) == 0)
        return 0;
    pthread_once(&tables_once, init_tables);
    if (!survives_sieve(n, len, sieve_groups(8 * len)))
        return 0;
    if (!BN_bin2bn(n, (int)len, bn))
        return -ENOMEM;
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

/* --- random candidates above 128 bits ----------------------------------------------------- */

/* Everything testing one candidate needs, allocated once per search. BIGNUMs that hold the
 * candidate come from OpenSSL's secure heap; they and the BN_MONT_CTX (whose copy of n is
 * overwritten by the next candidate) are cleared when freed. */
struct big_test {
    BN_CTX *ctx;
    BN_MONT_CTX *mont;
    BIGNUM *n, *n_minus_1, *d, *x, *base;
    int s;                                           /* n - 1 = d 2^s, d odd */
    size_t len;
    struct randd_rngbc_range below_n_minus_3;        /* bases are 2 + [0, n - 3) */
    uint8_t n_minus_3[RANDD_PRIME_BITS_MAX / 8], drawn[RANDD_PRIME_BITS_MAX / 8];
};

static void big_test_fini(struct big_test *t)
{
    BN_clear_free(t->n), BN_clear_free(t->n_minus_1), BN_clear_free(t->d);
    BN_clear_free(t->x), BN_clear_free(t->base);
    BN_MONT_CTX_free(t->mont);
    BN_CTX_free(t->ctx);
    OPENSSL_cleanse(t->n_minus_3, sizeof(t->n_minus_3));
    OPENSSL_cleanse(t->drawn, sizeof(t->drawn));
}

/* big_test_fini undoes it, whether it failed or not. */
static int big_test_init(struct big_test *t, size_t len)
{
    *t = (struct big_test){ .len = len };
    t->ctx = BN_CTX_secure_new();
    t->mont = BN_MONT_CTX_new();
    t->n = BN_secure_new(), t->n_minus_1 = BN_secure_new(), t->d = BN_secure_new();
    t->x = BN_secure_new(), t->base = BN_secure_new();
    return t->ctx && t->mont && t->n && t->n_minus_1 && t->d && t->x && t->base ? 0 : -ENOMEM;
}

/* Take candidate n (odd, top bit set): 1 when it survives the sieve and is ready for
 * strong_test, 0 when a small prime divides it, -ENOMEM. */
static int big_test_take(struct big_test *t, const uint8_t *n)
{
    if (!survives_sieve(n, t->len, sieve_groups(8 * t->len)))
        return 0;
    if (!BN_bin2bn(n, (int)t->len, t->n))
        return -ENOMEM;
    if (!BN_MONT_CTX_set(t->mont, t->n, t->ctx) || !BN_copy(t->n_minus_1, t->n) ||
        !BN_sub_word(t->n_minus_1, 1))
        return -ENOMEM;
    for (t->s = 1; !BN_is_bit_set(t->n_minus_1, t->s); t->s++)
        ;
    return BN_rshift(t->d, t->n_minus_1, t->s) ? 1 : -ENOMEM;
}

/* Miller-Rabin to base 2 (base NULL) or to base: 1 strong probable prime, 0 composite. */
static int strong_test(struct big_test *t, const BIGNUM *base)
{
    int ok = base ? BN_mod_exp_mont(t->x, base, t->d, t->n, t->ctx, t->mont)
                  : BN_mod_exp_mont_word(t->x, 2, t->d, t->n, t->ctx, t->mont);

    if (!ok)
        return -ENOMEM;
    if (BN_is_one(t->x) || BN_cmp(t->x, t->n_minus_1) == 0)
        return 1;
    for (int i = 1; i < t->s; i++) {
        if (!BN_mod_sqr(t->x, t->x, t->n, t->ctx))
            return -ENOMEM;
        if (BN_cmp(t->x, t->n_minus_1) == 0)
            return 1;
        if (BN_is_one(t->x))
            return 0;                    /* a square root of 1 other than +-1 */
    }
    return 0;
}

/* A base uniform in [2, n - 2], as the average-case bound assumes. */
static int draw_base(struct big_test *t, const struct randd_byte_source *src)
{
    int rc;

    if (!BN_copy(t->base, t->n) || !BN_sub_word(t->base, 3) ||
        BN_bn2binpad(t->base, t->n_minus_3, (int)t->len) < 0)
        return -ENOMEM;
    rc = randd_rngbc_prepare(&t->below_n_minus_3, t->n_minus_3, t->len);
    if (rc == 0)
        rc = randd_rngbc8(&t->below_n_minus_3, t->drawn, src, NULL);
    if (rc < 0)
        return rc;
    return BN_bin2bn(t->drawn, (int)t->len, t->base) && BN_add_word(t->base, 2) ? 0 : -ENOMEM;
}

/* 1 prime, 0 composite, negative errno. Sieve, then base 2, which rejects nearly every
 * composite that is left for the price of squarings alone; a candidate that passes is almost
 * surely prime and earns its error bound with randd_prime_rounds(bits) random bases. Base 2
 * cannot loosen that bound: it only turns composites away. */
static int is_random_candidate_prime(struct big_test *t, const uint8_t *n, unsigned rounds,
                                     const struct randd_byte_source *src)
{
    int rc = big_test_take(t, n);

    if (rc == 1)
        rc = strong_test(t, NULL);
    for (unsigned i = 0; rc == 1 && i < rounds; i++) {
        rc = draw_base(t, src);
        if (rc == 0)
            rc = strong_test(t, t->base);
    }
    return rc;
}

/* --- batches of candidates on AVX-512 IFMA ------------------------------------------------ */

/* Where the CPU has IFMA, candidates that survive the sieve are gathered eight at a time and
 * given the base-2 Fermat test together (prime_fermat.c), three to seven times faster per
 * candidate than one BN_mod_exp_mont_word. The few that pass take is_random_candidate_prime's
 * tests (base 2, then the random bases, eight to a call of randd_strong8) in the order they
 * were drawn, and the first prime among them is the answer: the candidates are independent
 * and uniform, so the first prime in draw order is uniform over the primes, as with one
 * candidate at a time. The candidates drawn after it are wiped unused. */
struct batch {
    uint8_t cand[RANDD_FERMAT_LANES][RANDD_PRIME_BITS_MAX / 8];
    const uint8_t *at[RANDD_FERMAT_LANES];
    bool pass[RANDD_FERMAT_LANES];
};

/* Draw until eight candidates survive the sieve. */
static int batch_fill(struct batch *b, struct big_test *t, struct randd_rngbc_range *range,
                      uint8_t top, const struct randd_byte_source *src)
{
    size_t len = t->len, sieve = sieve_groups(8 * len);

    for (size_t count = 0; count < RANDD_FERMAT_LANES;) {
        uint8_t *c = b->cand[count];
        int rc = randd_rngbc8(range, c, src, NULL);

        if (rc < 0)
            return rc;
        c[0] |= top;
        c[len - 1] |= 1;
        if (survives_sieve(c, len, sieve))
            b->at[count++] = c;
    }
    return 0;
}

/* is_random_candidate_prime on IFMA: the same tests, base 2 and then rounds uniform random
 * bases, eight bases to a randd_strong8 call. n has passed the sieve. */
static int is_candidate_prime_ifma(struct big_test *t, const uint8_t *n, unsigned bits,
                                   unsigned rounds, const struct randd_byte_source *src)
{
    uint8_t bases[RANDD_FERMAT_LANES][RANDD_PRIME_BITS_MAX / 8];
    const uint8_t *at[RANDD_FERMAT_LANES];
    bool pass[RANDD_FERMAT_LANES];
    int rc = BN_bin2bn(n, (int)t->len, t->n) ? 1 : -ENOMEM;

    for (unsigned done = 0, count; rc == 1 && done < rounds + 1; done += count) {
        for (count = 0; rc == 1 && count < RANDD_FERMAT_LANES && done + count < rounds + 1;
             count++) {
            at[count] = bases[count];
            if (done + count == 0) {                        /* base 2 first */
                memset(bases[0], 0, t->len);
                bases[0][t->len - 1] = 2;
            } else if ((rc = draw_base(t, src)) == 0) {
                rc = BN_bn2binpad(t->base, bases[count], (int)t->len) < 0 ? -ENOMEM : 1;
            }
        }
        if (rc == 1 && randd_strong8(n, bits, at, count, pass) < 0)
            rc = -ENOMEM;
        for (unsigned k = 0; rc == 1 && k < count; k++)
            rc = pass[k];
    }
    OPENSSL_cleanse(bases, sizeof(bases));
    return rc;
}

/* 1 with the first prime of the batch in out, 0 when it holds none, or a negative errno. */
static int batch_first_prime(struct batch *b, struct big_test *t, unsigned bits, uint8_t *out,
                             unsigned rounds, const struct randd_byte_source *src)
{
    if (randd_fermat8(b->at, RANDD_FERMAT_LANES, bits, b->pass) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < RANDD_FERMAT_LANES; k++) {
        int rc = b->pass[k] ? is_candidate_prime_ifma(t, b->cand[k], bits, rounds, src) : 0;

        if (rc == 1)
            memcpy(out, b->cand[k], t->len);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* 0 with a prime in out, or a negative errno. */
static int search_batched(struct big_test *t, unsigned bits, uint8_t *out,
                          struct randd_rngbc_range *range, uint8_t top, unsigned rounds,
                          const struct randd_byte_source *src)
{
    struct batch b;
    int rc = 0;

    while (rc == 0) {
        rc = batch_fill(&b, t, range, top, src);
        if (rc == 0)
            rc = batch_first_prime(&b, t, bits, out, rounds, src);
    }
    OPENSSL_cleanse(&b, sizeof(b));
    return rc < 0 ? rc : 0;
}

/* --- random primes ------------------------------------------------------------------------ */

int randd_prime_generate(unsigned bits, uint8_t *out, const struct randd_byte_source *src)
{
    size_t len = (bits + 7) / 8;
    uint8_t top = (uint8_t)(1u << ((bits - 1) % 8)), r[RANDD_PRIME_BITS_MAX / 8];
    struct randd_rngbc_range range;
    struct big_test big = { 0 };
    unsigned rounds = 0;
    int rc;

    if (bits < RANDD_PRIME_BITS_MIN)
        return -EINVAL;
    if (bits > RANDD_PRIME_BITS_MAX)
        return -E2BIG;
    memset(r, 0, len);
    r[0] = top;                                       /* r = 2^(bits-1) */
    rc = randd_rngbc_prepare(&range, r, len);
    if (rc == 0 && bits > 128) {
        pthread_once(&tables_once, init_tables);
        rounds = randd_prime_rounds(bits);
        rc = big_test_init(&big, len);
    }
    if (rc == 0 && bits > 128 && randd_fermat8_available()) {
        rc = search_batched(&big, bits, out, &range, top, rounds, src);
        rc = rc == 0 ? 1 : rc;                        /* found: the loop below has no work */
    }
    while (rc == 0) {
        rc = randd_rngbc8(&range, out, src, NULL);
        if (rc < 0)
            break;
        out[0] |= top;
        out[len - 1] |= 1;
        rc = bits > 128 ? is_random_candidate_prime(&big, out, rounds, src)
                        : is_prime_any(out, len, NULL, NULL);
        if (rc == 1)
            break;
    }
    rc = rc == 1 ? 0 : rc;
    if (rc < 0)
        OPENSSL_cleanse(out, len);
    if (bits > 128)
        big_test_fini(&big);
    return rc;
}
