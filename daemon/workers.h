/* Serving loops beyond the main one (workers > 1): a thread each, with its own event loop, a
 * protocol v1 server on the shared socket, and a generator seeded from the pool (branch.c).
 * The main thread keeps the sources, the pool, the kernel feed, EGD, signals and reloads, and
 * runs its callbacks under the pool lock; a worker takes that lock only to seed, to add
 * entropy, to build STATUS and to take a reload. Owns the threads and what the main thread
 * tells them; what they serve is server.c's. */
#ifndef RANDD_WORKERS_H
#define RANDD_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "branch.h"
#include "config.h"
#include "listener.h"
#include "loop.h"
#include "pool.h"
#include "primes.h"
#include "server.h"

struct workers;

struct worker {
    struct workers *all;
    pthread_t thread;
    bool running;                      /* the thread was started and not yet joined */
    struct loop *loop;
    struct config config;              /* the main thread's, as of the last reload taken */
    struct branch branch;
    struct server server;
    int news_fd;                       /* eventfd: the main thread has news */
    _Atomic unsigned news;             /* WORKER_NEWS_* */
};

struct workers {
    struct worker *w;
    size_t n;
    const struct config *config;       /* the main thread's, read under pool_lock */
    pthread_mutex_t *pool_lock;
    server_admin_fn *admin;            /* each loop's server_set_admin, from workers_start */
    void *admin_ctx;
    void (*noise_wanted)(void *ctx);   /* each loop's server_set_noise_wanted */
    void *noise_ctx;
    /* The start gate: a thread that reaches its loop waits there until every thread has
     * (workers_start), so that none accepts alone while another is still starting. */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_changed;
    bool gate_made;
    bool gate_open;
    size_t at_gate;
};

/* n loops' servers on socket_owner's socket (bound, or passed by systemd; it keeps the file
 * and serves nothing itself). Returns 0, or -1 with why. workers_close is safe after. */
int workers_open(struct workers *ws, unsigned n, const struct config *config,
                 struct server *socket_owner, char *why, size_t whylen);

/* Seeds nothing yet: each loop's generator seeds from pool before its first output. Starts
 * the threads, which must come after privileges are dropped (capabilities are per thread),
 * and returns once every one is at its loop: none serves before all are there.
 * The main thread must hold pool_lock whenever it touches the pool from then on
 * (loop_set_dispatch_lock). Returns 0 or a negative errno. */
int workers_start(struct workers *ws, struct pool *pool, pthread_mutex_t *pool_lock,
                  struct primes *primes, struct listener_clients *clients,
                  server_status_fn *status, void *status_ctx);

/* Before workers_start: root's SELFTEST and INJECT_FAILURE on every loop go to admin, which
 * runs on that loop's thread and must take pool_lock itself. */
void workers_set_admin(struct workers *ws, server_admin_fn *admin, void *admin_ctx);

/* Before workers_start: noise requests on every loop call wanted(ctx) from that loop. */
void workers_set_noise_wanted(struct workers *ws, void (*wanted)(void *ctx), void *ctx);

/* From the main thread, under pool_lock: the live keys changed; the pool became ready. */
void workers_reload(struct workers *ws);
void workers_pool_ready(struct workers *ws);

/* From the main thread, not holding pool_lock (a worker may be waiting for it): stops and
 * joins every thread, then closes their connections and sockets. */
void workers_close(struct workers *ws);

#endif
