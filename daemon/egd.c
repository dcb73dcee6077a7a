/* EGD commands, byte-oriented and client-initiated:
 *   0x00            entropy level: u32 bits, big-endian
 *   0x01 n          non-blocking read: u8 count, then count bytes (0 while not ready)
 *   0x02 n          blocking read: n bytes, once the pool is ready
 *   0x03 u16 u8 d   add entropy (bits, length, data): mixed in for a privileged Unix peer,
 *                   read and dropped for anyone else; no reply
 *   0x04            the daemon's pid as a counted string
 * An unknown command closes the connection (gracefully: drain.c). One command at a time per
 * client: the reply (at most 256 bytes) is flushed before the next command is read. */
#include "egd.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "drain.h"
#include "log.h"
#include "unix_socket.h"

#define NS_PER_S 1000000000ull

struct egd_client {
    struct egd_client *next, **prevp;
    struct egd *egd;
    int fd;
    bool trusted;                    /* Unix peer with uid 0 or in trusted_group */
    bool waiting;                    /* blocking read parked until the pool is ready */
    uint64_t last_progress_ns;
    uint8_t in[4 + 255];
    size_t in_len;
    uint8_t out[1 + 255];
    size_t out_len, out_pos;
};

/* --- listeners ---------------------------------------------------------------------- */

static int listen_unix(struct egd *e, const char *path, char *why, size_t whylen)
{
    int fd = unix_socket_listen(&e->bound, "egd_socket", path, e->config->socket_mode,
                                (gid_t)-1, why, whylen);

    if (fd < 0)
        return -1;
    e->fds[0] = fd;
    return 0;
}

static int listen_tcp(struct egd *e, const char *addr, char *why, size_t whylen)
{
    struct sockaddr_storage ss;
    int one = 1, fd;

    if (config_parse_loopback(addr, &ss) < 0) {
        snprintf(why, whylen, "egd_listen %s: not a loopback address:port", addr);
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&ss, sizeof(ss)) < 0 || listen(fd, SOMAXCONN) < 0) {
        snprintf(why, whylen, "egd_listen %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    e->fds[1] = fd;
    return 0;
}

int egd_open(struct egd *e, const struct config *config, const int *activated,
             int nactivated, char *why, size_t whylen)
{
    memset(e, 0, sizeof(*e));
    e->config = config;
    e->fds[0] = e->fds[1] = -1;
    if (nactivated > 0) {
        for (int i = 0; i < nactivated && i < 2; i++) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof(ss);

            getsockname(activated[i], (struct sockaddr *)&ss, &len);
            /* Passed sockets may be blocking; the accept loop must never block. */
            fcntl(activated[i], F_SETFL, fcntl(activated[i], F_GETFL) | O_NONBLOCK);
            fcntl(activated[i], F_SETFD, FD_CLOEXEC);
            e->fds[ss.ss_family == AF_UNIX ? 0 : 1] = activated[i];
        }
        return 0;
    }
    if (config->egd_socket[0] && listen_unix(e, config->egd_socket, why, whylen) < 0)
        return -1;
    if (config->egd_listen[0] && listen_tcp(e, config->egd_listen, why, whylen) < 0)
        return -1;
    return 0;
}

/* --- clients ------------------------------------------------------------------------ */

/* Everything of the client but its descriptor, which the caller has closed or handed on. */
static void client_free(struct egd_client *c)
{
    *c->prevp = c->next;
    if (c->next)
        c->next->prevp = c->prevp;
    (*c->egd->clients_now)--;
    OPENSSL_cleanse(c, sizeof(*c));          /* unsent random bytes, added entropy */
    free(c);
}

static void client_close(struct egd_client *c)
{
    loop_del_fd(c->egd->loop, c->fd);
    close(c->fd);
    client_free(c);
}

/* An unknown command: what follows it is unread, and a plain close would reset the
 * connection; the client gets end-of-file instead. */
static void client_close_gracefully(struct egd_client *c)
{
    loop_del_fd(c->egd->loop, c->fd);
    drain_close(c->egd->drain, c->fd);
    client_free(c);
}

/* Bytes the command in c->in needs in total; 0 for an unknown command. */
static size_t command_length(const struct egd_client *c)
{
    switch (c->in[0]) {
    case 0x00: case 0x04: return 1;
    case 0x01: case 0x02: return 2;
    case 0x03: return c->in_len >= 4 ? 4u + c->in[3] : 4;
    default: return 0;
    }
}

/* Puts n random bytes in the reply (after a count byte when counted). False when the pool
 * refused at the last moment (a clock jump forcing a reseed): then nothing is in it. */
static bool reply_bytes(struct egd_client *c, size_t n, bool counted)
{
    struct egd *e = c->egd;
    uint8_t *dst = c->out + (counted ? 1 : 0);
    bool ok = n == 0 || pool_generate(e->pool, dst, n, loop_now_ns()) == 0;

    if (!ok)
        n = 0;
    if (counted)
        c->out[0] = (uint8_t)n;
    c->out_len = counted ? n + 1 : n;
    e->stats.bytes_served += n;
    return ok;
}

/* Executes the complete command in c->in. False: parked until the pool is ready. */
static bool execute(struct egd_client *c)
{
    struct egd *e = c->egd;
    bool ready = pool_ready(e->pool);

    c->out_len = c->out_pos = 0;
    switch (c->in[0]) {
    case 0x00: {
        uint32_t bits = ready ? EGD_READY_LEVEL_BITS : 0;

        c->out[0] = (uint8_t)(bits >> 24), c->out[1] = (uint8_t)(bits >> 16);
        c->out[2] = (uint8_t)(bits >> 8), c->out[3] = (uint8_t)bits;
        c->out_len = 4;
        break;
    }
    case 0x01:
        reply_bytes(c, ready ? c->in[1] : 0, true);   /* a refusal is an honest count 0 */
        break;
    case 0x02:
        if (!ready || !reply_bytes(c, c->in[1], false))
            return false;                              /* exactly n bytes, or wait */
        break;
    case 0x03: {
        unsigned bits = (unsigned)c->in[1] << 8 | c->in[2], len = c->in[3];

        if (c->trusted && len > 0) {
            pool_add_entropy(e->pool, c->in + 4, len, bits > 8 * len ? 8 * len : bits,
                             loop_now_ns());
            e->stats.entropy_bytes_added += len;
        } else {
            e->stats.entropy_bytes_dropped += len;
        }
        break;
    }
    case 0x04:
        c->out_len = 1 + (size_t)snprintf((char *)c->out + 1, sizeof(c->out) - 1, "%ld",
                                          (long)getpid());
        c->out[0] = (uint8_t)(c->out_len - 1);
        break;
    }
    e->stats.commands[c->in[0]]++;
    return true;
}

static void serve(struct egd_client *c)
{
    for (;;) {
        if (c->out_pos < c->out_len) {
            ssize_t w = send(c->fd, c->out + c->out_pos, c->out_len - c->out_pos, MSG_NOSIGNAL);

            if (w < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    loop_mod_fd(c->egd->loop, c->fd, EPOLLOUT);
                    return;
                }
                client_close(c);
                return;
            }
            c->out_pos += (size_t)w;
            c->last_progress_ns = loop_now_ns();
            if (c->out_pos < c->out_len)
                continue;
            OPENSSL_cleanse(c->out, c->out_len);
            c->out_len = c->out_pos = 0;
            loop_mod_fd(c->egd->loop, c->fd, EPOLLIN);
        }
        if (c->waiting) {
            if (!execute(c))
                return;
            c->waiting = false;
            c->in_len = 0;
            continue;
        }
        /* Read exactly what the command needs, so nothing of the next one is taken. */
        size_t want = c->in_len == 0 ? 1 : command_length(c);
        ssize_t got;

        if (c->in_len > 0 && want == 0) {
            c->egd->stats.unknown_commands++;
            log_info("egd: unknown command 0x%02x; closing that client", c->in[0]);
            client_close_gracefully(c);
            return;
        }
        got = recv(c->fd, c->in + c->in_len, want - c->in_len, 0);
        if (got <= 0) {
            if (got == 0 || (errno != EAGAIN && errno != EINTR))
                client_close(c);
            return;
        }
        c->in_len += (size_t)got;
        c->last_progress_ns = loop_now_ns();
        if (command_length(c) == 0 || c->in_len < command_length(c))
            continue;                        /* unknown: closed above; else read on */
        if (!execute(c)) {
            c->waiting = true;
            loop_mod_fd(c->egd->loop, c->fd, 0);
            return;
        }
        c->in_len = 0;
    }
}

static void client_event(void *arg, int fd, uint32_t events)
{
    struct egd_client *c = arg;

    (void)fd;
    if ((events & (EPOLLERR | EPOLLHUP)) && (c->waiting || c->out_len)) {
        client_close(c);
        return;
    }
    serve(c);
}

static bool unix_peer_trusted(int fd, const struct config *cfg)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    const struct group *g;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return false;
    if (cred.uid == 0)
        return true;
    return cfg->trusted_group[0] && (g = getgrnam(cfg->trusted_group)) && g->gr_gid == cred.gid;
}

static void listener_event(void *arg, int lfd, uint32_t events)
{
    struct egd *e = arg;

    (void)events;
    for (int i = 0; i < 64; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        struct egd_client *c;

        if (fd < 0)
            return;
        if (*e->clients_now >= e->config->max_clients ||
            !(c = calloc(1, sizeof(*c)))) {
            close(fd);                       /* EGD has no way to say busy */
            continue;
        }
        c->egd = e;
        c->fd = fd;
        c->trusted = lfd == e->fds[0] && unix_peer_trusted(fd, e->config);
        c->last_progress_ns = loop_now_ns();
        if (loop_add_fd(e->loop, fd, EPOLLIN, client_event, c) < 0) {
            close(fd);
            free(c);
            continue;
        }
        c->next = e->clients;
        c->prevp = &e->clients;
        if (e->clients)
            e->clients->prevp = &c->next;
        e->clients = c;
        (*e->clients_now)++;
        e->stats.clients_accepted++;
    }
}

/* --- idle clients ------------------------------------------------------------------- */

/* Unlike protocol v1 clients, idle EGD clients are kept unless egd_idle_timeout is set:
 * QEMU's rng-egd opens one connection for the VM's whole life (which may sit paused, or its
 * guest not read, for hours), never notices that it was closed, and from then on its guest's
 * reads hang. Keeping them costs little: a client holds one struct egd_client whatever it
 * does (one command at a time, a reply of at most 256 bytes, no reading while the reply is
 * unsent), and max_clients bounds how many there are.
 *
 * With a timeout the sweep runs every half timeout plus a second, so an idle client goes
 * between one and one and a half timeouts after its last progress; one whose blocking read
 * waits for the pool never does. A reload re-arms it for the new value (egd_reload). */
static void arm_sweep(struct egd *e);

static void sweep_idle(void *arg)
{
    struct egd *e = arg;
    uint64_t now = loop_now_ns(), limit = (uint64_t)e->config->egd_idle_timeout * NS_PER_S;
    struct egd_client *c = e->clients, *next;

    e->sweep_timer = 0;
    for (; c && limit; c = next) {
        next = c->next;
        if (!c->waiting && now - c->last_progress_ns > limit)
            client_close(c);
    }
    arm_sweep(e);
}

/* Arms the sweep for the egd_idle_timeout in effect (none for 0), replacing an armed one. */
static void arm_sweep(struct egd *e)
{
    unsigned timeout = e->config->egd_idle_timeout;
    int id = 0;

    loop_cancel_timer(e->loop, e->sweep_timer);
    if (timeout && (e->fds[0] >= 0 || e->fds[1] >= 0))
        id = loop_add_timer(e->loop, (uint64_t)timeout * NS_PER_S / 2 + NS_PER_S, sweep_idle, e);
    e->sweep_timer = id > 0 ? id : 0;
    e->sweep_timeout = timeout;
}

void egd_reload(struct egd *e)
{
    if (e->loop && e->config->egd_idle_timeout != e->sweep_timeout)
        arm_sweep(e);
}

int egd_start(struct egd *e, struct loop *loop, struct pool *pool, unsigned *clients_now)
{
    e->loop = loop;
    e->pool = pool;
    e->clients_now = clients_now;
    if ((e->fds[0] >= 0 || e->fds[1] >= 0) && !(e->drain = drain_new(loop)))
        return -ENOMEM;
    for (int i = 0; i < 2; i++)
        if (e->fds[i] >= 0 && loop_add_fd(loop, e->fds[i], EPOLLIN, listener_event, e) < 0)
            return -1;
    arm_sweep(e);
    return 0;
}

void egd_pool_ready(struct egd *e)
{
    struct egd_client *c = e->clients, *next;

    for (; c; c = next) {
        next = c->next;
        if (c->waiting)
            serve(c);
    }
}

void egd_close(struct egd *e)
{
    while (e->clients)
        client_close(e->clients);
    for (int i = 0; i < 2; i++) {
        if (e->fds[i] < 0)
            continue;
        if (e->loop)
            loop_del_fd(e->loop, e->fds[i]);
        close(e->fds[i]);
        e->fds[i] = -1;
    }
    drain_free(e->drain);
    e->drain = NULL;
    unix_socket_unlink(&e->bound);
}
