/* The DRBG engine (drbg_engine.h).
 *
 * Seed material to DRBG inputs. The material is 64 bytes: the pool's 512-bit accumulator
 * (BLAKE2b-512, or SHA-512 when the pool conditions with a vetted function) once
 * POOL_SEED_BITS (256) are credited to it, or, for a serving loop's DRBG, 64 bytes of the
 * pool's own DRBG output. At instantiation the first 48 bytes are the entropy input and the
 * last 16 the nonce:
 * - entropy input, 48 bytes, with either function: the pool promises 256 credited bits, and
 *   the 256-bit security strength SP 800-90A 8.6.3 wants must survive the cut to n_out bits.
 *   BLAKE2b is not a vetted conditioner, so SP 800-90B 3.1.5.2 credits n_out bits of its
 *   output with at most min(h_in, 0.999 n_out, h' n_out), h' = POOL_CONDITIONING_H_PRIME
 *   (0.931): 32 bytes would carry at most 0.931 * 256 = 238 bits; 48 carry up to
 *   min(256, 357) = 256. SHA-512 is vetted, so n_out bits carry Output_Entropy(n_in, n_out,
 *   512, h_in) (3.1.5.1.2), no cap: from h_in = 256, 32 bytes would carry 255 bits (their
 *   likeliest value: 2^-256 from the width plus 2^-256 from the input's likeliest), and 256
 *   only from h_in = 320 (SP 800-90C's full-entropy condition, n_out + 64); 48 bytes carry
 *   256. So 48 either way: the whole credit the pool gathered.
 * - nonce, 16 bytes (SP 800-90A 8.6.7, security_strength / 2 = 128 bits): the rest of the
 *   conditioned output. It is claimed as 8.6.7 (b), a value expected to repeat no more often
 *   than a 128-bit random string, not as entropy beyond the entropy input's (the 64 bytes
 *   together hold what was credited, 256 bits, not 256 + 128).
 * - personalisation string: "randd pool" or "randd loop N" (8.7.1), which sets the pool's
 *   DRBG and every loop's apart even were their material ever the same.
 * At a reseed (SP 800-90A 9.2) all 64 bytes are the entropy input: there is no nonce.
 * Every copy of the material is the caller's, which wipes it; internal/drbg.c's seed source
 * wipes its own. */
#include "drbg_engine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "log.h"

_Static_assert(DRBG_ENGINE_ENTROPY_BYTES + DRBG_ENGINE_NONCE_BYTES == DRBG_ENGINE_SEED_BYTES,
               "the seed material is split into entropy input and nonce, nothing left over");

static enum randd_drbg_type mechanism_of(enum randd_engine engine)
{
    return engine == RANDD_ENGINE_CTR_DRBG ? RANDD_DRBG_CTR_AES256 : RANDD_DRBG_HASH_SHA512;
}

int drbg_engine_init(struct drbg_engine *e, enum randd_engine engine, const char *who)
{
    struct randd_drbg_limits limits;
    int rc;

    memset(e, 0, sizeof(*e));
    if (!RANDD_ENGINE_IS_DRBG(engine))
        return -EINVAL;
    e->type = mechanism_of(engine);
    snprintf(e->pers, sizeof(e->pers), "randd %s", who);
    if ((rc = randd_drbg_new(mechanism_of(engine), &e->drbg)) != RANDD_DRBG_OK) {
        log_err("%s: %s", randd_drbg_name(mechanism_of(engine)), randd_drbg_strerror(rc));
        e->drbg = NULL;
        return rc == RANDD_DRBG_E_NO_MEMORY ? -ENOMEM : -EIO;
    }
    randd_drbg_limits(e->drbg, &limits);
    e->max_request = limits.max_request;
    e->reseed_interval = limits.reseed_interval;
    return 0;
}

void drbg_engine_fini(struct drbg_engine *e)
{
    randd_drbg_free(e->drbg);
    OPENSSL_cleanse(e, sizeof(*e));
}

void drbg_engine_forget(struct drbg_engine *e)
{
    if (e->drbg)
        (void)randd_drbg_uninstantiate(e->drbg);
    e->instantiated = false;
}

static int instantiate(struct drbg_engine *e, const uint8_t *material)
{
    int rc;

    (void)randd_drbg_uninstantiate(e->drbg);       /* a failed one's state goes first */
    rc = randd_drbg_instantiate(e->drbg, material, DRBG_ENGINE_ENTROPY_BYTES,
                                material + DRBG_ENGINE_ENTROPY_BYTES, DRBG_ENGINE_NONCE_BYTES,
                                e->pers, strlen(e->pers));
    e->instantiated = rc == RANDD_DRBG_OK;
    return rc;
}

int drbg_engine_seed(struct drbg_engine *e, const uint8_t *material, size_t len)
{
    int rc;

    if (!e->drbg || len != DRBG_ENGINE_SEED_BYTES)
        return -EINVAL;
    if (e->instantiated) {
        rc = randd_drbg_reseed(e->drbg, material, len, NULL, 0);
        /* A DRBG OpenSSL left in its error state takes no reseed. It is wiped, and the
         * caller's next seed instantiates it afresh, from as much entropy as an instantiation
         * needs (pool.c: 448 credited bits in mode = approved), never from a reseed's. */
        if (rc != RANDD_DRBG_OK)
            drbg_engine_forget(e);
    } else {
        rc = instantiate(e, material);
    }
    if (rc != RANDD_DRBG_OK) {
        log_err("%s (%s): seeding refused: %s%s%s", randd_drbg_name(e->type),
                e->pers, randd_drbg_strerror(rc), rc == RANDD_DRBG_E_OPENSSL ? ": " : "",
                rc == RANDD_DRBG_E_OPENSSL ? randd_drbg_detail(e->drbg) : "");
        return -EIO;
    }
    return 0;
}

int drbg_engine_reseed_fresh(struct drbg_engine *e, const uint8_t *entropy, size_t len)
{
    int rc;

    if (!e->drbg || !e->instantiated)
        return -EINVAL;
    rc = randd_drbg_reseed(e->drbg, entropy, len, NULL, 0);
    if (rc == RANDD_DRBG_OK)
        return 0;
    log_err("%s (%s): reseed refused: %s%s%s", randd_drbg_name(e->type), e->pers,
            randd_drbg_strerror(rc), rc == RANDD_DRBG_E_OPENSSL ? ": " : "",
            rc == RANDD_DRBG_E_OPENSSL ? randd_drbg_detail(e->drbg) : "");
    return rc == RANDD_DRBG_E_ENTROPY_LENGTH ? -EINVAL : -EIO;
}

int drbg_engine_read(struct drbg_engine *e, void *out, size_t n)
{
    uint8_t *at = out;
    size_t left = n, calls;
    int rc;

    if (!e->drbg || (out == NULL && n > 0))
        return -EINVAL;
    calls = n / e->max_request + (n % e->max_request != 0);
    /* All or nothing: a read the interval cannot cover whole is refused before any byte. */
    if (randd_drbg_requests_since_seed(e->drbg) + calls > e->reseed_interval) {
        OPENSSL_cleanse(out, n);
        return -ESTALE;
    }
    while (left > 0) {
        size_t chunk = left < e->max_request ? left : e->max_request;

        rc = randd_drbg_generate(e->drbg, at, chunk, NULL, 0, false, NULL, 0);
        if (rc != RANDD_DRBG_OK) {
            OPENSSL_cleanse(out, n);
            log_err("%s (%s): generate refused: %s%s%s",
                    randd_drbg_name(e->type), e->pers,
                    randd_drbg_strerror(rc), rc == RANDD_DRBG_E_OPENSSL ? ": " : "",
                    rc == RANDD_DRBG_E_OPENSSL ? randd_drbg_detail(e->drbg) : "");
            return rc == RANDD_DRBG_E_RESEED_REQUIRED ? -ESTALE : -EIO;
        }
        at += chunk;
        left -= chunk;
    }
    return 0;
}

bool drbg_engine_reseed_due(const struct drbg_engine *e)
{
    return e->drbg && randd_drbg_requests_since_seed(e->drbg) >= e->reseed_interval / 2;
}

uint64_t drbg_engine_requests(const struct drbg_engine *e)
{
    return e->drbg ? randd_drbg_requests_since_seed(e->drbg) : 0;
}

const char *drbg_engine_mechanism(const struct drbg_engine *e)
{
    return e->drbg ? randd_drbg_name(e->type) : "none";
}

int drbg_engine_set_reseed_interval(struct drbg_engine *e, uint64_t interval)
{
    if (!e->drbg || randd_drbg_set_reseed_interval(e->drbg, interval) != RANDD_DRBG_OK)
        return -EINVAL;
    e->reseed_interval = interval;
    return 0;
}
