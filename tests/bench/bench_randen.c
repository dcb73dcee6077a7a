/* bench-randen: Randen generate throughput (internal/randen.c) against OpenSSL EVP AES-128-CTR
 * encrypting a buffer of the same size, in one run, on 64 KiB and 1 MiB calls. Each figure is
 * the median of REPS repetitions of 32 MiB each, timed in thread CPU time (so other load on
 * the machine does not count), the two interleaved so that clock changes hit both. Exits 1
 * when Randen is below 0.2x of AES-128-CTR on any size (the reference reaches about 0.23x),
 * 2 on a setup error, 0 (with a note) without an AES round (AES-NI, ARMv8 AES).
 * Usage: bench-randen [--reps N]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "randen.h"

#define REPS_DEFAULT 9
#define PER_REP      (32u << 20)      /* bytes per repetition */
#define MIN_RATIO    0.2

static const size_t sizes[] = { 64u << 10, 1u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "bench-randen: %s failed\n", what);
        exit(2);
    }
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* MB/s (10^6 bytes) of one repetition: PER_REP bytes in calls of size bytes. */
static double rep_randen(struct randd_randen *r, uint8_t *out, size_t size)
{
    size_t calls = PER_REP / size;
    double t0 = now();

    for (size_t i = 0; i < calls; i++)
        must(randd_randen_generate(r, out, size) == 0, "randd_randen_generate");
    return (double)(calls * size) / (now() - t0) / 1e6;
}

static double rep_ctr(EVP_CIPHER_CTX *ctx, const uint8_t *in, uint8_t *out, size_t size)
{
    size_t calls = PER_REP / size;
    int len;
    double t0 = now();

    for (size_t i = 0; i < calls; i++)
        must(EVP_EncryptUpdate(ctx, out, &len, in, (int)size) == 1 && (size_t)len == size,
             "EVP_EncryptUpdate");
    return (double)(calls * size) / (now() - t0) / 1e6;
}

int main(int argc, char **argv)
{
    int reps = REPS_DEFAULT, failed = 0;
    uint8_t key[16], iv[16], seed[32];
    size_t max = sizes[NSIZES - 1];
    uint8_t *in, *out;
    struct randd_randen *r;
    EVP_CIPHER_CTX *ctx;

    if (argc == 3 && !strcmp(argv[1], "--reps"))
        reps = atoi(argv[2]);
    if (argc != 1 && (argc != 3 || reps < 1 || reps > 1000)) {
        fprintf(stderr, "usage: bench-randen [--reps N]   (N: 1..1000, default %d)\n",
                REPS_DEFAULT);
        return 2;
    }
    if (!randd_randen_available()) {
        printf("bench-randen: this CPU has no AES round instructions, so Randen is "
               "unavailable; nothing to measure\n");
        return 0;
    }

    r = aligned_alloc(64, sizeof(*r));
    in = calloc(1, max);
    out = malloc(max);
    must(r && in && out, "allocation");
    must(getrandom(key, sizeof(key), 0) == sizeof(key) && getrandom(iv, sizeof(iv), 0) ==
         sizeof(iv) && getrandom(seed, sizeof(seed), 0) == sizeof(seed), "getrandom");
    must(randd_randen_init(r) == 0 && randd_randen_seed(r, seed, sizeof(seed)) == 0,
         "randd_randen_init/seed");
    ctx = EVP_CIPHER_CTX_new();
    must(ctx && EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), NULL, key, iv) == 1,
         "EVP_EncryptInit_ex(AES-128-CTR)");
    memset(out, 0, max);                                /* fault the pages in */

    printf("bench-randen: MB/s = 10^6 bytes per CPU second, median of %d repetitions of %u MiB "
           "each\n",
           reps, PER_REP >> 20);
    for (size_t s = 0; s < NSIZES; s++) {
        double *rand_mbs = calloc((size_t)reps, sizeof(double));
        double *ctr_mbs = calloc((size_t)reps, sizeof(double));
        double rm, cm, ratio;

        must(rand_mbs && ctr_mbs, "allocation");
        rep_randen(r, out, sizes[s]);                   /* warm-up */
        rep_ctr(ctx, in, out, sizes[s]);
        for (int i = 0; i < reps; i++) {
            rand_mbs[i] = rep_randen(r, out, sizes[s]);
            ctr_mbs[i] = rep_ctr(ctx, in, out, sizes[s]);
        }
        rm = median(rand_mbs, reps);
        cm = median(ctr_mbs, reps);
        ratio = rm / cm;
        printf("  %5zu KiB calls: Randen %8.1f MB/s   AES-128-CTR %8.1f MB/s   ratio %.3fx "
               "(target >= %.1fx)%s\n", sizes[s] >> 10, rm, cm, ratio, MIN_RATIO,
               ratio >= MIN_RATIO ? "" : "  <- MISSED");
        if (ratio < MIN_RATIO)
            failed = 1;
        free(rand_mbs);
        free(ctr_mbs);
    }
    if (failed)
        printf("bench-randen: FAILED: Randen is below %.1fx of OpenSSL AES-128-CTR "
               "throughput\n", MIN_RATIO);

    EVP_CIPHER_CTX_free(ctx);
    randd_randen_wipe(r);
    free(r);
    OPENSSL_cleanse(out, max);
    free(out);
    free(in);
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(seed, sizeof(seed));
    return failed;
}
