/* Graceful close for connections the daemon ends itself (a framing error, an unknown EGD
 * command), shared by the client and EGD listeners: the peer reads everything it was sent,
 * then end-of-file, never a reset. Owns the descriptors handed to it, nothing else. */
#ifndef RANDD_DRAIN_H
#define RANDD_DRAIN_H

#include "loop.h"

/* Read and dropped from a peer after our side is shut, at most: then it is closed anyway. */
#define DRAIN_MAX_BYTES (64u << 10)
#define DRAIN_MAX_NS    1000000000ull
/* Connections draining at once, at most; more are closed at once (maybe with a reset). */
#define DRAIN_MAX_CONNS 64

struct drain;

struct drain *drain_new(struct loop *loop);

/* Takes fd, already out of the loop, its reply fully written: shuts down sending (the peer
 * reads end-of-file), then reads and drops what the peer still sends, until it closes, or
 * DRAIN_MAX_BYTES or DRAIN_MAX_NS pass; then closes fd. Never blocks. */
void drain_close(struct drain *d, int fd);

/* Closes every connection still draining. */
void drain_free(struct drain *d);

#endif
