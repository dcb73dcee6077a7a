/* Worker threads (see workers.h). The main thread tells a worker news through an atomic set
 * of bits and an eventfd in the worker's loop, so a worker that is idle stays asleep until
 * then: no polling, no wakeups. A reload is taken on the worker's own thread, copying the
 * main thread's config under the pool lock, so no key is read while it is being written.
 *
 * The loops share the socket, and a connection goes to a loop that waits on it (listener.c):
 * a loop whose thread is slow to start (a loaded machine; under qemu-user one came so late
 * that the other took all of 200 clients) would see none. So each thread waits at a gate
 * until every one has come to it, and all enter their loops together.
 *
 * Sections: news, the start gate, up and down. */
#include "workers.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "privileges.h"

enum worker_news {
    WORKER_NEWS_RELOAD = 1u << 0,      /* copy the live keys, re-arm the idle sweep */
    WORKER_NEWS_POOL_READY = 1u << 1,  /* serve requests that wait for the pool */
    WORKER_NEWS_STOP = 1u << 2,
};

/* --- news --------------------------------------------------------------------------------- */

static void tell(struct worker *w, unsigned news)
{
    uint64_t one = 1;

    atomic_fetch_or(&w->news, news);
    if (write(w->news_fd, &one, sizeof(one)) < 0)
        log_err("worker: eventfd: %s", strerror(errno));
}

static void tell_all(struct workers *ws, unsigned news)
{
    for (size_t i = 0; i < ws->n; i++)
        if (ws->w[i].running)
            tell(&ws->w[i], news);
}

/* On the worker's thread. */
static void news_arrived(void *arg, int fd, uint32_t events)
{
    struct worker *w = arg;
    uint64_t count;
    unsigned news;

    (void)events;
    if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
        log_err("worker: eventfd: %s", strerror(errno));
    news = atomic_exchange(&w->news, 0);
    if (news & WORKER_NEWS_RELOAD) {
        pthread_mutex_lock(w->all->pool_lock);
        w->config = *w->all->config;
        pthread_mutex_unlock(w->all->pool_lock);
        server_reload(&w->server);
    }
    if (news & WORKER_NEWS_POOL_READY)
        server_pool_ready(&w->server);
    if (news & WORKER_NEWS_STOP)
        loop_stop(w->loop);
}

void workers_reload(struct workers *ws)
{
    tell_all(ws, WORKER_NEWS_RELOAD);
}

void workers_pool_ready(struct workers *ws)
{
    tell_all(ws, WORKER_NEWS_POOL_READY);
}

/* --- the start gate -------------------------------------------------------------------- */

/* On the worker's thread: counts itself in, then waits until the gate opens. */
static void wait_at_gate(struct workers *ws)
{
    pthread_mutex_lock(&ws->gate_lock);
    ws->at_gate++;
    pthread_cond_broadcast(&ws->gate_changed);
    while (!ws->gate_open)
        pthread_cond_wait(&ws->gate_changed, &ws->gate_lock);
    pthread_mutex_unlock(&ws->gate_lock);
}

/* Once the started threads are all at the gate (every one, unless a start failed), lets them
 * through. */
static void open_gate(struct workers *ws)
{
    size_t started = 0;

    for (size_t i = 0; i < ws->n; i++)
        started += ws->w[i].running;
    pthread_mutex_lock(&ws->gate_lock);
    while (ws->at_gate < started)
        pthread_cond_wait(&ws->gate_changed, &ws->gate_lock);
    ws->gate_open = true;
    pthread_cond_broadcast(&ws->gate_changed);
    pthread_mutex_unlock(&ws->gate_lock);
}

/* --- up and down -------------------------------------------------------------------------- */

int workers_open(struct workers *ws, unsigned n, const struct config *config,
                 struct server *socket_owner, char *why, size_t whylen)
{
    memset(ws, 0, sizeof(*ws));
    ws->config = config;
    pthread_mutex_init(&ws->gate_lock, NULL);
    pthread_cond_init(&ws->gate_changed, NULL);
    ws->gate_made = true;
    if (!(ws->w = calloc(n, sizeof(*ws->w))))
        return snprintf(why, whylen, "workers: %s", strerror(ENOMEM)), -1;
    for (; ws->n < n; ws->n++) {
        struct worker *w = &ws->w[ws->n];

        w->all = ws;
        w->news_fd = -1;
        w->config = *config;
        if (server_open_beside(&w->server, &w->config, socket_owner, why, whylen) < 0)
            return ws->n++, -1;
    }
    return 0;
}

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    int rc;

    wait_at_gate(w->all);
    rc = loop_run(w->loop);

    if (rc < 0)
        log_err("worker: event loop: %s", strerror(-rc));
    return NULL;
}

static int start_one(struct worker *w, struct pool *pool, struct primes *primes,
                     struct listener_clients *clients, server_status_fn *status,
                     void *status_ctx)
{
    int rc;

    if (!(w->loop = loop_new()))
        return -errno;
    if ((w->news_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return -errno;
    if ((rc = loop_add_fd(w->loop, w->news_fd, EPOLLIN, news_arrived, w)) < 0 ||
        (rc = branch_init(&w->branch, pool, w->all->pool_lock)) < 0 ||
        (rc = server_start(&w->server, w->loop, &w->branch, primes, clients, status,
                           status_ctx)) < 0)
        return rc;
    server_set_admin(&w->server, w->all->admin, w->all->admin_ctx);
    server_set_noise_wanted(&w->server, w->all->noise_wanted, w->all->noise_ctx);
    if ((rc = privileges_start_thread(&w->thread, "randd-loop", worker_run, w)) != 0)
        return -rc;
    w->running = true;
    return 0;
}

void workers_set_admin(struct workers *ws, server_admin_fn *admin, void *admin_ctx)
{
    ws->admin = admin;
    ws->admin_ctx = admin_ctx;
}

void workers_set_noise_wanted(struct workers *ws, void (*wanted)(void *ctx), void *ctx)
{
    ws->noise_wanted = wanted;
    ws->noise_ctx = ctx;
}

int workers_start(struct workers *ws, struct pool *pool, pthread_mutex_t *pool_lock,
                  struct primes *primes, struct listener_clients *clients,
                  server_status_fn *status, void *status_ctx)
{
    int rc = 0;

    ws->pool_lock = pool_lock;
    for (size_t i = 0; i < ws->n && rc == 0; i++)
        rc = start_one(&ws->w[i], pool, primes, clients, status, status_ctx);
    open_gate(ws);                   /* after a failure too: workers_close stops them */
    return rc;
}

void workers_close(struct workers *ws)
{
    tell_all(ws, WORKER_NEWS_STOP);
    for (size_t i = 0; i < ws->n; i++) {
        struct worker *w = &ws->w[i];

        if (w->running)
            pthread_join(w->thread, NULL);
        w->running = false;
        server_close(&w->server);    /* its loop's thread is gone: safe from here */
        branch_fini(&w->branch);
        if (w->news_fd >= 0)
            close(w->news_fd);
        loop_free(w->loop);
    }
    free(ws->w);
    ws->w = NULL;
    ws->n = 0;
    if (ws->gate_made) {
        pthread_cond_destroy(&ws->gate_changed);
        pthread_mutex_destroy(&ws->gate_lock);
    }
    ws->gate_made = ws->gate_open = false;
    ws->at_gate = 0;
}
