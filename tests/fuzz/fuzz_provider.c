/* libFuzzer: randd.so's provider (provider/randd_provider.c, linked in) started through
 * OSSL_provider_init under a core the harness plays, as libcrypto starts it, and its seed
 * source driven through the dispatch tables with arbitrary sequences, sizes and strengths,
 * against a fake daemon that answers what the input says, in memory and at once (its section
 * says how: no thread, no sleep, so the harness is CPU-bound). Holds each call to
 * the contract of <openssl/core_dispatch.h> and provider-rand(7ssl): 0 or 1 returned, an
 * error raised with every failed seed, generate never writing past outlen and leaving a
 * failed buffer untouched or wiped, get_seed within [min_len, max_len], lock and unlock
 * balanced, no call waiting on the daemon past the timeout (nor hanging: the watchdog),
 * the fallback's line on stderr said at most once (none with log = none), and nothing
 * leaked once everything is freed (LeakSanitizer).
 *
 * Input: 4 bytes choosing the settings, 2 bytes (little-endian) of the daemon's script's
 * length, the script, then the calls. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "protocol.h"

/* Not instrumented for coverage: the harness's own code (reading the input, walking the
 * dispatch tables, its checks, the watchdog). After every input libFuzzer works through each
 * edge it reached, and the harness's were a third of them while saying nothing of the code
 * under test (the watchdog's, bumped from its own thread, were noise). ASan and UBSan still
 * instrument it. The fake daemon is instrumented (it pops this below): what the script made
 * it do (a reset, a close on a request, a split reply) is coverage of the provider's world.
 * Over 60 s runs from the seeds, randd_provider.c and client.c are covered as before. */
#pragma clang attribute push(__attribute__((no_sanitize("coverage"))), apply_to = function)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* ASan's allocator, sized for an input that frees about 5 KiB on average and never 800 KiB
 * (64 generates of 12 KiB at most):
 *  - freed memory is kept out of use for 1 MiB of frees (256 MiB by default): more than any
 *    one input frees, so a use after free within an input, or in the next hundreds, is
 *    caught as before; and what malloc hands out was touched recently, so still in the
 *    cache, not paged in or fetched from memory (most of malloc's time in the profile);
 *  - free memory is never given back to the kernel (every 5 s by default): the heap stays
 *    that small, and giving it back cost a madvise(), a TLB shootdown across the fuzzer's
 *    threads and the page faults that took it again.
 * ASAN_OPTIONS overrides either. */
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=1:allocator_release_to_os_interval_ms=-1";
}

/* The calls the code under test makes on its socket, its clock, its uid, the kernel's
 * generator and its write to stderr come to the fake daemon first (-Wl,--wrap=NAME:
 * __wrap_NAME), which passes what is not its own to the real ones (__real_NAME). */
#define WRAPPED(ret, name, ...) ret __real_##name(__VA_ARGS__); ret __wrap_##name(__VA_ARGS__)
WRAPPED(int, socket, int domain, int type, int protocol);
WRAPPED(int, connect, int fd, const struct sockaddr *sa, socklen_t len);
WRAPPED(ssize_t, send, int fd, const void *buf, size_t n, int flags);
WRAPPED(ssize_t, recv, int fd, void *buf, size_t n, int flags);
WRAPPED(ssize_t, recvmsg, int fd, struct msghdr *msg, int flags);
WRAPPED(int, poll, struct pollfd *fds, nfds_t n, int timeout_ms);
WRAPPED(int, close, int fd);
WRAPPED(int, fcntl, int fd, int cmd, ...);
WRAPPED(int, fstat, int fd, struct stat *st);
WRAPPED(int, setsockopt, int fd, int level, int name, const void *value, socklen_t len);
WRAPPED(int, getsockopt, int fd, int level, int name, void *value, socklen_t *len);
WRAPPED(int, clock_gettime, clockid_t clock, struct timespec *ts);
WRAPPED(uid_t, geteuid, void);
WRAPPED(ssize_t, getrandom, void *buf, size_t n, unsigned flags);
WRAPPED(ssize_t, write, int fd, const void *buf, size_t n);

#define MAX_SCRIPT   4096
#define MAX_CALLS    64
#define MAX_CONTEXTS 4
#define MAX_OUT      (3 * RANDD_MAX_SEED + 100)   /* several SEED requests, pipelined */
#define WATCHDOG_S   20       /* real seconds: waits on the daemon take none, only a hang */

/* The harness's own clock, for the watchdog: real time, not the fake daemon's (below). */
static uint64_t now_ms(void)
{
    struct timespec ts;

    __real_clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#pragma clang attribute pop     /* the fake daemon is instrumented (top of the file) */

/* --- the fake daemon ---------------------------------------------------------------------
 * In memory, in the harness's thread and in step with the client: no socket, no thread, no
 * sleep, hardly a system call. The code under test is linked with its socket calls and its
 * clock wrapped (FUZZ_LIBS_provider in the Makefile; lib/client.c is compiled as shipped):
 *  - socket() for a Unix stream socket takes a slot here, whose descriptor (a copy of
 *    /dev/null) only holds the number; connect() to the fake path connects it to the daemon,
 *    to any other path gets what the kernel says (no such file: the harness's other path).
 *    close() frees the slot.
 *  - send() on it hands the daemon the bytes, and the daemon answers every whole request in
 *    them before send() returns, each with the script's next action byte: OK with the bytes
 *    asked, an error status, raw bytes, close, or hang (take all that comes, answer nothing).
 *    With the script spent it closes the connection.
 *  - A receive takes what the daemon wrote as a stream socket gives it (any split, MSG_PEEK,
 *    then ECONNRESET if the daemon closed on bytes it did not read, 0 at the end once it
 *    closed; EPIPE for a send after). One that would wait finds the daemon done: nothing
 *    more will come. So the wait is not slept but passed on the monotonic clock the client
 *    and the provider read (the fake's own, below), by the poll timeout or the SO_RCVTIMEO
 *    the client waits with (as late as the kernel may end that one), and ends as it would
 *    have.
 *  - fcntl's O_NONBLOCK, SO_RCVTIMEO, SO_PEERCRED (ourselves) and fstat (a socket, its inode
 *    the connection's own) answer as for a Unix socket.
 *  - geteuid() (librandd asks at each connection whom it runs as) gives what it gave at the
 *    start, and getrandom() (the provider's fallback) is the kernel's generator played here
 *    (below): system calls, each costing as much as several calls into the provider.
 *  - The provider's line on stderr is taken and checked, not written (below).
 * Each connection is served on its own: the provider's ordinary one and its modes' one may
 * both be answered. */

enum action { OK_REPLY, ERROR_REPLY = 4, RAW_BYTES, CLOSE, HANG, ACTIONS };

#define MAX_CONNECTIONS 8
#define MAX_UNREAD      (64 * 1024)     /* replies not yet read: a socket holds about 200 KiB */

static struct {
    char dir[64], path[108], absent[128];
    int dev_null;                       /* copied to make the slots' descriptors */
    struct stat socket_stat;            /* what fstat says of a connection, but its inode */
    uint8_t script[MAX_SCRIPT];
    size_t script_len, script_at;
    uint64_t waited_ns;                 /* the waits passed, all told */
    uint64_t clock_ns;                  /* CLOCK_MONOTONIC, as the code under test reads it */
    uid_t euid;                         /* ours, as the kernel said at the start */
    unsigned getrandom_calls;           /* this input's: which large read a signal cuts */
    unsigned log_lines;                 /* this input's provider's, on stderr */
    ino_t next_ino;
    struct connection {
        bool open;                      /* the client's socket is: else the slot is free */
        bool connected;                 /* to the daemon */
        int fd;                         /* the client's descriptor: a copy of /dev/null */
        ino_t ino;
        bool nonblocking;               /* O_NONBLOCK */
        struct timeval rcvtimeo;
        bool daemon_closed, hanging;
        bool reset;                     /* the next receive after the replies: ECONNRESET */
        uint8_t in[1024];               /* a request's bytes, until it is whole */
        size_t in_len;
        uint8_t out[MAX_UNREAD];        /* replies, from out_at on not yet read */
        size_t out_at, out_len;
    } conns[MAX_CONNECTIONS];
} fake;

/* The script's next byte, or -1 when it is spent. */
static int script_next(void)
{
    return fake.script_at < fake.script_len ? fake.script[fake.script_at++] : -1;
}

static struct connection *connection_of(int fd)
{
    for (size_t i = 0; i < MAX_CONNECTIONS; i++)
        if (fake.conns[i].open && fake.conns[i].fd == fd)
            return &fake.conns[i];
    return NULL;
}

static void daemon_write(struct connection *c, const void *buf, size_t n)
{
    if (c->out_at == c->out_len)
        c->out_at = c->out_len = 0;
    if (n > sizeof(c->out) - c->out_len) {
        fprintf(stderr, "fuzz_provider: more than %d bytes of replies unread: a daemon would "
                "block\n", MAX_UNREAD);
        abort();
    }
    memcpy(c->out + c->out_len, buf, n);
    c->out_len += n;
}

static void reply(struct connection *c, int status, uint8_t fill, size_t len)
{
    static uint8_t frame[RANDD_HEADER_BYTES + RANDD_MAX_SEED];
    struct randd_header h = { RANDD_PROTOCOL_VERSION, (uint8_t)status, 0, (uint32_t)len };

    randd_header_encode(frame, &h);
    memset(frame + RANDD_HEADER_BYTES, fill, len);
    daemon_write(c, frame, RANDD_HEADER_BYTES + len);
}

/* One whole request answered as the script says. */
static void serve_one(struct connection *c, const struct randd_header *h, const uint8_t *body)
{
    struct randd_request req = { 0 };
    uint8_t raw[256];
    char why[160];
    int action, a, b;

    if (randd_parse_request(h, body, &req, why, sizeof(why)) != RANDD_OK ||
        req.op != RANDD_OP_SEED)
        abort();                      /* the provider sends valid SEED requests only */
    if ((action = script_next()) < 0) {
        c->daemon_closed = true;
        return;
    }
    switch (action % ACTIONS) {
    case ERROR_REPLY:
        a = script_next(), b = script_next();
        reply(c, a < 0 ? RANDD_NOT_READY : a, 'm', b < 0 ? 0 : (size_t)b % 80);
        break;
    case RAW_BYTES:
        a = script_next();
        for (b = 0; a > 0 && b < a; b++) {
            int x = script_next();

            if (x < 0)
                break;
            raw[b] = (uint8_t)x;
        }
        daemon_write(c, raw, (size_t)b);
        break;
    case CLOSE:
        c->daemon_closed = true;
        break;
    case HANG:
        c->hanging = true;            /* until the client times out and closes */
        break;
    default:                          /* OK_REPLY, most actions: seeds get through */
        /* Bytes never 0 nor 0xa5, so that the harness tells them from its own. */
        reply(c, RANDD_OK, (uint8_t)(0x80 | action), req.n);
        break;
    }
}

/* n bytes from the client, taken and answered: whole requests one by one; a request longer
 * than any SEED closes the connection, as a daemon that cannot parse it would. */
static void daemon_take(struct connection *c, const uint8_t *p, size_t n)
{
    while (n > 0 && !c->daemon_closed && !c->hanging) {
        size_t step = n < sizeof(c->in) - c->in_len ? n : sizeof(c->in) - c->in_len, used = 0;
        struct randd_header h;

        memcpy(c->in + c->in_len, p, step);
        c->in_len += step, p += step, n -= step;
        while (!c->daemon_closed && !c->hanging && c->in_len - used >= RANDD_HEADER_BYTES) {
            randd_header_decode(c->in + used, &h);
            if (h.length > 64) {
                c->daemon_closed = true;
                break;
            }
            if (c->in_len - used < RANDD_HEADER_BYTES + h.length)
                break;
            serve_one(c, &h, c->in + used + RANDD_HEADER_BYTES);
            used += RANDD_HEADER_BYTES + h.length;
        }
        /* Closed with the client's bytes unread (a request pipelined after the one it closed
         * on): the kernel resets the connection. */
        if (c->daemon_closed && (c->in_len > used || n > 0))
            c->reset = true;
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
    }
}

static bool has_unread(const struct connection *c)
{
    return c->out_at < c->out_len;
}

/* A wait that nothing will end, passed at once. */
static void pass_wait(uint64_t ns)
{
    fake.waited_ns += ns;
    fake.clock_ns += ns;
}

/* A Unix stream socket is a slot here, its descriptor one of the slots' own. */
int __wrap_socket(int domain, int type, int protocol)
{
    struct connection *c = NULL;

    if (domain != AF_UNIX || (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_STREAM)
        return __real_socket(domain, type, protocol);
    for (size_t i = 0; !c && i < MAX_CONNECTIONS; i++)
        if (!fake.conns[i].open)
            c = &fake.conns[i];
    if (!c) {
        fprintf(stderr, "fuzz_provider: more than %d sockets open at once\n", MAX_CONNECTIONS);
        abort();
    }
    c->open = true;
    c->connected = false;
    c->ino = ++fake.next_ino;
    c->nonblocking = type & SOCK_NONBLOCK;
    c->rcvtimeo = (struct timeval){ 0, 0 };
    c->daemon_closed = c->hanging = c->reset = false;
    c->in_len = c->out_at = c->out_len = 0;
    return c->fd;
}

/* To the fake path: connected to the daemon. To any other (one that is not there, or not a
 * socket): what a real connect says; a real daemon answering there stops the harness. */
int __wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
    struct connection *c = connection_of(fd);
    int real, rc, err;

    if (!c)
        return __real_connect(fd, sa, len);
    if (sa->sa_family == AF_UNIX && len >= sizeof(*un) && !strcmp(un->sun_path, fake.path)) {
        c->connected = true;
        return 0;
    }
    /* The harness's other path, in its own directory, where nothing is ever made. */
    if (sa->sa_family == AF_UNIX && len >= sizeof(*un) && !strcmp(un->sun_path, fake.absent)) {
        errno = ENOENT;
        return -1;
    }
    if ((real = __real_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        abort();
    rc = __real_connect(real, sa, len);
    err = errno;
    __real_close(real);
    if (rc == 0) {
        fprintf(stderr, "fuzz_provider: a real daemon answered at %s\n", un->sun_path);
        abort();
    }
    errno = err;
    return -1;
}

ssize_t __wrap_send(int fd, const void *buf, size_t n, int flags)
{
    struct connection *c = connection_of(fd);

    if (!c)
        return __real_send(fd, buf, n, flags);
    if (!c->connected) {
        errno = ENOTCONN;
        return -1;
    }
    if (c->daemon_closed) {
        if (!(flags & MSG_NOSIGNAL))
            abort();                  /* SIGPIPE: librandd must never risk it */
        errno = EPIPE;
        return -1;
    }
    daemon_take(c, buf, n);
    return (ssize_t)n;
}

/* A receive of up to n bytes into iov: what is there, 0 at the end, or -1 with errno. */
static ssize_t receive(struct connection *c, const struct iovec *iov, size_t iovlen,
                       int flags)
{
    size_t got = 0;

    if (!c->connected) {
        errno = ENOTCONN;
        return -1;
    }
    if (!has_unread(c)) {
        if (c->reset && !(flags & MSG_PEEK)) {
            c->reset = false;         /* said once, as the kernel does */
            errno = ECONNRESET;
            return -1;
        }
        if (c->daemon_closed)
            return 0;
        if (!(flags & MSG_DONTWAIT) && !c->nonblocking) {
            if (!c->rcvtimeo.tv_sec && !c->rcvtimeo.tv_usec) {
                fprintf(stderr, "fuzz_provider: a receive without a timeout from a daemon "
                        "that will never answer: it would wait for ever\n");
                abort();
            }
            uint64_t ns = (uint64_t)c->rcvtimeo.tv_sec * 1000000000u +
                          (uint64_t)c->rcvtimeo.tv_usec * 1000u;

            /* As late as the kernel may end it: its timer wheel by up to 8/63 of the wait,
             * and a jiffy (10 ms at HZ=100). */
            pass_wait(ns + ns / 63 * 8 + 10000000u);
        }
        errno = EAGAIN;
        return -1;
    }
    for (size_t i = 0; i < iovlen && has_unread(c); i++) {
        size_t left = c->out_len - c->out_at - got, step = iov[i].iov_len;

        step = step < left ? step : left;
        memcpy(iov[i].iov_base, c->out + c->out_at + got, step);
        got += step;
    }
    if (!(flags & MSG_PEEK))
        c->out_at += got;
    return (ssize_t)got;
}

ssize_t __wrap_recv(int fd, void *buf, size_t n, int flags)
{
    struct connection *c = connection_of(fd);
    struct iovec iov = { buf, n };

    return c ? receive(c, &iov, 1, flags) : __real_recv(fd, buf, n, flags);
}

ssize_t __wrap_recvmsg(int fd, struct msghdr *msg, int flags)
{
    struct connection *c = connection_of(fd);

    if (!c)
        return __real_recvmsg(fd, msg, flags);
    msg->msg_controllen = 0;          /* a daemon here sends no descriptor */
    msg->msg_flags = 0;
    return receive(c, msg->msg_iov, msg->msg_iovlen, flags);
}

int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
    struct connection *c = n == 1 ? connection_of(fds[0].fd) : NULL;

    if (!c)
        return __real_poll(fds, n, timeout_ms);
    /* As a Unix socket: writable while open, readable with a reply or at the end. */
    fds[0].revents = (fds[0].events & POLLOUT) |
                     (has_unread(c) || c->daemon_closed ? fds[0].events & POLLIN : 0) |
                     (c->daemon_closed ? POLLHUP : 0) | (c->reset ? POLLERR : 0);
    if (fds[0].revents)
        return 1;
    if (timeout_ms < 0) {
        fprintf(stderr, "fuzz_provider: a poll without a timeout on a daemon that will never "
                "answer: it would wait for ever\n");
        abort();
    }
    pass_wait((uint64_t)timeout_ms * 1000000u);
    return 0;
}

int __wrap_close(int fd)
{
    struct connection *c = connection_of(fd);

    if (!c)
        return __real_close(fd);
    c->open = false;                  /* the daemon sees the end: the connection is gone */
    return 0;                         /* the descriptor stays the slot's */
}

int __wrap_fcntl(int fd, int cmd, ...)
{
    struct connection *c = connection_of(fd);
    va_list ap;
    long arg;

    va_start(ap, cmd);
    arg = va_arg(ap, long);           /* F_GETFL and the like pass none: unused then */
    va_end(ap);
    if (c && cmd == F_GETFL)
        return O_RDWR | (c->nonblocking ? O_NONBLOCK : 0);
    if (c && cmd == F_SETFL) {
        c->nonblocking = arg & O_NONBLOCK;
        return 0;
    }
    return __real_fcntl(fd, cmd, arg);
}

/* librandd asks at every call whether its descriptor is still its socket: answered here. */
int __wrap_fstat(int fd, struct stat *st)
{
    struct connection *c = connection_of(fd);

    if (!c)
        return __real_fstat(fd, st);
    *st = fake.socket_stat;
    st->st_ino = c->ino;
    return 0;
}

int __wrap_setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
    struct connection *c = connection_of(fd);

    if (!c)
        return __real_setsockopt(fd, level, name, value, len);
    if (level != SOL_SOCKET || len != sizeof(struct timeval) ||
        (name != SO_RCVTIMEO && name != SO_SNDTIMEO)) {
        errno = ENOPROTOOPT;
        return -1;
    }
    if (name == SO_RCVTIMEO)
        memcpy(&c->rcvtimeo, value, sizeof(c->rcvtimeo));
    return 0;                         /* SO_SNDTIMEO: a send here never waits */
}

int __wrap_getsockopt(int fd, int level, int name, void *value, socklen_t *len)
{
    struct connection *c = connection_of(fd);
    static struct ucred us;

    if (!c)
        return __real_getsockopt(fd, level, name, value, len);
    if (!us.pid)
        us = (struct ucred){ getpid(), geteuid(), getegid() };
    if (level == SOL_SOCKET && name == SO_PEERCRED && *len >= sizeof(us) && c->connected) {
        memcpy(value, &us, sizeof(us));
        *len = sizeof(us);
        return 0;
    }
    if (level == SOL_SOCKET && name == SO_RCVTIMEO && *len >= sizeof(c->rcvtimeo)) {
        memcpy(value, &c->rcvtimeo, sizeof(c->rcvtimeo));
        *len = sizeof(c->rcvtimeo);
        return 0;
    }
    errno = ENOPROTOOPT;
    return -1;
}

/* CLOCK_MONOTONIC as the code under test reads it: the fake's own, which starts every input
 * at CLOCK_START_NS and moves only by the waits passed, and by CLOCK_TICK_NS at each read
 * (the code's own time between two reads). Real time does not show in it, so an input runs
 * the same however loaded the machine is (on the real clock, a 1 ms timeout could run out
 * while the harness was descheduled), and what it finds is found again when it is run
 * alone; and reading it is not a call into the vDSO. Other clocks are the real ones. */
#define CLOCK_START_NS (86400ull * 1000000000u)    /* a day after boot: any value will do */
#define CLOCK_TICK_NS  1000u

int __wrap_clock_gettime(clockid_t clock, struct timespec *ts)
{
    if (clock != CLOCK_MONOTONIC)
        return __real_clock_gettime(clock, ts);
    fake.clock_ns += CLOCK_TICK_NS;
    ts->tv_sec = (time_t)(fake.clock_ns / 1000000000u);
    ts->tv_nsec = (long)(fake.clock_ns % 1000000000u);
    return 0;
}

uid_t __wrap_geteuid(void)
{
    return fake.euid;
}

/* The kernel's generator, as the provider's fallback reads it, played here: the system call,
 * and the kernel's ChaCha over as much as 12 KiB, cost more than the rest of a call. As the
 * kernel answers a reader that does not ask for GRND_NONBLOCK once its generator is ready:
 * up to 256 bytes whole; a larger read may be cut short by a signal, and is here, every
 * other one with EINTR and the rest halfway, so that the provider's loop must finish the
 * seed. flags 0, as the provider promises (it waits for the kernel's generator and never
 * takes weak bytes). The bytes are 0x5a: not 0 nor 0xa5, so a failed buffer holding them is
 * still told from an untouched or wiped one. */
ssize_t __wrap_getrandom(void *buf, size_t n, unsigned flags)
{
    if (flags != 0) {
        fprintf(stderr, "fuzz_provider: getrandom with flags %#x, not 0\n", flags);
        abort();
    }
    if (n > 256 && fake.getrandom_calls++ % 2 == 0) {
        errno = EINTR;
        return -1;
    }
    if (n > 256)
        n = (n + 1) / 2;
    memset(buf, 0x5a, n);
    return (ssize_t)n;
}

static const char *setting_log;

/* The provider's one line on stderr when it first falls back (log = stderr, the default),
 * taken here: written, it is a system call and a line in the fuzzer's log for one input in
 * six, gigabytes of them over 100M inputs. Held to what the provider promises: one line in
 * one write, at most once per provider ("said once per process"), and none with log = none.
 * Every other write (libFuzzer's own, in a crash too) goes through as it was. */
ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    static const char prefix[] = "randd.so: ";

    if (fd != STDERR_FILENO || n < sizeof(prefix) - 1 ||
        memcmp(buf, prefix, sizeof(prefix) - 1) != 0)
        return __real_write(fd, buf, n);
    if (memchr(buf, '\n', n) != (const char *)buf + n - 1 || ++fake.log_lines > 1 ||
        (setting_log && strcmp(setting_log, "stderr"))) {
        fprintf(stderr, "fuzz_provider: line %u of the provider's log (log = %s), not one "
                "line: %.*s\n", fake.log_lines, setting_log ? setting_log : "(default)",
                (int)n, (const char *)buf);
        abort();
    }
    return (ssize_t)n;
}

/* At the end of an input: the provider closed every connection it opened. */
static void fake_check_all_closed(void)
{
    for (size_t i = 0; i < MAX_CONNECTIONS; i++)
        if (fake.conns[i].open) {
            fprintf(stderr, "fuzz_provider: the provider left a connection to the daemon "
                    "open after teardown (fd %d)\n", fake.conns[i].fd);
            abort();
        }
}

static void fake_start(void)
{
    strcpy(fake.dir, "/tmp/fuzz-provider-XXXXXX");
    if (!mkdtemp(fake.dir) || (fake.dev_null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0 ||
        __real_fstat(fake.dev_null, &fake.socket_stat) < 0)
        abort();
    for (size_t i = 0; i < MAX_CONNECTIONS; i++)
        if ((fake.conns[i].fd = __real_fcntl(fake.dev_null, F_DUPFD_CLOEXEC, 0)) < 0)
            abort();
    fake.euid = __real_geteuid();
    fake.socket_stat.st_mode = S_IFSOCK | 0777;
    fake.socket_stat.st_rdev = 0;
    /* Neither is ever made: the first is answered here, the second is not there. */
    snprintf(fake.path, sizeof(fake.path), "%s/randd.sock", fake.dir);
    snprintf(fake.absent, sizeof(fake.absent), "%s/absent.sock", fake.dir);
}

/* From here on, the harness's own code again: not instrumented (top of the file). */
#pragma clang attribute push(__attribute__((no_sanitize("coverage"))), apply_to = function)

/* --- the watchdog: no call may hang -------------------------------------------------------
 * Every wait on the daemon is passed at once (above), so a call that takes WATCHDOG_S
 * seconds of real time is blocked on a lock that a failed call leaked. The harness's thread
 * reads no clock for it (it makes some twenty calls an input): it counts the calls it begins
 * and says whether one is in progress; the watchdog, every 100 ms, times a call it sees in
 * progress under the same count. */

static _Atomic uint64_t calls_begun;
static atomic_bool in_call;
static _Atomic(const char *) call_name;

static void *watchdog(void *arg)
{
    uint64_t seen = 0, since = now_ms();

    (void)arg;
    for (;;) {
        uint64_t n = atomic_load_explicit(&calls_begun, memory_order_relaxed);

        if (!atomic_load_explicit(&in_call, memory_order_relaxed) || n != seen) {
            seen = n;
            since = now_ms();
        } else if (now_ms() - since > WATCHDOG_S * 1000u) {
            fprintf(stderr, "fuzz_provider: %s has not returned after %d s: a leaked lock?\n",
                    atomic_load(&call_name), WATCHDOG_S);
            abort();
        }
        usleep(100000);
    }
    return NULL;
}

/* The waits the daemon made the call sit through: at most the timeout, and the millisecond
 * that poll()'s timeout, rounded up, may add. */
static uint64_t call_waits_from;
static uint64_t timeout_ns(void);

static void call_begin(const char *name)
{
    /* Relaxed: only this thread writes them, and the watchdog needs them within seconds. */
    atomic_store_explicit(&call_name, name, memory_order_relaxed);
    atomic_store_explicit(&calls_begun, atomic_load_explicit(&calls_begun, memory_order_relaxed)
                          + 1, memory_order_relaxed);
    atomic_store_explicit(&in_call, true, memory_order_relaxed);
    call_waits_from = fake.waited_ns;
}

static void call_end(void)
{
    uint64_t waited = fake.waited_ns - call_waits_from;

    atomic_store_explicit(&in_call, false, memory_order_relaxed);
    if (waited > timeout_ns() + 1000000u) {
        fprintf(stderr, "fuzz_provider: %s waited %.3f ms on the daemon, past the timeout of "
                "%.3f ms\n", atomic_load(&call_name), (double)waited / 1e6,
                (double)timeout_ns() / 1e6);
        abort();
    }
}

/* --- the core the provider is started under ---------------------------------------------- */

static const char *setting_socket, *setting_timeout, *setting_fallback, *setting_log;
static int errors_raised;
static char last_error[512];

static int core_get_params(const OSSL_CORE_HANDLE *core, OSSL_PARAM params[])
{
    (void)core;
    for (OSSL_PARAM *p = params; p->key; p++) {
        const char *v = !strcmp(p->key, "socket") ? setting_socket :
                        !strcmp(p->key, "timeout") ? setting_timeout :
                        !strcmp(p->key, "fallback") ? setting_fallback :
                        !strcmp(p->key, "log") ? setting_log : NULL;

        if (v && !OSSL_PARAM_set_utf8_ptr(p, v))
            return 0;
    }
    return 1;
}

static void core_new_error(const OSSL_CORE_HANDLE *core)
{
    (void)core;
    errors_raised++;
}

static void core_set_error_debug(const OSSL_CORE_HANDLE *core, const char *file, int line,
                                 const char *func)
{
    (void)core;
    if (!file || !func || line <= 0)
        abort();
}

/* Formats the message as OpenSSL's core would: a bad format or argument shows here. */
static void core_vset_error(const OSSL_CORE_HANDLE *core, uint32_t reason, const char *fmt,
                            va_list args)
{
    (void)core;
    if (reason == 0 || !fmt)
        abort();
    vsnprintf(last_error, sizeof(last_error), fmt, args);
}

static const OSSL_DISPATCH core_functions[] = {
    { OSSL_FUNC_CORE_GET_PARAMS, (void (*)(void))core_get_params },
    { OSSL_FUNC_CORE_NEW_ERROR, (void (*)(void))core_new_error },
    { OSSL_FUNC_CORE_SET_ERROR_DEBUG, (void (*)(void))core_set_error_debug },
    { OSSL_FUNC_CORE_VSET_ERROR, (void (*)(void))core_vset_error },
    { 0, NULL },
};

/* The settings: most inputs get a working provider on the fake daemon; the rest a socket
 * that is not there or too long, and values that are wrong. */
static void choose_settings(const uint8_t c[4])
{
    static char overlong[200];
    static const char *const timeouts[] = { NULL, "1", "2", "5", "10", "0", "60001", "5ms",
                                            "-1", "", "40", "60000" };
    static const char *const fallbacks[] = { NULL, "kernel", "none", "kernal", "" };
    static const char *const logs[] = { "none", "none", "none", NULL, "stderr", "journal" };

    memset(overlong, 'x', sizeof(overlong) - 1);
    switch (c[0] % 8) {
    case 5: setting_socket = NULL; break;              /* $RANDD_SOCKET: absent */
    case 6: setting_socket = fake.absent; break;
    case 7: setting_socket = c[0] & 0x80 ? overlong : ""; break;
    default: setting_socket = fake.path; break;
    }
    /* Any timeout costs nothing: the fake daemon's waits are not slept. From 40 ms up (and
     * the default, 1 s) librandd waits in a blocking receive under SO_RCVTIMEO. */
    setting_timeout = timeouts[c[1] % (sizeof(timeouts) / sizeof(timeouts[0]))];
    setting_fallback = fallbacks[c[2] % (sizeof(fallbacks) / sizeof(fallbacks[0]))];
    setting_log = logs[c[3] % (sizeof(logs) / sizeof(logs[0]))];
}

/* The timeout the provider runs with (one it refused starts no provider). */
static uint64_t timeout_ns(void)
{
    return (setting_timeout ? (uint64_t)atoi(setting_timeout) : 1000u) * 1000000u;
}

/* Whether a working provider must give a seed whatever the daemon does. */
static bool seeds_always(void)
{
    bool ok_timeout = !setting_timeout ||
                      (*setting_timeout && strspn(setting_timeout, "0123456789") ==
                       strlen(setting_timeout) && atoi(setting_timeout) >= 1 &&
                       atoi(setting_timeout) <= 60000);

    return ok_timeout && (!setting_fallback || !strcmp(setting_fallback, "kernel")) &&
           (!setting_log || !strcmp(setting_log, "none") || !strcmp(setting_log, "stderr")) &&
           (!setting_socket || strlen(setting_socket) < 108);
}

/* --- the provider, through its dispatch tables ------------------------------------------ */

static struct {
    void *provctx;
    OSSL_FUNC_provider_teardown_fn *teardown;
    OSSL_FUNC_provider_gettable_params_fn *gettable_params;
    OSSL_FUNC_provider_get_params_fn *get_params;
    OSSL_FUNC_provider_query_operation_fn *query_operation;
    OSSL_FUNC_provider_get_reason_strings_fn *reason_strings;
    OSSL_FUNC_rand_newctx_fn *newctx;
    OSSL_FUNC_rand_freectx_fn *freectx;
    OSSL_FUNC_rand_instantiate_fn *instantiate;
    OSSL_FUNC_rand_uninstantiate_fn *uninstantiate;
    OSSL_FUNC_rand_generate_fn *generate;
    OSSL_FUNC_rand_reseed_fn *reseed;
    OSSL_FUNC_rand_get_seed_fn *get_seed;
    OSSL_FUNC_rand_clear_seed_fn *clear_seed;
    OSSL_FUNC_rand_enable_locking_fn *enable_locking;
    OSSL_FUNC_rand_lock_fn *lock;
    OSSL_FUNC_rand_unlock_fn *unlock;
    OSSL_FUNC_rand_gettable_ctx_params_fn *gettable_ctx_params;
    OSSL_FUNC_rand_get_ctx_params_fn *get_ctx_params;
    OSSL_FUNC_rand_verify_zeroization_fn *verify_zeroization;
} prov;

static bool start_provider(void)
{
    const OSSL_DISPATCH *out = NULL, *d;
    const OSSL_ALGORITHM *alg;
    int no_cache = -1;

    memset(&prov, 0, sizeof(prov));
    if (OSSL_provider_init((const OSSL_CORE_HANDLE *)&prov, core_functions, &out,
                           &prov.provctx) != 1)
        return false;                 /* out of memory: nothing to hold it to */
    for (d = out; d->function_id; d++)
        switch (d->function_id) {
        case OSSL_FUNC_PROVIDER_TEARDOWN: prov.teardown = OSSL_FUNC_provider_teardown(d); break;
        case OSSL_FUNC_PROVIDER_GETTABLE_PARAMS:
            prov.gettable_params = OSSL_FUNC_provider_gettable_params(d);
            break;
        case OSSL_FUNC_PROVIDER_GET_PARAMS:
            prov.get_params = OSSL_FUNC_provider_get_params(d);
            break;
        case OSSL_FUNC_PROVIDER_QUERY_OPERATION:
            prov.query_operation = OSSL_FUNC_provider_query_operation(d);
            break;
        case OSSL_FUNC_PROVIDER_GET_REASON_STRINGS:
            prov.reason_strings = OSSL_FUNC_provider_get_reason_strings(d);
            break;
        }
    if (!prov.teardown || !prov.query_operation ||
        !(alg = prov.query_operation(prov.provctx, OSSL_OP_RAND, &no_cache)) ||
        no_cache != 0 || !alg->algorithm_names || alg[1].algorithm_names)
        abort();
    for (d = alg->implementation; d->function_id; d++)
        switch (d->function_id) {
        case OSSL_FUNC_RAND_NEWCTX: prov.newctx = OSSL_FUNC_rand_newctx(d); break;
        case OSSL_FUNC_RAND_FREECTX: prov.freectx = OSSL_FUNC_rand_freectx(d); break;
        case OSSL_FUNC_RAND_INSTANTIATE:
            prov.instantiate = OSSL_FUNC_rand_instantiate(d);
            break;
        case OSSL_FUNC_RAND_UNINSTANTIATE:
            prov.uninstantiate = OSSL_FUNC_rand_uninstantiate(d);
            break;
        case OSSL_FUNC_RAND_GENERATE: prov.generate = OSSL_FUNC_rand_generate(d); break;
        case OSSL_FUNC_RAND_RESEED: prov.reseed = OSSL_FUNC_rand_reseed(d); break;
        case OSSL_FUNC_RAND_GET_SEED: prov.get_seed = OSSL_FUNC_rand_get_seed(d); break;
        case OSSL_FUNC_RAND_CLEAR_SEED: prov.clear_seed = OSSL_FUNC_rand_clear_seed(d); break;
        case OSSL_FUNC_RAND_ENABLE_LOCKING:
            prov.enable_locking = OSSL_FUNC_rand_enable_locking(d);
            break;
        case OSSL_FUNC_RAND_LOCK: prov.lock = OSSL_FUNC_rand_lock(d); break;
        case OSSL_FUNC_RAND_UNLOCK: prov.unlock = OSSL_FUNC_rand_unlock(d); break;
        case OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS:
            prov.gettable_ctx_params = OSSL_FUNC_rand_gettable_ctx_params(d);
            break;
        case OSSL_FUNC_RAND_GET_CTX_PARAMS:
            prov.get_ctx_params = OSSL_FUNC_rand_get_ctx_params(d);
            break;
        case OSSL_FUNC_RAND_VERIFY_ZEROIZATION:
            prov.verify_zeroization = OSSL_FUNC_rand_verify_zeroization(d);
            break;
        }
    /* A seed source must have these (provider-rand(7ssl)), and the pairs go together. */
    if (!prov.newctx || !prov.freectx || !prov.instantiate || !prov.generate ||
        !prov.get_seed != !prov.clear_seed || !prov.lock != !prov.unlock ||
        (prov.lock && !prov.enable_locking) || !prov.get_ctx_params)
        abort();
    return true;
}

/* --- the calls ---------------------------------------------------------------------------- */

struct input {
    const uint8_t *p;
    size_t left;
};

static uint8_t take8(struct input *in)
{
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static uint32_t take32(struct input *in)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++)
        v = v << 8 | take8(in);
    return v;
}

/* Sizes and strengths as a caller might pass them: mostly near the limits, sometimes any. */
static size_t take_size(struct input *in)
{
    static const size_t special[] = { 0, 1, 16, 31, 32, 33, 47, 48, 64, 4095, 4096, 4097,
                                      8192, MAX_OUT, SIZE_MAX, SIZE_MAX / 2 };
    uint8_t how = take8(in);
    size_t v;

    if (how < 128)
        return special[how % (sizeof(special) / sizeof(special[0]))];
    v = how < 192 ? take8(in) : take32(in);
    return v << (how < 192 ? 8 : 24) | take8(in);
}

static unsigned take_strength(struct input *in)
{
    static const unsigned special[] = { 0, 1, 112, 128, 192, 255, 256, 257, 384, 512,
                                        UINT32_MAX, 1u << 31 };
    uint8_t how = take8(in);

    return how < 200 ? special[how % (sizeof(special) / sizeof(special[0]))] : take32(in);
}

struct context {
    void *ctx;
    bool locked;                      /* by us, through the lock function */
    bool ready;                       /* instantiated with a strength it offers */
    unsigned char *seed;              /* from get_seed, not yet given to clear_seed */
    size_t seed_len;
    bool pr_pending;                  /* a reseed asked for prediction resistance: the next
                                       * request is in that mode, which never falls back */
};

static struct context contexts[MAX_CONTEXTS];

static void check_01(int rc, const char *what)
{
    if (rc != 0 && rc != 1) {
        fprintf(stderr, "fuzz_provider: %s returned %d, not 0 or 1\n", what, rc);
        abort();
    }
}

/* A failed seeding call says why: OpenSSL shows the error queue to the program. */
static void check_raised(int before, const char *what)
{
    if (errors_raised == before) {
        fprintf(stderr, "fuzz_provider: %s failed without raising an error\n", what);
        abort();
    }
}

static void clear_seed(struct context *c)
{
    if (!c->seed)
        return;
    call_begin("clear_seed");
    prov.clear_seed(c->ctx, c->seed, c->seed_len);
    call_end();
    c->seed = NULL;
}

/* Whether the n bytes at p are all b: one memcmp, not a comparison (traced) for each byte. */
static bool all_bytes(const unsigned char *p, size_t n, unsigned char b)
{
    return n == 0 || (p[0] == b && memcmp(p, p + 1, n - 1) == 0);
}

static void do_generate(struct context *c, struct input *in)
{
    size_t outlen = take_size(in) % (MAX_OUT + 1), adin_len = take8(in) % 64;
    unsigned strength = take_strength(in);
    int pr = take8(in) & 1, before = errors_raised, rc;
    unsigned char adin[64] = { 0 };
    unsigned char *out = malloc(outlen ? outlen : 1);    /* exactly outlen: ASan guards it */

    if (!out)
        abort();
    memset(out, 0xa5, outlen);
    call_begin("generate");
    rc = prov.generate(c->ctx, out, outlen, strength, pr, adin, adin_len);
    call_end();
    check_01(rc, "generate");
    pr |= c->pr_pending;              /* the mode the provider asked in */
    if (rc == 1 && pr)
        c->pr_pending = false;
    if (rc == 0) {
        check_raised(before, "generate");
        /* Untouched (refused before any byte came) or wiped: never part of a seed. */
        if (!all_bytes(out, outlen, 0xa5) && !all_bytes(out, outlen, 0)) {
            fprintf(stderr, "fuzz_provider: a failed generate left bytes in the buffer\n");
            abort();
        }
    } else if (!c->ready || strength > 256) {
        fprintf(stderr, "fuzz_provider: generate gave bytes (ready %d, strength %u)\n",
                c->ready, strength);
        abort();
    }
    /* Prediction resistance never falls back: the kernel is not a noise source. */
    if (rc == 0 && c->ready && strength <= 256 && !pr && seeds_always()) {
        fprintf(stderr, "fuzz_provider: generate failed with fallback = kernel: %s\n",
                last_error);
        abort();
    }
    free(out);
}

static void do_get_seed(struct context *c, struct input *in)
{
    int entropy = (int)take_strength(in), pr = take8(in) & 1, before = errors_raised;
    size_t min_len = take_size(in), max_len = take_size(in), n, need;
    unsigned char *seed = (unsigned char *)&prov, adin[sizeof(void *)] = { 0 };

    clear_seed(c);
    call_begin("get_seed");
    n = prov.get_seed(c->ctx, &seed, entropy, min_len, max_len, pr, adin, sizeof(adin));
    call_end();
    pr |= c->pr_pending;
    if (n > 0 && pr)
        c->pr_pending = false;
    need = entropy > 0 ? ((size_t)entropy + 7) / 8 : 0;
    if (need < min_len)
        need = min_len;
    if (n == 0) {
        check_raised(before, "get_seed");
        if (seed != (unsigned char *)&prov)
            abort();                  /* *pout is the caller's until there is a seed */
        if (c->ready && entropy <= 384 && need > 0 && need <= max_len &&
            need <= RANDD_MAX_SEED && !pr && seeds_always()) {
            fprintf(stderr, "fuzz_provider: get_seed failed with fallback = kernel: %s\n",
                    last_error);
            abort();
        }
        return;
    }
    if (!c->ready || !seed || n < need || n > max_len || n > RANDD_MAX_SEED ||
        entropy > 384) {      /* 1.5 x the strength: entropy and nonce */
        fprintf(stderr, "fuzz_provider: get_seed gave %zu bytes (entropy %d, min %zu, max "
                "%zu, ready %d)\n", n, entropy, min_len, max_len, c->ready);
        abort();
    }
    memset(seed, 0, n);               /* all of it is ours to use: ASan checks */
    c->seed = seed;
    c->seed_len = n;
}

static void do_get_ctx_params(struct context *c, struct input *in)
{
    static const char *const keys[] = { OSSL_RAND_PARAM_STATE, OSSL_RAND_PARAM_STRENGTH,
                                        OSSL_RAND_PARAM_MAX_REQUEST, "unknown" };
    static const unsigned types[] = { OSSL_PARAM_INTEGER, OSSL_PARAM_UNSIGNED_INTEGER,
                                      OSSL_PARAM_UTF8_STRING, OSSL_PARAM_OCTET_STRING,
                                      OSSL_PARAM_UTF8_PTR, OSSL_PARAM_REAL };
    static const size_t sizes[] = { 0, 1, 2, 4, 8, 16 };
    uint64_t storage[4][2];
    OSSL_PARAM params[5];
    size_t n = take8(in) % 5;
    int rc;

    memset(storage, 0, sizeof(storage));
    for (size_t i = 0; i < n; i++) {
        uint8_t k = take8(in), t = take8(in);

        params[i] = (OSSL_PARAM){ keys[k % 4], types[t % 6], storage[i],
                                  sizes[(t >> 3) % 6], OSSL_PARAM_UNMODIFIED };
        if (types[t % 6] == OSSL_PARAM_UTF8_PTR)
            params[i].data_size = 0;
    }
    params[n] = (OSSL_PARAM)OSSL_PARAM_END;
    call_begin("get_ctx_params");
    rc = prov.get_ctx_params(c->ctx, take8(in) == 255 ? NULL : params);
    call_end();
    check_01(rc, "get_ctx_params");
    for (size_t i = 0; i < n && rc == 1; i++)
        if (params[i].return_size != OSSL_PARAM_UNMODIFIED &&
            params[i].return_size > sizeof(storage[i]))
            abort();
}

static void do_provider_calls(struct input *in)
{
    const char *name = NULL, *version = NULL, *buildinfo = NULL;
    int status = -1, no_cache;
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, (char **)&name, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, (char **)&version, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, (char **)&buildinfo, 0),
        OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, &status),
        OSSL_PARAM_END,
    };
    const OSSL_ITEM *reasons;
    int op = (int)take32(in);

    if (prov.query_operation(prov.provctx, op, &no_cache) && op != OSSL_OP_RAND)
        abort();
    if (prov.gettable_params && !prov.gettable_params(prov.provctx))
        abort();
    if (prov.get_params && (prov.get_params(prov.provctx, params) != 1 || !name ||
                            !version || !buildinfo || status != 1))
        abort();
    if (prov.reason_strings && (reasons = prov.reason_strings(prov.provctx)))
        for (; reasons->id; reasons++)
            if (!reasons->ptr || !*(const char *)reasons->ptr)
                abort();
}

/* One call, chosen by the input, made only as OpenSSL would make it: a context is locked by
 * us at most once, unlocked only when locked, freed only when unlocked and its seed cleared. */
static void one_call(struct input *in)
{
    uint8_t op = take8(in);
    struct context *c = &contexts[take8(in) % MAX_CONTEXTS];
    int rc, pr, before = errors_raised;

    if (!c->ctx && op % 16 != 15) {
        call_begin("newctx");
        c->ctx = prov.newctx(prov.provctx, NULL, NULL);
        call_end();
        if (!c->ctx)
            abort();
        c->ready = false;
        c->pr_pending = false;
        return;
    }
    switch (op % 16) {
    case 0: {                         /* a seed source takes no parent */
        void *bad;

        call_begin("newctx");
        bad = prov.newctx(prov.provctx, c->ctx ? c->ctx : &prov, NULL);
        call_end();
        if (bad)
            abort();
        check_raised(before, "newctx with a parent");
        break;
    }
    case 1:
        if (c->locked)
            break;
        clear_seed(c);
        call_begin("freectx");
        prov.freectx(c->ctx);
        call_end();
        c->ctx = NULL;
        break;
    case 2: {
        unsigned strength = take_strength(in);
        unsigned char pstr[32] = { 0 };

        call_begin("instantiate");
        rc = prov.instantiate(c->ctx, strength, take8(in) & 1, pstr, take8(in) % 33, NULL);
        call_end();
        check_01(rc, "instantiate");
        if (rc != (strength <= 256))
            abort();
        if (rc)
            c->ready = true;
        else
            check_raised(before, "instantiate");
        break;
    }
    case 3:
        if (!prov.uninstantiate)
            break;
        call_begin("uninstantiate");
        rc = prov.uninstantiate(c->ctx);
        call_end();
        check_01(rc, "uninstantiate");
        if (rc)
            c->ready = false;
        break;
    case 4: case 5: case 6:
        do_generate(c, in);
        break;
    case 7:
        if (!prov.reseed)
            break;
        pr = take8(in) & 1;
        call_begin("reseed");
        rc = prov.reseed(c->ctx, pr, NULL, 0, NULL, 0);
        call_end();
        check_01(rc, "reseed");
        if (rc == 0)
            check_raised(before, "reseed");
        else if (pr)
            c->pr_pending = true;
        break;
    case 8: case 9:
        do_get_seed(c, in);
        break;
    case 10:
        clear_seed(c);
        break;
    case 11:
        if (!prov.enable_locking)
            break;
        call_begin("enable_locking");
        rc = prov.enable_locking(c->ctx);
        call_end();
        check_01(rc, "enable_locking");
        break;
    case 12:
        if (!prov.lock)
            break;
        call_begin(c->locked ? "unlock" : "lock");
        if (c->locked) {
            prov.unlock(c->ctx);
            c->locked = false;
        } else {
            rc = prov.lock(c->ctx);
            check_01(rc, "lock");
            c->locked = rc == 1;
        }
        call_end();
        break;
    case 13:
        do_get_ctx_params(c, in);
        break;
    case 14:
        if (prov.gettable_ctx_params) {
            const OSSL_PARAM *g = prov.gettable_ctx_params(c->ctx, prov.provctx);

            for (size_t i = 0; g && g[i].key; i++)
                if (!*g[i].key)
                    abort();
        }
        if (prov.verify_zeroization)
            check_01(prov.verify_zeroization(c->ctx), "verify_zeroization");
        break;
    default:
        do_provider_calls(in);
        break;
    }
}

/* Everything given back: each context unlocked, its seed cleared, freed; then the provider.
 * Before that, a seed on a fresh context and every enabled lock taken once: a lock a failed
 * call leaked would hang here (the watchdog). */
static void finish(void)
{
    void *ctx;
    unsigned char out[32];

    for (size_t i = 0; i < MAX_CONTEXTS; i++) {
        struct context *c = &contexts[i];

        if (!c->ctx)
            continue;
        if (c->locked)
            prov.unlock(c->ctx);
        call_begin("lock at the end");
        if (prov.lock && prov.lock(c->ctx) == 1)
            prov.unlock(c->ctx);
        call_end();
        clear_seed(c);
        prov.freectx(c->ctx);
        memset(c, 0, sizeof(*c));
    }
    call_begin("a last generate");
    if ((ctx = prov.newctx(prov.provctx, NULL, NULL))) {
        if (prov.instantiate(ctx, 256, 0, NULL, 0, NULL) == 1 &&
            prov.generate(ctx, out, sizeof(out), 256, 0, NULL, 0) != 1 && seeds_always()) {
            fprintf(stderr, "fuzz_provider: the last generate failed: %s\n", last_error);
            abort();
        }
        prov.freectx(ctx);
    }
    call_end();
    call_begin("teardown");
    prov.teardown(prov.provctx);
    call_end();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool started;
    struct input in;
    size_t script_len;

    if (!started) {
        pthread_t thread;

        fake_start();
        setenv("RANDD_SOCKET", fake.absent, 1);
        if (pthread_create(&thread, NULL, watchdog, NULL) != 0)
            abort();
        pthread_detach(thread);
        started = true;
    }
    if (size < 6)
        return 0;
    choose_settings(data);
    script_len = (size_t)data[4] | (size_t)data[5] << 8;
    in = (struct input){ data + 6, size - 6 };
    if (script_len > in.left)
        script_len = in.left;
    if (script_len > MAX_SCRIPT)
        script_len = MAX_SCRIPT;
    memcpy(fake.script, in.p, script_len);
    fake.script_len = script_len;
    fake.script_at = 0;
    fake.getrandom_calls = 0;
    fake.clock_ns = CLOCK_START_NS;
    fake.log_lines = 0;
    in.p += script_len;
    in.left -= script_len;

    errors_raised = 0;
    if (!start_provider())
        return 0;
    for (int i = 0; i < MAX_CALLS && in.left > 0; i++)
        one_call(&in);
    finish();
    fake_check_all_closed();
    return 0;
}

#pragma clang attribute pop
