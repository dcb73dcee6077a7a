/* Shared by the unit test programs: each tests/test_*.c defines test_suite(), runner.c
 * supplies main() and the small helpers below. */
#ifndef RANDD_TEST_RUNNER_H
#define RANDD_TEST_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

Suite *test_suite(void);

/* Decodes hex (whitespace ignored) into out; aborts the test on bad input or overflow.
 * Returns the number of bytes written. */
size_t unhex(const char *hex, uint8_t *out, size_t cap);

#endif
