/* The start-up self-test (internal/selftest.c) passes on a sound OpenSSL. */
#include "runner.h"
#include "selftest.h"

START_TEST(selftest_passes_with_the_real_primitives)
{
    char why[256] = "";

    ck_assert_msg(randd_selftest(why, sizeof(why)) == 0, "self-test failed: %s", why);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("selftest");
    TCase *tc = tcase_create("known answers");

    tcase_add_test(tc, selftest_passes_with_the_real_primitives);
    suite_add_tcase(s, tc);
    return s;
}
