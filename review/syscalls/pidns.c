/* A child in a new PID namespace whose pid there equals the parent's pid: it takes the
 * parent's connection as its own (librandd compares pids), and both use one socket. */
#define _GNU_SOURCE
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "randd.h"

static int loop(randd_handle *h, size_t n, int iters, const char *who)
{
    unsigned char b[64]; int bad = 0, first = 0;
    for (int i = 0; i < iters; i++) {
        int rc = randd_bytes(h, b, n);
        if (rc) { if (!bad) first = rc; bad++; }
    }
    printf("%s (pid %d here): %d of %d calls failed (first: %d %s)\n", who, getpid(), bad, iters, first, randd_strerror(first));
    fflush(stdout);
    return bad;
}

int main(int argc, char **argv)
{
    randd_handle *h; unsigned char b[32];
    int use_set_tid = atoi(argv[2]), iters = 20000;
    if (randd_open(&h, argv[1]) || randd_bytes(h, b, 32)) { puts("open failed"); return 1; }
    pid_t me = getpid();
    if (unshare(CLONE_NEWPID)) { perror("unshare"); return 1; }
    pid_t a = fork();
    if (a == 0) {                      /* pid 1 of the new namespace: never uses h */
        pid_t tid = me;
        struct clone_args ca = { .exit_signal = SIGCHLD };
        if (use_set_tid) { ca.set_tid = (uintptr_t)&tid; ca.set_tid_size = 1; }
        long g = syscall(SYS_clone3, &ca, sizeof(ca));
        if (g < 0) { perror("clone3"); _exit(1); }
        if (g == 0) {
            printf("grandchild: pid %d in its namespace, parent's pid %d\n", getpid(), me);
            _exit(loop(h, 48, iters, "grandchild") ? 1 : 0);
        }
        int st; waitpid(g, &st, 0); _exit(0);
    }
    int bad = loop(h, 32, iters, "parent");
    int st; waitpid(a, &st, 0);
    randd_close(h);
    return bad != 0;
}
