/* Sums per-thread /proc figures over a process's threads (see proc_threads.h). */
#include "proc_threads.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sum over pid's threads of what read_one makes of each /proc/PID/task/TID/NAME;
 * -1 if pid is gone. */
static double sum_over_threads(pid_t pid, const char *name, double (*read_one)(FILE *f))
{
    char path[300];
    double total = 0;
    struct dirent *d;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if (!(dir = opendir(path)))
        return -1;
    while ((d = readdir(dir))) {
        FILE *f;

        if (d->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%s/%s", (int)pid, d->d_name, name);
        if (!(f = fopen(path, "r")))
            continue;                        /* the thread ended since readdir */
        total += read_one(f);
        fclose(f);
    }
    closedir(dir);
    return total;
}

/* voluntary_ctxt_switches + nonvoluntary_ctxt_switches of one thread's status. */
static double context_switches(FILE *status)
{
    char line[256];
    double n = 0;

    while (fgets(line, sizeof(line), status))
        if (strstr(line, "ctxt_switches:"))
            n += strtod(strchr(line, ':') + 1, NULL);
    return n;
}

/* The first field of one thread's schedstat: time on the CPU, in nanoseconds. */
static double seconds_on_cpu(FILE *schedstat)
{
    char line[128];

    return fgets(line, sizeof(line), schedstat) ? strtod(line, NULL) / 1e9 : 0;
}

long threads_wakeups(pid_t pid)
{
    return (long)sum_over_threads(pid, "status", context_switches);
}

double threads_cpu_seconds(pid_t pid)
{
    return sum_over_threads(pid, "schedstat", seconds_on_cpu);
}
