/* The event loop: file descriptors through epoll and a handful of one-shot timers, and the
 * daemon's clock (its time base, and whether the machine was suspended). The only module
 * that calls epoll; everything else registers callbacks. A loop belongs to one thread;
 * a thread that shares state with other threads' loops can have its callbacks run under a
 * lock (loop_set_dispatch_lock), released only while it waits. */
#ifndef RANDD_LOOP_H
#define RANDD_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct loop;

typedef void loop_fd_fn(void *arg, int fd, uint32_t events);
typedef void loop_timer_fn(void *arg);

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* events are EPOLLIN/EPOLLOUT/...; returns 0 or a negative errno. */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn *fn, void *arg);
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
void loop_del_fd(struct loop *l, int fd);

/* Calls fn once, after delay_ns; returns a timer id > 0, or a negative errno. Re-arming a
 * periodic timer is the callback's job. */
int loop_add_timer(struct loop *l, uint64_t delay_ns, loop_timer_fn *fn, void *arg);
void loop_cancel_timer(struct loop *l, int id);

/* From now on every callback runs with lock held: it is taken when epoll_wait returns and
 * released before the next wait. NULL (the default): no lock. */
void loop_set_dispatch_lock(struct loop *l, pthread_mutex_t *lock);

/* Runs until loop_stop; returns 0, or a negative errno if epoll fails. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

#define NS_PER_S 1000000000ull

/* CLOCK_MONOTONIC in nanoseconds: the loop's time base. */
uint64_t loop_now_ns(void);

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC: grows by the time the machine spent suspended. */
int64_t loop_boot_offset_ns(void);
/* The machine resumed from a suspend (or a snapshot restore made CLOCK_BOOTTIME jump) since
 * *boot_offset_ns was taken: BOOTTIME ran more than a second ahead of MONOTONIC, and a
 * generator's state may be replayed. Takes the offset now into *boot_offset_ns; *ahead_ns,
 * when not NULL, says how far BOOTTIME ran ahead. */
bool loop_clock_jumped(int64_t *boot_offset_ns, int64_t *ahead_ns);

#endif
