/* randctl selftest and inject-failure: root's requests to the running daemon to run its
 * self-tests now, or to make one health test fail on one source (what a lab asks to see the
 * reaction to). The daemon refuses both to anyone but uid 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "protocol.h"
#include "randctl.h"

static int ask(const char *what, int op, int test, const char *source)
{
    randd_handle *h;
    char *text = NULL;
    int rc = open_daemon(&h);

    if (rc != EXIT_OK)
        return rc;
    if ((rc = randd_admin(h, op, test, source, &text)) < 0) {
        rc = fail_with(what, rc, randd_message(h));
    } else {
        printf("%s\n", text ? text : "");
        rc = EXIT_OK;
    }
    free(text);
    randd_close(h);
    return rc;
}

static int run_selftest(int argc, char **argv)
{
    (void)argv;
    if (argc != 1)
        return usage_error(&cmd_selftest, "no arguments");
    return ask("selftest", RANDD_OP_SELFTEST, 0, NULL);
}

static int run_inject_failure(int argc, char **argv)
{
    int test;

    if (argc != 3)
        return usage_error(&cmd_inject_failure, "SOURCE and TEST are both needed");
    if ((test = randd_health_test_from_name(argv[2])) < 0)
        return usage_error(&cmd_inject_failure, "no health test named %s (rct, apt, lag, "
                           "stuck)", argv[2]);
    if (strlen(argv[1]) > RANDD_MAX_SOURCE_NAME)
        return usage_error(&cmd_inject_failure, "no source named %s", argv[1]);
    return ask("inject-failure", RANDD_OP_INJECT_FAILURE, test, argv[1]);
}

const struct command cmd_selftest = {
    "selftest", "selftest                        run the daemon's self-tests now (root)",
    run_selftest,
};

const struct command cmd_inject_failure = {
    "inject-failure", "inject-failure SOURCE rct|apt|lag|stuck  make that health test fail "
    "(root)", run_inject_failure,
};
