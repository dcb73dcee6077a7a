/* randd's main: the command line, then the modules in the order they come up (config,
 * self-test, sources, pool, kernel feed, event loop, serving loops) and, in reverse, go down.
 *
 * Threads: this one owns the sources, the pool, the kernel feed, EGD, signals and reloads.
 * With workers = 1 it serves protocol v1 clients too, and nothing else runs but the PRIME
 * search thread. With workers > 1, that many worker threads serve them (workers.c), and this
 * thread runs its callbacks under pool_lock, the one lock they share. The kernel feed's two
 * ioctls are made on a thread of their own, the only one with a capability (kernel.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "config.h"
#include "egd.h"
#include "footprint.h"
#include "prime_fermat.h"
#include "kernel.h"
#include "log.h"
#include "loop.h"
#include "memfd_arena.h"
#include "pool.h"
#include "privileges.h"
#include "reload_client.h"
#include "selfcheck.h"
#include "server.h"
#include "source.h"
#include "status.h"
#include "vmgenid.h"
#include "workers.h"
#include "generation.h"

#include <systemd/sd-daemon.h>

#ifndef RANDD_VERSION
#define RANDD_VERSION          "0.1.0"
#endif
#define DEFAULT_CONFIG         "/etc/randd.conf"
#define NOT_READY_RETRY_NS     1000000000ull   /* harvest again while not ready */
#define STARTUP_RETRY_NS       100000000ull    /* while a source's start-up test runs */
#define NOISE_HARVEST_NS       20000000ull     /* while noise requests wait for blocks */
#define KERNEL_EARLY_NS        1000000000ull   /* feed period until the kernel is initialised */
#define SELFTEST_OFF_LOOK_AGAIN_S 60u          /* selftest_interval = 0: look again after */

struct randd {
    struct config config;           /* in effect: restart-only keys as randd started */
    struct config reread;           /* as last read; restart-only keys may wait in it */
    const char *config_path;
    bool config_given;
    const char *socket_override;
    pid_t reload_pid;               /* --reload: the randd to signal; 0: run a daemon */
    struct source sources[POOL_MAX_SOURCES];   /* those open_sources opened, in the pool */
    size_t nsources;
    char cpu_source_absent[256];    /* why the CPU source is not among them; "": it is */
    struct pool pool;
    struct kernel kernel;
    struct listener_clients clients;  /* one max_clients over the server and EGD */
    struct server server;             /* workers > 1: owns the socket, serves nothing */
    struct branch branch;             /* workers = 1: the server's output, the pool itself */
    struct primes *primes;            /* the PRIME search thread, every loop's */
    struct workers workers;           /* workers > 1: the serving loops */
    pthread_mutex_t pool_lock;        /* workers > 1: the pool and what STATUS reads */
    const struct server_stats *loop_stats[CONFIG_WORKERS_MAX];   /* each serving loop's */
    size_t nloops;
    struct egd egd;
    struct vmgenid vmgenid;
    uint64_t kmsg_loss_bumped_ns;         /* the last new generation a kernel log loss made */
    bool kmsg_loss_due;                   /* a loss came within a second of it: one more due */
    struct randd_generation generation;   /* the word beside the socket, for librandd */
    struct loop *loop;
    int signal_fd;                  /* -1 until opened, as admin_fd and noise_fd */
    struct selfcheck selfcheck;     /* the self-tests' runs and the last one's outcome */
    int harvest_timer;              /* the next harvest's timer id */
    bool kernel_only_said;          /* the log last said getrandom alone was credited */
    int admin_fd;                   /* eventfd: a worker ran SELFTEST or INJECT_FAILURE */
    int noise_fd;                   /* eventfd: a request waits for noise blocks: harvest */
    uint64_t noise_completed_seen;  /* pool_noise_completed when waiters were let go */
    bool was_ready;
    uint64_t released_at_unready;     /* pool_times_unready when waiting clients were let go */
    bool notified_ready;
    uint64_t started_ns;
    uint64_t watchdog_ns;           /* half the systemd watchdog interval; 0: none */
    const char *capture_source;     /* --capture: write raw samples and exit */
    unsigned long long capture_count;
    unsigned long long capture_restarts;    /* --restarts: a row dataset; 0: one run */
    const char *capture_output;
    bool capture_force;             /* --force: the output may replace a file of ours */
};

static void usage(FILE *to)
{
    fprintf(to,
            "usage: randd [--config FILE] [--socket PATH] [--foreground] [--check-config]\n"
            "             [--reload PID]\n"
            "             [--capture SOURCE [--restarts R] --count N --output FILE [--force]]\n"
            "             [--version] [--help]\n"
            "  -c, --config FILE   configuration file (default " DEFAULT_CONFIG ";\n"
            "                      built-in defaults when that file does not exist)\n"
            "  -s, --socket PATH   client socket, overriding the config's socket\n"
            "  -f, --foreground    stay in the foreground, log to stderr (randd never forks;\n"
            "                      accepted for init scripts that pass it)\n"
            "      --check-config  validate the configuration (every error) and exit\n"
            "      --reload PID    validate the file the randd running as PID reads (the\n"
            "                      --config on its command line, else the default), then have\n"
            "                      it re-read it (SIGHUP); an invalid file is not sent and\n"
            "                      exits 1 (systemd's ExecReload= runs this)\n"
            "      --capture SOURCE --count N --output FILE\n"
            "                      write N raw samples of SOURCE (cpu, hwrng, jitter or\n"
            "                      getrandom; cpu is the CPU's noise instruction), one per\n"
            "                      byte, for SP 800-90B tools, and exit; a source the config\n"
            "                      turns off (hwrng = no, ...) is refused\n"
            "      --restarts R    with --capture: R rows of N samples, SOURCE opened afresh\n"
            "                      before each row as a start of randd opens it (SP 800-90B\n"
            "                      3.1.4 restart data: --restarts 1000 --count 1000)\n"
            "      --force         with --capture: replace FILE if it is a file of this\n"
            "                      user's (a symlink, a hard link or another user's file\n"
            "                      never is); without it an existing FILE is refused\n"
            "  -V, --version       print the version and exit\n"
            "  -h, --help          print this help and exit\n");
}

/* The command line, once: parse_args reads this one, and randd --reload reads the running
 * daemon's with it (reload_client.c), so the two never disagree on which options take a
 * value or how getopt_long abbreviates --config. */
static const struct option options[] = {
    { "config", required_argument, NULL, 'c' },
    { "socket", required_argument, NULL, 's' },
    { "foreground", no_argument, NULL, 'f' },
    { "check-config", no_argument, NULL, 'C' },
    { "reload", required_argument, NULL, 'L' },
    { "capture", required_argument, NULL, 'R' },
    { "count", required_argument, NULL, 'N' },
    { "restarts", required_argument, NULL, 'T' },
    { "output", required_argument, NULL, 'O' },
    { "force", no_argument, NULL, 'F' },
    { "version", no_argument, NULL, 'V' },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};
#define SHORT_OPTIONS "c:s:fVh"

static const struct reload_options reload_options = {
    .options = options,
    .short_options = SHORT_OPTIONS,
    .config_option = 'c',
    .default_config = DEFAULT_CONFIG,
};

/* Returns -1 to go on, or the exit code. */
static int parse_args(struct randd *r, int argc, char **argv, bool *check_only)
{
    int opt;
    char *end;
    long pid;

    r->config_path = DEFAULT_CONFIG;
    while ((opt = getopt_long(argc, argv, SHORT_OPTIONS, options, NULL)) != -1) {
        switch (opt) {
        case 'c': r->config_path = optarg; r->config_given = true; break;
        case 's': r->socket_override = optarg; break;
        case 'f': break;
        case 'C': *check_only = true; break;
        case 'R':
            if (!capture_is_source(optarg)) {
                fprintf(stderr, "randd: --capture: \"%s\": not a source (%s)\n", optarg,
                        capture_source_list());
                return 2;
            }
            r->capture_source = optarg;
            break;
        case 'N':
            errno = 0;
            r->capture_count = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || *optarg < '0' || *optarg > '9' ||
                r->capture_count == 0) {
                fprintf(stderr, "randd: --count: not a count of samples (1 or more): \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case 'T':
            errno = 0;
            r->capture_restarts = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || *optarg < '0' || *optarg > '9' ||
                r->capture_restarts == 0 || r->capture_restarts > CAPTURE_MAX_RESTARTS) {
                fprintf(stderr, "randd: --restarts: not a number of restarts from 1 to %u: "
                                "\"%s\"\n", CAPTURE_MAX_RESTARTS, optarg);
                return 2;
            }
            break;
        case 'O': r->capture_output = optarg; break;
        case 'F': r->capture_force = true; break;
        case 'L':
            errno = 0;
            pid = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || pid <= 1 || pid != (pid_t)pid) {
                fprintf(stderr, "randd: --reload: not a daemon's process id: \"%s\"\n", optarg);
                return 2;
            }
            r->reload_pid = (pid_t)pid;
            break;
        case 'V': printf("randd %s\n", RANDD_VERSION); return EXIT_SUCCESS;
        case 'h': usage(stdout); return EXIT_SUCCESS;
        default: usage(stderr); return 2;
        }
    }
    if (r->capture_source && (!r->capture_output || r->capture_count == 0)) {
        fprintf(stderr, "randd: --capture needs --count N (N > 0) and --output FILE\n");
        return 2;
    }
    if (r->capture_restarts && !r->capture_source) {
        fprintf(stderr, "randd: --restarts goes with --capture SOURCE\n");
        return 2;
    }
    if (r->capture_force && !r->capture_source) {
        fprintf(stderr, "randd: --force goes with --capture SOURCE (it may replace --output)\n");
        return 2;
    }
    if (*check_only && r->reload_pid) {
        fprintf(stderr, "randd: --check-config and --reload: choose one (--reload checks too)\n");
        usage(stderr);
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "randd: unexpected argument: %s\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* Loads into *out; the socket override wins over the file. Logs every problem the file has,
 * one line each, and returns -1 on error. */
static int load_config(struct randd *r, struct config *out)
{
    char err[4096];

    if (config_load(out, r->config_path, !r->config_given, err, sizeof(err)) < 0) {
        for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n"))
            log_err("%s", line);
        return -1;
    }
    if (r->socket_override) {
        if (strlen(r->socket_override) >= sizeof(out->socket)) {
            log_err("--socket: path longer than %zu bytes", sizeof(out->socket) - 1);
            return -1;
        }
        strcpy(out->socket, r->socket_override);
    }
    return 0;
}

/* --- sources --------------------------------------------------------------------- */

static int run_capture(const struct randd *r)
{
    const char *off = capture_config_turns_off(&r->config, r->capture_source);
    char why[512];
    int rc;

    if (off) {
        log_err("--capture %s: %s turns this source off (%s = no), and a capture reads only "
                "what randd would: set %s = yes there to capture it", r->capture_source,
                r->config_path, off, off);
        return EXIT_FAILURE;
    }
    rc = capture_run(&r->config, r->capture_source, r->capture_count, r->capture_restarts,
                     r->capture_output, r->capture_force, why, sizeof(why));
    if (rc < 0)
        log_err("--capture: %s", why);
    else
        log_notice("captured %s", why);
    return rc < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* jitter = auto runs it only where it is needed: when no other open source may be credited
 * to the kernel (with the feed on), or when there is no other source at all. n sources are
 * open; returns how many are now. */
static size_t open_jitter(struct randd *r, size_t n)
{
    bool creditable = false, needed;
    char why[256];

    for (size_t i = 0; i < n; i++)
        creditable |= r->sources[i].kernel_creditable;
    needed = n == 0 || (r->config.kernel_topup && !creditable);
    if (r->config.jitter == JITTER_NO)
        log_info("source jitter: off (jitter = no)");
    else if (r->config.jitter == JITTER_AUTO && !needed)
        log_info("source jitter: off (jitter = auto, and other sources cover the kernel feed)");
    else if (source_jitter_open(&r->sources[n], r->config.jitter_oversampling, why,
                                sizeof(why)) == 0) {
        log_info("source jitter: on, crediting nothing until its samples are assessed");
        pool_add_source(&r->pool, &r->sources[n++]);
    }
    else
        log_warning("source jitter: disabled: %s", why);
    return n;
}

static void open_sources(struct randd *r)
{
    char why[256];
    size_t n = 0;

    if (!r->config.cpu_source)
        snprintf(r->cpu_source_absent, sizeof(r->cpu_source_absent), "off (%s = no)",
                 r->config.cpu_source_key);
    else if (source_cpu_open(&r->sources[n], r->cpu_source_absent,
                             sizeof(r->cpu_source_absent)) == 0)
        pool_add_source(&r->pool, &r->sources[n++]);
    if (!r->config.cpu_source)
        log_info("source %s: %s", source_cpu_name(), r->cpu_source_absent);
    else if (r->cpu_source_absent[0])
        log_info("source %s: not available: %s", source_cpu_name(), r->cpu_source_absent);
    if (!r->config.getrandom)
        log_info("source getrandom: off (getrandom = no)");
    else if (source_getrandom_open(&r->sources[n], why, sizeof(why)) == 0)
        pool_add_source(&r->pool, &r->sources[n++]);
    if (!r->config.hwrng)
        log_info("source hwrng: off (hwrng = no)");
    else if (source_hwrng_open(&r->sources[n], r->config.hwrng_device, why, sizeof(why)) == 0)
        pool_add_source(&r->pool, &r->sources[n++]);
    else
        log_info("source hwrng: not available: %s", why);
    r->nsources = open_jitter(r, n);
    for (size_t i = 0; i < r->nsources; i++)   /* off the event loop; in with harvests */
        source_assess(&r->sources[i]);
}

/* --- status ------------------------------------------------------------------------ */

/* What status.c reports from: every module's state, read only. */
static struct status_view status_of(const struct randd *r)
{
    return (struct status_view){
        .version = RANDD_VERSION, .started_ns = r->started_ns, .config = &r->config,
        .reread = &r->reread,
        .pool = &r->pool, .kernel = &r->kernel, .clients = &r->clients,
        .loops = r->loop_stats, .nloops = r->nloops, .egd = &r->egd.stats,
        .selfcheck = &r->selfcheck, .vmgenid = &r->vmgenid,
        .cpu_source_name = source_cpu_name(), .cpu_source_absent = r->cpu_source_absent,
    };
}

static char *status_text(void *arg, size_t *len)
{
    struct status_view view = status_of(arg);

    return status_json(&view, loop_now_ns(), len);
}

/* STATUS asked on a worker's loop: the main thread's state is read under its lock. */
static char *status_text_locked(void *arg, size_t *len)
{
    struct randd *r = arg;
    char *text;

    pthread_mutex_lock(&r->pool_lock);
    text = status_text(r, len);
    pthread_mutex_unlock(&r->pool_lock);
    return text;
}

static void log_status(const struct randd *r)
{
    struct status_view view = status_of(r);

    status_log(&view, loop_now_ns());
}

/* Requests that wait for the pool are served: on this loop, the workers' and EGD's. */
static void release_waiting(struct randd *r)
{
    r->released_at_unready = pool_times_unready(&r->pool);
    server_pool_ready(&r->server);
    workers_pool_ready(&r->workers);
    egd_pool_ready(&r->egd);
}

/* One line when getrandom becomes the only credited source (at start, too: the first harvest
 * after every noise source has finished its start-up test and first assessment), and one when
 * a noise source is credited again. */
static void note_kernel_only(struct randd *r)
{
    char why[POOL_NOISE_WHY_BYTES];
    bool kernel_only = pool_kernel_only(&r->pool, why, sizeof(why));

    if (kernel_only == r->kernel_only_said || pool_noise_credit_pending(&r->pool))
        return;
    r->kernel_only_said = kernel_only;
    if (kernel_only)
        log_warning("only the kernel's word: getrandom is the only credited source, so "
                    "randd's output is exactly as unpredictable as the kernel's%s; no noise "
                    "source is credited: %s", r->config.require_noise_source
                        ? " (require_noise_source = yes holds it back)" : "", why);
    else
        log_notice("a noise source is credited again: output no longer rests on the kernel's "
                   "word alone");
}

/* Logs and tells systemd about readiness changes, and releases waiting clients. The pool can
 * also stop being ready and be ready again between two looks from here (a clock jump seen
 * while serving, reseeded at once or by the next harvest): times_unready tells. */
static void note_readiness(struct randd *r)
{
    bool ready = pool_ready(&r->pool);

    note_kernel_only(r);

    if (ready == r->was_ready) {
        if (ready && pool_times_unready(&r->pool) != r->released_at_unready)
            release_waiting(r);
        return;
    }
    r->was_ready = ready;
    if (ready) {
        log_notice("ready: generator seeded from healthy sources, serving on %s",
                   r->server.path);
        sd_notifyf(0, "%sSTATUS=Serving on %s", r->notified_ready ? "" : "READY=1\n",
                   r->server.path);
        r->notified_ready = true;
        release_waiting(r);
        footprint_release_code();         /* start-up's code pages: an idle randd is small */
    } else {
        log_warning("not serving: %s", pool_not_ready_reason(&r->pool));
        sd_notifyf(0, "STATUS=Not serving: %s", pool_not_ready_reason(&r->pool));
    }
}

static void watchdog_timer(void *arg)
{
    struct randd *r = arg;

    sd_notify(0, "WATCHDOG=1");
    loop_add_timer(r->loop, r->watchdog_ns, watchdog_timer, r);
}

/* --- timers ----------------------------------------------------------------------- */

/* A quarantined source is retried at a harvest: the first after its back-off, not up to
 * reseed_interval later. */
static uint64_t sooner_for_a_retry(const struct randd *r, uint64_t next)
{
    uint64_t retry = pool_next_retry_ns(&r->pool), now = loop_now_ns();

    if (retry == UINT64_MAX)
        return next;
    retry = retry > now ? retry - now : 0;
    retry = retry < STARTUP_RETRY_NS ? STARTUP_RETRY_NS : retry;
    return retry < next ? retry : next;
}

/* Requests waiting for noise blocks: those whose blocks came, and all of them when no noise
 * source is left to give any (they are answered NO_NOISE_SOURCE, not left to wait). */
static void release_noise_waiting(struct randd *r)
{
    uint64_t completed;

    if (pool_noise_waiting(&r->pool))
        pool_noise_recheck(&r->pool);
    completed = pool_noise_completed(&r->pool);
    if (completed == r->noise_completed_seen &&
        !(pool_noise_waiting(&r->pool) && !pool_noise_able(&r->pool)))
        return;
    r->noise_completed_seen = completed;
    release_waiting(r);
}

static void harvest_timer(void *arg)
{
    struct randd *r = arg;

    uint64_t next;

    pool_harvest(&r->pool, loop_now_ns());
    note_readiness(r);
    release_noise_waiting(r);
    if (pool_any_starting(&r->pool))
        next = STARTUP_RETRY_NS;
    else if (!r->was_ready)
        next = NOT_READY_RETRY_NS;
    else
        next = r->config.reseed_interval * NS_PER_S;
    next = sooner_for_a_retry(r, next);
    if (pool_noise_wanted(&r->pool) && next > NOISE_HARVEST_NS)
        next = NOISE_HARVEST_NS;         /* cpu and hwrng give at harvests only */
    r->harvest_timer = loop_add_timer(r->loop, next, harvest_timer, r);
}

/* --- self-tests and induced failures -------------------------------------------------- */

/* After a self-test or an induced failure: harvest and judge readiness now rather than at
 * the next timer, which may be reseed_interval away (a resumed pool reseeds first). */
static void harvest_now(struct randd *r)
{
    loop_cancel_timer(r->loop, r->harvest_timer);
    harvest_timer(r);
}

/* selftest_interval is live: at 0 no self-test runs, and the timer looks again in a minute. */
static uint64_t selftest_delay_ns(const struct randd *r)
{
    unsigned interval = r->config.selftest_interval;

    return (interval ? interval : SELFTEST_OFF_LOOK_AGAIN_S) * NS_PER_S;
}

static void selftest_timer(void *arg)
{
    struct randd *r = arg;

    if (r->config.selftest_interval) {
        bool halted = pool_halted(&r->pool);

        selfcheck_run(&r->selfcheck, &r->pool, "periodic");
        if (halted != pool_halted(&r->pool))
            harvest_now(r);
    }
    loop_add_timer(r->loop, selftest_delay_ns(r), selftest_timer, r);
}

/* Root's SELFTEST and INJECT_FAILURE on this loop (workers = 1). */
static int admin_here(void *arg, const struct randd_request *req, char *msg, size_t len)
{
    struct randd *r = arg;
    int status = selfcheck_admin(&r->selfcheck, &r->pool, req, loop_now_ns(), msg, len);

    harvest_now(r);
    return status;
}

/* On a worker's loop: under the pool lock; this thread takes it from there (admin_done). */
static int admin_locked(void *arg, const struct randd_request *req, char *msg, size_t len)
{
    struct randd *r = arg;
    int status;

    pthread_mutex_lock(&r->pool_lock);
    status = selfcheck_admin(&r->selfcheck, &r->pool, req, loop_now_ns(), msg, len);
    pthread_mutex_unlock(&r->pool_lock);
    eventfd_write(r->admin_fd, 1);
    return status;
}

static void admin_done(void *arg, int fd, uint32_t events)
{
    eventfd_t ignored;

    (void)events;
    eventfd_read(fd, &ignored);
    harvest_now(arg);
}

/* A request waits for noise blocks (on any loop): harvest now, which also tells the sources
 * that produce on demand (jitter) to run. */
static void noise_wanted(void *arg)
{
    eventfd_write(((struct randd *)arg)->noise_fd, 1);
}

static void noise_wanted_event(void *arg, int fd, uint32_t events)
{
    eventfd_t ignored;

    (void)events;
    eventfd_read(fd, &ignored);
    harvest_now(arg);
}

static void kernel_timer(void *arg);

/* An on-demand source (jitter) has a batch ready: take it in, and feed the kernel as soon as
 * the material it waits for is complete. */
static void source_ready(void *arg, int fd, uint32_t events)
{
    struct randd *r = arg;
    uint64_t now = loop_now_ns();

    (void)fd;
    (void)events;
    pool_harvest(&r->pool, now);
    note_readiness(r);
    release_noise_waiting(r);
    if (pool_kernel_material_ready(&r->pool))
        kernel_feed(&r->kernel, &r->pool, now);
}

/* A new VM generation, confirmed by the kernel (confirmed: its log line or uevent) or possible
 * (kernel log records lost unread): the pool stops serving the old state first, then clients
 * are told (their in-process generators reseed before their next byte). The order matters: a
 * client that sees the new generation asks a daemon that no longer serves the old state. A
 * confirmed one serves nothing until a reseed from fresh input; a possible one rekeys from
 * getrandom at once and goes on serving (pool_vm_maybe_cloned says why that is enough),
 * except with require_noise_source (mode = approved), where it is taken as confirmed. */
static void new_vm_generation(struct randd *r, bool confirmed)
{
    if (confirmed)
        pool_vm_cloned(&r->pool, loop_now_ns());
    else
        pool_vm_maybe_cloned(&r->pool, loop_now_ns());
    /* Not reseeded from fresh input at once (no source had any): harvest again soon, as
     * before the first seed, not at the timer set while ready, reseed_interval away. */
    harvest_now(r);
    if (r->generation.word)
        randd_generation_bump(r->generation.word);
}

static void vm_generation_announced(struct randd *r, enum vmgenid_kind kind)
{
    if (vmgenid_is_new_change(&r->vmgenid, kind, loop_now_ns()))
        new_vm_generation(r, true);
}

static void vm_uevent(void *arg, int fd, uint32_t events)
{
    struct randd *r = arg;

    (void)fd;
    (void)events;
    for (unsigned n = vmgenid_read(&r->vmgenid); n > 0; n--)
        vm_generation_announced(r, VMGENID_UEVENT);
}

#define KMSG_LOSS_EVERY_NS (1000 * 1000 * 1000ULL)

static void kmsg_loss_bump(void *arg)
{
    struct randd *r = arg;

    r->kmsg_loss_due = false;
    r->kmsg_loss_bumped_ns = loop_now_ns();
    log_warning("kernel log records were overwritten before randd read them: a VM fork "
                "line may be among them, so randd takes it as a possible new VM generation "
                "(rekeyed from getrandom, serving on)");
    new_vm_generation(r, false);
}

/* Records overwritten unread may have held the fork line: missing a fork leaves clones with
 * one state. So a loss is taken as a possible new generation, outside the uevent pairing (it
 * must not absorb a real announcement). A local user who floods the log while randd falls a
 * ring behind can make that happen at most once a second (a loss within a second of the last
 * is served when the second is up, not dropped), so a possible one must not stop output: the
 * generator is rekeyed at once from getrandom, which by the time the fork line is logged
 * gives each clone bytes of its own, and ordinary requests are served on from the new key
 * (pool_vm_maybe_cloned). Only the kernel's own line or uevent stops output until fresh
 * input comes, and, with require_noise_source (mode = approved), a loss too: the kernel's
 * word may not key that generator (docs/vm-clones.md says what a flood then costs). */
static void kmsg_records_lost(struct randd *r)
{
    uint64_t now = loop_now_ns(), since = now - r->kmsg_loss_bumped_ns;

    if (r->kmsg_loss_due)
        return;
    if (!r->kmsg_loss_bumped_ns || since >= KMSG_LOSS_EVERY_NS) {
        kmsg_loss_bump(r);
    } else if (loop_add_timer(r->loop, KMSG_LOSS_EVERY_NS - since, kmsg_loss_bump, r) > 0) {
        r->kmsg_loss_due = true;
    } else {
        kmsg_loss_bump(r);                /* no timer: safety first */
    }
}

static void vm_kernel_log(void *arg, int fd, uint32_t events)
{
    struct randd *r = arg;
    uint64_t lost = r->vmgenid.log_lost;

    (void)fd;
    (void)events;
    for (unsigned n = vmgenid_read_kmsg(&r->vmgenid); n > 0; n--)
        vm_generation_announced(r, VMGENID_KERNEL_LOG);
    if (r->vmgenid.log_lost != lost)
        kmsg_records_lost(r);
}

/* Watches the kernel log and vmgenid's uevents, and publishes the generation word beside the
 * socket. None is needed to serve: without them randd still reseeds when CLOCK_BOOTTIME jumps
 * (a resumed suspend; a snapshot restore need not make it jump). Called while privileged:
 * /dev/kmsg is opened now, and read from later. */
static void watch_vm_generation(struct randd *r)
{
    char path[PATH_MAX], why[PATH_MAX + 160];
    int rc = vmgenid_open_kmsg(&r->vmgenid);

    if (rc < 0)
        log_warning("/dev/kmsg: %s; the kernel's \"virtual machine fork\" line is not watched, "
                    "and on kernels without the NEW_VMGENID uevent a snapshot restore is "
                    "noticed only if the clock jumps",
                    rc == -ENOTTY ? "not the kernel's log device (character 1:11)"
                                  : strerror(-rc));
    else if ((rc = loop_add_fd(r->loop, r->vmgenid.kmsg_fd, EPOLLIN, vm_kernel_log, r)) < 0)
        log_warning("/dev/kmsg: %s", strerror(-rc));
    if ((rc = vmgenid_open(&r->vmgenid)) < 0)
        log_warning("VM generation uevents: %s", strerror(-rc));
    else if ((rc = loop_add_fd(r->loop, r->vmgenid.fd, EPOLLIN, vm_uevent, r)) < 0)
        log_warning("VM generation uevents: %s", strerror(-rc));
    if ((rc = randd_generation_path(r->server.path, path, sizeof(path))) < 0)
        log_warning("%s.generation: %s; clients' in-process generators will not learn of VM "
                    "clones", r->server.path, strerror(-rc));
    else if (randd_generation_publish(&r->generation, path, why, sizeof(why)) < 0)
        log_warning("%s; clients' in-process generators will not learn of VM clones", why);
}

static int watch_sources(struct randd *r)
{
    int rc = 0;

    for (size_t i = 0; i < r->nsources && rc == 0; i++)
        if (r->sources[i].wake_fd >= 0)
            rc = loop_add_fd(r->loop, r->sources[i].wake_fd, EPOLLIN, source_ready, r);
    return rc;
}

static void schedule_kernel_feed(struct randd *r)
{
    if (!kernel_enabled(&r->kernel))
        return;
    if (!kernel_initialised(&r->kernel))
        loop_add_timer(r->loop, KERNEL_EARLY_NS, kernel_timer, r);
    else if (r->config.kernel_topup_interval)
        loop_add_timer(r->loop, r->config.kernel_topup_interval * NS_PER_S, kernel_timer, r);
}

static void kernel_timer(void *arg)
{
    struct randd *r = arg;

    kernel_feed(&r->kernel, &r->pool, loop_now_ns());
    schedule_kernel_feed(r);
}

/* /dev/random turns readable when the kernel's generator is initialised. */
static void kernel_readable(void *arg, int fd, uint32_t events)
{
    struct randd *r = arg;

    (void)events;
    if (kernel_became_initialised(&r->kernel, loop_now_ns()))
        loop_del_fd(r->loop, fd);
}

/* --- signals ---------------------------------------------------------------------- */

/* One line per restart-only key whose re-read value differs from the one in effect. */
static void log_pending_restart(const struct randd *r)
{
    struct config_key_info key;
    char now[PATH_MAX], later[PATH_MAX];

    for (size_t i = 0; config_key(i, &key); i++)
        if (config_pending_restart(&r->config, &r->reread, i))
            log_notice("reload: %s = \"%s\" waits for a restart; \"%s\" stays in effect",
                       key.name, config_value_text(&r->reread, i, later, sizeof(later)),
                       config_value_text(&r->config, i, now, sizeof(now)));
}

/* Live keys apply at once; the rest keep what randd started with (the sockets, sources,
 * generator and user it already has), so STATUS keeps reporting what is in effect. */
static void reload(struct randd *r)
{
    struct config fresh;

    if (load_config(r, &fresh) < 0) {
        log_err("reload: %s rejected, keeping the running configuration", r->config_path);
        return;
    }
    r->reread = fresh;
    config_apply_live(&r->config, &fresh);
    if (r->config.mode == CONFIG_MODE_APPROVED && !fresh.require_noise_source)
        log_notice("reload: require_noise_source = no does not apply while mode = approved is "
                   "in effect: only noise sources seed the generator until a restart");
    pool_set_reseed(&r->pool, r->config.reseed_interval, r->config.reseed_bytes);
    pool_require_noise_source(&r->pool, r->config.require_noise_source);
    harvest_now(r);                  /* readiness under the rule now, not at reseed_interval */
    server_reload(&r->server);
    workers_reload(&r->workers);
    egd_reload(&r->egd);
    log_pending_restart(r);
    log_notice("reload: %s applied", r->config_path);
}

/* --- randd --reload PID: the daemon's own file -------------------------------------- */

static int resolve_reload_config(struct randd *r)
{
    static char path[PATH_MAX];
    const char *given = r->config_given ? r->config_path : NULL;

    if (reload_find_config(r->reload_pid, &reload_options, given, path, sizeof(path),
                           &r->config_given) < 0)
        return -1;
    r->config_path = path;
    return 0;
}

static void signal_ready(void *arg, int fd, uint32_t events)
{
    struct randd *r = arg;
    struct signalfd_siginfo si;

    (void)events;
    while (read(fd, &si, sizeof(si)) == sizeof(si)) {
        switch (si.ssi_signo) {
        case SIGHUP: reload(r); break;
        case SIGUSR1: log_status(r); break;
        default:
            log_notice("%s: shutting down", strsignal((int)si.ssi_signo));
            loop_stop(r->loop);
        }
    }
}

static int setup_signals(struct randd *r)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return -errno;
    r->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (r->signal_fd < 0)
        return -errno;
    signal(SIGPIPE, SIG_IGN);
    return loop_add_fd(r->loop, r->signal_fd, EPOLLIN, signal_ready, r);
}

/* --- up and down ------------------------------------------------------------------- */

/* Sockets systemd passed: FileDescriptorName=egd ones are EGD listeners, the other is the
 * client socket. Returns 0, or -1 with why. */
static int take_activated(int *client_fd, int egd_fds[2], int *negd, char *why, size_t len)
{
    char **names = NULL;
    int n = sd_listen_fds_with_names(1, &names), rc = 0;

    *client_fd = -1;
    *negd = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int fd = SD_LISTEN_FDS_START + i;

        if (names && names[i] && !strcmp(names[i], "egd") && *negd < 2)
            egd_fds[(*negd)++] = fd;
        else if (*client_fd < 0)
            *client_fd = fd;
        else
            rc = -1, snprintf(why, len, "socket activation: unexpected descriptor %d (%s)", fd,
                              names && names[i] ? names[i] : "unnamed");
    }
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* max_clients connections need as many descriptors, plus the daemon's own few: raise the
 * soft limit toward the hard one (a 1024 soft limit is common outside systemd). */
static void raise_fd_limit(unsigned max_clients)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)max_clients * 2 + 64;     /* client and EGD listeners share it */

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want)
        log_notice("descriptor limit %llu: fewer than max_clients = %u connections may fit",
                   (unsigned long long)rl.rlim_cur, max_clients);
}

/* workers = 1: this loop serves. Returns 0 or a negative errno. */
static int serve_here(struct randd *r)
{
    int rc = branch_init(&r->branch, &r->pool, NULL);

    r->loop_stats[r->nloops++] = &r->server.stats;
    server_set_admin(&r->server, admin_here, r);
    server_set_noise_wanted(&r->server, noise_wanted, r);
    return rc < 0 ? rc : server_start(&r->server, r->loop, &r->branch, r->primes, &r->clients,
                                      status_text, r);
}

/* workers > 1: the worker threads serve, once privileges are dropped, and from then on this
 * loop's callbacks hold the pool lock. */
static int start_workers(struct randd *r)
{
    int rc;

    if (r->workers.n == 0)
        return 0;
    if ((r->admin_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
        loop_add_fd(r->loop, r->admin_fd, EPOLLIN, admin_done, r) < 0) {
        log_err("workers: eventfd: %s", strerror(errno));
        return -1;
    }
    workers_set_admin(&r->workers, admin_locked, r);
    workers_set_noise_wanted(&r->workers, noise_wanted, r);
    loop_set_dispatch_lock(r->loop, &r->pool_lock);
    for (size_t i = 0; i < r->workers.n; i++)
        r->loop_stats[r->nloops++] = &r->workers.w[i].server.stats;
    pthread_mutex_lock(&r->pool_lock);
    rc = workers_start(&r->workers, &r->pool, &r->pool_lock, r->primes, &r->clients,
                       status_text_locked, r);
    pthread_mutex_unlock(&r->pool_lock);
    if (rc < 0)
        log_err("workers: %s", strerror(-rc));
    else
        log_info("serving from %zu loops", r->workers.n);
    return rc;
}

/* The sockets first: a second randd is refused before it does anything else. Returns 0,
 * or -1 with the reason logged. */
static int open_sockets(struct randd *r)
{
    char why[256];
    unsigned workers = config_workers(&r->config);
    int client_fd, egd_fds[2], negd;

    if (take_activated(&client_fd, egd_fds, &negd, why, sizeof(why)) < 0 ||
        server_open(&r->server, &r->config, client_fd, why, sizeof(why)) < 0 ||
        (workers > 1 &&
         workers_open(&r->workers, workers, &r->config, &r->server, why, sizeof(why)) < 0) ||
        egd_open(&r->egd, &r->config, egd_fds, negd, why, sizeof(why)) < 0) {
        log_err("%s", why);
        return -1;
    }
    return 0;
}

/* The pool and its generator as the config chose them, the start self-test passed. Returns
 * 0, or -1 with the reason logged. */
static int start_generator(struct randd *r)
{
    int rc = pool_init(&r->pool, r->config.reseed_interval, r->config.reseed_bytes);

    if (rc < 0) {
        log_err("pool: %s", strerror(-rc));
        return -1;
    }
    pool_require_noise_source(&r->pool, r->config.require_noise_source);
    /* mode = approved conditions with a vetted function and instantiates its DRBG from 3s/2
     * bits, as SP 800-90C asks of an RBG2 (config.c settled the rest). */
    if (r->config.mode == CONFIG_MODE_APPROVED &&
        (rc = pool_use_conditioning(&r->pool, POOL_CONDITIONING_SHA512)) < 0) {
        log_err("mode = approved: SHA-512 conditioning: %s", strerror(-rc));
        return -1;
    }
    pool_instantiate_at_three_halves(&r->pool, r->config.mode == CONFIG_MODE_APPROVED);
    /* The engine before the start self-test: a DRBG engine's known answers run in it. */
    if ((rc = pool_use_engine(&r->pool, r->config.engine)) < 0) {
        log_err("engine = %s: %s", randd_engine_name(r->config.engine),
                rc == -ENOTSUP ? "this CPU has no AES round instructions (x86 AES-NI, ARMv8 "
                                 "AES), which Randen needs; use engine = cymric"
                               : strerror(-rc));
        return -1;
    }
    if (selfcheck_run(&r->selfcheck, &r->pool, "start") < 0)
        return -1;
    /* config_cipher never asks for AES the CPU lacks: aes256ctr did not parse there. */
    if ((rc = pool_use_cipher(&r->pool, config_cipher(&r->config))) < 0) {
        log_err("cipher = %s: %s", randd_stream_cipher_name(config_cipher(&r->config)),
                strerror(-rc));
        return -1;
    }
    if (r->config.mode == CONFIG_MODE_APPROVED)
        log_info("mode approved: generator %s (SP 800-90A %s), seeded from noise sources "
                 "only, through %s conditioning (vetted); full entropy, prediction resistance "
                 "and primes on DRBGs of its mechanism (SP 800-90C RBG3(XOR), RBG2(P)); "
                 "librandd's in-process generator is outside it (docs/approved-mode.md)",
                 pool_engine_name(&r->pool), pool_engine_mechanism(&r->pool),
                 pool_conditioning_name(&r->pool));
    else if (pool_engine_mechanism(&r->pool))
        log_info("generator: %s (SP 800-90A %s, seeded from the pool's %s conditioning: not "
                 "approved, as mode = approved would be); its primes and prediction-resistant "
                 "replies from DRBGs of the same mechanism", pool_engine_name(&r->pool),
                 pool_engine_mechanism(&r->pool), pool_conditioning_name(&r->pool));
    else
        log_info("generator: %s; Cymric keystream: %s", pool_engine_name(&r->pool),
                 pool_cipher_name(&r->pool));
    if (pool_lock_errno(&r->pool))
        log_warning("generator state not locked in memory (mlock: %s); it may reach swap",
                    strerror(pool_lock_errno(&r->pool)));
    return 0;
}

/* The event loop, and what it watches from the first turn: noise requests' wake-ups,
 * signals (blocked here: the threads started from here on inherit the mask, and signals must
 * come to signal_fd) and the sources that produce on demand. Returns 0, or -1 logged. */
static int open_event_loop(struct randd *r)
{
    int rc;

    listener_clients_init(&r->clients);
    if (!(r->loop = loop_new())) {
        log_err("event loop: %s", strerror(errno));
        return -1;
    }
    if ((r->noise_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
        loop_add_fd(r->loop, r->noise_fd, EPOLLIN, noise_wanted_event, r) < 0) {
        log_err("event loop: eventfd: %s", strerror(errno));
        return -1;
    }
    if ((rc = setup_signals(r)) < 0 || (rc = watch_sources(r)) < 0) {
        log_err("event loop: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

/* The PRIME search thread every loop shares, protocol v1 on this loop (workers = 1) and EGD.
 * Returns 0, or -1 logged. */
static int start_serving(struct randd *r)
{
    int rc;

    if (!(r->primes = primes_new(pool_cipher(&r->pool), pool_engine(&r->pool)))) {
        log_err("prime finder: its generator (%s) or thread: %s",
                pool_cipher_name(&r->pool), strerror(errno));
        return -1;
    }
    if (randd_fermat8_hidden())
        log_notice("RANDD_NO_IFMA=1: primes above 128 bits are tested one candidate at a time, "
                   "as on a CPU without AVX-512 IFMA (about 2.5 times slower than with it)");
    if ((r->workers.n == 0 && (rc = serve_here(r)) < 0) ||
        (rc = egd_start(&r->egd, r->loop, &r->pool, &r->clients)) < 0) {
        log_err("event loop: %s", strerror(-rc));
        return -1;
    }
    egd_set_noise_wanted(&r->egd, noise_wanted, r);
    return 0;
}

/* What randd watches besides its clients: new VM generations and systemd's watchdog. */
static void start_watchers(struct randd *r)
{
    uint64_t usec = 0;

    watch_vm_generation(r);
    if (sd_watchdog_enabled(0, &usec) > 0) {
        r->watchdog_ns = usec * 1000 / 2;
        watchdog_timer(r);
    }
}

/* /dev/random for the kernel feed is the last privileged thing opened; then privileges go,
 * CAP_SYS_ADMIN with the kernel feed's thread alone. Returns 0, or -1 logged: randd never
 * runs half-privileged. */
static int drop_privileges(struct randd *r)
{
    char why[256];

    kernel_init(&r->kernel, r->config.kernel_topup, NULL, loop_now_ns());
    /* Everything privileged is open: sources, /dev/random, the socket, locked memory. */
    if (privileges_drop(kernel_enabled(&r->kernel), r->config.user, why, sizeof(why)) < 0) {
        log_err("dropping privileges failed: %s; refusing to run half-privileged", why);
        return -1;
    }
    /* CAP_SYS_ADMIN stays with the kernel feed's thread alone: this one serves clients (EGD,
     * and protocol v1 with workers = 1), so the kernel's limits must apply to it. */
    kernel_start_thread(&r->kernel);
    if (privileges_leave_to_kernel_thread(why, sizeof(why)) < 0) {
        log_err("dropping CAP_SYS_ADMIN on the main thread failed: %s; refusing to run "
                "half-privileged", why);
        return -1;
    }
    return 0;
}

/* The first harvest, then the periodic ones, the self-tests and the kernel feed. */
static void start_timers(struct randd *r)
{
    int fd;

    harvest_timer(r);
    loop_add_timer(r->loop, selftest_delay_ns(r), selftest_timer, r);
    /* Feed at once; until the kernel is initialised, /dev/random turning readable tells
     * us when it is, and a short timer keeps feeding meanwhile. */
    if (kernel_enabled(&r->kernel)) {
        kernel_feed(&r->kernel, &r->pool, loop_now_ns());
        if ((fd = kernel_initialised_fd(&r->kernel)) >= 0)
            loop_add_fd(r->loop, fd, EPOLLIN, kernel_readable, r);
    }
    schedule_kernel_feed(r);
}

static int start(struct randd *r)
{
    r->started_ns = loop_now_ns();
    privileges_plan(r->config.user[0] != '\0');      /* before any thread starts */
    raise_fd_limit(r->config.max_clients);
    if (open_sockets(r) < 0 || start_generator(r) < 0)
        return -1;
    /* OpenSSL's set-up and the self-test are done: their pages go before the sources'
     * assessments add their megabytes (footprint.h). */
    footprint_release_code();
    open_sources(r);
    if (open_event_loop(r) < 0 || start_serving(r) < 0)
        return -1;
    start_watchers(r);
    if (drop_privileges(r) < 0)
        return -1;
    start_timers(r);
    log_status(r);
    return start_workers(r);
}

/* Not holding the pool lock: the loop let go of it, and a worker may be waiting for it. */
static void stop(struct randd *r)
{
    int rc;

    sd_notify(0, "STOPPING=1");
    workers_close(&r->workers);
    egd_close(&r->egd);
    server_close(&r->server);
    listener_clients_free(&r->clients);
    memfd_arena_fini();      /* after every loop's connections: arenas kept past them */
    branch_fini(&r->branch);
    primes_free(r->primes);
    vmgenid_close(&r->vmgenid);
    /* Not removable after dropping privileges in a directory of root's: the next randd,
     * started as root, replaces it (it is retired already). */
    if ((rc = randd_generation_withdraw(&r->generation)) < 0)
        log_notice("%s: not removed (%s); retired, for the next randd to replace",
                   r->generation.path, strerror(-rc));
    kernel_fini(&r->kernel);
    pool_fini(&r->pool);     /* wipes the generator and accumulators */
    if (r->loop)
        loop_free(r->loop);
    if (r->signal_fd >= 0)
        close(r->signal_fd);
    if (r->admin_fd >= 0)
        close(r->admin_fd);
    if (r->noise_fd >= 0)
        close(r->noise_fd);
}

int main(int argc, char **argv)
{
    static struct randd r;
    bool check_only = false;
    int rc = parse_args(&r, argc, argv, &check_only);

    if (rc >= 0)
        return rc;
    log_init();
    if (r.reload_pid && resolve_reload_config(&r) < 0)
        return EXIT_FAILURE;
    if (load_config(&r, &r.config) < 0) {
        if (r.reload_pid)
            log_err("reload: %s rejected; randd (pid %ld) keeps its configuration",
                    r.config_path, (long)r.reload_pid);
        return EXIT_FAILURE;
    }
    r.reread = r.config;
    if (!config_any_noise_source(&r.config))
        log_warning("%s: no noise source is on (cpu_source, hwrng and jitter = no): every "
                    "full-entropy and prediction-resistant request will be refused",
                    r.config_path);
    if (check_only) {
        if (!r.config_given && access(r.config_path, F_OK) < 0 && errno == ENOENT)
            printf("%s: no such file: the built-in defaults apply (configuration OK)\n",
                   r.config_path);
        else
            printf("%s: configuration OK\n", r.config_path);
        return EXIT_SUCCESS;
    }
    if (r.reload_pid)
        return reload_send(r.reload_pid, r.config_path);
    if (r.capture_source)
        return run_capture(&r);
    log_info("randd %s starting", RANDD_VERSION);
    pthread_mutex_init(&r.pool_lock, NULL);
    vmgenid_init(&r.vmgenid);
    r.signal_fd = r.admin_fd = r.noise_fd = -1;   /* none open until start opens it */
    if (start(&r) < 0 || loop_run(r.loop) < 0)
        rc = EXIT_FAILURE;
    else
        rc = EXIT_SUCCESS;
    stop(&r);
    return rc;
}
