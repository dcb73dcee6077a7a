/* randctl benchmark: randd against what a user would otherwise use, measured side by side in
 * one run, with two floors (the keystream randd runs by default and an AF_UNIX ping-pong) so
 * ratios hold on any machine. Owns the command (its options, the order the sections run in)
 * and the report (table, CSV, JSON, the targets); the measuring engine is bench_engine.c, the
 * methods bench_alternatives.c, bench_vdso.c and bench_daemon.c, the sections
 * bench_sections.c (bench.h says what they share). The methods measured live elsewhere (the
 * daemon, librandd's in-process generator, the kernel, OpenSSL with and without randd.so as
 * its seed source). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define MAX_CLIENTS   1024

/* --- report ------------------------------------------------------------------------------- */

static void print_csv(void)
{
    size_t nresults;
    const struct result *results = bench_results(&nresults);

    printf("section,method,size,metric,value,unit\n");
    for (size_t i = 0; i < nresults; i++)
        printf("%s,%s,%zu,%s,%.6g,%s\n", results[i].section, results[i].method, results[i].size,
               results[i].metric, results[i].value, results[i].unit);
}

static void print_json(void)
{
    size_t nresults;
    const struct result *results = bench_results(&nresults);

    printf("[\n");
    for (size_t i = 0; i < nresults; i++)
        printf("  {\"section\": \"%s\", \"method\": \"%s\", \"size\": %zu, \"metric\": \"%s\", "
               "\"value\": %.6g, \"unit\": \"%s\"}%s\n", results[i].section, results[i].method,
               results[i].size, results[i].metric, isnan(results[i].value) ? 0 : results[i].value,
               results[i].unit, i + 1 < nresults ? "," : "");
    printf("]\n");
}

static void print_ratio(double ratio)
{
    if (isnan(ratio) || isinf(ratio))
        printf("  %10s", "");
    else
        printf("  %9.2fx", ratio);
}

static void print_table(void)
{
    double floor_rate = bench_value_of("floor", floor_name(), 16384, "throughput");
    double pingpong = bench_value_of("floor", "AF_UNIX ping-pong", 32, "p50");
    size_t nresults;
    const struct result *results = bench_results(&nresults);

    printf("%-10s %-20s %8s %-9s %12s %-6s  %10s  %10s\n", "section", "method", "size", "metric",
           "value", "unit", "vs floor", "vs getrand");
    for (size_t i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        double floor_ratio = NAN, getrandom_ratio = NAN;
        const struct result *g = bench_find(r->section, "getrandom", r->size, r->metric);

        if (!strcmp(r->section, "daemon"))
            continue;                          /* its mode and engine: the header names them */
        if (!strcmp(r->unit, "MB/s"))
            floor_ratio = r->value / floor_rate;
        else if (!strcmp(r->section, "latency") && !strcmp(r->unit, "us"))
            floor_ratio = r->value / pingpong;
        if (g && g != r)
            getrandom_ratio = !strcmp(r->unit, "MB/s") ? r->value / g->value : g->value / r->value;
        printf("%-10s %-20s %8zu %-9s %12.2f %-6s", r->section, r->method, r->size, r->metric,
               r->value, r->unit);
        print_ratio(floor_ratio);
        print_ratio(getrandom_ratio);
        printf("\n");
    }
    printf("vs floor: throughput / %s, latency / AF_UNIX ping-pong p50.\n"
           "vs getrand: how many times better than getrandom() at the same size and metric.\n",
           floor_name());
}

/* The targets, checked against this run's own figures. */
static int print_targets(const struct options *o)
{
    double kernel = fmax(bench_value_of("throughput", "/dev/urandom", MIB, "throughput"),
                         bench_value_of("throughput", "getrandom", MIB, "throughput"));
    double stream = bench_value_of("floor", "AF_UNIX stream", MIB, "throughput");
    double bulk = bench_value_of("throughput", "randd", MIB, "throughput");
    double librandd = bench_value_of("throughput", "randd_bytes()", MIB, "throughput");
    double floor_rate = bench_value_of("floor", floor_name(), 16384, "throughput");
    double keystream_socket = 1 / (1 / floor_rate + 1 / stream);   /* made, then moved */
    double p50 = bench_value_of("latency", "randd", 32, "p50");
    double pingpong = bench_value_of("floor", "AF_UNIX ping-pong", 32, "p50");
    double in32 = bench_value_of("latency", "in-process", 32, "per call");
    double gr32 = bench_value_of("latency", "getrandom", 32, "per call");
    double vdso32 = bench_value_of("latency", "vDSO getrandom", 32, "per call");
    double in1m = bench_value_of("throughput", "in-process", MIB, "throughput");
    double range = bench_value_of("range", "randd RANGE", 32, "samples/s");
    double randen = bench_value_of("engine", "Randen", MIB, "throughput");
    double aes = bench_value_of("engine", "AES-128-CTR (EVP)", MIB, "throughput");
    double bn = bench_value_of("range", "BN_rand_range", 32, "samples/s");
    double ossl32 = bench_value_of("throughput", "RAND_bytes", 32, "throughput");
    double seeded32 = bench_value_of("throughput", "RAND_bytes+randd", 32, "throughput");
    int missed = 0;
    char name[32];

#define TARGET(ok, ...) do { int ok_ = (ok); missed += !ok_; printf("  %-4s ", ok_ ? "ok" : "MISS"); \
                             printf(__VA_ARGS__); printf("\n"); } while (0)
    printf("\ntargets:\n");
    /* Raw BYTES serves clients that cannot take a memfd (EGD, other languages): they would
     * otherwise ask the kernel, one call of the same size. Its every byte is generated and
     * then crosses a socket, copied in and out, so its ceiling is the keystream and the
     * AF_UNIX stream floor in turn, not the keystream alone (that is BYTES_MEMFD's, below). */
    TARGET(bulk >= 5 * kernel, "bulk: raw BYTES 1 MiB = %.1fx the kernel's best of getrandom "
           "and /dev/urandom (>= 5x)", bulk / kernel);
    TARGET(bulk >= 0.8 * keystream_socket, "bulk: raw BYTES 1 MiB = %.0f%% of %s then the "
           "AF_UNIX stream (>= 80%%)", 100 * bulk / keystream_socket, floor_cipher());
    /* BYTES_MEMFD: made in shared memory and copied out once by librandd, which asks for the
     * next bytes before it copies these, so the daemon makes them meanwhile on the other core
     * (with both cores busy, making and copying take turns and this falls short). The floor
     * is the keystream code the daemon runs (op_keystream), so this is delivery's cost alone. */
    TARGET(librandd >= 0.95 * floor_rate, "bulk: randd_bytes() (BYTES_MEMFD) 1 MiB = %.0f%% of "
           "%s (>= 95%%)", 100 * librandd / floor_rate, floor_cipher());
    TARGET(p50 <= 1.5 * pingpong, "small: randd 32 B p50 = %.2fx ping-pong (<= 1.5x)", p50 / pingpong);
    for (size_t i = 0; i < o->nclients; i++) {
        snprintf(name, sizeof(name), "randd x%u", o->clients[i]);
        if (o->clients[i] != 64)
            continue;
        double one = bench_value_of("clients", "randd x1", 32, "aggregate");
        double many = bench_value_of("clients", name, 32, "aggregate");

        TARGET(many >= 1.5 * one, "concurrency: 64 clients = %.2fx one client (>= 1.5x)", many / one);
        TARGET(bench_value_of("clients", name, 32, "errors") == 0, "concurrency: %.0f errors (0)",
               bench_value_of("clients", name, 32, "errors"));
        TARGET(bench_value_of("clients", name, 32, "p99.9") < 10000,
               "concurrency: p99.9 %.0f us (< 10 ms)", bench_value_of("clients", name, 32, "p99.9"));
    }
    TARGET(gr32 >= 10 * in32, "in-process: 32 B call %.1f ns = %.1fx faster than getrandom (>= 10x)",
           in32, gr32 / in32);
    if (!isnan(vdso32))
        TARGET(in32 < vdso32, "in-process: 32 B call %.1f ns vs vDSO getrandom %.1f ns (faster)",
               in32, vdso32);
    TARGET(in1m >= 0.8 * floor_rate, "in-process: 1 MiB = %.0f%% of %s (>= 80%%)",
           100 * in1m / floor_rate, floor_cipher());
    for (size_t i = 1; i < NSIZES; i++) {          /* every bulk size, same calls, same run */
        double in = bench_value_of("throughput", "in-process", sizes[i], "throughput");
        double ossl = bench_value_of("throughput", "RAND_bytes", sizes[i], "throughput");

        TARGET(in >= ossl, "in-process: %zu KiB = %.2fx RAND_bytes (>= 1.0x)", sizes[i] >> 10,
               in / ossl);
    }
    TARGET(range >= 5 * bn, "range: randd %.0f samples/s = %.1fx BN_rand_range (>= 5x)", range, range / bn);
    if (!isnan(seeded32))
        TARGET(seeded32 >= 0.9 * ossl32, "provider: RAND_bytes 32 B seeded by randd = %.2fx the "
               "default (>= 0.9x: seeding is rare)", seeded32 / ossl32);
    if (!isnan(randen))
        TARGET(randen >= 0.2 * aes, "engine: Randen %.0f MB/s = %.2fx AES-128-CTR (>= 0.2x)", randen,
               randen / aes);
    if (o->compare_workers) {
        double one1 = bench_value_of("workers", "randd workers=1 x1", 32, "aggregate");
        double two1 = bench_value_of("workers", "randd workers=2 x1", 32, "aggregate");
        double one64 = bench_value_of("workers", "randd workers=1 x64", 32, "aggregate");
        double two64 = bench_value_of("workers", "randd workers=2 x64", 32, "aggregate");

        TARGET(two64 >= 1.25 * one64, "workers: 64 clients, workers = 2 = %.2fx workers = 1 "
               "(>= 1.25x)", two64 / one64);
        TARGET(two1 >= 0.95 * one1, "workers: 1 client, workers = 2 = %.2fx workers = 1 "
               "(>= 0.95x: no regression)", two1 / one1);
    }
#undef TARGET
    syscall_targets(&missed);
    return missed + daemon_cost_targets();
}

/* --- the command -------------------------------------------------------------------------- */

static int parse_clients(const char *s, struct options *o)
{
    char *copy = strdup(s), *rest = copy, *t;
    unsigned long long n;
    int ok = copy != NULL;

    o->nclients = 0;
    while (ok && (t = strsep(&rest, ","))) {
        ok = o->nclients < sizeof(o->clients) / sizeof(o->clients[0]) &&
             parse_count(t, MAX_CLIENTS, &n) && n > 0;
        if (ok)
            o->clients[o->nclients++] = (unsigned)n;
    }
    free(copy);
    return ok;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        char *end;

        if (!strcmp(argv[i], "--json"))
            o->json = 1;
        else if (!strcmp(argv[i], "--csv"))
            o->csv = 1;
        else if (!strcmp(argv[i], "--fail-on-miss"))
            o->fail_on_miss = 1;
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            o->seconds = strtod(argv[++i], &end);
            if (*end || !(o->seconds >= 0.05 && o->seconds <= 60))
                return usage_error(&cmd_benchmark, "--seconds: not between 0.05 and 60: %s", argv[i]);
        } else if (!strcmp(argv[i], "--compare-workers") && i + 1 < argc) {
            o->compare_workers = argv[++i];
            if (access(o->compare_workers, X_OK) < 0)
                return usage_error(&cmd_benchmark, "--compare-workers: not an executable "
                                   "randd: %s", o->compare_workers);
        } else if (!strcmp(argv[i], "--modes")) {
            o->modes_only = 1;
        } else if (!strcmp(argv[i], "--clients") && i + 1 < argc) {
            if (!parse_clients(argv[++i], o))
                return usage_error(&cmd_benchmark, "--clients: want N,... with 1 <= N <= %d: %s",
                                   MAX_CLIENTS, argv[i]);
        } else
            return usage_error(&cmd_benchmark, "unknown argument: %s", argv[i]);
    }
    if (o->json && o->csv)
        return usage_error(&cmd_benchmark, "--json and --csv: pick one");
    if (o->fail_on_miss && (o->json || o->csv))   /* the targets are the table's */
        return usage_error(&cmd_benchmark, "--fail-on-miss: the targets come with the table, "
                           "not with --json or --csv");
    return EXIT_OK;
}

/* "daemon: mode approved, engine ctr_drbg (CTR_DRBG AES-256 (df))": what was measured. */
static void print_daemon_identity(const struct daemon_identity *id)
{
    printf("daemon: mode %s, engine %s", id->mode[0] ? id->mode : "not in its STATUS",
           id->engine[0] ? id->engine : "not in its STATUS");
    if (id->drbg[0])
        printf(" (%s)", id->drbg);
    printf("\n");
}

/* Returns the number of targets missed (0 with --json or --csv, which print no targets). */
static int report(const struct options *o, const struct vdso_ctx *vdso, const randd_rng *rng,
                  const struct daemon_identity *id)
{
    if (o->json)
        print_json();
    else if (o->csv)
        print_csv();
    else {
        printf("randctl benchmark: %.2f s per figure (median of %d runs; throughput and 32 B "
               "calls: of %d turns), %s vDSO getrandom\n", o->seconds, REPS,
               bench_turns_for(o->seconds), vdso->fn ? "with" : "no");
        print_daemon_identity(id);
        printf("in-process generator: %s (RANDD_RNG_CIPHER=chacha20|aes256ctr forces one)\n\n",
               randd_rng_cipher(rng));
        print_table();
        return o->modes_only ? 0 : print_targets(o);     /* the targets need the other rows */
    }
    return 0;
}

static int run_benchmark(int argc, char **argv)
{
    struct options o = { 0.5, { 1, 16, 64 }, 3, 0, 0, 0, NULL, 0 };
    struct plain_ctx plain = { .fd = -1 };
    struct randd_ctx *daemon_ctx = NULL;
    struct vdso_ctx vdso = { 0 };
    struct seeded seeded = { 0 };
    struct daemon_cost cost = { 0 };
    struct daemon_identity identity;
    struct randd_rng_options rng_opt = { daemon_socket(), 0, 0, RANDD_RNG_REQUIRE_DAEMON };
    uint8_t *out = NULL;
    const char *failed;
    int err, missed, rc = parse_options(argc, argv, &o);

    if (rc != EXIT_OK)
        return rc;
    daemon_ctx = calloc(1, sizeof(*daemon_ctx));
    out = malloc(MIB);                /* the largest reply: one 1 MiB BYTES, or RANGE's 32000 */
    if (!out || !daemon_ctx) {
        rc = fail("benchmark", -ENOMEM);
        goto out;
    }
    daemon_ctx->conn.fd = -1;
    if ((rc = conn_open(&daemon_ctx->conn)) < 0) {
        daemon_ctx->conn.fd = -1;
        rc = fail(daemon_socket(), rc);
        goto out;
    }
    daemon_cost_begin(&cost, daemon_ctx->conn.fd);     /* before any request: idle RSS */
    if ((rc = randd_open(&plain.daemon, daemon_socket())) < 0) {
        rc = fail(daemon_socket(), rc);
        goto out;
    }
    daemon_identity_rows(plain.daemon, &identity);     /* first: what every row measured */
    if ((rc = randd_rng_new(&plain.rng, &rng_opt)) < 0) {
        if (rc == -EINVAL || rc == -ENOTSUP)
            rc = fail("in-process generator: RANDD_RNG_CIPHER (chacha20, or aes256ctr "
                      "where the CPU has AES)", rc);
        else
            rc = fail("in-process generator", rc);
        goto out;
    }
    plain.out = vdso.out = daemon_ctx->out = out;
    daemon_ctx->depth = PIPELINE;
    plain.fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (plain.fd < 0) {
        rc = fail("/dev/urandom", -errno);
        goto out;
    }
    if (vdso_open(&vdso) < 0)
        vdso.fn = NULL;
    if (seeded_open(&seeded) == 0)
        plain.randd_seeded = seeded.libctx;

    bench_progress_plan((int)NSIZES + 1 + 1 + 3 + 2 + 1 + (int)o.nclients +
                        (o.compare_workers != NULL) + 2 + 1 + daemon_cpu_steps(&o, &cost));
    if (o.modes_only) {
        bench_progress_plan(2);
        section_noise_modes(&o, out);
        goto done;
    }
    section_throughput(&o, &plain, daemon_ctx, &vdso);
    section_reseeds(&o, &plain);
    section_pingpong_floor(&o);
    section_latencies(&o, &plain, daemon_ctx, &vdso);
    section_ranges(&o, &plain, daemon_ctx);
    section_engines(&o, out);
    syscalls_per_request(out);
    for (size_t i = 0; i < o.nclients && !bench_failing(); i++) {
        bench_progress("clients: %u at once, 32 B requests", o.clients[i]);
        run_clients(o.clients[i], 4 * o.seconds, true);
    }
    if (o.compare_workers && !bench_failing())
        compare_workers(&o);
    daemon_cpu_rows(&o, &cost);
    section_noise_modes(&o, out);
    daemon_memory_rows(&cost);
done:
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    if ((err = bench_failed(&failed)) != 0) {
        fprintf(stderr, "\nrandctl: benchmark: %s: %s\n", failed, randd_strerror(err));
        rc = EXIT_FAILED;
        goto out;
    }
    rc = EXIT_OK;
    if ((missed = report(&o, &vdso, plain.rng, &identity)) > 0 && o.fail_on_miss) {
        fprintf(stderr, "randctl: benchmark: %d target%s missed\n", missed,
                missed == 1 ? "" : "s");
        rc = EXIT_FAILED;
    }
out:
    if (plain.fd >= 0)
        close(plain.fd);
    if (daemon_ctx && daemon_ctx->conn.fd >= 0)
        close(daemon_ctx->conn.fd);
    randd_rng_free(plain.rng);
    randd_close(plain.daemon);
    seeded_close(&seeded);
    free(out);
    free(daemon_ctx);
    return rc;
}

const struct command cmd_benchmark = {
    "benchmark", "benchmark [--seconds S] [--clients N,...] [--compare-workers RANDD] "
                 "[--modes] [--json | --csv | --fail-on-miss]  randd beside the alternatives: "
                 "throughput, latency, clients", run_benchmark,
};
