/* randd --reload PID (reload_client.h): the daemon's command line read from /proc and parsed
 * with randd's own options table, never a second list of which options take a value; the
 * file checked; SIGHUP sent. Needs nothing outside randd (no /bin/kill, which minimal
 * systems lack). */
#include "reload_client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define MAX_DAEMON_ARGS 256

/* Splits the NUL-separated command line into argv, from the argument that names randd (a
 * wrapper such as valgrind may come first). Returns argc, 0 when no argument names randd. */
static int daemon_argv(char *cmdline, size_t n, char **argv)
{
    int argc = 0;
    bool found = false;

    for (char *a = cmdline; a < cmdline + n && argc < MAX_DAEMON_ARGS; a += strlen(a) + 1) {
        const char *base = strrchr(a, '/');

        if (!found)
            found = !strcmp(base ? base + 1 : a, "randd");
        if (found)
            argv[argc++] = a;
    }
    argv[argc] = NULL;
    return argc;
}

/* The --config value the daemon's getopt_long saw last (the one it read), or NULL. getopt's
 * state is this process's own: the caller's parse is over, and optind = 0 starts afresh. */
static const char *config_named(int argc, char **argv, const struct reload_options *o)
{
    const char *named = NULL;
    int saved_opterr = opterr, opt;

    opterr = 0;                       /* the daemon accepted this line; say nothing of it */
    optind = 0;
    while ((opt = getopt_long(argc, argv, o->short_options, o->options, NULL)) != -1)
        if (opt == o->config_option)
            named = optarg;
    opterr = saved_opterr;
    return named;
}

/* The daemon's --config, or the default; 1 when its command line cannot be read, and -1
 * having said why. */
static int daemon_config(pid_t pid, const struct reload_options *o, const char **named,
                         char *cmdline, size_t size)
{
    char proc[64], *argv[MAX_DAEMON_ARGS + 1];
    ssize_t n = 0, got;
    int fd, argc;

    snprintf(proc, sizeof(proc), "/proc/%ld/cmdline", (long)pid);
    if ((fd = open(proc, O_RDONLY | O_CLOEXEC)) < 0) {
        /* Hidden, not gone: randd is not dumpable (it holds keys), and under the unit's
         * ProtectProc=invisible a process of the same user cannot read its /proc entry. */
        if ((errno == ENOENT || errno == EACCES) && kill(pid, 0) == 0)
            return 1;
        return log_err("reload: randd (pid %ld): %s; nothing sent", (long)pid,
                       strerror(errno)), -1;
    }
    while ((got = read(fd, cmdline + n, size - 1 - (size_t)n)) > 0)
        n += got;
    close(fd);
    cmdline[n] = '\0';
    if ((argc = daemon_argv(cmdline, (size_t)n, argv)) == 0)
        return log_err("reload: pid %ld is not randd (its command line names no randd); "
                       "nothing sent", (long)pid), -1;
    *named = config_named(argc, argv, o);
    return 0;
}

/* --reload with --config too: that file must be the daemon's, or the check proves nothing. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;

    if (!strcmp(a, b))
        return true;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* A relative name is the daemon's, against its own directory. */
static int absolute(pid_t pid, const char *named, char *path, size_t len)
{
    char proc[64], cwd[PATH_MAX];
    ssize_t n;

    if (named[0] == '/') {
        snprintf(path, len, "%s", named);
        return 0;
    }
    snprintf(proc, sizeof(proc), "/proc/%ld/cwd", (long)pid);
    if ((n = readlink(proc, cwd, sizeof(cwd) - 1)) < 0)
        return log_err("reload: randd (pid %ld) reads %s relative to its directory, which %s "
                       "cannot show: %s; nothing sent", (long)pid, named, proc,
                       strerror(errno)), -1;
    cwd[n] = '\0';
    if ((size_t)snprintf(path, len, "%s/%s", cwd, named) >= len)
        return log_err("reload: %s/%s: path too long; nothing sent", cwd, named), -1;
    return 0;
}

int reload_find_config(pid_t pid, const struct reload_options *o, const char *given,
                       char *path, size_t len, bool *named_file)
{
    static char cmdline[8192];
    const char *named = NULL;
    int rc = daemon_config(pid, o, &named, cmdline, sizeof(cmdline));

    if (rc < 0)
        return -1;
    if (rc > 0) {
        if (!given)
            return log_err("reload: randd (pid %ld): its command line cannot be read, and "
                           "this command names no --config to check; nothing sent",
                           (long)pid), -1;
        log_info("reload: randd (pid %ld): its command line cannot be read; checking %s, the "
                 "file this command names", (long)pid, given);
        snprintf(path, len, "%s", given);
        *named_file = true;
        return 0;
    }
    *named_file = named != NULL;
    if (absolute(pid, named ? named : o->default_config, path, len) < 0)
        return -1;
    if (given && !same_file(given, path))
        return log_err("reload: randd (pid %ld) reads %s, not %s; nothing sent", (long)pid,
                       path, given), -1;
    return 0;
}

int reload_send(pid_t pid, const char *path)
{
    if (kill(pid, SIGHUP) < 0) {
        log_err("reload: randd (pid %ld): %s", (long)pid, strerror(errno));
        return EXIT_FAILURE;
    }
    log_info("reload: %s is valid; asked randd (pid %ld) to re-read it", path, (long)pid);
    return EXIT_SUCCESS;
}
