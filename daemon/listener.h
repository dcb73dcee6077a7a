/* Accepting connections, for the protocol v1 server and the EGD listener alike: listening
 * sockets in the event loop, accept with a pause when descriptors run out, one max_clients
 * over every listener shared max-min fairly among the peer uids, the idle sweep, the peer's
 * credentials (supplementary groups too), and the close, plain or graceful (drain.c). Owns
 * the listening descriptors and each connection's descriptor and place in the counts; what a
 * connection says, and its buffers, are its protocol's (server.c, egd.c). */
#ifndef RANDD_LISTENER_H
#define RANDD_LISTENER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "loop.h"

#define LISTENER_MAX_FDS 2              /* EGD: a Unix and a TCP socket */
#define LISTENER_NO_UID  ((uid_t)-1)    /* a TCP peer's: it has no credentials */

/* One max_clients over every listener, whatever loop or thread it accepts on, shared
 * max-min fairly among the peer uids connected (listener.c, "places"): free places go to
 * whoever asks; at a full table a uid under its fair share takes the place of an idle
 * connection of the biggest holder, and a uid at its share is refused. TCP peers have no
 * uid: together they count as one more uid. max_clients_per_uid, when set, caps every uid. */
struct listener_clients {
    pthread_mutex_t lock;               /* places are taken and given back under it */
    _Atomic unsigned connected;         /* connections holding a place now, every listener's */
    _Atomic uint64_t over_uid_share;    /* connections refused: their uid held its share */
    _Atomic uint64_t evicted;           /* idle connections closed to make room for a uid */
    struct listener_uid {               /* each uid with a connection open, and how many */
        uid_t uid;
        unsigned n;
    } *uids;
    size_t nuids, uids_room;
    struct listener_conn *conns;        /* every listener's connections, under lock */
};

/* Why a connection was refused. */
enum listener_refusal {
    LISTENER_FULL,                      /* max_clients connections are open */
    LISTENER_UID_SHARE,                 /* its uid holds its fair share of a full table, or
                                         * max_clients_per_uid */
    LISTENER_ROOTS,                     /* not root's, and the rest are kept for root */
    LISTENER_EVICTED,                   /* an idle connection, closed to make room for a
                                         * uid under its fair share: its uid held more */
};

/* Whether a connection may be closed to make room (struct listener_conn's hold). */
enum listener_hold {
    LISTENER_HOLD_BUSY,                 /* a request or reply in flight, or anything held */
    LISTENER_HOLD_IDLE,                 /* waiting for its peer, holding nothing */
    LISTENER_HOLD_EVICTED,              /* chosen to make room: its place is already given */
};

struct listener;

/* What the listener keeps of a connection, inside the protocol's own client struct (see
 * LISTENER_CLIENT). Read freely; written by listener.c only. */
struct listener_conn {
    struct listener_conn *next, **prevp;
    struct listener *listener;
    int fd;
    uid_t uid;                          /* SO_PEERCRED on a Unix socket; TCP: LISTENER_NO_UID */
    bool trusted;                       /* uid 0, or in trusted_group: may add entropy */
    uint64_t last_progress_ns;          /* the idle sweep's clock: listener_progress() */
    _Atomic unsigned char hold;         /* enum listener_hold: set by the owning loop
                                         * (listener_idle, each event), and by another
                                         * loop's accept only from idle to evicted */
    struct listener_conn *all_next, **all_prevp;    /* clients->conns, under its lock */
};

/* The protocol's client struct around c, whose struct listener_conn is member. */
#define LISTENER_CLIENT(c, type, member) \
    ((type *)(void *)((char *)(c) - offsetof(type, member)))

struct listener_ops {
    /* The protocol's client struct: the listener allocates one zeroed for each connection,
     * and wipes and frees it when the connection is gone. Its struct listener_conn is at
     * conn_offset (offsetof the member). */
    size_t client_size, conn_offset;
    /* A new connection within max_clients, its client zeroed but for c. Its events go to
     * event, with c as arg, from EPOLLIN on. */
    void (*open)(void *ctx, struct listener_conn *c);
    loop_fd_fn *event;
    /* Lets go of what the client holds beyond its struct, once its descriptor is closed (or
     * draining) and it is out of the count. May be NULL. */
    void (*release)(struct listener_conn *c);
    /* Whether the idle sweep must leave c alone: it waits for the pool, not for its peer. */
    bool (*waiting)(const struct listener_conn *c);
    /* Over max_clients, or over the share of uid (SO_PEERCRED; over TCP LISTENER_NO_UID),
     * or evicted (an idle connection of uid's, closed to make room): tells the peer why, if
     * the protocol can (fd is closed after). May be NULL: the peer is just closed. */
    void (*refuse)(void *ctx, int fd, enum listener_refusal why, uid_t uid);
};

struct listener {
    const char *name;                   /* for logs: the config key, "socket" or "egd" */
    const struct listener_ops *ops;
    void *ctx;
    const struct config *config;        /* max_clients(_per_uid), trusted_group: live */
    const unsigned *idle_timeout;       /* seconds, a live config key; 0: never */
    struct loop *loop;
    struct listener_clients *clients;
    int fds[LISTENER_MAX_FDS];
    bool unix_fd[LISTENER_MAX_FDS];     /* peers have credentials (SO_PEERCRED) */
    size_t nfds;
    struct listener_conn *conns;
    struct drain *drain;                /* connections closing gracefully */
    int resume_timer;                   /* accept paused after EMFILE; 0: not paused */
    int sweep_timer;                    /* 0: not armed */
    unsigned sweep_timeout;             /* the idle timeout the sweep was armed for */
    uint32_t accept_events;             /* EPOLLIN, and EPOLLEXCLUSIVE when loops share */
};

void listener_clients_init(struct listener_clients *clients);
/* Once every listener counting in clients is closed. */
void listener_clients_free(struct listener_clients *clients);

/* A listener with no sockets yet: listener_close is safe on it (and on a zeroed one). */
void listener_init(struct listener *l, const char *name, const struct listener_ops *ops,
                   void *ctx, const struct config *config, const unsigned *idle_timeout);

/* Takes over a listening socket (bound, or passed by systemd), made non-blocking and
 * close-on-exec. Returns 0, or -ENOSPC past LISTENER_MAX_FDS (fd untouched). */
int listener_add_fd(struct listener *l, int fd);

/* Other loops accept on the same sockets (workers > 1): each connection wakes one of them,
 * not all (EPOLLEXCLUSIVE). Before listener_start. */
void listener_share_accepts(struct listener *l);

/* Whether there is a socket to accept on. */
bool listener_listening(const struct listener *l);

/* Starts accepting on the loop, counting connections in clients, and arms the idle sweep.
 * Returns 0 or a negative errno. */
int listener_start(struct listener *l, struct loop *loop, struct listener_clients *clients);

/* After a reload: an idle timeout that changed applies from now on. */
void listener_reload(struct listener *l);

/* Calls fn for each connection; fn may close the one it is given. */
void listener_each(struct listener *l, void (*fn)(struct listener_conn *c));

/* The connection made progress: the idle sweep counts from now. Only a whole request read,
 * or a reply's bytes sent, is progress: a peer that trickles a request a byte at a time
 * would otherwise hold its place for ever. */
void listener_progress(struct listener_conn *c);

/* c waits for its peer, between requests or partway into one, and holds nothing (no request
 * being served, no reply, no memfd arena): until its next event, another uid's accept may
 * close it to make room (see struct listener_clients). The protocol calls it last, just
 * before it returns to the loop. */
void listener_idle(struct listener_conn *c);

/* The fair share of non-root places for one uid now: max_clients less root's places, over
 * the uids connected (TCP peers as one); max_clients_per_uid if that is less. */
unsigned listener_fair_share(const struct listener_clients *clients,
                             const struct config *cfg);

/* Closes c's descriptor, and frees its client. */
void listener_close_conn(struct listener_conn *c);

/* After a framing error, once the reply is written: the peer reads it and then end-of-file
 * even with bytes of its own unread (drain.c), never a reset. Frees the client too. */
void listener_close_conn_gracefully(struct listener_conn *c);

/* Closes every connection and the listening sockets. */
void listener_close(struct listener *l);

#endif
