/* Graceful close. A socket closed while input the daemon never read is still queued is not
 * closed gracefully: the kernel resets the connection (ECONNRESET for a Unix peer, an RST
 * over TCP, which can also discard the reply before the peer reads it). So instead we shut
 * down sending, which gives the peer its end-of-file after the reply, and read and drop
 * its input until it closes too. A peer that never does cannot hold on: the connection is
 * closed after DRAIN_MAX_BYTES or DRAIN_MAX_NS, and at most DRAIN_MAX_CONNS drain at once.
 *
 * Draining connections are driven by the event loop like clients, and one timer that runs
 * while any is draining closes those past their time. */
#include "drain.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define DRAIN_TICK_NS (DRAIN_MAX_NS / 4)

struct draining {
    struct draining *next, **prevp;
    struct drain *drain;
    int fd;
    uint64_t since_ns;
    size_t dropped;
};

struct drain {
    struct loop *loop;
    struct draining *conns;
    unsigned count;
    int timer;                       /* 0: not armed (nothing draining) */
};

struct drain *drain_new(struct loop *loop)
{
    struct drain *d = calloc(1, sizeof(*d));

    if (d)
        d->loop = loop;
    return d;
}

static void finish(struct draining *c)
{
    struct drain *d = c->drain;

    loop_del_fd(d->loop, c->fd);
    close(c->fd);
    *c->prevp = c->next;
    if (c->next)
        c->next->prevp = c->prevp;
    d->count--;
    free(c);
}

/* Reads what the peer sent and drops it; closes on its end-of-file, an error, or the limit. */
static void drain_event(void *arg, int fd, uint32_t events)
{
    struct draining *c = arg;
    uint8_t sink[4096];

    (void)events;                    /* EPOLLHUP or EPOLLERR: the read below says which */
    for (;;) {
        ssize_t n = recv(fd, sink, sizeof(sink), 0);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0 || (c->dropped += (size_t)n) >= DRAIN_MAX_BYTES) {
            finish(c);
            return;
        }
    }
}

static void tick(void *arg)
{
    struct drain *d = arg;
    uint64_t now = loop_now_ns();
    struct draining *c = d->conns, *next;

    d->timer = 0;
    for (; c; c = next) {
        next = c->next;
        if (now - c->since_ns >= DRAIN_MAX_NS)
            finish(c);
    }
    if (d->conns && (d->timer = loop_add_timer(d->loop, DRAIN_TICK_NS, tick, d)) <= 0) {
        d->timer = 0;                /* no timer: no deadline, so nothing may linger */
        while (d->conns)
            finish(d->conns);
    }
}

/* Tracks fd in the loop until it is done; false (fd untouched) when that cannot be. */
static bool start_draining(struct drain *d, int fd)
{
    struct draining *c;

    if (!d || d->count >= DRAIN_MAX_CONNS || !(c = malloc(sizeof(*c))))
        return false;
    if (!d->timer && (d->timer = loop_add_timer(d->loop, DRAIN_TICK_NS, tick, d)) <= 0) {
        d->timer = 0;
        free(c);
        return false;
    }
    *c = (struct draining){ d->conns, &d->conns, d, fd, loop_now_ns(), 0 };
    if (loop_add_fd(d->loop, fd, EPOLLIN, drain_event, c) < 0) {
        free(c);
        return false;                /* the armed timer finds nothing and stops */
    }
    if (d->conns)
        d->conns->prevp = &c->next;
    d->conns = c;
    d->count++;
    return true;
}

void drain_close(struct drain *d, int fd)
{
    /* ENOTCONN: the peer is gone already, and there is nothing to wait for. */
    if (shutdown(fd, SHUT_WR) < 0 || !start_draining(d, fd))
        close(fd);
}

void drain_free(struct drain *d)
{
    if (!d)
        return;
    while (d->conns)
        finish(d->conns);
    loop_cancel_timer(d->loop, d->timer);
    free(d);
}
