/* Counting the calling thread's own system calls, for `randctl benchmark`'s row and the tests
 * that hold librandd to one send and one receive per request (issue 38). */
#ifndef RANDD_SYSCALL_COUNT_H
#define RANDD_SYSCALL_COUNT_H

#include <stddef.h>
#include <stdint.h>

struct syscall_counter {
    int fd;                     /* a perf event on raw_syscalls:sys_enter; -1: none */
    long nr;                    /* the system call counted; < 0: every one */
};

/* Starts counting the calling thread's system calls: all of them when nr < 0, else only
 * system call number nr (__NR_getpid, say). 0, or -errno with the reason in why (no tracefs,
 * perf events not permitted): a caller that cannot count says why and skips. */
int syscall_counter_start(struct syscall_counter *c, long nr, char *why, size_t cap);

/* The calls made since the start, the reading's own not counted; ends the count. 0 or -errno. */
int syscall_counter_stop(struct syscall_counter *c, uint64_t *calls);

#endif
