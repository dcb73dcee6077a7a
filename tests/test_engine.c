/* The generator engines (daemon/engine.c): every engine, Randen's included, serves nothing
 * before its first seed or after engine_forget, though each unseeded state would give bytes
 * (Randen's zero state is public); seeded again, it serves, and the same seed gives the same
 * stream. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "runner.h"

static const enum randd_engine engines[] = { RANDD_ENGINE_CYMRIC, RANDD_ENGINE_RANDEN,
                                             RANDD_ENGINE_CTR_DRBG, RANDD_ENGINE_HASH_DRBG };
static const char *const engine_names[] = { "cymric", "randen", "ctr_drbg", "hash_drbg" };

/* Engine i chosen, or false (and a SKIP line) when this CPU cannot run it. */
static bool chosen(struct engine *e, int i)
{
    int rc;

    ck_assert_int_eq(engine_init(e), 0);
    if ((rc = engine_choose(e, engines[i], "test")) == -ENOTSUP) {
        fprintf(stderr, "SKIP %s: not on this CPU\n", engine_names[i]);
        engine_fini(e);
        return false;
    }
    ck_assert_msg(rc == 0, "%s: engine_choose: %d", engine_names[i], rc);
    return true;
}

START_TEST(an_engine_serves_only_between_a_seed_and_a_forget)
{
    uint8_t seed[DRBG_ENGINE_SEED_BYTES], first[64], again[64], out[64];
    struct engine e;

    memset(seed, 0x5a, sizeof(seed));
    if (!chosen(&e, _i))
        return;
    ck_assert_msg(engine_read(&e, out, sizeof(out)) == -EAGAIN, "%s served before a seed",
                  engine_names[_i]);
    ck_assert_int_eq(engine_seed(&e, seed, sizeof(seed)), 0);
    ck_assert_int_eq(engine_read(&e, first, sizeof(first)), 0);
    engine_forget(&e);
    ck_assert_msg(engine_read(&e, out, sizeof(out)) == -EAGAIN,
                  "%s served after engine_forget", engine_names[_i]);
    ck_assert_int_eq(engine_choose(&e, engines[_i], "test"), 0);
    ck_assert_int_eq(engine_seed(&e, seed, sizeof(seed)), 0);
    ck_assert_int_eq(engine_read(&e, again, sizeof(again)), 0);
    ck_assert_msg(!memcmp(first, again, sizeof(first)), "%s: the same seed, another stream",
                  engine_names[_i]);
    ck_assert_int_eq(engine_choose(&e, engines[_i], "test"), 0);
    ck_assert_msg(engine_read(&e, out, sizeof(out)) == -EAGAIN,
                  "%s served after it was chosen again, unseeded", engine_names[_i]);
    engine_fini(&e);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("core");

    tcase_add_loop_test(tc, an_engine_serves_only_between_a_seed_and_a_forget, 0,
                        (int)(sizeof(engines) / sizeof(engines[0])));
    suite_add_tcase(s, tc);
    return s;
}
