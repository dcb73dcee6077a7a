/* epoll plus a small fixed timer table. File handlers are kept in a table indexed by fd,
 * so a handler removed while a batch of events is being dispatched is simply skipped. The
 * clock: CLOCK_MONOTONIC, and BOOTTIME's lead over it for suspends. */
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LOOP_TIMERS 32
#define LOOP_BATCH  64
#define CLOCK_JUMP_NS ((int64_t)NS_PER_S)   /* BOOTTIME ahead of MONOTONIC by this: resumed */

struct fd_handler {
    loop_fd_fn *fn;
    void *arg;
};

struct timer {
    int id;                 /* 0: free slot */
    uint64_t due_ns;
    loop_timer_fn *fn;
    void *arg;
};

struct loop {
    int epfd;
    bool running;
    struct fd_handler *fds;
    size_t nfds;
    struct timer timers[LOOP_TIMERS];
    int next_timer_id;
    pthread_mutex_t *dispatch_lock;     /* held while callbacks run; NULL: none */
};

uint64_t loop_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int64_t loop_boot_offset_ns(void)
{
    struct timespec boot, mono;

    clock_gettime(CLOCK_BOOTTIME, &boot);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return (int64_t)(boot.tv_sec - mono.tv_sec) * (int64_t)NS_PER_S +
           (boot.tv_nsec - mono.tv_nsec);
}

bool loop_clock_jumped(int64_t *boot_offset_ns, int64_t *ahead_ns)
{
    int64_t offset = loop_boot_offset_ns(), ahead = offset - *boot_offset_ns;

    *boot_offset_ns = offset;
    if (ahead_ns)
        *ahead_ns = ahead;
    return ahead > CLOCK_JUMP_NS;
}

struct loop *loop_new(void)
{
    struct loop *l = calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        free(l);
        return NULL;
    }
    return l;
}

void loop_free(struct loop *l)
{
    if (!l)
        return;
    close(l->epfd);
    free(l->fds);
    free(l);
}

static int grow_fds(struct loop *l, int fd)
{
    size_t n = l->nfds ? l->nfds : 64;
    struct fd_handler *bigger;

    while (n <= (size_t)fd)
        n *= 2;
    if (n == l->nfds)
        return 0;
    bigger = realloc(l->fds, n * sizeof(*bigger));
    if (!bigger)
        return -ENOMEM;
    memset(bigger + l->nfds, 0, (n - l->nfds) * sizeof(*bigger));
    l->fds = bigger;
    l->nfds = n;
    return 0;
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn *fn, void *arg)
{
    struct epoll_event ev = { .events = events, .data.fd = fd };
    int rc = grow_fds(l, fd);

    if (rc < 0)
        return rc;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    l->fds[fd] = (struct fd_handler){ fn, arg };
    return 0;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.fd = fd };

    return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del_fd(struct loop *l, int fd)
{
    if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].fn)
        return;
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
    l->fds[fd] = (struct fd_handler){ 0 };
}

int loop_add_timer(struct loop *l, uint64_t delay_ns, loop_timer_fn *fn, void *arg)
{
    for (int i = 0; i < LOOP_TIMERS; i++) {
        struct timer *t = &l->timers[i];

        if (t->id)
            continue;
        if (++l->next_timer_id <= 0)
            l->next_timer_id = 1;
        *t = (struct timer){ l->next_timer_id, loop_now_ns() + delay_ns, fn, arg };
        return t->id;
    }
    return -ENOSPC;
}

void loop_cancel_timer(struct loop *l, int id)
{
    for (int i = 0; id > 0 && i < LOOP_TIMERS; i++)
        if (l->timers[i].id == id)
            l->timers[i].id = 0;
}

/* Milliseconds until the next timer, rounded up so we never wake early; -1: none. */
static int next_timeout_ms(const struct loop *l, uint64_t now)
{
    uint64_t soonest = UINT64_MAX;

    for (int i = 0; i < LOOP_TIMERS; i++)
        if (l->timers[i].id && l->timers[i].due_ns < soonest)
            soonest = l->timers[i].due_ns;
    if (soonest == UINT64_MAX)
        return -1;
    if (soonest <= now)
        return 0;
    return (int)((soonest - now + 999999) / 1000000 > 86400000 ? 86400000
                                                               : (soonest - now + 999999) / 1000000);
}

static void run_due_timers(struct loop *l)
{
    uint64_t now = loop_now_ns();

    for (int i = 0; i < LOOP_TIMERS; i++) {
        struct timer t = l->timers[i];

        if (!t.id || t.due_ns > now)
            continue;
        l->timers[i].id = 0;    /* free before the call, so the callback can re-arm */
        t.fn(t.arg);
    }
}

void loop_set_dispatch_lock(struct loop *l, pthread_mutex_t *lock)
{
    l->dispatch_lock = lock;
}

int loop_run(struct loop *l)
{
    struct epoll_event events[LOOP_BATCH];

    l->running = true;
    while (l->running) {
        int n = epoll_wait(l->epfd, events, LOOP_BATCH, next_timeout_ms(l, loop_now_ns()));

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (l->dispatch_lock)
            pthread_mutex_lock(l->dispatch_lock);
        for (int i = 0; i < n && l->running; i++) {
            int fd = events[i].data.fd;

            if ((size_t)fd < l->nfds && l->fds[fd].fn)
                l->fds[fd].fn(l->fds[fd].arg, fd, events[i].events);
        }
        run_due_timers(l);
        if (l->dispatch_lock)
            pthread_mutex_unlock(l->dispatch_lock);
    }
    return 0;
}

void loop_stop(struct loop *l)
{
    l->running = false;
}
