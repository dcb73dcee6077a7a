/* The harness the end-to-end test programs share (tests/integration/test_*.c): one
 * build/randd per test in a temporary directory (its config, socket and log), the waits for
 * its states, the raw protocol frames and connections the tests drive it with, and the
 * daemon's memory, CPU time and descriptors as /proc shows them. What a test program owns is
 * its tests; what more than one daemon-driving program needs is here, once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "protocol.h"
#include "randd.h"

char dir[64], sock[128], conf[128];
pid_t daemon_pid;
const char *extra_env;
rlim_t fd_limit;

/* The daemon under test: $RANDD (a sanitizer build, say), else build/randd. */
char *randd_path(void)
{
    char *path = getenv("RANDD");

    return path && *path ? path : "build/randd";
}

/* --- the daemon under test ----------------------------------------------------------- */

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

pid_t spawn(char *const argv[], const char *notify)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char log[160];
        int logfd;

        /* The daemon's log goes to DIR/log, for tests that wait for a line of it. */
        snprintf(log, sizeof(log), "%s/log", dir);
        logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (!getenv("RANDD_TEST_VERBOSE") && logfd >= 0)
            dup2(logfd, 2);
        if (notify)
            setenv("NOTIFY_SOCKET", notify, 1);
        if (extra_env)
            putenv((char *)extra_env);
        if (fd_limit) {
            struct rlimit rl = { fd_limit, fd_limit };

            setrlimit(RLIMIT_NOFILE, &rl);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits until a STATUS request over the socket answers (the daemon is listening). */
void wait_listening(const char *path)
{
    for (double end = seconds_now() + WAIT_SECONDS; seconds_now() < end;) {
        randd_handle *h;

        if (randd_open(&h, path) == 0) {
            char *json;
            int rc = randd_status(h, &json);

            randd_close(h);
            if (rc > 0) {
                free(json);
                return;
            }
        }
        usleep(25000);
    }
    ck_abort_msg("randd did not answer STATUS on %s within %d s", path, WAIT_SECONDS);
}

/* STATUS JSON once accept(json) holds, polled over one connection (counted as a client);
 * fails naming what it waited for. The caller frees the JSON. */
char *wait_status(bool (*accept)(const char *json), const char *what)
{
    double end = seconds_now() + WAIT_SECONDS;
    randd_handle *h;
    char *json = NULL;

    ck_assert_int_eq(randd_open(&h, sock), 0);
    for (;;) {
        free(json);
        ck_assert_int_gt(randd_status(h, &json), 0);
        if (accept(json))
            break;
        ck_assert_msg(seconds_now() < end, "waited %d s for %s; STATUS: %s", WAIT_SECONDS, what,
                      json);
        usleep(50000);                   /* polling interval: accept() decides */
    }
    randd_close(h);
    return json;
}

static const char *count_key;
static unsigned long long count_wanted;

static bool count_reached(const char *json)
{
    return json_number(json, count_key) >= count_wanted;
}

char *wait_count(const char *key, unsigned long long n, const char *what)
{
    count_key = key, count_wanted = n;
    return wait_status(count_reached, what);
}

unsigned long long json_number(const char *json, const char *key)
{
    const char *at = strstr(json, key);

    return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

/* Waits until a line of the daemon's log (DIR/log) contains needle. */
void wait_log(const char *needle)
{
    char path[160], line[512];

    snprintf(path, sizeof(path), "%s/log", dir);
    for (double end = seconds_now() + WAIT_SECONDS;; usleep(50000)) {
        FILE *f = fopen(path, "r");
        bool found = false;

        while (f && !found && fgets(line, sizeof(line), f))
            found = strstr(line, needle) != NULL;
        if (f)
            fclose(f);
        if (found)
            return;
        ck_assert_msg(seconds_now() < end, "waited %d s for \"%s\" in randd's log", WAIT_SECONDS,
                      needle);
    }
}

/* RANDD_TEST_WORKERS=N runs every test's daemon with workers = N (unless the test sets
 * workers itself): the whole suite against several serving loops. */
void write_config(const char *config_text)
{
    const char *workers = getenv("RANDD_TEST_WORKERS");
    char text[4096];

    if (workers && *workers && !strstr(config_text, "workers =")) {
        snprintf(text, sizeof(text), "workers = %s\n%s", workers, config_text);
        config_text = text;
    }
    write_file(conf, config_text);
}

void start_daemon_with(const char *config_text, const char *notify)
{
    char *argv[] = { randd_path(), "--foreground", "--config", conf, "--socket", sock, NULL };

    write_config(config_text);
    daemon_pid = spawn(argv, notify);
    wait_listening(sock);
}

void setup(void)
{
    strcpy(dir, "/tmp/randd-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/randd.sock", dir);
    snprintf(conf, sizeof(conf), "%s/randd.conf", dir);
    signal(SIGPIPE, SIG_IGN);
}

/* SIGTERM must stop it cleanly: exit 0 (a sanitizer report would make it non-zero). */
void stop_daemon(void)
{
    int status;
    pid_t pid = daemon_pid;

    daemon_pid = 0;
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "randd did not stop cleanly on SIGTERM (status 0x%x)", status);
}

void teardown(void)
{
    char cmd[128];

    stop_daemon();
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* --- raw frames ---------------------------------------------------------------------- */

int connect_raw(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    strcpy(sa.sun_path, sock);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* A request as every client encodes it: through librandd's codec (lib/protocol.h). Frames
 * the daemon must refuse for their framing are built by hand. */
void send_request(int fd, const struct randd_request *req)
{
    uint8_t buf[RANDD_HEADER_BYTES + 4 + 2048];
    size_t n = randd_request_encode(buf, sizeof(buf), req);

    ck_assert_msg(n > 0, "op %u does not fit in %zu bytes", req->op, sizeof(buf));
    ck_assert_int_eq(send(fd, buf, n, 0), (ssize_t)n);
}

void send_bytes(int fd, uint32_t n)
{
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_BYTES, .n = n });
}

void read_exact(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;

    while (n > 0) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t got;

        /* Generous: a 4096-bit prime under valgrind on a busy machine takes its time. */
        ck_assert_msg(poll(&pf, 1, 120000) == 1, "no reply within 120 s");
        got = recv(fd, p, n, 0);
        ck_assert_msg(got > 0, "connection closed with %zu bytes still expected", n);
        p += got;
        n -= (size_t)got;
    }
}

/* Reads a reply; returns its status, the body in body (up to cap, rest discarded). */
int read_reply(int fd, void *body, size_t cap, uint32_t *length)
{
    uint8_t head[RANDD_HEADER_BYTES], sink[4096];
    struct randd_header h;
    size_t keep;

    read_exact(fd, head, sizeof(head));
    randd_header_decode(head, &h);
    ck_assert_uint_eq(h.version, 1);
    keep = h.length < cap ? h.length : cap;
    read_exact(fd, body, keep);
    for (size_t left = h.length - keep; left > 0;) {
        size_t step = left < sizeof(sink) ? left : sizeof(sink);

        read_exact(fd, sink, step);
        left -= step;
    }
    if (length)
        *length = h.length;
    return h.code;
}

void check_status(int fd, int want, const char *what)
{
    char msg[256] = "";
    uint32_t len;
    int got = read_reply(fd, msg, sizeof(msg) - 1, &len);

    ck_assert_msg(got == want, "%s: status %s, wanted %s (%s)", what, randd_status_name(got),
                  randd_status_name(want), msg);
    ck_assert_msg(want == RANDD_OK || len > 0, "%s: error reply without a message", what);
}

/* The connection still serves after an error: a BYTES 8 round trip. */
void check_still_usable(int fd, const char *after)
{
    send_bytes(fd, 8);
    check_status(fd, RANDD_OK, after);
}

/* A frame built by hand, for what the codec will not encode: a wrong version, an unknown op
 * or flag, a body that disagrees with its op. */
void send_frame(int fd, uint8_t version, uint8_t op, uint16_t flags, uint32_t length,
                const void *body, size_t body_len)
{
    uint8_t buf[RANDD_HEADER_BYTES + 2048];
    struct randd_header h = { version, op, flags, length };

    randd_header_encode(buf, &h);
    if (body_len)
        memcpy(buf + RANDD_HEADER_BYTES, body, body_len);
    ck_assert_int_eq(send(fd, buf, RANDD_HEADER_BYTES + body_len, 0),
                     (ssize_t)(RANDD_HEADER_BYTES + body_len));
}

void send_prime(int fd, uint16_t bits)
{
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_PRIME, .bits = bits });
}

/* Waits for what a graceful close gives: end-of-file, not ECONNRESET. */
void check_end_of_file(int fd, const char *after)
{
    struct pollfd pf = { fd, POLLIN, 0 };
    uint8_t byte;
    ssize_t got;

    ck_assert_msg(poll(&pf, 1, 30000) == 1, "%s: no end-of-file within 30 s", after);
    got = recv(fd, &byte, 1, 0);
    ck_assert_msg(got == 0, "%s: wanted end-of-file, got %s", after,
                  got > 0 ? "a byte" : strerror(errno));
}

/* A client that got a place: one BUSY while the daemon has yet to see an earlier client
 * (STATUS's) go tries again. */
int connect_when_room(void)
{
    uint8_t body[64], request[RANDD_HEADER_BYTES + 4];
    size_t n = randd_request_encode(request, sizeof(request),
                                    &(struct randd_request){ .op = RANDD_OP_BYTES, .n = 8 });

    for (double end = seconds_now() + WAIT_SECONDS;; usleep(20000)) {
        int fd = connect_raw(), status = RANDD_BUSY;

        /* Turned away, the daemon may have closed before the request is sent (EPIPE). */
        if (send(fd, request, n, MSG_NOSIGNAL) == (ssize_t)n &&
            (status = read_reply(fd, body, sizeof(body), NULL)) == RANDD_OK)
            return fd;
        close(fd);
        ck_assert_msg(status == RANDD_BUSY && seconds_now() < end, "a client under "
                      "max_clients: %s after %d s", randd_status_name(status), WAIT_SECONDS);
    }
}

/* A connection the daemon sees as uid: a child drops to it, connects, and hands the socket
 * back over SCM_RIGHTS (SO_PEERCRED names whoever connected). Needs root. */
int connect_as(uid_t uid)
{
    union { struct cmsghdr align; char buf[CMSG_SPACE(sizeof(int))]; } ctl;
    char byte = 0;
    struct iovec iov = { &byte, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                          .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *cm;
    int sv[2], status, fd;
    pid_t child;

    chmod(dir, 0755);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int c = socket(AF_UNIX, SOCK_STREAM, 0);

        strcpy(sa.sun_path, sock);
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
            setresuid(uid, uid, uid) < 0)
            _exit(10);
        if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            _exit(11);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &c, sizeof(int));
        _exit(sendmsg(sv[1], &msg, 0) == 1 ? 0 : 12);
    }
    close(sv[1]);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "a child as uid %u could not connect to %s (step %d)", (unsigned)uid,
                  sock, WEXITSTATUS(status));
    ck_assert_int_eq(recvmsg(sv[0], &msg, 0), 1);
    cm = CMSG_FIRSTHDR(&msg);
    ck_assert_msg(cm && cm->cmsg_type == SCM_RIGHTS, "no socket came back from uid %u",
                  (unsigned)uid);
    memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    close(sv[0]);
    return fd;
}

int connect_as_nobody(void)
{
    return connect_as(65534);
}

char *status_now(void)
{
    randd_handle *h;
    char *json = NULL;

    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_gt(randd_status(h, &json), 0);
    randd_close(h);
    return json;
}

/* --- the daemon's resources, as /proc shows them ------------------------------------- */

/* The daemon's resident memory in KiB, from /proc/PID/status. */
long daemon_rss_kib(void)
{
    char path[64], line[256];
    long kib = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)daemon_pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Asserts the daemon's RSS grew by less than 8 MiB since before, except in a sanitized
 * build: AddressSanitizer keeps freed memory in quarantine, so RSS says nothing there. */
void check_rss_growth(long before, const char *what)
{
    long after = daemon_rss_kib();

    if (getenv("RANDD_SANITIZED")) {
        fprintf(stderr, "RSS not judged for %s: AddressSanitizer holds freed memory in "
                        "quarantine (grew by %ld KiB)\n", what, after - before);
        return;
    }
    ck_assert_msg(after - before < 8 * 1024, "RSS grew by %ld KiB for %s", after - before, what);
}

/* CPU seconds the daemon's serving threads have used: utime + stime from each thread's
 * /proc/PID/task/TID/stat, less the threads that name themselves as work beside the loops
 * (start-up assessments, jitter, PRIME searches), which are busy for their own reasons. */
double serving_cpu_seconds(void)
{
    static const char *const beside[] = { "(randd-assess)", "(randd-jitter)", "(randd-prime)" };
    char path[300], buf[1024], *p;
    unsigned long utime, stime, ticks = 0;
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)daemon_pid);
    ck_assert_ptr_nonnull(d = opendir(path));
    while ((e = readdir(d))) {
        bool counted = true;
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)daemon_pid, e->d_name);
        if (!(f = fopen(path, "r")))
            continue;                          /* the thread ended since readdir */
        p = fgets(buf, sizeof(buf), f);
        fclose(f);
        if (!p || !(p = strrchr(buf, ')')))
            continue;
        for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++)
            if (strstr(buf, beside[i]))
                counted = false;
        ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                                &utime, &stime), 2);
        if (counted)
            ticks += utime + stime;
    }
    closedir(d);
    return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

/* Open descriptors of the daemon under test once it has closed every earlier client: counted
 * while our STATUS connection is the only one it has (clients.connected 1), less that one.
 * Its passing reads of /proc (footprint.c's smaps, after a burst of work) are not counted:
 * beside busy cores one was open at a baseline and gone at the end (19, then 18). */
int daemon_fd_count(void)
{
    char path[64], *json = NULL;
    struct dirent *e;
    randd_handle *h;
    DIR *d;
    int n = 0;

    ck_assert_int_eq(randd_open(&h, sock), 0);
    for (double end = seconds_now() + WAIT_SECONDS;; usleep(50000)) {
        free(json);
        ck_assert_int_gt(randd_status(h, &json), 0);
        if (strstr(json, "\"clients\":{\"connected\":1,"))
            break;
        ck_assert_msg(seconds_now() < end, "earlier clients not closed within %d s: %s",
                      WAIT_SECONDS, json);
    }
    free(json);
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)daemon_pid);
    d = opendir(path);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d))) {
        char target[PATH_MAX];
        ssize_t len;

        if (e->d_name[0] == '.')
            continue;
        len = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        if (len >= 0) {
            target[len] = '\0';
            if (!strncmp(target, "/proc/", 6))
                continue;
        }
        n++;
    }
    closedir(d);
    randd_close(h);
    return n - 1;
}
