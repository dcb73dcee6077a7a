/* randctl: the command table, global options, and the mapping of errors to exit codes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randctl.h"

static const struct command *const commands[] = {
    &cmd_status, &cmd_bytes, &cmd_range, &cmd_stream, &cmd_add_entropy, &cmd_metrics,
    &cmd_prime, &cmd_benchmark, &cmd_assess, &cmd_selftest, &cmd_inject_failure,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *current;
static const char *socket_path;
static int nonblock;            /* --nonblock: NOT_READY (exit 5) instead of waiting */

#ifndef RANDD_VERSION
#define RANDD_VERSION "0.1.0"
#endif
#define SUMMARY_COLUMN 33         /* where --help's one-line summaries start */

/* A command's usage is its synopsis, two blanks, and a summary: the summaries line up in
 * one column, or start a line of their own after a synopsis too long for it. */
static void usage_line(FILE *to, const char *text)
{
    int synopsis = (int)(strstr(text, "  ") ? (size_t)(strstr(text, "  ") - text) : strlen(text));
    const char *summary = text + synopsis + strspn(text + synopsis, " ");

    if (!*summary)
        fprintf(to, "  %s\n", text);
    else if (synopsis < SUMMARY_COLUMN)
        fprintf(to, "  %-*.*s %s\n", SUMMARY_COLUMN, synopsis, text, summary);
    else
        fprintf(to, "  %.*s\n  %*s %s\n", synopsis, text, SUMMARY_COLUMN, "", summary);
}

static void usage(FILE *to)
{
    fprintf(to, "usage: randctl [--socket PATH] [--nonblock] COMMAND [ARGS]"
                "   (COMMAND --help for more)\n"
                "       randctl --version | --help\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        usage_line(to, commands[i]->usage);
    fprintf(to, "The socket is PATH, else $RANDD_SOCKET, else %s.\n"
                "--nonblock: fail at once (exit 5) when the daemon is not ready, not wait.\n"
                "--socket and --nonblock may come before or after the command.\n"
                "Exit codes: 0 ok, 1 failed, 2 bad argument, 3 daemon not running,\n"
                "            4 permission denied, 5 daemon not ready, 6 daemon busy (retry),\n"
                "            7 no noise source for the mode, 8 timed out.\n",
            RANDD_DEFAULT_SOCKET);
}

int fail(const char *what, int err)
{
    return fail_with(what, err, NULL);
}

int fail_with(const char *what, int err, const char *detail)
{
    fprintf(stderr, "randctl: %s: %s%s%s\n", what, randd_strerror(err),
            detail && *detail ? ": " : "", detail ? detail : "");
    switch (err) {
    case -ENOENT: case -ECONNREFUSED: return EXIT_NOT_RUNNING;
    case -EACCES: case -EPERM: case RANDD_ERR(RANDD_NOT_PERMITTED): return EXIT_DENIED;
    case RANDD_ERR(RANDD_NOT_READY): return EXIT_NOT_READY;
    case RANDD_ERR(RANDD_BUSY): return EXIT_BUSY;
    case RANDD_ERR(RANDD_NO_NOISE_SOURCE): return EXIT_NO_NOISE_SOURCE;
    case -ETIMEDOUT: return EXIT_TIMED_OUT;
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

int data_error(const struct command *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "randctl: %s: ", c->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
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

    if (rc < 0) {           /* librandd's message names the path and why (a daemon refused) */
        int code = fail(*randd_message(NULL) ? randd_message(NULL) : daemon_socket(), rc);

        if (code == EXIT_NOT_RUNNING)
            fprintf(stderr, "randctl: is randd running? (randd's socket is %s; --socket PATH "
                    "or RANDD_SOCKET names another)\n", daemon_socket());
        return code;
    }
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

/* Takes the global options out of argv, wherever they are (`randctl bytes 4 --nonblock` as
 * well as `randctl --nonblock bytes 4`), so the command sees its own arguments only. Returns
 * the new argc, or -1 for a --socket without its path. */
static int take_global_options(int argc, char **argv)
{
    int kept = 1;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--socket")) {
            if (i + 1 >= argc)
                return -1;
            socket_path = argv[++i];
        } else if (!strcmp(argv[i], "--nonblock")) {
            nonblock = 1;
        } else {
            argv[kept++] = argv[i];
        }
    }
    argv[kept] = NULL;
    return kept;
}

int main(int argc, char **argv)
{
    int i = 1;

    if ((argc = take_global_options(argc, argv)) < 0) {
        fprintf(stderr, "randctl: --socket: needs a PATH\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    if (i < argc && (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V"))) {
        printf("randctl %s\n", RANDD_VERSION);
        return EXIT_OK;
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
