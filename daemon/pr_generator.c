/* A prediction-resistant reply's generator (pr_generator.h).
 *
 * Cymric: 64 bytes of key material, the first 32 from the loop's generator, the last 32 the
 * noise block, so the reply's keystream depends on fresh noise even were the loop's state
 * known.
 *
 * DRBG: instantiated (90A 9.1) with 64 bytes of the loop's DRBG output, split as every
 * randd DRBG's seed is (drbg_engine.c: entropy input 48, nonce 16), under the
 * personalisation string "randd prediction resistance"; then reseeded (9.2) with the block as
 * entropy input: 256 bits of full entropy, the mechanism's whole security strength, from the
 * noise reservoir's SHA-256 conditioning (vetted, 90B 3.1.5.1.1). Every byte of the reply
 * comes after that reseed, from a state the loop's output alone does not determine. A DRBG
 * seeded from a DRBG of the same strength, and reseeded from the entropy source on request,
 * is 90C's RBG2(P) with prediction resistance. */
#include "pr_generator.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cymric.h"
#include "drbg_engine.h"
#include "loop.h"
#include "secmem.h"

struct pr_generator {
    bool is_drbg;
    struct randd_cymric cymric;
    struct drbg_engine drbg;
};

static int seed_cymric(struct branch *b, struct pr_generator *g,
                       const uint8_t block[NOISE_BLOCK_BYTES])
{
    uint8_t material[2 * NOISE_BLOCK_BYTES];
    int rc;

    if ((rc = branch_cymric_init(b, &g->cymric)) < 0)
        return rc;
    rc = branch_generate(b, material, NOISE_BLOCK_BYTES, loop_now_ns());
    memcpy(material + NOISE_BLOCK_BYTES, block, NOISE_BLOCK_BYTES);
    if (rc == 0)
        rc = randd_cymric_seed(&g->cymric, material, sizeof(material));
    OPENSSL_cleanse(material, sizeof(material));
    return rc;
}

static int seed_drbg(struct branch *b, struct pr_generator *g, enum randd_engine engine,
                     const uint8_t block[NOISE_BLOCK_BYTES])
{
    uint8_t material[DRBG_ENGINE_SEED_BYTES];
    int rc;

    if ((rc = drbg_engine_init(&g->drbg, engine, "prediction resistance")) < 0)
        return rc;
    rc = branch_generate(b, material, sizeof(material), loop_now_ns());
    if (rc == 0)
        rc = drbg_engine_seed(&g->drbg, material, sizeof(material));      /* instantiate */
    OPENSSL_cleanse(material, sizeof(material));
    if (rc == 0)
        rc = drbg_engine_reseed_fresh(&g->drbg, block, NOISE_BLOCK_BYTES);
    return rc;
}

int pr_generator_new(struct branch *b, const uint8_t block[NOISE_BLOCK_BYTES],
                     struct pr_generator **out)
{
    enum randd_engine engine = pool_engine(b->pool);    /* fixed at start: no lock needed */
    struct pr_generator *g;
    int lock_errno, rc;

    *out = NULL;
    if (!(g = randd_secure_alloc(sizeof(*g), &lock_errno)))
        return -ENOMEM;
    g->is_drbg = RANDD_ENGINE_IS_DRBG(engine);
    rc = g->is_drbg ? seed_drbg(b, g, engine, block) : seed_cymric(b, g, block);
    if (rc < 0) {
        pr_generator_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int pr_generator_read(struct pr_generator *g, void *out, size_t n)
{
    return g->is_drbg ? drbg_engine_read(&g->drbg, out, n)
                      : randd_cymric_read(&g->cymric, out, n);
}

const char *pr_generator_mechanism(const struct pr_generator *g)
{
    return g->is_drbg ? drbg_engine_mechanism(&g->drbg) : "Cymric";
}

void pr_generator_free(struct pr_generator *g)
{
    if (!g)
        return;
    if (g->is_drbg)
        drbg_engine_fini(&g->drbg);
    else
        randd_cymric_fini(&g->cymric);
    randd_secure_free(g, sizeof(*g));
}
