/* The main() every unit test program shares, and the helpers in runner.h. */
#include "runner.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>

/* Whether name is one of CK_RUN_TEST's comma-separated names (any, when it is unset or
 * empty). */
static bool test_wanted(const char *name)
{
    const char *only = getenv("CK_RUN_TEST");
    size_t len = strlen(name);

    if (!only || !*only)
        return true;
    for (const char *at = only; at; at = strchr(at, ',')) {
        if (*at == ',')
            at++;
        if (!strncmp(at, name, len) && (at[len] == ',' || at[len] == '\0'))
            return true;
    }
    return false;
}

#undef _tcase_add_test                /* Check's own, from here on */

void runner_add_test(TCase *tc, const TTest *test, int signal, int allowed_exit_value,
                     int start, int end)
{
    if (test_wanted(test->name))
        _tcase_add_test(tc, test, signal, allowed_exit_value, start, end);
}

size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int high = -1;

    for (; *hex; hex++) {
        int v;

        if (isspace((unsigned char)*hex))
            continue;
        ck_assert_msg(isxdigit((unsigned char)*hex), "unhex: not a hex digit: '%c'", *hex);
        v = isdigit((unsigned char)*hex) ? *hex - '0' : tolower((unsigned char)*hex) - 'a' + 10;
        if (high < 0) {
            high = v;
            continue;
        }
        ck_assert_msg(n < cap, "unhex: more than %zu bytes", cap);
        out[n++] = (uint8_t)(high << 4 | v);
        high = -1;
    }
    ck_assert_msg(high < 0, "unhex: odd number of digits");
    return n;
}

int runner_count(int native)
{
    const char *emulated = getenv("RANDD_TEST_EMULATED_CPU");

    if (!emulated || !*emulated)
        return native;
    return native / 10 > 0 ? native / 10 : 1;
}

int runner_raw_clone(void)
{
#if defined(__s390x__) || defined(__s390__)
    return (int)syscall(SYS_clone, 0, SIGCHLD, NULL, NULL, 0);
#else
    return (int)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
#endif
}

int main(void)
{
    SRunner *runner = srunner_create(test_suite());
    int failed;

    srunner_run_all(runner, CK_NORMAL);
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
