/* A connection's life once accepted (listener.c): read one request at a time (pipelined
 * requests wait in the socket buffer, which is the back-pressure), reply, and close (after a
 * framing error, gracefully). Replies are produced into a 64 KiB buffer only as the socket
 * drains, so a 16 MiB BYTES reply never needs 16 MiB, and a client that stops reading holds
 * one buffer and delays no one.
 *
 * Sections: sockets, connections, replies, requests, up and down. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "memfd_arena.h"
#include "noise.h"
#include "pr_generator.h"
#include "primes.h"
#include "rngbc.h"
#include "unix_socket.h"

#define REPLY_CHUNK       (64u << 10)   /* fewer sends and wakeups; only while replying */
#define SMALL_BODY        64          /* BYTES and most RANGE bodies fit without malloc */
#define RANGE_DRAW_BYTES  2048        /* RANGE's draws a generate: a DRBG engine pays ~2 us a
                                       * generate, which one per value made a stall anyone
                                       * could cause (review of mode = approved) */
#define REQUESTS_PER_TURN 32          /* then let other clients have the loop */
#define INPUT_BYTES       128         /* one recv takes a request whole, or librandd's 8 */
#define SEND_NOW_TEXT     128         /* an error sent at once: its message, at most */
#define LOG_EVERY_NS      60000000000ull  /* a warning a client can cause, at most this often */
_Static_assert(INPUT_BYTES <= UINT8_MAX, "input_pos and input_len are bytes");

/* One writer per count: a plain load and store, atomic only so other threads may read. */
#define SERVER_STAT_ADD(count, n)                                                       \
    atomic_store_explicit(&(count),                                                     \
                          atomic_load_explicit(&(count), memory_order_relaxed) + (n),   \
                          memory_order_relaxed)

enum client_state { READING, WAITING_READY, WAITING_PRIME, WAITING_NOISE, REPLYING };

/* One reply: header and a body that is either fixed text or generated as it drains. */
struct reply {
    size_t len, pos;                  /* bytes in buf, bytes of them written */
    uint8_t op;                       /* what to generate: BYTES or RANGE; 0: nothing */
    uint64_t left;                    /* BYTES: bytes to generate; RANGE: values */
    struct randd_rngbc_range range;
    uint8_t r[RANDD_MAX_RANGE_LEN];
    uint8_t *text;                    /* STATUS JSON, sent after the header */
    size_t text_len, text_pos;
    bool passes_arena;                /* BYTES_MEMFD: the first send carries the memfd */
    bool body_begun;                  /* BYTES, RANGE: the first piece follows the header */
    uint8_t status;                   /* the header's */
    bool counted;                     /* in stats.replies: once its first bytes were sent */
    struct pr_generator *pr;          /* prediction resistance: BYTES from this generator,
                                       * reseeded with a noise block for this reply alone */
    uint64_t pr_continuity;           /* branch_continuity when pr began: it goes on only
                                       * while nothing broke the pool's (a halt, a clone) */
    size_t draws_pos, draws_len;      /* RANGE: of draws[] below */
    uint8_t buf[REPLY_CHUNK];         /* after the fields, so a new reply clears only those */
    uint8_t draws[RANGE_DRAW_BYTES];  /* RANGE: generator bytes for RNG-BC-8, one generate a
                                       * batch; each wiped as it is drawn, the rest at the end
                                       * of the pass that made them: all zero between passes */
};

struct client {
    struct listener_conn conn;        /* fd, peer uid, trusted (may ADD_ENTROPY), progress */
    struct server *srv;
    enum client_state state;
    bool close_after_reply;           /* framing lost (BAD_VERSION, huge body) */
    bool dead;                        /* out of memory mid-request: close at the next step */
    uint8_t head[RANDD_HEADER_BYTES];
    size_t head_len;
    struct randd_header req;
    uint8_t small_body[SMALL_BODY];
    uint8_t input[INPUT_BYTES];       /* what the last recv brought beyond the request read */
    uint8_t input_pos, input_len;
    uint8_t *body;                    /* small_body or malloc'd */
    size_t body_len;
    struct reply *reply;
    struct prime_job *prime_job;      /* WAITING_PRIME: the search under way */
    struct noise_ticket *noise_ticket;    /* WAITING_NOISE: its place in the pool's queue */
    struct memfd_arena *arena;        /* BYTES_MEMFD's shared pages, from its first request */
    uint32_t events;                  /* what epoll watches for now */
};

static void client_close(struct client *c);
static void client_serve(struct client *c);

/* --- sockets ------------------------------------------------------------------------- */

/* Outside the unit (no RuntimeDirectory), /run/randd may not exist yet. */
static int make_parent_dir(const char *path, char *why, size_t whylen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    if (!(slash = strrchr(dir, '/')) || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0755) == 0)
        log_notice("socket: created the directory %s (mode 0755)", dir);
    else if (errno != EEXIST)
        return snprintf(why, whylen, "%s: %s", dir, strerror(errno)), -1;
    return 0;
}

static int bind_path(struct server *s, const struct config *cfg, char *why, size_t whylen)
{
    gid_t gid = (gid_t)-1;
    int fd;

    if (cfg->socket_group[0]) {
        const struct group *group = getgrnam(cfg->socket_group);

        if (!group)
            return snprintf(why, whylen, "socket_group %s: no such group",
                            cfg->socket_group), -1;
        gid = group->gr_gid;
    }
    if (make_parent_dir(cfg->socket, why, whylen) < 0)
        return -1;
    fd = unix_socket_listen(&s->bound, "socket", cfg->socket, cfg->socket_mode, gid, cfg->user,
                            why, whylen);
    if (fd < 0)
        return -1;
    listener_add_fd(&s->listener, fd);
    return 0;
}

static const struct listener_ops client_ops;

int server_open(struct server *s, const struct config *cfg, int activated_fd, char *why,
                size_t whylen)
{
    memset(s, 0, sizeof(*s));
    s->config = cfg;
    listener_init(&s->listener, "socket", &client_ops, s, cfg, &cfg->idle_timeout);
    snprintf(s->path, sizeof(s->path), "%s", cfg->socket);
    if (activated_fd >= 0) {
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);

        if (sd_is_socket_unix(activated_fd, SOCK_STREAM, 1, NULL, 0) <= 0)
            return snprintf(why, whylen, "socket activation: the client socket must be a "
                                         "listening AF_UNIX stream socket"), -1;
        listener_add_fd(&s->listener, activated_fd);
        s->activated = true;
        if (getsockname(activated_fd, (struct sockaddr *)&sa, &len) == 0 &&
            len > offsetof(struct sockaddr_un, sun_path) && sa.sun_path[0])
            snprintf(s->path, sizeof(s->path), "%.*s",
                     (int)(len - offsetof(struct sockaddr_un, sun_path)), sa.sun_path);
        return 0;
    }
    return bind_path(s, cfg, why, whylen);
}

int server_open_beside(struct server *s, const struct config *cfg, struct server *first,
                       char *why, size_t whylen)
{
    memset(s, 0, sizeof(*s));
    s->config = cfg;
    listener_init(&s->listener, "socket", &client_ops, s, cfg, &cfg->idle_timeout);
    snprintf(s->path, sizeof(s->path), "%s", first->path);
    s->activated = first->activated;
    for (size_t i = 0; i < first->listener.nfds; i++) {
        int fd = fcntl(first->listener.fds[i], F_DUPFD_CLOEXEC, 0);

        if (fd < 0)
            return snprintf(why, whylen, "socket: another loop's descriptor: %s",
                            strerror(errno)), -1;
        listener_add_fd(&s->listener, fd);
    }
    listener_share_accepts(&first->listener);
    listener_share_accepts(&s->listener);
    return 0;
}

/* --- connections ------------------------------------------------------------------- */

static void free_reply(struct client *c)
{
    if (!c->reply)
        return;
    pr_generator_free(c->reply->pr);
    free(c->reply->text);
    /* Random bytes are only ever in buf[0, len): wipe those (glibc's explicit_bzero is a
     * vectorised memset that is not optimised away; OPENSSL_cleanse is a slow loop). */
    explicit_bzero(c->reply->buf, c->reply->len);
    free(c->reply);
    c->reply = NULL;
}

/* Bodies may be ADD_ENTROPY material: wiped before they are let go. */
static void free_body(struct client *c)
{
    if (c->body)
        OPENSSL_cleanse(c->body, c->body_len);
    if (c->body && c->body != c->small_body)
        free(c->body);
    c->body = NULL;
    c->body_len = 0;
}

static struct client *client_of(const struct listener_conn *conn)
{
    return LISTENER_CLIENT(conn, struct client, conn);
}

static void client_open(void *arg, struct listener_conn *conn)
{
    struct server *s = arg;
    struct client *c = client_of(conn);

    c->srv = s;
    c->events = EPOLLIN;
    SERVER_STAT_ADD(s->stats.clients_accepted, 1);
    SERVER_STAT_ADD(s->stats.connected, 1);
}

/* What the client holds beyond its struct, which the listener wipes and frees. */
static void client_release(struct listener_conn *conn)
{
    struct client *c = client_of(conn);

    if (c->prime_job)
        primes_cancel(c->srv->primes, c->prime_job);
    if (c->noise_ticket) {           /* gone while waiting: its blocks go to the next */
        pool_noise_cancel(branch_lock_pool(c->srv->branch), &c->noise_ticket);
        branch_unlock_pool(c->srv->branch);
    }
    free_reply(c);
    free_body(c);
    memfd_arena_close(c->arena);
    SERVER_STAT_ADD(c->srv->stats.connected, -1);
}

static void client_close(struct client *c)
{
    listener_close_conn(&c->conn);
}

/* Framing lost, reply written: the peer must read it and then end-of-file, even with bytes
 * of its request still unread (a plain close would reset the connection). */
static void client_close_gracefully(struct client *c)
{
    listener_close_conn_gracefully(&c->conn);
}

/* An epoll_ctl only when the interest changes: a client asking for one small request after
 * another stays on EPOLLIN, and that syscall was a sixth of the work per request. */
static void want_events(struct client *c, uint32_t events)
{
    if (c->events == events)
        return;
    loop_mod_fd(c->srv->loop, c->conn.fd, events);
    c->events = events;
}

/* --- replies ------------------------------------------------------------------------ */

/* A whole error reply sent at once, from the stack: for when there is no memory for a reply
 * (and for BUSY at accept). Best effort: a full socket buffer drops it. */
static void send_error_now(int fd, int status, const char *msg)
{
    uint8_t frame[RANDD_HEADER_BYTES + SEND_NOW_TEXT];
    size_t n = strnlen(msg, SEND_NOW_TEXT);
    struct randd_header h = { RANDD_PROTOCOL_VERSION, (uint8_t)status, 0, (uint32_t)n };

    randd_header_encode(frame, &h);
    memcpy(frame + RANDD_HEADER_BYTES, msg, n);
    (void)!send(fd, frame, RANDD_HEADER_BYTES + n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Out of memory mid-request: the client gets a clean INTERNAL and is closed; others go on. */
static void fail_out_of_memory(struct client *c)
{
    log_warning("client: out of memory for a request; answering INTERNAL and closing it");
    send_error_now(c->conn.fd, RANDD_INTERNAL, "out of memory; try again");
    SERVER_STAT_ADD(c->srv->stats.replies[RANDD_INTERNAL], 1);
    c->dead = true;
}

static struct reply *start_reply(struct client *c, int status, size_t body_len)
{
    struct randd_header h = { RANDD_PROTOCOL_VERSION, (uint8_t)status, 0, (uint32_t)body_len };
    struct reply *r = malloc(sizeof(*r));

    if (!r) {
        fail_out_of_memory(c);
        return NULL;
    }
    memset(r, 0, offsetof(struct reply, buf));
    randd_header_encode(r->buf, &h);
    r->len = RANDD_HEADER_BYTES;
    r->status = (uint8_t)status;
    c->reply = r;
    c->state = REPLYING;
    return r;
}

static void reply_error(struct client *c, int status, const char *message)
{
    size_t n = strlen(message);
    struct reply *r = start_reply(c, status, n);

    if (!r)
        return;
    memcpy(r->buf + r->len, message, n);
    r->len += n;
}

/* RANGE's byte source: the reply's draws, refilled a batch at a time from the loop's
 * generator. Every byte handed to RNG-BC-8 is wiped from the batch. */
struct range_draws {
    struct branch *branch;
    struct reply *reply;
};

static int draw_range_bytes(void *ctx, void *out, size_t n)
{
    struct range_draws *d = ctx;
    struct reply *r = d->reply;
    uint8_t *at = out;

    while (n > 0) {
        size_t k;

        if (r->draws_pos == r->draws_len) {
            /* What the values left need, and a candidate more for redraws: a short RANGE
             * reply makes no more than it uses. */
            uint64_t want = (r->left + 1) * r->range.len;
            size_t batch = want < sizeof(r->draws) ? (size_t)want : sizeof(r->draws);

            if (batch < n)
                batch = n < sizeof(r->draws) ? n : sizeof(r->draws);
            if (branch_fill(d->branch, r->draws, batch) < 0)
                return -1;
            r->draws_pos = 0;
            r->draws_len = batch;
        }
        k = r->draws_len - r->draws_pos < n ? r->draws_len - r->draws_pos : n;
        memcpy(at, r->draws + r->draws_pos, k);
        explicit_bzero(r->draws + r->draws_pos, k);
        r->draws_pos += k;
        at += k;
        n -= k;
    }
    return 0;
}

/* Draws left over at the end of a pass are wiped: the next pass, after branch_ready again,
 * takes fresh ones (a clone or a halt between passes leaves nothing of the state before). */
static void drop_range_draws(struct reply *r)
{
    explicit_bzero(r->draws, sizeof(r->draws));
    r->draws_pos = r->draws_len = 0;
}

/* Appends the next piece of the body to buf (after the header, for the first piece, so that
 * a small reply is one send). Returns 0, or -1 when output must stop (the pool stopped being
 * ready mid-reply: the header promised bytes we will not give). */
static int generate_more(struct client *c, struct reply *r)
{
    struct server *s = c->srv;
    struct range_draws draws = { s->branch, r };
    struct randd_byte_source src = { draw_range_bytes, &draws };
    size_t room = sizeof(r->buf) - r->len, before = r->len;

    if (r->op == RANDD_OP_BYTES) {
        size_t n = r->left < room ? (size_t)r->left : room;

        if (r->pr && (!branch_ready(s->branch) ||
                      branch_continuity(s->branch) != r->pr_continuity))
            return -1;                /* a failed self-test, a clone: not one byte more */
        if (r->pr ? pr_generator_read(r->pr, r->buf + r->len, n) < 0
                  : branch_generate(s->branch, r->buf + r->len, n, loop_now_ns()) < 0)
            return -1;
        r->len += n;
        r->left -= n;
    } else {
        size_t per = room / r->range.len;

        if (!branch_ready(s->branch))
            return -1;
        for (; r->left > 0 && per-- > 0; r->left--, r->len += r->range.len)
            if (randd_rngbc8(&r->range, r->buf + r->len, &src, NULL) < 0) {
                drop_range_draws(r);
                return -1;
            }
        drop_range_draws(r);
    }
    SERVER_STAT_ADD(s->stats.bytes_served, r->len - before);
    return 0;
}

/* The memfd could not go with a BYTES_MEMFD reply, and nothing of it was sent: the kernel
 * refused the descriptor (ETOOMANYREFS: randd's uid has too many in flight), or randd lacks
 * a descriptor or memory to pass it. The client is answered with a status instead (BUSY for
 * the first, which passes; INTERNAL otherwise) and falls back to BYTES, never with a close;
 * the arena goes, with the bytes in its slot, and a later request tries a new one. Returns
 * the new reply, or NULL when the client is closed (no memory even for that). */
static struct reply *reply_arena_refused(struct client *c, int err)
{
    static _Atomic uint64_t logged_ns;     /* once a minute at most, over every loop */
    uint64_t now = loop_now_ns(), last = atomic_load(&logged_ns);
    char why[128];

    if ((!last || now - last >= LOG_EVERY_NS) && atomic_compare_exchange_strong(&logged_ns,
                                                                              &last, now))
        log_warning("client uid %u: BYTES_MEMFD: the memfd could not be passed: %s; "
                    "answering %s (logged once a minute)", (unsigned)c->conn.uid,
                    strerror(err), err == ETOOMANYREFS ? "BUSY" : "INTERNAL");
    snprintf(why, sizeof(why), "the BYTES_MEMFD descriptor could not be passed (%s); use BYTES",
             strerror(err));
    free_reply(c);
    memfd_arena_close(c->arena);
    c->arena = NULL;
    reply_error(c, err == ETOOMANYREFS ? RANDD_BUSY : RANDD_INTERNAL, why);
    if (!c->reply) {
        client_close(c);
        return NULL;
    }
    return c->reply;
}

/* Writes what it can; true when the reply is complete. */
static bool flush_reply(struct client *c)
{
    struct reply *r = c->reply;

    for (;;) {
        const uint8_t *from;
        size_t n;
        ssize_t w;

        if (r->pos == r->len && r->text_pos < r->text_len) {
            from = r->text + r->text_pos;
            n = r->text_len - r->text_pos;
        } else if (r->op && r->left > 0 && r->pos == 0 && !r->body_begun) {
            r->body_begun = true;
            if (generate_more(c, r) < 0) {
                log_warning("client: pool stopped being ready before a reply; closing it");
                client_close(c);
                return false;
            }
            continue;
        } else if (r->pos < r->len) {
            from = r->buf + r->pos;
            n = r->len - r->pos;
        } else if (r->op && r->left > 0) {
            size_t sent = r->len;
            int rc;

            /* The engines write their output (keystream, never XORed into what is there),
             * so the next piece overwrites the piece just sent: only the part it does not
             * reach is wiped, not all of buf first (a second pass over every byte served). */
            r->pos = r->len = 0;
            rc = generate_more(c, r);
            if (sent > r->len)
                explicit_bzero(r->buf + r->len, sent - r->len);
            if (rc < 0) {
                log_warning("client: pool stopped being ready mid-reply; closing it");
                client_close(c);
                return false;
            }
            continue;
        } else {
            return true;
        }
        w = r->passes_arena ? memfd_arena_send(c->arena, c->conn.fd, from, n)
                            : send(c->conn.fd, from, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                want_events(c, EPOLLOUT);
                if (!c->arena)         /* the peer holds it up: as evictable as an idle one */
                    listener_idle_stalled(&c->conn);
                return false;
            }
            if (r->passes_arena && errno != EPIPE && errno != ECONNRESET) {
                if (!(r = reply_arena_refused(c, errno)))
                    return false;
                continue;
            }
            client_close(c);           /* EPIPE, ECONNRESET: the client went away */
            return false;
        }
        listener_progress(&c->conn);
        if (!r->counted) {             /* one that was sent: a reply replaced never counts */
            SERVER_STAT_ADD(c->srv->stats.replies[r->status], 1);
            r->counted = true;
        }
        r->passes_arena = false;
        if (from == r->text + r->text_pos)
            r->text_pos += (size_t)w;
        else
            r->pos += (size_t)w;
    }
}

/* --- requests ----------------------------------------------------------------------- */

static void handle_status(struct client *c)
{
    struct server *s = c->srv;
    size_t len = 0;
    char *json = s->status_json(s->status_ctx, &len);
    struct reply *r;

    if (!json) {
        reply_error(c, RANDD_INTERNAL, "out of memory building STATUS");
        return;
    }
    r = start_reply(c, RANDD_OK, len);
    if (!r) {
        free(json);
        return;
    }
    r->text = (uint8_t *)json;
    r->text_len = len;
}

static void handle_add_entropy(struct client *c, const struct randd_request *req)
{
    if (!c->conn.trusted) {
        reply_error(c, RANDD_NOT_PERMITTED, "ADD_ENTROPY needs uid 0 or the trusted_group");
        return;
    }
    if (branch_add_entropy(c->srv->branch, req->data, req->data_len, req->entropy_bits,
                         loop_now_ns()) < 0) {
        reply_error(c, RANDD_INTERNAL, "conditioning failed");
        return;
    }
    log_info("client uid %u added %zu bytes credited with %u bits", (unsigned)c->conn.uid,
             req->data_len, req->entropy_bits);
    start_reply(c, RANDD_OK, 0);
}

/* SELFTEST and INJECT_FAILURE: root's alone (not the trusted_group's, not a TCP peer's, which
 * has no uid). They can stop all output, or quarantine a source. */
static void handle_admin(struct client *c, const struct randd_request *req)
{
    const char *op = randd_op_wire_name(req->op);
    char msg[384], why[64];
    struct reply *r;
    int status;
    size_t len;

    if (c->conn.uid != 0) {
        snprintf(why, sizeof(why), "%s needs uid 0", op);
        reply_error(c, RANDD_NOT_PERMITTED, why);
        return;
    }
    if (!c->srv->admin) {
        reply_error(c, RANDD_INTERNAL, "no self-tests on this loop");
        return;
    }
    status = c->srv->admin(c->srv->admin_ctx, req, msg, sizeof(msg));
    log_notice("client uid %u asked %s: %s", (unsigned)c->conn.uid, op, msg);
    if (status != RANDD_OK) {
        reply_error(c, status, msg);
        return;
    }
    len = strlen(msg);
    if ((r = start_reply(c, RANDD_OK, len))) {
        memcpy(r->buf + r->len, msg, len);
        r->len += len;
    }
}

/* The search runs on the worker; the reply starts when it comes back (prime_found). The
 * worker's generator is seeded with pool output, so it too only runs on a ready pool. A uid
 * with its share of the worker under way is answered BUSY at once (primes.c). */
static void handle_prime(struct client *c, const struct randd_request *req)
{
    struct server *s = c->srv;
    uint8_t seed[PRIMES_SEED_BYTES];
    char why[128];
    int rc;

    if (branch_generate(s->branch, seed, sizeof(seed), loop_now_ns()) < 0) {
        reply_error(c, RANDD_INTERNAL, "generator failed");
        return;
    }
    rc = primes_submit(s->primes, req->bits, seed, c->conn.uid, c, &c->prime_job);
    OPENSSL_cleanse(seed, sizeof(seed));
    if (rc == -EBUSY) {
        snprintf(why, sizeof(why), "uid %u has %d PRIME requests under way already; try again "
                 "when one is answered", (unsigned)c->conn.uid, RANDD_PRIME_PER_UID);
        reply_error(c, RANDD_BUSY, why);
    } else if (rc == -EAGAIN) {
        reply_error(c, RANDD_BUSY, "too many PRIME requests under way; try again");
    } else if (rc < 0) {
        reply_error(c, RANDD_INTERNAL, "out of memory for a PRIME search");
    } else {
        c->state = WAITING_PRIME;
    }
}

static void prime_found(void *cookie, int rc, const uint8_t *prime, size_t len)
{
    struct client *c = cookie;
    struct reply *r;

    c->prime_job = NULL;
    if (rc < 0) {
        log_err("PRIME: search failed: %s", strerror(-rc));
        reply_error(c, RANDD_INTERNAL, "prime search failed");
    } else if ((r = start_reply(c, RANDD_OK, len))) {
        memcpy(r->buf + r->len, prime, len);
        r->len += len;
    }
    client_serve(c);
}

/* The bytes go straight into the next slot of the connection's arena; the reply says where,
 * and its first send carries the memfd if the client does not have it yet. */
static void handle_bytes_memfd(struct client *c, const struct randd_request *req)
{
    struct server *s = c->srv;
    int rc = c->arena ? 0 : memfd_arena_open(&c->arena, c->conn.uid);
    uint32_t offset;
    uint8_t *slot;
    struct reply *r;
    char why[96];

    if (rc == -EBUSY) {
        reply_error(c, RANDD_BUSY, "every BYTES_MEMFD arena is in use; use BYTES");
        return;
    }
    if (rc == -EDQUOT) {
        snprintf(why, sizeof(why), "uid %u holds %d BYTES_MEMFD arenas already; use BYTES",
                 (unsigned)c->conn.uid, MEMFD_ARENA_PER_UID);
        reply_error(c, RANDD_BUSY, why);
        return;
    }
    if (rc < 0) {
        /* No memfd (or sealing) in this kernel, or a filter forbids it: as if the op were
         * unknown, so that clients stop asking; short of memory or fds: this time only. */
        bool never = rc == -ENOSYS || rc == -EPERM || rc == -EINVAL;

        snprintf(why, sizeof(why), "no memfd for BYTES_MEMFD (%s); use BYTES", strerror(-rc));
        reply_error(c, never ? RANDD_UNKNOWN_OP : RANDD_INTERNAL, why);
        return;
    }
    slot = memfd_arena_next_slot(c->arena, &offset);
    if (branch_generate(s->branch, slot, req->n, loop_now_ns()) < 0) {
        explicit_bzero(slot, req->n);
        reply_error(c, RANDD_INTERNAL, "generator failed");
        return;
    }
    r = start_reply(c, RANDD_OK, RANDD_MEMFD_REPLY_BODY);
    if (!r)
        return;
    randd_memfd_reply_encode(r->buf + r->len, offset, req->n);
    r->len += RANDD_MEMFD_REPLY_BODY;
    r->passes_arena = memfd_arena_unsent(c->arena);
    SERVER_STAT_ADD(s->stats.bytes_served, req->n);
}

/* --- the noise-source modes (lib/PROTOCOL.md: prediction resistance, full entropy) ------
 * The request takes its blocks from the pool's reservoir (noise.c) at once, or waits in its
 * fair queue (WAITING_NOISE) until they are granted, or is refused: NO_NOISE_SOURCE when no
 * noise source can give any, NOT_READY with NONBLOCK, BUSY over the uid's share. The pool
 * admits, refuses, serves and counts (pool.h: the noise modes' requests); here are the
 * replies, and the pool's lock around each call. */

static enum noise_mode mode_of(const struct randd_request *req)
{
    return req->flags & RANDD_FLAG_FULL_ENTROPY ? NOISE_FULL_ENTROPY
                                                : NOISE_PREDICTION_RESISTANT;
}

/* Refused: the ticket, if any, given up and the refusal counted (pool_noise_refuse), then
 * the reply. NO_NOISE_SOURCE's message is the why alone: the status already says "no healthy
 * noise source", and clients print the two together. */
static void refuse_noise(struct client *c, int status, const char *why)
{
    pool_noise_refuse(branch_lock_pool(c->srv->branch), &c->noise_ticket, status);
    branch_unlock_pool(c->srv->branch);
    reply_error(c, status, why);
}

/* The loop's generator output with the blocks XORed in (pool_full_entropy_xor: RBG3(XOR)).
 * False: the blocks were dropped since they were seen granted (a noise source failed). */
static bool reply_full_entropy(struct client *c, const struct randd_request *req)
{
    struct branch *b = c->srv->branch;
    struct reply *r;
    uint8_t *body;
    bool generated;
    int taken = -EAGAIN;

    if (!(r = start_reply(c, RANDD_OK, req->n)))
        return true;                 /* closing: client_release gives the blocks back */
    body = r->buf + r->len;
    generated = branch_generate(b, body, req->n, loop_now_ns()) == 0;
    if (generated) {
        taken = pool_full_entropy_xor(branch_lock_pool(b), &c->noise_ticket, body, req->n);
        branch_unlock_pool(b);
    }
    if (taken < 0) {
        explicit_bzero(body, req->n);    /* past r->len: free_reply would not wipe it */
        free_reply(c);
        if (!generated || taken == -EINVAL)
            refuse_noise(c, RANDD_INTERNAL, generated ? "full-entropy blocks for fewer bytes "
                         "than asked" : "generator failed");
        return !generated || taken == -EINVAL;
    }
    r->len += req->n;
    SERVER_STAT_ADD(c->srv->stats.bytes_served, req->n);
    return true;
}

/* SP 800-90C RBG2(P): a generator for this reply alone (pr_generator.h), seeded from the
 * loop's generator and reseeded with a block of fresh noise (256 bits, from 320 credited)
 * before its first byte. */
static void reply_prediction_resistant(struct client *c, const struct randd_request *req,
                                       const uint8_t *block)
{
    struct pr_generator *g;
    struct reply *r;
    uint64_t mark = branch_continuity(c->srv->branch);   /* before its seed is drawn */

    if (pr_generator_new(c->srv->branch, block, &g) < 0) {
        reply_error(c, RANDD_INTERNAL, "prediction-resistant generator failed");
        return;
    }
    if (!(r = start_reply(c, RANDD_OK, req->n))) {
        pr_generator_free(g);
        return;
    }
    r->pr = g;
    r->pr_continuity = mark;
    r->op = RANDD_OP_BYTES;
    r->left = req->n;
}

/* The blocks are all granted: answer. False: dropped since (a noise source failed). */
static bool serve_noise(struct client *c, const struct randd_request *req)
{
    uint8_t block[NOISE_BLOCK_BYTES];
    int rc;

    if (mode_of(req) == NOISE_FULL_ENTROPY)
        return reply_full_entropy(c, req);
    rc = pool_noise_take_block(branch_lock_pool(c->srv->branch), &c->noise_ticket, block,
                               req->n);
    branch_unlock_pool(c->srv->branch);
    if (rc < 0)
        return false;
    reply_prediction_resistant(c, req, block);
    OPENSSL_cleanse(block, sizeof(block));
    return true;
}

/* What the pool said, as the reply: refused, served, or left to wait (false). */
static bool answer_noise(struct client *c, const struct randd_request *req, int status,
                         bool ready, const char *why)
{
    if (status != RANDD_OK) {
        refuse_noise(c, status, why);
        return true;
    }
    if (!ready)
        return false;
    if (serve_noise(c, req))
        return true;
    /* The blocks seen granted were dropped before they were taken: the pool's loop found a
     * noise source failed meanwhile. A request that may wait waits for new ones. */
    if (!(req->flags & RANDD_FLAG_NONBLOCK))
        return false;
    refuse_noise(c, RANDD_NOT_READY, "the noise blocks granted were dropped: a noise source "
                 "failed; try again");
    return true;
}

/* A new request: a place in the queue, or a refusal. Either way the modes were asked for,
 * so the owner's harvests are woken if blocks are wanted now. */
/* In mode = approved a prediction-resistant reply is one SP 800-90A generate after its
 * reseed: the reply's first piece, which follows the header in one buffer
 * (RANDD_MAX_PREDICTION_RESISTANT). Past it, the rest would come from a second generate. */
#define APPROVED_PR_MAX_BYTES RANDD_MAX_PREDICTION_RESISTANT
_Static_assert(RANDD_MAX_PREDICTION_RESISTANT + RANDD_HEADER_BYTES <= REPLY_CHUNK &&
               RANDD_MAX_PREDICTION_RESISTANT <= 65536,
               "an approved PR reply is one piece and one DRBG generate");

/* A prediction-resistant request mode = approved cannot serve as one generate: TOO_LARGE at
 * once, before any wait for readiness or noise. True if refused. */
static bool refuse_oversized_pr(struct client *c, const struct randd_request *req)
{
    char why[160];

    if (!(req->flags & RANDD_FLAG_PREDICTION_RESISTANT) || req->n <= APPROVED_PR_MAX_BYTES ||
        c->srv->config->mode != CONFIG_MODE_APPROVED)
        return false;
    snprintf(why, sizeof(why), "mode = approved: a prediction-resistant request is one SP "
             "800-90A generate after a reseed, at most %d bytes; ask for more in several "
             "requests", APPROVED_PR_MAX_BYTES);
    reply_error(c, RANDD_TOO_LARGE, why);
    return true;
}

static bool admit_noise_request(struct client *c, const struct randd_request *req)
{
    struct server *s = c->srv;
    const struct pool_noise_request rq = {
        .uid = c->conn.uid,
        .mode = mode_of(req),
        .bytes = req->n,
        .nonblock = (req->flags & RANDD_FLAG_NONBLOCK) != 0,
    };
    char why[POOL_NOISE_WHY_BYTES];
    struct pool *p = branch_lock_pool(s->branch);
    int status = pool_noise_submit(p, &rq, &c->noise_ticket, why, sizeof(why));
    bool ready = status == RANDD_OK && noise_ticket_ready(c->noise_ticket);
    bool wanted = pool_noise_wanted(p);

    branch_unlock_pool(s->branch);
    if (wanted && s->noise_wanted)
        s->noise_wanted(s->noise_ctx);
    return answer_noise(c, req, status, ready, why);
}

/* A request waiting in the queue, let go (its blocks came, or a noise source failed): served,
 * refused NO_NOISE_SOURCE when none is left to give them, or left waiting. It wakes no
 * harvest: the owner's harvests go on while blocks are wanted. */
static bool recheck_noise_wait(struct client *c, const struct randd_request *req)
{
    char why[POOL_NOISE_WHY_BYTES];
    struct pool *p = branch_lock_pool(c->srv->branch);
    int status = pool_noise_wait_status(p, c->noise_ticket, why, sizeof(why));
    bool ready = noise_ticket_ready(c->noise_ticket);

    branch_unlock_pool(c->srv->branch);
    return answer_noise(c, req, status, ready, why);
}

/* True if answered now (served or refused); false: it waits in the queue. */
static bool handle_noise(struct client *c, const struct randd_request *req)
{
    return c->noise_ticket ? recheck_noise_wait(c, req) : admit_noise_request(c, req);
}

/* Output ops wait for readiness (or get NOT_READY with NONBLOCK). True if handled now. */
static bool handle_output(struct client *c, const struct randd_request *req)
{
    struct reply *r;
    bool bytes;

    if (refuse_oversized_pr(c, req))
        return true;
    if (!branch_ready(c->srv->branch)) {
        if (!(req->flags & RANDD_FLAG_NONBLOCK))
            return false;
        reply_error(c, RANDD_NOT_READY, branch_not_ready_reason(c->srv->branch));
        return true;
    }
    if (req->op == RANDD_OP_PRIME) {
        handle_prime(c, req);
        return true;
    }
    if (req->op == RANDD_OP_BYTES_MEMFD) {
        handle_bytes_memfd(c, req);
        return true;
    }
    if (req->flags & RANDD_FLAG_MODES) {
        if (handle_noise(c, req))
            return true;
        c->state = WAITING_NOISE;
        return false;
    }
    bytes = req->op == RANDD_OP_BYTES || req->op == RANDD_OP_SEED;  /* SEED: only counted apart */
    r = start_reply(c, RANDD_OK, bytes ? req->n : (size_t)req->count * req->len);
    if (!r)
        return true;
    r->op = bytes ? RANDD_OP_BYTES : req->op;
    if (bytes) {
        r->left = req->n;
    } else {
        memcpy(r->r, req->r, req->len);
        randd_rngbc_prepare(&r->range, r->r, req->len);
        r->left = req->count;
    }
    return true;
}

/* Acts on the complete request in c->req/c->body. False: it waits for the pool. */
static bool handle_request(struct client *c)
{
    struct randd_request req;
    char why[160];
    int status = randd_parse_request(&c->req, c->body, &req, why, sizeof(why));
    bool done = true;

    if (status != RANDD_OK)
        reply_error(c, status, why);
    else if (req.op == RANDD_OP_STATUS)
        handle_status(c);
    else if (req.op == RANDD_OP_ADD_ENTROPY)
        handle_add_entropy(c, &req);
    else if (req.op == RANDD_OP_SELFTEST || req.op == RANDD_OP_INJECT_FAILURE)
        handle_admin(c, &req);
    else
        done = handle_output(c, &req);
    return done;
}

/* Up to n bytes of the client's stream into dst: from what an earlier recv brought, else
 * from one recv of as much as has come (a request's header and body, often several
 * requests), else straight into dst when dst is the larger. Returns recv's result. What is
 * taken is wiped from input: an ADD_ENTROPY body is secret. */
static ssize_t take_input(struct client *c, uint8_t *dst, size_t n)
{
    size_t have, take;

    if (c->input_pos == c->input_len) {
        ssize_t got;

        if (n >= sizeof(c->input))
            return recv(c->conn.fd, dst, n, 0);
        got = recv(c->conn.fd, c->input, sizeof(c->input), 0);
        if (got <= 0)
            return got;
        c->input_pos = 0;
        c->input_len = (uint8_t)got;
    }
    have = (size_t)c->input_len - c->input_pos;
    take = have < n ? have : n;
    memcpy(dst, c->input + c->input_pos, take);
    explicit_bzero(c->input + c->input_pos, take);
    c->input_pos += (uint8_t)take;
    return (ssize_t)take;
}

/* Reads the next request; true when one is complete in c->req and c->body. */
static bool read_request(struct client *c)
{
    ssize_t n;

    if (c->head_len < RANDD_HEADER_BYTES) {
        n = take_input(c, c->head + c->head_len, RANDD_HEADER_BYTES - c->head_len);
        if (n <= 0)
            goto gone_or_again;
        c->head_len += (size_t)n;
        if (c->head_len < RANDD_HEADER_BYTES)
            return false;
        randd_header_decode(c->head, &c->req);
        if (randd_header_closes(&c->req))
            return true;             /* answered from the header alone, then closed */
        c->body = c->req.length <= SMALL_BODY ? c->small_body : malloc(c->req.length);
        if (!c->body) {
            fail_out_of_memory(c);
            return true;
        }
    }
    if (c->body_len < c->req.length) {
        n = take_input(c, c->body + c->body_len, c->req.length - c->body_len);
        if (n <= 0)
            goto gone_or_again;
        c->body_len += (size_t)n;
    }
    if (c->body_len < c->req.length)
        return false;
    /* Only now, not at each piece: a byte now and then must not keep a place for ever. */
    listener_progress(&c->conn);
    return true;

gone_or_again:
    if (n == 0 || (errno != EAGAIN && errno != EINTR))
        client_close(c);
    else if (!c->arena)              /* waiting for its peer, between requests or partway
                                      * into one, holding nothing: may be evicted */
        listener_idle(&c->conn);
    return false;
}

/* requests.<op>, or for BYTES and SEED with a mode, its own count instead. */
static void count_request(struct server *s, const struct randd_header *h)
{
    bool bytes = h->code == RANDD_OP_BYTES || h->code == RANDD_OP_SEED;

    if (bytes && (h->flags & RANDD_FLAG_MODES))
        SERVER_STAT_ADD(s->stats.mode_requests[randd_mode_request_index(h->code, h->flags)],
                        1);
    else
        SERVER_STAT_ADD(s->stats.requests[h->code <= RANDD_OP_LAST ? h->code : 0], 1);
}

/* Drives one client as far as it can go without blocking. */
static void client_serve(struct client *c)
{
    struct server *s = c->srv;

    for (int turn = 0; turn < REQUESTS_PER_TURN; turn++) {
        if (c->dead) {
            client_close(c);
            return;
        }
        if (c->state == WAITING_PRIME) {
            want_events(c, 0);           /* a peer that closes shows up as EPOLLHUP */
            return;
        }
        if (c->state == REPLYING) {
            if (!flush_reply(c))
                return;              /* waiting for EPOLLOUT, or closed */
            free_reply(c);
            if (c->close_after_reply) {
                client_close_gracefully(c);
                return;
            }
            c->state = READING;
            want_events(c, EPOLLIN);
        }
        if (c->state == WAITING_READY || c->state == WAITING_NOISE) {
            if (c->state == WAITING_READY && !branch_ready(s->branch))
                return;
            if (!handle_request(c))
                return;              /* still waiting (the noise queue) */
        } else {
            if (!read_request(c))
                return;              /* needs more input, or closed */
            if (c->dead)
                continue;
            count_request(s, &c->req);
            if (randd_header_closes(&c->req)) {
                char why[160];

                reply_error(c, randd_check_header(&c->req, why, sizeof(why)), why);
                c->close_after_reply = true;
            } else if (!handle_request(c)) {
                /* Keep the request and stop reading until the pool is ready (or its noise
                 * blocks are granted); a peer that closes meanwhile shows up as EPOLLHUP. */
                if (c->state == READING)
                    c->state = WAITING_READY;
                want_events(c, 0);
                return;
            }
        }
        free_body(c);
        c->head_len = 0;
    }
    /* Fairness: more may be pending; come back on the next loop turn. A turn that ends here
     * has just started a reply, so it waits for EPOLLOUT, which comes at once: requests that
     * take_input already holds are never left for an EPOLLIN that would not come. */
    want_events(c, c->state == REPLYING ? EPOLLOUT : EPOLLIN);
}

/* The listener hands each connection's events here, with its listener_conn. */
static void client_event(void *arg, int fd, uint32_t events)
{
    struct client *c = client_of(arg);

    (void)fd;
    if ((events & (EPOLLERR | EPOLLHUP)) && c->state != READING) {
        client_close(c);
        return;
    }
    client_serve(c);
}

static void serve_if_waiting(struct listener_conn *conn)
{
    struct client *c = client_of(conn);

    if (c->state == WAITING_READY || c->state == WAITING_NOISE)
        client_serve(c);
}

void server_pool_ready(struct server *s)
{
    listener_each(&s->listener, serve_if_waiting);
}

/* --- up and down --------------------------------------------------------------------- */

/* Over max_clients, into root's places, over its uid's share, or evicted while idle: the
 * peer reads BUSY and why before the listener closes it. */
static void turn_away_busy(void *arg, int fd, enum listener_refusal why, uid_t uid)
{
    struct server *s = arg;
    char msg[SEND_NOW_TEXT];

    if (why == LISTENER_UID_SHARE)
        snprintf(msg, sizeof(msg), "uid %u holds its fair share of max_clients (%u now, "
                 "max_clients_per_uid %s); close one", (unsigned)uid,
                 listener_fair_share(s->listener.clients, s->config),
                 s->config->max_clients_per_uid ? "set" : "auto");
    else if (why == LISTENER_EVICTED)
        snprintf(msg, sizeof(msg), "closed while idle to make room for another uid: uid %u "
                 "held more than its fair share of max_clients", (unsigned)uid);
    else if (why == LISTENER_ROOTS)
        snprintf(msg, sizeof(msg), "too many clients: the last %u of max_clients are kept "
                 "for root", config_clients_for_root(s->config));
    else
        snprintf(msg, sizeof(msg), "too many clients (max_clients)");
    send_error_now(fd, RANDD_BUSY, msg);
    SERVER_STAT_ADD(s->stats.clients_busy, 1);
    SERVER_STAT_ADD(s->stats.replies[RANDD_BUSY], 1);
}

/* The idle sweep leaves alone a request that waits for the pool. */
static bool waits_for_pool(const struct listener_conn *conn)
{
    enum client_state state = client_of(conn)->state;

    return state == WAITING_READY || state == WAITING_NOISE;
}

static const struct listener_ops client_ops = {
    .client_size = sizeof(struct client),
    .conn_offset = offsetof(struct client, conn),
    .open = client_open,
    .event = client_event,
    .release = client_release,
    .waiting = waits_for_pool,
    .refuse = turn_away_busy,
};

int server_start(struct server *s, struct loop *loop, struct branch *branch,
                 struct primes *primes, struct listener_clients *clients,
                 server_status_fn *status, void *status_ctx)
{
    s->loop = loop;
    s->branch = branch;
    s->status_json = status;
    s->status_ctx = status_ctx;
    s->primes = primes_port_new(primes, loop, prime_found);
    if (!s->primes)
        return -errno;
    return listener_start(&s->listener, loop, clients);
}

void server_set_admin(struct server *s, server_admin_fn *admin, void *admin_ctx)
{
    s->admin = admin;
    s->admin_ctx = admin_ctx;
}

void server_set_noise_wanted(struct server *s, void (*wanted)(void *ctx), void *ctx)
{
    s->noise_wanted = wanted;
    s->noise_ctx = ctx;
}

void server_reload(struct server *s)
{
    listener_reload(&s->listener);
}

/* The connections first: a PRIME under way is cancelled before its port goes. */
void server_close(struct server *s)
{
    listener_close(&s->listener);
    primes_port_free(s->primes);
    s->primes = NULL;
    unix_socket_unlink(&s->bound);
}
