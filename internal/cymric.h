/* The Cymric generator: a 64-byte state conditioned with BLAKE2b and expanded with ChaCha20
 * (or AES-256-CTR, where the owner binds it), rekeyed after every output so a captured state
 * never reveals earlier output (fast key erasure). Owns the state and its wiping; seeding
 * policy and the choice of keystream belong to the caller.
 * Not thread-safe: one generator per thread, or the caller's lock around each call. */
#ifndef RANDD_CYMRIC_H
#define RANDD_CYMRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"

#define RANDD_CYMRIC_STATE 64
#define RANDD_CYMRIC_BATCH 2048   /* keystream produced at once for small reads */

enum randd_cymric_flags {
    /* Rekey with BLAKE2b(state || caller input) only, without the counter and timestamp:
     * the reference construction, for known-answer tests. */
    RANDD_CYMRIC_DETERMINISTIC = 1u << 0,
};

/* The fields are visible so the owner can place the whole generator in locked memory
 * (randd_secure_alloc); they are private to cymric.c all the same. */
struct randd_cymric {
    uint8_t state[RANDD_CYMRIC_STATE];      /* [0..31] key, [32..39] nonce, [40..63] hidden */
    uint8_t batch[RANDD_CYMRIC_BATCH];      /* unread keystream for randd_cymric_read */
    size_t batch_left;                      /* unread bytes at the end of batch */
    uint64_t counter;                       /* generate calls, mixed into each rekey */
    unsigned flags;
    bool seeded;
    bool crypto_borrowed;                   /* crypto is the caller's: fini leaves it */
    struct randd_crypto *crypto;
};

/* Create: an all-zero, unseeded state and its OpenSSL contexts, expanding with ChaCha20.
 * Returns 0 or -ENOMEM. */
int randd_cymric_init(struct randd_cymric *g, unsigned flags);

/* The same, on contexts the caller owns and keeps (bound to the keystream it wants), shared
 * by as many generators as it likes on one thread: they hold no key between calls
 * (crypto.h), so a generator per request costs no OpenSSL set-up. randd_cymric_fini leaves
 * crypto to its owner, who frees it after every generator on it. Returns 0. */
int randd_cymric_init_shared(struct randd_cymric *g, unsigned flags, struct randd_crypto *crypto);

/* Binds the keystream every later generate runs (before seeding, or between outputs): the
 * key is state[0..31] either way; ChaCha20 takes state[32..39] as its 64-bit nonce with the
 * 64-bit block counter from 0, AES-256-CTR takes them as the top half of its 128-bit counter
 * block, the low half counting from 0. The binding outlives wipes. Returns 0, -ENOTSUP
 * (AES-256-CTR where the CPU does not do AES in hardware: never table AES) or -EIO. */
int randd_cymric_use_stream(struct randd_cymric *g, enum randd_stream_cipher which);
enum randd_stream_cipher randd_cymric_stream(const struct randd_cymric *g);

/* state = BLAKE2b-512 keyed with the current 64 state bytes, over material (len >= 1).
 * Unread batch keystream is discarded, so all later output depends on the new material. */
int randd_cymric_seed(struct randd_cymric *g, const void *material, size_t len);

/* out = n bytes of the bound keystream keyed by the state, then the state is rekeyed with
 * BLAKE2b-512(state || counter || timestamp || input). Returns 0, -EAGAIN if never seeded,
 * or -EIO if OpenSSL failed (then out and the state are wiped and the generator unseeded). */
int randd_cymric_generate(struct randd_cymric *g, void *out, size_t n,
                          const void *input, size_t input_len);

/* The same stream cut into any sizes: small reads come from a batch whose bytes are wiped as
 * they are handed out (OpenBSD arc4random style), so they cost a memcpy, not a rekey.
 * Returns 0 or generate's error; on an error all n bytes of out are zeros. */
int randd_cymric_read(struct randd_cymric *g, void *out, size_t n);

/* Back to the unseeded all-zero state; the contexts stay for reuse. */
void randd_cymric_wipe(struct randd_cymric *g);

/* Wipe and release the contexts. */
void randd_cymric_fini(struct randd_cymric *g);

#endif
