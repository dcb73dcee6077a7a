/* Eight base-2 Fermat tests at once on AVX-512 IFMA (prime_fermat.h).
 *
 * Why: above 128 bits nearly all the time of a prime search goes into the exponentiations
 * that reject sieved composites. OpenSSL's Montgomery multiplication is one candidate at a
 * time on 64-bit mulx, and each step of its inner loop waits on the last carry. Here each
 * 64-bit lane of a zmm register holds a digit of a different candidate, in radix 2^52: one
 * vpmadd52luq/vpmadd52huq multiplies eight digit pairs and accumulates the low or high 52
 * bits of each product, and with 12 spare bits per lane no carry is propagated until a
 * product is finished (Gueron and Krasnov, "Accelerating big integer arithmetic using Intel
 * IFMA extensions", ARITH 2016, use the same instructions one number at a time).
 *
 * The arithmetic: L digits with 2^(52 L) = R > 8n; Montgomery squaring in SOS order, reducing
 * each product to below 2n without a final subtraction ("almost Montgomery"), which needs
 * R > 8n when a lane's square is doubled as well (below). 2^(n-1) is computed left to right
 * from the Montgomery form of 2: each step squares, and doubles the lanes whose exponent bit
 * is 1 by doubling the product before its reduction, which costs nothing. */
#include "prime_fermat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define DIGIT_BITS 52
#define DIGIT_MASK ((UINT64_C(1) << DIGIT_BITS) - 1)
#define LIMBS_MAX (RANDD_FERMAT_BITS_MAX / 64 + 1)
#define DIGITS_MAX ((RANDD_FERMAT_BITS_MAX + 4 + DIGIT_BITS - 1) / DIGIT_BITS)   /* 79 */

/* RANDD_NO_IFMA=1 hides IFMA, as OPENSSL_ia32cap hides CPU features from OpenSSL: the path
 * every CPU without it takes can then be measured (bench-prime --no-ifma) and tested
 * (test_prime, `make check RANDD_NO_IFMA=1`) on one that has it. Only "1" hides it. Read at
 * each call: a search asks once. */
bool randd_fermat8_hidden(void)
{
    const char *v = secure_getenv("RANDD_NO_IFMA");

    return v && strcmp(v, "1") == 0;
}

#if defined(__x86_64__)
bool randd_fermat8_available(void)
{
    if (randd_fermat8_hidden())
        return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
}

/* --- one candidate, scalar: the set-up of its lane --------------------------------------- */

struct lane {
    uint64_t n[LIMBS_MAX], x[LIMBS_MAX];           /* little-endian 64-bit limbs */
    uint64_t n_digits[DIGITS_MAX], x_digits[DIGITS_MAX], k0;
};

static void load_be(uint64_t *limbs, size_t nlimbs, const uint8_t *be, size_t len)
{
    memset(limbs, 0, nlimbs * sizeof(*limbs));
    for (size_t i = 0; i < len; i++)
        limbs[i / 8] |= (uint64_t)be[len - 1 - i] << (8 * (i % 8));
}

/* x = 2 x mod n for x < n (the limbs have a spare top limb, so 2x cannot overflow). */
static void double_mod(uint64_t *x, const uint64_t *n, size_t nlimbs)
{
    uint64_t top = x[nlimbs - 1] >> 63, borrow = 0;
    int geq = 1;

    for (size_t i = nlimbs - 1; i > 0; i--)
        x[i] = x[i] << 1 | x[i - 1] >> 63;
    x[0] <<= 1;
    if (!top)
        for (size_t i = nlimbs; i-- > 0;)
            if (x[i] != n[i]) {
                geq = x[i] > n[i];
                break;
            }
    if (!top && !geq)
        return;
    for (size_t i = 0; i < nlimbs; i++) {
        unsigned __int128 d = (unsigned __int128)x[i] - n[i] - borrow;

        x[i] = (uint64_t)d;
        borrow = (uint64_t)(d >> 64) & 1;
    }
}

static void to_digits(uint64_t *digits, size_t ndigits, const uint64_t *limbs, size_t nlimbs)
{
    for (size_t d = 0; d < ndigits; d++) {
        size_t at = d * DIGIT_BITS, i = at / 64, shift = at % 64;
        uint64_t v = i < nlimbs ? limbs[i] >> shift : 0;

        if (shift > 64 - DIGIT_BITS && i + 1 < nlimbs)
            v |= limbs[i + 1] << (64 - shift);
        digits[d] = v & DIGIT_MASK;
    }
}

/* n's digits, k0 = -n^-1 mod 2^52, and x = 2 R mod n, the Montgomery form of 2. */
static void lane_init(struct lane *l, const uint8_t *be, unsigned bits, size_t ndigits)
{
    size_t len = (bits + 7) / 8, nlimbs = (bits + 63) / 64 + 1;    /* room for R = 2^(52 L) */
    uint64_t inv = 0;

    load_be(l->n, nlimbs, be, len);
    inv = l->n[0];                                   /* Newton: 3, 6, 12, 24, 48, 96 bits */
    for (int i = 0; i < 5; i++)
        inv *= 2 - l->n[0] * inv;
    l->k0 = -inv & DIGIT_MASK;
    memset(l->x, 0, nlimbs * sizeof(l->x[0]));
    l->x[(bits - 1) / 64] = (uint64_t)1 << ((bits - 1) % 64);       /* 2^(bits-1) < n */
    for (size_t e = bits - 1; e < DIGIT_BITS * ndigits + 1; e++)    /* up to 2^(52 L + 1) */
        double_mod(l->x, l->n, nlimbs);
    to_digits(l->n_digits, ndigits, l->n, nlimbs);
    to_digits(l->x_digits, ndigits, l->x, nlimbs);
}

/* --- eight lanes -------------------------------------------------------------------------- */

#define TARGET __attribute__((target("avx512f,avx512ifma")))
#include <immintrin.h>

struct batch {
    size_t ndigits;
    __m512i n[DIGITS_MAX], x[DIGITS_MAX], k0;
    __m512i t[2 * DIGITS_MAX + 1];
};

/* t[0 .. 2L) (unnormalised digits) reduced in SOS order: r = t R^-1 mod n, below 2n for
 * t < 8 n^2 (as (t + q n) / R < 8 n^2 / R + n), its digits normalised to 52 bits. */
TARGET static void reduce(struct batch *b, __m512i *r)
{
    size_t L = b->ndigits;
    __m512i *t = b->t, zero = _mm512_setzero_si512(), mask = _mm512_set1_epi64(DIGIT_MASK);

    t[2 * L] = zero;
    for (size_t i = 0; i < L; i++) {
        __m512i q = _mm512_madd52lo_epu64(zero, t[i], b->k0);   /* t_i + q n_0 = 0 mod 2^52 */

        for (size_t j = 0; j < L; j++) {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], q, b->n[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], q, b->n[j]);
        }
        t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64(t[i], DIGIT_BITS));
    }
    for (size_t j = 0; j < L; j++) {                                /* carries, low to high */
        __m512i v = t[L + j];

        r[j] = _mm512_and_si512(v, mask);
        if (j + 1 < L)
            t[L + j + 1] = _mm512_add_epi64(t[L + j + 1], _mm512_srli_epi64(v, DIGIT_BITS));
    }
}

/* x = x^2 R^-1 mod n, times 2 in the lanes of dbl: below 2n for x below 2n, as R > 8n. */
TARGET static void square(struct batch *b, __mmask8 dbl)
{
    size_t L = b->ndigits;
    __m512i *t = b->t, *x = b->x, zero = _mm512_setzero_si512();

    for (size_t k = 0; k < 2 * L; k++)
        t[k] = zero;
    for (size_t i = 0; i < L; i++)                                  /* each x_i x_j once */
        for (size_t j = i + 1; j < L; j++) {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], x[i], x[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], x[i], x[j]);
        }
    for (size_t i = 0; i < L; i++) {                                /* twice, plus x_i^2 */
        t[2 * i] = _mm512_add_epi64(t[2 * i], t[2 * i]);
        t[2 * i + 1] = _mm512_add_epi64(t[2 * i + 1], t[2 * i + 1]);
        t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], x[i], x[i]);
        t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], x[i], x[i]);
    }
    if (dbl)
        for (size_t k = 0; k < 2 * L; k++)
            t[k] = _mm512_mask_add_epi64(t[k], dbl, t[k], t[k]);
    reduce(b, x);
}

/* r = x y R^-1 mod n, below 2n for x, y below 2n; r may be x or y. */
TARGET static void mul(struct batch *b, __m512i *r, const __m512i *x, const __m512i *y)
{
    size_t L = b->ndigits;
    __m512i *t = b->t, zero = _mm512_setzero_si512();

    for (size_t k = 0; k < 2 * L; k++)
        t[k] = zero;
    for (size_t i = 0; i < L; i++)
        for (size_t j = 0; j < L; j++) {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], x[i], y[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], x[i], y[j]);
        }
    reduce(b, r);
}

TARGET static void fermat8(struct lane lanes[RANDD_FERMAT_LANES], struct batch *b,
                           unsigned bits, bool pass[RANDD_FERMAT_LANES])
{
    size_t L = b->ndigits;
    uint64_t out[RANDD_FERMAT_LANES];

    for (size_t j = 0; j < L; j++) {
        uint64_t nd[RANDD_FERMAT_LANES], xd[RANDD_FERMAT_LANES];

        for (int k = 0; k < RANDD_FERMAT_LANES; k++)
            nd[k] = lanes[k].n_digits[j], xd[k] = lanes[k].x_digits[j];
        b->n[j] = _mm512_loadu_si512(nd);
        b->x[j] = _mm512_loadu_si512(xd);
    }
    for (int k = 0; k < RANDD_FERMAT_LANES; k++)
        out[k] = lanes[k].k0;
    b->k0 = _mm512_loadu_si512(out);
    /* Exponent n - 1: bits - 1 is the top bit (already in x = 2), bit 0 is clear. */
    for (unsigned i = bits - 1; i-- > 0;) {
        __mmask8 dbl = 0;

        for (int k = 0; k < RANDD_FERMAT_LANES && i > 0; k++)
            dbl |= (__mmask8)((lanes[k].n[i / 64] >> (i % 64) & 1) << k);
        square(b, dbl);
    }
    /* Out of Montgomery form: reduce x itself; the result lies in [0, n], 1 only for 1. */
    for (size_t k = 0; k < 2 * L; k++)
        b->t[k] = k < L ? b->x[k] : _mm512_setzero_si512();
    reduce(b, b->x);
    for (int k = 0; k < RANDD_FERMAT_LANES; k++)
        pass[k] = true;
    for (size_t j = 0; j < L; j++) {
        _mm512_storeu_si512(out, b->x[j]);
        for (int k = 0; k < RANDD_FERMAT_LANES; k++)
            if (out[k] != (j == 0))
                pass[k] = false;
    }
}

/* The registers' spill space: 20 KiB, on the heap rather than on a daemon thread's stack. */
static struct batch *batch_new(size_t extra)
{
    return aligned_alloc(64, sizeof(struct batch) + extra);
}

static void batch_free(struct batch *b, size_t extra)
{
    OPENSSL_cleanse(b, sizeof(*b) + extra);
    free(b);
}

int randd_fermat8(const uint8_t *const n[], size_t count, unsigned bits, bool pass[])
{
    struct batch *b = batch_new(0);
    struct lane lanes[RANDD_FERMAT_LANES];
    bool all[RANDD_FERMAT_LANES];
    size_t ndigits = (bits + 4 + DIGIT_BITS - 1) / DIGIT_BITS;      /* 2^(52 L) >= 16 n */

    if (!b)
        return -ENOMEM;
    for (size_t k = 0; k < RANDD_FERMAT_LANES; k++)   /* idle lanes repeat the first */
        lane_init(&lanes[k], n[k < count ? k : 0], bits, ndigits);
    b->ndigits = ndigits;
    fermat8(lanes, b, bits, all);
    memcpy(pass, all, count * sizeof(*pass));
    OPENSSL_cleanse(lanes, sizeof(lanes));
    batch_free(b, 0);
    return 0;
}

/* --- one candidate, eight bases ------------------------------------------------------- */

#define WINDOW 4

/* The scalar facts about n all lanes share: R mod n and R^2 mod n (2^(bits-1) doubled), the
 * residues that mean 1 and -1 in Montgomery form in both their representatives below 2n, and
 * n - 1 = d 2^s. */
struct shared {
    uint64_t n[LIMBS_MAX], x[LIMBS_MAX], one[LIMBS_MAX], d[LIMBS_MAX], tmp[LIMBS_MAX];
    uint64_t n_digits[DIGITS_MAX], r2_digits[DIGITS_MAX], k0;
    uint64_t one_digits[2][DIGITS_MAX], minus_one_digits[2][DIGITS_MAX];
    unsigned s;
};

/* r = a + b or a - b over nlimbs limbs (no overflow or borrow by construction). */
static void add_limbs(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t nlimbs,
                      int sign)
{
    unsigned __int128 c = 0;

    for (size_t i = 0; i < nlimbs; i++) {
        c = (unsigned __int128)a[i] + (sign > 0 ? b[i] : ~b[i]) + (uint64_t)c +
            (sign < 0 && !i);
        r[i] = (uint64_t)c;
        c >>= 64;
    }
}

static void shared_init(struct shared *sh, const uint8_t *be, unsigned bits, size_t L)
{
    size_t nlimbs = (bits + 63) / 64 + 1;
    uint64_t inv;

    memset(sh, 0, sizeof(*sh));                             /* d's high limbs are read */
    load_be(sh->n, nlimbs, be, (bits + 7) / 8);
    inv = sh->n[0];
    for (int i = 0; i < 5; i++)
        inv *= 2 - sh->n[0] * inv;
    sh->k0 = -inv & DIGIT_MASK;
    memset(sh->x, 0, nlimbs * sizeof(sh->x[0]));
    sh->x[(bits - 1) / 64] = (uint64_t)1 << ((bits - 1) % 64);
    for (size_t e = bits - 1; e < 2 * DIGIT_BITS * L; e++) {
        if (e == DIGIT_BITS * L)
            memcpy(sh->one, sh->x, nlimbs * sizeof(sh->x[0]));
        double_mod(sh->x, sh->n, nlimbs);
    }
    to_digits(sh->n_digits, L, sh->n, nlimbs);
    to_digits(sh->r2_digits, L, sh->x, nlimbs);
    to_digits(sh->one_digits[0], L, sh->one, nlimbs);
    add_limbs(sh->tmp, sh->one, sh->n, nlimbs, 1);
    to_digits(sh->one_digits[1], L, sh->tmp, nlimbs);
    add_limbs(sh->tmp, sh->n, sh->one, nlimbs, -1);
    to_digits(sh->minus_one_digits[0], L, sh->tmp, nlimbs);
    add_limbs(sh->tmp, sh->tmp, sh->n, nlimbs, 1);
    to_digits(sh->minus_one_digits[1], L, sh->tmp, nlimbs);
    memcpy(sh->d, sh->n, nlimbs * sizeof(sh->n[0]));
    sh->d[0]--;                                             /* n odd: no borrow */
    for (sh->s = 0; !(sh->d[sh->s / 64] >> (sh->s % 64) & 1); sh->s++)
        ;
}

static unsigned exponent_bit(const struct shared *sh, size_t i)    /* bit i of d */
{
    size_t at = i + sh->s;

    return at / 64 < LIMBS_MAX ? sh->d[at / 64] >> (at % 64) & 1 : 0;
}

/* Lanes whose x is c mod n: x < 2n is c or c + n. */
TARGET static __mmask8 lanes_equal(const struct batch *b, const __m512i *x,
                                   const uint64_t c[2][DIGITS_MAX])
{
    __mmask8 eq[2] = { 0xff, 0xff };

    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < b->ndigits; j++)
            eq[k] &= _mm512_cmpeq_epi64_mask(x[j], _mm512_set1_epi64((long long)c[k][j]));
    return eq[0] | eq[1];
}

/* x = a^d for the Montgomery-form bases a: fixed windows of 4 bits, the same in every lane. */
TARGET static void pow_d(struct batch *b, const struct shared *sh, __m512i *table)
{
    size_t L = b->ndigits, nbits = 0, chunks;

    for (size_t i = 64 * LIMBS_MAX - sh->s; i-- > 0;)
        if (exponent_bit(sh, i)) {
            nbits = i + 1;
            break;
        }
    chunks = (nbits + WINDOW - 1) / WINDOW;
    for (size_t k = 2; k < 1u << WINDOW; k++)
        mul(b, table + k * L, table + (k - 1) * L, table + L);
    memcpy(b->x, table, L * sizeof(b->x[0]));
    for (size_t c = chunks; c-- > 0;) {
        unsigned v = 0;

        for (unsigned bit = WINDOW; bit-- > 0;)
            v = v << 1 | exponent_bit(sh, c * WINDOW + bit);
        if (c + 1 < chunks)
            for (unsigned k = 0; k < WINDOW; k++)
                square(b, 0);
        if (v)
            mul(b, b->x, b->x, table + v * L);
    }
}

TARGET static __mmask8 strong8(struct batch *b, const struct shared *sh, __m512i *table,
                               const uint64_t base_digits[RANDD_FERMAT_LANES][DIGITS_MAX])
{
    size_t L = b->ndigits;
    __mmask8 pass, minus_one;

    for (size_t j = 0; j < L; j++) {
        uint64_t lane[RANDD_FERMAT_LANES];

        for (int k = 0; k < RANDD_FERMAT_LANES; k++)
            lane[k] = base_digits[k][j];
        b->n[j] = _mm512_set1_epi64((long long)sh->n_digits[j]);
        b->x[j] = _mm512_loadu_si512(lane);
        table[j] = _mm512_set1_epi64((long long)sh->one_digits[0][j]);
        table[L + j] = _mm512_set1_epi64((long long)sh->r2_digits[j]);
    }
    b->k0 = _mm512_set1_epi64((long long)sh->k0);
    mul(b, table + L, b->x, table + L);                     /* a R, the Montgomery form */
    pow_d(b, sh, table);
    minus_one = lanes_equal(b, b->x, sh->minus_one_digits);
    pass = lanes_equal(b, b->x, sh->one_digits) | minus_one;
    for (unsigned i = 1; i < sh->s && pass != 0xff; i++) {  /* a^(d 2^i) for i < s */
        square(b, 0);
        pass |= lanes_equal(b, b->x, sh->minus_one_digits);
    }
    return pass;
}

int randd_strong8(const uint8_t *n, unsigned bits, const uint8_t *const base[], size_t count,
                  bool pass[])
{
    size_t L = (bits + 4 + DIGIT_BITS - 1) / DIGIT_BITS, nlimbs = (bits + 63) / 64 + 1;
    size_t table_size = ((size_t)1 << WINDOW) * L * sizeof(__m512i);
    struct batch *b = batch_new(table_size);
    struct shared sh;
    uint64_t base_digits[RANDD_FERMAT_LANES][DIGITS_MAX], limbs[LIMBS_MAX];
    __mmask8 ok;

    if (!b)
        return -ENOMEM;
    shared_init(&sh, n, bits, L);
    for (size_t k = 0; k < RANDD_FERMAT_LANES; k++) {      /* idle lanes repeat the first */
        load_be(limbs, nlimbs, base[k < count ? k : 0], (bits + 7) / 8);
        to_digits(base_digits[k], L, limbs, nlimbs);
    }
    b->ndigits = L;
    ok = strong8(b, &sh, (__m512i *)(b + 1), base_digits);
    for (size_t k = 0; k < count; k++)
        pass[k] = ok >> k & 1;
    OPENSSL_cleanse(&sh, sizeof(sh));
    OPENSSL_cleanse(base_digits, sizeof(base_digits));
    OPENSSL_cleanse(limbs, sizeof(limbs));
    batch_free(b, table_size);
    return 0;
}

#else   /* no AVX-512 off x86-64: prime.c takes OpenSSL's path, one candidate at a time */

bool randd_fermat8_available(void)
{
    return false;
}

int randd_fermat8(const uint8_t *const n[], size_t count, unsigned bits, bool pass[])
{
    (void)n, (void)count, (void)bits, (void)pass;
    return -ENOSYS;
}

int randd_strong8(const uint8_t *n, unsigned bits, const uint8_t *const base[], size_t count,
                  bool pass[])
{
    (void)n, (void)bits, (void)base, (void)count, (void)pass;
    return -ENOSYS;
}
#endif
