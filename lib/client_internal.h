/* Not part of the public API: lets the fuzzers and tests drive librandd's reply decoding
 * over a socket they made themselves, and gives randd's OpenSSL provider its SEED op. */
#ifndef RANDD_CLIENT_INTERNAL_H
#define RANDD_CLIENT_INTERNAL_H

#include "randd.h"

/* A handle over an already-connected fd (taken over: randd_close closes it). Calls made
 * on it never reconnect. Returns 0 or -ENOMEM. */
int randd_handle_from_fd(randd_handle **handle, int fd);

/* n bytes as randd_bytes gives them, asked for with SEED so that the daemon counts them as
 * seeding (provider/randd_provider.c). Returns 0 or a negative error. */
int randd_seed(randd_handle *h, void *buf, size_t n);

#endif
