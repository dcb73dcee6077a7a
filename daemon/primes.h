/* PRIME requests off the event loops: one worker thread finds primes while the loops go on
 * serving; results come back to the loop that asked through its port, an eventfd in that
 * loop. Owns the worker, its one queue for every loop (a share per peer uid, served in turn)
 * and its own generator; the search itself is internal/prime.c, the reply the server's. */
#ifndef RANDD_PRIMES_H
#define RANDD_PRIMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "crypto.h"                 /* enum randd_stream_cipher */
#include "loop.h"
#include "protocol.h"                 /* enum randd_engine */

#define PRIMES_SEED_BYTES 64
#define PRIMES_MAX_QUEUED 64           /* queued or running, every uid: memory, not fairness */

struct primes;
struct primes_port;
struct prime_job;

/* Called on the port's loop thread with a finished search: rc 0 and the prime (len bytes,
 * big-endian), or a negative errno. The prime is wiped after the call returns. */
typedef void primes_done_fn(void *cookie, int rc, const uint8_t *prime, size_t len);

/* Starts the worker, its candidates drawn from a Cymric generator running cipher (the
 * config's, as every Cymric in the daemon), or with a DRBG engine from a DRBG of its
 * mechanism. Returns NULL (errno set) when a thread or the generator cannot be had. */
struct primes *primes_new(enum randd_stream_cipher cipher, enum randd_engine engine);

/* Where a loop's searches come back, to done on that loop. Returns NULL (errno set) when an
 * eventfd cannot be had. */
struct primes_port *primes_port_new(struct primes *p, struct loop *loop, primes_done_fn *done);
/* After every search submitted through it was cancelled or delivered. NULL is fine. */
void primes_port_free(struct primes_port *port);

/* Queues a search for a prime of bits bits for a peer with uid; *job is its handle for
 * primes_cancel. The worker's generator is reseeded with seed (pool output; the caller wipes
 * its copy). Returns 0, -EBUSY when uid has RANDD_PRIME_PER_UID searches queued or running,
 * -EAGAIN when every uid together has PRIMES_MAX_QUEUED, or -ENOMEM. */
int primes_submit(struct primes_port *port, unsigned bits,
                  const uint8_t seed[PRIMES_SEED_BYTES], uid_t uid, void *cookie,
                  struct prime_job **job);

/* The cookie is going away: a queued search is dropped (its uid's place freed at once), a
 * running one stops at its next draw, and done is not called. */
void primes_cancel(struct primes_port *port, struct prime_job *job);

/* Stops the worker (abandoning any search) and frees everything, after every port. */
void primes_free(struct primes *p);

#endif
