/* randctl: the command table, global options, and the mapping of errors to exit codes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randctl.h"

static const struct command *const commands[] = {
    &cmd_status, &cmd_bytes, &cmd_range, &cmd_stream, &cmd_add_entropy, &cmd_metrics,
    &cmd_prime, &cmd_benchmark, &cmd_assess,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *current;
static const char *socket_path;
static int nonblock;            /* --nonblock: NOT_READY (exit 5) instead of waiting */

static void usage(FILE *to)
{
    fprintf(to, "usage: randctl [--socket PATH] [--nonblock] COMMAND [ARGS]"
                "   (COMMAND --help for more)\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(to, "  %s\n", commands[i]->usage);
    fprintf(to, "The socket is PATH, else $RANDD_SOCKET, else %s.\n"
                "--nonblock: fail at once (exit 5) when the daemon is not ready, not wait.\n"
                "Exit codes: 0 ok, 1 failed, 2 bad argument, 3 daemon not running,\n"
                "            4 permission denied, 5 daemon not ready, 6 daemon busy (retry).\n",
            RANDD_DEFAULT_SOCKET);
}

int fail(const char *what, int err)
{
    fprintf(stderr, "randctl: %s: %s\n", what, randd_strerror(err));
    switch (err) {
    case -ENOENT: case -ECONNREFUSED: return EXIT_NOT_RUNNING;
    case -EACCES: case -EPERM: case RANDD_ERR(RANDD_NOT_PERMITTED): return EXIT_DENIED;
    case RANDD_ERR(RANDD_NOT_READY): return EXIT_NOT_READY;
    case RANDD_ERR(RANDD_BUSY): return EXIT_BUSY;
    default: return EXIT_FAILED;
    }
}

int usage_error(const struct command *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "randctl: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: randctl %s\n", c->usage);
    return EXIT_USAGE;
}

int parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;

    if (*s < '0' || *s > '9')
        return 0;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return !*end && errno == 0 && *out <= max;
}

const char *daemon_socket(void)
{
    const char *env = getenv("RANDD_SOCKET");

    return socket_path ? socket_path : env && *env ? env : RANDD_DEFAULT_SOCKET;
}

int open_daemon(randd_handle **h)
{
    int rc = randd_open(h, socket_path);

    if (rc < 0)             /* librandd's message names the path and why (a daemon refused) */
        return fail(*randd_message(NULL) ? randd_message(NULL) : daemon_socket(), rc);
    randd_set_nonblock(*h, nonblock);
    return EXIT_OK;
}

int fetch_status(const char *command, char **json)
{
    randd_handle *h;
    int rc;

    *json = NULL;
    if ((rc = open_daemon(&h)) != EXIT_OK)
        return rc;
    rc = randd_status(h, json);
    randd_close(h);
    return rc < 0 ? fail(command, rc) : EXIT_OK;
}

int main(int argc, char **argv)
{
    int i = 1;

    for (;;) {
        if (i + 1 < argc && !strcmp(argv[i], "--socket")) {
            socket_path = argv[i + 1];
            i += 2;
        } else if (i < argc && !strcmp(argv[i], "--nonblock")) {
            nonblock = 1;
            i++;
        } else {
            break;
        }
    }
    if (i >= argc || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
        usage(i >= argc ? stderr : stdout);
        return i >= argc ? EXIT_USAGE : EXIT_OK;
    }
    for (size_t c = 0; c < NCOMMANDS; c++)
        if (!strcmp(argv[i], commands[c]->name))
            current = commands[c];
    if (!current) {
        fprintf(stderr, "randctl: unknown command: %s\n", argv[i]);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (i + 1 < argc && (!strcmp(argv[i + 1], "--help") || !strcmp(argv[i + 1], "-h"))) {
        printf("usage: randctl %s\n", current->usage);
        return EXIT_OK;
    }
    return current->run(argc - i, argv + i);
}
