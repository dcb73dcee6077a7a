/* librandd's connection handling: connect (under the call's deadline, to a daemon only
 * once it proves trustworthy), deadlines, request/reply exchange with one
 * reconnect when the daemon went away (a restart), a fresh connection in a child (fork(), or
 * a raw clone(): lib/process_token.c tells), and never a write into a descriptor the program
 * closed under us and reused. Large randd_bytes calls take the bytes from the connection's
 * BYTES_MEMFD arena, reading ahead for a caller that streams, or over the socket from a
 * daemon (or kernel) without it. */
#include "randd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "client_internal.h"
#include "generation.h"
#include "path_check.h"
#include "process_token.h"
#include "protocol.h"

#define PIPELINE 8                   /* requests in flight in randd_bytes/randd_range */
#define MAX_TEXT_REPLY (1u << 20)    /* STATUS is a few KiB; more is not a randd talking */
#define MESSAGE_CUT "\xe2\x80\xa6"   /* …: ends a daemon's message too long to keep */
/* From here up randd_bytes asks for BYTES_MEMFD: the arena costs its mapping once per
 * connection, then each byte one copy instead of two (randctl benchmark, "randd_bytes()"). */
#define MEMFD_MIN_BYTES (64u << 10)
#define RCVTIMEO_UNKNOWN UINT32_MAX  /* setting SO_RCVTIMEO failed: whatever it is, unknown */

struct randd_handle {
    int fd;
    uint64_t process;                /* randd_process_token() of fd's opener: a child
                                      * (forked, cloned) reconnects rather than share it */
    int timeout_ms;
    uint16_t flags;
    bool fixed_fd;                   /* given by the caller: never reconnect */
    bool answered;                   /* fd has answered a call: closed now, it is no
                                      * refusal at accept (idle timeout, a restart, or an
                                      * idle connection evicted for another uid) */
    dev_t dev;                       /* fd's socket, to tell it from a reused number */
    ino_t ino;
    uint64_t deadline_ns;
    unsigned rcvtimeo_ms;            /* SO_RCVTIMEO set on fd; 0: none */
    uint8_t *arena;                  /* the connection's BYTES_MEMFD memfd, mapped; or NULL */
    bool no_memfd;                   /* the daemon cannot: BYTES only, for the handle's life */
    struct memfd_asked {             /* BYTES_MEMFD requests unanswered, oldest first */
        uint32_t n;
        bool ahead;                  /* read ahead, not for the call that asked */
        uint64_t vm;                 /* the VM generation when it was asked (ahead) */
    } asked[RANDD_MEMFD_SLOTS];
    unsigned asked_first, asked_count;
    size_t last_memfd;               /* the last call's size if it used BYTES_MEMFD; else 0 */
    const uint64_t *vm_word;         /* SOCKET.generation, mapped; NULL: no read-ahead */
    bool vm_word_tried;
    char path[108];
    char message[1024];              /* the daemon's reason: NO_NOISE_SOURCE's names each source */
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void remember_fd(randd_handle *h)
{
    struct stat st;

    if (fstat(h->fd, &st) == 0)
        h->dev = st.st_dev, h->ino = st.st_ino;
}

/* Programs close descriptors they did not open (closefrom() before exec or on becoming a
 * daemon) and the number comes back for a file of theirs: a request written there would
 * corrupt it, and closing it would close theirs. OpenSSL checks its /dev/urandom fd so. */
static bool fd_still_ours(const randd_handle *h)
{
    struct stat st;

    return fstat(h->fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == h->dev &&
           st.st_ino == h->ino;
}

/* The arena belongs to the connection: a new one comes with the next's first BYTES_MEMFD.
 * It is mapped MADV_DONTFORK, so a forked child has no mapping to unmap (and the address may
 * be another of its mappings by now). A read-ahead goes with it. */
static void drop_arena(randd_handle *h)
{
    if (h->arena && h->process == randd_process_token())
        munmap(h->arena, RANDD_MEMFD_ARENA_BYTES);
    h->arena = NULL;
    h->asked_count = 0;
    h->last_memfd = 0;
}

static void disconnect(randd_handle *h)
{
    if (h->fd >= 0 && fd_still_ours(h))
        close(h->fd);
    h->fd = -1;
    drop_arena(h);
}

/* librandd's own message (a refusal, a timeout) in h->message, cut short if need be. */
__attribute__((format(printf, 2, 3))) static void say(randd_handle *h, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(h->message, sizeof(h->message), fmt, ap);
    va_end(ap);
}

/* --- whom we talk to ---------------------------------------------------------------------
 * A socket's path names a place, not a daemon: whoever bound it first answers there, and a
 * setuid program or root would take its keys from them. So a daemon is believed only when no
 * other unprivileged user could have put it there: its peer credentials (SO_PEERCRED: those
 * of whoever called listen(), so root under socket activation and for a randd that binds
 * before dropping privileges) are root's or the caller's own, or its uid owns the directory
 * that holds the socket, and no directory the path passes through, as written, symlinks
 * followed, can be changed by anyone but root and that uid (OpenSSH's StrictModes; the walk
 * is lib/path_check.c: a symlink in a shared directory is as good as the directory). Every
 * connection is checked, whatever named the path: a path given by the caller is as easy to
 * squat as $RANDD_SOCKET. */

/* 0 when the daemon at the other end of fd is to be believed, else -EPERM, with the path,
 * the daemon's uid and the reason in h->message. Nothing has been read from fd yet. */
static int check_peer(randd_handle *h, int fd)
{
    struct ucred peer;
    socklen_t len = sizeof(peer);
    char why[sizeof(h->message)];
    struct randd_path_end end;
    uid_t me = geteuid();

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
        say(h, "%s: SO_PEERCRED: %s", h->path, strerror(errno));
        return -EPERM;
    }
    if (peer.uid == 0 || peer.uid == me)
        return 0;
    if (randd_path_check(h->path, peer.uid, RANDD_PATH_FOLLOW_LAST, &end, why,
                         sizeof(why)) == 0) {
        close(end.dirfd);
        if (end.owner == peer.uid)
            return 0;
        snprintf(why, sizeof(why), "%.160s, which holds it, belongs to uid %u", end.dir,
                 (unsigned)end.owner);
    }
    say(h, "%s: refused: the daemon there runs as uid %u, not as root or as we do (uid %u), "
        "and %s, so another user could have put it there", h->path, (unsigned)peer.uid,
        (unsigned)me, why);
    return -EPERM;
}

/* --- connecting ------------------------------------------------------------------------
 * A daemon whose listen backlog is full makes connect() wait for room. The wait is bounded
 * by the call's deadline (h->deadline_ns), through SO_SNDTIMEO, which bounds a Unix socket's
 * connect; randd_open() only tries (wait false), and leaves a full daemon to the first call,
 * which has a deadline once randd_set_timeout() gave one. */

static int connect_within_deadline(randd_handle *h, int fd, const struct sockaddr_un *sa)
{
    for (;;) {
        int rc = 0;

        if (h->deadline_ns) {
            uint64_t now = now_ns(), left = h->deadline_ns > now ? h->deadline_ns - now : 0;
            struct timeval tv = { (time_t)(left / 1000000000u),
                                  (suseconds_t)(left % 1000000000u / 1000) };

            if (left < 1000)
                return -ETIMEDOUT;   /* a zero timeval would mean no deadline at all */
            if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        }
        if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
            rc = 0;
        else if (errno == EINTR)
            continue;                /* a Unix socket is left unconnected: try again */
        else
            rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
        if (h->deadline_ns) {
            struct timeval none = { 0, 0 };

            (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
        }
        return rc;
    }
}

/* Connects to h->path and checks who answered before anything is sent or read. wait false:
 * -EAGAIN at once if the daemon's backlog is full. */
static int connect_socket(randd_handle *h, bool wait)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK), 0), rc;

    if (fd < 0)
        return -errno;
    strcpy(sa.sun_path, h->path);
    if (wait)
        rc = connect_within_deadline(h, fd, &sa);
    else
        rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
    if (rc == -ETIMEDOUT)
        say(h, "%s: connect: no room in the daemon's backlog within the timeout", h->path);
    if (rc == 0)
        rc = check_peer(h, fd);
    if (rc == 0 && !wait && fcntl(fd, F_SETFL, 0) < 0)
        rc = -errno;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    h->fd = fd;
    h->answered = false;
    h->rcvtimeo_ms = 0;
    h->process = randd_process_token();
    remember_fd(h);
    return 0;
}

/* randd_open()'s failure has no handle to keep its message: a buffer of the thread's own
 * keeps it for randd_message(NULL). pthread-specific, not __thread: that would make randd.so
 * need the dynamic loader itself (__tls_get_addr). Allocated at the first message only. */
static pthread_key_t open_message_key;
static pthread_once_t open_message_once = PTHREAD_ONCE_INIT;
static bool open_message_keyed;

static void create_open_message_key(void)
{
    open_message_keyed = pthread_key_create(&open_message_key, free) == 0;
}

/* The thread's buffer for it (made if make), or NULL: then the message is lost, not the
 * error. */
static char *open_message(bool make)
{
    char *m;

    pthread_once(&open_message_once, create_open_message_key);
    if (!open_message_keyed)
        return NULL;
    m = pthread_getspecific(open_message_key);
    if (!m && make && (m = calloc(1, sizeof(((randd_handle *)0)->message))) &&
        pthread_setspecific(open_message_key, m) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

int randd_open(randd_handle **out, const char *path)
{
    randd_handle *h;
    char *message = open_message(false);
    int rc;

    if (message)
        message[0] = '\0';
    if (!path)
        path = secure_getenv("RANDD_SOCKET");
    if (!path || !*path)
        path = RANDD_DEFAULT_SOCKET;
    if (strlen(path) >= sizeof(h->path))
        return -ENAMETOOLONG;
    h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->fd = -1;
    strcpy(h->path, path);
    rc = connect_socket(h, false);
    if (rc == -EAGAIN)
        rc = 0;                      /* a full backlog: the first call waits, under its deadline */
    if (rc < 0) {
        if (h->message[0] && (message = open_message(true)))
            strcpy(message, h->message);
        free(h);
        return rc;
    }
    *out = h;
    return 0;
}

int randd_handle_from_fd(randd_handle **out, int fd)
{
    randd_handle *h = calloc(1, sizeof(*h));

    if (!h)
        return -ENOMEM;
    h->fd = fd;
    h->process = randd_process_token();
    h->fixed_fd = true;
    remember_fd(h);
    *out = h;
    return 0;
}

void randd_close(randd_handle *h)
{
    if (!h)
        return;
    disconnect(h);
    if (h->vm_word)
        randd_generation_unmap(h->vm_word);
    free(h);
}

void randd_set_timeout(randd_handle *h, int milliseconds)
{
    h->timeout_ms = milliseconds > 0 ? milliseconds : 0;
}

void randd_set_nonblock(randd_handle *h, int nonblock)
{
    h->flags = nonblock ? RANDD_FLAG_NONBLOCK : 0;
}

const char *randd_message(const randd_handle *h)
{
    const char *message = h ? h->message : open_message(false);

    return message ? message : "";
}

/* --- I/O with the call's deadline ---------------------------------------------------
 * Each write is tried first, and poll()ed for only when it would block. A read waits in the
 * receive itself: a reply costs one system call, not an EAGAIN and a poll() before it.
 * Without a deadline the receive blocks as long as poll() with no timeout did. With one, it
 * blocks only while the socket's SO_RCVTIMEO (set once per connection and timeout, a margin
 * short of it) must end by the deadline, jiffy rounding included: in practice the first wait
 * of a call. A later wait (a reply in pieces, a slow daemon, a pipelined batch that took long),
 * a receive that SO_RCVTIMEO cut short, and a caller's own descriptor, whose options are not
 * ours to set, try without waiting and poll() for what is left, to the millisecond as before. */

#define RCVTIMEO_MARGIN_MS 20u      /* SO_RCVTIMEO this far, and a quarter, short of it... */
#define RCVTIMEO_SLACK_MS  10u      /* ...of which a jiffy at HZ=100 may eat this much */

/* A peer that trickles a byte at a time never makes a read block: the deadline is checked
 * between the pieces too. */
static bool past_deadline(const randd_handle *h)
{
    return h->deadline_ns && now_ns() >= h->deadline_ns;
}

static int wait_for(randd_handle *h, short events)
{
    struct pollfd p = { h->fd, events, 0 };
    int rc;

    do {
        int ms = -1;

        /* Each time round: a signal that interrupts poll() every few milliseconds (a
         * profiler's SIGPROF, a timer's SIGALRM) must not restart the whole wait. */
        if (h->deadline_ns) {
            uint64_t now = now_ns();

            if (now >= h->deadline_ns)
                return -ETIMEDOUT;
            ms = (int)((h->deadline_ns - now + 999999) / 1000000);
        }
        rc = poll(&p, 1, ms);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : rc == 0 ? -ETIMEDOUT : 0;
}

/* SO_RCVTIMEO for the handle's timeout on a connection of ours: set when it changes, so a
 * call with the same timeout as the last costs nothing. */
static void arm_receive_timeout(randd_handle *h)
{
    /* The kernel's timer wheel ends a longer wait later, by up to an eighth of it (its
     * coarser levels: 256 ms of a 5 s wait at HZ=250), not just a jiffy: the margin grows
     * with the timeout so that the receive still returns by the deadline. It is a quarter:
     * that eighth, and as much again for the time between the call's start and its receive.
     * With an eighth alone, a caller descheduled for 13 ms of a 30 s call (a loaded machine)
     * found its receive could no longer block, and paid an EAGAIN and a poll() for it. */
    unsigned margin = RCVTIMEO_MARGIN_MS + (unsigned)h->timeout_ms / 4;
    unsigned want = h->timeout_ms >= 2 * (int)RCVTIMEO_MARGIN_MS
                        ? (unsigned)h->timeout_ms - margin : 0;
    struct timeval tv = { (time_t)(want / 1000), (suseconds_t)(want % 1000 * 1000) };

    if (h->fixed_fd || h->rcvtimeo_ms == want)
        return;
    if (setsockopt(h->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0)
        h->rcvtimeo_ms = want;
    else
        h->rcvtimeo_ms = RCVTIMEO_UNKNOWN;   /* never block in it under a deadline */
}

/* Whether a receive may block: it then returns by the deadline, or there is none. */
static bool may_block(const randd_handle *h)
{
    if (!h->deadline_ns)
        return true;
    if (h->fixed_fd || h->rcvtimeo_ms == 0 || h->rcvtimeo_ms == RCVTIMEO_UNKNOWN)
        return false;
    /* The wheel may end it up to 8/63 of it late: a seventh is counted. */
    return now_ns() + ((uint64_t)h->rcvtimeo_ms + h->rcvtimeo_ms / 7 + RCVTIMEO_SLACK_MS) *
                          1000000u <=
           h->deadline_ns;
}

/* One recvmsg that returns data: its length, -ECONNRESET at the end of the stream, or -errno
 * (-ETIMEDOUT past the deadline). */
static ssize_t recv_some(randd_handle *h, struct msghdr *msg, int flags)
{
    size_t controllen = msg->msg_controllen;

    for (;;) {
        ssize_t got;

        msg->msg_controllen = controllen;
        msg->msg_flags = 0;
        got = recvmsg(h->fd, msg, flags | (may_block(h) ? 0 : MSG_DONTWAIT));
        if (got > 0)
            return got;
        if (got == 0)
            return -ECONNRESET;     /* the daemon closed: restarted, or we were too slow */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -errno;
        /* Nothing yet, without waiting; or SO_RCVTIMEO ended the wait: poll for the rest. */
        if ((got = wait_for(h, POLLIN)) < 0)
            return got;
    }
}

static int send_all(randd_handle *h, const void *buf, size_t n)
{
    const uint8_t *p = buf;

    while (n > 0) {
        ssize_t w = send(h->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (w < 0) {
            int rc = errno == EAGAIN ? wait_for(h, POLLOUT) : errno == EINTR ? 0 : -errno;

            if (rc < 0)
                return rc;
            continue;
        }
        p += w;
        n -= (size_t)w;
        if (n > 0 && past_deadline(h))
            return -ETIMEDOUT;
    }
    return 0;
}

static int recv_all(randd_handle *h, void *buf, size_t n)
{
    uint8_t *p = buf;

    while (n > 0) {
        struct iovec iov = { p, n };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t got = recv_some(h, &msg, 0);

        if (got < 0)
            return (int)got;
        p += got;
        n -= (size_t)got;
        if (n > 0 && past_deadline(h))
            return -ETIMEDOUT;
    }
    return 0;
}

/* --- requests and replies ------------------------------------------------------------- */

/* err (EPIPE, ECONNRESET), unless the daemon left an error reply before it closed: a
 * connection turned away at accept (BUSY: max_clients, or the uid's share of them) may be
 * closed before the first request goes, and its reply says why. That reply is read. */
static int read_reply(randd_handle *h, void *out, size_t want, char **text, bool last);

static int refusal_or(randd_handle *h, int err)
{
    uint8_t head[RANDD_HEADER_BYTES];
    uint32_t length;

    if (recv(h->fd, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT) != (ssize_t)sizeof(head) ||
        randd_reply_decode(head, 0, &length) > -RANDD_ERR_STATUS)
        return err;                  /* nothing there, an OK reply, or not a reply at all */
    return read_reply(h, NULL, 0, NULL, true);
}

/* Sends req, encoded by protocol.c's encoder into buf (cap bytes). On a connection that has
 * answered before, a closed socket is only that (the call reconnects), whatever reply the
 * daemon left on it: that was not for this request, which it never read. */
static int send_request(randd_handle *h, const struct randd_request *req, uint8_t *buf,
                        size_t cap)
{
    size_t len = randd_request_encode(buf, cap, req);
    int rc = len ? send_all(h, buf, len) : -EINVAL;

    return (rc == -EPIPE || rc == -ECONNRESET) && !h->answered ? refusal_or(h, rc) : rc;
}

/* The rest of a reply whose header is in head, of which the first have bytes of the body
 * already came into out: an OK body of exactly want bytes into out, or an error status (its
 * message kept in h->message). want == SIZE_MAX: any length, malloc'd into *text. */
static int read_body(randd_handle *h, const uint8_t head[RANDD_HEADER_BYTES], void *out,
                     size_t want, char **text, size_t have)
{
    uint32_t length;
    int rc, status = randd_reply_decode(head, text ? SIZE_MAX : want, &length);

    if (status == -EPROTO || have > length) {
        if (have)                    /* not a reply to this request: none of it is the caller's */
            OPENSSL_cleanse(out, have);
        return -EPROTO;
    }
    if (status < 0) {
        size_t n = length < sizeof(h->message) - 1 ? length : sizeof(h->message) - 1;
        size_t kept = have < n ? have : n, left = length - (have > n ? have : n);
        char sink[256];

        if (have) {                  /* came into out with the header: the caller's no more */
            memcpy(h->message, out, kept);
            memset(out, 0, have);
        }
        rc = recv_all(h, h->message + kept, n - kept);
        h->message[rc < 0 ? 0 : n] = '\0';
        if (rc == 0 && n < length)       /* an overlong message: cut, never silently */
            memcpy(h->message + n - (sizeof(MESSAGE_CUT) - 1), MESSAGE_CUT, sizeof(MESSAGE_CUT));
        while (rc == 0 && left > 0) {
            size_t step = left < sizeof(sink) ? left : sizeof(sink);

            rc = recv_all(h, sink, step);
            left -= step;
        }
        return rc < 0 ? rc : status;
    }
    if (text) {
        if (length > MAX_TEXT_REPLY)
            return -EPROTO;
        *text = malloc((size_t)length + 1);
        if (!*text)
            return -ENOMEM;
        rc = recv_all(h, *text, length);
        (*text)[length] = '\0';
        if (rc == 0 && memchr(*text, '\0', length))
            rc = -EPROTO;            /* promised as a C string of that length */
        if (rc < 0) {
            free(*text);
            *text = NULL;
        }
        return rc < 0 ? rc : (int)length;
    }
    rc = recv_all(h, (uint8_t *)out + have, want - have);
    if (rc < 0)
        OPENSSL_cleanse(out, want);  /* a piece of a reply (a prime) is no output */
    return rc;
}

/* A reply: its header, and its body into out (or *text). The daemon writes a reply with one
 * send, so when no other reply can follow it in the stream (last: none was asked for after
 * it) one receive takes the header and the body into out together. An error reply's message
 * may come into out so: read_body moves it to h->message and clears out of it.
 * Not so with more replies due: a short error reply would let the next one's bytes in. */
static int read_reply(randd_handle *h, void *out, size_t want, char **text, bool last)
{
    uint8_t head[RANDD_HEADER_BYTES];
    struct iovec iov[2] = { { head, sizeof(head) }, { out, want } };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = last && out && !text ? 2 : 1 };
    ssize_t got = recv_some(h, &msg, 0);
    size_t have = got > RANDD_HEADER_BYTES ? (size_t)got - RANDD_HEADER_BYTES : 0;
    int rc = got < 0 ? (int)got : 0;

    if (rc == 0 && (size_t)got < sizeof(head))
        rc = past_deadline(h) ? -ETIMEDOUT : recv_all(h, head + got, sizeof(head) - (size_t)got);
    return rc < 0 ? rc : read_body(h, head, out, want, text, have);
}

/* Runs fn once; if the daemon went away (restart) retries once on a new connection. Only an
 * error status leaves the connection in step (its reply was read whole); after a timeout, a
 * protocol error or anything else replies may be left unread, so the connection is dropped. */
static int run_memfd(randd_handle *h, void *arg);
static void drop_read_ahead(randd_handle *h);

static int with_connection(randd_handle *h, int (*fn)(randd_handle *, void *), void *arg)
{
    int rc = -ECONNRESET;

    h->message[0] = '\0';
    h->deadline_ns = h->timeout_ms ? now_ns() + (uint64_t)h->timeout_ms * 1000000u : 0;
    if (h->fd >= 0 && !fd_still_ours(h)) {
        h->fd = -1;                  /* closed and reused by the program: not ours to close */
        drop_arena(h);
    }
    if (h->process != randd_process_token())
        disconnect(h);               /* the parent's: closing our copy leaves it intact */
    if (fn != run_memfd && h->fd >= 0)
        drop_read_ahead(h);          /* a failure disconnects: we reconnect below */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (h->fd < 0 && (rc = h->fixed_fd ? -ENOTCONN : connect_socket(h, true)) < 0)
            return rc;
        arm_receive_timeout(h);
        rc = fn(h, arg);
        if (rc != -EPIPE && rc != -ECONNRESET) {
            h->answered = h->fd >= 0 && (rc >= 0 || rc <= -RANDD_ERR_STATUS);
            break;
        }
        disconnect(h);
    }
    if (rc < 0 && rc > -RANDD_ERR_STATUS)
        disconnect(h);
    return rc;
}

/* BYTES, SEED and RANGE share this: up to depth requests sent (PIPELINE when 0), then their
 * replies read. */
struct batch {
    uint8_t op;
    uint8_t *out;
    size_t total;             /* bytes of output wanted */
    size_t per_request;       /* at most this many output bytes a request */
    const uint8_t *r;         /* RANGE */
    uint16_t len;
    uint16_t flags;           /* the mode's, beside the handle's NONBLOCK */
    unsigned depth;
};

static int run_batches(randd_handle *h, void *arg)
{
    struct batch *b = arg;
    uint8_t frame[RANDD_HEADER_BYTES + 4 + RANDD_MAX_RANGE_LEN];
    size_t done = 0;
    unsigned depth = b->depth && b->depth < PIPELINE ? b->depth : PIPELINE;  /* sizes[] */

    while (done < b->total) {
        size_t sizes[PIPELINE], req_len = 0, n = 0;
        int rc = 0;

        for (; n < depth && done + req_len < b->total; n++) {
            size_t want = b->total - done - req_len;
            struct randd_request req = { .op = b->op, .flags = h->flags | b->flags };

            sizes[n] = want < b->per_request ? want : b->per_request;
            req_len += sizes[n];
            if (b->op != RANDD_OP_RANGE) {                  /* BYTES, SEED: u32 n */
                req.n = (uint32_t)sizes[n];
            } else {
                req.count = (uint16_t)(sizes[n] / b->len);
                req.len = b->len;
                req.r = b->r;
            }
            if ((rc = send_request(h, &req, frame, sizeof(frame))) < 0) {
                OPENSSL_cleanse(b->out, done);
                return rc;
            }
        }
        for (size_t i = 0; i < n; i++) {
            if ((rc = read_reply(h, b->out + done, sizes[i], NULL, i + 1 == n)) < 0) {
                /* the piece cut short too: a caller told of a failure holds no output */
                OPENSSL_cleanse(b->out, done + sizes[i]);
                if (i + 1 < n)
                    disconnect(h);   /* the replies still to come would be the next call's */
                return rc;
            }
            done += sizes[i];
        }
    }
    return 0;
}

/* --- BYTES_MEMFD: the bytes in a memfd the daemon shares ------------------------------ */

/* The descriptors that came with one recvmsg: at most one is kept in *fd. Any more, or one
 * cut off (MSG_CTRUNC), is not randd talking. */
static int take_fds(struct msghdr *msg, int *fd)
{
    int rc = msg->msg_flags & MSG_CTRUNC ? -EPROTO : 0;

    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
            int got;

            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*fd < 0) {
                *fd = got;
            } else {
                close(got);
                rc = -EPROTO;
            }
        }
    }
    return rc;
}

/* A reply's header, and the memfd that comes with the first BYTES_MEMFD reply (else -1). */
static int recv_head_with_fd(randd_handle *h, uint8_t head[RANDD_HEADER_BYTES], int *fd)
{
    size_t got = 0;
    int rc = 0;

    *fd = -1;
    while (got < RANDD_HEADER_BYTES && rc == 0) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int))];
        } control;
        struct iovec iov = { head + got, RANDD_HEADER_BYTES - got };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        ssize_t n = recv_some(h, &msg, MSG_CMSG_CLOEXEC);

        if (n < 0) {
            rc = (int)n;
        } else {
            rc = take_fds(&msg, fd);
            got += (size_t)n;
            if (rc == 0 && got < RANDD_HEADER_BYTES && past_deadline(h))
                rc = -ETIMEDOUT;
        }
    }
    if (rc < 0 && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

/* Maps the arena the daemon sent, after checking it is one: its size, and sealed so that
 * nobody can shrink it under the mapping (a read past the end would be SIGBUS). */
static int map_arena(randd_handle *h, int fd)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS), rc = 0;

    if (h->arena || seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) < 0 ||
        st.st_size != RANDD_MEMFD_ARENA_BYTES) {
        rc = -EPROTO;
    } else {
        h->arena = mmap(NULL, RANDD_MEMFD_ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                        fd, 0);
        if (h->arena == MAP_FAILED) {
            rc = -errno;
            h->arena = NULL;
        } else if (madvise(h->arena, RANDD_MEMFD_ARENA_BYTES, MADV_DONTFORK) < 0) {
            rc = -errno;             /* a child would share our future output */
            munmap(h->arena, RANDD_MEMFD_ARENA_BYTES);
            h->arena = NULL;
        }
    }
    close(fd);                       /* the mapping keeps the file */
    return rc;
}

/* One BYTES_MEMFD reply for n bytes: the first take of them copied out of the arena into
 * out, and all n wiped there at once, so the shared pages hold no output once it is used. */
static int read_memfd_reply(randd_handle *h, uint8_t *out, uint32_t n, uint32_t take)
{
    uint8_t head[RANDD_HEADER_BYTES], body[RANDD_MEMFD_REPLY_BODY];
    uint32_t offset;
    int fd, rc = recv_head_with_fd(h, head, &fd);

    if (rc == 0 && fd >= 0)
        rc = map_arena(h, fd);
    if (rc == 0)
        rc = read_body(h, head, body, sizeof(body), NULL, 0);
    if (rc == 0 && !h->arena)
        rc = -EPROTO;                /* OK, but no arena ever came */
    if (rc == 0)
        rc = randd_memfd_reply_decode(body, n, RANDD_MEMFD_ARENA_BYTES, &offset);
    if (rc < 0)
        return rc;
    if (take)
        memcpy(out, h->arena + offset, take);
    explicit_bzero(h->arena + offset, n);
    return 0;
}

/* --- read-ahead ------------------------------------------------------------------------
 * A caller that takes large blocks one after another (randctl stream, a bulk consumer) has
 * the next blocks made while it copies this one. After the second BYTES_MEMFD call in a row,
 * requests of the same size (a slot at most) are sent before the call returns, one for each
 * slot, and the next call starts with their replies. The daemon then always has a request
 * waiting, and its generator runs while the caller copies. A one-off large call never reads
 * ahead.
 *
 * Bytes read ahead are used only if nothing could have copied them: the arena is mapped
 * MADV_DONTFORK (a child reconnects, and never sees it), and the VM generation randd
 * publishes must not have moved since they were asked for (a cloned VM would hand both
 * clones the same bytes); where that word cannot be mapped there is no read-ahead. The
 * requests carry NONBLOCK, so they never make a call wait on an unready daemon: an error
 * reply only means that call asks afresh. Any other call on the handle first reads the
 * replies and wipes their bytes unused. */

static bool read_ahead_possible(randd_handle *h)
{
    char path[sizeof(h->path) + 16];

    /* randd retired the word (it stopped, or a new randd replaced it): map its successor. */
    if (h->vm_word && h->asked_count == 0 && randd_generation_retired(h->vm_word)) {
        randd_generation_unmap(h->vm_word);
        h->vm_word = NULL;
        h->vm_word_tried = false;
    }
    if (!h->vm_word && !h->vm_word_tried && !h->fixed_fd) {
        h->vm_word_tried = true;
        /* A file that fails the checks: no read-ahead, and randd_message() says why. */
        if (randd_generation_path(h->path, path, sizeof(path)) == 0)
            h->vm_word = randd_generation_map(path, h->message, sizeof(h->message));
    }
    return h->vm_word != NULL;
}

static int ask_memfd(randd_handle *h, size_t n, bool ahead)
{
    uint8_t frame[RANDD_HEADER_BYTES + 4];
    struct randd_request req = { .op = RANDD_OP_BYTES_MEMFD,
                                 .flags = ahead ? RANDD_FLAG_NONBLOCK : h->flags,
                                 .n = (uint32_t)n };
    /* The generation is read before asking: a clone after this moment makes it stale. */
    struct memfd_asked asked = { (uint32_t)n, ahead,
                                 ahead ? randd_generation_load(h->vm_word) : 0 };
    int rc = send_request(h, &req, frame, sizeof(frame));

    if (rc == 0)
        h->asked[(h->asked_first + h->asked_count++) % RANDD_MEMFD_SLOTS] = asked;
    return rc;
}

/* The oldest unanswered request's reply: up to want of its bytes into out (fewer when it
 * was read ahead and is stale or refused), the rest wiped. *got says how many. */
static int take_memfd(randd_handle *h, uint8_t *out, size_t want, size_t *got)
{
    struct memfd_asked a = h->asked[h->asked_first];
    bool fresh = !a.ahead || randd_generation_load(h->vm_word) == a.vm;
    uint32_t take = !fresh ? 0 : want < a.n ? (uint32_t)want : a.n;
    int rc;

    h->asked_first = (h->asked_first + 1) % RANDD_MEMFD_SLOTS;
    h->asked_count--;
    rc = read_memfd_reply(h, out, a.n, take);
    if (a.ahead && rc <= -RANDD_ERR_STATUS)
        rc = 0, take = 0;
    *got = rc < 0 ? 0 : take;
    return rc;
}

/* Before any other call: replies read ahead are read, and their bytes wiped unused. */
static void drop_read_ahead(randd_handle *h)
{
    size_t got;

    while (h->asked_count > 0)
        if (take_memfd(h, NULL, 0, &got) < 0) {
            disconnect(h);
            break;
        }
    h->last_memfd = 0;
}

/* Requests of at most a slot each, never more than RANDD_MEMFD_SLOTS unanswered: the daemon
 * fills a slot while we copy the other, and writes a slot again only after we read it. */
static int run_memfd(randd_handle *h, void *arg)
{
    struct batch *b = arg;
    size_t done = 0, got;
    int rc = 0;

    while (done < b->total) {
        size_t coming = 0;

        for (unsigned i = 0; i < h->asked_count; i++)
            coming += h->asked[(h->asked_first + i) % RANDD_MEMFD_SLOTS].n;
        while (h->asked_count < RANDD_MEMFD_SLOTS && coming < b->total - done) {
            size_t n = b->total - done - coming;

            n = n < RANDD_MEMFD_SLOT_BYTES ? n : RANDD_MEMFD_SLOT_BYTES;
            if ((rc = ask_memfd(h, n, false)) < 0)
                goto failed;
            coming += n;
        }
        if ((rc = take_memfd(h, b->out + done, b->total - done, &got)) < 0)
            break;
        done += got;
    }
    if (rc == 0) {
        if (h->last_memfd && read_ahead_possible(h))
            while (h->asked_count < RANDD_MEMFD_SLOTS && rc == 0)
                rc = ask_memfd(h, b->total < RANDD_MEMFD_SLOT_BYTES ? b->total
                                                                   : RANDD_MEMFD_SLOT_BYTES,
                               true);
        if (rc < 0)
            disconnect(h);           /* the bytes are the caller's; the next call reconnects */
        h->last_memfd = b->total;
        return 0;
    }
failed:
    OPENSSL_cleanse(b->out, done);
    /* An error status leaves the connection in step once the replies still due are read. */
    while (h->asked_count > 0 && rc <= -RANDD_ERR_STATUS) {
        int drained = take_memfd(h, NULL, 0, &got);

        if (drained < 0 && drained > -RANDD_ERR_STATUS) {
            disconnect(h);
            break;
        }
    }
    return rc;
}

/* --- the calls ------------------------------------------------------------------------- */

/* Each call checks its arguments before anything is sent: a request whose reply the call
 * cannot take (no buffer to read it into), or one the daemon would refuse in every pipelined
 * copy, would leave replies unread, and the handle's next call would read them as its own. */

/* Large calls try BYTES_MEMFD first, and ask again with BYTES whenever it fails: the memfd
 * is a way to deliver bytes, never a reason not to. A daemon that cannot (UNKNOWN_OP: too
 * old, or its kernel has no memfd) is asked with BYTES from then on; any other failure (BUSY,
 * INTERNAL, any other status, a descriptor that did not come or is not an arena, the
 * connection reset twice) only for this call. Not a timeout: the caller's deadline is spent.
 * Nor on the caller's own descriptor once the failure dropped it: there is none to ask on. */
int randd_bytes(randd_handle *h, void *buf, size_t n)
{
    struct batch b = { RANDD_OP_BYTES, buf, n, RANDD_MAX_BYTES, NULL, 0, 0, 0 };

    if (n == 0)
        return 0;
    if (!buf)
        return -EINVAL;
    if (n >= MEMFD_MIN_BYTES && !h->no_memfd) {
        int rc = with_connection(h, run_memfd, &b);

        if (rc == 0 || rc == -ETIMEDOUT || (h->fixed_fd && h->fd < 0))
            return rc;
        if (rc == RANDD_ERR(RANDD_UNKNOWN_OP))
            h->no_memfd = true;
    }
    return with_connection(h, run_batches, &b);
}

static bool range_arguments_valid(const uint8_t *r, size_t len, const uint8_t *out,
                                  size_t count)
{
    if (!r || len == 0 || len > RANDD_MAX_RANGE_LEN || (count > 0 && !out))
        return false;
    if (count > SIZE_MAX / len)
        return false;                /* count * len bytes of out cannot exist */
    for (size_t i = 0; i < len; i++)
        if (r[i])
            return true;
    return false;                    /* r = 0: no value is below it */
}

/* --- noise-source modes ------------------------------------------------------------------
 * A request in a mode waits in the daemon's queue for noise entropy, which each uid may hold
 * a few places in: so they go one at a time, never pipelined (a pipeline would take several
 * places, and hit BUSY, for no gain: the noise sources set the pace, not the round trips).
 * They always go over the socket with the mode's flag: a read-ahead block or an arena slot
 * holds ordinary output, made before the call, which no mode may hand out. */

/* A batch of op's requests in mode; false for a mode not in enum randd_mode. */
static bool mode_batch(struct batch *b, uint8_t op, size_t max, enum randd_mode mode)
{
    switch (mode) {
    case RANDD_MODE_DEFAULT:
        break;
    case RANDD_MODE_PREDICTION_RESISTANT:
        b->flags = RANDD_FLAG_PREDICTION_RESISTANT;
        b->depth = 1;                /* each request one noise-source reseed */
        max = max < RANDD_MAX_PREDICTION_RESISTANT ? max : RANDD_MAX_PREDICTION_RESISTANT;
        break;
    case RANDD_MODE_FULL_ENTROPY:
        b->flags = RANDD_FLAG_FULL_ENTROPY;
        b->depth = 1;
        max = max < RANDD_MAX_FULL_ENTROPY ? max : RANDD_MAX_FULL_ENTROPY;
        break;
    default:
        return false;
    }
    b->op = op;
    b->per_request = max;
    return true;
}

int randd_bytes_mode(randd_handle *h, void *buf, size_t n, enum randd_mode mode)
{
    struct batch b = { .out = buf, .total = n };

    if (!mode_batch(&b, RANDD_OP_BYTES, RANDD_MAX_BYTES, mode) || (n > 0 && !buf))
        return -EINVAL;
    if (mode == RANDD_MODE_DEFAULT)
        return randd_bytes(h, buf, n);
    return n == 0 ? 0 : with_connection(h, run_batches, &b);
}

int randd_seed(randd_handle *h, void *buf, size_t n, enum randd_mode mode)
{
    struct batch b = { .out = buf, .total = n };

    if (!mode_batch(&b, RANDD_OP_SEED, RANDD_MAX_SEED, mode) || (n > 0 && !buf))
        return -EINVAL;
    return n == 0 ? 0 : with_connection(h, run_batches, &b);
}

int randd_range(randd_handle *h, const uint8_t *r, size_t len, uint8_t *out, size_t count)
{
    size_t per;
    struct batch b;

    if (!range_arguments_valid(r, len, out, count))    /* count * len too: first */
        return -EINVAL;
    per = RANDD_MAX_RANGE_REPLY / len;
    b = (struct batch){ .op = RANDD_OP_RANGE, .out = out, .total = count * len,
                        .per_request = (per > 65535 ? 65535 : per) * len, .r = r,
                        .len = (uint16_t)len };
    return count == 0 ? 0 : with_connection(h, run_batches, &b);
}

static int run_status(randd_handle *h, void *arg)
{
    struct randd_request req = { .op = RANDD_OP_STATUS, .flags = h->flags };
    uint8_t frame[RANDD_HEADER_BYTES];
    int rc = send_request(h, &req, frame, sizeof(frame));

    return rc < 0 ? rc : read_reply(h, NULL, SIZE_MAX, arg, true);
}

int randd_status(randd_handle *h, char **json)
{
    if (!json)
        return -EINVAL;
    *json = NULL;
    return with_connection(h, run_status, json);
}

struct admin {
    int op, test;
    const char *source;
    char **text;
};

static int run_admin(randd_handle *h, void *arg)
{
    struct admin *a = arg;
    struct randd_request req = { .op = (uint8_t)a->op, .flags = h->flags,
                                 .test = (uint8_t)a->test, .data = (const uint8_t *)a->source,
                                 .data_len = a->source ? strlen(a->source) : 0 };
    uint8_t frame[RANDD_HEADER_BYTES + 1 + RANDD_MAX_SOURCE_NAME];
    int rc = send_request(h, &req, frame, sizeof(frame));

    return rc < 0 ? rc : read_reply(h, NULL, SIZE_MAX, a->text, true);
}

int randd_admin(randd_handle *h, int op, int test, const char *source, char **text)
{
    struct admin a = { op, test, source, text };

    if (!text || (op != RANDD_OP_SELFTEST && op != RANDD_OP_INJECT_FAILURE) ||
        (op == RANDD_OP_INJECT_FAILURE && (!source || strlen(source) > RANDD_MAX_SOURCE_NAME)))
        return -EINVAL;
    *text = NULL;
    return with_connection(h, run_admin, &a);
}

struct add_entropy {
    const void *data;
    size_t len;
    unsigned bits;
};

/* The frame holds the caller's entropy: wiped before it is freed. */
static int run_add_entropy(randd_handle *h, void *arg)
{
    struct add_entropy *a = arg;
    struct randd_request req = { .op = RANDD_OP_ADD_ENTROPY, .flags = h->flags,
                                 .entropy_bits = a->bits, .data = a->data, .data_len = a->len };
    size_t cap = RANDD_HEADER_BYTES + 4 + a->len;
    uint8_t *frame = malloc(cap);
    int rc;

    if (!frame)
        return -ENOMEM;
    rc = send_request(h, &req, frame, cap);
    OPENSSL_cleanse(frame, cap);
    free(frame);
    return rc < 0 ? rc : read_reply(h, NULL, 0, NULL, true);
}

int randd_add_entropy(randd_handle *h, const void *data, size_t len, unsigned bits)
{
    struct add_entropy a = { data, len, bits };

    if (!data || len == 0 || len > RANDD_MAX_REQUEST_BODY - 4)
        return -EINVAL;
    return with_connection(h, run_add_entropy, &a);
}

struct prime {
    unsigned bits;
    uint8_t *out;
};

static int run_prime(randd_handle *h, void *arg)
{
    struct prime *p = arg;
    struct randd_request req = { .op = RANDD_OP_PRIME, .flags = h->flags,
                                 .bits = (uint16_t)p->bits };
    uint8_t frame[RANDD_HEADER_BYTES + 2];
    int rc = send_request(h, &req, frame, sizeof(frame));

    return rc < 0 ? rc : read_reply(h, p->out, (p->bits + 7) / 8, NULL, true);
}

int randd_prime(randd_handle *h, unsigned bits, uint8_t *out)
{
    struct prime p = { bits, out };

    if (!out || bits < RANDD_PRIME_MIN_BITS || bits > RANDD_PRIME_MAX_BITS)
        return -EINVAL;
    return with_connection(h, run_prime, &p);
}

const char *randd_strerror(int err)
{
    if (err >= 0)
        return "success";
    if (-err >= RANDD_ERR_STATUS && -err < RANDD_ERR_STATUS + RANDD_STATUS_COUNT)
        return randd_status_text(-err - RANDD_ERR_STATUS);
    return strerror(-err);
}
