/* What a user of randctl benchmark would otherwise use, each as an op_fn: getrandom,
 * /dev/urandom, RAND_bytes (with and without randd.so as its seed source), librandd's
 * randd_bytes() and in-process generator, BN_rand_range, and the floors the ratios are taken
 * against (the keystream randd runs by default, an AF_UNIX ping-pong and an AF_UNIX stream).
 * The vDSO getrandom is bench_vdso.c's; the rows are the sections'. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include "aes_ctr.h"
#include "bench.h"
#include "crypto.h"

/* --- the generators ----------------------------------------------------------------------- */

int op_getrandom(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    for (size_t got = 0; got < size;) {
        ssize_t n = getrandom(p->out + got, size - got, 0);

        if (n < 0 && errno != EINTR)
            return -errno;
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

int op_urandom(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    for (size_t got = 0; got < size;) {
        ssize_t n = read(p->fd, p->out + got, size - got);

        if (n <= 0 && errno != EINTR)
            return n < 0 ? -errno : -EIO;
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

int op_rand_bytes(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    return RAND_bytes(p->out, (int)size) == 1 ? 0 : -EIO;
}

int op_rand_bytes_randd(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    return RAND_bytes_ex(p->randd_seeded, p->out, size, 0) == 1 ? 0 : -EIO;
}

/* The whole path a librandd caller gets, into its buffer: BYTES_MEMFD from 64 KiB up. */
int op_librandd(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    return randd_bytes(p->daemon, p->out, size);
}

int op_in_process(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    return randd_rng_bytes(p->rng, p->out, size);
}

/* The keystream floor: what randd's generators run, lib/aes_ctr.c where the CPU does AES (on
 * VAES about twice OpenSSL's rate), else OpenSSL's ChaCha20, p->cipher's. */
int op_keystream(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    if (floor_is_aes() && randd_aes256ctr_available()) {
        static const uint8_t key[32], iv[16];
        struct iovec out = { p->out, size };

        randd_aes256ctr_stream(key, iv, &out, 1);
        return 0;
    }
    return op_openssl_keystream(ctx, size);
}

/* OpenSSL's keystream of the floor's cipher, p->cipher's, shown beside it. */
int op_openssl_keystream(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;
    int outl;

    return EVP_EncryptUpdate(p->cipher, p->out, &outl, p->out, (int)size) == 1 ? 0 : -EIO;
}

int op_bn_rand_range(void *ctx, size_t size)
{
    struct plain_ctx *p = ctx;

    (void)size;
    return BN_rand_range(p->v, p->r) == 1 ? 0 : -EIO;
}

/* --- the keystream floor -------------------------------------------------------------------
 * The cipher randd's generators run by default here (cipher = auto, and the in-process
 * generator alike), AES-256-CTR where the CPU does AES, else ChaCha20, on the code they run
 * it on (op_keystream). A floor of a slower cipher, or of slower code, would flatter every
 * ratio taken against it. */
bool floor_is_aes(void)
{
    return randd_crypto_has_hardware_aes();
}

const char *floor_cipher(void)
{
    return floor_is_aes() ? "AES-256-CTR" : "ChaCha20";
}

const char *floor_name(void)
{
    return floor_is_aes() ? "AES-256-CTR keystream" : "ChaCha20 keystream";
}

/* --- OpenSSL with randd.so as its seed source ---------------------------------------------
 * RAND_bytes in a library context of its own whose seed source is RANDD, beside RAND_bytes
 * in the process's default context (SEED-SRC, the kernel, unless openssl.cnf says
 * otherwise). OpenSSL's DRBGs reseed rarely, so the two should run alike; STATUS's count of
 * SEED requests over the runs shows how rarely. */

/* randd.so is found as OpenSSL finds modules ($OPENSSL_MODULES, else `openssl version -m`)
 * and, without a config section, finds the daemon through $RANDD_SOCKET. */
int seeded_open(struct seeded *s)
{
    setenv("RANDD_SOCKET", daemon_socket(), 1);
    s->libctx = OSSL_LIB_CTX_new();
    s->base = s->libctx ? OSSL_PROVIDER_load(s->libctx, "default") : NULL;
    s->randd = s->base ? OSSL_PROVIDER_load(s->libctx, "randd") : NULL;
    if (s->randd && RAND_set_seed_source_type(s->libctx, "RANDD", "provider=randd"))
        return 0;
    ERR_clear_error();
    fprintf(stderr, "randctl: benchmark: randd.so not found (is OPENSSL_MODULES right?): "
                    "RAND_bytes with randd as seed source is not measured\n");
    return -ENOENT;
}

void seeded_close(struct seeded *s)
{
    if (s->randd)
        OSSL_PROVIDER_unload(s->randd);
    if (s->base)
        OSSL_PROVIDER_unload(s->base);
    OSSL_LIB_CTX_free(s->libctx);
}

/* The daemon's count of SEED requests, from STATUS; NAN when it cannot be had. */
double seed_requests(void)
{
    randd_handle *h;
    char *json = NULL;
    const char *at;
    double n = NAN;

    if (randd_open(&h, daemon_socket()) < 0)
        return NAN;
    if (randd_status(h, &json) > 0 && (at = strstr(json, "\"seed\":")))
        n = strtod(at + 7, NULL);
    free(json);
    randd_close(h);
    return n;
}

/* A socketpair whose far end (fds[1]) a thread of its own serves. */
static int served_pair_open(int fds[2], pthread_t *thread, void *(*serve)(void *))
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
        return -errno;
    if (pthread_create(thread, NULL, serve, &fds[1]) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -EAGAIN;
    }
    return 0;
}

static void served_pair_close(int fds[2], pthread_t thread)
{
    shutdown(fds[0], SHUT_RDWR);         /* the thread's read or send fails: it returns */
    pthread_join(thread, NULL);
    close(fds[0]);
    close(fds[1]);
}

/* --- the AF_UNIX ping-pong floor: an echo thread answering 8 bytes with 32 --------------- */

static void *echo_run(void *arg)
{
    int fd = *(int *)arg;
    uint8_t req[8], reply[32] = { 0 };

    while (read(fd, req, sizeof(req)) == sizeof(req))
        if (write(fd, reply, sizeof(reply)) != sizeof(reply))
            break;
    return NULL;
}

int op_pingpong(void *ctx, size_t size)
{
    struct echo *e = ctx;
    uint8_t req[8] = { 0 }, reply[32];
    size_t got = 0;

    (void)size;
    if (write(e->fds[0], req, sizeof(req)) != sizeof(req))
        return -EIO;
    while (got < sizeof(reply)) {
        ssize_t n = read(e->fds[0], reply + got, sizeof(reply) - got);

        if (n <= 0)
            return -EIO;
        got += (size_t)n;
    }
    return 0;
}

int echo_open(struct echo *e)
{
    return served_pair_open(e->fds, &e->thread, echo_run);
}

void echo_close(struct echo *e)
{
    served_pair_close(e->fds, e->thread);
}

/* --- the AF_UNIX stream floor: a thread writing ready bytes, 64 KiB a write -----------------
 * What every raw BYTES reply pays whoever serves it: the copy into the socket, the copy out
 * of it, and the wakeups between the two sides. No bytes are generated, so beside the
 * keystream floor it shows what the daemon adds beyond the two. */

#define STREAM_WRITE (64u << 10)         /* the daemon's piece (REPLY_CHUNK in server.c) */

static void *stream_run(void *arg)
{
    static uint8_t ready[STREAM_WRITE];  /* zeros: the floor measures moving bytes, not them */
    int fd = *(int *)arg;

    while (send(fd, ready, sizeof(ready), MSG_NOSIGNAL) > 0)
        ;
    return NULL;                         /* the reader shut the socket down */
}

int op_stream(void *ctx, size_t size)
{
    struct stream *st = ctx;

    for (size_t got = 0; got < size;) {
        ssize_t n = read(st->fds[0], st->out + got, size - got);

        if (n <= 0 && errno != EINTR)
            return n < 0 ? -errno : -EIO;
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

int stream_open(struct stream *st)
{
    return served_pair_open(st->fds, &st->thread, stream_run);
}

void stream_close(struct stream *st)
{
    served_pair_close(st->fds, st->thread);
}
