/* A serving loop's generator (daemon/branch.c) over a pool with scripted sources: no output
 * before the pool is ready, a stream of its own once it is, and no output after a VM clone
 * until the pool has reseeded from fresh input; its output counts toward the pool's
 * reseed_bytes. Threads are not needed to prove these: the lock is only taken. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "branch.h"
#include "crypto.h"
#include "drbg_direct.h"
#include "pool.h"
#include "pr_generator.h"
#include "runner.h"
#include "scripted_source.h"

#define S 1000000000ull     /* one second in ns */

static struct pool pool;
static struct scripted src;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct branch one, two;

static void setup(void)
{
    ck_assert_int_eq(pool_init(&pool, 60, 1u << 20), 0);
    scripted_init(&src, "good", SCRIPT_RANDOM, 1, false);
    pool_add_source(&pool, &src.source);
    ck_assert_int_eq(branch_init(&one, &pool, &lock), 0);
    ck_assert_int_eq(branch_init(&two, &pool, &lock), 0);
}

static void teardown(void)
{
    branch_fini(&one);
    branch_fini(&two);
    pool_fini(&pool);
}

START_TEST(no_output_before_the_pool_is_ready)
{
    uint8_t out[32];

    ck_assert(!branch_ready(&one));
    ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 0), -EAGAIN);
    ck_assert_str_eq(branch_not_ready_reason(&one), "no healthy entropy source");
    pool_harvest(&pool, 1 * S);
    ck_assert_msg(branch_ready(&one), "pool ready, branch not: %s",
                  branch_not_ready_reason(&one));
    ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 1 * S), 0);
}
END_TEST

START_TEST(each_loop_has_a_stream_of_its_own)
{
    uint8_t a[64], b[64], p[64];

    pool_harvest(&pool, 1 * S);
    ck_assert_int_eq(branch_generate(&one, a, sizeof(a), 1 * S), 0);
    ck_assert_int_eq(branch_generate(&two, b, sizeof(b), 1 * S), 0);
    ck_assert_int_eq(pool_generate(&pool, p, sizeof(p), 1 * S), 0);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "two loops gave the same bytes");
    ck_assert_msg(memcmp(a, p, sizeof(a)) != 0 && memcmp(b, p, sizeof(b)) != 0,
                  "a loop gave the pool's own bytes");
}
END_TEST

START_TEST(a_vm_clone_stops_output_until_the_pool_reseeds_from_fresh_input)
{
    uint8_t out[32];
    uint64_t reseeds;

    pool_harvest(&pool, 1 * S);
    ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 1 * S), 0);
    src.pattern = SCRIPT_EMPTY;                  /* nothing fresh yet */
    pool_vm_cloned(&pool, 2 * S);
    ck_assert_msg(branch_generate(&one, out, sizeof(out), 2 * S) == -EAGAIN,
                  "a loop served from its state of before the clone");
    ck_assert(!branch_ready(&one));
    ck_assert_msg(pool.times_unready == 1, "readiness lost %llu times, want 1: the main loop "
                  "would not know to release requests waiting for the pool",
                  (unsigned long long)pool.times_unready);
    src.pattern = SCRIPT_RANDOM;
    reseeds = pool.reseeds;
    pool_vm_cloned(&pool, 3 * S);                /* fresh input: the pool reseeds at once */
    ck_assert_uint_eq(pool.reseeds, reseeds + 1);
    ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 3 * S), 0);
}
END_TEST

START_TEST(a_pool_reseed_reaches_the_loop_before_its_next_output)
{
    uint8_t out[32];
    uint64_t epoch;

    pool_harvest(&pool, 1 * S);
    ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 1 * S), 0);
    epoch = one.epoch;
    pool_harvest(&pool, 70 * S);                 /* past reseed_interval: reseeds */
    ck_assert_uint_eq(pool.reseeds, 2);
    ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 70 * S), 0);
    ck_assert_msg(one.epoch != epoch, "the loop served on without reseeding from the pool");
}
END_TEST

START_TEST(loop_output_counts_toward_the_pools_reseed_bytes)
{
    static uint8_t out[64 << 10];
    uint64_t served;

    pool_harvest(&pool, 1 * S);
    served = pool.bytes_served;
    /* reseed_bytes is 1 MiB: 16 x 64 KiB reach it, and before the next output the loop
     * reseeds, telling the pool what it gave. */
    for (int i = 0; i < 17; i++)
        ck_assert_int_eq(branch_generate(&one, out, sizeof(out), 1 * S), 0);
    ck_assert_msg(pool.bytes_served >= served + (16u << 16),
                  "pool counted %llu bytes served, want >= %llu",
                  (unsigned long long)(pool.bytes_served - served), 16ull << 16);
    ck_assert_uint_eq(one.bytes_since_seed, sizeof(out));
}
END_TEST

START_TEST(with_one_loop_the_pool_itself_serves)
{
    struct branch direct;
    uint8_t out[32];
    uint64_t served;

    ck_assert_int_eq(branch_init(&direct, &pool, NULL), 0);
    ck_assert_int_eq(branch_generate(&direct, out, sizeof(out), 0), -EAGAIN);
    pool_harvest(&pool, 1 * S);
    served = pool.bytes_served;
    ck_assert_int_eq(branch_generate(&direct, out, sizeof(out), 1 * S), 0);
    ck_assert_uint_eq(pool.bytes_served, served + sizeof(out));
    ck_assert_ptr_null(direct.secret);
    branch_fini(&direct);
}
END_TEST

/* engine = ctr_drbg with workers > 1: a loop's DRBG is instantiated from 64 bytes of the
 * pool's DRBG output (entropy input 48, nonce 16) with its own personalisation string, and
 * serves exactly what OpenSSL's EVP_RAND CTR_DRBG given those gives, long reads included.
 * The material is found by a twin pool fed the same source: its first 64 bytes. */
START_TEST(a_loops_ctr_drbg_is_evp_rands_seeded_from_the_pools_output)
{
    static uint8_t got[150000], want[150000];
    struct pool drbg_pool, twin;
    struct scripted s1, s2;
    struct branch loop;
    struct drbg_direct x;
    uint8_t material[64];

    if (!randd_crypto_has_hardware_aes()) {
        fprintf(stderr, "SKIP: a_loops_ctr_drbg_is_evp_rands_seeded_from_the_pools_output: "
                "CTR_DRBG: this CPU does not do AES in hardware\n");
        return;
    }
    ck_assert_int_eq(pool_init(&drbg_pool, 60, 1u << 20), 0);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 20), 0);
    ck_assert_int_eq(pool_use_engine(&drbg_pool, RANDD_ENGINE_CTR_DRBG), 0);
    ck_assert_int_eq(pool_use_engine(&twin, RANDD_ENGINE_CTR_DRBG), 0);
    scripted_init(&s1, "good", SCRIPT_RANDOM, 5, false);
    scripted_init(&s2, "good", SCRIPT_RANDOM, 5, false);
    pool_add_source(&drbg_pool, &s1.source);
    pool_add_source(&twin, &s2.source);
    ck_assert_int_eq(branch_init(&loop, &drbg_pool, &lock), 0);
    ck_assert_ptr_nonnull(branch_drbg_personalisation(&loop));
    ck_assert_msg(!strncmp(branch_drbg_personalisation(&loop), "randd loop ", 11),
                  "personalisation %s", branch_drbg_personalisation(&loop));
    pool_harvest(&drbg_pool, 1 * S);
    pool_harvest(&twin, 1 * S);
    ck_assert_int_eq(pool_generate(&twin, material, sizeof(material), 1 * S), 0);
    ck_assert_int_eq(branch_generate(&loop, got, sizeof(got), 1 * S), 0);
    drbg_direct_instantiate(&x, true, material, 48, material + 48, 16,
                            branch_drbg_personalisation(&loop));
    drbg_direct_generate(&x, want, sizeof(want));
    ck_assert_mem_eq(got, want, sizeof(got));
    ck_assert_int_eq(branch_generate(&loop, got, 32, 1 * S), 0);
    drbg_direct_generate(&x, want, 32);
    ck_assert_mem_eq(got, want, 32);
    drbg_direct_free(&x);
    branch_fini(&loop);
    pool_fini(&twin);
    pool_fini(&drbg_pool);
}
END_TEST

/* A prediction-resistant reply's generator with a DRBG engine (pr_generator.c): a DRBG of
 * the engine's mechanism, instantiated from 64 bytes of the loop's output (entropy input 48,
 * nonce 16, personalisation "randd prediction resistance"), then reseeded with the noise
 * block, before its first byte: exactly what EVP_RAND gives driven so. With one loop the
 * loop's output is the pool's, found by a twin pool fed the same source. */
static void check_pr_drbg(enum randd_engine engine, bool ctr)
{
    static uint8_t got[100000], want[100000];
    struct pool drbg_pool, twin;
    struct scripted s1, s2;
    struct branch loop;
    struct pr_generator *g;
    struct drbg_direct x;
    uint8_t material[64], block[NOISE_BLOCK_BYTES];

    memset(block, 0xb7, sizeof(block));
    ck_assert_int_eq(pool_init(&drbg_pool, 60, 1u << 20), 0);
    ck_assert_int_eq(pool_init(&twin, 60, 1u << 20), 0);
    ck_assert_int_eq(pool_use_engine(&drbg_pool, engine), 0);
    ck_assert_int_eq(pool_use_engine(&twin, engine), 0);
    scripted_init(&s1, "good", SCRIPT_RANDOM, 5, false);
    scripted_init(&s2, "good", SCRIPT_RANDOM, 5, false);
    pool_add_source(&drbg_pool, &s1.source);
    pool_add_source(&twin, &s2.source);
    ck_assert_int_eq(branch_init(&loop, &drbg_pool, NULL), 0);
    pool_harvest(&drbg_pool, 1 * S);
    pool_harvest(&twin, 1 * S);
    ck_assert_int_eq(pool_generate(&twin, material, sizeof(material), 1 * S), 0);

    ck_assert_int_eq(pr_generator_new(&loop, block, &g), 0);
    ck_assert_str_eq(pr_generator_mechanism(g), ctr ? "CTR_DRBG AES-256 (df)"
                                                    : "Hash_DRBG SHA-512");
    ck_assert_int_eq(pr_generator_read(g, got, sizeof(got)), 0);
    drbg_direct_instantiate(&x, ctr, material, 48, material + 48, 16,
                            "randd prediction resistance");
    drbg_direct_reseed(&x, block, sizeof(block));
    drbg_direct_generate(&x, want, sizeof(want));
    ck_assert_mem_eq(got, want, sizeof(got));
    drbg_direct_free(&x);
    pr_generator_free(g);
    branch_fini(&loop);
    pool_fini(&twin);
    pool_fini(&drbg_pool);
}

START_TEST(a_prediction_resistant_replys_ctr_drbg_is_reseeded_with_the_noise_block)
{
    if (!randd_crypto_has_hardware_aes()) {
        fprintf(stderr, "SKIP: a_prediction_resistant_replys_ctr_drbg_is_reseeded_with_the_"
                "noise_block: CTR_DRBG: this CPU does not do AES in hardware\n");
        return;
    }
    check_pr_drbg(RANDD_ENGINE_CTR_DRBG, true);
}
END_TEST

START_TEST(a_prediction_resistant_replys_hash_drbg_is_reseeded_with_the_noise_block)
{
    check_pr_drbg(RANDD_ENGINE_HASH_DRBG, false);
}
END_TEST

/* With the default engine the reply's generator is Cymric keyed by the loop's output and the
 * block: the same loop state with another block gives another reply. */
START_TEST(a_prediction_resistant_replys_cymric_depends_on_the_block)
{
    struct pool twin;
    struct scripted s2;
    struct branch a, b;
    struct pr_generator *ga, *gb;
    uint8_t block[NOISE_BLOCK_BYTES], out_a[64], out_b[64];

    ck_assert_int_eq(pool_init(&twin, 60, 1u << 20), 0);
    scripted_init(&s2, "good", SCRIPT_RANDOM, 1, false);
    pool_add_source(&twin, &s2.source);
    ck_assert_int_eq(branch_init(&a, &pool, NULL), 0);
    ck_assert_int_eq(branch_init(&b, &twin, NULL), 0);
    pool_harvest(&pool, 1 * S);
    pool_harvest(&twin, 1 * S);
    memset(block, 1, sizeof(block));
    ck_assert_int_eq(pr_generator_new(&a, block, &ga), 0);
    block[31] ^= 1;
    ck_assert_int_eq(pr_generator_new(&b, block, &gb), 0);
    ck_assert_str_eq(pr_generator_mechanism(ga), "Cymric");
    ck_assert_int_eq(pr_generator_read(ga, out_a, sizeof(out_a)), 0);
    ck_assert_int_eq(pr_generator_read(gb, out_b, sizeof(out_b)), 0);
    ck_assert_mem_ne(out_a, out_b, sizeof(out_a));
    pr_generator_free(ga);
    pr_generator_free(gb);
    branch_fini(&a);
    branch_fini(&b);
    pool_fini(&twin);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("branch");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, no_output_before_the_pool_is_ready);
    tcase_add_test(tc, each_loop_has_a_stream_of_its_own);
    tcase_add_test(tc, a_vm_clone_stops_output_until_the_pool_reseeds_from_fresh_input);
    tcase_add_test(tc, a_pool_reseed_reaches_the_loop_before_its_next_output);
    tcase_add_test(tc, loop_output_counts_toward_the_pools_reseed_bytes);
    tcase_add_test(tc, with_one_loop_the_pool_itself_serves);
    tcase_add_test(tc, a_loops_ctr_drbg_is_evp_rands_seeded_from_the_pools_output);
    tcase_add_test(tc, a_prediction_resistant_replys_ctr_drbg_is_reseeded_with_the_noise_block);
    tcase_add_test(tc, a_prediction_resistant_replys_hash_drbg_is_reseeded_with_the_noise_block);
    tcase_add_test(tc, a_prediction_resistant_replys_cymric_depends_on_the_block);
    suite_add_tcase(s, tc);
    return s;
}
