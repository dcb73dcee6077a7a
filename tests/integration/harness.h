/* The harness the end-to-end test programs share (harness.c): the daemon under test, the
 * waits for its states, and raw protocol frames over its socket. Every helper fails the
 * running Check test (naming what it waited for) rather than returning an error. */
#ifndef RANDD_TEST_HARNESS_H
#define RANDD_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "protocol.h"
#include "runner.h"

/* How long a test waits for a state before it fails: generous, because a wait that is met
 * returns at once, and the daemon may run under valgrind on a machine whose cores are busy. */
#define WAIT_SECONDS 45

/* The running test's temporary directory (setup() makes it, teardown() removes it), the
 * daemon's socket and config in it, and the daemon's pid (0: none running). */
extern char dir[64], sock[128], conf[128];
extern pid_t daemon_pid;
extern const char *extra_env;           /* NAME=value for the next daemon, or NULL */
extern rlim_t fd_limit;                 /* RLIMIT_NOFILE for the next daemon; 0: inherit */

/* --- the daemon under test --- */
char *randd_path(void);                 /* $RANDD (a sanitizer build, say), else build/randd */
void write_file(const char *path, const char *text);
/* Forks and execs argv with its stderr in DIR/log (unless RANDD_TEST_VERBOSE is set) and
 * NOTIFY_SOCKET=notify if notify is not NULL. */
pid_t spawn(char *const argv[], const char *notify);
double seconds_now(void);
void wait_listening(const char *path);
char *wait_status(bool (*accept)(const char *json), const char *what);
unsigned long long json_number(const char *json, const char *key);
void wait_log(const char *needle);
void write_config(const char *config_text);
void start_daemon_with(const char *config_text, const char *notify);
void setup(void);
void stop_daemon(void);
void teardown(void);
char *status_now(void);                 /* one STATUS over a new connection; caller frees */

/* --- raw frames --- */
int connect_raw(void);
void send_request(int fd, const struct randd_request *req);
void send_bytes(int fd, uint32_t n);
void read_exact(int fd, void *buf, size_t n);
int read_reply(int fd, void *body, size_t cap, uint32_t *length);
void check_status(int fd, int want, const char *what);
void check_still_usable(int fd, const char *after);
int connect_as(uid_t uid);

#endif
