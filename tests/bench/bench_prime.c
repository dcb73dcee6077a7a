/* bench-prime: Montgomery modexp against BN_mod_exp_mont (a BN_MONT_CTX prepared once), and
 * random primes against BN_generate_prime_ex, at 64, 128, 256, 512, 1024, 2048 and 4096
 * bits. Times are this thread's CPU time, ours and OpenSSL's runs interleaved, so other load
 * on the machine hurts both alike. modexp: the median of 5 runs. Primes: the time to find one
 * varies a lot (the number of candidates is geometric), so the figure judged is the mean over
 * all 5 runs; the median of the runs is printed beside it. Each prime row is marked ok or
 * MISS; exits 1 when one misses: >= 50x BN_generate_prime_ex at 64 bits, >= 8x at 128
 * (issue 19), >= 2x from 256 to 4096 (issue 32).
 * Usage: bench-prime [--seconds S] [--no-ifma]: S per figure and side, scaled up for the large
 * sizes; --no-ifma takes the path of a CPU without AVX-512 IFMA (RANDD_NO_IFMA=1, which the
 * environment can set too), to measure it on a CPU that has IFMA (issue 38). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>

#include "cymric.h"
#include "prime.h"
#include "prime_fermat.h"

#define REPS 5

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

typedef void (*op_fn)(void *ctx);

struct figure {
    double median, mean;                 /* seconds per call */
};

/* ours and theirs, REPS runs of seconds / REPS each, interleaved. */
static void measure(op_fn ours, op_fn theirs, void *ctx, double seconds, struct figure out[2])
{
    double t[2][REPS], total[2] = { 0, 0 };
    long calls[2] = { 0, 0 };

    for (int r = 0; r < REPS; r++) {
        for (int side = 0; side < 2; side++) {
            op_fn op = side ? theirs : ours;
            double start = now(), elapsed;
            long n = 0;

            do {
                op(ctx);
                n++;
            } while ((elapsed = now() - start) < seconds / REPS);
            t[side][r] = elapsed / (double)n;
            total[side] += elapsed;
            calls[side] += n;
        }
    }
    for (int side = 0; side < 2; side++) {
        qsort(t[side], REPS, sizeof(t[side][0]), cmp);
        out[side].median = t[side][REPS / 2];
        out[side].mean = total[side] / (double)calls[side];
    }
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

    if (randd_prime_generate(x->bits, x->out, &x->src) < 0) {
        fprintf(stderr, "bench-prime: randd_prime_generate(%u) failed\n", x->bits);
        exit(2);
    }
}

static void bn_prime(void *arg)
{
    struct primes *x = arg;

    if (!BN_generate_prime_ex(x->p, (int)x->bits, 0, NULL, NULL, NULL)) {
        fprintf(stderr, "bench-prime: BN_generate_prime_ex(%u) failed\n", x->bits);
        exit(2);
    }
}

/* theirs also runs in measure(): the modexp side is chosen by the width. */
static int width;

static void ours_modexp(void *arg)
{
    if (width == 64)
        ours64(arg);
    else
        ours128(arg);
}

int main(int argc, char **argv)
{
    double seconds = 1;
    static const unsigned sizes[] = { 64, 128, 256, 512, 1024, 2048, 4096 };
    static const double targets[] = { 50, 8, 2, 2, 2, 2, 2 };
    /* Seconds per side, times --seconds: enough primes for a steady mean at each size (a
     * 4096-bit BN_generate_prime_ex takes seconds). */
    static const double scale[] = { 1, 1, 3, 4, 8, 12, 40 };
    struct modexp x = { 0 };
    struct primes p = { 0 };
    int missed = 0;

    bool bad = false;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-ifma"))
            setenv("RANDD_NO_IFMA", "1", 1);            /* prime_fermat.h */
        else
            bad = true;
    }
    if (bad || seconds <= 0) {
        fprintf(stderr, "usage: bench-prime [--seconds S] [--no-ifma]\n");
        return 2;
    }
    printf("bench-prime: %d interleaved runs per figure, thread CPU time; primes above 128 bits "
           "on %s\n", REPS, randd_fermat8_available()
           ? "AVX-512 IFMA (eight candidates a Fermat test)"
           : "one candidate at a time, as a CPU without AVX-512 IFMA (RANDD_NO_IFMA or the CPU)");
    x.ctx = BN_CTX_new();
    x.r = BN_new();
    for (int w = 64; w <= 128; w += 64) {
        struct figure f[2];

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
        width = w;
        measure(ours_modexp, theirs, &x, seconds / 2, f);
        printf("  modexp %3d-bit (median): ours %8.1f ns   BN_mod_exp_mont %8.1f ns   %.1fx\n", w,
               f[0].median * 1e9, f[1].median * 1e9, f[1].median / f[0].median);
        BN_free(x.bn), BN_free(x.bb), BN_free(x.be), BN_MONT_CTX_free(x.mont);
    }

    randd_cymric_init(&p.gen, 0);
    randd_cymric_seed(&p.gen, "bench-prime", 11);
    p.src = (struct randd_byte_source){ fill, &p.gen };
    p.p = BN_new();
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct figure f[2];
        double ratio;

        p.bits = sizes[i];
        measure(ours_prime, bn_prime, &p, seconds * scale[i], f);
        ratio = f[1].mean / f[0].mean;
        printf("  prime %4u-bit: ours %9.1f us/prime (%7.0f/s, median %9.1f)   "
               "BN_generate_prime_ex %9.1f us (median %9.1f)   %5.2fx (target >= %gx) %s\n",
               sizes[i], f[0].mean * 1e6, 1 / f[0].mean, f[0].median * 1e6, f[1].mean * 1e6,
               f[1].median * 1e6, ratio, targets[i], ratio >= targets[i] ? "ok" : "MISS");
        if (ratio < targets[i]) {
            fprintf(stderr, "bench-prime: %u-bit primes are %.2fx BN_generate_prime_ex, target "
                    ">= %gx\n", sizes[i], ratio, targets[i]);
            missed++;
        }
    }
    randd_cymric_fini(&p.gen);
    BN_free(p.p);
    BN_free(x.r);
    BN_CTX_free(x.ctx);
    printf("bench-prime: %s\n", missed ? "TARGET MISSED" : "every target met");
    return missed ? 1 : 0;
}
