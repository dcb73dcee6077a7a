/* One way to accept, for both protocols, so a fix to one is a fix to the other (the EGD
 * listener once checked only a peer's primary group, and spun when accept failed with
 * EMFILE). A listener accepts up to ACCEPTS_PER_TURN connections a loop turn; a connection
 * over max_clients, into the places kept for root (config_clients_for_root), or from a uid
 * at its fair share of a full table is refused (see "places"); the others get their peer's
 * credentials and go to the protocol. Out of descriptors, accept() fails at once every time
 * the level-triggered loop asks: the listener stops listening for EMFILE_PAUSE_NS instead of
 * spinning. The idle sweep runs every half timeout plus a second, so an idle connection goes
 * between one and one and a half timeouts after its last progress.
 *
 * Sections: places, sockets and credentials, connections, accept, the idle sweep, up and
 * down. */
#include "listener.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "drain.h"
#include "log.h"

#define ACCEPTS_PER_TURN 64           /* then the loop serves the connections it has */
#define EMFILE_PAUSE_NS  100000000ull

/* --- places ------------------------------------------------------------------------------ */

/* Every serving loop takes and gives back places, so the total and the uids' counts change
 * together under one lock, taken twice per accept and twice per close. A uid's entry exists
 * while it has a connection: there are at most as many as connections, and a host has few
 * uids with one open, so a list searched in order does.
 *
 * Max-min fairness, not a fixed share (issue 42: a fixed half let two users lock out the
 * rest). Free places go to whoever asks, so one user alone may use them all. At a full
 * table (every place not kept for root taken), a uid holding less than its fair share (those
 * places over the uids connected, itself and TCP peers as one included) takes the place of
 * an idle connection (listener_idle) of the uid holding most, if that uid is over its fair
 * share; a uid at its share is refused (over_uid_share). So every uid can always reach its
 * fair share unless the bigger holders' connections all have work in flight, which other
 * per-uid limits bound (noise queue places, PRIME jobs, memfd arenas) and the idle sweep
 * ends. The evicted connection's place is handed over at once, under the lock; its own loop
 * sees its socket shut for reading, tells the peer BUSY and closes it, so for a loop turn
 * there are more descriptors open than places. A connection's descriptor stays open while
 * it is in clients->conns, so shutting it from another loop never reaches a reused one. */

void listener_clients_init(struct listener_clients *clients)
{
    memset(clients, 0, sizeof(*clients));
    pthread_mutex_init(&clients->lock, NULL);
    atomic_init(&clients->connected, 0);
    atomic_init(&clients->over_uid_share, 0);
    atomic_init(&clients->evicted, 0);
}

void listener_clients_free(struct listener_clients *clients)
{
    free(clients->uids);
    clients->uids = NULL;
    clients->nuids = clients->uids_room = 0;
    pthread_mutex_destroy(&clients->lock);
}

static bool grow_uids(struct listener_clients *clients)
{
    size_t room = clients->uids_room ? clients->uids_room * 2 : 16;
    struct listener_uid *more = realloc(clients->uids, room * sizeof(*more));

    if (!more)
        return false;
    clients->uids = more;
    clients->uids_room = room;
    return true;
}

static struct listener_uid *uid_entry(struct listener_clients *clients, uid_t uid)
{
    for (size_t i = 0; i < clients->nuids; i++)
        if (clients->uids[i].uid == uid)
            return &clients->uids[i];
    return NULL;
}

/* An explicit max_clients_per_uid: every uid's cap. TCP peers have no uid, and any local
 * user can be one of them: their one cap is half a uid's. auto: no cap but fairness. */
static unsigned cap_of(const struct config *cfg, uid_t uid)
{
    unsigned cap = config_clients_per_uid(cfg);

    if (cfg->max_clients_per_uid == CONFIG_AUTO)
        return cap;
    return uid != LISTENER_NO_UID || cap < 2 ? cap : cap / 2;
}

static unsigned others_places(const struct config *cfg)
{
    return cfg->max_clients - config_clients_for_root(cfg);
}

/* The non-root places over the non-root uids connected, and one more for a newcomer (at
 * least 1). */
static unsigned fair_share(const struct listener_clients *clients, const struct config *cfg,
                           bool newcomer)
{
    unsigned uids = newcomer, share;

    for (size_t i = 0; i < clients->nuids; i++)
        uids += clients->uids[i].uid != 0;
    share = uids ? others_places(cfg) / uids : others_places(cfg);
    return share ? share : 1;
}

unsigned listener_fair_share(const struct listener_clients *clients, const struct config *cfg)
{
    pthread_mutex_t *lock = (pthread_mutex_t *)&clients->lock;     /* a read takes it too */
    unsigned share, cap = cfg->max_clients_per_uid;

    pthread_mutex_lock(lock);
    share = fair_share(clients, cfg, false);
    pthread_mutex_unlock(lock);
    return cap != CONFIG_AUTO && cap < share ? cap : share;
}

/* Whether uid may take one more place: the places of max_clients kept for root are root's
 * alone, whatever the other uids hold. */
static bool within_others_places(struct listener_clients *clients, const struct config *cfg,
                                 uid_t uid)
{
    struct listener_uid *root;
    unsigned others = atomic_load(&clients->connected);

    if (uid == 0)
        return true;
    if ((root = uid_entry(clients, 0)))
        others -= root->n;
    return others < others_places(cfg);
}

/* A request already in its socket, not yet read: the connection is about to be busy, and
 * evicting it would answer that request BUSY. (One sent after the shutdown below fails with
 * EPIPE instead, which librandd takes as a closed connection and reconnects.) */
static bool has_unread_input(const struct listener_conn *c)
{
    int pending = 0;

    return ioctl(c->fd, FIONREAD, &pending) == 0 && pending > 0;
}

#define EVICT_TRIES 8

/* The table is full and uid, not root, holds held of its fair share: the place of an idle
 * connection of the uid that holds most over its fair share becomes free (counted out, its
 * socket shut for reading so that its loop closes it). False: none is over its share and
 * idle. */
static bool evict_for(struct listener_clients *clients, unsigned share, uid_t uid)
{
    const struct listener_conn *skipped[EVICT_TRIES];
    int nskipped = 0;

    for (int tries = 0; tries < EVICT_TRIES; tries++) {
        struct listener_conn *victim = NULL;
        struct listener_uid *most = NULL;
        unsigned char idle = LISTENER_HOLD_IDLE;

        for (struct listener_conn *c = clients->conns; c; c = c->all_next) {
            struct listener_uid *e;
            bool was_skipped = false;

            for (int i = 0; i < nskipped; i++)
                was_skipped |= skipped[i] == c;
            if (c->uid == 0 || c->uid == uid || was_skipped ||
                atomic_load(&c->hold) != LISTENER_HOLD_IDLE)
                continue;
            e = uid_entry(clients, c->uid);
            if (e && e->n > share && (!most || e->n > most->n))
                victim = c, most = e;
        }
        if (!victim)
            return false;
        if (has_unread_input(victim)) {
            skipped[nskipped++] = victim;
            continue;
        }
        /* Its loop may take it up at this moment (an event): then it is busy, try again. */
        if (!atomic_compare_exchange_strong(&victim->hold, &idle, LISTENER_HOLD_EVICTED))
            continue;
        /* Read shut: its loop sees the end and closes it, after a BUSY saying why. One cut
         * off mid-stream, or an EGD one (no word for busy), is shut both ways: no reply
         * goes, and the hang-up wakes its loop whatever events it waits for. */
        shutdown(victim->fd, atomic_load(&victim->cut_off) || !victim->listener->ops->refuse ?
                                 SHUT_RDWR : SHUT_RD);
        most->n--;                       /* over its share, so more than one: it stays */
        atomic_fetch_sub(&clients->connected, 1);
        atomic_fetch_add(&clients->evicted, 1);
        return true;
    }
    return false;
}

/* A place for a connection from uid, within max_clients, the places kept for root and fair
 * shares (all read live: a reload that lowers them refuses new connections, and closes
 * none). Returns 0, or -1 with why. */
static int take_place(struct listener *l, uid_t uid, enum listener_refusal *why)
{
    struct listener_clients *clients = l->clients;
    const struct config *cfg = l->config;
    struct listener_uid *e;
    unsigned held, share = 0;
    bool full, no_room;
    int rc = -1;

    pthread_mutex_lock(&clients->lock);
    e = uid_entry(clients, uid);
    held = e ? e->n : 0;
    full = atomic_load(&clients->connected) >= cfg->max_clients;
    no_room = full || !within_others_places(clients, cfg, uid);
    if (uid != 0 && no_room)
        share = fair_share(clients, cfg, !e);
    if (no_room && uid == 0) {
        *why = LISTENER_FULL;
    } else if (held >= cap_of(cfg, uid)) {
        *why = LISTENER_UID_SHARE;
        atomic_fetch_add(&clients->over_uid_share, 1);
    } else if (no_room && held >= share) {
        *why = LISTENER_UID_SHARE;       /* a full table, and uid has its fair share */
        atomic_fetch_add(&clients->over_uid_share, 1);
    } else if (no_room && !evict_for(clients, share, uid)) {
        /* Under its share, but every bigger holder is busy; or root holds the rest. */
        *why = full ? LISTENER_FULL : LISTENER_ROOTS;
    } else if (!e && clients->nuids == clients->uids_room && !grow_uids(clients)) {
        *why = LISTENER_FULL;            /* no memory for the count: as good as full */
    } else {
        if (!e) {
            e = &clients->uids[clients->nuids++];
            *e = (struct listener_uid){ uid, 0 };
        }
        e->n++;
        atomic_fetch_add(&clients->connected, 1);
        rc = 0;
    }
    pthread_mutex_unlock(&clients->lock);
    return rc;
}

static void give_back_place(struct listener_clients *clients, uid_t uid)
{
    struct listener_uid *e;

    pthread_mutex_lock(&clients->lock);
    if ((e = uid_entry(clients, uid)) && --e->n == 0)
        *e = clients->uids[--clients->nuids];
    atomic_fetch_sub(&clients->connected, 1);
    pthread_mutex_unlock(&clients->lock);
}

/* --- sockets and credentials --------------------------------------------------------- */

void listener_init(struct listener *l, const char *name, const struct listener_ops *ops,
                   void *ctx, const struct config *config, const unsigned *idle_timeout)
{
    memset(l, 0, sizeof(*l));
    l->name = name;
    l->ops = ops;
    l->ctx = ctx;
    l->config = config;
    l->idle_timeout = idle_timeout;
    l->accept_events = EPOLLIN;
}

void listener_share_accepts(struct listener *l)
{
    l->accept_events = EPOLLIN | EPOLLEXCLUSIVE;
}

int listener_add_fd(struct listener *l, int fd)
{
    struct sockaddr_storage ss = { 0 };
    socklen_t len = sizeof(ss);

    if (l->nfds >= LISTENER_MAX_FDS)
        return -ENOSPC;
    /* Passed sockets may be blocking; the accept loop must never block. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    getsockname(fd, (struct sockaddr *)&ss, &len);
    l->unix_fd[l->nfds] = ss.ss_family == AF_UNIX;
    l->fds[l->nfds++] = fd;
    return 0;
}

bool listener_listening(const struct listener *l)
{
    return l->nfds > 0;
}

/* Root, or the trusted_group as the peer's primary group or one of its supplementary ones. */
static bool peer_trusted(int fd, const struct ucred *cred, const struct config *cfg)
{
    gid_t groups[256], trusted = cfg->trusted_gid;     /* looked up as the config was read */
    socklen_t glen = sizeof(groups);

    if (cred->uid == 0)
        return true;
    if (trusted == (gid_t)-1)
        return false;
    if (cred->gid == trusted)
        return true;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) < 0)
        return false;
    for (size_t i = 0; i < glen / sizeof(gid_t); i++)
        if (groups[i] == trusted)
            return true;
    return false;
}

/* The peer's credentials, false for a TCP peer: it has none (no uid, never trusted). */
static bool credentials(int fd, bool unix_peer, struct ucred *cred)
{
    socklen_t len = sizeof(*cred);

    cred->uid = LISTENER_NO_UID;
    return unix_peer && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) == 0;
}

/* --- connections ----------------------------------------------------------------------- */

void listener_progress(struct listener_conn *c)
{
    c->last_progress_ns = loop_now_ns();
}

/* The client around c, wiped (what a connection was sent or sent us may be secret). */
static void free_client(const struct listener_ops *ops, struct listener_conn *c)
{
    char *client = (char *)c - ops->conn_offset;

    explicit_bzero(client, ops->client_size);
    free(client);
}

/* Into clients->conns, where another loop's accept may find it idle and evict it. */
static void share_conn(struct listener_clients *clients, struct listener_conn *c)
{
    pthread_mutex_lock(&clients->lock);
    c->all_prevp = &clients->conns;
    c->all_next = clients->conns;
    if (clients->conns)
        clients->conns->all_prevp = &c->all_next;
    clients->conns = c;
    pthread_mutex_unlock(&clients->lock);
}

/* Out of clients->conns before its descriptor is closed, so that no accept shuts a reused
 * one. Returns whether it still holds its place: an evicted one gave it up already. */
static bool unshare_conn(struct listener_conn *c)
{
    struct listener_clients *clients = c->listener->clients;
    bool placed;

    pthread_mutex_lock(&clients->lock);
    if (c->all_prevp) {
        *c->all_prevp = c->all_next;
        if (c->all_next)
            c->all_next->all_prevp = c->all_prevp;
        c->all_prevp = NULL;
    }
    placed = atomic_load(&c->hold) != LISTENER_HOLD_EVICTED;
    pthread_mutex_unlock(&clients->lock);
    return placed;
}

/* Out of the list and the count; the protocol lets go of what its client holds. */
static void forget(struct listener_conn *c, bool placed)
{
    struct listener *l = c->listener;
    uid_t uid = c->uid;

    *c->prevp = c->next;
    if (c->next)
        c->next->prevp = c->prevp;
    if (l->ops->release)
        l->ops->release(c);
    free_client(l->ops, c);
    /* Last: a client counts (in STATUS, against max_clients and its uid's share) until what
     * it held is freed, its BYTES_MEMFD arena included, even as seen from another loop. */
    if (placed)
        give_back_place(l->clients, uid);
}

void listener_close_conn(struct listener_conn *c)
{
    bool placed = unshare_conn(c);

    loop_del_fd(c->listener->loop, c->fd);
    close(c->fd);
    forget(c, placed);
}

void listener_close_conn_gracefully(struct listener_conn *c)
{
    bool placed = unshare_conn(c);

    loop_del_fd(c->listener->loop, c->fd);
    drain_close(c->listener->drain, c->fd);
    forget(c, placed);
}

void listener_idle(struct listener_conn *c)
{
    unsigned char busy = LISTENER_HOLD_BUSY;

    atomic_store(&c->cut_off, false);
    atomic_compare_exchange_strong(&c->hold, &busy, LISTENER_HOLD_IDLE);
}

void listener_idle_stalled(struct listener_conn *c)
{
    unsigned char busy = LISTENER_HOLD_BUSY;

    atomic_store(&c->cut_off, true);
    atomic_compare_exchange_strong(&c->hold, &busy, LISTENER_HOLD_IDLE);
}

bool listener_take_up(struct listener_conn *c)
{
    unsigned char idle = LISTENER_HOLD_IDLE;

    return atomic_compare_exchange_strong(&c->hold, &idle, LISTENER_HOLD_BUSY) ||
           idle != LISTENER_HOLD_EVICTED;
}

/* Every event of a connection passes here first: an idle one is busy from now on, unless
 * another loop's accept evicted it first; then the peer is told why and it is closed. */
static void conn_event(void *arg, int fd, uint32_t events)
{
    struct listener_conn *c = arg;
    struct listener *l = c->listener;
    unsigned char idle = LISTENER_HOLD_IDLE;

    if (!atomic_compare_exchange_strong(&c->hold, &idle, LISTENER_HOLD_BUSY) &&
        idle == LISTENER_HOLD_EVICTED) {
        if (l->ops->refuse && !atomic_load(&c->cut_off))
            l->ops->refuse(l->ctx, c->fd, LISTENER_EVICTED, c->uid);
        listener_close_conn_gracefully(c);
        return;
    }
    l->ops->event(c, fd, events);
}

void listener_each(struct listener *l, void (*fn)(struct listener_conn *c))
{
    struct listener_conn *c = l->conns, *next;

    for (; c; c = next) {
        next = c->next;
        fn(c);
    }
}

/* --- accept ---------------------------------------------------------------------------- */

static void accept_one(struct listener *l, int fd, bool unix_peer)
{
    struct ucred cred;
    bool has_cred = credentials(fd, unix_peer, &cred);
    enum listener_refusal why;
    char *client;
    struct listener_conn *c;

    /* A place is taken before anything else is done for the peer, so loops accepting at
     * once never pass max_clients or a uid's share together. */
    if (take_place(l, cred.uid, &why) < 0) {
        if (l->ops->refuse)
            l->ops->refuse(l->ctx, fd, why, cred.uid);
        close(fd);
        return;
    }
    if (!(client = calloc(1, l->ops->client_size))) {
        give_back_place(l->clients, cred.uid);
        close(fd);
        return;
    }
    c = (struct listener_conn *)(void *)(client + l->ops->conn_offset);
    c->listener = l;
    c->fd = fd;
    c->uid = cred.uid;
    c->trusted = has_cred && peer_trusted(fd, &cred, l->config);
    listener_progress(c);
    atomic_init(&c->hold, LISTENER_HOLD_BUSY);
    if (loop_add_fd(l->loop, fd, EPOLLIN, conn_event, c) < 0) {
        give_back_place(l->clients, cred.uid);
        close(fd);
        free(client);
        return;
    }
    l->ops->open(l->ctx, c);
    c->next = l->conns;
    c->prevp = &l->conns;
    if (l->conns)
        l->conns->prevp = &c->next;
    l->conns = c;
    share_conn(l->clients, c);
    listener_idle(c);                /* nothing asked yet */
}

static void listener_event(void *arg, int lfd, uint32_t events);

static void listen_on_all(struct listener *l)
{
    for (size_t i = 0; i < l->nfds; i++)
        loop_add_fd(l->loop, l->fds[i], l->accept_events, listener_event, l);
}

static void resume_accepting(void *arg)
{
    struct listener *l = arg;

    l->resume_timer = 0;
    listen_on_all(l);
}

/* Level-triggered accept would spin on a failure that lasts: stop listening for a moment. */
static void pause_accepting(struct listener *l, int err)
{
    int id;

    log_warning("%s: accept: %s; pausing new connections for 100 ms", l->name, strerror(err));
    for (size_t i = 0; i < l->nfds; i++)
        loop_del_fd(l->loop, l->fds[i]);
    id = loop_add_timer(l->loop, EMFILE_PAUSE_NS, resume_accepting, l);
    if (id > 0)
        l->resume_timer = id;
    else
        listen_on_all(l);            /* no timer: better to spin than to stop for good */
}

/* Loops sharing a socket wait on it in a queue, and each connection wakes the first loop in
 * it that sleeps: the same one, every time the loops are idle. Having accepted, a loop goes
 * to the back of the queue, so connections that come one by one go round the loops. */
static void requeue(struct listener *l, int lfd)
{
    loop_del_fd(l->loop, lfd);
    if (loop_add_fd(l->loop, lfd, l->accept_events, listener_event, l) < 0)
        log_warning("%s: back to accepting: %s", l->name, strerror(errno));
}

static void listener_event(void *arg, int lfd, uint32_t events)
{
    struct listener *l = arg;
    bool unix_peer = false, shared = l->accept_events & EPOLLEXCLUSIVE;
    int accepted = 0;

    (void)events;
    for (size_t i = 0; i < l->nfds; i++)
        if (l->fds[i] == lfd)
            unix_peer = l->unix_fd[i];
    /* A shared socket: one at a time, so that a burst is spread too. */
    for (; accepted < (shared ? 1 : ACCEPTS_PER_TURN); accepted++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd >= 0) {
            accept_one(l, fd, unix_peer);
            continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            pause_accepting(l, errno);
        return;                      /* EAGAIN: all taken; anything else: the next turn */
    }
    if (shared)
        requeue(l, lfd);
}

/* --- the idle sweep -------------------------------------------------------------------- */

static void arm_sweep(struct listener *l);

/* Closes connections that made no progress for the idle timeout, but not those waiting for
 * the pool: they wait for randd, not for their peer. */
static void sweep_idle(void *arg)
{
    struct listener *l = arg;
    uint64_t now = loop_now_ns(), limit = (uint64_t)*l->idle_timeout * NS_PER_S;
    struct listener_conn *c = l->conns, *next;

    l->sweep_timer = 0;
    for (; c && limit; c = next) {
        next = c->next;
        if (!l->ops->waiting(c) && now - c->last_progress_ns > limit)
            listener_close_conn(c);
    }
    arm_sweep(l);
}

/* Arms the sweep for the idle timeout in effect (none for 0), replacing an armed one. */
static void arm_sweep(struct listener *l)
{
    unsigned timeout = *l->idle_timeout;
    int id = 0;

    loop_cancel_timer(l->loop, l->sweep_timer);
    if (timeout && l->nfds > 0)
        id = loop_add_timer(l->loop, (uint64_t)timeout * NS_PER_S / 2 + NS_PER_S, sweep_idle, l);
    l->sweep_timer = id > 0 ? id : 0;
    l->sweep_timeout = timeout;
}

void listener_reload(struct listener *l)
{
    if (l->loop && *l->idle_timeout != l->sweep_timeout)
        arm_sweep(l);
}

/* --- up and down ------------------------------------------------------------------------- */

int listener_start(struct listener *l, struct loop *loop, struct listener_clients *clients)
{
    l->loop = loop;
    l->clients = clients;
    if (l->nfds == 0)
        return 0;
    if (!(l->drain = drain_new(loop)))
        return -ENOMEM;
    for (size_t i = 0; i < l->nfds; i++) {
        int rc = loop_add_fd(loop, l->fds[i], l->accept_events, listener_event, l);

        if (rc < 0)
            return rc;
    }
    arm_sweep(l);
    return 0;
}

void listener_close(struct listener *l)
{
    while (l->conns)
        listener_close_conn(l->conns);
    drain_free(l->drain);
    l->drain = NULL;
    for (size_t i = 0; i < l->nfds; i++) {
        if (l->loop)
            loop_del_fd(l->loop, l->fds[i]);
        close(l->fds[i]);
    }
    l->nfds = 0;
    if (l->loop) {
        loop_cancel_timer(l->loop, l->resume_timer);
        loop_cancel_timer(l->loop, l->sweep_timer);
    }
    l->resume_timer = l->sweep_timer = 0;
}
