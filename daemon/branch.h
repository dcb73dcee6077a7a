/* A serving loop's generator. With one loop it is the pool itself, as it always was. With
 * several (workers > 1), each loop has a generator of its own seeded from the pool, as the
 * kernel keeps one per CPU, so serving takes no lock. Owns that generator and when it
 * reseeds; the pool keeps the sources, the conditioning and the reseed policy. */
#ifndef RANDD_BRANCH_H
#define RANDD_BRANCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

struct branch_secrets;

struct branch {
    struct pool *pool;
    pthread_mutex_t *pool_lock;        /* the pool's owner's; NULL: one loop, the pool's own */
    struct branch_secrets *secret;     /* the generator, in locked memory */
    uint64_t epoch;                    /* the pool's epoch at the last seeding */
    bool seeded;                       /* from a ready pool at that epoch */
    uint64_t reseed_bytes;             /* the pool's, as of the last seeding */
    uint64_t bytes_since_seed;
    int64_t boot_offset_ns;            /* CLOCK_BOOTTIME - CLOCK_MONOTONIC at the last check */
    struct randd_crypto *pr_crypto;    /* the loop's prediction-resistant replies' contexts,
                                        * made at the first one; NULL: none yet */
};

/* Serves from pool itself (pool_lock NULL), or from a generator of its own seeded from pool,
 * which is only ever touched under pool_lock. Returns 0 or a negative errno. */
int branch_init(struct branch *b, struct pool *pool, pthread_mutex_t *pool_lock);
/* Wipes the generator; safe on a zeroed branch. */
void branch_fini(struct branch *b);

/* Whether output may be given now. With a generator of its own: seeds it first when the
 * pool's epoch moved (a reseed, a VM clone, a clock jump, readiness lost or regained). */
bool branch_ready(struct branch *b);
/* Why not ready, for NOT_READY replies. */
const char *branch_not_ready_reason(struct branch *b);

/* n bytes, or -EAGAIN when not ready (pool_generate's contract, per loop). */
int branch_generate(struct branch *b, void *out, size_t n, uint64_t now_ns);

/* A Cymric generator for one reply (the prediction-resistant mode), running the keystream
 * the pool's config chose. Needs no lock: the choice is fixed at start. Every such generator
 * of this loop shares the loop's OpenSSL contexts, made once (they keep no key between
 * calls): a request sets none up. The loop's thread only; branch_fini after the last. */
int branch_cymric_init(struct branch *b, struct randd_cymric *g);

/* pool_continuity, taken under the pool's lock, after this loop's own clock check. */
uint64_t branch_continuity(struct branch *b);

/* A byte source over the generator for a reply already cleared by branch_generate or
 * branch_ready (pool_fill's contract). */
int branch_fill(void *branch, void *buf, size_t n);

/* With a DRBG engine and a generator of its own: its personalisation string ("randd loop 2");
 * else NULL. */
const char *branch_drbg_personalisation(const struct branch *b);

/* ADD_ENTROPY: into the pool, under its lock. */
int branch_add_entropy(struct branch *b, const void *data, size_t len, unsigned bits,
                       uint64_t now_ns);

/* The pool for a moment (its noise reservoir): locked when the loop is not the pool's own.
 * Every branch_lock_pool is followed by branch_unlock_pool on the same thread. */
struct pool *branch_lock_pool(struct branch *b);
void branch_unlock_pool(struct branch *b);

#endif
