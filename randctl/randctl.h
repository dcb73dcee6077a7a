/* randctl's commands and what they share: the connection, exit codes, argument parsing. */
#ifndef RANDCTL_H
#define RANDCTL_H

#include <stddef.h>

#include "randd.h"

/* Exit codes scripts can rely on. */
enum {
    EXIT_OK = 0,
    EXIT_FAILED = 1,          /* the daemon answered with an error, or I/O failed */
    EXIT_USAGE = 2,           /* bad argument */
    EXIT_NOT_RUNNING = 3,     /* no daemon at the socket */
    EXIT_DENIED = 4,          /* permission denied (socket or ADD_ENTROPY) */
    EXIT_NOT_READY = 5,       /* the daemon is not ready and --nonblock was given */
    EXIT_BUSY = 6,            /* the daemon is busy (clients, or this uid's PRIMEs): retry */
    EXIT_NO_NOISE_SOURCE = 7, /* no healthy noise source can serve the mode asked for */
    EXIT_TIMED_OUT = 8,       /* --timeout passed before the daemon served */
};

struct command {
    const char *name;
    const char *usage;
    int (*run)(int argc, char **argv);   /* argv[0] is the command's name */
};

extern const struct command cmd_status, cmd_bytes, cmd_range, cmd_stream, cmd_add_entropy,
    cmd_metrics, cmd_benchmark, cmd_prime, cmd_assess;
extern const struct command cmd_selftest, cmd_inject_failure;

/* assess's modes beside the non-IID one, each in a file of its own (argv as cmd_assess's). */
int run_assess_restart(int argc, char **argv);          /* assess_restart.c */
int run_assess_conditioning(int argc, char **argv);     /* assess_conditioning.c */

/* Connects to the daemon (after the arguments were checked). Returns EXIT_OK, or prints
 * why not and returns the exit code. */
int open_daemon(randd_handle **h);
/* Fetches the daemon's STATUS into *json (the caller frees it). Returns EXIT_OK, or prints
 * "randctl: command: reason" and returns the exit code. */
int fetch_status(const char *command, char **json);
/* The socket path in use: --socket, else $RANDD_SOCKET, else the default. */
const char *daemon_socket(void);
/* Prints "randctl: what: reason" and returns the exit code for err. */
int fail(const char *what, int err);
/* The same with the daemon's own words after the reason, on the one line ("randctl: selftest:
 * not permitted: SELFTEST needs uid 0"); detail may be NULL or empty. */
int fail_with(const char *what, int err, const char *detail);
/* Prints "randctl: message" and usage; returns EXIT_USAGE. */
int usage_error(const struct command *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The arguments were right but the data is not (an empty file, values wider than --bits):
 * prints "randctl: command: message" without the usage, which would not help; EXIT_USAGE. */
int data_error(const struct command *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses a decimal count; false if s is not one or above max. */
int parse_count(const char *s, unsigned long long max, unsigned long long *out);

#endif
