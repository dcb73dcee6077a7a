/* The pool (daemon/pool.c) with scripted sources: quarantine and re-admission of the real
 * failure modes, no output before 256 credited bits, conditioning determinism, each
 * conditioning function's chain and credit, reseeding, the kernel's separate material, and
 * when getrandom's kind of source is all that is credited. */
#include <errno.h>
#include <string.h>
#include <stdlib.h>

#include <stdio.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "pool.h"
#include "crypto.h"
#include "cymric.h"
#include "drbg_direct.h"
#include "drbg_engine.h"
#include "entropy_conditioning.h"
#include "randen.h"
#include "runner.h"
#include "scripted_source.h"

#define S 1000000000ull     /* one second in ns */

static struct pool pool;
static struct scripted a, b, c;

static void setup(void)
{
    ck_assert_int_eq(pool_init(&pool, 60, 1u << 30), 0);
}

static void teardown(void)
{
    pool_fini(&pool);
}

static void add(struct scripted *s, const char *name, enum script_pattern pattern, uint64_t seed)
{
    scripted_init(s, name, pattern, seed, false);
    pool_add_source(&pool, &s->source);
}

/* As the server asks: the failures since the last look taken into account first, then
 * whether a noise source can serve, and why not. */
static bool noise_able_why(struct pool *p, char *why, size_t whylen)
{
    pool_noise_recheck(p);
    if (pool_noise_able(p))
        return true;
    pool_noise_unable_reason(p, why, whylen);
    return false;
}

START_TEST(good_source_passes_startup_and_seeds)
{
    uint8_t out[32];

    add(&a, "good", SCRIPT_RANDOM, 1);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 0), -EAGAIN);
    pool_harvest(&pool, 1 * S);
    ck_assert_str_eq(randd_source_state_name(a.source.health.state),
                     randd_source_state_name(RANDD_SOURCE_HEALTHY));
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 1 * S), 0);
    ck_assert_uint_eq(pool.reseeds, 1);
}
END_TEST

static void check_quarantined(enum script_pattern pattern, const char *what)
{
    uint8_t out[32];

    add(&a, what, pattern, 1);
    pool_harvest(&pool, 1 * S);
    ck_assert_msg(a.source.health.state == RANDD_SOURCE_QUARANTINED, "%s source is %s", what,
                  randd_source_state_name(a.source.health.state));
    ck_assert_uint_eq(a.source.bytes_used, 0);
    ck_assert(!pool_ready(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 1 * S), -EAGAIN);
}

START_TEST(startup_test_refuses_stuck_at_zero) { check_quarantined(SCRIPT_STUCK_ZERO, "zero"); }
END_TEST
START_TEST(startup_test_refuses_stuck_at_ones) { check_quarantined(SCRIPT_STUCK_ONES, "ones"); }
END_TEST
START_TEST(startup_test_refuses_short_cycle) { check_quarantined(SCRIPT_CYCLE3, "cycle"); }
END_TEST

START_TEST(source_without_data_never_seeds)
{
    add(&a, "empty", SCRIPT_EMPTY, 0);
    for (int i = 1; i <= 5; i++)
        pool_harvest(&pool, i * S);
    ck_assert(!pool.seeded);
    ck_assert_uint_ge(a.source.empty_reads, 5);
    ck_assert_str_eq(pool_not_ready_reason(&pool), "no healthy entropy source");
}
END_TEST

START_TEST(healthy_source_failing_at_runtime_is_quarantined_then_readmitted)
{
    uint8_t out[32];
    uint64_t t = 1 * S;

    add(&a, "flaky", SCRIPT_RANDOM, 7);
    pool_harvest(&pool, t);
    ck_assert(pool_ready(&pool));
    a.pattern = SCRIPT_STUCK_ZERO;                 /* the CPU generator breaks */
    pool_harvest(&pool, t += S);
    ck_assert(a.source.health.state == RANDD_SOURCE_QUARANTINED);
    ck_assert_uint_eq(a.source.health.failures, 1);
    ck_assert_msg(!pool_ready(&pool), "served with every source quarantined");
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), -EAGAIN);
    a.pattern = SCRIPT_RANDOM;                     /* recovers */
    pool_harvest(&pool, t + 1);                    /* back-off not over: still out */
    ck_assert(a.source.health.state == RANDD_SOURCE_QUARANTINED);
    pool_harvest(&pool, t += 400 * S);             /* past any back-off: fresh start-up test */
    ck_assert_str_eq(randd_source_state_name(a.source.health.state),
                     randd_source_state_name(RANDD_SOURCE_HEALTHY));
    ck_assert(pool_ready(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), 0);
}
END_TEST

START_TEST(one_bad_source_does_not_stop_a_good_one)
{
    add(&a, "good", SCRIPT_RANDOM, 3);
    add(&b, "stuck", SCRIPT_STUCK_ONES, 0);
    pool_harvest(&pool, 1 * S);
    ck_assert(b.source.health.state == RANDD_SOURCE_QUARANTINED);
    ck_assert(pool_ready(&pool));
    ck_assert_uint_eq(b.source.bytes_used, 0);
}
END_TEST

/* vmgenid said the VM was cloned: credit gathered before is every clone's, so it is
 * dropped, and output waits for a reseed from what the sources give from now on. */
START_TEST(a_vm_clone_reseeds_from_fresh_input_before_output)
{
    uint8_t out[32];

    add(&a, "good", SCRIPT_RANDOM, 5);
    pool_harvest(&pool, 1 * S);
    ck_assert(pool_ready(&pool));
    a.pattern = SCRIPT_EMPTY;               /* nothing fresh yet */
    pool_vm_cloned(&pool, 2 * S);
    ck_assert_uint_eq(pool.vm_generations, 1);
    ck_assert_double_eq(pool.credit, 0);
    ck_assert(!pool_ready(&pool));
    ck_assert_str_eq(pool_not_ready_reason(&pool),
                     "new VM generation (snapshot restored or cloned): waiting to reseed");
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 2 * S), -EAGAIN);
    a.pattern = SCRIPT_RANDOM;              /* fresh input: reseeded at once */
    pool_vm_cloned(&pool, 3 * S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_uint_eq(pool.reseeds, 2);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 3 * S), 0);
}
END_TEST

/* Kernel log records lost unread (a possible VM fork, which any local user can cause): the
 * generator is rekeyed at once and serves on, with no fresh input at all, and not one byte
 * of what it serves comes from the state before. Two twins stand for two clones of one VM:
 * the twin left alone goes on from the shared state, and no 16-byte piece of the rekeyed
 * pool's output is found in a megabyte of it; a second twin rekeyed too diverges (getrandom
 * is each clone's own). What getrandom cannot replace waits for fresh input as on a clone:
 * the credit is dropped and a reseed from fresh input is due, taken once input comes. */
START_TEST(a_possible_vm_fork_rekeys_at_once_and_serves_nothing_of_the_old_state)
{
    enum { PIECE = 16, AFTER = 1024, STALE = 1u << 20 };
    struct pool twin, clone;
    struct scripted ta, tc;
    uint8_t x[32], y[32], after[AFTER], other[AFTER];
    uint8_t *stale = malloc(STALE);

    ck_assert_ptr_nonnull(stale);
    add(&a, "good", SCRIPT_RANDOM, 31);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);
    ck_assert_int_eq(pool_init(&clone, 60, 1u << 30), 0);
    scripted_init(&ta, "good", SCRIPT_RANDOM, 31, false);
    scripted_init(&tc, "good", SCRIPT_RANDOM, 31, false);
    pool_add_source(&twin, &ta.source);
    pool_add_source(&clone, &tc.source);
    pool_harvest(&pool, 1 * S);
    pool_harvest(&twin, 1 * S);
    pool_harvest(&clone, 1 * S);
    ck_assert_int_eq(pool_generate(&pool, x, sizeof(x), 1 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, sizeof(y), 1 * S), 0);
    ck_assert_int_eq(pool_generate(&clone, stale, sizeof(y), 1 * S), 0);
    ck_assert_mem_eq(x, y, sizeof(x));                  /* one state, as clones have */

    a.pattern = SCRIPT_EMPTY;                           /* nothing fresh: no stop anyway */
    tc.pattern = SCRIPT_EMPTY;
    pool_vm_maybe_cloned(&pool, 2 * S);
    pool_vm_maybe_cloned(&clone, 2 * S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_uint_eq(pool.vm_generations, 1);
    ck_assert_uint_eq(pool.vm_rekeys, 1);
    ck_assert_double_eq(pool.credit, 0);
    ck_assert_int_eq(pool_generate(&pool, after, sizeof(after), 2 * S), 0);
    ck_assert_int_eq(pool_generate(&clone, other, sizeof(other), 2 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, stale, STALE, 2 * S), 0);
    for (size_t i = 0; i < AFTER; i += PIECE)
        ck_assert_msg(!memmem(stale, STALE, after + i, PIECE),
                      "bytes %zu-%zu after the rekey are the old state's output", i,
                      i + PIECE - 1);
    ck_assert_msg(memcmp(after, other, sizeof(after)) != 0,
                  "two clones rekeyed after the same loss serve the same bytes");

    ck_assert_uint_eq(pool.reseeds, 1);
    a.pattern = SCRIPT_RANDOM;                          /* fresh input: reseeded at once, */
    pool_harvest(&pool, 3 * S);                         /* not reseed_interval (60 s) later */
    ck_assert_uint_eq(pool.reseeds, 2);
    ck_assert(!pool.fresh_reseed_due);
    free(stale);
    pool_fini(&twin);
    pool_fini(&clone);
}
END_TEST

/* A failed self-test halts the pool: no output and no kernel material, however much is
 * harvested, and the reason says why; after a resume, output waits for a reseed from input
 * harvested since. */
START_TEST(a_halted_pool_gives_nothing_until_resumed_and_reseeded)
{
    uint8_t out[32], kernel[POOL_KERNEL_BYTES];

    scripted_init(&a, "good", SCRIPT_RANDOM, 9, true);
    pool_add_source(&pool, &a.source);
    pool_harvest(&pool, 1 * S);
    ck_assert(pool_ready(&pool));
    pool_halt(&pool, "self-test failed: BLAKE2b-512 known answer (RFC 7693) does not match");
    ck_assert(!pool_ready(&pool));
    ck_assert_str_eq(pool_not_ready_reason(&pool),
                     "self-test failed: BLAKE2b-512 known answer (RFC 7693) does not match");
    for (int i = 2; i < 6; i++)
        pool_harvest(&pool, (uint64_t)i * 100 * S);       /* reseeds due, credit enough */
    ck_assert_uint_eq(pool.reseeds, 1);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 600 * S), -EAGAIN);
    ck_assert_uint_eq(pool_take_kernel_material(&pool, kernel, 600 * S), 0);
    pool_resume(&pool);
    ck_assert_double_eq(pool.credit, 0);
    ck_assert_msg(!pool_ready(&pool), "ready at once after a resume: no reseed since");
    pool_harvest(&pool, 700 * S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_uint_eq(pool.reseeds, 2);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 700 * S), 0);
}
END_TEST

START_TEST(no_output_before_256_credited_bits)
{
    uint8_t out[8];
    int harvests = 0;

    add(&a, "weak", SCRIPT_RANDOM, 5);
    a.source.entropy_per_byte = 0.0625;     /* a 512-byte batch credits 32 bits */
    while (!pool.seeded && harvests < 100) {
        ck_assert_msg(pool.credit < POOL_SEED_BITS, "%.1f bits credited, still unseeded",
                      pool.credit);
        ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 0), -EAGAIN);
        pool_harvest(&pool, (uint64_t)++harvests * S);
    }
    /* Eight batches of 32 bits; the first harvest also carries the start-up test. */
    ck_assert_int_eq(harvests, 8);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 12 * S), 0);
}
END_TEST

/* mode = approved (SP 800-90C): a seed that instantiates the pool's DRBG waits for 3s/2 = 384
 * bits and a margin of 64 (pool.h), 448 credited; a reseed of the instantiated DRBG for s =
 * 256; after a halt (a failed self-test) the DRBG is wiped and waits for 448 again. Batches of
 * 32 bits: 14 before the first seed (the first harvest also carries the start-up test), 8 for
 * the reseed. */
START_TEST(an_approved_drbg_is_instantiated_from_448_bits_and_reseeded_from_256)
{
    uint8_t out[8];
    uint64_t reseeds;
    int harvests = 0;

    ck_assert_int_eq(pool_use_engine(&pool, RANDD_ENGINE_HASH_DRBG), 0);
    pool_instantiate_at_three_halves(&pool, true);
    ck_assert_uint_eq(pool_seed_bits_needed(&pool), POOL_INSTANTIATE_BITS);
    add(&a, "weak", SCRIPT_RANDOM, 5);
    a.source.entropy_per_byte = 0.0625;     /* a 512-byte batch credits 32 bits */
    while (!pool.seeded && harvests < 100) {
        ck_assert_msg(pool.credit < POOL_INSTANTIATE_BITS, "%.1f bits credited, still unseeded",
                      pool.credit);
        ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 0), -EAGAIN);
        ck_assert_msg(harvests == 0 || strstr(pool_not_ready_reason(&pool), "448 bits"),
                      "not ready: %s", pool_not_ready_reason(&pool));
        pool_harvest(&pool, (uint64_t)++harvests * S);
    }
    ck_assert_int_eq(harvests, 14);
    ck_assert_double_ge(pool.last_seed.h_in, POOL_INSTANTIATE_BITS);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 12 * S), 0);
    ck_assert_uint_eq(pool_seed_bits_needed(&pool), POOL_SEED_BITS);
    reseeds = pool.reseeds;
    for (int i = 1; i <= 8; i++)            /* past reseed_interval (60 s): a reseed is due */
        pool_harvest(&pool, (uint64_t)(100 + i) * S);
    ck_assert_uint_eq(pool.reseeds, reseeds + 1);
    ck_assert_double_eq_tol(pool.last_seed.h_in, POOL_SEED_BITS, 0.5);
    pool_halt(&pool, "self-test failed: test");
    pool_resume(&pool);
    ck_assert_uint_eq(pool_seed_bits_needed(&pool), POOL_INSTANTIATE_BITS);
    for (int i = 1; i <= 20 && !pool_ready(&pool); i++)
        pool_harvest(&pool, (uint64_t)(150 + i) * S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    /* A clone too: 256 fresh bits (what a reseed takes) serve nothing; 448 do. */
    ck_assert_uint_eq(pool_seed_bits_needed(&pool), POOL_SEED_BITS);
    pool_vm_cloned(&pool, 200 * S);
    ck_assert_uint_eq(pool_seed_bits_needed(&pool), POOL_INSTANTIATE_BITS);
    for (int i = 1; i <= 9; i++)             /* the first batch after a clone is discarded */
        pool_harvest(&pool, (uint64_t)(200 + i) * S);
    ck_assert_msg(pool.noise_credit + pool.credit >= POOL_SEED_BITS, "%.0f credited",
                  pool.credit);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 210 * S), -EAGAIN);
    for (int i = 10; i <= 20 && !pool_ready(&pool); i++)
        pool_harvest(&pool, (uint64_t)(200 + i) * S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_double_ge(pool.last_seed.h_in, POOL_INSTANTIATE_BITS);
}
END_TEST

/* Backtracking: one who reads the pool's memory just after a seed (the accumulator, here its
 * copy) must not rebuild the generator that seed made, nor what it served. The first seed is
 * the easy case for them: the generator it keyed started from a known state (all zeros), so
 * the seed alone gives its output; a reseed's state also takes the erased one before it. */
START_TEST(the_accumulator_left_after_a_seed_does_not_give_back_what_was_served)
{
    uint8_t served[64], acc[RANDD_BLAKE2B_BYTES], rebuilt[sizeof(served)];
    struct randd_cymric attacker;
    int harvests = 0;

    add(&a, "good", SCRIPT_RANDOM, 21);
    while (!pool.seeded && harvests < 100)
        pool_harvest(&pool, (uint64_t)++harvests * S);
    ck_assert(pool.seeded);
    ck_assert_int_eq(pool_generate(&pool, served, sizeof(served), (uint64_t)harvests * S), 0);
    pool_copy_accumulator(&pool, acc);

    /* The attacker's generator, as the pool's was before its first seed, keyed by what they
     * found, with the pool's cipher. */
    ck_assert_int_eq(randd_cymric_init(&attacker, RANDD_CYMRIC_DETERMINISTIC), 0);
    ck_assert_int_eq(randd_cymric_use_stream(&attacker, pool_cipher(&pool)), 0);
    ck_assert_int_eq(randd_cymric_seed(&attacker, acc, sizeof(acc)), 0);
    ck_assert_int_eq(randd_cymric_generate(&attacker, rebuilt, sizeof(rebuilt), NULL, 0), 0);
    ck_assert_msg(memcmp(rebuilt, served, sizeof(served)) != 0,
                  "the accumulator left after the seed rebuilt the output served from it");
    randd_cymric_fini(&attacker);
    OPENSSL_cleanse(acc, sizeof(acc));
}
END_TEST

/* Same raw input at the same times: same first output; other input: other output. */
START_TEST(conditioning_is_deterministic_for_the_same_input)
{
    struct pool twin, other;
    struct scripted ta, tb;
    uint8_t x[32], y[32], z[32];

    add(&a, "good", SCRIPT_RANDOM, 11);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);
    ck_assert_int_eq(pool_init(&other, 60, 1u << 30), 0);
    scripted_init(&ta, "good", SCRIPT_RANDOM, 11, false);
    scripted_init(&tb, "good", SCRIPT_RANDOM, 12, false);
    pool_add_source(&twin, &ta.source);
    pool_add_source(&other, &tb.source);
    pool_harvest(&pool, 5 * S);
    pool_harvest(&twin, 5 * S);
    pool_harvest(&other, 5 * S);
    ck_assert_int_eq(pool_generate(&pool, x, 32, 5 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, 32, 5 * S), 0);
    ck_assert_int_eq(pool_generate(&other, z, 32, 5 * S), 0);
    ck_assert_mem_eq(x, y, 32);
    ck_assert_msg(memcmp(x, z, 32) != 0, "different raw input, same output");
    pool_fini(&twin);
    pool_fini(&other);
}
END_TEST

/* --- the conditioning function: BLAKE2b-512 by default, SHA-512 when chosen --------------- */

/* H(parts), computed as the pool should, but by OpenSSL's one-shot EVP_Digest over the parts
 * laid end to end: nothing of lib/crypto.c. */
static void digest_of(const EVP_MD *md, uint8_t out[64], const struct iovec *parts,
                      size_t nparts)
{
    uint8_t joined[1024];
    size_t len = 0;
    unsigned outlen = 0;

    for (size_t i = 0; i < nparts; i++) {
        ck_assert_uint_le(len + parts[i].iov_len, sizeof(joined));
        memcpy(joined + len, parts[i].iov_base, parts[i].iov_len);
        len += parts[i].iov_len;
    }
    ck_assert_int_eq(EVP_Digest(joined, len, out, &outlen, md, NULL), 1);
    ck_assert_uint_eq(outlen, 64);
}

/* The 512 bytes a scripted source's first used batch held: its splitmix64 words after the
 * ones its start-up test read and threw away. */
static void first_used_batch(const struct scripted *s, uint64_t seed, uint8_t raw[512])
{
    uint64_t state = seed, skipped = (s->source.bytes_read - s->source.bytes_used) / 8;

    ck_assert_uint_eq(s->source.bytes_used, 512);
    for (uint64_t i = 0; i < skipped; i++)
        splitmix64(&state);
    for (int i = 0; i < 64; i++) {
        uint64_t w = splitmix64(&state);

        memcpy(raw + 8 * i, &w, 8);
    }
}

/* Known raw bytes through the pool: a source's batch at a known time, then the step after
 * the seed it made, then ADD_ENTROPY's bytes. The accumulator after each is md's chain over
 * the same parts: acc = H(acc || time || name || raw), acc = H(acc || label). */
static void check_accumulator_chain(const EVP_MD *md, const char *function)
{
    static const char label[] = "randd pool: the accumulator after a seed";
    static const uint8_t client[] = "forty bytes a client says are random...";
    const uint64_t seed = 71, t1 = 5 * S, t2 = 6 * S;
    uint8_t raw[512], want[64], got[64];

    ck_assert_str_eq(pool_conditioning_name(&pool), function);
    add(&a, "good", SCRIPT_RANDOM, seed);
    pool_copy_accumulator(&pool, want);              /* where the chain starts */
    pool_harvest(&pool, t1);
    ck_assert_msg(pool.seeded, "not seeded: %s", pool_not_ready_reason(&pool));
    first_used_batch(&a, seed, raw);
    {
        struct iovec parts[] = {
            { want, 64 }, { (void *)&t1, 8 }, { "good", 5 }, { raw, sizeof(raw) },
        };
        digest_of(md, want, parts, 4);
    }
    {
        struct iovec parts[] = { { want, 64 }, { (void *)label, sizeof(label) } };
        digest_of(md, want, parts, 2);
    }
    pool_copy_accumulator(&pool, got);
    ck_assert_msg(memcmp(got, want, 64) == 0, "%s: the accumulator after the first seed is "
                  "not %s(%s(0 || time || name || raw) || label)", function, function, function);

    ck_assert_int_eq(pool_add_entropy(&pool, client, sizeof(client), 8, t2), 0);
    {
        struct iovec parts[] = {
            { want, 64 }, { (void *)&t2, 8 }, { "client", 7 }, { (void *)client, sizeof(client) },
        };
        digest_of(md, want, parts, 4);
    }
    pool_copy_accumulator(&pool, got);
    ck_assert_msg(memcmp(got, want, 64) == 0, "%s: ADD_ENTROPY's bytes did not go through %s",
                  function, function);
    OPENSSL_cleanse(got, sizeof(got));
    OPENSSL_cleanse(want, sizeof(want));
}

START_TEST(the_accumulator_is_a_blake2b512_chain_by_default)
{
    check_accumulator_chain(EVP_blake2b512(), "BLAKE2b-512");
}
END_TEST

START_TEST(the_accumulator_is_a_sha512_chain_once_sha512_is_chosen)
{
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_SHA512), 0);
    check_accumulator_chain(EVP_sha512(), "SHA-512");
}
END_TEST

/* The kernel feed's accumulator runs the chosen function too: its first top-up is
 * SHA-512(0 || time || name || raw) of the batch it took. */
START_TEST(the_kernel_material_is_sha512_once_sha512_is_chosen)
{
    const uint64_t seed = 73, t = 5 * S;
    uint8_t raw[512], zero[64] = { 0 }, want[64], got[POOL_KERNEL_BYTES];

    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_SHA512), 0);
    scripted_init(&a, "kernel-like", SCRIPT_RANDOM, seed, true);
    pool_add_source(&pool, &a.source);
    ck_assert_uint_eq(pool_take_kernel_material(&pool, got, t), 8 * POOL_KERNEL_BYTES);
    first_used_batch(&a, seed, raw);
    {
        struct iovec parts[] = {
            { zero, 64 }, { (void *)&t, 8 }, { "kernel-like", 12 }, { raw, sizeof(raw) },
        };
        digest_of(EVP_sha512(), want, parts, 4);
    }
    ck_assert_msg(memcmp(got, want, POOL_KERNEL_BYTES) == 0,
                  "the kernel's material is not SHA-512(0 || time || name || raw)");
}
END_TEST

/* The seed's h_out: SP 800-90B 3.1.5.1.2's Output_Entropy for SHA-512 (vetted), 3.1.5.2's
 * capped figure for BLAKE2b-512, from the same n_in and h_in; the vetted one is higher. */
START_TEST(a_sha512_seed_is_credited_the_vetted_h_out)
{
    struct pool twin;
    struct scripted ta;
    struct randd_ea_conditioning vetted, non_vetted;

    ck_assert(!pool_conditioning_vetted(&pool));
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_SHA512), 0);
    ck_assert(pool_conditioning_vetted(&pool));
    add(&a, "good", SCRIPT_RANDOM, 81);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);         /* BLAKE2b-512 */
    scripted_init(&ta, "good", SCRIPT_RANDOM, 81, false);
    pool_add_source(&twin, &ta.source);
    pool_harvest(&pool, 5 * S);
    pool_harvest(&twin, 5 * S);
    ck_assert(pool.seeded && twin.seeded);
    ck_assert_uint_eq(pool.last_seed.n_in, twin.last_seed.n_in);
    ck_assert_double_eq(pool.last_seed.h_in, twin.last_seed.h_in);

    ck_assert_int_eq(randd_ea_conditioning(true, (unsigned)pool.last_seed.n_in,
                                           POOL_CONDITIONED_BITS, POOL_CONDITIONING_NW,
                                           pool.last_seed.h_in, 0, &vetted), 0);
    ck_assert_int_eq(randd_ea_conditioning(false, (unsigned)pool.last_seed.n_in,
                                           POOL_CONDITIONED_BITS, POOL_CONDITIONING_NW,
                                           pool.last_seed.h_in, POOL_CONDITIONING_H_PRIME,
                                           &non_vetted), 0);
    ck_assert_msg(pool.last_seed.h_out == (double)vetted.h_out,
                  "SHA-512 seed: h_out %.3f, the vetted figure is %.3f", pool.last_seed.h_out,
                  (double)vetted.h_out);
    ck_assert_msg(twin.last_seed.h_out == (double)non_vetted.h_out,
                  "BLAKE2b-512 seed: h_out %.3f, the non-vetted figure is %.3f",
                  twin.last_seed.h_out, (double)non_vetted.h_out);
    ck_assert_msg(pool.last_seed.h_out > twin.last_seed.h_out + 30,
                  "vetted h_out %.1f is not above the non-vetted %.1f (h' caps it at %.1f)",
                  pool.last_seed.h_out, twin.last_seed.h_out,
                  POOL_CONDITIONING_H_PRIME * POOL_CONDITIONED_BITS);
    pool_fini(&twin);
}
END_TEST

/* Chosen before the first seed, any number of times (credit gathered through the other
 * function is forgotten); refused once seeded, and kept. */
START_TEST(conditioning_is_chosen_before_the_first_seed_only)
{
    ck_assert_str_eq(pool_conditioning_name(&pool), "BLAKE2b-512");
    ck_assert_int_eq(pool_add_entropy(&pool, "through BLAKE2b", 15, 64, 1 * S), 0);
    ck_assert_double_eq(pool.credit, 64);
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_BLAKE2B512), 0);
    ck_assert_double_eq(pool.credit, 64);                   /* the same function: kept */
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_SHA512), 0);
    ck_assert_msg(pool.credit == 0, "%.0f bits credited through BLAKE2b-512 kept after "
                  "choosing SHA-512", pool.credit);
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_BLAKE2B512), 0);
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_SHA512), 0);
    ck_assert_int_eq(pool_use_conditioning(&pool, (enum pool_conditioning_function)7), -EINVAL);
    ck_assert_str_eq(pool_conditioning_name(&pool), "SHA-512");
    add(&a, "good", SCRIPT_RANDOM, 91);
    pool_harvest(&pool, 5 * S);
    ck_assert(pool.seeded);
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_BLAKE2B512), -EBUSY);
    ck_assert_int_eq(pool_use_conditioning(&pool, POOL_CONDITIONING_SHA512), -EBUSY);
    ck_assert_str_eq(pool_conditioning_name(&pool), "SHA-512");
    ck_assert(pool_conditioning_vetted(&pool));
}
END_TEST

/* cipher: chosen before the first seed, kept through reseeds, and handed to every Cymric the
 * pool creates; AES-256-CTR and ChaCha20 from the same seed give different bytes. */
START_TEST(cipher_is_chosen_before_seeding_and_kept_through_reseeds)
{
    struct pool twin;
    struct scripted ta;
    struct randd_cymric g;
    uint8_t x[100], y[100];

    ck_assert_str_eq(pool_cipher_name(&pool), "chacha20");
    if (!randd_crypto_has_hardware_aes()) {
        fprintf(stderr, "SKIP: %s: no hardware AES\n", __func__);
        ck_assert_int_eq(pool_use_cipher(&pool, RANDD_STREAM_AES256CTR), -ENOTSUP);
        return;
    }
    ck_assert_int_eq(pool_use_cipher(&pool, RANDD_STREAM_AES256CTR), 0);
    ck_assert_str_eq(pool_cipher_name(&pool), "aes256ctr");
    add(&a, "good", SCRIPT_RANDOM, 61);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);
    scripted_init(&ta, "good", SCRIPT_RANDOM, 61, false);
    pool_add_source(&twin, &ta.source);
    pool_harvest(&pool, 5 * S);
    pool_harvest(&twin, 5 * S);
    ck_assert_int_eq(pool_generate(&pool, x, sizeof(x), 5 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, sizeof(y), 5 * S), 0);
    ck_assert_msg(memcmp(x, y, sizeof(x)) != 0, "AES-256-CTR and ChaCha20 gave the same bytes");
    ck_assert_int_eq(pool_use_cipher(&pool, RANDD_STREAM_CHACHA20), -EBUSY);
    pool_harvest(&pool, 70 * S);                   /* interval over: a reseed */
    ck_assert_uint_eq(pool.reseeds, 2);
    ck_assert_str_eq(pool_cipher_name(&pool), "aes256ctr");
    ck_assert_int_eq(pool_cymric_init(&pool, &g), 0);
    ck_assert_int_eq(randd_cymric_stream(&g), RANDD_STREAM_AES256CTR);
    randd_cymric_fini(&g);
    ck_assert_int_eq(pool_cymric_init(&twin, &g), 0);
    ck_assert_int_eq(randd_cymric_stream(&g), RANDD_STREAM_CHACHA20);
    randd_cymric_fini(&g);
    pool_fini(&twin);
}
END_TEST

/* Without an AES round (hidden here, so every machine runs it) Randen is refused and the pool
 * keeps Cymric. */
START_TEST(randen_engine_is_refused_without_an_aes_round)
{
    randd_randen_hide_cpu_aes(true);
    ck_assert_int_eq(pool_use_engine(&pool, RANDD_ENGINE_RANDEN), -ENOTSUP);
    ck_assert_str_eq(pool_engine_name(&pool), "cymric");
    randd_randen_hide_cpu_aes(false);
}
END_TEST

/* engine = randen: the same seeding policy feeds Randen; same input, same output; Cymric from
 * the same input gives other bytes; the engine cannot change once seeded. */
START_TEST(randen_engine_is_seeded_like_cymric)
{
    struct pool twin, cymric;
    struct scripted ta, tc;
    uint8_t x[100], y[100], z[100];

    if (!randd_randen_available()) {
        fprintf(stderr, "SKIP: randen_engine_is_seeded_like_cymric: no AES round "
                "instructions\n");
        return;
    }
    ck_assert_int_eq(pool_use_engine(&pool, RANDD_ENGINE_RANDEN), 0);
    ck_assert_str_eq(pool_engine_name(&pool), "randen");
    add(&a, "good", SCRIPT_RANDOM, 61);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);
    ck_assert_int_eq(pool_init(&cymric, 60, 1u << 30), 0);
    ck_assert_int_eq(pool_use_engine(&twin, RANDD_ENGINE_RANDEN), 0);
    scripted_init(&ta, "good", SCRIPT_RANDOM, 61, false);
    scripted_init(&tc, "good", SCRIPT_RANDOM, 61, false);
    pool_add_source(&twin, &ta.source);
    pool_add_source(&cymric, &tc.source);
    ck_assert_int_eq(pool_generate(&pool, x, sizeof(x), 1 * S), -EAGAIN);   /* not seeded */
    pool_harvest(&pool, 5 * S);
    pool_harvest(&twin, 5 * S);
    pool_harvest(&cymric, 5 * S);
    ck_assert_int_eq(pool_generate(&pool, x, sizeof(x), 5 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, sizeof(y), 5 * S), 0);
    ck_assert_int_eq(pool_generate(&cymric, z, sizeof(z), 5 * S), 0);
    ck_assert_mem_eq(x, y, sizeof(x));
    ck_assert_msg(memcmp(x, z, sizeof(x)) != 0, "randen and cymric gave the same bytes");
    ck_assert_int_eq(pool_use_engine(&pool, RANDD_ENGINE_CYMRIC), -EBUSY);
    pool_harvest(&twin, 70 * S);                   /* interval over: twin reseeds */
    ck_assert_uint_eq(twin.reseeds, 2);
    ck_assert_int_eq(pool_generate(&pool, x, sizeof(x), 70 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, sizeof(y), 70 * S), 0);
    ck_assert_msg(memcmp(x, y, sizeof(x)) != 0, "reseed did not change randen's output");
    pool_fini(&twin);
    pool_fini(&cymric);
}
END_TEST

/* --- engine = ctr_drbg, hash_drbg (daemon/drbg_engine.c) -------------------------------- */

static bool ctr_drbg_runs_here(const char *test)
{
    if (randd_crypto_has_hardware_aes())
        return true;
    fprintf(stderr, "SKIP: %s: CTR_DRBG: this CPU does not do AES in hardware\n", test);
    return false;
}

static void fill_pattern(uint8_t *buf, size_t n, uint8_t start)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(start + 7 * i);
}

/* Given fixed seed material, the engine is OpenSSL's EVP_RAND DRBG driven directly with
 * entropy input = material[0..48), nonce = material[48..64) and personalisation "randd
 * pool", byte for byte: at 32 B, at 4 KiB, at 200,000 bytes (four generates of at most
 * 65536; EVP_RAND splits a long request the same way), and after a reseed whose entropy input
 * is all 64 bytes of new material. Both DRBG engines. */
static void check_engine_against_evp_rand(enum randd_engine engine)
{
    static uint8_t got[200000], want[200000];
    static const size_t lengths[] = { 32, 4096, sizeof(got), 1 };
    struct drbg_engine e;
    struct drbg_direct x;
    uint8_t material[DRBG_ENGINE_SEED_BYTES];

    ck_assert_int_eq(drbg_engine_init(&e, engine, "pool"), 0);
    ck_assert_uint_eq(e.max_request, 65536);
    fill_pattern(material, sizeof(material), 3);
    ck_assert_int_eq(drbg_engine_seed(&e, material, sizeof(material)), 0);
    drbg_direct_instantiate(&x, engine == RANDD_ENGINE_CTR_DRBG, material, 48, material + 48,
                            16, "randd pool");
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
            ck_assert_int_eq(drbg_engine_read(&e, got, lengths[i]), 0);
            drbg_direct_generate(&x, want, lengths[i]);
            ck_assert_msg(memcmp(got, want, lengths[i]) == 0, "%s, round %d: %zu bytes differ "
                          "from EVP_RAND's", randd_engine_name(engine), round, lengths[i]);
        }
        fill_pattern(material, sizeof(material), 101);    /* a pool reseed's new material */
        ck_assert_int_eq(drbg_engine_seed(&e, material, sizeof(material)), 0);
        drbg_direct_reseed(&x, material, sizeof(material));
    }
    ck_assert_uint_eq(drbg_engine_requests(&e), 0);        /* the last step was a reseed */
    drbg_engine_fini(&e);
    drbg_direct_free(&x);
}

START_TEST(ctr_drbg_engine_matches_evp_rand_given_the_same_seed_material)
{
    if (ctr_drbg_runs_here("ctr_drbg_engine_matches_evp_rand_given_the_same_seed_material"))
        check_engine_against_evp_rand(RANDD_ENGINE_CTR_DRBG);
}
END_TEST

START_TEST(hash_drbg_engine_matches_evp_rand_given_the_same_seed_material)
{
    check_engine_against_evp_rand(RANDD_ENGINE_HASH_DRBG);
}
END_TEST

/* engine = ctr_drbg (hash_drbg where the CPU lacks AES) in the pool: same input, same
 * output; Cymric from the same input gives other bytes; a reseed changes the stream; a read
 * of 200,000 bytes is the same bytes as reads of 65536 at a time (one generate each); the
 * engine cannot change once seeded. */
START_TEST(a_drbg_engine_serves_reseeds_and_splits_long_reads)
{
    enum randd_engine engine = randd_crypto_has_hardware_aes() ? RANDD_ENGINE_CTR_DRBG
                                                               : RANDD_ENGINE_HASH_DRBG;
    static uint8_t x[200000], y[200000];
    struct pool twin, cymric;
    struct scripted ta, tc;
    uint8_t z[100];

    ck_assert_int_eq(pool_use_engine(&pool, engine), 0);
    ck_assert_str_eq(pool_engine_name(&pool), randd_engine_name(engine));
    ck_assert_str_eq(pool_engine_mechanism(&pool), engine == RANDD_ENGINE_CTR_DRBG
                                                       ? "CTR_DRBG AES-256 (df)"
                                                       : "Hash_DRBG SHA-512");
    add(&a, "good", SCRIPT_RANDOM, 71);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);
    ck_assert_int_eq(pool_init(&cymric, 60, 1u << 30), 0);
    ck_assert_int_eq(pool_use_engine(&twin, engine), 0);
    scripted_init(&ta, "good", SCRIPT_RANDOM, 71, false);
    scripted_init(&tc, "good", SCRIPT_RANDOM, 71, false);
    pool_add_source(&twin, &ta.source);
    pool_add_source(&cymric, &tc.source);
    ck_assert_int_eq(pool_generate(&pool, x, 100, 1 * S), -EAGAIN);       /* not seeded */
    pool_harvest(&pool, 5 * S);
    pool_harvest(&twin, 5 * S);
    pool_harvest(&cymric, 5 * S);
    ck_assert_int_eq(pool_generate(&pool, x, sizeof(x), 5 * S), 0);
    for (size_t at = 0; at < sizeof(y); at += 65536)
        ck_assert_int_eq(pool_generate(&twin, y + at, sizeof(y) - at < 65536 ? sizeof(y) - at
                                                                             : 65536, 5 * S), 0);
    ck_assert_mem_eq(x, y, sizeof(x));
    ck_assert_uint_eq(pool_engine_requests(&pool), 4);
    ck_assert_int_eq(pool_generate(&cymric, z, sizeof(z), 5 * S), 0);
    ck_assert_msg(memcmp(x, z, sizeof(z)) != 0, "the DRBG and cymric gave the same bytes");
    ck_assert_int_eq(pool_use_engine(&pool, RANDD_ENGINE_CYMRIC), -EBUSY);
    pool_harvest(&twin, 70 * S);                   /* interval over: twin reseeds */
    ck_assert_uint_eq(twin.reseeds, 2);
    ck_assert_uint_eq(pool_engine_requests(&twin), 0);
    ck_assert_int_eq(pool_generate(&pool, x, 100, 70 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, 100, 70 * S), 0);
    ck_assert_msg(memcmp(x, y, 100) != 0, "a reseed did not change the DRBG's output");
    pool_fini(&twin);
    pool_fini(&cymric);
}
END_TEST

/* The DRBG's reseed interval is never passed: the engine refuses a read that would pass it,
 * whole, before any byte; the pool reseeds at half of it, long before; and with no fresh
 * input to reseed from, the pool serves nothing rather than past the interval. */
START_TEST(a_drbg_engine_never_serves_past_its_reseed_interval)
{
    static uint8_t out[3 * 65536];
    struct drbg_engine e;
    uint8_t material[DRBG_ENGINE_SEED_BYTES];
    uint64_t reseeds;

    ck_assert_int_eq(drbg_engine_init(&e, RANDD_ENGINE_HASH_DRBG, "pool"), 0);
    ck_assert_uint_eq(e.reseed_interval, UINT64_C(1) << 48);    /* SP 800-90A table 2 */
    ck_assert_int_eq(drbg_engine_set_reseed_interval(&e, 5), 0);
    fill_pattern(material, sizeof(material), 9);
    ck_assert_int_eq(drbg_engine_seed(&e, material, sizeof(material)), 0);
    ck_assert_int_eq(drbg_engine_read(&e, out, 10), 0);                  /* 1 generate */
    ck_assert(!drbg_engine_reseed_due(&e));
    ck_assert_int_eq(drbg_engine_read(&e, out, 65537), 0);               /* 2: 3 of 5 */
    ck_assert(drbg_engine_reseed_due(&e));                               /* half used */
    memset(out, 0xa5, sizeof(out));
    ck_assert_int_eq(drbg_engine_read(&e, out, sizeof(out)), -ESTALE);   /* 3 more: 6 > 5 */
    for (size_t i = 0; i < sizeof(out); i++)
        ck_assert_msg(out[i] == 0, "byte %zu of a refused read is %#x, not 0", i, out[i]);
    ck_assert_uint_eq(drbg_engine_requests(&e), 3);
    ck_assert_int_eq(drbg_engine_read(&e, out, 2 * 65536), 0);           /* 5: the last */
    ck_assert_int_eq(drbg_engine_read(&e, out, 1), -ESTALE);
    ck_assert_int_eq(drbg_engine_seed(&e, material, sizeof(material)), 0);   /* reseed */
    ck_assert_int_eq(drbg_engine_read(&e, out, 1), 0);
    drbg_engine_fini(&e);

    ck_assert_int_eq(pool_use_engine(&pool, RANDD_ENGINE_HASH_DRBG), 0);
    ck_assert_int_eq(pool_drbg_set_reseed_interval(&pool, 4), 0);
    add(&a, "good", SCRIPT_RANDOM, 81);
    pool_harvest(&pool, 1 * S);
    reseeds = pool.reseeds;
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(pool_generate(&pool, out, 16, 1 * S), 0);
    ck_assert_msg(pool.reseeds >= reseeds + 9, "20 reads at an interval of 4: %llu reseeds",
                  (unsigned long long)(pool.reseeds - reseeds));
    ck_assert_uint_le(pool_engine_requests(&pool), 4);
    a.pattern = SCRIPT_EMPTY;                        /* now no fresh material */
    for (int i = 0; i < 4; i++)
        (void)pool_generate(&pool, out, 16, 1 * S);
    ck_assert_int_eq(pool_generate(&pool, out, 16, 1 * S), -EAGAIN);
    ck_assert_uint_le(pool_engine_requests(&pool), 4);
    ck_assert_str_eq(pool_not_ready_reason(&pool),
                     "the DRBG's reseed interval is used up: waiting to reseed");
}
END_TEST

START_TEST(reseed_after_interval_changes_the_output)
{
    struct pool twin;
    struct scripted ta;
    uint8_t x[32], y[32];

    add(&a, "good", SCRIPT_RANDOM, 21);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 30), 0);
    scripted_init(&ta, "good", SCRIPT_RANDOM, 21, false);
    pool_add_source(&twin, &ta.source);
    pool_harvest(&pool, 1 * S);
    pool_harvest(&twin, 1 * S);
    pool_harvest(&twin, 62 * S);                   /* interval over: twin reseeds */
    ck_assert_uint_eq(twin.reseeds, 2);
    pool_harvest(&pool, 2 * S);                    /* interval not over: no reseed */
    ck_assert_uint_eq(pool.reseeds, 1);
    ck_assert_int_eq(pool_generate(&pool, x, 32, 62 * S), 0);
    ck_assert_int_eq(pool_generate(&twin, y, 32, 62 * S), 0);
    ck_assert_msg(memcmp(x, y, 32) != 0, "reseed did not change the output");
    pool_fini(&twin);
}
END_TEST

START_TEST(reseed_after_reseed_bytes_of_output)
{
    static uint8_t out[4096];

    pool.reseed_bytes = 8192;
    add(&a, "good", SCRIPT_RANDOM, 31);
    pool_harvest(&pool, 1 * S);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 2 * S), 0);
    ck_assert_uint_eq(pool.reseeds, 2);
    ck_assert_uint_eq(pool.bytes_since_reseed, 4096);
}
END_TEST

/* A resumed suspend or restored snapshot (BOOTTIME ahead of MONOTONIC) forces a reseed
 * from fresh material before the next output, and no output without one. */
START_TEST(clock_jump_forces_a_reseed_before_output)
{
    uint8_t out[32];

    add(&a, "good", SCRIPT_RANDOM, 51);
    pool_harvest(&pool, 1 * S);
    pool.boot_offset_ns -= 2 * (int64_t)S;          /* as if 2 s passed while suspended */
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 2 * S), 0);
    ck_assert_uint_eq(pool.reseeds, 2);
    a.pattern = SCRIPT_EMPTY;                        /* now no fresh material */
    pool.boot_offset_ns -= 2 * (int64_t)S;
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), 3 * S), -EAGAIN);
    ck_assert_str_eq(pool_not_ready_reason(&pool),
                     "clock jump (suspend or snapshot restore): waiting to reseed");
}
END_TEST

START_TEST(kernel_material_comes_only_from_creditable_sources)
{
    uint8_t buf[POOL_KERNEL_BYTES];

    add(&a, "os", SCRIPT_RANDOM, 41);                /* like getrandom: not creditable */
    pool_harvest(&pool, 1 * S);
    ck_assert_uint_eq(pool_take_kernel_material(&pool, buf, 2 * S), 0);
    scripted_init(&b, "cpu", SCRIPT_RANDOM, 42, true);
    pool_add_source(&pool, &b.source);
    ck_assert_uint_eq(pool_take_kernel_material(&pool, buf, 3 * S), POOL_KERNEL_BYTES * 8);
    ck_assert_double_eq(pool.kernel_credit, 0);
}
END_TEST

/* --- the noise reservoir: what reaches it, once ------------------------------------------ */

static struct noise_ticket *want_blocks(unsigned blocks)
{
    struct noise_ticket *t = NULL;

    ck_assert_int_eq(noise_submit(&pool.noise, 0, NOISE_FULL_ENTROPY, blocks, false, &t), 0);
    return t;
}

/* A healthy noise source (a) that has seeded the pool and granted blocks to a ticket wanting
 * all the reservoir holds: the start of the tests of what happens when it stops. */
static struct noise_ticket *noise_source_granting_blocks(void)
{
    struct noise_ticket *t;

    add(&a, "noise", SCRIPT_RANDOM, 1);
    a.source.noise = true;
    pool_harvest(&pool, 1 * S);
    t = want_blocks(NOISE_MAX_BLOCKS);
    pool_harvest(&pool, 2 * S);
    ck_assert_uint_gt(noise_ticket_granted(t), 0);
    return t;
}

/* A source that is not a noise source (getrandom's kind) never fills the reservoir, and the
 * pool says no noise source can serve: however much it credits to the generator. */
START_TEST(only_noise_sources_fill_the_noise_reservoir)
{
    struct noise_ticket *t;
    char why[256];

    add(&a, "kernel-like", SCRIPT_RANDOM, 1);
    t = want_blocks(4);
    for (int i = 1; i <= 20; i++)
        pool_harvest(&pool, i * S);
    ck_assert(pool.seeded);
    ck_assert_uint_eq(pool.noise.stats.blocks_made, 0);
    ck_assert(!noise_ticket_ready(t));
    ck_assert(!noise_able_why(&pool, why, sizeof(why)));
    ck_assert_msg(strstr(why, "no noise source is configured"), "why: %s", why);
    noise_cancel(&pool.noise, t);
}
END_TEST

/* A noise source's bytes go to the reservoir while it wants blocks, and each credited bit is
 * counted in one place: the blocks made never hold more credit than the source gave them,
 * and what they got is not in the generator's credit too. */
START_TEST(noise_bits_are_credited_to_the_reservoir_once)
{
    struct noise_ticket *t;
    double before;

    add(&a, "noise", SCRIPT_RANDOM, 1);
    a.source.noise = true;
    pool_harvest(&pool, 1 * S);                   /* start-up test, then seeds */
    ck_assert(pool.seeded);
    t = want_blocks(NOISE_MAX_BLOCKS);
    before = pool.credit;
    pool_harvest(&pool, 2 * S);
    ck_assert_msg(pool.noise.stats.blocks_made > 0, "no block made from a noise source");
    ck_assert_msg((double)pool.noise.stats.blocks_made * NOISE_BLOCK_CREDIT +
                      pool.noise.partial_credit <= pool.noise_bits[0] + 1e-9,
                  "%llu blocks of 320 bits from %.0f noise bits",
                  (unsigned long long)pool.noise.stats.blocks_made, pool.noise_bits[0]);
    ck_assert_msg(pool.credit - before + pool.noise_bits[0] <= a.source.credited_bits,
                  "generator credit %.0f and noise %.0f exceed the %.0f the source gave",
                  pool.credit, pool.noise_bits[0], a.source.credited_bits);
    noise_cancel(&pool.noise, t);
}
END_TEST

/* A noise source that fails its health test: what the reservoir holds is wiped, and the
 * quarantined source gives it nothing more. */
START_TEST(a_quarantined_noise_source_leaves_nothing_in_the_reservoir)
{
    struct noise_ticket *t;
    uint64_t made;
    char why[256];

    t = noise_source_granting_blocks();
    a.pattern = SCRIPT_STUCK_ZERO;
    pool_harvest(&pool, 3 * S);
    ck_assert(a.source.health.state == RANDD_SOURCE_QUARANTINED);
    ck_assert_uint_eq(noise_ticket_granted(t), 0);
    ck_assert_msg(noise_available_bits(&pool.noise) == 0 && pool.noise.stats.dropped_bits > 0,
                  "the reservoir kept %.0f bits", noise_available_bits(&pool.noise));
    made = pool.noise.stats.blocks_made;
    pool_harvest(&pool, 4 * S);
    ck_assert_uint_eq(pool.noise.stats.blocks_made, made);
    ck_assert(!noise_able_why(&pool, why, sizeof(why)));
    ck_assert_msg(strstr(why, "noise quarantined"), "why: %s", why);
    noise_cancel(&pool.noise, t);
}
END_TEST

/* review28: a noise source disabled rather than failed (source_disable: jitter's SP 800-90B
 * reassessment under its floor, or unassessable) is QUARANTINED too, but its health failure
 * count does not move: what it gave at the credit now judged too high must still be wiped,
 * not served as full entropy. */
START_TEST(a_disabled_noise_source_leaves_nothing_in_the_reservoir)
{
    struct noise_ticket *t;
    char why[256];

    t = noise_source_granting_blocks();
    source_disable(&a.source, "assessed under the floor (review28)");
    ck_assert(a.source.health.state == RANDD_SOURCE_QUARANTINED);
    ck_assert(!noise_able_why(&pool, why, sizeof(why)));
    pool_harvest(&pool, 3 * S);
    ck_assert_msg(noise_ticket_granted(t) == 0 && noise_available_bits(&pool.noise) == 0,
                  "a disabled noise source's blocks were kept: %u granted, %.0f bits ready",
                  noise_ticket_granted(t), noise_available_bits(&pool.noise));
    noise_cancel(&pool.noise, t);
}
END_TEST

/* Three noise sources disabled, each with a reason as long as struct health keeps, ending in
 * the word "(end)". */
static const char *const noise_names[] = { "cpu", "hwrng", "jitter" };
#define MARK "\xe2\x80\xa6"      /* … */

static void three_noise_sources_disabled(void)
{
    struct scripted *sources[] = { &a, &b, &c };

    for (int i = 0; i < 3; i++) {
        char reason[sizeof(a.source.health.reason)];

        add(sources[i], noise_names[i], SCRIPT_RANDOM, (uint64_t)i + 1);
        sources[i]->source.noise = true;
        memset(reason, 'x', sizeof(reason) - 1);
        memcpy(reason + sizeof(reason) - 6, "(end)", 6);
        source_disable(&sources[i]->source, reason);
    }
}

/* The why a NO_NOISE_SOURCE reply is built in (POOL_NOISE_WHY_BYTES) holds them all, whole. */
/* --- only the kernel's word ------------------------------------------------------------ */

static void add_noise(struct scripted *s, const char *name, enum script_pattern pattern,
                      uint64_t seed)
{
    add(s, name, pattern, seed);
    s->source.noise = true;
}

START_TEST(kernel_only_when_no_noise_source_is_credited)
{
    char why[POOL_NOISE_WHY_BYTES];
    uint64_t t = 1 * S;

    add(&a, "kernel-like", SCRIPT_RANDOM, 1);
    pool_harvest(&pool, t);
    ck_assert(pool_kernel_only(&pool, why, sizeof(why)));
    ck_assert_msg(strstr(why, "none is configured"), "why: %s", why);
    add_noise(&b, "noise", SCRIPT_RANDOM, 2);
    pool_harvest(&pool, t += S);
    ck_assert_msg(!pool_kernel_only(&pool, why, sizeof(why)), "kernel_only beside a healthy "
                  "noise source: %s", why);
    b.pattern = SCRIPT_STUCK_ZERO;
    pool_harvest(&pool, t += S);
    ck_assert(b.source.health.state == RANDD_SOURCE_QUARANTINED);
    ck_assert(pool_kernel_only(&pool, why, sizeof(why)));
    ck_assert_msg(!strncmp(why, "noise quarantined: ", 19), "why: %s", why);
    ck_assert(pool_ready(&pool));                  /* without require_noise_source */
}
END_TEST

/* jitter before its first assessment: healthy, crediting nothing. */
START_TEST(a_noise_source_crediting_nothing_leaves_the_kernel_alone)
{
    char why[POOL_NOISE_WHY_BYTES];

    add(&a, "kernel-like", SCRIPT_RANDOM, 1);
    add_noise(&b, "noise", SCRIPT_RANDOM, 2);
    b.source.entropy_per_byte = 0;
    pool_harvest(&pool, 1 * S);
    ck_assert(source_healthy(&b.source));
    ck_assert(pool_kernel_only(&pool, why, sizeof(why)));
    ck_assert_msg(strstr(why, "noise healthy: credits 0 bits a byte"), "why: %s", why);
}
END_TEST

START_TEST(a_noise_source_alone_is_not_kernel_only)
{
    add_noise(&b, "noise", SCRIPT_RANDOM, 2);
    pool_harvest(&pool, 1 * S);
    ck_assert(!pool_kernel_only(&pool, NULL, 0));
}
END_TEST

/* Harvests, a second apart from *t on, until the pool is ready (at most 100). */
static void harvest_until_ready(uint64_t *t)
{
    for (int harvests = 0; !pool_ready(&pool) && harvests < 100; harvests++)
        pool_harvest(&pool, *t += S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
}

/* require_noise_source (and mode = approved): a possible VM fork is not answered by rekeying
 * from getrandom, the kernel's word, but as a clone is: no output until a reseed from noise
 * sources' fresh credit. */
START_TEST(with_require_noise_source_a_possible_vm_fork_waits_for_noise)
{
    uint8_t out[32];
    uint64_t t = 1 * S;

    pool_require_noise_source(&pool, true);
    add_noise(&b, "noise", SCRIPT_RANDOM, 2);
    harvest_until_ready(&t);
    b.pattern = SCRIPT_EMPTY;                      /* no fresh noise for now */
    pool_vm_maybe_cloned(&pool, t += S);
    ck_assert_uint_eq(pool.vm_rekeys, 0);
    ck_assert_uint_eq(pool.vm_generations, 1);
    ck_assert(!pool_ready(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), -EAGAIN);
    b.pattern = SCRIPT_RANDOM;
    harvest_until_ready(&t);
    ck_assert(pool.seed_noise_credited);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), 0);
}
END_TEST

/* require_noise_source: the kernel-like source's thousands of bits seed nothing; a noise
 * source's credit, a few bits a harvest, seeds once it reaches 256. */
START_TEST(require_noise_source_seeds_from_noise_credit_only)
{
    uint8_t out[32];
    uint64_t t = 1 * S;
    int harvests = 0;

    pool_require_noise_source(&pool, true);
    add(&a, "kernel-like", SCRIPT_RANDOM, 1);
    for (int i = 0; i < 5; i++)
        pool_harvest(&pool, t += S);
    ck_assert(!pool.seeded);
    ck_assert_msg(!strncmp(pool_not_ready_reason(&pool), "only the kernel's getrandom is "
                           "credited, and require_noise_source = yes", 60),
                  "reason: %s", pool_not_ready_reason(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), -EAGAIN);
    add_noise(&b, "noise", SCRIPT_RANDOM, 2);
    b.source.entropy_per_byte = 0.05;              /* ~26 bits a harvest of 512 bytes */
    while (!pool.seeded && harvests < 100) {
        pool_harvest(&pool, t += S);
        harvests++;
        if (!pool.seeded && harvests > 1)
            ck_assert_str_eq(pool_not_ready_reason(&pool), "not yet seeded with 256 bits "
                             "credited by noise sources (require_noise_source = yes)");
    }
    ck_assert_msg(harvests >= 10, "seeded after %d harvests: the kernel-like credit counted",
                  harvests);
    ck_assert(pool.seed_noise_credited);
    /* The seed's h_in (STATUS, the log) is what counted: the noise credit, ~26 bits a
     * harvest, not the kernel-like source's thousands. */
    ck_assert_msg(pool.last_seed.h_in >= POOL_SEED_BITS && pool.last_seed.h_in < POOL_SEED_BITS + 64,
                  "h_in %.1f", pool.last_seed.h_in);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), 0);
    b.pattern = SCRIPT_STUCK_ZERO;                 /* the noise source fails: held back */
    pool_harvest(&pool, t += S);
    ck_assert(!pool_ready(&pool));
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), -EAGAIN);
}
END_TEST

/* Turned on (a reload) over a seed the kernel-like source gave: no output from it. */
START_TEST(require_noise_source_turned_on_reseeds_from_noise)
{
    uint8_t out[32];
    uint64_t t = 1 * S, reseeds;

    add(&a, "kernel-like", SCRIPT_RANDOM, 1);
    pool_harvest(&pool, t);
    ck_assert(pool_ready(&pool) && !pool.seed_noise_credited);
    add_noise(&b, "noise", SCRIPT_RANDOM, 2);
    pool_harvest(&pool, t += S);                   /* healthy, its credit not yet due */
    ck_assert(source_healthy(&b.source));
    reseeds = pool.reseeds;
    pool_require_noise_source(&pool, true);
    ck_assert_msg(!pool_ready(&pool), "served from a seed without noise credit");
    pool_harvest(&pool, t += S);
    ck_assert_msg(pool_ready(&pool), "not ready: %s", pool_not_ready_reason(&pool));
    ck_assert_uint_eq(pool.reseeds, reseeds + 1);
    ck_assert(pool.seed_noise_credited);
    ck_assert_int_eq(pool_generate(&pool, out, sizeof(out), t), 0);
}
END_TEST

START_TEST(every_noise_sources_whole_reason_fits_the_no_noise_source_reply)
{
    char why[POOL_NOISE_WHY_BYTES], want[64];
    const char *at = why;
    int whole = 0;

    three_noise_sources_disabled();
    ck_assert(!noise_able_why(&pool, why, sizeof(why)));
    for (int i = 0; i < 3; i++) {
        snprintf(want, sizeof(want), "%s quarantined: xxx", noise_names[i]);
        ck_assert_msg(strstr(why, want), "no \"%s\" in: %s", want, why);
    }
    while ((at = strstr(at, "xx(end)")) && ++whole)
        at++;
    ck_assert_msg(whole == 3 && !strstr(why, MARK), "%d of 3 reasons whole: %s", whole, why);
}
END_TEST

/* A why too small for every reason is cut with a mark at its end, never mid-word without one. */
START_TEST(a_noise_reason_too_long_for_its_buffer_ends_in_a_mark)
{
    char why[200];
    size_t n;

    three_noise_sources_disabled();
    ck_assert(!noise_able_why(&pool, why, sizeof(why)));
    n = strlen(why);
    ck_assert_msg(n == sizeof(why) - 1 && !strcmp(why + n - strlen(MARK), MARK),
                  "cut without the mark (%zu bytes): %s", n, why);
    ck_assert_msg(!strncmp(why, "cpu quarantined: xxx", 20), "why: %s", why);
}
END_TEST

/* --- the noise modes' requests: admitted, refused, served, each counted once --------------- */

#define FE_BYTES 70                  /* three blocks, the last one cut */

/* A full-entropy request of uid for bytes, admitted and harvested for until granted whole. */
static struct noise_ticket *full_entropy_granted(uid_t uid, size_t bytes, uint64_t *now)
{
    const struct pool_noise_request rq = { .uid = uid, .mode = NOISE_FULL_ENTROPY,
                                           .bytes = bytes };
    struct noise_ticket *t;
    char why[POOL_NOISE_WHY_BYTES];
    int status = pool_noise_submit(&pool, &rq, &t, why, sizeof(why));

    ck_assert_msg(status == RANDD_OK, "refused %s: %s", randd_status_name(status), why);
    for (int i = 0; i < 50 && !noise_ticket_ready(t); i++)
        pool_harvest(&pool, *now += S);
    ck_assert_msg(noise_ticket_ready(t), "%u of %u blocks after 50 harvests",
                  noise_ticket_granted(t), noise_blocks_for(NOISE_FULL_ENTROPY, bytes));
    return t;
}

/* A fresh pool with one noise source (seed 7), its first full-entropy answer XORed into out,
 * FE_BYTES of it filled with fill and the rest with 0xee: the same blocks every time. */
static void first_full_entropy_answer(uint8_t fill, uint8_t out[128])
{
    struct noise_ticket *t;
    uint64_t now = 1 * S;

    pool_fini(&pool);
    ck_assert_int_eq(pool_init(&pool, 60, 1u << 30), 0);
    add_noise(&a, "noise", SCRIPT_RANDOM, 7);
    pool_harvest(&pool, now);
    t = full_entropy_granted(0, FE_BYTES, &now);
    memset(out, 0xee, 128);
    memset(out, fill, FE_BYTES);
    pool_full_entropy_xor(&pool, &t, out, FE_BYTES);
    ck_assert_msg(t == NULL, "the ticket outlived its answer");
}

/* RBG3(XOR): what was in out (the generator's bytes), XORed with the blocks, byte for byte and
 * no further; the blocks counted spent once, and handed to no one after. */
START_TEST(full_entropy_xor_mixes_the_blocks_into_the_generators_bytes_once)
{
    uint8_t blocks[128], mixed[128], again[FE_BYTES];
    struct noise_ticket *t;
    uint64_t now = 100 * S;

    first_full_entropy_answer(0x00, blocks);
    first_full_entropy_answer(0x5a, mixed);
    for (size_t i = 0; i < FE_BYTES; i++)
        ck_assert_msg(mixed[i] == (blocks[i] ^ 0x5a), "byte %zu: 0x%02x, not the block's "
                      "0x%02x XOR 0x5a", i, mixed[i], blocks[i]);
    ck_assert_msg(blocks[FE_BYTES] == 0xee && mixed[127] == 0xee,
                  "written past the %d bytes asked for", FE_BYTES);
    ck_assert_uint_eq(pool.noise.stats.requests[NOISE_FULL_ENTROPY], 1);
    ck_assert_uint_eq(pool.noise.stats.served_bytes[NOISE_FULL_ENTROPY], FE_BYTES);
    ck_assert_uint_eq(pool.noise.stats.consumed_bits[NOISE_FULL_ENTROPY],
                      3 * NOISE_BLOCK_CREDIT);
    t = full_entropy_granted(0, FE_BYTES, &now);
    memset(again, 0, sizeof(again));
    pool_full_entropy_xor(&pool, &t, again, sizeof(again));
    ck_assert_msg(memcmp(again, mixed, NOISE_BLOCK_BYTES) != 0 &&
                      memcmp(again, blocks, NOISE_BLOCK_BYTES) != 0,
                  "a block was handed out twice");
}
END_TEST

/* A ticket asked for fewer bytes than the answer (EGD's, kept across a reload): refused
 * whole, nothing spent, so no byte past the blocks goes out as full entropy; the ticket
 * still answers what it was for. */
START_TEST(full_entropy_xor_refuses_more_bytes_than_its_ticket_covers)
{
    uint8_t out[2 * FE_BYTES + NOISE_BLOCK_BYTES], before[sizeof(out)];
    struct noise_ticket *t;
    uint64_t now = 100 * S;

    add_noise(&a, "noise", SCRIPT_RANDOM, 1);
    pool_harvest(&pool, now);
    t = full_entropy_granted(0, FE_BYTES, &now);
    memset(out, 0x5a, sizeof(out));
    memcpy(before, out, sizeof(out));
    ck_assert_int_eq(pool_full_entropy_xor(&pool, &t, out, sizeof(out)), -EINVAL);
    ck_assert_msg(t != NULL && !memcmp(out, before, sizeof(out)),
                  "bytes past the ticket's blocks were served, or the ticket was spent");
    ck_assert_uint_eq(pool.noise.stats.served_bytes[NOISE_FULL_ENTROPY], 0);
    ck_assert_int_eq(pool_full_entropy_xor(&pool, &t, out, FE_BYTES), 0);
    ck_assert_uint_eq(pool.noise.stats.served_bytes[NOISE_FULL_ENTROPY], FE_BYTES);
}
END_TEST

/* A serving loop saw a ticket complete and let go of the pool's lock to generate; meanwhile a
 * noise source failed and the reservoir was dropped. The answer takes nothing and serves
 * nothing as full entropy: the request waits on, for new blocks. */
START_TEST(blocks_dropped_after_they_were_seen_granted_are_not_served)
{
    uint8_t out[FE_BYTES], before[FE_BYTES];
    struct noise_ticket *t;
    uint64_t now = 1 * S;

    add_noise(&a, "noise", SCRIPT_RANDOM, 1);
    pool_harvest(&pool, now);
    t = full_entropy_granted(0, FE_BYTES, &now);
    a.pattern = SCRIPT_STUCK_ZERO;
    pool_harvest(&pool, now += S);
    ck_assert(a.source.health.state == RANDD_SOURCE_QUARANTINED);
    memset(out, 0x5a, sizeof(out));
    memcpy(before, out, sizeof(out));
    ck_assert_int_eq(pool_full_entropy_xor(&pool, &t, out, sizeof(out)), -EAGAIN);
    ck_assert_msg(t != NULL && !memcmp(out, before, sizeof(out)),
                  "dropped blocks were served (or the request was let go)");
    ck_assert_uint_eq(pool.noise.stats.requests[NOISE_FULL_ENTROPY], 0);
    pool_noise_cancel(&pool, &t);
}
END_TEST

/* A client gone: pool_noise_cancel counts it, once, and its blocks go to the next waiting. A
 * request answered with a refusal is counted by its status, not as a client gone. */
START_TEST(a_cancelled_ticket_is_counted_once_and_its_blocks_go_to_the_next)
{
    struct pool_noise_request rq = { .uid = 1, .mode = NOISE_FULL_ENTROPY,
                                     .bytes = RANDD_MAX_FULL_ENTROPY };
    struct noise_ticket *gone, *next;
    unsigned before;
    char why[POOL_NOISE_WHY_BYTES];

    add_noise(&a, "noise", SCRIPT_RANDOM, 1);
    pool_harvest(&pool, 1 * S);
    ck_assert_int_eq(pool_noise_submit(&pool, &rq, &gone, why, sizeof(why)), RANDD_OK);
    pool_harvest(&pool, 2 * S);
    ck_assert_uint_gt(noise_ticket_granted(gone), 0);
    rq.uid = 2;                      /* the next, waiting: the reserve holds fewer blocks */
    ck_assert_int_eq(pool_noise_submit(&pool, &rq, &next, why, sizeof(why)), RANDD_OK);
    ck_assert(!noise_ticket_ready(next));
    before = noise_ticket_granted(next);
    pool_noise_cancel(&pool, &gone);
    ck_assert_msg(gone == NULL && pool.noise.stats.cancelled == 1,
                  "cancelled %llu", (unsigned long long)pool.noise.stats.cancelled);
    ck_assert_msg(noise_ticket_granted(next) > before, "the blocks of the client gone went "
                  "nowhere: %u granted before, %u after", before, noise_ticket_granted(next));
    pool_noise_cancel(&pool, &gone);
    ck_assert_uint_eq(pool.noise.stats.cancelled, 1);
    pool_noise_refuse(&pool, &next, RANDD_NO_NOISE_SOURCE);
    ck_assert_msg(next == NULL && pool.noise.stats.cancelled == 1 &&
                      pool.noise.stats.no_source == 1,
                  "refused: cancelled %llu, no_source %llu",
                  (unsigned long long)pool.noise.stats.cancelled,
                  (unsigned long long)pool.noise.stats.no_source);
}
END_TEST

/* pool_noise_submit says why it refuses and queues nothing; the refusal is counted when it is
 * answered (pool_noise_refuse), once: EGD, which waits instead, counts none. */
START_TEST(a_refused_request_holds_no_ticket_and_is_counted_when_answered)
{
    struct pool_noise_request rq = { .uid = 1, .mode = NOISE_FULL_ENTROPY,
                                     .bytes = RANDD_MAX_FULL_ENTROPY, .nonblock = true };
    struct noise_ticket *t = (struct noise_ticket *)&rq;     /* not NULL: must be reset */
    char why[POOL_NOISE_WHY_BYTES];

    add(&b, "kernel-like", SCRIPT_RANDOM, 3);
    pool_harvest(&pool, 1 * S);
    ck_assert_int_eq(pool_noise_submit(&pool, &rq, &t, why, sizeof(why)),
                     RANDD_NO_NOISE_SOURCE);
    ck_assert_msg(t == NULL && strstr(why, "no noise source is configured"), "why: %s", why);
    add_noise(&a, "noise", SCRIPT_RANDOM, 1);
    pool_harvest(&pool, 2 * S);
    ck_assert_int_eq(pool_noise_submit(&pool, &rq, &t, why, sizeof(why)), RANDD_NOT_READY);
    ck_assert_msg(t == NULL && strstr(why, "with NONBLOCK, at most 512 bytes"), "why: %s", why);
    ck_assert_uint_eq(pool.noise.stats.not_ready + pool.noise.stats.no_source, 0);
    ck_assert_uint_eq(pool.noise.nwaiting, 0);
    pool_noise_refuse(&pool, &t, RANDD_NOT_READY);
    ck_assert_uint_eq(pool.noise.stats.not_ready, 1);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("scripted sources");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, good_source_passes_startup_and_seeds);
    tcase_add_test(tc, cipher_is_chosen_before_seeding_and_kept_through_reseeds);
    tcase_add_test(tc, startup_test_refuses_stuck_at_zero);
    tcase_add_test(tc, startup_test_refuses_stuck_at_ones);
    tcase_add_test(tc, startup_test_refuses_short_cycle);
    tcase_add_test(tc, source_without_data_never_seeds);
    tcase_add_test(tc, healthy_source_failing_at_runtime_is_quarantined_then_readmitted);
    tcase_add_test(tc, one_bad_source_does_not_stop_a_good_one);
    tcase_add_test(tc, no_output_before_256_credited_bits);
    tcase_add_test(tc, an_approved_drbg_is_instantiated_from_448_bits_and_reseeded_from_256);
    tcase_add_test(tc, conditioning_is_deterministic_for_the_same_input);
    tcase_add_test(tc, the_accumulator_is_a_blake2b512_chain_by_default);
    tcase_add_test(tc, the_accumulator_is_a_sha512_chain_once_sha512_is_chosen);
    tcase_add_test(tc, the_kernel_material_is_sha512_once_sha512_is_chosen);
    tcase_add_test(tc, a_sha512_seed_is_credited_the_vetted_h_out);
    tcase_add_test(tc, conditioning_is_chosen_before_the_first_seed_only);
    tcase_add_test(tc, the_accumulator_left_after_a_seed_does_not_give_back_what_was_served);
    tcase_add_test(tc, randen_engine_is_refused_without_an_aes_round);
    tcase_add_test(tc, randen_engine_is_seeded_like_cymric);
    tcase_add_test(tc, ctr_drbg_engine_matches_evp_rand_given_the_same_seed_material);
    tcase_add_test(tc, hash_drbg_engine_matches_evp_rand_given_the_same_seed_material);
    tcase_add_test(tc, a_drbg_engine_serves_reseeds_and_splits_long_reads);
    tcase_add_test(tc, a_drbg_engine_never_serves_past_its_reseed_interval);
    tcase_add_test(tc, reseed_after_interval_changes_the_output);
    tcase_add_test(tc, reseed_after_reseed_bytes_of_output);
    tcase_add_test(tc, clock_jump_forces_a_reseed_before_output);
    tcase_add_test(tc, a_vm_clone_reseeds_from_fresh_input_before_output);
    tcase_add_test(tc, a_possible_vm_fork_rekeys_at_once_and_serves_nothing_of_the_old_state);
    tcase_add_test(tc, a_halted_pool_gives_nothing_until_resumed_and_reseeded);
    tcase_add_test(tc, kernel_material_comes_only_from_creditable_sources);
    tcase_add_test(tc, only_noise_sources_fill_the_noise_reservoir);
    tcase_add_test(tc, noise_bits_are_credited_to_the_reservoir_once);
    tcase_add_test(tc, a_quarantined_noise_source_leaves_nothing_in_the_reservoir);
    tcase_add_test(tc, a_disabled_noise_source_leaves_nothing_in_the_reservoir);
    tcase_add_test(tc, every_noise_sources_whole_reason_fits_the_no_noise_source_reply);
    tcase_add_test(tc, a_noise_reason_too_long_for_its_buffer_ends_in_a_mark);
    tcase_add_test(tc, full_entropy_xor_mixes_the_blocks_into_the_generators_bytes_once);
    tcase_add_test(tc, blocks_dropped_after_they_were_seen_granted_are_not_served);
    tcase_add_test(tc, full_entropy_xor_refuses_more_bytes_than_its_ticket_covers);
    tcase_add_test(tc, a_cancelled_ticket_is_counted_once_and_its_blocks_go_to_the_next);
    tcase_add_test(tc, a_refused_request_holds_no_ticket_and_is_counted_when_answered);
    tcase_add_test(tc, kernel_only_when_no_noise_source_is_credited);
    tcase_add_test(tc, a_noise_source_crediting_nothing_leaves_the_kernel_alone);
    tcase_add_test(tc, a_noise_source_alone_is_not_kernel_only);
    tcase_add_test(tc, require_noise_source_seeds_from_noise_credit_only);
    tcase_add_test(tc, with_require_noise_source_a_possible_vm_fork_waits_for_noise);
    tcase_add_test(tc, require_noise_source_turned_on_reseeds_from_noise);
    suite_add_tcase(s, tc);
    return s;
}
