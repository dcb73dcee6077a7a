/* The Cymric construction (seed, generate, rekey) and the batched reader on top of it.
 * Every copy of key material is wiped on the line after its last use; OpenSSL plumbing
 * lives in crypto.c. */
#include "cymric.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#define NONCE_OFFSET 32
#define NONCE_BYTES  8
#define STACK_WIPE   4096   /* deeper than OpenSSL's BLAKE2b and ChaCha20 frames go */

/* OpenSSL's BLAKE2b and ChaCha20 leave key-dependent words in their own stack frames
 * (BLAKE2b copies each message block, here the old state, into a local array), and
 * nothing wipes them. Called right after them, this function's frame lies over the region
 * they used, and wipes it (as libsodium's sodium_stackzero does). */
static __attribute__((noinline)) void wipe_callee_stack(void)
{
    uint8_t region[STACK_WIPE];

    /* explicit_bzero is glibc's vectorised memset that is never optimised away; 4 KiB with
     * OPENSSL_cleanse's 8-byte loop cost 38% more instructions per 32-byte generate. */
    explicit_bzero(region, sizeof(region));
    __asm__ volatile("" : : "r"(region) : "memory");
}

int randd_cymric_init(struct randd_cymric *g, unsigned flags)
{
    memset(g, 0, sizeof(*g));
    g->flags = flags;
    g->crypto = randd_crypto_new();
    return g->crypto ? 0 : -ENOMEM;
}

static void discard_batch(struct randd_cymric *g)
{
    OPENSSL_cleanse(g->batch, sizeof(g->batch));
    g->batch_left = 0;
}

void randd_cymric_wipe(struct randd_cymric *g)
{
    OPENSSL_cleanse(g->state, sizeof(g->state));
    discard_batch(g);
    g->counter = 0;
    g->seeded = false;
}

void randd_cymric_fini(struct randd_cymric *g)
{
    randd_cymric_wipe(g);
    randd_crypto_free(g->crypto);
    g->crypto = NULL;
}

int randd_cymric_seed(struct randd_cymric *g, const void *material, size_t len)
{
    int rc;

    if (len == 0)
        return -EINVAL;
    /* The MAC copies the key before hashing, so the new state may overwrite the old. */
    rc = randd_blake2b512_keyed(g->crypto, g->state, g->state, sizeof(g->state),
                                material, len);
    wipe_callee_stack();
    if (rc < 0) {
        randd_cymric_wipe(g);
        return rc;
    }
    discard_batch(g);
    g->seeded = true;
    return 0;
}

static void store_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* state = BLAKE2b-512(state || extra): the old state is gone once this returns. */
static int fast_key_erasure(struct randd_cymric *g, const void *input, size_t input_len)
{
    uint8_t extra[16];
    struct iovec parts[3] = {
        { g->state, sizeof(g->state) },
        { extra, 0 },
        { (void *)input, input ? input_len : 0 },
    };
    int rc;

    if (!(g->flags & RANDD_CYMRIC_DETERMINISTIC)) {
        struct timespec now;

        /* BOOTTIME keeps counting across suspend, so a resumed twin state still diverges. */
        clock_gettime(CLOCK_BOOTTIME, &now);
        store_be64(extra, g->counter);
        store_be64(extra + 8, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
        parts[1].iov_len = sizeof(extra);
    }
    g->counter++;
    rc = randd_blake2b512(g->crypto, g->state, parts, 3);
    OPENSSL_cleanse(extra, sizeof(extra));
    return rc;
}

int randd_cymric_generate(struct randd_cymric *g, void *out, size_t n,
                          const void *input, size_t input_len)
{
    uint8_t iv[RANDD_CHACHA20_IV] = { 0 };   /* 64-bit counter 0 || 64-bit nonce */
    int rc;

    if (!g->seeded)
        return -EAGAIN;
    memcpy(iv + 8, g->state + NONCE_OFFSET, NONCE_BYTES);
    rc = randd_chacha20(g->crypto, g->state, iv, NULL, out, n);
    OPENSSL_cleanse(iv, sizeof(iv));
    if (rc == 0)
        rc = fast_key_erasure(g, input, input_len);
    wipe_callee_stack();
    if (rc < 0) {
        OPENSSL_cleanse(out, n);
        randd_cymric_wipe(g);
    }
    return rc;
}

int randd_cymric_read(struct randd_cymric *g, void *out, size_t n)
{
    uint8_t *dst = out;

    while (n > 0) {
        uint8_t *src;
        size_t take;
        int rc;

        if (g->batch_left == 0) {
            if (n >= sizeof(g->batch))
                return randd_cymric_generate(g, dst, n, NULL, 0);
            rc = randd_cymric_generate(g, g->batch, sizeof(g->batch), NULL, 0);
            if (rc < 0)
                return rc;
            g->batch_left = sizeof(g->batch);
        }
        take = n < g->batch_left ? n : g->batch_left;
        src = g->batch + sizeof(g->batch) - g->batch_left;
        memcpy(dst, src, take);
        OPENSSL_cleanse(src, take);
        g->batch_left -= take;
        dst += take;
        n -= take;
    }
    return 0;
}
