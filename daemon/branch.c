/* Per-loop generators (see branch.h). The hot path reads one atomic, the pool's epoch, and
 * takes the pool's lock only to seed: before the first output, when the epoch moved, after
 * reseed_bytes of its own output, and after a clock jump this loop noticed itself (a resumed
 * suspend or a restored snapshot may replay its state, as it may the pool's). Seeding takes
 * 64 bytes of pool output, which never leave locked memory but on the stack, wiped at once.
 *
 * Sections: set-up, seeding, output. */
#include "branch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "engine.h"
#include "log.h"
#include "loop.h"
#include "secmem.h"

#define BRANCH_SEED_BYTES 64
#define EPOCH_STALE       UINT64_MAX    /* equals no epoch the pool ever publishes */

struct branch_secrets {
    struct engine engine;
};

/* Numbers the loops' DRBGs' personalisation strings: "randd loop 1", "randd loop 2", ... */
static _Atomic unsigned loops_made;

/* --- set-up: the pool's engine, so engine = randen (and cipher) holds for every loop ------ */

int branch_init(struct branch *b, struct pool *pool, pthread_mutex_t *pool_lock)
{
    enum randd_engine engine;
    char who[16] = "";
    int lock_errno, rc;

    memset(b, 0, sizeof(*b));
    b->pool = pool;
    b->pool_lock = pool_lock;
    b->epoch = EPOCH_STALE;
    b->boot_offset_ns = loop_boot_offset_ns();
    if (!pool_lock)
        return 0;
    b->secret = randd_secure_alloc(sizeof(*b->secret), &lock_errno);
    if (!b->secret)
        return -ENOMEM;
    engine = pool_engine(pool);
    if (RANDD_ENGINE_IS_DRBG(engine))
        snprintf(who, sizeof(who), "loop %u", atomic_fetch_add(&loops_made, 1) + 1);
    if ((rc = engine_init(&b->secret->engine)) < 0 ||
        (rc = engine_use_cipher(&b->secret->engine, pool_cipher(pool))) < 0 ||
        (rc = engine_choose(&b->secret->engine, engine, who)) < 0) {
        branch_fini(b);
        return rc;
    }
    return 0;
}

void branch_fini(struct branch *b)
{
    randd_crypto_free(b->pr_crypto);     /* every reply's generator on it is gone */
    b->pr_crypto = NULL;
    if (b->secret) {
        engine_fini(&b->secret->engine);
        randd_secure_free(b->secret, sizeof(*b->secret));
    }
    b->secret = NULL;
    b->seeded = false;
}

int branch_cymric_init(struct branch *b, struct randd_cymric *g)
{
    if (!b->pr_crypto) {
        struct randd_crypto *c = randd_crypto_new();
        int rc = c ? randd_crypto_use_stream(c, pool_cipher(b->pool)) : -ENOMEM;

        if (rc < 0) {
            randd_crypto_free(c);
            return rc;
        }
        b->pr_crypto = c;
    }
    return randd_cymric_init_shared(g, 0, b->pr_crypto);
}

/* --- seeding ------------------------------------------------------------------------------ */

/* From the pool, under its lock; the output given since the last seeding is counted there
 * first, so the pool's reseed_bytes covers every loop's output. */
static void seed_from_pool(struct branch *b, uint64_t now_ns)
{
    uint8_t material[BRANCH_SEED_BYTES];
    bool given;

    pthread_mutex_lock(b->pool_lock);
    pool_note_output(b->pool, b->bytes_since_seed);
    given = pool_generate(b->pool, material, sizeof(material), now_ns) == 0;
    b->seeded = given && engine_seed(&b->secret->engine, material, sizeof(material)) == 0;
    /* A DRBG that refused its reseed was wiped (drbg_engine.c): the next request instantiates
     * it from fresh pool output, rather than waiting for the pool's epoch to move. */
    b->epoch = given && !b->seeded ? EPOCH_STALE
                                   : atomic_load_explicit(&b->pool->epoch, memory_order_acquire);
    b->reseed_bytes = b->pool->reseed_bytes;
    pthread_mutex_unlock(b->pool_lock);
    OPENSSL_cleanse(material, sizeof(material));
    b->bytes_since_seed = 0;
    if (!b->seeded)
        engine_forget(&b->secret->engine);
}

bool branch_ready(struct branch *b)
{
    if (!b->pool_lock)
        return pool_ready(b->pool);
    if (atomic_load_explicit(&b->pool->epoch, memory_order_acquire) != b->epoch)
        seed_from_pool(b, loop_now_ns());
    return b->seeded;
}

const char *branch_not_ready_reason(struct branch *b)
{
    const char *why;

    if (!b->pool_lock)
        return pool_not_ready_reason(b->pool);
    pthread_mutex_lock(b->pool_lock);
    why = pool_not_ready_reason(b->pool);
    pthread_mutex_unlock(b->pool_lock);
    return why ? why : "this loop's generator is reseeding from the pool";
}

/* A clock jump this loop saw: seed again, which has the pool check too (and refuse output
 * until it has reseeded from fresh input). */
static void check_clock_jump(struct branch *b)
{
    if (loop_clock_jumped(&b->boot_offset_ns, NULL))
        b->epoch = EPOCH_STALE;
}

/* --- output ------------------------------------------------------------------------------- */

uint64_t branch_continuity(struct branch *b)
{
    uint64_t mark;

    if (!b->pool_lock)
        return pool_continuity(b->pool);
    check_clock_jump(b);
    pthread_mutex_lock(b->pool_lock);
    mark = pool_continuity(b->pool);
    pthread_mutex_unlock(b->pool_lock);
    return mark;
}

int branch_generate(struct branch *b, void *out, size_t n, uint64_t now_ns)
{
    int rc;

    if (!b->pool_lock)
        return pool_generate(b->pool, out, n, now_ns);
    check_clock_jump(b);
    if (b->bytes_since_seed >= b->reseed_bytes || engine_reseed_due(&b->secret->engine))
        b->epoch = EPOCH_STALE;
    if (!branch_ready(b))
        return -EAGAIN;
    rc = engine_read(&b->secret->engine, out, n);
    if (rc == -ESTALE) {            /* the DRBG's reseed interval: reseed, never pass it */
        b->epoch = EPOCH_STALE;
        if (!branch_ready(b))
            return -EAGAIN;
        rc = engine_read(&b->secret->engine, out, n);
    }
    if (rc < 0) {
        log_err("generator failed (%s): this loop's output stays off until reseeded",
                strerror(-rc));
        b->seeded = false;
        b->epoch = EPOCH_STALE;
        return rc;
    }
    b->bytes_since_seed += n;
    return 0;
}

int branch_fill(void *branch, void *buf, size_t n)
{
    struct branch *b = branch;
    int rc;

    if (!b->pool_lock)
        return pool_fill(b->pool, buf, n);
    rc = engine_read(&b->secret->engine, buf, n);
    if (rc == 0)
        b->bytes_since_seed += n;
    return rc;
}

const char *branch_drbg_personalisation(const struct branch *b)
{
    return b->secret ? engine_drbg_personalisation(&b->secret->engine) : NULL;
}

int branch_add_entropy(struct branch *b, const void *data, size_t len, unsigned bits,
                       uint64_t now_ns)
{
    int rc;

    if (!b->pool_lock)
        return pool_add_entropy(b->pool, data, len, bits, now_ns);
    pthread_mutex_lock(b->pool_lock);
    rc = pool_add_entropy(b->pool, data, len, bits, now_ns);
    pthread_mutex_unlock(b->pool_lock);
    return rc;
}

struct pool *branch_lock_pool(struct branch *b)
{
    if (b->pool_lock)
        pthread_mutex_lock(b->pool_lock);
    return b->pool;
}

void branch_unlock_pool(struct branch *b)
{
    if (b->pool_lock)
        pthread_mutex_unlock(b->pool_lock);
}
