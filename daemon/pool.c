/* Conditioning, seeding and the reseed policy. Raw bytes never reach the generator directly:
 * each healthy batch is absorbed as acc = H(acc || time || source || bytes), H being the
 * pool's conditioning function (BLAKE2b-512, or SHA-512 where vetted conditioning is wanted),
 * and the generator is seeded with acc once POOL_SEED_BITS have been credited since the last
 * seed. Kernel-creditable bytes go to a separate accumulator while the kernel feed wants
 * them, so the kernel and our generator never share raw material. */
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>

#include "crypto.h"
#include "engine.h"
#include "entropy_conditioning.h"
#include "log.h"
#include "loop.h"
#include "secmem.h"

#define HARVEST_BATCH      512    /* bytes per read */
#define HARVEST_ROUNDS     32     /* reads per source per harvest: bounds a harvest's cost */
#define TEXT_OF(x)         #x
#define TEXT(x)            TEXT_OF(x)   /* TEXT(POOL_SEED_BITS): "256", for messages */

struct pool_secrets {
    struct engine engine;                /* the generator */
    uint8_t acc[POOL_ACCUMULATOR_BYTES];
    uint8_t kernel_acc[POOL_ACCUMULATOR_BYTES];
    uint8_t raw[HARVEST_BATCH];
};

_Static_assert(POOL_ACCUMULATOR_BYTES == RANDD_BLAKE2B_BYTES &&
                   POOL_ACCUMULATOR_BYTES == RANDD_SHA512_BYTES,
               "either conditioning function fills the accumulators exactly");
_Static_assert(POOL_KERNEL_BYTES <= POOL_ACCUMULATOR_BYTES,
               "a kernel top-up is taken from the kernel feed's accumulator");

int pool_init(struct pool *p, unsigned reseed_interval, uint64_t reseed_bytes)
{
    memset(p, 0, sizeof(*p));
    pool_set_reseed(p, reseed_interval, reseed_bytes);
    p->boot_offset_ns = loop_boot_offset_ns();
    p->conditioned_in_bits = 8 * POOL_ACCUMULATOR_BYTES;
    p->secret = randd_secure_alloc(sizeof(*p->secret), &p->lock_errno);
    if (!p->secret)
        return -ENOMEM;
    p->crypto = randd_crypto_new();
    if (!p->crypto || engine_init(&p->secret->engine) < 0 || noise_init(&p->noise) < 0) {
        pool_fini(p);
        return -ENOMEM;
    }
    return 0;
}

int pool_lock_errno(const struct pool *p)
{
    return p->lock_errno;
}

void pool_set_reseed(struct pool *p, unsigned reseed_interval, uint64_t reseed_bytes)
{
    p->reseed_interval = reseed_interval;
    p->reseed_bytes = reseed_bytes;
}

void pool_add_source(struct pool *p, struct source *s)
{
    if (p->nsources < POOL_MAX_SOURCES)
        p->sources[p->nsources++] = s;
}

int pool_use_engine(struct pool *p, enum randd_engine engine)
{
    if (p->seeded)
        return -EBUSY;
    return engine_choose(&p->secret->engine, engine, "pool");
}

enum randd_engine pool_engine(const struct pool *p)
{
    return p->secret->engine.which;
}

const char *pool_engine_name(const struct pool *p)
{
    return randd_engine_name(pool_engine(p));
}

int pool_use_cipher(struct pool *p, enum randd_stream_cipher which)
{
    if (p->seeded)
        return -EBUSY;
    return engine_use_cipher(&p->secret->engine, which);
}

enum randd_stream_cipher pool_cipher(const struct pool *p)
{
    return engine_cipher(&p->secret->engine);
}

const char *pool_cipher_name(const struct pool *p)
{
    return randd_stream_cipher_name(pool_cipher(p));
}

int pool_cymric_init(const struct pool *p, struct randd_cymric *g)
{
    int rc = randd_cymric_init(g, 0);

    if (rc == 0 && (rc = randd_cymric_use_stream(g, pool_cipher(p))) < 0)
        randd_cymric_fini(g);
    return rc;
}

const char *pool_engine_mechanism(const struct pool *p)
{
    return engine_drbg_mechanism(&p->secret->engine);
}

uint64_t pool_engine_requests(const struct pool *p)
{
    return engine_drbg_requests(&p->secret->engine);
}

int pool_drbg_set_reseed_interval(struct pool *p, uint64_t interval)
{
    return engine_drbg_set_reseed_interval(&p->secret->engine, interval);
}

void pool_fini(struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++)
        source_close(p->sources[i]);
    p->nsources = 0;
    if (p->secret) {
        engine_fini(&p->secret->engine);
        randd_secure_free(p->secret, sizeof(*p->secret));
        p->secret = NULL;
    }
    randd_crypto_free(p->crypto);
    p->crypto = NULL;
    noise_fini(&p->noise);
    p->seeded = false;
}

/* --- the conditioning function ----------------------------------------------------------
 * Every hash the pool runs goes through condition(): the two accumulators' absorbs, the step
 * after a seed and the rekey after lost kernel log records. A pool that chose SHA-512 runs no
 * BLAKE2b of its own (Cymric's rekeying is the engine's). The names and what SP 800-90B says
 * of each live in this one table; pool.h says what a seed of each is credited. */

static const struct conditioning_function {
    const char *name;
    bool vetted;                         /* SP 800-90B 3.1.5.1.1 */
    int (*hash)(struct randd_crypto *c, uint8_t out[POOL_ACCUMULATOR_BYTES],
                const struct iovec *parts, size_t nparts);
} conditioning_functions[] = {
    [POOL_CONDITIONING_BLAKE2B512] = { "BLAKE2b-512", false, randd_blake2b512 },
    [POOL_CONDITIONING_SHA512] = { "SHA-512", true, randd_sha512 },
};
#define NCONDITIONING (sizeof(conditioning_functions) / sizeof(conditioning_functions[0]))

static const struct conditioning_function *conditioning_of(const struct pool *p)
{
    return &conditioning_functions[p->conditioning];
}

/* out = H(parts), out may overlap them. Both functions leave their input's words in OpenSSL's
 * stack frames (BLAKE2b's copy of each block, SHA-512's message schedule): raw entropy, and
 * after a seed the seed itself, which the step forward exists to erase. Wiped at once. */
static int condition(struct pool *p, uint8_t out[POOL_ACCUMULATOR_BYTES],
                     const struct iovec *parts, size_t nparts)
{
    int rc = conditioning_of(p)->hash(p->crypto, out, parts, nparts);

    randd_crypto_wipe_stack();
    return rc;
}

int pool_use_conditioning(struct pool *p, enum pool_conditioning_function f)
{
    uint8_t probe[POOL_ACCUMULATOR_BYTES];

    if (p->seeded)
        return -EBUSY;
    if ((size_t)f >= NCONDITIONING)
        return -EINVAL;
    /* Hashing nothing fetches the algorithm now: a missing one is refused here, at start,
     * rather than dropping every batch later. */
    if (conditioning_functions[f].hash(p->crypto, probe, NULL, 0) < 0)
        return -EIO;
    if (f != p->conditioning) {      /* no credit goes into a seed through another function */
        p->credit = 0;
        p->noise_credit = 0;
        p->kernel_credit = 0;
    }
    p->conditioning = f;
    return 0;
}

const char *pool_conditioning_name(const struct pool *p)
{
    return conditioning_of(p)->name;
}

bool pool_conditioning_vetted(const struct pool *p)
{
    return conditioning_of(p)->vetted;
}

/* acc = H(acc || timestamp || source name || raw). */
static int absorb(struct pool *p, uint8_t acc[POOL_ACCUMULATOR_BYTES], const char *name,
                  const uint8_t *raw, size_t n, uint64_t now_ns)
{
    struct iovec parts[] = {
        { acc, POOL_ACCUMULATOR_BYTES },
        { &now_ns, sizeof(now_ns) },
        { (void *)name, strlen(name) + 1 },
        { (void *)raw, n },
    };

    if (acc == p->secret->acc)           /* n_in of the next seed: what the chain took in */
        p->conditioned_in_bits += 8 * (sizeof(now_ns) + strlen(name) + 1 + n);
    return condition(p, acc, parts, sizeof(parts) / sizeof(parts[0]));
}

static bool generator_wants_credit(const struct pool *p, uint64_t now_ns);
static bool kernel_wants_credit(const struct pool *p, const struct source *s);

/* The credit that counts toward the next seed: with require_noise_source, noise sources' only
 * (getrandom's bytes are still absorbed: they cannot make the seed weaker). */
static double seed_credit(const struct pool *p)
{
    return p->require_noise_source ? p->noise_credit : p->credit;
}

/* Each byte goes to one place only: the kernel's accumulator while the feed wants it, else
 * the noise reservoir (a noise source's, while the reservoir wants blocks and no reseed of
 * the generator waits for credit), else the generator's. */
static void credit_batch(struct pool *p, size_t i, size_t n, uint64_t now_ns)
{
    struct pool_secrets *sec = p->secret;
    struct source *s = p->sources[i];
    bool for_kernel = kernel_wants_credit(p, s);
    size_t off = 0;
    double bits;

    if (!for_kernel && s->noise && !p->halted[0] && !generator_wants_credit(p, now_ns)) {
        off = noise_absorb(&p->noise, sec->raw, n, s->entropy_per_byte);
        p->noise_bits[i] += s->entropy_per_byte * (double)off;
        if (off == n)
            return;
    }
    n -= off;
    bits = s->entropy_per_byte * (double)n;
    if (absorb(p, for_kernel ? sec->kernel_acc : sec->acc, s->name, sec->raw + off, n,
               now_ns) < 0) {
        log_err("conditioning failed (OpenSSL %s): batch from %s dropped",
                pool_conditioning_name(p), s->name);
        return;
    }
    if (for_kernel) {
        p->kernel_credit += bits;
    } else {
        p->credit += bits;
        if (s->noise)
            p->noise_credit += bits;
    }
}

/* One usable batch from a source per harvest. A source in its start-up test keeps being
 * read until the test is over (1024 RDSEED words take 16 rounds) and then gives its first
 * usable batch; a source that gives nothing or fails is left for the next harvest. A noise
 * source is read on, up to HARVEST_ROUNDS batches, while requests wait for noise blocks:
 * at a batch a harvest, rdseed gave full entropy at 10 KiB/s, at 32 it keeps up with them. */
static void harvest_source(struct pool *p, size_t i, uint64_t now_ns)
{
    struct source *s = p->sources[i];

    for (int round = 0; round < HARVEST_ROUNDS; round++) {
        uint64_t read_before = s->bytes_read;
        ssize_t got = source_harvest(s, p->secret->raw, sizeof(p->secret->raw), now_ns);
        bool more = got > 0 && s->noise && noise_wanted_blocks(&p->noise) > 0;

        if (got > 0)
            credit_batch(p, i, (size_t)got, now_ns);
        OPENSSL_cleanse(p->secret->raw, sizeof(p->secret->raw));
        more = more && noise_wanted_blocks(&p->noise) > 0;
        if ((got != 0 && !more) || s->bytes_read == read_before ||
            source_state(s) == RANDD_SOURCE_QUARANTINED)
            break;
    }
}

static bool reseed_due(const struct pool *p, uint64_t now_ns)
{
    return !p->seeded || p->must_reseed || p->fresh_reseed_due ||
           p->bytes_since_reseed >= p->reseed_bytes || engine_reseed_due(&p->secret->engine) ||
           now_ns >= p->last_reseed_ns + (uint64_t)p->reseed_interval * NS_PER_S;
}

/* --- demand: sources that cost CPU run only while their credit is wanted ------------------
 * A source in its start-up test needs samples to pass it. A healthy one is wanted while a
 * reseed is due and not yet covered, or while the kernel feed waits for material it may
 * give. Quarantined ones wait for their retry. Recomputed after every harvest and request. */

static bool generator_wants_credit(const struct pool *p, uint64_t now_ns)
{
    return seed_credit(p) < pool_seed_bits_needed(p) && reseed_due(p, now_ns);
}

static bool kernel_wants_credit(const struct pool *p, const struct source *s)
{
    return s->kernel_creditable && p->kernel_credit < p->kernel_wanted;
}

static void update_demand(struct pool *p, uint64_t now_ns)
{
    for (size_t i = 0; i < p->nsources; i++) {
        struct source *s = p->sources[i];
        enum randd_source_state state = source_state(s);
        bool credit_wanted = generator_wants_credit(p, now_ns) || kernel_wants_credit(p, s) ||
                             (s->noise && pool_noise_wanted(p));

        source_want(s, state == RANDD_SOURCE_STARTUP ||
                           (state == RANDD_SOURCE_HEALTHY && credit_wanted));
    }
}

/* Material for the kernel is on its way: an on-demand source is producing it. */
static bool kernel_material_coming(const struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++)
        if (p->sources[i]->wanted && kernel_wants_credit(p, p->sources[i]))
            return true;
    return false;
}

/* SP 800-90B 3.1.5's h_out of the seed about to be taken (pool.h): 3.1.5.1.2's for a vetted
 * function, 3.1.5.2's (with the 0.999 and h' caps) for BLAKE2b-512. */
static void note_conditioning(struct pool *p)
{
    struct pool_conditioning *c = &p->last_seed;
    struct randd_ea_conditioning e;
    unsigned n_in = p->conditioned_in_bits > UINT32_MAX ? UINT32_MAX
                                                        : (unsigned)p->conditioned_in_bits;

    c->n_in = n_in;
    c->h_in = seed_credit(p) < n_in ? seed_credit(p) : n_in;   /* what counted: noise's alone
                                                                 * with require_noise_source */
    c->h_out = 0.0;
    if (randd_ea_conditioning(pool_conditioning_vetted(p), n_in, POOL_CONDITIONED_BITS,
                              POOL_CONDITIONING_NW, c->h_in, POOL_CONDITIONING_H_PRIME, &e) == 0)
        c->h_out = (double)e.h_out;
    p->conditioned_in_bits = 8 * POOL_ACCUMULATOR_BYTES;
}

/* acc = H(acc || label), the moment acc has seeded: one who reads the pool's memory
 * afterwards finds a one-way step of the seed, not the seed, so cannot rebuild the generator
 * it made, nor what that generator served (backtracking resistance). The step carries acc's
 * entropy on into the next seed. */
static int step_accumulator_forward(struct pool *p)
{
    static const char label[] = "randd pool: the accumulator after a seed";
    struct iovec parts[] = {
        { p->secret->acc, sizeof(p->secret->acc) },
        { (void *)label, sizeof(label) },
    };

    return condition(p, p->secret->acc, parts, sizeof(parts) / sizeof(parts[0]));
}

static void reseed(struct pool *p, uint64_t now_ns)
{
    struct pool_secrets *sec = p->secret;
    bool first = !p->seeded;

    if (engine_seed(&sec->engine, sec->acc, sizeof(sec->acc)) < 0 ||
        step_accumulator_forward(p) < 0) {
        log_err("seeding the %s generator failed; output stays off", pool_engine_name(p));
        p->seeded = false;
        return;
    }
    p->seeded = true;
    p->must_reseed = false;
    p->fresh_reseed_due = false;
    note_conditioning(p);
    p->seed_noise_credited = p->noise_credit >= POOL_SEED_BITS;
    p->credit = 0;
    p->noise_credit = 0;
    p->reseeds++;
    p->last_reseed_ns = now_ns;
    p->bytes_since_reseed = 0;
    if (first)
        log_info("generator seeded with %.0f credited bits (SP 800-90B h_out of %s "
                 "conditioning, %s: %.1f bits)", p->last_seed.h_in, pool_conditioning_name(p),
                 pool_conditioning_vetted(p) ? "vetted" : "non-vetted", p->last_seed.h_out);
}

/* Moves the epoch when a serving loop's generator must reseed before its next output. */
static void publish(struct pool *p)
{
    bool ready = pool_ready(p);

    if (ready == p->published_ready && p->reseeds == p->published_reseeds &&
        p->vm_rekeys == p->published_rekeys)
        return;
    p->published_ready = ready;
    p->published_reseeds = p->reseeds;
    p->published_rekeys = p->vm_rekeys;
    p->times_unready += !ready;
    atomic_fetch_add_explicit(&p->epoch, 1, memory_order_release);
}

/* A noise source left HEALTHY (a health test failed, at a harvest or induced between two;
 * or it was disabled: an assessment under jitter's floor) or its credit per byte fell: the
 * failed window may hold bytes the reservoir took before the test tripped, and what it gave
 * was credited at a rate now judged too high. Nothing gathered from noise until now, the
 * block being gathered included, is handed out (source_distrusts). */
static void drop_noise_after_failures(struct pool *p)
{
    uint64_t failures = 0;

    for (size_t i = 0; i < p->nsources; i++)
        if (p->sources[i]->noise)
            failures += source_distrusts(p->sources[i]);
    if (failures != p->noise_failures_seen)
        noise_drop(&p->noise);
    p->noise_failures_seen = failures;
}

void pool_harvest(struct pool *p, uint64_t now_ns)
{
    drop_noise_after_failures(p);
    for (size_t i = 0; i < p->nsources; i++) {
        harvest_source(p, i, now_ns);
        drop_noise_after_failures(p);
    }
    if (!p->halted[0] && seed_credit(p) >= pool_seed_bits_needed(p) && reseed_due(p, now_ns))
        reseed(p, now_ns);
    update_demand(p, now_ns);
    publish(p);
}

bool pool_any_starting(const struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++)
        if (source_state(p->sources[i]) == RANDD_SOURCE_STARTUP)
            return true;
    return false;
}

uint64_t pool_next_retry_ns(const struct pool *p)
{
    uint64_t soonest = UINT64_MAX;

    for (size_t i = 0; i < p->nsources; i++) {
        uint64_t retry = source_retry_at_ns(p->sources[i]);

        if (retry < soonest)
            soonest = retry;
    }
    return soonest;
}

bool pool_any_healthy(const struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++)
        if (source_healthy(p->sources[i]))
            return true;
    return false;
}

static bool append_reason(char *why, size_t whylen, size_t *used, bool first,
                          const char *name, const char *state, const char *reason);

/* A noise source healthy and crediting more than nothing a byte. */
static bool noise_credited(const struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++) {
        const struct source *s = p->sources[i];

        if (s->noise && source_healthy(s) && s->entropy_per_byte > 0)
            return true;
    }
    return false;
}

bool pool_kernel_only(const struct pool *p, char *why, size_t whylen)
{
    bool kernel = false, any_noise = false, room = whylen > 0, cpu_named;
    size_t used = 0;

    if (noise_credited(p))
        return false;
    for (size_t i = 0; i < p->nsources; i++) {
        const struct source *s = p->sources[i];

        kernel |= !s->noise && source_healthy(s) && s->entropy_per_byte > 0;
        any_noise |= s->noise;
    }
    if (!kernel || whylen == 0)
        return kernel;
    why[0] = '\0';
    for (size_t i = 0; i < p->nsources && room; i++) {
        const struct source *s = p->sources[i];

        if (!s->noise)
            continue;
        if (source_healthy(s))         /* healthy, crediting nothing: its reason is empty */
            room = append_reason(why, whylen, &used, used == 0, s->name, "healthy",
                                 "credits 0 bits a byte until its samples are assessed");
        else if (source_state(s) == RANDD_SOURCE_STARTUP && !source_reason(s)[0])
            room = append_reason(why, whylen, &used, used == 0, s->name, "startup",
                                 "its start-up test has not passed yet");
        else
            room = append_reason(why, whylen, &used, used == 0, s->name,
                                 randd_source_state_name(source_state(s)), source_reason(s));
    }
    cpu_named = strcmp(source_cpu_name(), "cpu") != 0;
    if (!any_noise)
        snprintf(why, whylen, "none is configured (%s%s%s hwrng or jitter)",
                 cpu_named ? "the CPU's " : "", cpu_named ? source_cpu_name() : "",
                 cpu_named ? "," : "");
    return true;
}

bool pool_noise_credit_pending(const struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++) {
        const struct source *s = p->sources[i];

        if (!s->noise)
            continue;
        if (source_state(s) == RANDD_SOURCE_STARTUP)
            return true;
        if (source_healthy(s) && s->entropy_per_byte <= 0 && s->ops->assess &&
            s->assessments == 0)
            return true;
    }
    return false;
}

const char *pool_not_ready_reason(const struct pool *p)
{
    if (p->halted[0])
        return p->halted;
    if (!pool_any_healthy(p))
        return p->nsources ? "no healthy entropy source" : "no entropy source available";
    if (p->require_noise_source && !noise_credited(p))
        return "only the kernel's getrandom is credited, and require_noise_source = yes: "
               "waiting for a noise source (the CPU's, hwrng or jitter)";
    if (!p->seeded && pool_seed_bits_needed(p) == POOL_INSTANTIATE_BITS)
        return "not yet seeded with " TEXT(POOL_INSTANTIATE_BITS) " bits credited by noise "
               "sources (SP 800-90C: the DRBG is instantiated from 3s/2 bits of entropy)";
    if (!p->seeded)
        return p->require_noise_source ? "not yet seeded with " TEXT(POOL_SEED_BITS) " bits "
                                         "credited by noise sources (require_noise_source = yes)"
                                       : "not yet seeded with " TEXT(POOL_SEED_BITS)
                                         " credited bits";
    if (p->must_reseed)
        return p->reseed_why;
    return NULL;
}

bool pool_ready(const struct pool *p)
{
    return pool_not_ready_reason(p) == NULL;
}

uint64_t pool_times_unready(const struct pool *p)
{
    return p->times_unready;
}


/* No output from the current seed: a seeded generator waits for a new one. */
static void must_reseed(struct pool *p, const char *why)
{
    if (p->seeded) {
        p->must_reseed = true;
        p->reseed_why = why;
    }
}

/* In mode = approved a halt (a failed self-test) or a clone wipes the DRBG, so that it is
 * instantiated afresh from POOL_INSTANTIATE_BITS, not reseeded from a state that a failed
 * primitive made or that every clone holds. */
static void forget_for_instantiation(struct pool *p)
{
    if (p->instantiate_at_three_halves)
        engine_forget(&p->secret->engine);
}

void pool_halt(struct pool *p, const char *why)
{
    snprintf(p->halted, sizeof(p->halted), "%s", why);
    forget_for_instantiation(p);
    noise_drop(&p->noise);
    p->credit = 0;
    p->noise_credit = 0;
    p->kernel_credit = 0;
    must_reseed(p, "halted: waiting to reseed");
    publish(p);
}

bool pool_halted(const struct pool *p)
{
    return p->halted[0] != '\0';
}

void pool_resume(struct pool *p)
{
    p->halted[0] = '\0';
    p->credit = 0;               /* conditioned by primitives that had just failed */
    p->noise_credit = 0;
    p->kernel_credit = 0;
    must_reseed(p, "resumed after a halt: waiting to reseed");
    publish(p);
}

void pool_instantiate_at_three_halves(struct pool *p, bool on)
{
    p->instantiate_at_three_halves = on;
}

unsigned pool_seed_bits_needed(const struct pool *p)
{
    return p->instantiate_at_three_halves && engine_instantiates_next(&p->secret->engine)
               ? POOL_INSTANTIATE_BITS : POOL_SEED_BITS;
}

void pool_require_noise_source(struct pool *p, bool require)
{
    p->require_noise_source = require;
    if (require && p->seeded && !p->seed_noise_credited) {
        must_reseed(p, "require_noise_source = yes, and the seed in use did not take "
                       TEXT(POOL_SEED_BITS) " bits from noise sources: waiting to reseed from "
                       "them");
        publish(p);
    }
}

/* A resumed suspend or restored snapshot can replay a generator state: reseed first. */
static void check_clock_jump(struct pool *p)
{
    int64_t ahead;

    if (loop_clock_jumped(&p->boot_offset_ns, &ahead) && p->seeded && !p->must_reseed) {
        log_notice("clock jump of %.1f s (suspend or snapshot restore): reseeding before output",
                   (double)ahead / 1e9);
        must_reseed(p, "clock jump (suspend or snapshot restore): waiting to reseed");
        publish(p);
    }
}

uint64_t pool_continuity(struct pool *p)
{
    check_clock_jump(p);
    publish(p);
    return p->times_unready + p->vm_rekeys;
}

void pool_vm_cloned(struct pool *p, uint64_t now_ns)
{
    p->vm_generations++;
    forget_for_instantiation(p);
    noise_drop(&p->noise);           /* every clone holds the same blocks */
    p->credit = 0;
    p->noise_credit = 0;
    p->kernel_credit = 0;
    must_reseed(p, "new VM generation (snapshot restored or cloned): waiting to reseed");
    for (size_t i = 0; i < p->nsources; i++)
        source_discard(p->sources[i]);
    log_notice("new VM generation (snapshot restored or cloned): reseeding from fresh input "
               "before any output");
    pool_harvest(p, now_ns);
}

/* --- a possible VM fork: rekeyed at once, never halted ------------------------------------
 * Kernel log records lost unread (main.c) may have held the fork line, but nothing says they
 * did, and any local user can make such losses once a second. The kernel logs that line only
 * after add_vmfork_randomness() has mixed the new VM generation ID into its input pool and
 * reseeded its crng, and only once that crng is initialised: so when the line could have been
 * among the lost records, getrandom() already gives each clone bytes of its own. The
 * generator is rekeyed from 64 bytes of its own output (never served: the old state is gone
 * once they are taken) and 64 of getrandom's, so not one byte comes from the state every
 * clone may share, and output goes on without a stop. What the kernel's word cannot stand in
 * for is dropped as on a confirmed clone: the noise reservoir (full-entropy and
 * prediction-resistant replies wait for fresh blocks), the credit gathered so far and the
 * kernel feed's material; and a reseed from fresh source input is due at once, without
 * holding output back. A confirmed clone (pool_vm_cloned) still serves nothing until that
 * fresh reseed: a flood cannot forge the kernel's own line. */

static int rekey_from_kernel(struct pool *p)
{
    static const char label[] = "randd pool: rekeyed after kernel log records were lost";
    uint8_t material[POOL_ACCUMULATOR_BYTES], own[64], kernel[64];
    struct iovec parts[] = {
        { (void *)label, sizeof(label) },
        { own, sizeof(own) },
        { kernel, sizeof(kernel) },
    };
    int rc = -EIO;

    if (getrandom(kernel, sizeof(kernel), GRND_NONBLOCK) == (ssize_t)sizeof(kernel) &&
        engine_read(&p->secret->engine, own, sizeof(own)) == 0 &&
        condition(p, material, parts, sizeof(parts) / sizeof(parts[0])) == 0)
        rc = engine_seed(&p->secret->engine, material, sizeof(material));
    OPENSSL_cleanse(own, sizeof(own));
    OPENSSL_cleanse(kernel, sizeof(kernel));
    OPENSSL_cleanse(material, sizeof(material));
    return rc;
}

void pool_vm_maybe_cloned(struct pool *p, uint64_t now_ns)
{
    if (!pool_ready(p)) {            /* nothing is served now anyway: the strict path costs nothing */
        pool_vm_cloned(p, now_ns);
        return;
    }
    /* With require_noise_source (and so in mode = approved) the kernel's word alone never
     * keys the generator: a reseed from noise sources' fresh credit must come first. */
    if (p->require_noise_source) {
        pool_vm_cloned(p, now_ns);
        return;
    }
    if (rekey_from_kernel(p) < 0) {  /* getrandom refused or the engine failed: be strict */
        log_warning("rekeying from getrandom after lost kernel log records failed: waiting "
                    "for fresh input as after a VM clone");
        pool_vm_cloned(p, now_ns);
        return;
    }
    p->vm_generations++;
    p->vm_rekeys++;
    noise_drop(&p->noise);           /* blocks a clone may hold too */
    p->credit = 0;
    p->noise_credit = 0;
    p->kernel_credit = 0;
    p->fresh_reseed_due = true;
    for (size_t i = 0; i < p->nsources; i++)
        source_discard(p->sources[i]);
    pool_harvest(p, now_ns);         /* publishes the rekey: serving loops reseed from it */
}

int pool_generate(struct pool *p, void *out, size_t n, uint64_t now_ns)
{
    int rc;

    check_clock_jump(p);
    if (p->must_reseed || p->bytes_since_reseed >= p->reseed_bytes ||
        engine_reseed_due(&p->secret->engine))
        pool_harvest(p, now_ns);
    if (!pool_ready(p))
        return -EAGAIN;
    rc = engine_read(&p->secret->engine, out, n);
    if (rc == -ESTALE) {             /* the DRBG's reseed interval: never served past */
        must_reseed(p, "the DRBG's reseed interval is used up: waiting to reseed");
        pool_harvest(p, now_ns);
        if (!pool_ready(p)) {
            publish(p);
            return -EAGAIN;
        }
        rc = engine_read(&p->secret->engine, out, n);
    }
    if (rc < 0) {
        log_err("generator failed (%s): output stays off until reseeded", strerror(-rc));
        p->seeded = false;
        publish(p);
        return rc;
    }
    pool_note_output(p, n);
    return 0;
}

void pool_copy_accumulator(const struct pool *p, uint8_t out[POOL_ACCUMULATOR_BYTES])
{
    memcpy(out, p->secret->acc, POOL_ACCUMULATOR_BYTES);
}

void pool_note_output(struct pool *p, uint64_t n)
{
    p->bytes_since_reseed += n;
    p->bytes_served += n;
}

int pool_fill(void *pool, void *buf, size_t n)
{
    struct pool *p = pool;
    int rc = engine_read(&p->secret->engine, buf, n);

    if (rc == 0)
        pool_note_output(p, n);
    return rc;
}

int pool_add_entropy(struct pool *p, const void *data, size_t len, unsigned bits,
                     uint64_t now_ns)
{
    int rc = absorb(p, p->secret->acc, "client", data, len, now_ns);

    if (rc == 0)
        p->credit += bits;
    return rc;
}

unsigned pool_take_kernel_material(struct pool *p, uint8_t out[POOL_KERNEL_BYTES],
                                   uint64_t now_ns)
{
    unsigned bits;

    if (p->halted[0])
        return 0;
    p->kernel_wanted = POOL_KERNEL_BYTES * 8;
    if (p->kernel_credit < p->kernel_wanted)
        pool_harvest(p, now_ns);
    if (p->kernel_credit < p->kernel_wanted && kernel_material_coming(p))
        return 0;                    /* the request stands; pool_kernel_pending says so */
    p->kernel_wanted = 0;
    update_demand(p, now_ns);
    if (p->kernel_credit < 1)
        return 0;
    bits = p->kernel_credit > POOL_KERNEL_BYTES * 8 ? POOL_KERNEL_BYTES * 8
                                                    : (unsigned)p->kernel_credit;
    memcpy(out, p->secret->kernel_acc, POOL_KERNEL_BYTES);
    OPENSSL_cleanse(p->secret->kernel_acc, sizeof(p->secret->kernel_acc));
    p->kernel_credit = 0;
    return bits;
}

bool pool_kernel_pending(const struct pool *p)
{
    return p->kernel_wanted > 0 && p->kernel_credit < p->kernel_wanted;
}

bool pool_kernel_material_ready(const struct pool *p)
{
    return p->kernel_wanted > 0 && p->kernel_credit >= p->kernel_wanted;
}

/* --- the noise reservoir --------------------------------------------------------------- */

/* Appends one source's state and reason to why (used bytes so far). One that does not fit is
 * cut and ends in the mark, never mid-word without it; false once cut (nothing more fits). */
static bool append_reason(char *why, size_t whylen, size_t *used, bool first,
                          const char *name, const char *state, const char *reason)
{
    static const char mark[] = "\xe2\x80\xa6";       /* … in UTF-8 */
    int w = snprintf(why + *used, whylen - *used, "%s%s %s: %s", first ? "" : "; ", name,
                     state, reason);

    if (w >= 0 && (size_t)w < whylen - *used) {
        *used += (size_t)w;
        return true;
    }
    if (whylen >= sizeof(mark))
        memcpy(why + whylen - sizeof(mark), mark, sizeof(mark));
    *used = whylen - 1;
    return false;
}

void pool_noise_recheck(struct pool *p)
{
    drop_noise_after_failures(p);
}

static bool noise_source_able(const struct source *s)
{
    return s->noise && (source_state(s) == RANDD_SOURCE_HEALTHY ||
                        source_state(s) == RANDD_SOURCE_STARTUP);
}

bool pool_noise_able(const struct pool *p)
{
    for (size_t i = 0; i < p->nsources; i++)
        if (noise_source_able(p->sources[i]))
            return true;
    return false;
}

unsigned pool_noise_waiting(const struct pool *p)
{
    return p->noise.nwaiting;
}

uint64_t pool_noise_completed(const struct pool *p)
{
    return p->noise.stats.completed;
}

void pool_noise_unable_reason(const struct pool *p, char *why, size_t whylen)
{
    size_t used = 0;
    bool any = false, room = whylen > 0, cpu_named = strcmp(source_cpu_name(), "cpu") != 0;

    if (whylen > 0)
        why[0] = '\0';
    for (size_t i = 0; i < p->nsources; i++) {
        const struct source *s = p->sources[i];

        if (!s->noise)
            continue;
        if (room)
            room = append_reason(why, whylen, &used, !any, s->name,
                                 randd_source_state_name(source_state(s)), source_reason(s));
        any = true;
    }
    if (!any)
        snprintf(why, whylen, "no noise source is configured (%s%s%s hwrng or jitter; "
                 "getrandom is not one)", cpu_named ? "the CPU's " : "",
                 cpu_named ? source_cpu_name() : "", cpu_named ? "," : "");
}

bool pool_noise_wanted(const struct pool *p)
{
    return noise_wanted_blocks(&p->noise) > 0;
}
