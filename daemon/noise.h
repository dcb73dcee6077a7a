/* The noise reservoir: entropy from noise sources (the CPU source, hwrng, jitter; never getrandom,
 * never ADD_ENTROPY) kept apart from the generator's for the prediction-resistant and
 * full-entropy modes (lib/PROTOCOL.md, docs/full-entropy.md), and
 * the queue of requests that wait for it, fair between uids. Owns the conditioned blocks and
 * who gets them; which raw bytes come here is the pool's call, the replies the server's. */
#ifndef RANDD_NOISE_H
#define RANDD_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"               /* RANDD_MAX_FULL_ENTROPY */

/* One block: SHA-256 (a vetted conditioning function, SP 800-90B 3.1.5.1.1) over raw noise
 * credited with at least n_out + 64 bits, which SP 800-90C (its full-entropy condition; 90B
 * 3.1.5.1.2 for the output-entropy bound) takes as full entropy. Each block is handed out
 * once and wiped. */
#define NOISE_BLOCK_BYTES   32
#define NOISE_BLOCK_BITS    (8 * NOISE_BLOCK_BYTES)
#define NOISE_MARGIN_BITS   64
#define NOISE_BLOCK_CREDIT  (NOISE_BLOCK_BITS + NOISE_MARGIN_BITS)   /* 320 credited bits */
#define NOISE_MAX_BLOCKS    (RANDD_MAX_FULL_ENTROPY / NOISE_BLOCK_BYTES)   /* one request */
#define NOISE_RESERVE       16     /* blocks kept ready once the modes have been asked for */
#define NOISE_PER_UID       4      /* requests waiting per uid; more: BUSY */
#define NOISE_MAX_WAITING   64     /* in all, for a uid's second and later ones */

enum noise_mode {
    NOISE_PREDICTION_RESISTANT,    /* one block reseeds a generator for the request */
    NOISE_FULL_ENTROPY,            /* a block per 32 bytes, XORed into generator output */
};
#define NOISE_MODES 2
_Static_assert(RANDD_MAX_FULL_ENTROPY % NOISE_BLOCK_BYTES == 0,
               "a full-entropy request's largest answer is whole blocks");

/* Blocks a request of mode for bytes of output takes: full entropy a block per 32 bytes,
 * prediction resistance one block to reseed its generator, whatever it asks for. */
static inline unsigned noise_blocks_for(enum noise_mode mode, size_t bytes)
{
    return mode == NOISE_FULL_ENTROPY
               ? (unsigned)((bytes + NOISE_BLOCK_BYTES - 1) / NOISE_BLOCK_BYTES) : 1;
}

struct noise_ticket;
struct noise_secrets;

struct noise_stats {
    uint64_t blocks_made;
    uint64_t consumed_bits[NOISE_MODES];    /* credited bits of the blocks each mode spent */
    uint64_t served_bytes[NOISE_MODES];
    uint64_t requests[NOISE_MODES];         /* answered OK */
    uint64_t reseeds;                       /* prediction-resistant reseeds (one a request) */
    uint64_t not_ready, busy, no_source;    /* requests refused so */
    uint64_t cancelled;                     /* clients gone while waiting */
    uint64_t completed;                     /* requests whose blocks were all granted */
    double wait_ratio_max;          /* the most blocks granted to other uids while a request
                                     * waited as its uid's oldest, per block it needed: the
                                     * fairness measured (at most U - 1; U
                                     * while the reserve takes its turn) */
    uint64_t dropped_bits;                  /* wiped unspent: a noise source quarantined */
};

struct noise {
    struct noise_secrets *secret;   /* the blocks, in locked memory (the SHA-256 state is
                                     * OpenSSL's, reset as each block ends) */
    void *md_ctx;                   /* EVP_MD_CTX over the block being gathered */
    void *md;                       /* EVP_MD: SHA-256 */
    double partial_credit;          /* credited bits in the block being gathered */
    bool partial_started;
    unsigned free_blocks;           /* made, not granted */
    bool asked;                     /* a mode was asked for: keep NOISE_RESERVE ready */
    bool reserve_owed;              /* a NONBLOCK request of a uid with nothing waiting found
                                     * others waiting: from then on the reserve takes its
                                     * turn in line when short (noise.c: the reserve's share) */
    uint64_t reserve_turn;          /* grants so far when the reserve last took its turn */
    struct noise_ticket *waiting;   /* in arrival order */
    unsigned nwaiting;
    uint64_t turn;                  /* grants so far: each uid's last is its place in line */
    uint64_t seq;
    struct noise_stats stats;
};

int noise_init(struct noise *n);
void noise_fini(struct noise *n);

/* Blocks still to make for the requests waiting and the reserve: > 0 while noise sources'
 * bytes should come here rather than to the generator's accumulator. */
unsigned noise_wanted_blocks(const struct noise *n);

/* Absorbs raw bytes credited at bits_per_byte until the blocks wanted are made; returns how
 * many of len it took (the caller credits the rest elsewhere: no byte counts twice). */
size_t noise_absorb(struct noise *n, const uint8_t *raw, size_t len, double bits_per_byte);

/* A noise source failed a health test, a VM was cloned or output halted: every block not
 * yet handed out, and the one being gathered, is wiped; waiting requests start over. */
void noise_drop(struct noise *n);

/* Credited bits ready: blocks not yet granted, at NOISE_BLOCK_CREDIT each, and the partial. */
double noise_available_bits(const struct noise *n);

/* Whether blocks blocks are ready to be granted at once to uid (for a NONBLOCK request, asked
 * before it is queued, so the bits ready are counted before any are granted to it): never
 * while uid has a request waiting, whose blocks come in line. Marks the modes as asked for:
 * the reserve fills from then on; and if others wait while uid does not, the reserve takes
 * its turn in line from then on, for uid's next NONBLOCK request and every other uid's. */
bool noise_ready_now(struct noise *n, uid_t uid, unsigned blocks);

/* A request for blocks blocks (1..NOISE_MAX_BLOCKS) from uid. Returns 0 with *ticket (check
 * noise_ticket_ready), -EBUSY (uid has NOISE_PER_UID waiting), -EAGAIN (NOISE_MAX_WAITING in
 * all and uid has one waiting: a uid's first is always queued) or -ENOMEM. Blocks already
 * made are granted at once to a uid with nothing waiting, as far as they go; once the
 * reserve is owed (noise_ready_now), only to a nonblock one (noise_ready_now said yes): a
 * request that may wait waits its turn in line, and the reserve is kept for those that
 * cannot. */
int noise_submit(struct noise *n, uid_t uid, enum noise_mode mode, unsigned blocks,
                 bool nonblock, struct noise_ticket **ticket);
bool noise_ticket_ready(const struct noise_ticket *t);
unsigned noise_ticket_granted(const struct noise_ticket *t);
/* Hands out the blocks made, round-robin between the uids waiting, a block at a time (none
 * of the reserve's while it is owed). Returns how many requests became complete. */
unsigned noise_grant(struct noise *n);
/* A complete ticket's blocks into out (blocks * NOISE_BLOCK_BYTES), counted as spent by its
 * mode with served bytes; the ticket is freed and its copy wiped. */
void noise_take(struct noise *n, struct noise_ticket *t, uint8_t *out, uint64_t served);
/* As noise_take, but the blocks are XORed into out's len bytes (len served), straight from
 * the ticket's locked memory: no copy is made that would need wiping (SP 800-90C RBG3(XOR),
 * pool_full_entropy_xor). More bytes than the ticket's blocks cover: -EINVAL, nothing taken
 * (bytes past them would be the generator's alone, served as full entropy). */
int noise_take_xor(struct noise *n, struct noise_ticket *t, uint8_t *out, size_t len);
/* A request refused before it was queued, or given up: counted by its status (NOT_READY,
 * BUSY, NO_NOISE_SOURCE). */
void noise_note_refusal(struct noise *n, int status);
/* The client went away (or was answered otherwise): its granted blocks (never handed to
 * anyone, so never spent) go to the requests waiting, in turn, then to the reserve; the
 * rest is wiped. The ticket is freed. Counts nothing: pool_noise_cancel counts a client
 * gone, pool_noise_refuse a refusal. */
void noise_cancel(struct noise *n, struct noise_ticket *t);

#endif
