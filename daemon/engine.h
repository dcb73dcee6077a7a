/* A generator engine: the pool's, and each serving loop's with workers > 1 (branch.c). Owns
 * which of Cymric (BLAKE2b + a keystream, the default), Randen or an SP 800-90A DRBG
 * (drbg_engine.h) runs, behind one seed, read and wipe, so that engine = and cipher = hold
 * alike for every generator. When to seed, and from what, is the caller's. The struct holds
 * generator state: callers keep it in locked memory (secmem.h). */
#ifndef RANDD_ENGINE_H
#define RANDD_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"                 /* enum randd_stream_cipher */
#include "cymric.h"
#include "drbg_engine.h"
#include "protocol.h"               /* enum randd_engine */
#include "randen.h"

struct engine {
    enum randd_engine which;
    struct randd_cymric cymric;     /* which = cymric; made always: its keystream is the
                                     * config's even when another engine serves */
    struct randd_randen randen;     /* which = randen */
    struct drbg_engine drbg;        /* which = ctr_drbg or hash_drbg */
    bool seeded;                    /* since the last engine_seed, no forget or choice: every
                                     * engine's unseeded state is public (Randen's too) */
};

/* Cymric with ChaCha20, not yet seeded. Returns 0 or -ENOMEM; engine_fini either way. */
int engine_init(struct engine *e);
/* Chooses the engine before the first seed; who goes into a DRBG's personalisation string
 * ("pool", "loop 2"). Returns 0, or Randen's or the DRBG's error (-ENOTSUP: no AES round;
 * -EIO, -ENOMEM: OpenSSL) with the choice unchanged. */
int engine_choose(struct engine *e, enum randd_engine which, const char *who);
/* Cymric's keystream, before the first seed. Returns 0, -ENOTSUP (AES-256-CTR on a CPU
 * without hardware AES) or -EIO, the keystream unchanged. */
int engine_use_cipher(struct engine *e, enum randd_stream_cipher which);
enum randd_stream_cipher engine_cipher(const struct engine *e);

/* Seeds from material (a DRBG takes DRBG_ENGINE_SEED_BYTES). Returns 0 or a negative errno. */
int engine_seed(struct engine *e, const uint8_t *material, size_t len);
/* n bytes. -EAGAIN: not seeded (never, or forgotten since); -ESTALE from a DRBG: the read
 * would pass its reseed interval, and was refused whole (reseed and ask again); another
 * negative errno: the engine failed. */
int engine_read(struct engine *e, void *out, size_t n);
/* A DRBG that is not instantiated now: its next engine_seed instantiates it (SP 800-90A 9.1)
 * rather than reseeding it (9.2). False for the other engines. */
bool engine_instantiates_next(const struct engine *e);
/* A DRBG has used half its reseed interval: reseed long before a read is refused. */
bool engine_reseed_due(const struct engine *e);

/* Wipes the state: nothing is served until the next engine_seed. */
void engine_forget(struct engine *e);
/* Wipes the state and frees the engine; safe on a zeroed one and after engine_init failed. */
void engine_fini(struct engine *e);

/* With a DRBG: its mechanism ("CTR_DRBG AES-256 (df)"), its generates since it was last
 * seeded and its personalisation string; NULL, 0 and NULL with another engine. */
const char *engine_drbg_mechanism(const struct engine *e);
uint64_t engine_drbg_requests(const struct engine *e);
const char *engine_drbg_personalisation(const struct engine *e);
/* For tests: the DRBG's reseed interval, lowered; -EINVAL with another engine. */
int engine_drbg_set_reseed_interval(struct engine *e, uint64_t interval);

#endif
