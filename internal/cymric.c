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

int randd_cymric_init(struct randd_cymric *g, unsigned flags)
{
    memset(g, 0, sizeof(*g));
    g->flags = flags;
    g->crypto = randd_crypto_new();
    return g->crypto ? 0 : -ENOMEM;
}

int randd_cymric_init_shared(struct randd_cymric *g, unsigned flags, struct randd_crypto *crypto)
{
    memset(g, 0, sizeof(*g));
    g->flags = flags;
    g->crypto = crypto;
    g->crypto_borrowed = true;
    return 0;
}

static void discard_batch(struct randd_cymric *g)
{
    OPENSSL_cleanse(g->batch, sizeof(g->batch));
    g->batch_left = 0;
}

int randd_cymric_use_stream(struct randd_cymric *g, enum randd_stream_cipher which)
{
    int rc = randd_crypto_use_stream(g->crypto, which);

    /* Keystream already in the batch came from the old binding: serve none of it. */
    discard_batch(g);
    return rc;
}

enum randd_stream_cipher randd_cymric_stream(const struct randd_cymric *g)
{
    return randd_crypto_stream(g->crypto);
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
    if (!g->crypto_borrowed)
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
    randd_crypto_wipe_stack();
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

/* The nonce where each cipher's IV takes it, the block counter at 0 beside it: ChaCha20's
 * (OpenSSL's layout, counter first) = 0^64 || nonce; AES-CTR's counter block, big-endian
 * and incremented from its low end = nonce || 0^64. */
static void stream_iv(const struct randd_cymric *g, uint8_t iv[RANDD_STREAM_IV])
{
    size_t at = randd_crypto_stream(g->crypto) == RANDD_STREAM_AES256CTR ? 0 : 8;

    memset(iv, 0, RANDD_STREAM_IV);
    memcpy(iv + at, g->state + NONCE_OFFSET, NONCE_BYTES);
}

int randd_cymric_generate(struct randd_cymric *g, void *out, size_t n,
                          const void *input, size_t input_len)
{
    uint8_t iv[RANDD_STREAM_IV];
    struct iovec all = { out, n };
    int rc;

    if (!g->seeded)
        return -EAGAIN;
    stream_iv(g, iv);
    rc = randd_stream_iv(g->crypto, g->state, iv, &all, 1);
    OPENSSL_cleanse(iv, sizeof(iv));
    if (rc == 0)
        rc = fast_key_erasure(g, input, input_len);
    randd_crypto_wipe_stack();
    if (rc < 0) {
        OPENSSL_cleanse(out, n);
        randd_cymric_wipe(g);
    }
    return rc;
}

int randd_cymric_read(struct randd_cymric *g, void *out, size_t n)
{
    uint8_t *dst = out;
    size_t total = n;
    int rc = 0;

    while (n > 0 && rc == 0) {
        uint8_t *src;
        size_t take;

        if (g->batch_left == 0) {
            if (n >= sizeof(g->batch)) {
                rc = randd_cymric_generate(g, dst, n, NULL, 0);
                break;
            }
            rc = randd_cymric_generate(g, g->batch, sizeof(g->batch), NULL, 0);
            if (rc < 0)
                break;
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
    /* A failure leaves nothing of the stream in out: the batch bytes already copied there
     * would otherwise outlive a reply that is never sent (callers free out unwiped past the
     * length they served). */
    if (rc < 0)
        OPENSSL_cleanse(out, total);
    return rc;
}
