/* randd --reload PID, the unit's ExecReload=: finding the file the running randd re-reads on
 * SIGHUP, so that this command checks that file and no other, then sending the signal. */
#ifndef RANDD_RELOAD_CLIENT_H
#define RANDD_RELOAD_CLIENT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* randd's own command line, which the daemon at pid was started with: its options table and
 * short options, so that its --config is found exactly as its getopt_long found it. */
struct reload_options {
    const struct option *options;
    const char *short_options;
    int config_option;               /* the value getopt_long returns for --config and -c */
    const char *default_config;      /* read when the daemon's command line names none */
};

/* The file the randd at pid reads, into path: the --config its command line names (or the
 * default), a relative one resolved against its directory. given is this command's own
 * --config, or NULL: it must be that same file. When the daemon's command line is hidden
 * (randd is not dumpable, and ProtectProc=invisible hides it), given stands. *named says
 * whether the file was named (one that must exist), not the default (which may not).
 * Returns 0, or -1 having logged why nothing will be sent. */
int reload_find_config(pid_t pid, const struct reload_options *o, const char *given,
                       char *path, size_t len, bool *named);

/* Sends SIGHUP to pid, once path was checked. Returns the exit code. */
int reload_send(pid_t pid, const char *path);

#endif
