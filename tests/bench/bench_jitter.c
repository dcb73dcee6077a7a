/* bench-jitter: CPU time per 256 credited bits of randd's jitter source, beside Debian's
 * jitterentropy-rngd measured the same way on the same machine in the same run.
 *   randd: started with jitter as its only source and a reseed every second, so that it
 *     credits 256 bits or more a second; the figure is the jitter worker's CPU time (STATUS
 *     cpu_seconds) and the whole daemon's (/proc/PID/schedstat), over the credited bits
 *     (STATUS credited_bits), across windows after the start-up test.
 *   jitterentropy-rngd (run as root, -vvv, which keeps it in the foreground and logs every
 *     RNDADDENTROPY with its credit; it tops the kernel up with 256 bits every 5 s): its CPU
 *     time over the bits it credited, across windows after its start-up fill.
 * And full entropy (issue 28): bytes served per CPU-second.
 *   randd: started afresh with jitter alone and no periodic reseed, a client asking for
 *     full-entropy bytes (FE_REQUEST at a time) without pause; the figure is the bytes served
 *     over the whole daemon's CPU time, across windows after the start-up test.
 *   jitterentropy-rngd: the full entropy it gives is what it credits (the rest of what it
 *     writes carries no claim), so its credited bits / 8 over its CPU time, as above.
 * Medians over WINDOWS windows. Usage: bench-jitter [RANDD [JITTERENTROPY_RNGD]]. */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_threads.h"
#include "randd.h"

#define WINDOWS          3
#define RANDD_WINDOW_S   5
#define JENT_WINDOW_S    10      /* it tops the kernel up every 5 s: two top-ups a window */
#define FE_WINDOW_S      10      /* full entropy: a window of requests, one in flight */
#define FE_REQUEST       256     /* bytes: small, so a window ends close to its time */

static void pause_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k] < v[k - 1]; k--) {
            double t = v[k];

            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- randd ------------------------------------------------------------------------------ */

/* A number field of the jitter source in STATUS; -1 when absent. */
static double jitter_field(const char *sock, const char *field)
{
    randd_handle *h;
    char *text = NULL, key[64];
    const char *at;
    double v = -1;

    if (randd_open(&h, sock) < 0)
        return -1;
    if (randd_status(h, &text) >= 0 && (at = strstr(text, "\"name\":\"jitter\""))) {
        snprintf(key, sizeof(key), "\"%s\":", field);
        if ((at = strstr(at, key)))
            v = strtod(at + strlen(key), NULL);
    }
    free(text);
    randd_close(h);
    return v;
}

/* A randd in a directory of its own (dir, made from a template), with jitter as its only
 * source and the config's lines beside; waits for jitter to credit. Returns its pid, or -1. */
static pid_t start_randd(const char *randd, char *dir, const char *extra, char *sock,
                         size_t cap)
{
    char conf[128], logpath[128];
    pid_t pid;
    FILE *f;

    if (!mkdtemp(dir))
        return perror("mkdtemp"), -1;
    snprintf(conf, sizeof(conf), "%s/randd.conf", dir);
    snprintf(sock, cap, "%s/randd.sock", dir);
    snprintf(logpath, sizeof(logpath), "%s/randd.log", dir);
    if (!(f = fopen(conf, "w")))
        return perror(conf), -1;
    fprintf(f, "cpu_source = no\ngetrandom = no\nhwrng = no\njitter = yes\nkernel_topup = no\n%s",
            extra);
    fclose(f);
    if ((pid = fork()) == 0) {
        int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (log >= 0)
            dup2(log, STDERR_FILENO);
        execl(randd, randd, "--foreground", "--config", conf, "--socket", sock, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600 && jitter_field(sock, "credited_bits") <= 0; i++)
        pause_s(0.1);                    /* polling: up to a minute for the start-up test */
    if (jitter_field(sock, "credited_bits") <= 0) {
        fprintf(stderr, "bench-jitter: randd's jitter source credited nothing; see %s\n", logpath);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static void stop_randd(pid_t pid, const char *dir)
{
    char path[128];

    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    snprintf(path, sizeof(path), "%s/randd.conf", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/randd.log", dir);
    unlink(path);
    rmdir(dir);
}

static int bench_randd(const char *randd, double *worker_per_256, double *daemon_per_256)
{
    char dir[] = "/tmp/randd-bench-jitter-XXXXXX", sock[128];
    double w[WINDOWS], d[WINDOWS];
    pid_t pid = start_randd(randd, dir, "reseed_interval = 1\n", sock, sizeof(sock));

    if (pid < 0)
        return -1;
    for (int i = 0; i < WINDOWS; i++) {
        double bits0 = jitter_field(sock, "credited_bits"), cpu0 = jitter_field(sock, "cpu_seconds");
        double all0 = threads_cpu_seconds(pid), bits;

        pause_s(RANDD_WINDOW_S);
        bits = jitter_field(sock, "credited_bits") - bits0;
        w[i] = (jitter_field(sock, "cpu_seconds") - cpu0) / bits * 256;
        d[i] = (threads_cpu_seconds(pid) - all0) / bits * 256;
    }
    stop_randd(pid, dir);
    *worker_per_256 = median(w, WINDOWS);
    *daemon_per_256 = median(d, WINDOWS);
    return 0;
}

static double seconds_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Full-entropy bytes served per CPU-second of the whole daemon, while a client asks for them
 * without pause. */
static int bench_randd_full(const char *randd, double *bytes_per_cpu_s)
{
    char dir[] = "/tmp/randd-bench-jitter-XXXXXX", sock[128];
    static uint8_t buf[FE_REQUEST];
    double v[WINDOWS];
    randd_handle *h;
    pid_t pid = start_randd(randd, dir, "", sock, sizeof(sock));
    int rc = 0;

    if (pid < 0)
        return -1;
    if ((rc = randd_open(&h, sock)) < 0) {
        fprintf(stderr, "bench-jitter: %s: %s\n", sock, randd_strerror(rc));
        stop_randd(pid, dir);
        return -1;
    }
    randd_set_timeout(h, 120000);
    for (int i = 0; i < WINDOWS && rc == 0; i++) {
        double start = seconds_now(), cpu0 = threads_cpu_seconds(pid), bytes = 0;

        while (rc == 0 && seconds_now() - start < FE_WINDOW_S)
            if ((rc = randd_bytes_mode(h, buf, sizeof(buf), RANDD_MODE_FULL_ENTROPY)) == 0)
                bytes += sizeof(buf);
        v[i] = bytes / (threads_cpu_seconds(pid) - cpu0);
    }
    if (rc < 0)
        fprintf(stderr, "bench-jitter: full entropy: %s%s%s\n", randd_strerror(rc),
                *randd_message(h) ? ": " : "", randd_message(h));
    randd_close(h);
    stop_randd(pid, dir);
    if (rc < 0)
        return -1;
    *bytes_per_cpu_s = median(v, WINDOWS);
    return 0;
}

/* --- jitterentropy-rngd ------------------------------------------------------------------- */

/* Bytes of entropy credited in the log lines read so far ("... an entropy count of N bytes
 * of entropy"); *filled turns true once its start-up fill is written. */
static void read_jent_log(FILE *log, double *credited_bits, int *filled)
{
    char line[512];
    const char *at;

    while (fgets(line, sizeof(line), log)) {
        if ((at = strstr(line, "an entropy count of ")))
            *credited_bits += 8 * atof(at + strlen("an entropy count of "));
        if (strstr(line, "bytes written to /dev/random"))
            *filled = 1;
    }
    clearerr(log);
}

static int bench_jent(const char *jent, double *per_256)
{
    char logpath[] = "/tmp/randd-bench-jent-XXXXXX";
    double v[WINDOWS], bits = 0;
    int fd = mkstemp(logpath), filled = 0;
    pid_t pid;
    FILE *log;

    if (fd < 0 || !(log = fopen(logpath, "r")))
        return perror("bench-jitter: log"), -1;
    if ((pid = fork()) == 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        /* Line-buffered, or its log reaches the file only at exit. */
        execlp("stdbuf", "stdbuf", "-oL", jent, "-v", "-v", "-v", (char *)NULL);
        _exit(127);
    }
    close(fd);
    for (int i = 0; i < 600 && !filled; i++) {
        pause_s(0.1);                    /* polling: its start-up fill takes a moment */
        read_jent_log(log, &bits, &filled);
    }
    for (int i = 0; i < WINDOWS && filled; i++) {
        double bits0 = bits, cpu0 = threads_cpu_seconds(pid);

        pause_s(JENT_WINDOW_S);
        read_jent_log(log, &bits, &filled);
        v[i] = bits > bits0 ? (threads_cpu_seconds(pid) - cpu0) / (bits - bits0) * 256 : -1;
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fclose(log);
    unlink(logpath);
    if (!filled) {
        fprintf(stderr, "bench-jitter: %s wrote no entropy within a minute\n", jent);
        return -1;
    }
    *per_256 = median(v, WINDOWS);
    return 0;
}

int main(int argc, char **argv)
{
    const char *randd = argc > 1 ? argv[1] : "build/randd";
    const char *jent = argc > 2 ? argv[2] : "/usr/sbin/jitterentropy-rngd";
    double worker, daemon, theirs = 0, full = 0;
    int have_jent = 0, have_full, missed = 0;

    if (bench_randd(randd, &worker, &daemon) < 0)
        return 1;
    have_full = bench_randd_full(randd, &full) == 0;
    if (geteuid() != 0)
        printf("bench-jitter: jitterentropy-rngd skipped: it must run as root\n");
    else if (access(jent, X_OK) != 0)
        printf("bench-jitter: jitterentropy-rngd skipped: %s: %s\n", jent, strerror(errno));
    else
        have_jent = bench_jent(jent, &theirs) == 0;
    printf("bench-jitter: CPU time per 256 credited bits, median of %d windows\n", WINDOWS);
    printf("  randd jitter worker        %8.3f ms\n", worker * 1e3);
    printf("  randd, whole daemon        %8.3f ms   (conditioning, health tests, reseeds)\n",
           daemon * 1e3);
    if (have_jent) {
        printf("  jitterentropy-rngd         %8.3f ms   (%s -vvv)\n", theirs * 1e3, jent);
        printf("  randd / jitterentropy-rngd %8.3f      (target <= 0.5: %s)\n", daemon / theirs,
               daemon / theirs <= 0.5 ? "ok" : "MISS");
        missed += daemon / theirs > 0.5;
    }
    printf("bench-jitter: full-entropy bytes per CPU-second, median of %d windows\n", WINDOWS);
    if (have_full)
        printf("  randd, whole daemon        %8.1f B    (bytes --full-entropy, %d B requests)\n",
               full, FE_REQUEST);
    else
        printf("  randd                      not measured (above)\n");
    if (have_jent)
        /* its credit is its output's full entropy: 256 bits credited per theirs seconds */
        printf("  jitterentropy-rngd         %8.1f B    (credited bits / 8)\n", 32 / theirs);
    if (have_jent && have_full)
        printf("  randd / jitterentropy-rngd %8.3f      (higher is better)\n",
               full / (32 / theirs));
    return missed ? 1 : 0;
}
