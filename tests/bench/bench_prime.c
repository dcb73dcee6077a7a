/* bench-prime: Montgomery modexp against BN_mod_exp_mont (a BN_MONT_CTX prepared once), and
 * random primes against BN_generate_prime_ex, at 64, 128, 256 and 1024 bits. Medians of 5
 * runs. Exits 1 when a target is missed: >= 50x BN at 64 bits, >= 8x at 128, >= 1x above.
 * Usage: bench-prime [--seconds S] (per figure, default 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>

#include "cymric.h"
#include "prime.h"

#define REPS 5

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

typedef void (*op_fn)(void *ctx);

/* Seconds per call: the median of REPS runs. */
static double per_call(op_fn op, void *ctx, double seconds)
{
    double t[REPS];

    for (int r = 0; r < REPS; r++) {
        double start = now(), elapsed;
        long n = 0;

        do {
            op(ctx);
            n++;
        } while ((elapsed = now() - start) < seconds / REPS);
        t[r] = elapsed / (double)n;
    }
    qsort(t, REPS, sizeof(t[0]), cmp);
    return t[REPS / 2];
}

/* --- modexp ----------------------------------------------------------------------------------- */

struct modexp {
    randd_u128 n, b, e;
    struct randd_mont128 m128;
    struct randd_mont64 m64;
    BIGNUM *bn, *bb, *be, *r;
    BN_MONT_CTX *mont;
    BN_CTX *ctx;
    volatile uint64_t sink;
};

static void ours64(void *arg)
{
    struct modexp *x = arg;

    x->sink += randd_mont64_pow(&x->m64, (uint64_t)x->b, (uint64_t)x->e);
    x->b++;
}

static void ours128(void *arg)
{
    struct modexp *x = arg;

    x->sink += (uint64_t)randd_mont128_pow(&x->m128, x->b, x->e);
    x->b++;
}

static void theirs(void *arg)
{
    struct modexp *x = arg;

    BN_mod_exp_mont(x->r, x->bb, x->be, x->bn, x->ctx, x->mont);
    BN_add_word(x->bb, 1);
}

static BIGNUM *bn_u128(randd_u128 v)
{
    uint8_t b[16];

    for (int i = 15; i >= 0; i--, v >>= 8)
        b[i] = (uint8_t)v;
    return BN_bin2bn(b, 16, NULL);
}

/* --- primes ------------------------------------------------------------------------------------ */

static int fill(void *g, void *buf, size_t n)
{
    return randd_cymric_read(g, buf, n);
}

struct primes {
    unsigned bits;
    struct randd_cymric gen;
    struct randd_byte_source src;
    BIGNUM *p;
    uint8_t out[512];
};

static void ours_prime(void *arg)
{
    struct primes *x = arg;

    if (randd_prime_generate(x->bits, x->out, &x->src) < 0)
        abort();
}

static void bn_prime(void *arg)
{
    struct primes *x = arg;

    if (!BN_generate_prime_ex(x->p, (int)x->bits, 0, NULL, NULL, NULL))
        abort();
}

int main(int argc, char **argv)
{
    double seconds = argc == 3 && !strcmp(argv[1], "--seconds") ? atof(argv[2]) : 1;
    static const unsigned sizes[] = { 64, 128, 256, 1024 };
    static const double targets[] = { 50, 8, 1, 1 };
    struct modexp x = { 0 };
    struct primes p = { 0 };
    int missed = 0;

    printf("bench-prime: medians of %d runs, %.1f s per figure\n", REPS, seconds);
    x.ctx = BN_CTX_new();
    x.r = BN_new();
    for (int w = 64; w <= 128; w += 64) {
        double ours_s, theirs_s;

        x.n = w == 64 ? (randd_u128)0xffffffffffffffc5u         /* 2^64 - 59 */
                      : ~(randd_u128)0 - 158;                   /* 2^128 - 159 */
        x.b = x.n / 3;
        x.e = x.n - 1;
        if (w == 64)
            randd_mont64_init(&x.m64, (uint64_t)x.n);
        else
            randd_mont128_init(&x.m128, x.n);
        x.bn = bn_u128(x.n), x.bb = bn_u128(x.b), x.be = bn_u128(x.e);
        x.mont = BN_MONT_CTX_new();
        BN_MONT_CTX_set(x.mont, x.bn, x.ctx);
        ours_s = per_call(w == 64 ? ours64 : ours128, &x, seconds);
        theirs_s = per_call(theirs, &x, seconds);
        printf("  modexp %3d-bit: ours %8.1f ns   BN_mod_exp_mont %8.1f ns   %.1fx\n", w,
               ours_s * 1e9, theirs_s * 1e9, theirs_s / ours_s);
        BN_free(x.bn), BN_free(x.bb), BN_free(x.be), BN_MONT_CTX_free(x.mont);
    }

    randd_cymric_init(&p.gen, 0);
    randd_cymric_seed(&p.gen, "bench-prime", 11);
    p.src = (struct randd_byte_source){ fill, &p.gen };
    p.p = BN_new();
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        double ours_s, theirs_s, ratio;

        p.bits = sizes[i];
        ours_s = per_call(ours_prime, &p, seconds * (sizes[i] > 256 ? 4 : 1));
        theirs_s = per_call(bn_prime, &p, seconds * (sizes[i] > 256 ? 4 : 1));
        ratio = theirs_s / ours_s;
        printf("  prime %4u-bit: ours %9.1f us (%8.0f/s)   BN_generate_prime_ex %9.1f us   %.1fx (target >= %gx)%s\n",
               sizes[i], ours_s * 1e6, 1 / ours_s, theirs_s * 1e6, ratio, targets[i],
               ratio >= targets[i] ? "" : "  MISSED");
        missed += ratio < targets[i];
    }
    randd_cymric_fini(&p.gen);
    BN_free(p.p);
    BN_free(x.r);
    BN_CTX_free(x.ctx);
    return missed ? 1 : 0;
}
