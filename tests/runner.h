/* Shared by the unit test programs: each tests/test_*.c defines test_suite(), runner.c
 * supplies main() and the small helpers below. */
#ifndef RANDD_TEST_RUNNER_H
#define RANDD_TEST_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

Suite *test_suite(void);

/* CK_RUN_TEST=name[,name...] in the environment adds only the tests of those names (their
 * START_TEST functions'), beside Check's own CK_RUN_SUITE and CK_RUN_CASE, which go no finer
 * than a test case: one test of a long program can run alone, again and again, or under
 * qemu-user. Every tcase_add_test* macro comes here, through _tcase_add_test. */
void runner_add_test(TCase *tc, const TTest *test, int signal, int allowed_exit_value,
                     int start, int end);
#define _tcase_add_test runner_add_test

/* Decodes hex (whitespace ignored) into out; aborts the test on bad input or overflow.
 * Returns the number of bytes written. */
size_t unhex(const char *hex, uint8_t *out, size_t cap);

/* The count to run of a check repeated over many inputs against a reference: all of them
 * natively, a tenth (at least one) when RANDD_TEST_EMULATED_CPU is set, as check-cross and
 * the arm64 guest set it: emulated code runs 10 to 30 times slower, and the reference
 * (OpenSSL's BIGNUM code, for one) costs the most there. */
int runner_count(int native);

/* A child by a raw clone(SIGCHLD), which runs no atfork handler: as fork() returns. s390x
 * takes clone's stack before its flags; everywhere else the flags come first. */
int runner_raw_clone(void);

#endif
