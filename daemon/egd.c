/* EGD commands, byte-oriented and client-initiated:
 *   0x00            entropy level: u32 bits, big-endian
 *   0x01 n          non-blocking read: u8 count, then count bytes (0 while not ready)
 *   0x02 n          blocking read: n bytes, once the pool is ready (egd_full_entropy:
 *                   full entropy, once the noise reservoir has granted the blocks)
 *   0x03 u16 u8 d   add entropy (bits, length, data): mixed in for a privileged Unix peer,
 *                   read and dropped for anyone else; no reply
 *   0x04            the daemon's pid as a counted string
 * An unknown command closes the connection (gracefully: listener.c, drain.c). One command at
 * a time per client: the reply (at most 256 bytes) is flushed before the next command is
 * read. Accepting, max_clients, the idle sweep and peers' credentials are listener.c's. */
#include "egd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "unix_socket.h"

struct egd_client {
    struct listener_conn conn;       /* fd; trusted: a Unix peer, uid 0 or trusted_group */
    struct egd *egd;
    bool waiting;                    /* blocking read parked until the pool is ready */
    struct noise_ticket *ticket;     /* egd_full_entropy: its place in the noise queue */
    uint8_t in[4 + 255];
    size_t in_len;
    uint8_t out[1 + 255];
    size_t out_len, out_pos;
};

/* --- listeners ---------------------------------------------------------------------- */

static int listen_unix(struct egd *e, const char *path, char *why, size_t whylen)
{
    int fd = unix_socket_listen(&e->bound, "egd_socket", path, e->config->socket_mode,
                                (gid_t)-1, e->config->user, why, whylen);

    if (fd < 0)
        return -1;
    listener_add_fd(&e->listener, fd);
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
    listener_add_fd(&e->listener, fd);
    return 0;
}

/* addr:port for a message: 0.0.0.0:8888, [::]:8888. */
static void address_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    bool v6 = ss->ss_family == AF_INET6;
    const void *a = v6 ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
                       : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
    in_port_t port = v6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                        : ((const struct sockaddr_in *)ss)->sin_port;

    inet_ntop(ss->ss_family, a, host, sizeof(host));
    snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", host, (unsigned)ntohs(port));
}

/* A socket systemd passed as FileDescriptorName=egd is held to egd_listen's rule: a unit
 * file (ListenStream=8888 listens on every address) must not open EGD, which has no
 * authentication, to the network. Unix, or TCP on loopback; anything else is refused. */
static int check_activated(int fd, char *why, size_t whylen)
{
    struct sockaddr_storage ss = { 0 };
    socklen_t len = sizeof(ss);
    char addr[INET6_ADDRSTRLEN + 16];

    if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return snprintf(why, whylen, "socket activation: EGD socket (descriptor %d, "
                        "FileDescriptorName=egd) is not a listening stream socket", fd), -1;
    if (ss.ss_family == AF_UNIX || config_is_loopback((struct sockaddr *)&ss))
        return 0;
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
        return snprintf(why, whylen, "socket activation: EGD socket (descriptor %d, "
                        "FileDescriptorName=egd) is of address family %d, neither Unix nor "
                        "TCP", fd, ss.ss_family), -1;
    address_text(&ss, addr, sizeof(addr));
    return snprintf(why, whylen, "socket activation: EGD socket (descriptor %d, "
                    "FileDescriptorName=egd) listens on %s, not loopback (EGD has no "
                    "authentication: use 127.0.0.1, [::1] or a Unix path)", fd, addr), -1;
}

static const struct listener_ops egd_ops;

/* Unlike protocol v1 clients, idle EGD clients are kept unless egd_idle_timeout is set:
 * QEMU's rng-egd opens one connection for the VM's whole life (which may sit paused, or its
 * guest not read, for hours), never notices that it was closed, and from then on its guest's
 * reads hang. Keeping them costs little: a client holds one struct egd_client whatever it
 * does (one command at a time, a reply of at most 256 bytes, no reading while the reply is
 * unsent), and max_clients bounds how many there are. The listener's sweep applies the
 * timeout when one is set, and a reload re-arms it for a new value (egd_reload). */
int egd_open(struct egd *e, const struct config *config, const int *activated,
             int nactivated, char *why, size_t whylen)
{
    memset(e, 0, sizeof(*e));
    e->config = config;
    listener_init(&e->listener, "egd", &egd_ops, e, config, &config->egd_idle_timeout);
    if (nactivated > 0) {
        for (int i = 0; i < nactivated && i < LISTENER_MAX_FDS; i++) {
            if (check_activated(activated[i], why, whylen) < 0)
                return -1;
            listener_add_fd(&e->listener, activated[i]);
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

static struct egd_client *client_of(const struct listener_conn *conn)
{
    return LISTENER_CLIENT(conn, struct egd_client, conn);
}

/* A client holds nothing beyond its struct, which the listener wipes (unsent random bytes,
 * added entropy) and frees, but a place in the noise queue. */
static void client_open(void *arg, struct listener_conn *conn)
{
    struct egd *e = arg;

    client_of(conn)->egd = e;
    e->stats.clients_accepted++;
}

static void client_release(struct listener_conn *conn)
{
    struct egd_client *c = client_of(conn);

    if (c->ticket)                   /* gone while waiting: its blocks go to the next */
        pool_noise_cancel(c->egd->pool, &c->ticket);
}

static void client_close(struct egd_client *c)
{
    listener_close_conn(&c->conn);
}

/* An unknown command: what follows it is unread, and a plain close would reset the
 * connection; the client gets end-of-file instead. */
static void client_close_gracefully(struct egd_client *c)
{
    listener_close_conn_gracefully(&c->conn);
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

/* egd_full_entropy: n bytes of full entropy (RBG3(XOR), as protocol v1's FULL_ENTROPY) once
 * the noise queue has granted the blocks. EGD has no error to send: with no healthy noise
 * source, or the uid's share of the queue taken, the read waits (as for a pool not ready)
 * and is asked again when waiting clients are let go. False: parked. */
static bool reply_full_entropy(struct egd_client *c, size_t n)
{
    struct egd *e = c->egd;
    const struct pool_noise_request rq = { .uid = c->conn.uid, .mode = NOISE_FULL_ENTROPY,
                                           .bytes = n };
    int rc;

    if (n == 0)
        return true;
    if (!c->ticket) {
        if (pool_noise_submit(e->pool, &rq, &c->ticket, NULL, 0) != RANDD_OK)
            return false;            /* refused: waits, not counted, and is asked again */
        if (pool_noise_wanted(e->pool) && e->noise_wanted)
            e->noise_wanted(e->noise_ctx);
    }
    if (!noise_ticket_ready(c->ticket))
        return false;
    if (pool_generate(e->pool, c->out, n, loop_now_ns()) < 0)
        return false;                /* a clock jump: the blocks stay granted, waiting */
    if ((rc = pool_full_entropy_xor(e->pool, &c->ticket, c->out, n)) < 0) {
        OPENSSL_cleanse(c->out, n);  /* dropped meanwhile (a noise source failed): waits */
        if (rc == -EINVAL)           /* a ticket for fewer bytes: given up, asked for anew */
            pool_noise_cancel(e->pool, &c->ticket);
        return false;
    }
    c->out_len = n;
    e->stats.bytes_served += n;
    e->stats.full_entropy_bytes += n;
    return true;
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
        if (ready && e->config->egd_full_entropy) {
            if (!reply_full_entropy(c, c->in[1]))
                return false;
            break;
        }
        /* egd_full_entropy turned off by a reload while it waited: its place in the noise
         * queue goes, or it would take blocks no answer spends. */
        if (c->ticket && !e->config->egd_full_entropy)
            pool_noise_cancel(e->pool, &c->ticket);
        if (!ready || !reply_bytes(c, c->in[1], false))
            return false;                              /* exactly n bytes, or wait */
        break;
    case 0x03: {
        unsigned bits = (unsigned)c->in[1] << 8 | c->in[2], len = c->in[3];

        if (c->conn.trusted && len > 0) {
            pool_add_entropy(e->pool, c->in + 4, len, bits > 8 * len ? 8 * len : bits,
                             loop_now_ns());
            e->stats.entropy_bytes_added += len;
        } else {
            e->stats.entropy_bytes_dropped += len;
        }
        OPENSSL_cleanse(c->in + 4, len);      /* taken: no copy stays for the next command */
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
            ssize_t w = send(c->conn.fd, c->out + c->out_pos, c->out_len - c->out_pos,
                             MSG_NOSIGNAL);

            if (w < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                    loop_mod_fd(c->egd->loop, c->conn.fd, EPOLLOUT);
                    return;
                }
                client_close(c);
                return;
            }
            c->out_pos += (size_t)w;
            listener_progress(&c->conn);
            if (c->out_pos < c->out_len)
                continue;
            OPENSSL_cleanse(c->out, c->out_len);
            c->out_len = c->out_pos = 0;
            loop_mod_fd(c->egd->loop, c->conn.fd, EPOLLIN);
        }
        if (c->waiting) {
            if (!execute(c)) {
                if (!c->ticket)          /* parked again, holding nothing */
                    listener_idle_stalled(&c->conn);
                return;
            }
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
        got = recv(c->conn.fd, c->in + c->in_len, want - c->in_len, 0);
        if (got <= 0) {
            if (got == 0 || (errno != EAGAIN && errno != EINTR))
                client_close(c);
            else                    /* waiting for its peer: may be evicted */
                listener_idle(&c->conn);
            return;
        }
        c->in_len += (size_t)got;
        if (command_length(c) == 0 || c->in_len < command_length(c))
            continue;                        /* unknown: closed above; else read on */
        listener_progress(&c->conn);         /* a whole command: not a byte now and then */
        if (!execute(c)) {
            c->waiting = true;
            loop_mod_fd(c->egd->loop, c->conn.fd, 0);
            if (!c->ticket)   /* parked with no place in the noise queue: on its uid's own
                               * limits, or on the pool; it holds nothing, so evictable */
                listener_idle_stalled(&c->conn);
            return;
        }
        c->in_len = 0;
    }
}

/* The listener hands each connection's events here, with its listener_conn. */
static void client_event(void *arg, int fd, uint32_t events)
{
    struct egd_client *c = client_of(arg);

    (void)fd;
    if ((events & (EPOLLERR | EPOLLHUP)) && (c->waiting || c->out_len)) {
        client_close(c);
        return;
    }
    serve(c);
}

static void serve_if_waiting(struct listener_conn *conn)
{
    struct egd_client *c = client_of(conn);

    if (c->waiting && listener_take_up(conn))
        serve(c);
}

void egd_set_noise_wanted(struct egd *e, void (*wanted)(void *ctx), void *ctx)
{
    e->noise_wanted = wanted;
    e->noise_ctx = ctx;
}

void egd_pool_ready(struct egd *e)
{
    listener_each(&e->listener, serve_if_waiting);
}

/* --- up and down --------------------------------------------------------------------- */

/* The idle sweep leaves alone a blocking read that waits for the pool. */
static bool waits_for_pool(const struct listener_conn *conn)
{
    return client_of(conn)->waiting;
}

/* Over max_clients or evicted, a client is just closed: EGD has no way to say busy (.refuse
 * NULL). */
static const struct listener_ops egd_ops = {
    .client_size = sizeof(struct egd_client),
    .conn_offset = offsetof(struct egd_client, conn),
    .open = client_open,
    .release = client_release,
    .event = client_event,
    .waiting = waits_for_pool,
};

int egd_start(struct egd *e, struct loop *loop, struct pool *pool,
              struct listener_clients *clients)
{
    e->loop = loop;
    e->pool = pool;
    return listener_start(&e->listener, loop, clients);
}

void egd_reload(struct egd *e)
{
    listener_reload(&e->listener);
}

void egd_close(struct egd *e)
{
    listener_close(&e->listener);
    unix_socket_unlink(&e->bound);
}
