/* librandd: the client side of randd's protocol v1 (lib/PROTOCOL.md).
 *
 * Every function returns 0 (or a count) on success and a negative error code on failure:
 * -errno for system errors (-ENOENT, -ECONNREFUSED: daemon not running; -EACCES;
 * -ETIMEDOUT), or -(RANDD_ERR_STATUS + status) when the daemon answered with an error
 * status. randd_strerror() turns either into text; randd_message() gives the daemon's own
 * words for the last error reply.
 *
 * Thread safety: a handle is not thread-safe. Use one handle per thread, or hold a lock
 * around each call. Handles survive fork(): a child's first call opens its own connection
 * instead of sharing the parent's. */
#ifndef RANDD_H
#define RANDD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RANDD_DEFAULT_SOCKET "/run/randd/randd.sock"
#define RANDD_ERR_STATUS     1000      /* -(RANDD_ERR_STATUS + status) for daemon errors */

typedef struct randd_handle randd_handle;

/* path NULL: $RANDD_SOCKET, else RANDD_DEFAULT_SOCKET. Connects at once. */
int randd_open(randd_handle **handle, const char *path);
void randd_close(randd_handle *h);

/* A deadline for each call in milliseconds (0, the default: wait as long as it takes). A
 * call that times out returns -ETIMEDOUT and drops the connection; the next reconnects. */
void randd_set_timeout(randd_handle *h, int milliseconds);
/* Nonzero: requests carry NONBLOCK, so a daemon that is not ready answers NOT_READY
 * (-(RANDD_ERR_STATUS + 7)) instead of making the request wait. */
void randd_set_nonblock(randd_handle *h, int nonblock);

/* n random bytes, any n: split into requests of at most 16 MiB, pipelined. */
int randd_bytes(randd_handle *h, void *buf, size_t n);

/* count values uniform in [0, r), r big-endian in len bytes (1..1024), written to out as
 * count * len bytes, each big-endian. Any count: split into requests as needed. */
int randd_range(randd_handle *h, const uint8_t *r, size_t len, uint8_t *out, size_t count);

/* The daemon's STATUS JSON, NUL-terminated, in *json (free() it). Returns its length. */
int randd_status(randd_handle *h, char **json);

/* Mixes data into the daemon's pool, crediting bits (<= 8 per byte). Needs uid 0 or the
 * daemon's trusted_group, else -(RANDD_ERR_STATUS + 6). */
int randd_add_entropy(randd_handle *h, const void *data, size_t len, unsigned bits);

const char *randd_strerror(int err);
/* The daemon's message with its last error reply ("" if none). */
const char *randd_message(const randd_handle *h);

#ifdef __cplusplus
}
#endif

#endif
