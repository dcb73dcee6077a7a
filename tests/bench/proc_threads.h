/* Figures summed over every thread of a process, from /proc/PID/task: the process's own
 * /proc/PID files count its main thread only, and randd's workers (jitter, PRIME searches)
 * must count too. */
#ifndef BENCH_PROC_THREADS_H
#define BENCH_PROC_THREADS_H

#include <sys/types.h>

/* Context switches (voluntary and not) of all threads; -1 if pid is gone. */
long threads_wakeups(pid_t pid);
/* CPU time of all threads in seconds, from their schedstat; -1 if pid is gone. */
double threads_cpu_seconds(pid_t pid);

#endif
