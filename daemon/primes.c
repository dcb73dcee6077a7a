/* PRIME requests on a worker thread (see primes.h). The worker draws candidates from a Cymric
 * generator of its own, kept in locked memory and reseeded from the pool for every job, so
 * the loop's generator is never touched off the loop thread. */
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

#include "cymric.h"
#include "log.h"
#include "prime.h"
#include "protocol.h"
#include "secmem.h"

#define PRIME_MAX_BYTES ((RANDD_PRIME_MAX_BITS + 7) / 8)

struct prime_job {
    struct prime_job *next;
    unsigned bits;
    void *cookie;
    bool cancelled;                       /* read by the worker under the lock */
    int rc;
    uint8_t seed[PRIMES_SEED_BYTES];
    uint8_t prime[PRIME_MAX_BYTES];
};

struct primes {
    struct loop *loop;
    primes_done_fn *done;
    int event_fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct prime_job *queue, **queue_tail, *finished;
    unsigned queued;
    bool stopping;
    struct randd_cymric *gen;             /* the worker's, in locked memory */
};

static void job_free(struct prime_job *job)
{
    OPENSSL_cleanse(job, sizeof(*job));
    free(job);
}

/* --- the worker thread ---------------------------------------------------------------------- */

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
    return stop ? -ECANCELED : randd_cymric_read(d->p->gen, buf, n);
}

static void run_job(struct primes *p, struct prime_job *job)
{
    struct draw d = { p, job };
    struct randd_byte_source src = { draw_bytes, &d };

    job->rc = randd_cymric_seed(p->gen, job->seed, sizeof(job->seed));
    OPENSSL_cleanse(job->seed, sizeof(job->seed));
    if (job->rc == 0)
        job->rc = randd_prime_generate(job->bits, job->prime, &src);
    randd_cymric_wipe(p->gen);         /* nothing of this search outlives it */
}

static void *worker(void *arg)
{
    struct primes *p = arg;
    uint64_t one = 1;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        struct prime_job *job;

        while (!p->queue && !p->stopping)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stopping)
            break;
        job = p->queue;
        p->queue = job->next;
        if (!p->queue)
            p->queue_tail = &p->queue;
        p->queued--;
        pthread_mutex_unlock(&p->lock);

        run_job(p, job);

        pthread_mutex_lock(&p->lock);
        job->next = p->finished;
        p->finished = job;
        if (write(p->event_fd, &one, sizeof(one)) < 0)
            log_err("primes: eventfd: %s", strerror(errno));
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* --- the loop side ---------------------------------------------------------------------------- */

static void deliver(void *arg, int fd, uint32_t events)
{
    struct primes *p = arg;
    struct prime_job *done;
    uint64_t n;

    (void)events;
    if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_err("primes: eventfd: %s", strerror(errno));
    pthread_mutex_lock(&p->lock);
    done = p->finished;
    p->finished = NULL;
    pthread_mutex_unlock(&p->lock);
    while (done) {
        struct prime_job *next = done->next;

        if (!done->cancelled)
            p->done(done->cookie, done->rc, done->prime, (done->bits + 7) / 8);
        job_free(done);
        done = next;
    }
}

struct primes *primes_new(struct loop *loop, primes_done_fn *done)
{
    struct primes *p = calloc(1, sizeof(*p));
    int lock_errno, rc;

    if (!p)
        return NULL;
    p->loop = loop;
    p->done = done;
    p->queue_tail = &p->queue;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->gen = randd_secure_alloc(sizeof(*p->gen), &lock_errno);
    if (p->event_fd < 0 || !p->gen || randd_cymric_init(p->gen, 0) < 0)
        goto fail;
    rc = loop_add_fd(loop, p->event_fd, EPOLLIN, deliver, p);
    if (rc < 0) {
        errno = -rc;
        goto fail;
    }
    rc = pthread_create(&p->thread, NULL, worker, p);
    if (rc != 0) {
        loop_del_fd(loop, p->event_fd);
        errno = rc;
        goto fail;
    }
    return p;
fail:
    if (p->gen) {
        randd_cymric_fini(p->gen);
        randd_secure_free(p->gen, sizeof(*p->gen));
    }
    if (p->event_fd >= 0)
        close(p->event_fd);
    free(p);
    return NULL;
}

struct prime_job *primes_submit(struct primes *p, unsigned bits,
                                const uint8_t seed[PRIMES_SEED_BYTES], void *cookie)
{
    struct prime_job *job = calloc(1, sizeof(*job));

    if (!job)
        return NULL;
    job->bits = bits;
    job->cookie = cookie;
    memcpy(job->seed, seed, sizeof(job->seed));
    pthread_mutex_lock(&p->lock);
    if (p->queued >= PRIMES_MAX_QUEUED) {
        pthread_mutex_unlock(&p->lock);
        job_free(job);
        return NULL;
    }
    *p->queue_tail = job;
    p->queue_tail = &job->next;
    p->queued++;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    return job;
}

void primes_cancel(struct primes *p, struct prime_job *job)
{
    pthread_mutex_lock(&p->lock);
    job->cancelled = true;               /* queued, running or finished: deliver skips it */
    pthread_mutex_unlock(&p->lock);
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
    loop_del_fd(p->loop, p->event_fd);
    close(p->event_fd);
    for (job = p->queue; job; job = next) {
        next = job->next;
        job_free(job);
    }
    for (job = p->finished; job; job = next) {
        next = job->next;
        job_free(job);
    }
    randd_cymric_fini(p->gen);
    randd_secure_free(p->gen, sizeof(*p->gen));
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p);
}
