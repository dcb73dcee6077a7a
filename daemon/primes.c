/* PRIME requests on a worker thread (see primes.h). The worker draws candidates from a
 * generator of its own (in locked memory; a DRBG's working state in OpenSSL's heap, wiped when
 * it is uninstantiated), seeded afresh from the pool for every job,
 * so the loop's generator is never touched off the loop thread: Cymric, or with a DRBG
 * engine (engine = ctr_drbg | hash_drbg, mode = approved) a DRBG of the same mechanism,
 * instantiated from the job's 64 bytes of the loop's output as every randd DRBG is
 * (drbg_engine.c) and uninstantiated when the search ends.
 *
 * Fairness: searches queue per peer uid (a lane each), at most RANDD_PRIME_PER_UID of a uid's
 * queued or running, and the worker takes the next search from the uid whose turn was longest
 * ago. A user with many connections still has one lane, so another user's search waits for
 * the one running and at most one of each other uid's, never for all of one user's. */
#include "primes.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "engine.h"
#include "log.h"
#include "prime.h"
#include "privileges.h"
#include "protocol.h"
#include "secmem.h"

#define PRIME_MAX_BYTES ((RANDD_PRIME_MAX_BITS + 7) / 8)

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_FINISHED };

struct prime_lane;

struct prime_job {
    struct prime_job *next;               /* in its lane's queue, then in its port's finished */
    struct primes_port *port;             /* where it is delivered */
    struct prime_lane *lane;              /* while queued or running */
    enum job_state state;                 /* both under the lock */
    unsigned bits;
    void *cookie;
    bool cancelled;                       /* read by the worker under the lock */
    int rc;
    uint8_t seed[PRIMES_SEED_BYTES];
    uint8_t prime[PRIME_MAX_BYTES];
};

/* One uid's searches; it exists while the uid has one queued or running. */
struct prime_lane {
    struct prime_lane *next;
    uid_t uid;
    unsigned jobs;                        /* queued + running */
    uint64_t last_turn;                   /* the worker last started one of ours; 0: never */
    struct prime_job *queue, **queue_tail;
};

/* A loop's way back: finished searches wait in finished until the eventfd wakes the loop. */
struct primes_port {
    struct primes *primes;
    struct loop *loop;
    primes_done_fn *done;
    int event_fd;
    struct prime_job *finished;           /* under primes->lock */
};

struct primes {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct prime_lane *lanes;             /* in order of arrival */
    unsigned jobs;                        /* queued + running, every uid */
    uint64_t turns;                       /* searches started */
    bool stopping;
    struct engine *gen;                   /* the worker's, in locked memory (a DRBG's
                                           * state: OpenSSL's heap) */
};

static void job_free(struct prime_job *job)
{
    OPENSSL_cleanse(job, sizeof(*job));
    free(job);
}

/* --- the worker thread -------------------------------------------------------------------- */

struct draw {
    struct primes *p;
    struct prime_job *job;
};

/* The search's byte source; a cancelled job or a stopping daemon ends the search here. */
static int draw_bytes(void *ctx, void *buf, size_t n)
{
    struct draw *d = ctx;
    bool stop;

    pthread_mutex_lock(&d->p->lock);
    stop = d->job->cancelled || d->p->stopping;
    pthread_mutex_unlock(&d->p->lock);
    return stop ? -ECANCELED : engine_read(d->p->gen, buf, n);
}

static void run_job(struct primes *p, struct prime_job *job)
{
    struct draw d = { p, job };
    struct randd_byte_source src = { draw_bytes, &d };

    job->rc = engine_seed(p->gen, job->seed, sizeof(job->seed));
    OPENSSL_cleanse(job->seed, sizeof(job->seed));
    if (job->rc == 0)
        job->rc = randd_prime_generate(job->bits, job->prime, &src);
    engine_forget(p->gen);             /* nothing of this search outlives it */
}

/* The next search, off its lane's queue: the uid whose turn was longest ago goes first (one
 * new to the queue before any that had a turn; ties in order of arrival). */
static struct prime_job *next_job(struct primes *p)
{
    struct prime_lane *lane, *best = NULL;
    struct prime_job *job;

    for (lane = p->lanes; lane; lane = lane->next)
        if (lane->queue && (!best || lane->last_turn < best->last_turn))
            best = lane;
    if (!best)
        return NULL;
    job = best->queue;
    best->queue = job->next;
    if (!best->queue)
        best->queue_tail = &best->queue;
    best->last_turn = ++p->turns;
    job->state = JOB_RUNNING;
    return job;
}

/* One of the lane's searches is over (done or cancelled): its place is free for the uid's
 * next. A lane with none left goes, so the lanes are only the uids with work. */
static void lane_release(struct primes *p, struct prime_lane *lane)
{
    struct prime_lane **link;

    p->jobs--;
    if (--lane->jobs > 0)
        return;
    for (link = &p->lanes; *link != lane; link = &(*link)->next)
        ;
    *link = lane->next;
    free(lane);
}

static void *worker(void *arg)
{
    struct primes *p = arg;
    uint64_t one = 1;

    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        struct prime_job *job = next_job(p);

        if (!job) {
            pthread_cond_wait(&p->wake, &p->lock);
            continue;
        }
        pthread_mutex_unlock(&p->lock);

        run_job(p, job);

        pthread_mutex_lock(&p->lock);
        lane_release(p, job->lane);
        job->lane = NULL;
        job->state = JOB_FINISHED;
        if (job->cancelled) {            /* its port may be gone: nothing to deliver */
            job_free(job);
            continue;
        }
        job->next = job->port->finished;
        job->port->finished = job;
        if (write(job->port->event_fd, &one, sizeof(one)) < 0)
            log_err("primes: eventfd: %s", strerror(errno));
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* --- the loop side ------------------------------------------------------------------------ */

static void deliver(void *arg, int fd, uint32_t events)
{
    struct primes_port *port = arg;
    struct prime_job *done;
    uint64_t n;

    (void)events;
    if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_err("primes: eventfd: %s", strerror(errno));
    pthread_mutex_lock(&port->primes->lock);
    done = port->finished;
    port->finished = NULL;
    pthread_mutex_unlock(&port->primes->lock);
    while (done) {
        struct prime_job *next = done->next;

        if (!done->cancelled)
            port->done(done->cookie, done->rc, done->prime, (done->bits + 7) / 8);
        job_free(done);
        done = next;
    }
}

struct primes *primes_new(enum randd_stream_cipher cipher, enum randd_engine engine)
{
    struct primes *p = calloc(1, sizeof(*p));
    int lock_errno, rc = -ENOMEM;

    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->gen = randd_secure_alloc(sizeof(*p->gen), &lock_errno);
    if (!p->gen || (rc = engine_init(p->gen)) < 0 ||
        (rc = engine_use_cipher(p->gen, cipher)) < 0 ||
        (RANDD_ENGINE_IS_DRBG(engine) && (rc = engine_choose(p->gen, engine, "primes")) < 0)) {
        errno = -rc;
        goto fail;
    }
    rc = privileges_start_thread(&p->thread, "randd-prime", worker, p);
    if (rc != 0) {
        errno = rc;
        goto fail;
    }
    return p;
fail:
    if (p->gen) {
        engine_fini(p->gen);
        randd_secure_free(p->gen, sizeof(*p->gen));
    }
    free(p);
    return NULL;
}

struct primes_port *primes_port_new(struct primes *p, struct loop *loop, primes_done_fn *done)
{
    struct primes_port *port = calloc(1, sizeof(*port));
    int rc;

    if (!port)
        return NULL;
    *port = (struct primes_port){ p, loop, done, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), NULL };
    if (port->event_fd < 0) {
        free(port);
        return NULL;
    }
    if ((rc = loop_add_fd(loop, port->event_fd, EPOLLIN, deliver, port)) < 0) {
        close(port->event_fd);
        free(port);
        errno = -rc;
        return NULL;
    }
    return port;
}

void primes_port_free(struct primes_port *port)
{
    struct prime_job *job, *next;

    if (!port)
        return;
    loop_del_fd(port->loop, port->event_fd);
    close(port->event_fd);
    pthread_mutex_lock(&port->primes->lock);
    job = port->finished;
    port->finished = NULL;
    pthread_mutex_unlock(&port->primes->lock);
    for (; job; job = next) {
        next = job->next;
        job_free(job);
    }
    free(port);
}

/* The uid's lane, or NULL with *end at the end of the list, where its lane would go. */
static struct prime_lane *find_lane(struct primes *p, uid_t uid, struct prime_lane ***end)
{
    struct prime_lane **link;

    for (link = &p->lanes; *link; link = &(*link)->next)
        if ((*link)->uid == uid)
            return *link;
    *end = link;
    return NULL;
}

/* Puts job on its uid's lane, unless the uid or the whole queue is full. Under the lock. */
static int enqueue(struct primes *p, struct prime_job *job, uid_t uid)
{
    struct prime_lane **end, *lane = find_lane(p, uid, &end);

    if (lane && lane->jobs >= RANDD_PRIME_PER_UID)
        return -EBUSY;
    if (p->jobs >= PRIMES_MAX_QUEUED)
        return -EAGAIN;
    if (!lane) {
        lane = calloc(1, sizeof(*lane));
        if (!lane)
            return -ENOMEM;
        lane->uid = uid;
        lane->queue_tail = &lane->queue;
        *end = lane;
    }
    job->lane = lane;
    job->state = JOB_QUEUED;
    *lane->queue_tail = job;
    lane->queue_tail = &job->next;
    lane->jobs++;
    p->jobs++;
    return 0;
}

int primes_submit(struct primes_port *port, unsigned bits,
                  const uint8_t seed[PRIMES_SEED_BYTES], uid_t uid, void *cookie,
                  struct prime_job **out)
{
    struct primes *p = port->primes;
    struct prime_job *job = calloc(1, sizeof(*job));
    int rc;

    if (!job)
        return -ENOMEM;
    job->port = port;
    job->bits = bits;
    job->cookie = cookie;
    memcpy(job->seed, seed, sizeof(job->seed));
    pthread_mutex_lock(&p->lock);
    rc = enqueue(p, job, uid);
    if (rc == 0)
        pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (rc < 0) {
        job_free(job);
        return rc;
    }
    *out = job;
    return 0;
}

/* Takes a queued job off its lane: a client that left gives its place back at once, rather
 * than when the worker would have reached it. Under the lock. */
static void unqueue(struct primes *p, struct prime_job *job)
{
    struct prime_lane *lane = job->lane;
    struct prime_job **link;

    for (link = &lane->queue; *link != job; link = &(*link)->next)
        ;
    *link = job->next;
    if (lane->queue_tail == &job->next)
        lane->queue_tail = link;
    lane_release(p, lane);
}

void primes_cancel(struct primes_port *port, struct prime_job *job)
{
    struct primes *p = port->primes;
    bool queued;

    pthread_mutex_lock(&p->lock);
    queued = job->state == JOB_QUEUED;
    if (queued)
        unqueue(p, job);
    else
        job->cancelled = true;           /* running or finished: deliver skips it */
    pthread_mutex_unlock(&p->lock);
    if (queued)
        job_free(job);
}

void primes_free(struct primes *p)
{
    struct prime_job *job, *next;

    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    while (p->lanes) {
        struct prime_lane *lane = p->lanes;

        for (job = lane->queue; job; job = next) {
            next = job->next;
            job_free(job);
        }
        p->lanes = lane->next;
        free(lane);
    }
    engine_fini(p->gen);
    randd_secure_free(p->gen, sizeof(*p->gen));
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}
