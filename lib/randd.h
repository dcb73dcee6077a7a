/* librandd: the client side of randd's protocol v1 (lib/PROTOCOL.md).
 *
 * Every function returns 0 (or a count) on success and a negative error code on failure:
 * -errno for system errors (-ENOENT, -ECONNREFUSED: daemon not running; -EACCES;
 * -ETIMEDOUT; -EPERM: a daemon another user could have put there, refused), -EINVAL for arguments refused before anything is sent (a NULL buffer, a size
 * out of range), or RANDD_ERR(status), -(RANDD_ERR_STATUS + status), when the daemon
 * answered with an error status (enum randd_status below). randd_strerror() turns any of
 * them into text; randd_message() gives the daemon's own words for the last error reply.
 * After any error the handle is usable for the next call (over a new connection if the old
 * one could be out of step).
 *
 * Thread safety: a handle is not thread-safe. Use one handle per thread, or hold a lock
 * around each call. Handles survive fork() (and a clone() without CLONE_VM): a child's first
 * call opens its own connection instead of sharing the parent's. */
#ifndef RANDD_H
#define RANDD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RANDD_DEFAULT_SOCKET "/run/randd/randd.sock"
#define RANDD_ERR_STATUS     1000      /* -(RANDD_ERR_STATUS + status) for daemon errors */

/* The daemon's reply statuses (lib/PROTOCOL.md). A call answered with an error status returns
 * RANDD_ERR(status): case RANDD_ERR(RANDD_BUSY): try again later. */
enum randd_status {
    RANDD_OK = 0,
    RANDD_BAD_VERSION = 1,
    RANDD_UNKNOWN_OP = 2,
    RANDD_MALFORMED = 3,
    RANDD_TOO_LARGE = 4,
    RANDD_INVALID_ARGUMENT = 5,
    RANDD_NOT_PERMITTED = 6,
    RANDD_NOT_READY = 7,
    RANDD_BUSY = 8,
    RANDD_INTERNAL = 9,
    RANDD_NO_NOISE_SOURCE = 10,    /* a full-entropy or prediction-resistant request, and no
                                    * healthy noise source (the CPU source, hwrng, jitter) to serve it */
};
#define RANDD_ERR(status) (-(RANDD_ERR_STATUS + (status)))

typedef struct randd_handle randd_handle;

/* path NULL: $RANDD_SOCKET (ignored in setuid programs: secure_getenv), else
 * RANDD_DEFAULT_SOCKET. Connects at once, and believes the daemon there only if no other
 * unprivileged user could have put it there (librandd(3), SECURITY): its uid is root's or
 * ours, or it owns the socket's directory, which only it and root can write, nor anyone else
 * a directory above. Else -EPERM, saying why in randd_message(NULL); every reconnection is
 * checked the same way. A daemon whose backlog is full is connected to by the first call,
 * under that call's timeout. */
int randd_open(randd_handle **handle, const char *path);
void randd_close(randd_handle *h);

/* A deadline for each call in milliseconds (0, the default: wait as long as it takes), the
 * connect() it may make included. A call that times out returns -ETIMEDOUT and drops the
 * connection; the next reconnects. */
void randd_set_timeout(randd_handle *h, int milliseconds);
/* Nonzero: requests carry NONBLOCK, so a daemon that is not ready answers NOT_READY
 * (RANDD_ERR(RANDD_NOT_READY)) instead of making the request wait. */
void randd_set_nonblock(randd_handle *h, int nonblock);

/* n random bytes, any n: split into requests of at most 16 MiB, pipelined. From 64 KiB up,
 * copied out of a memfd the daemon shares with the connection (and wiped there), or over the
 * socket when the daemon cannot. From the second such call in a row, the handle has the next
 * two blocks of the same size (1 MiB at most) made before the call returns: never shared
 * with a forked child, dropped if the VM generation moves, wiped by any other call. */
int randd_bytes(randd_handle *h, void *buf, size_t n);

/* What a randd_bytes_mode() call asks of the daemon (lib/PROTOCOL.md, "Noise-source modes").
 * Both modes draw on the daemon's noise sources (the CPU's, hwrng, jitter), never on the kernel's
 * getrandom(), and each credited bit serves one request only. */
enum randd_mode {
    RANDD_MODE_DEFAULT = 0,                /* as randd_bytes: computationally secure */
    /* Before each request is generated, the daemon reseeds from at least 256 bits of fresh
     * noise-source entropy (SP 800-90C RBG2(P) with prediction resistance): a state that
     * leaked earlier does not predict the output. */
    RANDD_MODE_PREDICTION_RESISTANT = 1,
    /* Every output bit backed by a fresh credited noise-source bit, plus the construction's
     * margin (SP 800-90C RBG3(XOR): 32 bytes of SHA-256-conditioned noise, credited 320 bits,
     * XORed into each 32 bytes of generator output; AIS 20/31 NTG.1). As fast as the noise
     * sources are. */
    RANDD_MODE_FULL_ENTROPY = 2,
};

/* n random bytes in mode, any n: split into requests made one after another (4096 bytes
 * each for full entropy, 65528 for prediction resistance: one noise-source reseed each, so
 * every 64 KiB of the answer follows fresh noise, as one SP 800-90A generate does),
 * always over the socket, never from read-ahead blocks or a memfd arena (any read ahead are
 * wiped unused). Such a request waits for noise entropy, unless randd_set_nonblock() was
 * set: then RANDD_ERR(RANDD_NOT_READY) when there is not enough right now. A timeout
 * (randd_set_timeout) gives -ETIMEDOUT and gives the daemon back the request's place.
 * RANDD_ERR(RANDD_NO_NOISE_SOURCE) at once when no healthy noise source can serve the mode;
 * RANDD_ERR(RANDD_BUSY) when this uid already has as many such requests waiting as it may.
 * randd_message() gives the daemon's reason. -EINVAL for a mode not in enum randd_mode. On
 * an error, buf holds no output (the pieces served are wiped). */
int randd_bytes_mode(randd_handle *h, void *buf, size_t n, enum randd_mode mode);

/* count values uniform in [0, r), r big-endian in len bytes (1..1024), written to out as
 * count * len bytes, each big-endian. Any count: split into requests as needed. */
int randd_range(randd_handle *h, const uint8_t *r, size_t len, uint8_t *out, size_t count);

/* A random prime of exactly bits bits (16..4096), uniform over the primes of that size,
 * big-endian in (bits + 7) / 8 bytes of out with the top bit set. Large primes take a while
 * (seconds at 4096 bits); the daemon serves others meanwhile. A uid may have 4 under way
 * (over all its handles); one more gets RANDD_ERR(RANDD_BUSY): retry later. */
int randd_prime(randd_handle *h, unsigned bits, uint8_t *out);

/* The daemon's STATUS JSON, NUL-terminated, in *json (free() it). Returns its length. */
int randd_status(randd_handle *h, char **json);

/* Mixes data into the daemon's pool, crediting bits (<= 8 per byte). Needs uid 0 or the
 * daemon's trusted_group, else RANDD_ERR(RANDD_NOT_PERMITTED). */
int randd_add_entropy(randd_handle *h, const void *data, size_t len, unsigned bits);

/* --- the in-process generator ------------------------------------------------------------
 * Random bytes faster than a system call, still drawn from randd's health-checked entropy:
 * a ChaCha20 generator inside this process (AES-256-CTR instead where the CPU does AES in
 * hardware: faster there; the environment variable RANDD_RNG_CIPHER=chacha20|aes256ctr forces
 * one), seeded with 64 bytes from the daemon and reseeded from it every reseed_bytes bytes or
 * reseed_seconds seconds, each seed mixed with 32 bytes of getrandom() so that no daemon
 * alone decides the key. When the daemon cannot be
 * reached it seeds from getrandom() instead and says so (randd_rng_seed_source), unless
 * RANDD_RNG_REQUIRE_DAEMON makes that an error.
 * Fast key erasure: keystream is made a batch at a time, the next key is taken from the batch
 * before any byte is handed out, and every byte handed out is wiped from the batch, so once a
 * call returns nothing in this process reveals what it returned.
 * fork() (or a clone() without CLONE_VM): the state lives in memory a child sees as zeros,
 * and records which process seeded it, so a child reseeds on its first call and never shares
 * output with its parent, even where the kernel ignores the advice that wipes it (qemu-user).
 * Threads: a randd_rng is not thread-safe; use one per thread, or randd_random(), which keeps
 * one per thread for you.
 * Approved mode: this generator is not an SP 800-90A DRBG, and is outside a daemon's
 * mode = approved whatever the daemon runs; for approved output call randd_bytes() or
 * randd_bytes_mode() (docs/approved-mode.md). */
typedef struct randd_rng randd_rng;

enum randd_rng_flags {
    RANDD_RNG_REQUIRE_DAEMON = 1u << 0,   /* no getrandom() fallback: fail instead */
};

enum randd_rng_seed_source {
    RANDD_RNG_UNSEEDED = 0,
    RANDD_RNG_FROM_DAEMON = 1,
    RANDD_RNG_FROM_GETRANDOM = 2,         /* the daemon was not there (or not ready) */
};

struct randd_rng_options {
    const char *socket;        /* NULL: as randd_open */
    uint64_t reseed_bytes;     /* 0: 16 MiB */
    unsigned reseed_seconds;   /* 0: 60 */
    unsigned flags;            /* enum randd_rng_flags */
};

/* options NULL: the defaults. Seeds at once. Returns 0, -ENOMEM, -EINVAL (RANDD_RNG_CIPHER
 * names no cipher), -ENOTSUP (it asks for aes256ctr on a CPU without hardware AES), or (with
 * RANDD_RNG_REQUIRE_DAEMON) the error that kept the daemon from seeding it. */
int randd_rng_new(randd_rng **rng, const struct randd_rng_options *options);
/* n random bytes, any n. Returns 0 or a negative error (reseeding failed; buf is zeroed). */
int randd_rng_bytes(randd_rng *rng, void *buf, size_t n);
/* Reseeds now. Returns 0 or a negative error. */
int randd_rng_reseed(randd_rng *rng);
/* Where the last seed came from: enum randd_rng_seed_source. */
int randd_rng_seed_source(const randd_rng *rng);
/* The keystream it runs: "chacha20" or "aes256ctr". */
const char *randd_rng_cipher(const randd_rng *rng);
void randd_rng_free(randd_rng *rng);

/* n random bytes from this thread's own generator, created with the default options on the
 * thread's first call and freed when the thread exits. Returns 0 or a negative error. */
int randd_random(void *buf, size_t n);

const char *randd_strerror(int err);
/* The daemon's message with its last error reply (1023 bytes at most: a longer one ends in
 * "…" where it was cut), or librandd's own for a daemon refused or
 * a connect that timed out ("" if none); after a successful call that would have read ahead,
 * why the handle does not use SOCKET.generation (librandd(3)). h NULL: why this thread's
 * last randd_open() failed ("" if it did not, or the error says it all). */
const char *randd_message(const randd_handle *h);

#ifdef __cplusplus
}
#endif

#endif
