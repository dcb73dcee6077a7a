/* An SP 800-90A DRBG as the daemon's generator engine (engine = ctr_drbg | hash_drbg): the
 * pool's, and each serving loop's with workers > 1. Owns how 64 bytes of seed material
 * become entropy input and nonce, the personalisation string, reads longer than max_request
 * split into several generates, and never passing the DRBG's reseed interval. The mechanism
 * and its self-test are internal/drbg.c's; when to reseed is the pool's (pool.c, branch.c). */
#ifndef RANDD_DRBG_ENGINE_H
#define RANDD_DRBG_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drbg.h"
#include "protocol.h"

/* What one seeding takes: the pool's 512-bit accumulator, or 64 bytes of the pool's output. */
#define DRBG_ENGINE_SEED_BYTES    64
/* Of it, at instantiation: entropy input, then nonce (drbg_engine.c says why these sizes). */
#define DRBG_ENGINE_ENTROPY_BYTES 48
#define DRBG_ENGINE_NONCE_BYTES   16

struct drbg_engine {
    struct randd_drbg *drbg;          /* NULL: not created */
    enum randd_drbg_type type;
    size_t max_request;               /* bytes one generate may give (65536) */
    uint64_t reseed_interval;         /* generates allowed between seedings */
    char pers[32];                    /* personalisation string: "randd pool", "randd loop 2" */
    bool instantiated;                /* by the last drbg_engine_seed */
};

/* The DRBG for engine (a RANDD_ENGINE_IS_DRBG one), not yet instantiated; who goes into the
 * personalisation string ("pool", "loop 2"). Returns 0, -EINVAL or -EIO (OpenSSL refused). */
int drbg_engine_init(struct drbg_engine *e, enum randd_engine engine, const char *who);
/* Uninstantiates (the state is wiped) and frees; safe on a zeroed engine. */
void drbg_engine_fini(struct drbg_engine *e);

/* Uninstantiates: the state is wiped, and nothing is served until the next seeding. */
void drbg_engine_forget(struct drbg_engine *e);

/* DRBG_ENGINE_SEED_BYTES of material. Not yet instantiated (or wiped since): instantiate with
 * entropy input = material[0..48), nonce = material[48..64) and the personalisation string.
 * Instantiated: reseed (SP 800-90A 9.2) with all 64 bytes as entropy input; a refused reseed
 * wipes the DRBG, so the next seed instantiates it. Returns 0, -EINVAL (wrong length), -EIO
 * (the DRBG refused: its self-test failed, or OpenSSL). */
int drbg_engine_seed(struct drbg_engine *e, const uint8_t *material, size_t len);

/* An instantiated DRBG reseeded (SP 800-90A 9.2) with entropy (len within the mechanism's
 * entropy input limits, 32 bytes or more) and no additional input: a prediction-resistant
 * reply's generator takes a noise block so (pr_generator.c). Returns 0, -EINVAL (not
 * instantiated, or a length the mechanism refuses) or -EIO. */
int drbg_engine_reseed_fresh(struct drbg_engine *e, const uint8_t *entropy, size_t len);

/* n bytes (any n), in generates of at most max_request bytes. Refuses, out zeroed, with
 * -ESTALE when the generates it needs would pass the reseed interval (nothing is served past
 * it: the caller reseeds and asks again), -EIO when the DRBG refuses (self-test failed, not
 * instantiated, OpenSSL). */
int drbg_engine_read(struct drbg_engine *e, void *out, size_t n);

/* Half the reseed interval is used: the caller should reseed soon, well before a read
 * would be refused. */
bool drbg_engine_reseed_due(const struct drbg_engine *e);

/* Generates since the last seeding, for STATUS. */
uint64_t drbg_engine_requests(const struct drbg_engine *e);
const char *drbg_engine_mechanism(const struct drbg_engine *e);    /* "CTR_DRBG AES-256 (df)" */

/* For tests: a lower reseed interval (>= 1), so the refusal path runs in a test's time. */
int drbg_engine_set_reseed_interval(struct drbg_engine *e, uint64_t interval);

#endif
