/* Not part of the public API: lets the fuzzers and tests drive librandd's reply decoding
 * over a socket they made themselves. */
#ifndef RANDD_CLIENT_INTERNAL_H
#define RANDD_CLIENT_INTERNAL_H

#include "randd.h"

/* A handle over an already-connected fd (taken over: randd_close closes it). Calls made
 * on it never reconnect. Returns 0 or -ENOMEM. */
int randd_handle_from_fd(randd_handle **handle, int fd);

#endif
