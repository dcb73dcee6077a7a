/* Generator engines (engine.h): the choice made once, then seed, read and wipe sent to the
 * engine chosen. Nothing here decides when to seed: the pool and the loops do. */
#include "engine.h"

#include <errno.h>
#include <string.h>

int engine_init(struct engine *e)
{
    memset(e, 0, sizeof(*e));
    e->which = RANDD_ENGINE_CYMRIC;
    return randd_cymric_init(&e->cymric, 0);
}

int engine_choose(struct engine *e, enum randd_engine which, const char *who)
{
    int rc;

    if (which == RANDD_ENGINE_RANDEN && (rc = randd_randen_init(&e->randen)) < 0)
        return rc;
    drbg_engine_fini(&e->drbg);
    if (RANDD_ENGINE_IS_DRBG(which) && (rc = drbg_engine_init(&e->drbg, which, who)) < 0)
        return rc;
    e->which = which;
    e->seeded = false;
    return 0;
}

int engine_use_cipher(struct engine *e, enum randd_stream_cipher which)
{
    return randd_cymric_use_stream(&e->cymric, which);
}

enum randd_stream_cipher engine_cipher(const struct engine *e)
{
    return randd_cymric_stream(&e->cymric);
}

int engine_seed(struct engine *e, const uint8_t *material, size_t len)
{
    int rc;

    if (RANDD_ENGINE_IS_DRBG(e->which))
        rc = drbg_engine_seed(&e->drbg, material, len);
    else
        rc = e->which == RANDD_ENGINE_RANDEN ? randd_randen_seed(&e->randen, material, len)
                                             : randd_cymric_seed(&e->cymric, material, len);
    e->seeded = rc == 0;
    return rc;
}

int engine_read(struct engine *e, void *out, size_t n)
{
    if (!e->seeded)
        return -EAGAIN;
    if (RANDD_ENGINE_IS_DRBG(e->which))
        return drbg_engine_read(&e->drbg, out, n);
    return e->which == RANDD_ENGINE_RANDEN ? randd_randen_generate(&e->randen, out, n)
                                           : randd_cymric_read(&e->cymric, out, n);
}

bool engine_instantiates_next(const struct engine *e)
{
    return RANDD_ENGINE_IS_DRBG(e->which) && !e->drbg.instantiated;
}

bool engine_reseed_due(const struct engine *e)
{
    return RANDD_ENGINE_IS_DRBG(e->which) && drbg_engine_reseed_due(&e->drbg);
}

void engine_forget(struct engine *e)
{
    e->seeded = false;
    randd_cymric_wipe(&e->cymric);
    randd_randen_wipe(&e->randen);
    drbg_engine_forget(&e->drbg);
    if (e->which == RANDD_ENGINE_RANDEN)
        randd_randen_init(&e->randen);      /* wiped is unusable: ready to seed again */
}

void engine_fini(struct engine *e)
{
    randd_cymric_fini(&e->cymric);
    randd_randen_wipe(&e->randen);
    drbg_engine_fini(&e->drbg);
}

const char *engine_drbg_mechanism(const struct engine *e)
{
    return RANDD_ENGINE_IS_DRBG(e->which) ? drbg_engine_mechanism(&e->drbg) : NULL;
}

uint64_t engine_drbg_requests(const struct engine *e)
{
    return RANDD_ENGINE_IS_DRBG(e->which) ? drbg_engine_requests(&e->drbg) : 0;
}

const char *engine_drbg_personalisation(const struct engine *e)
{
    return RANDD_ENGINE_IS_DRBG(e->which) ? e->drbg.pers : NULL;
}

int engine_drbg_set_reseed_interval(struct engine *e, uint64_t interval)
{
    return RANDD_ENGINE_IS_DRBG(e->which) ? drbg_engine_set_reseed_interval(&e->drbg, interval)
                                          : -EINVAL;
}
