/* range-chi2: RANGE output from the running daemon, byte position by byte position, against
 * the exact distribution a uniform value below r gives each position (the top bytes are not
 * uniform: their expected counts follow from r). Usage: range-chi2 [--samples N].
 * Exits 1 when any position's chi-square p-value is below 1e-6 (a few hundred tests run, so
 * a true generator trips it about once in ten thousand runs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>

#include "randd.h"

#define MAX_LEN   64
#define P_FAIL    1e-6

static const char *const ranges[] = {
    "2",                                                                  /* one bit */
    "FB",                                                                 /* one byte, just under 256 */
    "10001",                                                              /* 2^16 + 1: top byte 0x01 */
    "8000000000000000000000000000000000000000000000000000000000000001",   /* 2^255 + 1 */
    "C000000000000000000000000000000000000000000000000000000000000000",   /* the paper's Mid 256 */
    "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141",   /* secp256k1 order */
    "AADD9DB8DBE9C48B3FD4E6AE33C9FC07CB308DB3B3C9D20ED6639CCA70330870"
    "553E5C414CA92619418661197FAC10471DB1D381085DDADDB58796829CA90069",   /* Brainpool P512r1 q */
};

/* Upper tail of chi-square with k degrees of freedom, Wilson-Hilferty approximation. */
static double chi2_p(double x, int k)
{
    double z = (cbrt(x / k) - (1 - 2.0 / (9 * k))) / sqrt(2.0 / (9 * k));

    return 0.5 * erfc(z / sqrt(2));
}

/* Expected count of byte value b at a position whose lower bytes span m values:
 * q full cycles of 256 * m, then a partial one of rem values. */
static double expected(const BIGNUM *r, int j, int b, double samples, BN_CTX *ctx)
{
    BIGNUM *m = BN_new(), *cycle = BN_new(), *q = BN_new(), *rem = BN_new(), *t = BN_new();
    double count;

    BN_set_word(m, 1);
    BN_lshift(m, m, 8 * j);
    BN_lshift(cycle, m, 8);
    BN_div(q, rem, r, cycle, ctx);
    BN_mul_word(t = BN_copy(t, m), (BN_ULONG)b);           /* b * m */
    BN_sub(t, rem, t);                                      /* rem - b * m, clamped to [0, m] */
    if (BN_is_negative(t))
        BN_zero(t);
    else if (BN_cmp(t, m) > 0)
        BN_copy(t, m);
    BN_mul(q, q, m, ctx);
    BN_add(t, t, q);
    /* count / r as a double: both may be huge, so divide in BIGNUM with 53 bits kept. */
    {
        BIGNUM *scaled = BN_new(), *ratio = BN_new();

        BN_lshift(scaled, t, 64);
        BN_div(ratio, NULL, scaled, r, ctx);
        count = 0;
        for (int i = BN_num_bits(ratio) - 1; i >= 0; i--)
            count = count * 2 + BN_is_bit_set(ratio, i);
        count = count / 18446744073709551616.0 * samples;
        BN_free(scaled);
        BN_free(ratio);
    }
    BN_free(m), BN_free(cycle), BN_free(q), BN_free(rem), BN_free(t);
    return count;
}

int main(int argc, char **argv)
{
    size_t samples = argc == 3 && !strcmp(argv[1], "--samples") ? strtoul(argv[2], NULL, 10) : 100000;
    BN_CTX *ctx = BN_CTX_new();
    randd_handle *h;
    int failed = 0, rc = randd_open(&h, NULL);

    if (rc < 0) {
        fprintf(stderr, "range-chi2: %s\n", randd_strerror(rc));
        return 2;
    }
    for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
        BIGNUM *r = NULL;
        uint8_t rbytes[MAX_LEN], *out;
        int len, worst_pos = 0;
        double worst = 1;

        BN_hex2bn(&r, ranges[k]);
        len = BN_num_bytes(r);
        BN_bn2bin(r, rbytes);
        out = malloc(samples * (size_t)len);
        rc = randd_range(h, rbytes, (size_t)len, out, samples);
        if (rc < 0) {
            fprintf(stderr, "range-chi2: RANGE %s: %s\n", ranges[k], randd_strerror(rc));
            return 2;
        }
        for (int pos = 0; pos < len; pos++) {
            double counts[256] = { 0 }, chi = 0;
            int dof = -1;

            for (size_t i = 0; i < samples; i++)
                counts[out[i * (size_t)len + (size_t)pos]]++;
            for (int b = 0; b < 256; b++) {
                double e = expected(r, len - 1 - pos, b, (double)samples, ctx);

                if (e == 0) {
                    if (counts[b] > 0) {
                        printf("  r = %s: byte %d took value %d, impossible below r\n", ranges[k], pos, b);
                        failed = 1;
                    }
                    continue;
                }
                chi += (counts[b] - e) * (counts[b] - e) / e;
                dof++;
            }
            if (dof > 0 && chi2_p(chi, dof) < worst) {
                worst = chi2_p(chi, dof);
                worst_pos = pos;
            }
        }
        printf("range-chi2: r = %.16s%s (%d bytes), %zu samples: lowest p = %.4f (byte %d)%s\n",
               ranges[k], strlen(ranges[k]) > 16 ? "..." : "", len, samples, worst, worst_pos,
               worst < P_FAIL ? "  FAILED" : "");
        failed |= worst < P_FAIL;
        free(out);
        BN_free(r);
    }
    randd_close(h);
    BN_CTX_free(ctx);
    return failed;
}
