/* The event loop: file descriptors through epoll and a handful of one-shot timers. The only
 * module that calls epoll; everything else registers callbacks. A loop belongs to one thread;
 * a thread that shares state with other threads' loops can have its callbacks run under a
 * lock (loop_set_dispatch_lock), released only while it waits. */
#ifndef RANDD_LOOP_H
#define RANDD_LOOP_H

#include <pthread.h>
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

/* CLOCK_MONOTONIC in nanoseconds: the loop's time base. */
uint64_t loop_now_ns(void);

#endif
