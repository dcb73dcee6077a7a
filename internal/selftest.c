/* Known answers, run at start and again periodically and on request (daemon/selfcheck.c). A
 * mismatch means the crypto library or our use of it is broken, and no output may be served. */
#include "selftest.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "crypto.h"
#include "cymric.h"
#include "randen.h"
#include "rngbc.h"

static const uint8_t blake2b_abc[64] = {   /* RFC 7693 appendix A */
    0xba, 0x80, 0xa5, 0x3f, 0x98, 0x1c, 0x4d, 0x0d, 0x6a, 0x27, 0x97, 0xb6, 0x9f, 0x12, 0xf6, 0xe9,
    0x4c, 0x21, 0x2f, 0x14, 0x68, 0x5a, 0xc4, 0xb7, 0x4b, 0x12, 0xbb, 0x6f, 0xdb, 0xff, 0xa2, 0xd1,
    0x7d, 0x87, 0xc5, 0x39, 0x2a, 0xab, 0x79, 0x2d, 0xc2, 0x52, 0xd5, 0xde, 0x45, 0x33, 0xcc, 0x95,
    0x18, 0xd3, 0x8a, 0xa8, 0xdb, 0xf1, 0x92, 0x5a, 0xb9, 0x23, 0x86, 0xed, 0xd4, 0x00, 0x99, 0x23,
};

/* The vetted conditioning functions (SP 800-90B 3.1.5.1.1): SHA-512, the pool's in approved
 * mode, and SHA-256, the noise reservoir's full-entropy blocks'. FIPS 180-4's "abc" examples. */
static const uint8_t sha512_abc[64] = {
    0xdd, 0xaf, 0x35, 0xa1, 0x93, 0x61, 0x7a, 0xba, 0xcc, 0x41, 0x73, 0x49, 0xae, 0x20, 0x41, 0x31,
    0x12, 0xe6, 0xfa, 0x4e, 0x89, 0xa9, 0x7e, 0xa2, 0x0a, 0x9e, 0xee, 0xe6, 0x4b, 0x55, 0xd3, 0x9a,
    0x21, 0x92, 0x99, 0x2a, 0x27, 0x4f, 0xc1, 0xa8, 0x36, 0xba, 0x3c, 0x23, 0xa3, 0xfe, 0xeb, 0xbd,
    0x45, 0x4d, 0x44, 0x23, 0x64, 0x3c, 0xe8, 0x0e, 0x2a, 0x9a, 0xc9, 0x4f, 0xa5, 0x4c, 0xa4, 0x9f,
};

static const uint8_t sha256_abc[32] = {
    0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
    0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
};

static const uint8_t chacha20_sunscreen[16] = {   /* RFC 8439 2.4.2, first 16 bytes */
    0x6e, 0x2e, 0x35, 0x9a, 0x25, 0x68, 0xf9, 0x80, 0x41, 0xba, 0x07, 0x28, 0xdd, 0x0d, 0x69, 0x81,
};

static const uint8_t cymric_out0[32] = {   /* cymric-kat.txt: out0-32 */
    0x67, 0x44, 0xfa, 0x3d, 0xd2, 0xf9, 0xa0, 0x7a, 0xa8, 0xa1, 0xb7, 0x1a, 0xe4, 0x42, 0x67, 0x65,
    0xe1, 0x53, 0x25, 0x01, 0x13, 0x38, 0x4c, 0xeb, 0x65, 0x99, 0x55, 0x09, 0x13, 0x95, 0x2b, 0x14,
};

static const uint8_t cymric_out1[32] = {   /* cymric-kat.txt: out1-32 */
    0x92, 0x0d, 0x7f, 0x25, 0x7b, 0xe2, 0x82, 0x28, 0x19, 0x3c, 0x67, 0x01, 0xe2, 0x94, 0x2f, 0xe3,
    0x2c, 0x7d, 0xf5, 0xcd, 0x7f, 0xae, 0xb9, 0x4f, 0x7b, 0x97, 0x47, 0xce, 0xb1, 0x32, 0xfc, 0x40,
};

/* The same sequence with the keystream bound to AES-256-CTR (cymric-kat.txt, aes section) */
static const uint8_t cymric_aes_out0[32] = {   /* cymric-kat.txt: aes-out0-32 */
    0x5c, 0xb0, 0x83, 0xd0, 0xa1, 0xf3, 0x95, 0x8b,
    0x61, 0x0e, 0x26, 0x1f, 0xb0, 0x0c, 0x0d, 0x8b,
    0x9f, 0x51, 0xc3, 0x21, 0x42, 0xb0, 0xc7, 0x57,
    0x57, 0x66, 0x71, 0x76, 0x2c, 0x63, 0xcb, 0xe1,
};

static const uint8_t cymric_aes_out1[32] = {   /* cymric-kat.txt: aes-out1-32 */
    0x3f, 0x2a, 0x13, 0x7a, 0xf7, 0xee, 0x04, 0x73,
    0xf1, 0xa3, 0xb2, 0xd8, 0xb9, 0x75, 0x3c, 0xc7,
    0x87, 0x8a, 0x23, 0xbc, 0x91, 0x4d, 0xf9, 0x10,
    0xa2, 0x8a, 0xc1, 0xd3, 0xb8, 0xbd, 0x37, 0x82,
};

static const uint8_t randen_zero[16] = {   /* randen-golden.txt: words 0, 1, little-endian */
    0xee, 0x10, 0x04, 0xd9, 0x7c, 0xf4, 0xa9, 0xdd,
    0x77, 0x39, 0x43, 0x4e, 0x13, 0x4f, 0xc1, 0xc3,
};

/* RNG-BC-8 in [0, 100001) over the byte source 0x9d, 0x3a, 0xd7, ... (adding 0x9d): four
 * values and the 14 bytes drawn, one candidate rejected on its middle byte. */
static const uint8_t rngbc_r[3] = { 0x01, 0x86, 0xa1 };
static const uint8_t rngbc_out[4][3] = {
    { 0x01, 0x3a, 0xd7 }, { 0x00, 0x11, 0xae }, { 0x00, 0xbf, 0x85 }, { 0x00, 0xf9, 0x96 },
};
#define RNGBC_KAT_DRAWN 14

static int check_primitives(struct randd_crypto *c)
{
    static const char plain[] = "Ladies and Gentlemen of the class of '99: If I could offer";
    uint8_t key[32], iv[16] = { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x4a }, out[64];
    struct iovec abc = { "abc", 3 };

    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    if (randd_blake2b512(c, out, &abc, 1) < 0 || memcmp(out, blake2b_abc, 64))
        return -1;
    if (randd_chacha20(c, key, iv, plain, out, 16) < 0 || memcmp(out, chacha20_sunscreen, 16))
        return -2;
    if (randd_sha512(c, out, &abc, 1) < 0 || memcmp(out, sha512_abc, 64))
        return -3;
    if (EVP_Digest("abc", 3, out, NULL, EVP_sha256(), NULL) != 1 || memcmp(out, sha256_abc, 32))
        return -4;
    return 0;
}

/* The reference sequence through the keystream which, with its two known outputs. */
static int check_cymric(enum randd_stream_cipher which, const uint8_t want0[32],
                        const uint8_t want1[32])
{
    struct randd_cymric g;
    uint8_t seed[32], out[32];
    int rc = -1;

    for (int i = 0; i < 32; i++)
        seed[i] = (uint8_t)i;
    if (randd_cymric_init(&g, RANDD_CYMRIC_DETERMINISTIC) == 0 &&
        randd_cymric_use_stream(&g, which) == 0 &&
        randd_cymric_seed(&g, seed, sizeof(seed)) == 0 &&
        randd_cymric_generate(&g, out, 32, NULL, 0) == 0 && !memcmp(out, want0, 32) &&
        randd_cymric_generate(&g, out, 32, NULL, 0) == 0 && !memcmp(out, want1, 32))
        rc = 0;
    randd_cymric_fini(&g);
    return rc;
}

/* Only where the CPU does AES itself: elsewhere no generator may run AES at all. */
static int check_cymric_aes(void)
{
    if (!randd_crypto_has_hardware_aes())
        return 0;
    return check_cymric(RANDD_STREAM_AES256CTR, cymric_aes_out0, cymric_aes_out1);
}

/* Only on a CPU with an AES round (AES-NI, ARMv8 AES): without, Randen cannot be chosen. */
static int check_randen(void)
{
    struct randd_randen g;
    uint8_t out[16];
    int rc = -1;

    if (!randd_randen_available())
        return 0;
    if (randd_randen_init(&g) == 0 && randd_randen_generate(&g, out, sizeof(out)) == 0 &&
        !memcmp(out, randen_zero, sizeof(out)))
        rc = 0;
    randd_randen_wipe(&g);
    return rc;
}

static int counter_fill(void *ctx, void *buf, size_t n)
{
    uint8_t *next = ctx, *b = buf;

    for (size_t i = 0; i < n; i++)
        b[i] = *next += 0x9d;
    return 0;
}

static int check_rngbc(void)
{
    struct randd_rngbc_range range;
    uint8_t counter = 0, out[3];
    struct randd_byte_source src = { counter_fill, &counter };
    uint64_t drawn = 0;

    if (randd_rngbc_prepare(&range, rngbc_r, sizeof(rngbc_r)) < 0)
        return -1;
    for (int i = 0; i < 4; i++)
        if (randd_rngbc8(&range, out, &src, &drawn) < 0 || memcmp(out, rngbc_out[i], 3))
            return -1;
    return drawn == RNGBC_KAT_DRAWN ? 0 : -1;
}

int randd_selftest(char *why, size_t whylen)
{
    struct randd_crypto *c = randd_crypto_new();
    int rc;

    if (!c) {
        snprintf(why, whylen, "OpenSSL cannot provide BLAKE2b, BLAKE2BMAC and ChaCha20");
        return -1;
    }
    rc = check_primitives(c);
    randd_crypto_free(c);
    if (rc == -1)
        snprintf(why, whylen, "BLAKE2b-512 known answer (RFC 7693) does not match");
    else if (rc == -2)
        snprintf(why, whylen, "ChaCha20 known answer (RFC 8439 2.4.2) does not match");
    else if (rc == -3)
        snprintf(why, whylen, "SHA-512 known answer (FIPS 180-4) does not match");
    else if (rc == -4)
        snprintf(why, whylen, "SHA-256 known answer (FIPS 180-4) does not match");
    else if ((rc = check_cymric(RANDD_STREAM_CHACHA20, cymric_out0, cymric_out1)) < 0)
        snprintf(why, whylen, "Cymric generator known answer does not match");
    else if ((rc = check_cymric_aes()) < 0)
        snprintf(why, whylen, "Cymric generator known answer with AES-256-CTR does not match");
    else if ((rc = check_randen()) < 0)
        snprintf(why, whylen, "Randen known answer (google/randen golden output) does not "
                 "match");
    else if ((rc = check_rngbc()) < 0)
        snprintf(why, whylen, "RNG-BC-8 known answer does not match");
    return rc < 0 ? -1 : 0;
}
