/* PRIME requests off the event loop: one worker thread finds primes while the loop goes on
 * serving; results come back to the loop through an eventfd. Owns the worker, its queue (a
 * share per peer uid, served in turn) and its own generator; the search itself is
 * internal/prime.c, the reply the server's. */
#ifndef RANDD_PRIMES_H
#define RANDD_PRIMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"

#define PRIMES_SEED_BYTES 64
#define PRIMES_MAX_QUEUED 64           /* queued or running, every uid: memory, not fairness */

struct primes;
struct prime_job;

/* Called on the loop thread with a finished search: rc 0 and the prime (len bytes,
 * big-endian), or a negative errno. The prime is wiped after the call returns. */
typedef void primes_done_fn(void *cookie, int rc, const uint8_t *prime, size_t len);

/* Starts the worker. Returns NULL (errno set) when a thread or eventfd cannot be had. */
struct primes *primes_new(struct loop *loop, primes_done_fn *done);

/* Queues a search for a prime of bits bits for a peer with uid; *job is its handle for
 * primes_cancel. The worker's generator is reseeded with seed (pool output; the caller wipes
 * its copy). Returns 0, -EBUSY when uid has RANDD_PRIME_PER_UID searches queued or running,
 * -EAGAIN when every uid together has PRIMES_MAX_QUEUED, or -ENOMEM. */
int primes_submit(struct primes *p, unsigned bits, const uint8_t seed[PRIMES_SEED_BYTES],
                  uid_t uid, void *cookie, struct prime_job **job);

/* The cookie is going away: a queued search is dropped (its uid's place freed at once), a
 * running one stops at its next draw, and done is not called. */
void primes_cancel(struct primes *p, struct prime_job *job);

/* Stops the worker (abandoning any search) and frees everything. */
void primes_free(struct primes *p);

#endif
