/* The in-process generator's layout (lib/rng.c), shared with its unit tests only: the tests
 * look into the secret page to prove that bytes handed out are gone from it. */
#ifndef RANDD_RNG_INTERNAL_H
#define RANDD_RNG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "randd.h"

/* Keystream per refill: the next key, then output. As large as the secret page allows (the
 * struct below fits one 4 KiB page, which mmap gives whole anyway), in 64-byte blocks: a
 * refill's two cipher inits cost as much as 1.7 KiB of AES-CTR, so a 1 KiB batch spent
 * two thirds of a 32-byte call's instructions on refills (callgrind), a 4 KiB one a third. */
#define RNG_BATCH      4032
#define RNG_DIRECT_MIN 4096   /* larger requests go straight into the caller's buffer */
#define RNG_SEED_BYTES 64     /* drawn from the daemon (or getrandom) at each reseed */
#define RNG_KERNEL_BYTES 32   /* getrandom() mixed in beside the seed at each reseed */

/* Everything secret, in one locked page that a forked child sees as zeros (MADV_WIPEONFORK):
 * a child therefore starts unseeded and never repeats its parent's output. */
struct rng_secret {
    union {
        uint8_t step[RNG_BATCH];       /* a refill's keystream, made in one run: */
        struct {
            uint8_t key[RANDD_STREAM_KEY];
            /* batch[sizeof(batch) - left ..] is unread, the rest zero */
            uint8_t batch[RNG_BATCH - RANDD_STREAM_KEY];
        };
    };
    size_t left;
    uint64_t since_reseed;             /* bytes handed out since the last reseed */
    uint64_t reseeded_at_ms;           /* CLOCK_MONOTONIC */
    uint64_t process;                  /* randd_process_token() of the seeding process */
    int seed_source;                   /* enum randd_rng_seed_source; 0: unseeded */
    uint64_t vm_generation;            /* the daemon's VM generation word when last seeded */
};
_Static_assert(sizeof(struct rng_secret) <= 4096, "the generator's secrets fit one page");
_Static_assert(RNG_BATCH % 64 == 0, "a refill is whole keystream blocks");

struct randd_rng {
    struct rng_secret *secret;
    size_t secret_len;
    struct randd_crypto *crypto;
    char *socket;                      /* NULL: randd_open's default */
    const uint64_t *vm_word;           /* randd's VM generation word (generation.h); NULL:
                                        * none mapped yet, tried again at each reseed */
    uint64_t reseed_bytes;
    unsigned reseed_seconds;
    unsigned flags;
};

#endif
