/* EVP plumbing for BLAKE2b, SHA-512, ChaCha20 and AES-256-CTR, and whether AES is safe to use here
 * (hardware AES only). Fetching an algorithm implicitly on every call
 * doubles the cost of a small generate, so each owner fetches once here and reuses the
 * contexts; the only file in lib/ and internal/ that talks to OpenSSL's EVP API. */
#include "crypto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "aes_ctr.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) || defined(__powerpc64__)
#include <sys/auxv.h>
#endif

struct randd_crypto {
    EVP_MD *blake2b;
    EVP_MD *sha512;                       /* fetched at the first randd_sha512 */
    EVP_MAC *blake2bmac;
    EVP_CIPHER *chacha20;
    EVP_CIPHER *aes256ctr;                /* fetched when a generator asks for it */
    enum randd_stream_cipher stream;      /* what cipher is bound to */
    EVP_MD_CTX *md;                       /* BLAKE2b's */
    EVP_MD_CTX *sha512_md;                /* SHA-512's, reset (wiped) after each use */
    EVP_MAC_CTX *mac;
    EVP_CIPHER_CTX *cipher;
};

/* Both keystreams run in 64-byte multiples (4 AES blocks), so neither cipher keeps a partial
 * block of handed-out keystream in its context. */
#define STREAM_BLOCK     64
#define EVP_MAX_CHUNK ((size_t)1 << 30)   /* EVP lengths are int */

static const uint8_t zero_key[RANDD_BLAKE2B_BYTES];

struct randd_crypto *randd_crypto_new(void)
{
    struct randd_crypto *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->blake2b = EVP_MD_fetch(NULL, "BLAKE2B-512", NULL);
    c->blake2bmac = EVP_MAC_fetch(NULL, "BLAKE2BMAC", NULL);
    c->chacha20 = EVP_CIPHER_fetch(NULL, "ChaCha20", NULL);
    if (!c->blake2b || !c->blake2bmac || !c->chacha20)
        goto fail;
    c->md = EVP_MD_CTX_new();
    c->mac = EVP_MAC_CTX_new(c->blake2bmac);
    c->cipher = EVP_CIPHER_CTX_new();
    if (!c->md || !c->mac || !c->cipher)
        goto fail;
    /* Bind the cipher once; later inits pass only key and IV, which is the cheap path. */
    if (!EVP_EncryptInit_ex2(c->cipher, c->chacha20, zero_key, zero_key, NULL))
        goto fail;
    c->stream = RANDD_STREAM_CHACHA20;
    return c;
fail:
    randd_crypto_free(c);
    return NULL;
}

void randd_crypto_free(struct randd_crypto *c)
{
    if (!c)
        return;
    EVP_CIPHER_CTX_free(c->cipher);   /* frees cleanse their key material */
    EVP_MAC_CTX_free(c->mac);
    EVP_MD_CTX_free(c->md);
    EVP_MD_CTX_free(c->sha512_md);
    EVP_CIPHER_free(c->chacha20);
    EVP_CIPHER_free(c->aes256ctr);
    EVP_MAC_free(c->blake2bmac);
    EVP_MD_free(c->blake2b);
    EVP_MD_free(c->sha512);
    free(c);
}

int randd_blake2b512(struct randd_crypto *c, uint8_t out[RANDD_BLAKE2B_BYTES],
                     const struct iovec *parts, size_t nparts)
{
    unsigned int outlen = 0;

    if (!EVP_DigestInit_ex2(c->md, c->blake2b, NULL))
        return -EIO;
    for (size_t i = 0; i < nparts; i++)
        if (parts[i].iov_len && !EVP_DigestUpdate(c->md, parts[i].iov_base, parts[i].iov_len))
            return -EIO;
    /* OpenSSL's BLAKE2b final cleanses its context, so no input lingers there. */
    if (!EVP_DigestFinal_ex(c->md, out, &outlen) || outlen != RANDD_BLAKE2B_BYTES)
        return -EIO;
    return 0;
}

int randd_sha512(struct randd_crypto *c, uint8_t out[RANDD_SHA512_BYTES],
                 const struct iovec *parts, size_t nparts)
{
    unsigned int outlen = 0;
    int ok;

    if (!c->sha512 && !(c->sha512 = EVP_MD_fetch(NULL, "SHA512", NULL)))
        return -EIO;
    if (!c->sha512_md && !(c->sha512_md = EVP_MD_CTX_new()))
        return -EIO;
    ok = EVP_DigestInit_ex2(c->sha512_md, c->sha512, NULL);
    for (size_t i = 0; ok && i < nparts; i++)
        ok = parts[i].iov_len == 0 ||
             EVP_DigestUpdate(c->sha512_md, parts[i].iov_base, parts[i].iov_len);
    ok = ok && EVP_DigestFinal_ex(c->sha512_md, out, &outlen) && outlen == RANDD_SHA512_BYTES;
    /* Unlike BLAKE2b's, SHA-512's final leaves the digest (its last chaining value) and the
     * last message block in the context, and its init clears neither: freeing the provider's
     * context wipes it (OPENSSL_clear_free), on every path. */
    EVP_MD_CTX_reset(c->sha512_md);
    return ok ? 0 : -EIO;
}

int randd_blake2b512_keyed(struct randd_crypto *c, uint8_t out[RANDD_BLAKE2B_BYTES],
                           const void *key, size_t keylen, const void *data, size_t len)
{
    size_t outlen = 0;
    int ok;

    if (keylen == 0 || keylen > RANDD_BLAKE2B_BYTES)
        return -EINVAL;
    ok = EVP_MAC_init(c->mac, key, keylen, NULL) &&
         (len == 0 || EVP_MAC_update(c->mac, data, len)) &&
         EVP_MAC_final(c->mac, out, &outlen, RANDD_BLAKE2B_BYTES) &&
         outlen == RANDD_BLAKE2B_BYTES;
    /* BLAKE2BMAC keeps the key in its context so it can restart; overwrite it now. */
    if (!EVP_MAC_init(c->mac, zero_key, sizeof(zero_key), NULL))
        ok = 0;
    return ok ? 0 : -EIO;
}

/* Runs whole 64-byte blocks only: OpenSSL keeps a partial block in the context, and that
 * block holds keystream already handed out. The tail goes through a wiped stack block. */
static int cipher_blocks(EVP_CIPHER_CTX *ctx, uint8_t *out, const uint8_t *in, size_t n)
{
    while (n > 0) {
        size_t chunk = n > EVP_MAX_CHUNK ? EVP_MAX_CHUNK : n;
        int done = 0;

        if (!EVP_EncryptUpdate(ctx, out, &done, in, (int)chunk) || (size_t)done != chunk)
            return 0;
        out += chunk;
        in += chunk;
        n -= chunk;
    }
    return 1;
}

/* Keystream = the encryption of zeros, read from a small zero page that stays in cache,
 * so the output is written once rather than cleared first and then rewritten. */
static int keystream_of_zeros(EVP_CIPHER_CTX *ctx, uint8_t *out, size_t n)
{
    static const uint8_t zeros[4096];

    for (size_t chunk; n > 0; out += chunk, n -= chunk) {
        chunk = n < sizeof(zeros) ? n : sizeof(zeros);
        if (!cipher_blocks(ctx, out, zeros, chunk))
            return 0;
    }
    return 1;
}

#define STACK_WIPE 4096   /* deeper than OpenSSL's BLAKE2b, ChaCha20 and AES frames go */

/* Its frame lies over the region the caller's OpenSSL calls used. */
__attribute__((noinline)) void randd_crypto_wipe_stack(void)
{
    uint8_t region[STACK_WIPE];

    /* explicit_bzero is glibc's vectorised memset that is never optimised away; 4 KiB with
     * OPENSSL_cleanse's 8-byte loop cost 38% more instructions per 32-byte generate. */
    explicit_bzero(region, sizeof(region));
    __asm__ volatile("" : : "r"(region) : "memory");
}

/* --- keystreams --------------------------------------------------------------------------
 * OpenSSL's AES is table-based (not constant-time) without the CPU's AES instructions, and
 * neither OpenSSL 3's EVP nor its provider parameters say which code a cipher runs (its
 * capability words, OPENSSL_ia32cap_P and the like, are not exported). So randd asks what
 * OpenSSL itself asks, with the same bits: CPUID's AES bit on x86; the kernel's HWCAP_AES
 * (ARMv8 Crypto Extensions) on arm64; HWCAP2's PPC_FEATURE2_HAS_VEC_CRYPTO (POWER8's
 * vcipher) on ppc64. Each OpenSSL reads a capability variable that can hide those from it,
 * and then runs table AES under us: with that variable set, no AES. Plain getenv on purpose,
 * unlike every other variable librandd reads: OpenSSL reads these with getenv even in a
 * setuid program, and here they can only turn AES off.
 * s390x is left on ChaCha20: OpenSSL uses CPACF there after its own KM/KMCTR function
 * queries, which would be inline assembly here that no machine of this project can check
 * against a real CPACF (qemu-user is its only s390x); riscv64's OpenSSL 3.0 has no AES
 * instructions to use. */

const char *randd_crypto_aes_mask_variable(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return "OPENSSL_ia32cap";
#elif defined(__aarch64__)
    return "OPENSSL_armcap";
#elif defined(__powerpc64__)
    return "OPENSSL_ppccap";
#else
    return NULL;
#endif
}

static int ask_cpu_for_aes(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax, ebx, ecx, edx;

    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_AES);
#elif defined(__aarch64__)
    return (getauxval(AT_HWCAP) & HWCAP_AES) != 0;
#elif defined(__powerpc64__)
    return (getauxval(AT_HWCAP2) & PPC_FEATURE2_HAS_VEC_CRYPTO) != 0;
#else
    return 0;
#endif
}

int randd_crypto_cpu_has_aes(void)
{
    static int known;                       /* 0: not asked yet, 1: AES, -1: none */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

    if (k == 0) {
        k = ask_cpu_for_aes() ? 1 : -1;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k > 0;
}

int randd_crypto_has_hardware_aes(void)
{
    const char *mask = randd_crypto_aes_mask_variable();

    if (mask && getenv(mask))
        return 0;
    return randd_crypto_cpu_has_aes();
}

int randd_crypto_use_stream(struct randd_crypto *c, enum randd_stream_cipher which)
{
    EVP_CIPHER *cipher = c->chacha20;

    if (which == RANDD_STREAM_AES256CTR) {
        if (!randd_crypto_has_hardware_aes())
            return -ENOTSUP;
        if (!c->aes256ctr)
            c->aes256ctr = EVP_CIPHER_fetch(NULL, "AES-256-CTR", NULL);
        if (!c->aes256ctr)
            return -EIO;
        cipher = c->aes256ctr;
    } else if (which != RANDD_STREAM_CHACHA20)
        return -EINVAL;
    if (!EVP_EncryptInit_ex2(c->cipher, cipher, zero_key, zero_key, NULL))
        return -EIO;
    c->stream = which;
    return 0;
}

enum randd_stream_cipher randd_crypto_stream(const struct randd_crypto *c)
{
    return c->stream;
}

static const char *const stream_names[] = {
    [RANDD_STREAM_CHACHA20] = "chacha20",
    [RANDD_STREAM_AES256CTR] = "aes256ctr",
};
#define NSTREAMS (int)(sizeof(stream_names) / sizeof(stream_names[0]))

const char *randd_stream_cipher_name(int which)
{
    return which > 0 && which < NSTREAMS ? stream_names[which] : "unknown";
}

int randd_stream_cipher_from_name(const char *name)
{
    for (int i = 1; i < NSTREAMS; i++)
        if (!strcmp(name, stream_names[i]))
            return i;
    return -1;
}

/* Replaces the key schedule (and, if iv_too, the counter and nonce) in the context with
 * zeros. A zero IV is nobody's secret and an IV-less init skips OpenSSL's IV-length query
 * through its parameter API, a fifth of a generator step's fixed cost (callgrind). */
static int forget_key(struct randd_crypto *c, int iv_too)
{
    return EVP_EncryptInit_ex2(c->cipher, NULL, zero_key, iv_too ? zero_key : NULL, NULL);
}

/* The bound cipher's keystream under key and iv, laid across outs (randd_chacha20_stream). */
static int keystream_across(struct randd_crypto *c, const uint8_t key[RANDD_STREAM_KEY],
                            const uint8_t iv[RANDD_STREAM_IV], int iv_secret,
                            const struct iovec *outs, size_t nouts)
{
    uint8_t block[STREAM_BLOCK];
    size_t spare = 0;                     /* keystream at the end of block not yet given out */
    int ok;

    /* AES on x86-64: the CPU's instructions directly, no context to key and then forget. */
    if (c->stream == RANDD_STREAM_AES256CTR && randd_aes256ctr_available()) {
        randd_aes256ctr_stream(key, iv, outs, nouts);
        return 0;
    }
    ok = EVP_EncryptInit_ex2(c->cipher, NULL, key, iv, NULL);

    for (size_t i = 0; ok && i < nouts; i++) {
        uint8_t *dst = outs[i].iov_base;
        size_t n = outs[i].iov_len, early = n < spare ? n : spare, whole;

        if (early) {
            memcpy(dst, block + sizeof(block) - spare, early);
            spare -= early;
            dst += early;
            n -= early;
        }
        whole = n & ~(size_t)(STREAM_BLOCK - 1);
        ok = keystream_of_zeros(c->cipher, dst, whole);
        if (ok && n > whole) {
            ok = keystream_of_zeros(c->cipher, block, sizeof(block));
            memcpy(dst + whole, block, n - whole);
            spare = sizeof(block) - (n - whole);
        }
    }
    OPENSSL_cleanse(block, sizeof(block));
    /* The context's key (and a caller's nonce) are this call's secrets: replace them. */
    if (!forget_key(c, iv_secret))
        ok = 0;
    return ok ? 0 : -EIO;
}

int randd_chacha20_stream(struct randd_crypto *c, const uint8_t key[RANDD_CHACHA20_KEY],
                          const uint8_t iv[RANDD_CHACHA20_IV], const struct iovec *outs,
                          size_t nouts)
{
    if (c->stream != RANDD_STREAM_CHACHA20)
        return -EINVAL;
    return keystream_across(c, key, iv, 1, outs, nouts);
}

int randd_stream(struct randd_crypto *c, const uint8_t key[RANDD_STREAM_KEY],
                 const struct iovec *outs, size_t nouts)
{
    static const uint8_t zero_iv[RANDD_STREAM_IV];

    return keystream_across(c, key, zero_iv, 0, outs, nouts);
}

int randd_stream_iv(struct randd_crypto *c, const uint8_t key[RANDD_STREAM_KEY],
                    const uint8_t iv[RANDD_STREAM_IV], const struct iovec *outs, size_t nouts)
{
    return keystream_across(c, key, iv, 1, outs, nouts);
}

int randd_chacha20(struct randd_crypto *c, const uint8_t key[RANDD_CHACHA20_KEY],
                   const uint8_t iv[RANDD_CHACHA20_IV], const void *in, void *out, size_t n)
{
    size_t whole = n & ~(size_t)(STREAM_BLOCK - 1), tail = n - whole;
    uint8_t block[STREAM_BLOCK] = { 0 };
    uint8_t *dst = out;
    int ok;

    if (c->stream != RANDD_STREAM_CHACHA20)
        return -EINVAL;
    if (!in) {
        struct iovec all = { out, n };

        return randd_chacha20_stream(c, key, iv, &all, 1);
    }
    ok = EVP_EncryptInit_ex2(c->cipher, NULL, key, iv, NULL) &&
         cipher_blocks(c->cipher, dst, in, whole);
    if (ok && tail) {
        memcpy(block, (const uint8_t *)in + whole, tail);
        ok = cipher_blocks(c->cipher, block, block, sizeof(block));
        memcpy(dst + whole, block, tail);
        OPENSSL_cleanse(block, sizeof(block));
    }
    /* The context's key and counter words are this call's secrets: replace them. */
    if (!forget_key(c, 1))
        ok = 0;
    return ok ? 0 : -EIO;
}
