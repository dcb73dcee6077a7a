/* Primes (internal/prime.c, internal/montgomery.c, internal/prime_fermat.c): Montgomery
 * exponentiation and the eight-lane Fermat test against BN_mod_exp,
 * primality at the known hard cases and against BN_check_prime on random odd numbers, and
 * PRIME candidates that are prime, of the exact size, and spread over the primes. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <openssl/bn.h>

#include "cymric.h"
#include "prime.h"
#include "prime_fermat.h"
#include "runner.h"

static randd_u128 u128(uint64_t hi, uint64_t lo)
{
    return (randd_u128)hi << 64 | lo;
}

static BIGNUM *bn_from_u128(randd_u128 v)
{
    uint8_t b[16];

    for (int i = 15; i >= 0; i--, v >>= 8)
        b[i] = (uint8_t)v;
    return BN_bin2bn(b, 16, NULL);
}

static randd_u128 u128_from_bn(const BIGNUM *bn)
{
    uint8_t b[16];
    randd_u128 v = 0;

    ck_assert_int_eq(BN_bn2binpad(bn, b, 16), 16);
    for (int i = 0; i < 16; i++)
        v = v << 8 | b[i];
    return v;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* --- Montgomery ----------------------------------------------------------------------------- */

START_TEST(montgomery_modexp_matches_bn_mod_exp)
{
    BN_CTX *ctx = BN_CTX_new();
    uint64_t seed = 1;

    for (int i = 0; i < 10000; i++) {
        /* 64-bit: odd moduli of every size, including ones above 2^63. */
        uint64_t n = (splitmix(&seed) >> (i % 60)) | 1, b = splitmix(&seed), e = splitmix(&seed);
        BIGNUM *bn = BN_new(), *bb = BN_new(), *be = BN_new(), *r = BN_new();

        if (n == 1)
            n = 3;
        BN_set_word(bn, n), BN_set_word(bb, b), BN_set_word(be, e);
        ck_assert(BN_mod_exp(r, bb, be, bn, ctx));
        ck_assert_msg(randd_modexp64(b, e, n) == BN_get_word(r),
                      "%lu^%lu mod %lu: got %lu, BN says %lu", (unsigned long)b, (unsigned long)e,
                      (unsigned long)n, (unsigned long)randd_modexp64(b, e, n),
                      (unsigned long)BN_get_word(r));

        /* 128-bit. */
        randd_u128 n2 = u128(splitmix(&seed) >> (i % 64), splitmix(&seed)) | 1;
        randd_u128 b2 = u128(splitmix(&seed), splitmix(&seed)), e2 = u128(splitmix(&seed), splitmix(&seed));
        BIGNUM *bn2 = bn_from_u128(n2), *bb2 = bn_from_u128(b2), *be2 = bn_from_u128(e2);

        if (n2 == 1)
            n2 = 3, BN_set_word(bn2, 3);
        ck_assert(BN_mod_exp(r, bb2, be2, bn2, ctx));
        randd_u128 got = randd_modexp128(b2, e2, n2), want = u128_from_bn(r);

        ck_assert_msg(got == want, "128-bit modexp %d, mod %016lx%016lx: got %016lx%016lx, "
                      "BN says %016lx%016lx", i, (unsigned long)(n2 >> 64), (unsigned long)n2,
                      (unsigned long)(got >> 64), (unsigned long)got,
                      (unsigned long)(want >> 64), (unsigned long)want);
        BN_free(bn), BN_free(bb), BN_free(be), BN_free(r), BN_free(bn2), BN_free(bb2), BN_free(be2);
    }
    BN_CTX_free(ctx);
}
END_TEST

/* --- the hard cases ----------------------------------------------------------------------- */

START_TEST(known_primes_are_prime)
{
    ck_assert(randd_is_prime_u64(2));
    ck_assert(randd_is_prime_u64(3));
    ck_assert(randd_is_prime_u64(65537));
    ck_assert(randd_is_prime_u64((1ull << 61) - 1));                 /* Mersenne M61 */
    ck_assert(randd_is_prime_u64(UINT64_MAX - 58));                  /* 2^64 - 59 */
    ck_assert(randd_is_prime_u64(4294967291u));                      /* 2^32 - 5 */
    ck_assert(randd_is_prime_u128(((randd_u128)1 << 89) - 1));       /* M89 */
    ck_assert(randd_is_prime_u128(((randd_u128)1 << 107) - 1));      /* M107 */
    ck_assert(randd_is_prime_u128(((randd_u128)1 << 127) - 1));      /* M127 */
    ck_assert(randd_is_prime_u128(((randd_u128)1 << 64) + 13));      /* the first prime past 2^64 */
    ck_assert(randd_is_prime_u128(~(randd_u128)0 - 158));            /* 2^128 - 159 */
}
END_TEST

START_TEST(composites_that_fool_weaker_tests_are_composite)
{
    /* Carmichael numbers (Fermat liars for every coprime base). */
    static const uint64_t carmichael[] = { 561, 1105, 1729, 2465, 41041, 825265, 321197185,
                                           5394826801ull, 232250619601ull, 9746347772161ull,
                                           3825123056546413051ull };
    /* Strong pseudoprimes to base 2, and 3825123056546413051 (also Carmichael), strong to
     * bases 2..23. */
    static const uint64_t spsp[] = { 2047, 3277, 4033, 3215031751ull, 3825123056546413051ull };

    for (size_t i = 0; i < sizeof(carmichael) / sizeof(carmichael[0]); i++)
        ck_assert_msg(!randd_is_prime_u64(carmichael[i]), "Carmichael %lu called prime",
                      (unsigned long)carmichael[i]);
    for (size_t i = 0; i < sizeof(spsp) / sizeof(spsp[0]); i++)
        ck_assert_msg(!randd_is_prime_u64(spsp[i]), "%lu called prime", (unsigned long)spsp[i]);
    /* Squares of primes, and products of two close primes. */
    ck_assert(!randd_is_prime_u64(2147483647ull * 2147483647ull));                 /* (2^31-1)^2 */
    ck_assert(!randd_is_prime_u64(4294967291ull * 4294967291ull));
    ck_assert(!randd_is_prime_u64(4294967291ull * 4294967279ull));
    ck_assert(!randd_is_prime_u128((randd_u128)((1ull << 61) - 1) * ((1ull << 61) - 1)));
    ck_assert(!randd_is_prime_u128((randd_u128)(UINT64_MAX - 58) * (UINT64_MAX - 82)));   /* 2^64-59, 2^64-83 */
    ck_assert(!randd_is_prime_u128((randd_u128)(UINT64_MAX - 58) * (UINT64_MAX - 58)));
    /* 3825123056546413051 * a 64-bit prime: a strong pseudoprime factor does not help. */
    ck_assert(!randd_is_prime_u128((randd_u128)3825123056546413051ull * (UINT64_MAX - 58)));
}
END_TEST

/* Every number below 2^16 against a plain sieve: the trial division's edges (a small prime
 * itself, the square of the first prime not tried) and Miller-Rabin's skipped bases. */
START_TEST(every_number_below_65536_is_classified_like_a_sieve)
{
    static uint8_t composite[65536];

    composite[0] = composite[1] = 1;
    for (unsigned i = 2; i < 65536; i++)
        for (unsigned j = i * i; i < 256 && j < 65536; j += i)
            composite[j] = 1;
    for (unsigned v = 0; v < 65536; v++) {
        ck_assert_msg(randd_is_prime_u64(v) == !composite[v], "%u: expected %s, got %s", v,
                      composite[v] ? "composite" : "prime", composite[v] ? "prime" : "composite");
        ck_assert_msg(randd_is_prime_u128(v) == !composite[v], "u128 %u", v);
    }
}
END_TEST

/* randd_is_prime_bytes picks the test by size, ignoring leading zero bytes. */
START_TEST(bytes_dispatch_by_size)
{
    uint8_t b[160];
    size_t n;

    n = unhex("0000 0000 7fff ffff", b, sizeof(b));                                /* 2^31-1 */
    ck_assert_int_eq(randd_is_prime_bytes(b, n), 1);
    n = unhex("ffff ffff ffff ffc5", b, sizeof(b));                                /* 2^64-59 */
    ck_assert_int_eq(randd_is_prime_bytes(b, n), 1);
    n = unhex("7fff ffff ffff ffff ffff ffff ffff ffff", b, sizeof(b));            /* 2^127-1 */
    ck_assert_int_eq(randd_is_prime_bytes(b, n), 1);
    n = unhex("7fff ffff ffff ffff ffff ffff ffff fffd", b, sizeof(b));            /* 2^127-3 */
    ck_assert_int_eq(randd_is_prime_bytes(b, n), 0);
    /* 2^521-1 (Mersenne) and 2^521-3 (composite, no factor below 2000): BN_check_prime. */
    memset(b, 0xff, 66);
    b[0] = 0x01;
    ck_assert_int_eq(randd_is_prime_bytes(b, 66), 1);
    b[65] = 0xfd;
    ck_assert_int_eq(randd_is_prime_bytes(b, 66), 0);
    /* (2^89-1)^2: 178 bits, no small factor, so it reaches BN_check_prime. */
    {
        BN_CTX *ctx = BN_CTX_new();
        BIGNUM *m = BN_new();

        ck_assert(BN_set_bit(m, 89) && BN_sub_word(m, 1) && BN_sqr(m, m, ctx));
        n = (size_t)BN_num_bytes(m);
        ck_assert(BN_bn2bin(m, b) == (int)n);
        ck_assert_int_eq(randd_is_prime_bytes(b, n), 0);
        BN_free(m);
        BN_CTX_free(ctx);
    }
    ck_assert_int_eq(randd_is_prime_bytes(b, 0), 0);
}
END_TEST

/* Strong Lucas pseudoprimes pass the Lucas half alone; BPSW's base-2 half catches them. */
START_TEST(bpsw_needs_both_halves)
{
    static const uint64_t slpsp[] = { 5459, 5777, 10877, 16109, 18971, 22499, 24569, 25199 };
    /* The 128-bit Lucas function needs n > 2^64 in use, but is exact for any odd n. */
    for (size_t i = 0; i < sizeof(slpsp) / sizeof(slpsp[0]); i++) {
        ck_assert_msg(randd_strong_lucas_u128(slpsp[i]), "%lu is a strong Lucas pseudoprime",
                      (unsigned long)slpsp[i]);
        ck_assert_msg(!randd_strong_probable_prime_u128(slpsp[i], 2), "%lu passed base 2",
                      (unsigned long)slpsp[i]);
    }
    /* And the base-2 strong pseudoprimes fail the Lucas half. */
    ck_assert(randd_strong_probable_prime_u128(2047, 2));
    ck_assert(!randd_strong_lucas_u128(2047));
    ck_assert(randd_strong_probable_prime_u128(3215031751ull, 2));
    ck_assert(!randd_strong_lucas_u128(3215031751ull));
}
END_TEST

/* --- against OpenSSL ------------------------------------------------------------------------ */

static void agree_with_bn(int bits, int count)
{
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *bn = BN_new();
    uint64_t seed = (uint64_t)bits;
    int primes = 0;

    for (int i = 0; i < count; i++) {
        randd_u128 n = bits == 64 ? splitmix(&seed) : u128(splitmix(&seed), splitmix(&seed));
        uint8_t b[16];

        n |= 1;
        for (int k = 15; k >= 0; k--)
            b[k] = (uint8_t)(n >> (8 * (15 - k)));
        ck_assert(BN_bin2bn(b, 16, bn));
        int want = BN_check_prime(bn, ctx, NULL);
        bool got = randd_is_prime_u128(n);

        ck_assert_msg(got == want, "%d-bit number %d: randd says %d, BN_check_prime %d", bits, i,
                      got, want);
        primes += got;
    }
    /* About 2 / ln(2^bits) of odd numbers are prime: a few thousand here. */
    ck_assert_msg(primes > count / 100, "only %d primes among %d odd numbers", primes, count);
    BN_free(bn);
    BN_CTX_free(ctx);
}

/* 100,000 of each natively; 10,000 on an emulated CPU (runner_count), where BN_check_prime
 * made this most of test_prime's four minutes in the arm64 guest. */
START_TEST(agrees_with_bn_check_prime_on_100000_odd_64_bit_numbers)
{
    agree_with_bn(64, runner_count(100000));
}
END_TEST
START_TEST(agrees_with_bn_check_prime_on_100000_odd_128_bit_numbers)
{
    agree_with_bn(128, runner_count(100000));
}
END_TEST

/* --- rounds for random candidates ----------------------------------------------------- */

/* At 2^-80 the average-case bounds give the table OpenSSL 1.1 shipped as
 * BN_prime_checks_for_size (from the Handbook of Applied Cryptography, Table 4.4): the
 * rounds at each of its thresholds, and one bit below, where the next row's count holds. */
START_TEST(rounds_for_2_to_the_minus_80_match_the_published_table)
{
    static const struct { unsigned bits, rounds, below; } table[] = {
        { 1300, 2, 3 }, { 850, 3, 4 }, { 650, 4, 5 }, { 550, 5, 6 }, { 450, 6, 7 },
        { 400, 7, 8 }, { 350, 8, 9 }, { 300, 9, 10 }, { 250, 12, 12 }, { 200, 15, 15 },
        { 150, 18, 18 }, { 100, 27, 27 },
    };

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        unsigned got = randd_prime_rounds_for(table[i].bits, 80);

        ck_assert_msg(got == table[i].rounds, "%u bits at 2^-80: expected %u rounds, got %u",
                      table[i].bits, table[i].rounds, got);
        got = randd_prime_rounds_for(table[i].bits - 1, 80);
        ck_assert_msg(got <= table[i].below && got >= table[i].rounds,
                      "%u bits at 2^-80: expected %u to %u rounds, got %u", table[i].bits - 1,
                      table[i].rounds, table[i].below, got);
    }
}
END_TEST

/* OpenSSL 3's bound: 2^-128 to 2048 bits, 2^-256 above; never more rounds than its worst-case
 * 64 (128), fewer as candidates grow (a bigger random odd number is less often a liar's). */
START_TEST(rounds_keep_openssl_3s_error_bound_and_fall_with_size)
{
    static const struct { unsigned bits, rounds; } at[] = {
        { 129, 44 }, { 256, 29 }, { 512, 12 }, { 1024, 6 }, { 2048, 3 }, { 2049, 10 },
        { 3072, 7 }, { 4096, 5 },
    };

    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        ck_assert_msg(randd_prime_rounds(at[i].bits) == at[i].rounds,
                      "%u bits: expected %u rounds, got %u", at[i].bits, at[i].rounds,
                      randd_prime_rounds(at[i].bits));
    /* The bounds hand over to one another at t = k/9, so the count may rise by one from one
     * size to the next; 64 bits on, it never has. */
    for (unsigned bits = 129; bits <= RANDD_PRIME_BITS_MAX; bits++) {
        unsigned t = randd_prime_rounds(bits);

        ck_assert_msg(t <= (bits > 2048 ? 128u : 64u), "%u bits: %u rounds", bits, t);
        if (bits - 64 >= 129 && (bits - 64 > 2048) == (bits > 2048))
            ck_assert_msg(t <= randd_prime_rounds(bits - 64), "%u bits: %u rounds, %u at 64 "
                          "bits less", bits, t, randd_prime_rounds(bits - 64));
    }
    /* With no help from the average case, 4^-t alone: the worst-case counts. */
    ck_assert_uint_eq(randd_prime_rounds_for(2, 128), 64);
}
END_TEST

/* --- random primes ---------------------------------------------------------------------------- */

static int generator_fill(void *g, void *buf, size_t n)
{
    return randd_cymric_read(g, buf, n);
}

static struct randd_cymric gen;
static struct randd_byte_source src = { generator_fill, &gen };

static void seed_generator(void)
{
    ck_assert_int_eq(randd_cymric_init(&gen, RANDD_CYMRIC_DETERMINISTIC), 0);
    ck_assert_int_eq(randd_cymric_seed(&gen, "test_prime", 10), 0);
}

/* Eight lanes at once, each its own modulus: every size class of the digit count (52-bit
 * digits, so 129, 260 and 261 bits straddle one), primes and composites side by side, and
 * batches of fewer than eight. The answer must be BN_mod_exp's 2^(n-1) mod n == 1. */
START_TEST(fermat8_agrees_with_bn_mod_exp_in_every_lane)
{
    static const unsigned sizes[] = { 129, 200, 256, 260, 261, 512, 777, 1024, 2048, 4096 };
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *n = BN_new(), *e = BN_new(), *r = BN_new(), *two = BN_new();
    static uint8_t buf[RANDD_FERMAT_LANES][RANDD_PRIME_BITS_MAX / 8];
    const uint8_t *at[RANDD_FERMAT_LANES];
    bool pass[RANDD_FERMAT_LANES], want[RANDD_FERMAT_LANES];
    unsigned passed = 0, failed = 0;

    if (!randd_fermat8_available()) {
        fprintf(stderr, "fermat8_agrees_with_bn_mod_exp_in_every_lane: skipped, no AVX-512 "
                "IFMA (or RANDD_NO_IFMA hides it)\n");
        goto out;
    }
    ck_assert(BN_set_word(two, 2));
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = (sizes[i] + 7) / 8, count = i % 2 ? 5 : RANDD_FERMAT_LANES;

        for (size_t k = 0; k < count; k++) {
            if (k == 1 && sizes[i] == 2048)      /* RFC 3526's: generating one takes seconds */
                ck_assert(BN_get_rfc3526_prime_2048(n));
            else if (k == 1 && sizes[i] == 4096)
                ck_assert(BN_get_rfc3526_prime_4096(n));
            else if (k == 1 || (k % 3 == 1 && sizes[i] <= 1024))
                ck_assert(BN_generate_prime_ex(n, (int)sizes[i], 0, NULL, NULL, NULL));
            else
                ck_assert(BN_rand(n, (int)sizes[i], BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD));
            ck_assert_int_eq(BN_bn2binpad(n, buf[k], (int)len), (int)len);
            at[k] = buf[k];
            ck_assert(BN_sub(e, n, BN_value_one()) && BN_mod_exp(r, two, e, n, ctx));
            want[k] = BN_is_one(r);
        }
        ck_assert_int_eq(randd_fermat8(at, count, sizes[i], pass), 0);
        for (size_t k = 0; k < count; k++) {
            ck_assert_msg(pass[k] == want[k], "%u bits, lane %zu: fermat8 says %d, "
                          "BN_mod_exp %d", sizes[i], k, pass[k], want[k]);
            passed += pass[k], failed += !pass[k];
        }
    }
    ck_assert(passed >= 10 && failed >= 10);            /* both answers were exercised */
out:
    BN_free(n), BN_free(e), BN_free(r), BN_free(two);
    BN_CTX_free(ctx);
}
END_TEST

/* Miller-Rabin to base a, written plainly with BIGNUMs: the reference for randd_strong8. */
static bool strong_reference(const BIGNUM *n, const BIGNUM *a, BN_CTX *ctx)
{
    BIGNUM *n1 = BN_new(), *d = BN_new(), *x = BN_new();
    int s = 0;
    bool pass;

    ck_assert(BN_sub(n1, n, BN_value_one()));
    while (!BN_is_bit_set(n1, s))
        s++;
    ck_assert(BN_rshift(d, n1, s) && BN_mod_exp(x, a, d, n, ctx));
    pass = BN_is_one(x) || BN_cmp(x, n1) == 0;
    for (int i = 1; i < s && !pass; i++) {
        ck_assert(BN_mod_sqr(x, x, n, ctx));
        pass = BN_cmp(x, n1) == 0;
    }
    BN_free(n1), BN_free(d), BN_free(x);
    return pass;
}

/* Eight bases against one n: a prime with n - 1 = d 2^20 (so bases meet -1 deep in the chain
 * of squarings; not at 4096 bits, which takes seconds), random odd composites, and the bases 2
 * and n - 1, in full and short batches. */
START_TEST(strong8_agrees_with_a_plain_miller_rabin_in_every_lane)
{
    static const unsigned sizes[] = { 129, 256, 261, 512, 1024, 2048, 4096 };
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *n = BN_new(), *a = BN_new(), *n3 = BN_new(), *add = BN_new();
    static uint8_t nb[RANDD_PRIME_BITS_MAX / 8];
    static uint8_t buf[RANDD_FERMAT_LANES][RANDD_PRIME_BITS_MAX / 8];
    const uint8_t *at[RANDD_FERMAT_LANES];
    bool pass[RANDD_FERMAT_LANES];
    unsigned passed = 0, failed = 0;

    if (!randd_fermat8_available()) {
        fprintf(stderr, "strong8_agrees_with_a_plain_miller_rabin_in_every_lane: skipped, no "
                "AVX-512 IFMA (or RANDD_NO_IFMA hides it)\n");
        goto out;
    }
    ck_assert(BN_set_word(add, 1) && BN_lshift(add, add, 20));
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = (sizes[i] + 7) / 8;

        for (int kind = sizes[i] > 2048; kind < 3; kind++) {      /* big primes are slow */
            size_t count = kind == 1 ? 3 : RANDD_FERMAT_LANES;

            if (kind == 0)
                ck_assert(BN_generate_prime_ex(n, (int)sizes[i], 0, add, BN_value_one(), NULL));
            else
                ck_assert(BN_rand(n, (int)sizes[i], BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD));
            ck_assert_int_eq(BN_bn2binpad(n, nb, (int)len), (int)len);
            ck_assert(BN_copy(n3, n) && BN_sub_word(n3, 3));
            for (size_t k = 0; k < count; k++) {
                ck_assert(BN_rand_range(a, n3) && BN_add_word(a, 2));
                if (k == 0)
                    ck_assert(BN_set_word(a, 2));
                if (k == 1)
                    ck_assert(BN_sub(a, n, BN_value_one()));
                ck_assert_int_eq(BN_bn2binpad(a, buf[k], (int)len), (int)len);
                at[k] = buf[k];
            }
            ck_assert_int_eq(randd_strong8(nb, sizes[i], at, count, pass), 0);
            for (size_t k = 0; k < count; k++) {
                bool want;

                ck_assert(BN_bin2bn(buf[k], (int)len, a));
                want = strong_reference(n, a, ctx);
                ck_assert_msg(pass[k] == want, "%u bits, kind %d, lane %zu: strong8 says %d, "
                              "BN %d", sizes[i], kind, k, pass[k], want);
                passed += pass[k], failed += !pass[k];
            }
        }
    }
    ck_assert(passed >= 10 && failed >= 10);
out:
    BN_free(n), BN_free(a), BN_free(n3), BN_free(add);
    BN_CTX_free(ctx);
}
END_TEST

START_TEST(generated_primes_are_prime_and_exactly_bits_long)
{
    static const unsigned sizes[] = { 16, 17, 63, 64, 65, 127, 128, 129, 256, 1024, 2048,
                                      3000 };
    BN_CTX *ctx = BN_CTX_new();
    uint8_t out[RANDD_PRIME_BITS_MAX / 8];

    seed_generator();
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int rep = 0; rep < (sizes[i] > 1024 ? 1 : sizes[i] > 256 ? 2 : 5); rep++) {
            size_t len = (sizes[i] + 7) / 8;
            BIGNUM *bn;

            ck_assert_int_eq(randd_prime_generate(sizes[i], out, &src), 0);
            bn = BN_bin2bn(out, (int)len, NULL);
            ck_assert_msg(BN_num_bits(bn) == (int)sizes[i], "asked %u bits, got %d", sizes[i],
                          BN_num_bits(bn));
            ck_assert_msg(BN_check_prime(bn, ctx, NULL) == 1, "%u-bit output is not prime", sizes[i]);
            BN_free(bn);
        }
    }
    ck_assert_int_eq(randd_prime_generate(15, out, &src), -EINVAL);
    ck_assert_int_eq(randd_prime_generate(4097, out, &src), -E2BIG);
    randd_cymric_fini(&gen);
    BN_CTX_free(ctx);
}
END_TEST

/* 16-bit primes: all 3030 of them in [2^15, 2^16) should come up about equally often. */
START_TEST(sixteen_bit_primes_are_drawn_uniformly)
{
    enum { DRAWS = 303000, BUCKETS = 16 };
    static unsigned hits[65536];
    unsigned primes = 0, per_bucket[BUCKETS] = { 0 }, bucket_primes[BUCKETS] = { 0 };
    double chi = 0;
    uint8_t out[2];

    seed_generator();
    for (unsigned v = 32768; v < 65536; v++)
        if (randd_is_prime_u64(v))
            primes++, bucket_primes[(v - 32768) * BUCKETS / 32768]++;
    ck_assert_uint_eq(primes, 3030);
    for (int i = 0; i < DRAWS; i++) {
        ck_assert_int_eq(randd_prime_generate(16, out, &src), 0);
        hits[out[0] << 8 | out[1]]++;
    }
    for (unsigned v = 32768; v < 65536; v++) {
        if (!randd_is_prime_u64(v)) {
            ck_assert_msg(hits[v] == 0, "composite %u drawn", v);
            continue;
        }
        per_bucket[(v - 32768) * BUCKETS / 32768] += hits[v];
        double e = (double)DRAWS / primes, d = hits[v] - e;
        chi += d * d / e;
    }
    /* 3029 degrees of freedom: mean 3029, sd 77.8; 6 sd is far out. */
    ck_assert_msg(fabs(chi - 3029) < 6 * 77.8, "chi-square %.0f over the 3030 primes", chi);
    /* Primes after long gaps are not favoured: buckets follow their share of primes. */
    for (int b = 0; b < BUCKETS; b++) {
        double e = (double)DRAWS * bucket_primes[b] / primes;

        ck_assert_msg(fabs(per_bucket[b] - e) < 6 * sqrt(e), "bucket %d: %u draws, expected %.0f",
                      b, per_bucket[b], e);
    }
    randd_cymric_fini(&gen);
}
END_TEST

/* Above 128 bits: primes whose p - 1 has many factors of 2 come up as often as the rest, so
 * the strong test's squarings accept them (p = 1 mod 8 needs two or more), and a composite
 * that fools base 2 is not let through. */
START_TEST(large_primes_come_from_every_residue_mod_8)
{
    enum { DRAWS = 400 };
    BN_CTX *ctx = BN_CTX_new();
    unsigned per_residue[8] = { 0 };
    uint8_t out[20];

    seed_generator();
    for (int i = 0; i < DRAWS; i++) {
        BIGNUM *bn;

        ck_assert_int_eq(randd_prime_generate(160, out, &src), 0);
        bn = BN_bin2bn(out, sizeof(out), NULL);
        ck_assert_msg(BN_check_prime(bn, ctx, NULL) == 1, "draw %d is not prime", i);
        per_residue[out[sizeof(out) - 1] & 7]++;
        BN_free(bn);
    }
    /* Each of 1, 3, 5, 7 expects 100 (binomial sd 8.7). */
    for (int r = 1; r < 8; r += 2)
        ck_assert_msg(per_residue[r] > 55 && per_residue[r] < 145, "%u of %d primes are %d "
                      "mod 8, expected about 100", per_residue[r], DRAWS, r);
    randd_cymric_fini(&gen);
    BN_CTX_free(ctx);
}
END_TEST

/* A source of splitmix bytes that fails once its budget is spent. */
struct failing_source {
    uint64_t seed;
    size_t left, used;
};

static int fail_after(void *ctx, void *buf, size_t n)
{
    struct failing_source *f = ctx;
    uint8_t *p = buf;

    if (n > f->left)
        return -EIO;
    f->left -= n;
    f->used += n;
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)splitmix(&f->seed);
    return 0;
}

/* A source that fails in the last bytes a search needs (its random bases) or anywhere
 * before: the source's error, and nothing left in out. With every byte it needs: a prime. */
START_TEST(a_failing_source_fails_the_search_and_wipes_out)
{
    static const uint8_t zero[64];
    struct failing_source f = { .seed = 5, .left = SIZE_MAX };
    struct randd_byte_source failing = { fail_after, &f };
    size_t needed, rounds_bytes = 64 * randd_prime_rounds(512);
    uint8_t out[64];

    ck_assert_int_eq(randd_prime_generate(512, out, &failing), 0);
    needed = f.used;
    ck_assert_msg(needed > rounds_bytes, "a 512-bit search took only %zu bytes", needed);
    for (size_t short_by = 1; short_by < needed;
         short_by += short_by < rounds_bytes ? 37 : 997) {
        f = (struct failing_source){ .seed = 5, .left = needed - short_by };
        ck_assert_int_eq(randd_prime_generate(512, out, &failing), -EIO);
        ck_assert_msg(!memcmp(out, zero, sizeof(out)), "%zu bytes short: out not wiped",
                      short_by);
    }
    f = (struct failing_source){ .seed = 5, .left = needed };
    ck_assert_int_eq(randd_prime_generate(512, out, &failing), 0);
}
END_TEST

/* RANDD_NO_IFMA (prime_fermat.h): the path of a CPU without AVX-512 IFMA, taken on one that
 * has it. Both paths answer with the first prime of the same stream of candidates, so from
 * the same source they find the same prime; the batched path draws up to seven candidates
 * past it, so the bytes each used show which path ran. */
START_TEST(no_ifma_switch_takes_the_one_candidate_path)
{
    static const unsigned sizes[] = { 256, 512 };
    bool cpu_has_ifma;
    unsigned drew_ahead = 0, searches = 0;
    BN_CTX *ctx = BN_CTX_new();
    uint8_t one_at_a_time[64], batched[64];

#if defined(__x86_64__)
    __builtin_cpu_init();
    cpu_has_ifma = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
#else
    cpu_has_ifma = false;                     /* IFMA is x86's; prime_fermat.c has no path */
#endif
    ck_assert_int_eq(setenv("RANDD_NO_IFMA", "1", 1), 0);
    ck_assert_msg(!randd_fermat8_available(), "RANDD_NO_IFMA=1 left IFMA in use");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i] / 8;

        for (uint64_t seed = 1; seed <= 6; seed++) {
            struct failing_source f = { .seed = seed, .left = SIZE_MAX };
            struct randd_byte_source source = { fail_after, &f };
            size_t used_alone;
            BIGNUM *bn;

            ck_assert_int_eq(setenv("RANDD_NO_IFMA", "1", 1), 0);
            ck_assert_int_eq(randd_prime_generate(sizes[i], one_at_a_time, &source), 0);
            bn = BN_bin2bn(one_at_a_time, (int)len, NULL);
            ck_assert(bn && BN_num_bits(bn) == (int)sizes[i]);
            ck_assert_msg(BN_check_prime(bn, ctx, NULL) == 1, "%u bits without IFMA: not prime",
                          sizes[i]);
            BN_free(bn);
            used_alone = f.used;
            if (!cpu_has_ifma)
                continue;
            ck_assert_int_eq(setenv("RANDD_NO_IFMA", "0", 1), 0);       /* "0": not hidden */
            ck_assert(randd_fermat8_available());
            f = (struct failing_source){ .seed = seed, .left = SIZE_MAX };
            ck_assert_int_eq(randd_prime_generate(sizes[i], batched, &source), 0);
            ck_assert_msg(!memcmp(batched, one_at_a_time, len), "%u bits, seed %llu: the two "
                          "paths found different primes", sizes[i], (unsigned long long)seed);
            drew_ahead += f.used > used_alone;
            searches++;
        }
    }
    if (cpu_has_ifma)
        ck_assert_msg(drew_ahead > 0, "in %u searches the batched path never drew past the "
                      "one-candidate path's prime: the switch changed nothing", searches);
    else
        fprintf(stderr, "no_ifma_switch_takes_the_one_candidate_path: the CPU has no AVX-512 "
                "IFMA, so only that path was checked\n");
    unsetenv("RANDD_NO_IFMA");
    BN_CTX_free(ctx);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("prime");
    TCase *tc = tcase_create("prime");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, montgomery_modexp_matches_bn_mod_exp);
    tcase_add_test(tc, known_primes_are_prime);
    tcase_add_test(tc, composites_that_fool_weaker_tests_are_composite);
    tcase_add_test(tc, every_number_below_65536_is_classified_like_a_sieve);
    tcase_add_test(tc, bytes_dispatch_by_size);
    tcase_add_test(tc, bpsw_needs_both_halves);
    tcase_add_test(tc, agrees_with_bn_check_prime_on_100000_odd_64_bit_numbers);
    tcase_add_test(tc, agrees_with_bn_check_prime_on_100000_odd_128_bit_numbers);
    tcase_add_test(tc, fermat8_agrees_with_bn_mod_exp_in_every_lane);
    tcase_add_test(tc, strong8_agrees_with_a_plain_miller_rabin_in_every_lane);
    tcase_add_test(tc, generated_primes_are_prime_and_exactly_bits_long);
    tcase_add_test(tc, sixteen_bit_primes_are_drawn_uniformly);
    tcase_add_test(tc, rounds_for_2_to_the_minus_80_match_the_published_table);
    tcase_add_test(tc, rounds_keep_openssl_3s_error_bound_and_fall_with_size);
    tcase_add_test(tc, large_primes_come_from_every_residue_mod_8);
    tcase_add_test(tc, a_failing_source_fails_the_search_and_wipes_out);
    tcase_add_test(tc, no_ifma_switch_takes_the_one_candidate_path);
    suite_add_tcase(s, tc);
    return s;
}
