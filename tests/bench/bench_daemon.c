/* bench-daemon: the idle daemon's targets. Starts build/randd (or $RANDD) with a NOTIFY_SOCKET
 * of its own and measures the time to READY=1, RSS when idle, wakeups (context switches of all
 * its threads) per second over an idle stretch, and RSS with 1,000 idle clients connected.
 * The config is the default but for jitter = yes, so the idle figures include its worker,
 * and workers = N with --workers N (the idle serving loops must cost nothing either).
 * Usage: bench-daemon [--idle-seconds S] [--clients N] [--workers N]. Exits 1 when a target
 * is missed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_threads.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A field of /proc/PID/status, in its own units (kB for VmRSS). */
static long proc_status(pid_t pid, const char *field)
{
    char path[64], line[256];
    long value = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, field, strlen(field)) && line[strlen(field)] == ':')
            value = strtol(line + strlen(field) + 1, NULL, 10);
    fclose(f);
    return value;
}

static int connect_to(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    strcpy(sa.sun_path, path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    const char *randd = getenv("RANDD") ? getenv("RANDD") : "build/randd";
    double idle_seconds = 30, t0, ready_ms;
    int nclients = 1000, missed = 0, notify_fd, *fds, workers = 1;
    char dir[] = "/tmp/randd-bench-XXXXXX", notify[128], sock[128], conf[128], logpath[128];
    char msg[512];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct rlimit rl;
    long rss_idle, rss_clients, w0, w1;
    pid_t pid;
    FILE *f;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--idle-seconds"))
            idle_seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients"))
            nclients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--workers"))
            workers = atoi(argv[i + 1]);
    }
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 2;
    snprintf(notify, sizeof(notify), "%s/notify", dir);
    snprintf(sock, sizeof(sock), "%s/randd.sock", dir);
    snprintf(conf, sizeof(conf), "%s/randd.conf", dir);
    snprintf(logpath, sizeof(logpath), "%s/randd.log", dir);
    if (!(f = fopen(conf, "w")))
        return perror(conf), 2;
    fputs("jitter = yes\n", f);                 /* every other key at its default: an idle */
    fprintf(f, "workers = %d\n", workers);      /* jitter source must cost no wakeups */
    fclose(f);
    strcpy(sa.sun_path, notify);
    notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return perror("notify socket"), 2;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;                   /* nclients descriptors here too */
    setrlimit(RLIMIT_NOFILE, &rl);

    t0 = now();
    pid = fork();
    if (pid == 0) {
        int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (log >= 0)
            dup2(log, STDERR_FILENO);
        setenv("NOTIFY_SOCKET", notify, 1);
        execl(randd, randd, "--foreground", "--config", conf, "--socket", sock, (char *)NULL);
        _exit(127);
    }
    for (;;) {
        struct pollfd pf = { notify_fd, POLLIN, 0 };
        ssize_t n;

        if (poll(&pf, 1, 10000) != 1) {
            fprintf(stderr, "bench-daemon: no READY=1 within 10 s; see %s\n", logpath);
            kill(pid, SIGTERM);
            return 2;
        }
        n = recv(notify_fd, msg, sizeof(msg) - 1, 0);
        msg[n > 0 ? n : 0] = '\0';
        if (strstr(msg, "READY=1"))
            break;
    }
    ready_ms = (now() - t0) * 1e3;

    sleep(5);           /* past the start-up tests (hwrng answers 64 bytes a read: seconds) */
    rss_idle = proc_status(pid, "VmRSS");
    w0 = threads_wakeups(pid);
    usleep((useconds_t)(idle_seconds * 1e6));
    w1 = threads_wakeups(pid);

    fds = calloc((size_t)nclients, sizeof(*fds));
    for (int i = 0; i < nclients; i++)
        if ((fds[i] = connect_to(sock)) < 0) {
            fprintf(stderr, "bench-daemon: client %d: %s\n", i, strerror(errno));
            return 2;
        }
    sleep(1);
    rss_clients = proc_status(pid, "VmRSS");
    for (int i = 0; i < nclients; i++)
        close(fds[i]);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    unlink(notify);
    unlink(conf);
    unlink(logpath);
    rmdir(dir);

    printf("bench-daemon: %s, default config but jitter = yes, workers = %d\n", randd, workers);
    printf("  ready after            %8.1f ms       (target <= 100 ms with RDSEED)\n", ready_ms);
    printf("  idle RSS               %8.1f MiB      (target <= 8 MiB)\n", rss_idle / 1024.0);
    printf("  idle wakeups           %8.3f /s over %.0f s (target <= 0.2/s)\n",
           (double)(w1 - w0) / idle_seconds, idle_seconds);
    printf("  RSS with %d clients  %8.1f MiB      (target <= 32 MiB)\n", nclients, rss_clients / 1024.0);
    missed += ready_ms > 100;
    missed += rss_idle > 8 * 1024;
    missed += (double)(w1 - w0) / idle_seconds > 0.2;
    missed += rss_clients > 32 * 1024;
    if (missed)
        printf("bench-daemon: %d target(s) missed\n", missed);
    return missed ? 1 : 0;
}
