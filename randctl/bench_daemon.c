/* randctl benchmark's rows about the daemon itself rather than a request's bytes: what it
 * is (its mode and engine), many clients at once, its serving loops (a randd started here with workers = 1 and 2), what it
 * costs (CPU per request, resident memory, read from its /proc) and how many system calls a
 * librandd request makes; with the targets for the last two. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "json.h"
#include "output_file.h"
#include "syscall_count.h"

/* --- what the daemon is ------------------------------------------------------------------- */

static void copy_status_value(const struct json_flat *j, const char *path, char *out, size_t cap)
{
    const char *v = json_get(j, path);

    snprintf(out, cap, "%s", v && strcmp(v, "null") ? v : "");
}

void daemon_identity_rows(randd_handle *h, struct daemon_identity *id)
{
    struct json_flat j = { 0 };
    char *text = NULL;

    *id = (struct daemon_identity){ "", "", "" };
    if (randd_status(h, &text) >= 0 && json_flatten(text, &j) == 0) {
        copy_status_value(&j, "mode", id->mode, sizeof(id->mode));
        copy_status_value(&j, "pool.engine", id->engine, sizeof(id->engine));
        copy_status_value(&j, "pool.drbg.mechanism", id->drbg, sizeof(id->drbg));
    }
    json_flat_free(&j);
    free(text);
    if (id->mode[0])
        bench_record("daemon", id->mode, 0, "mode", "", 1);
    if (id->engine[0])
        bench_record("daemon", id->engine, 0, "engine", "", 1);
}

/* --- concurrent clients ------------------------------------------------------------------- */

struct client {
    pthread_t thread;
    struct randd_ctx ctx;
    double end;
    uint64_t requests, errors;
    struct histogram hist;
    uint8_t out[32];
};

static void *client_run(void *arg)
{
    struct client *c = arg;

    while (bench_now() < c->end) {
        double t0 = bench_now();

        if (op_randd(&c->ctx, 32) < 0) {
            c->errors++;
            close(c->ctx.conn.fd);
            if (conn_open(&c->ctx.conn) < 0)
                break;
            continue;
        }
        hist_add(&c->hist, (bench_now() - t0) * 1e9);
        c->requests++;
    }
    return NULL;
}

/* n clients at once for seconds: returns the aggregate requests a second (NAN on failure),
 * and records it, p99.9 and errors as "randd xN" when asked. */
double run_clients(unsigned n, double seconds, bool record_them)
{
    struct client *clients = calloc(n, sizeof(*clients));
    struct histogram *all = calloc(1, sizeof(*all));
    uint64_t requests = 0, errors = 0;
    double start, elapsed, aggregate = NAN;
    char *name;

    unsigned opened = 0, started = 0;

    if (bench_failing() || !clients || !all) {
        bench_failure("clients", -ENOMEM);
        goto out;
    }
    for (; opened < n; opened++) {
        int rc = conn_open(&clients[opened].ctx.conn);

        if (rc < 0) {
            bench_failure("connect", rc);
            goto out;
        }
        clients[opened].ctx.out = clients[opened].out;
        clients[opened].ctx.depth = 1;
    }
    start = bench_now();
    for (; started < n; started++) {
        clients[started].end = start + seconds;
        if (pthread_create(&clients[started].thread, NULL, client_run, &clients[started]) != 0) {
            bench_failure("threads", -EAGAIN);
            break;
        }
    }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(clients[i].thread, NULL);
        requests += clients[i].requests;
        errors += clients[i].errors;
        hist_merge(all, &clients[i].hist);
    }
    elapsed = bench_now() - start;
    aggregate = errors ? NAN : (double)requests / elapsed;
    if (!record_them)
        goto out;
    if (!bench_failing() && asprintf(&name, "randd x%u", n) < 0)
        bench_failure("clients", -ENOMEM);
    if (!bench_failing()) {
        bench_record("clients", name, 32, "aggregate", "req/s", (double)requests / elapsed);
        bench_record("clients", name, 32, "p99.9", "us", hist_percentile(all, 99.9) / 1e3);
        bench_record("clients", name, 32, "errors", "", (double)errors);
    }
out:
    for (unsigned i = 0; i < opened; i++)
        if (clients[i].ctx.conn.fd >= 0)
            close(clients[i].ctx.conn.fd);
    free(clients);
    free(all);
    return aggregate;
}

/* --- serving loops: the same randd with workers = 1 and with workers = 2 ---------------------
 * Both daemons run at once from a directory of their own (kernel_topup = no: no privilege
 * needed), and the rows are taken in turns, REPS times, so a noisy neighbour slows both
 * alike and the ratio of the medians holds. */

struct started {
    pid_t pid;
    char dir[40], sock[96];
};

static void remove_in(const char *dir, const char *name)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

static void stop_started(struct started *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        waitpid(d->pid, NULL, 0);
    }
    d->pid = 0;
    if (!d->dir[0])
        return;
    remove_in(d->dir, "randd.conf");
    remove_in(d->dir, "log");
    remove_in(d->dir, "randd.sock");
    rmdir(d->dir);
    d->dir[0] = '\0';
}

/* Waits until it answers STATUS ready, for up to 30 s. */
static int wait_ready(const struct started *d)
{
    for (double end = bench_now() + 30; bench_now() < end; usleep(20000)) {
        randd_handle *h;
        char *json = NULL;
        bool ready = false;

        if (randd_open(&h, d->sock) < 0)
            continue;
        if (randd_status(h, &json) > 0)
            ready = strstr(json, "\"ready\":true") != NULL;
        free(json);
        randd_close(h);
        if (ready)
            return 0;
    }
    return -ETIMEDOUT;
}

static int start_randd(const char *randd, unsigned workers, struct started *d)
{
    char dir[] = "/tmp/randctl-bench-XXXXXX", conf[128], log[128];
    FILE *f;
    int fd;

    if (!mkdtemp(dir))
        return -errno;
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    snprintf(conf, sizeof(conf), "%s/randd.conf", dir);
    snprintf(log, sizeof(log), "%s/log", dir);
    snprintf(d->sock, sizeof(d->sock), "%s/randd.sock", dir);
    /* The directory is ours (mkdtemp, 0700), and its files are created, never adopted. */
    if ((fd = randd_output_create_new(conf, O_WRONLY, 0600)) < 0)
        return fd;
    if (!(f = fdopen(fd, "w"))) {
        close(fd);
        return -errno;
    }
    fprintf(f, "workers = %u\nkernel_topup = no\n", workers);
    if (fclose(f) != 0)
        return -errno;
    if ((d->pid = fork()) < 0)
        return -errno;
    if (d->pid == 0) {
        fd = randd_output_create_new(log, O_WRONLY, 0600);
        if (fd >= 0)
            dup2(fd, STDERR_FILENO);
        execl(randd, randd, "--foreground", "--config", conf, "--socket", d->sock,
              (char *)NULL);
        _exit(127);
    }
    return wait_ready(d);
}

void compare_workers(const struct options *o)
{
    static const unsigned loops[2] = { 1, 2 }, nclients[2] = { 1, 64 };
    struct started d[2] = { { 0 }, { 0 } };
    double rates[2][2][REPS];
    static char names[2][2][40];       /* results keep a pointer to their method's name */
    int rc = 0;

    bench_progress("workers: %s with workers = 1 and 2, 1 and 64 clients", o->compare_workers);
    for (int w = 0; w < 2 && rc == 0; w++)
        if ((rc = start_randd(o->compare_workers, loops[w], &d[w])) < 0)
            bench_failure(o->compare_workers, rc);
    for (int rep = 0; rep < REPS && !bench_failing(); rep++)
        for (int w = 0; w < 2; w++)
            for (int c = 0; c < 2; c++) {
                conn_use_socket(d[w].sock);
                rates[w][c][rep] = run_clients(nclients[c], o->seconds, false);
                conn_use_socket(NULL);
            }
    for (int w = 0; w < 2; w++)
        stop_started(&d[w]);
    for (int w = 0; w < 2 && !bench_failing(); w++)
        for (int c = 0; c < 2; c++) {
            snprintf(names[w][c], sizeof(names[w][c]), "randd workers=%u x%u", loops[w],
                     nclients[c]);
            bench_record("workers", names[w][c], 32, "aggregate", "req/s",
                         bench_median(rates[w][c], REPS));
        }
}

/* --- the daemon's own cost: CPU per request and resident memory ---------------------------
 * Read from outside, so they hold for any randd: the daemon's pid from the connection's
 * SO_PEERCRED, its CPU from /proc/PID/task/TID/schedstat (every thread's time on a CPU, in
 * ns, kernel time and the wake-ups it is charged for included), its memory from
 * /proc/PID/status. CPU per request is taken with COST_CLIENTS clients at once, so the daemon
 * is kept busy and does not sleep between requests (an idle vCPU's slow wake-up is charged to
 * the thread that slept: a lone ping-pong client shows that, not randd's work). A daemon in
 * another PID namespace (pid 0) or whose /proc cannot be read gets no rows. */

#define COST_CLIENTS 4
#define COST_METHOD  "randd x4"      /* COST_CLIENTS' row name */
#define CROWD_CLIENTS 64             /* and a crowd's, at 32 B, the concurrency section's size */
#define CROWD_METHOD  "randd x64"
#define CPU_TARGET_4K_US 1.5
#define IDLE_RSS_TARGET_MIB 4.0
#define PEAK_RSS_TARGET_MIB 8.0

static const size_t cost_sizes[] = { 32, 4096, MIB };

struct cost_client {
    pthread_t thread;
    struct randd_ctx ctx;
    size_t size;
    double end;
    uint64_t requests;
    int err;
};

static long daemon_status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    size_t len = strlen(field);
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (!(f = fopen(path, "re")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, field, len) && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    fclose(f);
    return kb;
}

/* Every thread's CPU time so far, in ns; -1 when /proc/PID/task cannot be read. */
static int64_t daemon_cpu_ns(pid_t pid)
{
    char path[64];
    struct dirent *e;
    int64_t total = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if (!(d = opendir(path)))
        return -1;
    while ((e = readdir(d))) {
        char file[384];
        unsigned long long ns;
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(file, sizeof(file), "%s/%s/schedstat", path, e->d_name);
        if (!(f = fopen(file, "re")))
            continue;                 /* the thread ended meanwhile: its time went with it */
        if (fscanf(f, "%llu", &ns) == 1)
            total += (int64_t)ns;
        fclose(f);
    }
    closedir(d);
    return total;
}

/* A daemon just started is still settling: its sources' start-up assessments run after it is
 * ready, and each ends by handing start-up's code pages back (daemon/footprint.c), so its RSS
 * falls by a megabyte or more in the first seconds. Idle RSS is taken once it has held still
 * for SETTLED_MS, sampled every SAMPLE_MS, or after SETTLE_MAX_MS whatever it does. */
#define SAMPLE_MS 100
#define SETTLED_MS 1500
#define SETTLE_MAX_MS 20000

static long settled_rss_kb(pid_t pid)
{
    const struct timespec pause = { 0, SAMPLE_MS * 1000000L };
    long rss = daemon_status_kb(pid, "VmRSS"), last = rss;
    int still_ms = 0;

    for (int waited = 0; rss >= 0 && still_ms < SETTLED_MS && waited < SETTLE_MAX_MS;
         waited += SAMPLE_MS) {
        nanosleep(&pause, NULL);
        rss = daemon_status_kb(pid, "VmRSS");
        still_ms = rss == last ? still_ms + SAMPLE_MS : 0;
        last = rss;
    }
    return rss;
}

/* The daemon at the other end of fd, if this process can see its /proc; and its RSS once
 * settled (above). */
void daemon_cost_begin(struct daemon_cost *c, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    long rss;

    c->pid = 0;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
        return;
    if (daemon_cpu_ns(cred.pid) < 0 || (rss = settled_rss_kb(cred.pid)) < 0)
        return;
    c->pid = cred.pid;
    c->idle_rss_mib = (double)rss / 1024;
}

static void *cost_client_run(void *arg)
{
    struct cost_client *c = arg;

    while (bench_now() < c->end && c->err == 0) {
        c->err = op_randd(&c->ctx, c->size);
        c->requests += c->err == 0;
    }
    return NULL;
}

/* The daemon's CPU per request of size, in us, over clients at once for seconds; NAN when a
 * client failed. */
static double cpu_per_request(pid_t pid, unsigned clients, size_t size, double seconds)
{
    struct cost_client *c = calloc(clients, sizeof(*c));   /* 64 KiB each: not the stack */
    uint64_t requests = 0;
    int64_t before, after;
    unsigned started = 0;
    int err = 0;

    if (!c) {
        bench_failure("daemon CPU per request", -ENOMEM);
        return NAN;
    }
    for (unsigned i = 0; i < clients; i++)
        c[i].ctx.conn.fd = -1;          /* closed below whether or not it was opened */
    for (unsigned i = 0; i < clients && err == 0; i++) {
        c[i].size = size;
        c[i].ctx.depth = 1;
        if (!(c[i].ctx.out = malloc(size)))
            err = -ENOMEM;
        else
            err = conn_open(&c[i].ctx.conn);
    }
    before = daemon_cpu_ns(pid);
    for (double end = bench_now() + seconds; err == 0 && started < clients; started++) {
        c[started].end = end;
        if (pthread_create(&c[started].thread, NULL, cost_client_run, &c[started]) != 0) {
            err = -EAGAIN;
            break;                      /* none to join at this one */
        }
    }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(c[i].thread, NULL);
        requests += c[i].requests;
        if (c[i].err)
            err = c[i].err;
    }
    after = daemon_cpu_ns(pid);
    for (unsigned i = 0; i < clients; i++) {
        if (c[i].ctx.conn.fd >= 0)
            close(c[i].ctx.conn.fd);
        free(c[i].ctx.out);
    }
    free(c);
    if (err < 0) {
        bench_failure("daemon CPU per request", err);
        return NAN;
    }
    return requests && before >= 0 && after >= before ? (after - before) / 1e3 / requests : NAN;
}

/* One row "daemon CPU": the median of REPS runs. */
static void daemon_cpu_row(const struct options *o, const struct daemon_cost *c,
                           unsigned clients, const char *method, size_t size)
{
    double us[REPS];

    bench_progress("daemon CPU per %zu B request, %u clients", size, clients);
    for (int rep = 0; rep < REPS && !bench_failing(); rep++)
        us[rep] = cpu_per_request(c->pid, clients, size, o->seconds / 2);
    if (!bench_failing())
        bench_record("daemon CPU", method, size, "per request", "us", bench_median(us, REPS));
}

/* Whether --clients asks for a crowd: its connections are then wanted anyway (a daemon with
 * a smaller max_clients refuses them, and the benchmark says so). */
static bool crowd_asked(const struct options *o)
{
    for (size_t i = 0; i < o->nclients; i++)
        if (o->clients[i] == CROWD_CLIENTS)
            return true;
    return false;
}

/* Rows "daemon CPU": COST_METHOD per size, then CROWD_METHOD at 32 B. */
void daemon_cpu_rows(const struct options *o, const struct daemon_cost *c)
{
    for (size_t i = 0; i < sizeof(cost_sizes) / sizeof(cost_sizes[0]) && c->pid; i++)
        daemon_cpu_row(o, c, COST_CLIENTS, COST_METHOD, cost_sizes[i]);
    if (c->pid && crowd_asked(o))
        daemon_cpu_row(o, c, CROWD_CLIENTS, CROWD_METHOD, 32);
}

/* How many progress steps daemon_cpu_rows takes: none where the daemon cannot be seen. */
int daemon_cpu_steps(const struct options *o, const struct daemon_cost *c)
{
    return c->pid ? (int)(sizeof(cost_sizes) / sizeof(cost_sizes[0])) + crowd_asked(o) : 0;
}

/* Rows "memory": RSS before the first request and the daemon's peak (VmHWM) after the last. */
void daemon_memory_rows(const struct daemon_cost *c)
{
    long hwm = c->pid ? daemon_status_kb(c->pid, "VmHWM") : -1;

    if (!c->pid || hwm < 0)
        return;
    bench_record("memory", "randd", 0, "idle RSS", "MiB", c->idle_rss_mib);
    bench_record("memory", "randd", 0, "peak RSS", "MiB", (double)hwm / 1024);
}

int daemon_cost_targets(void)
{
    double cpu4k = bench_value_of("daemon CPU", COST_METHOD, 4096, "per request");
    double idle = bench_value_of("memory", "randd", 0, "idle RSS");
    double peak = bench_value_of("memory", "randd", 0, "peak RSS");
    int missed = 0;

    if (isnan(idle)) {
        printf("  --   daemon CPU and memory: the daemon's /proc cannot be read from here\n");
        return 0;
    }
    missed += !(cpu4k <= CPU_TARGET_4K_US);
    printf("  %-4s daemon CPU: %.2f us per 4 KiB request, %d clients at once (<= %.1f us)\n",
           cpu4k <= CPU_TARGET_4K_US ? "ok" : "MISS", cpu4k, COST_CLIENTS, CPU_TARGET_4K_US);
    missed += !(idle <= IDLE_RSS_TARGET_MIB);
    printf("  %-4s memory: idle RSS %.1f MiB (<= %.0f MiB)\n",
           idle <= IDLE_RSS_TARGET_MIB ? "ok" : "MISS", idle, IDLE_RSS_TARGET_MIB);
    missed += !(peak <= PEAK_RSS_TARGET_MIB);
    printf("  %-4s memory: peak RSS (VmHWM) %.1f MiB (<= %.0f MiB)\n",
           peak <= PEAK_RSS_TARGET_MIB ? "ok" : "MISS", peak, PEAK_RSS_TARGET_MIB);
    return missed;
}

/* --- system calls per request -------------------------------------------------------------
 * What a librandd request costs the caller in system calls (issue 38: one send and one
 * receive), counted by the kernel for this thread alone (internal/syscall_count.c): a perf
 * counter on raw_syscalls:sys_enter, so nothing slows the calls as strace would. Over a
 * connection of its own, warmed by one call (the connect and the first call's setup are not
 * a request's), with no timeout and with one of 2 s ("t=2s", the in-process generator's;
 * SO_RCVTIMEO is set at the first call). Where perf events are not permitted the rows are
 * left out, and stderr says why. */

#define SYSCALL_CALLS 1000

/* false when the calls cannot be counted here (stderr says why once). */
static bool syscall_rows(randd_handle *h, const char *method, uint8_t *out)
{
    static const size_t counted_sizes[] = { 32, 4096 };
    struct syscall_counter c;
    char why[256];
    uint64_t calls;
    int rc = 0;

    for (size_t i = 0; i < sizeof(counted_sizes) / sizeof(counted_sizes[0]) && rc == 0; i++) {
        size_t size = counted_sizes[i];

        if ((rc = randd_bytes(h, out, size)) < 0)
            break;
        if ((rc = syscall_counter_start(&c, -1, why, sizeof(why))) < 0) {
            fprintf(stderr, "randctl: benchmark: no system call rows: %s\n", why);
            return false;
        }
        for (int n = 0; n < SYSCALL_CALLS && rc == 0; n++)
            rc = randd_bytes(h, out, size);
        if (syscall_counter_stop(&c, &calls) == 0 && rc == 0)
            bench_record("syscalls", method, size, "per call", "calls",
                         (double)calls / SYSCALL_CALLS);
    }
    if (rc < 0)
        bench_failure("system calls per request", rc);
    return true;
}

void syscalls_per_request(uint8_t *out)
{
    randd_handle *h;
    int rc;

    bench_progress("system calls per randd_bytes(): 32 B and 4 KiB, without and with a timeout");
    if ((rc = randd_open(&h, daemon_socket())) < 0) {
        bench_failure("system calls per request", rc);
        return;
    }
    if (syscall_rows(h, "randd_bytes()", out)) {
        randd_set_timeout(h, 2000);
        syscall_rows(h, "randd_bytes() t=2s", out);
    }
    randd_close(h);
}

/* The target for them: one send and one receive. */
void syscall_targets(int *missed)
{
    double per = bench_value_of("syscalls", "randd_bytes()", 4096, "per call");
    bool ok = per <= 2.0;

    if (isnan(per))
        return;
    *missed += !ok;
    printf("  %-4s syscalls: randd_bytes() 4 KiB = %.2f system calls per request (<= 2: one "
           "send, one receive)\n", ok ? "ok" : "MISS", per);
}

