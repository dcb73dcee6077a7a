/* The harness the end-to-end test programs share (harness.c): the daemon under test, the
 * waits for its states, raw protocol frames over its socket, and its resources in /proc.
 * Every helper fails the running Check test (naming what it waited for) rather than
 * returning an error. */
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

/* A daemon that never seeds: its one source, an hwrng that reads end-of-file. (A config with
 * every source off is refused: it could never be ready.) */
#define NEVER_SEEDS "cpu_source = no\ngetrandom = no\njitter = no\nhwrng_device = /dev/null\n"

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
/* STATUS once the number after key ("\"bytes\":", its first place) is at least n. */
char *wait_count(const char *key, unsigned long long n, const char *what);
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
void send_frame(int fd, uint8_t version, uint8_t op, uint16_t flags, uint32_t length,
                const void *body, size_t body_len);
void send_prime(int fd, uint16_t bits);
void check_end_of_file(int fd, const char *after);
int connect_when_room(void);
int connect_as(uid_t uid);
int connect_as_nobody(void);

/* --- the daemon's resources, as /proc shows them --- */
long daemon_rss_kib(void);
void check_rss_growth(long before, const char *what);  /* under 8 MiB; not judged under ASan */
double serving_cpu_seconds(void);       /* its serving threads' CPU time so far */
int daemon_fd_count(void);              /* its descriptors, once our STATUS client is its one */

#endif
