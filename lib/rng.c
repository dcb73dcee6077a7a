/* The in-process generator (randd.h, randd_rng_*): a keystream with fast key erasure in
 * batches, as in the kernel's and OpenBSD's generators, seeded and reseeded from the daemon.
 * Owns the generator state, its choice of cipher and its lifetime; the wire protocol belongs
 * to client.c, the ciphers to crypto.c.
 *
 * Each step of the generator is a run of keystream under the current key: its first 32 bytes
 * replace the key, the rest is output. Small requests are served from a step's batch of
 * RNG_BATCH - 32 bytes, handed out from the end and wiped as it goes; a large request is a
 * step of its own written straight into the caller's buffer, in one pass. */
#include "rng_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <openssl/crypto.h>

#include "generation.h"
#include "process_token.h"
#include "secmem.h"

#define DEFAULT_RESEED_BYTES   (16u << 20)
#define DEFAULT_RESEED_SECONDS 60
#define DAEMON_TIMEOUT_MS      2000
#define DIRECT_MAX             (1u << 30)   /* one key's direct output: far below 2^32 blocks */

/* --- fork detection ---------------------------------------------------------------------
 * MADV_WIPEONFORK zeroes the secret page in a child, so seed_source and process read 0 there.
 * process also holds the seeder's randd_process_token(), which differs in any child: that
 * catches a child where the advice was ignored (qemu-user accepts it and does nothing) or
 * refused (Linux before 4.14). One call, a load where the kernel wipes pages, per request. */

static bool seeded_in_another_process(const struct rng_secret *s)
{
    return s->process != randd_process_token();
}

static uint64_t monotonic_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --- VM clone detection -------------------------------------------------------------------
 * A restored or cloned VM snapshot runs this state in every clone. randd counts the kernel's
 * announcements of new VM generations in a word it publishes beside its socket; a generator
 * seeded while the word read g reseeds before its next output once it reads anything else.
 * One load and compare per call, like the fork check. */

static void map_vm_word(randd_rng *rng)
{
    char path[4096];

    /* randd retired the word (it stopped, or a new randd replaced it): map its successor. */
    if (rng->vm_word && randd_generation_retired(rng->vm_word)) {
        randd_generation_unmap(rng->vm_word);
        rng->vm_word = NULL;
    }
    if (!rng->vm_word && randd_generation_path(rng->socket, path, sizeof(path)) == 0)
        rng->vm_word = randd_generation_map(path, NULL, 0);
}

static uint64_t vm_generation_now(const randd_rng *rng)
{
    return rng->vm_word ? randd_generation_load(rng->vm_word) : 0;
}

static bool vm_generation_moved(const randd_rng *rng)
{
    return rng->vm_word && randd_generation_load(rng->vm_word) != rng->secret->vm_generation;
}

/* --- seeding ----------------------------------------------------------------------------- */

static int seed_from_daemon(const randd_rng *rng, uint8_t seed[RNG_SEED_BYTES])
{
    randd_handle *h;
    int rc = randd_open(&h, rng->socket);

    if (rc < 0)
        return rc;
    /* A daemon that is not ready answers at once rather than keeping us waiting. */
    randd_set_nonblock(h, 1);
    randd_set_timeout(h, DAEMON_TIMEOUT_MS);
    rc = randd_bytes(h, seed, RNG_SEED_BYTES);
    randd_close(h);
    return rc;
}

/* n bytes of getrandom() with flags. Returns 0 or -errno. */
static int kernel_bytes(uint8_t *out, size_t n, unsigned flags)
{
    while (n > 0) {
        ssize_t got = getrandom(out, n, flags);

        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        out += got;
        n -= (size_t)got;
    }
    return 0;
}

static int seed_from_kernel(uint8_t seed[RNG_SEED_BYTES])
{
    return kernel_bytes(seed, RNG_SEED_BYTES, 0);
}

/* The kernel's share of every seed. Before the kernel's generator is initialised (early
 * boot) GRND_INSECURE gives what it has rather than hold a daemon-seeded program up: these
 * bytes only add to the daemon's. Kernels before 5.6 lack it, and wait instead. */
static int kernel_share(uint8_t out[RNG_KERNEL_BYTES])
{
    int rc = kernel_bytes(out, RNG_KERNEL_BYTES, GRND_NONBLOCK);

    if (rc == -EAGAIN)
        rc = kernel_bytes(out, RNG_KERNEL_BYTES, GRND_INSECURE);
    if (rc == -EINVAL)
        rc = kernel_bytes(out, RNG_KERNEL_BYTES, 0);
    return rc;
}

/* key = BLAKE2b-512(key || seed || kernel) truncated. The old key still counts, so a weak
 * seed never makes the state weaker than it was; and 32 bytes of getrandom() go in at every
 * seed and reseed, so no daemon alone chooses the key (a stranger's fake one, say, answering
 * the same bytes every time): the output is at least as unpredictable as the kernel's.
 * One 32-byte getrandom() per reseed, nothing per call. Unread batch bytes are dropped. */
static int mix_seed(randd_rng *rng, const uint8_t seed[RNG_SEED_BYTES], int source,
                    uint64_t vm_generation)
{
    struct rng_secret *s = rng->secret;
    uint8_t digest[RANDD_BLAKE2B_BYTES], kernel[RNG_KERNEL_BYTES];
    struct iovec parts[] = {
        { s->key, sizeof(s->key) },
        { (void *)seed, RNG_SEED_BYTES },
        { kernel, sizeof(kernel) },
    };
    int rc = kernel_share(kernel);

    if (rc == 0)
        rc = randd_blake2b512(rng->crypto, digest, parts, 3);
    OPENSSL_cleanse(kernel, sizeof(kernel));
    if (rc == 0) {
        memcpy(s->key, digest, sizeof(s->key));
        OPENSSL_cleanse(s->batch, sizeof(s->batch));
        s->left = 0;
        s->since_reseed = 0;
        s->reseeded_at_ms = monotonic_ms();
        s->process = randd_process_token();
        s->seed_source = source;
        s->vm_generation = vm_generation;
    }
    OPENSSL_cleanse(digest, sizeof(digest));
    return rc;
}

int randd_rng_reseed(randd_rng *rng)
{
    uint8_t seed[RNG_SEED_BYTES];
    int source = RANDD_RNG_FROM_DAEMON, rc;
    uint64_t vm_generation;

    /* The word before the seed: a daemon that bumped it has already stopped serving the
     * old state, so a seed drawn after this read is at least as new as the word says. */
    map_vm_word(rng);
    vm_generation = vm_generation_now(rng);
    rc = seed_from_daemon(rng, seed);

    if (rc < 0 && !(rng->flags & RANDD_RNG_REQUIRE_DAEMON)) {
        source = RANDD_RNG_FROM_GETRANDOM;
        rc = seed_from_kernel(seed);
    }
    if (rc == 0)
        rc = mix_seed(rng, seed, source, vm_generation);
    OPENSSL_cleanse(seed, sizeof(seed));
    if (rc < 0)
        rng->secret->seed_source = RANDD_RNG_UNSEEDED;
    return rc;
}

static bool reseed_due(const randd_rng *rng)
{
    const struct rng_secret *s = rng->secret;

    return s->seed_source == RANDD_RNG_UNSEEDED ||
           seeded_in_another_process(s) || vm_generation_moved(rng) ||
           s->since_reseed >= rng->reseed_bytes ||
           monotonic_ms() - s->reseeded_at_ms >= (uint64_t)rng->reseed_seconds * 1000;
}

/* --- fast key erasure ---------------------------------------------------------------------
 * Every step is one keystream under the current key (ChaCha20 with counter 0 and nonce 0, or
 * AES-256-CTR from counter block 0): its first 32 bytes overwrite the key in place, the bytes
 * after them are output. One cipher setup per step, and the key that made the output is gone
 * before the output is read. Each key runs once, for at most DIRECT_MAX bytes. */

static int step(randd_rng *rng, uint8_t *out, size_t n)
{
    struct rng_secret *s = rng->secret;
    struct iovec parts[] = { { s->key, sizeof(s->key) }, { out, n } };
    int rc;

    if (reseed_due(rng) && (rc = randd_rng_reseed(rng)) < 0)
        return rc;
    /* A refill's key and batch lie end to end: one run of whole blocks, no split block. */
    if (out == s->batch && n == sizeof(s->batch)) {
        parts[0] = (struct iovec){ s->step, sizeof(s->step) };
        rc = randd_stream(rng->crypto, s->key, parts, 1);
    } else
        rc = randd_stream(rng->crypto, s->key, parts, 2);
    randd_crypto_wipe_stack();             /* the step's key, spilled by the vector code */
    if (rc < 0)
        OPENSSL_cleanse(s, sizeof(*s));      /* unseeded: the next call starts over */
    return rc;
}

/* A new batch for small requests. */
static int refill(randd_rng *rng)
{
    struct rng_secret *s = rng->secret;
    int rc = step(rng, s->batch, sizeof(s->batch));

    if (rc == 0)
        s->left = sizeof(s->batch);
    return rc;
}

/* Hands out n <= left bytes from the end of the batch and wipes them there. */
static void take(struct rng_secret *s, uint8_t *out, size_t n)
{
    uint8_t *from = s->batch + sizeof(s->batch) - s->left;

    memcpy(out, from, n);
    explicit_bzero(from, n);      /* glibc's memset behind a barrier: a few ns for 32 bytes */
    s->left -= n;
    s->since_reseed += n;
}

/* A large request is a step of its own, written straight into the caller's buffer; the
 * batch's unread bytes stay for later small requests. */
static int direct(randd_rng *rng, uint8_t *out, size_t n)
{
    int rc = step(rng, out, n);

    if (rc == 0)
        rng->secret->since_reseed += n;
    return rc;
}

int randd_rng_bytes(randd_rng *rng, void *buf, size_t n)
{
    struct rng_secret *s = rng->secret;
    uint8_t *out = buf;
    size_t total = n;
    int rc = 0;

    if (s->left >= n && !seeded_in_another_process(s) &&
        !vm_generation_moved(rng)) {
        take(s, out, n);       /* the common case: a small request from the batch */
        return 0;
    }
    while (n > 0 && rc == 0) {
        if (seeded_in_another_process(s) || vm_generation_moved(rng))
            s->left = 0;
        if (n >= RNG_DIRECT_MIN) {
            size_t chunk = n < DIRECT_MAX ? n : DIRECT_MAX;

            rc = direct(rng, out, chunk);
            out += chunk;
            n -= chunk;
            continue;
        }
        if (s->left == 0 && (rc = refill(rng)) < 0)
            break;
        size_t chunk = n < s->left ? n : s->left;

        take(s, out, chunk);
        out += chunk;
        n -= chunk;
    }
    if (rc < 0)
        OPENSSL_cleanse(buf, total);
    return rc;
}

/* --- the cipher ---------------------------------------------------------------------------
 * AES-256-CTR where the CPU does AES itself: with AES-NI/VAES OpenSSL runs it about 1.5 times
 * as fast as ChaCha20 (issue 19). Elsewhere ChaCha20, never table-driven AES. Chosen once per
 * generator; RANDD_RNG_CIPHER=chacha20|aes256ctr forces one, and a value we do not know is
 * an error rather than a silent default, since whoever set it asked for something. */

#define CIPHER_ENV "RANDD_RNG_CIPHER"

static int choose_cipher(randd_rng *rng)
{
    const char *forced = secure_getenv(CIPHER_ENV);
    enum randd_stream_cipher which = randd_crypto_has_hardware_aes() ? RANDD_STREAM_AES256CTR
                                                                     : RANDD_STREAM_CHACHA20;

    if (forced && *forced) {
        int named = randd_stream_cipher_from_name(forced);

        if (named < 0)
            return -EINVAL;
        which = (enum randd_stream_cipher)named;   /* -ENOTSUP below without hardware AES */
    }
    return randd_crypto_use_stream(rng->crypto, which);
}

const char *randd_rng_cipher(const randd_rng *rng)
{
    return randd_stream_cipher_name(randd_crypto_stream(rng->crypto));
}

/* --- lifetime ----------------------------------------------------------------------------- */

int randd_rng_new(randd_rng **out, const struct randd_rng_options *options)
{
    static const struct randd_rng_options defaults;
    randd_rng *rng;
    int lock_errno, rc;

    *out = NULL;
    if (!options)
        options = &defaults;
    rng = calloc(1, sizeof(*rng));
    if (!rng)
        return -ENOMEM;
    rng->secret_len = sizeof(struct rng_secret);
    rng->secret = randd_secure_alloc(rng->secret_len, &lock_errno);
    rng->crypto = randd_crypto_new();
    rng->socket = options->socket ? strdup(options->socket) : NULL;
    rng->reseed_bytes = options->reseed_bytes ? options->reseed_bytes : DEFAULT_RESEED_BYTES;
    rng->reseed_seconds = options->reseed_seconds ? options->reseed_seconds
                                                  : DEFAULT_RESEED_SECONDS;
    rng->flags = options->flags;
    if (!rng->secret || !rng->crypto || (options->socket && !rng->socket)) {
        randd_rng_free(rng);
        return -ENOMEM;
    }
    rc = choose_cipher(rng);
    if (rc == 0)
        rc = randd_rng_reseed(rng);
    if (rc < 0) {
        randd_rng_free(rng);
        return rc;
    }
    *out = rng;
    return 0;
}

int randd_rng_seed_source(const randd_rng *rng)
{
    const struct rng_secret *s = rng->secret;

    /* In a child: not seeded here yet. */
    if (seeded_in_another_process(s))
        return RANDD_RNG_UNSEEDED;
    return s->seed_source;
}

void randd_rng_free(randd_rng *rng)
{
    if (!rng)
        return;
    randd_secure_free(rng->secret, rng->secret_len);
    randd_generation_unmap(rng->vm_word);
    randd_crypto_free(rng->crypto);
    free(rng->socket);
    free(rng);
}

/* --- one generator per thread ------------------------------------------------------------- */

static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static __thread randd_rng *thread_rng;

static void free_thread_rng(void *rng)
{
    randd_rng_free(rng);
}

static void create_thread_key(void)
{
    (void)pthread_key_create(&thread_key, free_thread_rng);
}

int randd_random(void *buf, size_t n)
{
    if (!thread_rng) {
        int rc = randd_rng_new(&thread_rng, NULL);

        if (rc < 0) {
            OPENSSL_cleanse(buf, n);
            return rc;
        }
        pthread_once(&thread_key_once, create_thread_key);
        (void)pthread_setspecific(thread_key, thread_rng);
    }
    return randd_rng_bytes(thread_rng, buf, n);
}
