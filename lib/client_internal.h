/* Not part of the public API: lets the fuzzers and tests drive librandd's reply decoding
 * over a socket they made themselves, and gives randd's OpenSSL provider its SEED op. */
#ifndef RANDD_CLIENT_INTERNAL_H
#define RANDD_CLIENT_INTERNAL_H

#include "randd.h"

/* A handle over an already-connected fd (taken over: randd_close closes it). Calls made
 * on it never reconnect. Returns 0 or -ENOMEM. */
int randd_handle_from_fd(randd_handle **handle, int fd);

/* n bytes as randd_bytes_mode gives them in mode, asked for with SEED so that the daemon
 * counts them as seeding, apart for each mode (provider/randd_provider.c). Returns 0 or a
 * negative error (-EINVAL for a mode not in enum randd_mode). */
int randd_seed(randd_handle *h, void *buf, size_t n, enum randd_mode mode);

/* Root's SELFTEST (op RANDD_OP_SELFTEST) or INJECT_FAILURE of test (enum randd_health_test)
 * on source, for randctl: the daemon's reply text in *text (malloc'd). Returns >= 0, or a
 * negative error (RANDD_ERR(RANDD_NOT_PERMITTED) for anyone but root; randd_message says
 * why). */
int randd_admin(randd_handle *h, int op, int test, const char *source, char **text);

#endif
