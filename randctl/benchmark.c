/* randctl benchmark: randd against what a user would otherwise use, measured side by side in
 * one run, with two floors (the keystream randd runs by default and an AF_UNIX ping-pong) so
 * ratios hold on any machine. Owns the measurements and their report; the methods measured
 * live elsewhere (the daemon, librandd's in-process generator, the kernel, OpenSSL with and
 * without randd.so as its seed source). */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <fcntl.h>
#include <link.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include "cymric.h"
#include "json.h"
#include "output_file.h"
#include "protocol.h"
#include "randctl.h"
#include "randen.h"
#include "syscall_count.h"

#include "bench.h"

#define MAX_CLIENTS   1024

/* The ping-pong floor; the keystream floor is measured among the throughput runs. */
static void pingpong_floor(const struct options *o)
{
    struct echo e;
    struct histogram h = { { 0 }, 0 };
    int rc;

    bench_progress("floor: AF_UNIX ping-pong, 8 B request, 32 B reply");
    if ((rc = echo_open(&e)) < 0) {
        bench_failure("echo thread", rc);
        return;
    }
    bench_latency(op_pingpong, &e, 32, o->seconds, &h);
    bench_record("floor", "AF_UNIX ping-pong", 32, "p50", "us", hist_percentile(&h, 50) / 1e3);
    echo_close(&e);
}

/* Every method at one size in turn, TURNS times over, and the keystream floor among them: a
 * noisy neighbour then slows everything alike, and the ratios hold. */
static void throughput(const struct options *o, struct plain_ctx *p, struct randd_ctx *r,
                       struct vdso_ctx *v)
{
    static const struct { const char *name; op_fn op; } methods[] = {
        { "randd", op_randd },
        { "randd_bytes()", op_librandd },
        { "in-process", op_in_process },
        { "getrandom", op_getrandom },
        { "vDSO getrandom", op_vdso },
        { "/dev/urandom", op_urandom },
        { "RAND_bytes", op_rand_bytes },
        { "RAND_bytes+randd", op_rand_bytes_randd },
    };
    enum { NMETHODS = sizeof(methods) / sizeof(methods[0]) };
    static const uint8_t key[32], iv[16];
    static double rates[NMETHODS][NSIZES][TURNS], floor_rates[NSIZES * TURNS];
    static double stream_rates[TURNS];
    int turns = bench_turns_for(o->seconds);
    double slice = o->seconds / turns, seeds = seed_requests();
    bool have[NMETHODS];
    struct stream st;
    int rc;

    for (size_t m = 0; m < NMETHODS; m++)
        have[m] = (methods[m].op != op_vdso || v->fn) &&
                  (methods[m].op != op_rand_bytes_randd || p->randd_seeded);

    p->cipher = EVP_CIPHER_CTX_new();
    if (!p->cipher || !EVP_EncryptInit_ex2(p->cipher, floor_is_aes() ? EVP_aes_256_ctr()
                                                                      : EVP_chacha20(),
                                           key, iv, NULL)) {
        bench_failure(floor_cipher(), -EIO);
        EVP_CIPHER_CTX_free(p->cipher);
        return;
    }
    st.out = p->out;
    if ((rc = stream_open(&st)) < 0) {
        bench_failure("AF_UNIX stream floor", rc);
        EVP_CIPHER_CTX_free(p->cipher);
        return;
    }
    for (size_t s = 0; s < NSIZES; s++) {
        bench_progress("throughput: %zu B requests, every method and the %s floor%s", sizes[s],
                       floor_cipher(), sizes[s] == MIB ? " and the AF_UNIX stream" : "");
        for (int rep = 0; rep < turns; rep++) {
            floor_rates[s * turns + rep] =
                bench_rate_once(op_keystream, p, 16384, slice) * 16384 / 1e6;
            if (sizes[s] == MIB)
                stream_rates[rep] = bench_rate_once(op_stream, &st, MIB, slice) * MIB / 1e6;
            for (size_t m = 0; m < NMETHODS; m++) {
                void *ctx = methods[m].op == op_randd ? (void *)r
                          : methods[m].op == op_vdso  ? (void *)v : (void *)p;
                double per_op = methods[m].op == op_randd ? sizes[s] * PIPELINE : sizes[s];

                if (have[m])
                    rates[m][s][rep] =
                        bench_rate_once(methods[m].op, ctx, sizes[s], slice) * per_op / 1e6;
            }
        }
    }
    EVP_CIPHER_CTX_free(p->cipher);
    stream_close(&st);
    bench_record("floor", floor_name(), 16384, "throughput", "MB/s",
                 bench_median(floor_rates, NSIZES * turns));
    bench_record("floor", "AF_UNIX stream", MIB, "throughput", "MB/s",
                 bench_median(stream_rates, turns));
    for (size_t m = 0; m < NMETHODS; m++)
        for (size_t s = 0; s < NSIZES && have[m]; s++)
            bench_record("throughput", methods[m].name, sizes[s], "throughput", "MB/s",
                         bench_median(rates[m][s], turns));
    /* Every SEED request during these runs came from RAND_bytes+randd's DRBGs. */
    if (p->randd_seeded)
        bench_record("seeding", "RAND_bytes+randd", 0, "SEED reqs", "", seed_requests() - seeds);
}

static void latencies(const struct options *o, struct plain_ctx *p, struct randd_ctx *r,
                      struct vdso_ctx *v)
{
    static const char *const pct_names[] = { "p50", "p99", "p99.9" };
    static const double pcts[] = { 50, 99, 99.9 };
    const struct { const char *name; op_fn op; void *ctx; } methods[] = {
        { "randd", op_randd, r },
        { "getrandom", op_getrandom, p },
    };

    r->depth = 1;
    for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
        struct histogram h = { { 0 }, 0 };

        bench_progress("latency: %s, 32 B", methods[m].name);
        bench_latency(methods[m].op, methods[m].ctx, 32, o->seconds, &h);
        for (int i = 0; i < 3; i++)
            bench_record("latency", methods[m].name, 32, pct_names[i], "us",
                         hist_percentile(&h, pcts[i]) / 1e3);
    }
    r->depth = PIPELINE;

    /* One small call: rates, so the clock's own cost stays out, taken in turns so that a
     * noisy neighbour slows all three alike and the ratios hold. */
    double in_process[TURNS], syscall[TURNS], vdso[TURNS];
    int turns = bench_turns_for(o->seconds);

    bench_progress("latency: in-process, getrandom, vDSO, 32 B");
    for (int i = 0; i < turns; i++) {
        in_process[i] = bench_rate_once(op_in_process, p, 32, o->seconds / turns);
        syscall[i] = bench_rate_once(op_getrandom, p, 32, o->seconds / turns);
        vdso[i] = v->fn ? bench_rate_once(op_vdso, v, 32, o->seconds / turns) : NAN;
    }
    bench_record("latency", "in-process", 32, "per call", "ns",
                 1e9 / bench_median(in_process, turns));
    bench_record("latency", "getrandom", 32, "per call", "ns", 1e9 / bench_median(syscall, turns));
    if (v->fn)
        bench_record("latency", "vDSO getrandom", 32, "per call", "ns",
                     1e9 / bench_median(vdso, turns));
}

static void ranges(const struct options *o, struct plain_ctx *p, struct randd_ctx *r)
{
    bench_progress("range: randd RANGE, 1000 x 256-bit");
    bench_record("range", "randd RANGE", 32, "samples/s", "1/s",
                 bench_rate(op_range, r, 32, o->seconds) * RANGE_COUNT);
    bench_progress("range: BN_rand_range, 256-bit");
    p->r = BN_bin2bn(range_r, sizeof(range_r), NULL);
    p->v = BN_new();
    if (!p->r || !p->v)
        bench_failure("BIGNUM", -ENOMEM);
    else
        bench_record("range", "BN_rand_range", 32, "samples/s", "1/s",
                     bench_rate(op_bn_rand_range, p, 32, o->seconds));
    BN_free(p->r);
    BN_clear_free(p->v);
}

/* One reseed of a context's primary DRBG: it draws from the seed source, what seeding costs
 * each time it happens. Without prediction resistance, as OpenSSL's own reseeds ask: with
 * it, randd's seed source asks for a noise-source reseed (issue 28), measured apart. */
static int op_reseed(void *ctx, size_t size)
{
    EVP_RAND_CTX *primary = RAND_get0_primary(ctx);

    (void)size;
    return primary && EVP_RAND_reseed(primary, 0, NULL, 0, NULL, 0) == 1 ? 0 : -EIO;
}

/* What one seed costs from the kernel (the default context) and from randd, in turns. */
static void reseeds(const struct options *o, struct plain_ctx *p)
{
    double kernel[REPS], randd[REPS];

    bench_progress("seeding: a reseed of the primary DRBG, default and randd-seeded");
    for (int i = 0; i < REPS; i++) {
        kernel[i] = bench_rate_once(op_reseed, NULL, 0, o->seconds / REPS);
        randd[i] = p->randd_seeded
                 ? bench_rate_once(op_reseed, p->randd_seeded, 0, o->seconds / REPS) : NAN;
    }
    bench_record("seeding", "RAND_bytes", 0, "reseed", "us", 1e6 / bench_median(kernel, REPS));
    if (p->randd_seeded)
        bench_record("seeding", "RAND_bytes+randd", 0, "reseed", "us",
                     1e6 / bench_median(randd, REPS));
}

/* --- the engines' raw rates beside AES-128-CTR on the same AES-NI units ------------------- */

struct engines {
    struct randd_cymric cymric;
    struct randd_cymric cymric_aes;      /* bound to AES-256-CTR, as cipher = auto runs it */
    struct randd_randen randen;
    EVP_CIPHER_CTX *aes;
    uint8_t *out;
};

static int op_cymric(void *ctx, size_t size)
{
    struct engines *e = ctx;

    return randd_cymric_read(&e->cymric, e->out, size);
}

static int op_cymric_aes(void *ctx, size_t size)
{
    struct engines *e = ctx;

    return randd_cymric_read(&e->cymric_aes, e->out, size);
}

static int op_randen(void *ctx, size_t size)
{
    struct engines *e = ctx;

    return randd_randen_generate(&e->randen, e->out, size);
}

static int op_aes_ctr(void *ctx, size_t size)
{
    struct engines *e = ctx;
    int outl;

    return EVP_EncryptUpdate(e->aes, e->out, &outl, e->out, (int)size) == 1 ? 0 : -EIO;
}

static void engines(const struct options *o, uint8_t *out)
{
    static const uint8_t key[16], iv[16], seed[64] = { 1 };
    struct engines e = { .out = out };
    double c[REPS], ca[REPS], r[REPS], a[REPS];
    bool randen = randd_randen_available(), aes = randd_crypto_has_hardware_aes();

    bench_progress("engines: Cymric (ChaCha20%s), Randen and AES-128-CTR, 1 MiB calls",
                   aes ? " and AES-256-CTR" : "");
    e.aes = EVP_CIPHER_CTX_new();
    if (!e.aes || !EVP_EncryptInit_ex2(e.aes, EVP_aes_128_ctr(), key, iv, NULL) ||
        randd_cymric_init(&e.cymric, 0) < 0 || randd_cymric_seed(&e.cymric, seed, sizeof(seed)) < 0)
        bench_failure("engines", -EIO);
    else if (randen && (randd_randen_init(&e.randen) < 0 ||
                        randd_randen_seed(&e.randen, seed, sizeof(seed)) < 0))
        bench_failure("Randen", -EIO);
    else if (aes && (randd_cymric_init(&e.cymric_aes, 0) < 0 ||
                     randd_cymric_use_stream(&e.cymric_aes, RANDD_STREAM_AES256CTR) < 0 ||
                     randd_cymric_seed(&e.cymric_aes, seed, sizeof(seed)) < 0))
        bench_failure("Cymric (AES-256-CTR)", -EIO);
    for (int i = 0; i < REPS && !bench_failing(); i++) {
        c[i] = bench_rate_once(op_cymric, &e, MIB, o->seconds / REPS) * MIB / 1e6;
        ca[i] = aes ? bench_rate_once(op_cymric_aes, &e, MIB, o->seconds / REPS) * MIB / 1e6 : NAN;
        r[i] = randen ? bench_rate_once(op_randen, &e, MIB, o->seconds / REPS) * MIB / 1e6 : NAN;
        a[i] = bench_rate_once(op_aes_ctr, &e, MIB, o->seconds / REPS) * MIB / 1e6;
    }
    bench_record("engine", "AES-128-CTR (EVP)", MIB, "throughput", "MB/s", bench_median(a, REPS));
    bench_record("engine", "Cymric", MIB, "throughput", "MB/s", bench_median(c, REPS));
    if (aes)
        bench_record("engine", "Cymric (AES-256-CTR)", MIB, "throughput", "MB/s",
                     bench_median(ca, REPS));
    if (randen)
        bench_record("engine", "Randen", MIB, "throughput", "MB/s", bench_median(r, REPS));
    randd_cymric_fini(&e.cymric);
    randd_cymric_fini(&e.cymric_aes);
    randd_randen_wipe(&e.randen);
    EVP_CIPHER_CTX_free(e.aes);
}

/* --- the noise-source modes: prediction resistance and full entropy (issue 28) -----------
 * Bounded by the daemon's noise sources, not by the generator: bytes per second where the
 * rest of this table counts megabytes. Each row is labelled with the healthy noise sources the
 * daemon has (its STATUS), so that runs against daemons with one source each (make
 * bench-modes) give a row per source. A daemon without one serves neither mode: the rows are
 * left out and the reason printed, not a failure. */

#define MODE_LATENCY_BYTES  32
#define MODE_PR_BYTES       4096             /* a prediction-resistant request: one reseed */
#define MODE_FE_BYTES       512              /* a full-entropy request: 4096 bits and margin */
#define MODE_MIN_SAMPLES    3
#define MODE_TIMEOUT_MS     60000            /* one request: jitter alone on a busy machine */

/* "rdseed+jitter": the daemon's healthy noise sources, as STATUS names them; "" for none. */
static void noise_sources(randd_handle *h, char *out, size_t cap)
{
    struct json_flat j = { 0 };
    char *text = NULL, path[64];
    size_t used = 0;

    out[0] = '\0';
    if (randd_status(h, &text) < 0 || json_flatten(text, &j) < 0) {
        free(text);
        return;
    }
    for (int i = 0;; i++) {
        const char *name, *state;

        snprintf(path, sizeof(path), "sources[%d].name", i);
        if (!(name = json_get(&j, path)))
            break;
        snprintf(path, sizeof(path), "sources[%d].state", i);
        state = json_get(&j, path);
        if (!strcmp(name, "getrandom") || !state || strcmp(state, "healthy"))
            continue;                                /* the kernel is not a noise source */
        used += (size_t)snprintf(out + used, cap > used ? cap - used : 0, "%s%s",
                                 used ? "+" : "", name);
    }
    json_flat_free(&j);
    free(text);
}

/* Requests of size in mode for about seconds (at least MODE_MIN_SAMPLES), each timed: the
 * throughput in bytes per second and the median and worst latency in ms. Returns 0 or the
 * first request's error. */
static int mode_run(randd_handle *h, enum randd_mode mode, size_t size, double seconds,
                    uint8_t *out, double *bytes_per_s, double *p50_ms, double *max_ms)
{
    double lat[4096], start = bench_now();
    size_t n = 0;

    while (n < sizeof(lat) / sizeof(lat[0]) &&
           (n < MODE_MIN_SAMPLES || bench_now() - start < seconds)) {
        double t0 = bench_now();
        int rc = randd_bytes_mode(h, out, size, mode);

        if (rc < 0)
            return rc;
        lat[n++] = (bench_now() - t0) * 1e3;
    }
    *bytes_per_s = (double)(n * size) / (bench_now() - start);
    *max_ms = 0;
    for (size_t i = 0; i < n; i++)
        *max_ms = lat[i] > *max_ms ? lat[i] : *max_ms;
    *p50_ms = bench_median(lat, n);
    return 0;
}

static void mode_rows(const char *what, const char *sources, enum randd_mode mode,
                      size_t bulk, const struct options *o, randd_handle *h, uint8_t *out)
{
    static char methods[4][80];
    static int used;
    char *method = methods[used++ % 4];
    double rate, p50, worst, unused;
    int rc;

    snprintf(method, sizeof(methods[0]), "%s: %s", what, sources);
    bench_progress("noise modes: %s, %zu B and %d B requests", method, bulk, MODE_LATENCY_BYTES);
    if ((rc = mode_run(h, mode, bulk, o->seconds, out, &rate, &unused, &unused)) == 0)
        bench_record("noise", method, bulk, "throughput", "B/s", rate);
    if (rc == 0 && (rc = mode_run(h, mode, MODE_LATENCY_BYTES, o->seconds, out, &unused, &p50,
                                  &worst)) == 0) {
        bench_record("noise", method, MODE_LATENCY_BYTES, "p50", "ms", p50);
        bench_record("noise", method, MODE_LATENCY_BYTES, "max", "ms", worst);
    }
    /* Not a failure of the benchmark: a daemon without the modes (MALFORMED from one older
     * than them, NO_NOISE_SOURCE) or too slow a source (the timeout) leaves its rows out. */
    if (rc < 0)
        fprintf(stderr, "randctl: benchmark: %s: rows left out: %s%s%s\n", method,
                randd_strerror(rc), *randd_message(h) ? ": " : "", randd_message(h));
}

/* Prediction-resistant and full-entropy rows, over a connection of their own. */
static void noise_modes(const struct options *o, uint8_t *out)
{
    static char sources[64];
    randd_handle *h;
    int rc;

    if ((rc = randd_open(&h, daemon_socket())) < 0) {
        bench_progress_skip(2);
        bench_failure("noise modes", rc);
        return;
    }
    randd_set_timeout(h, MODE_TIMEOUT_MS);
    noise_sources(h, sources, sizeof(sources));
    if (!sources[0]) {
        bench_progress_skip(2);
        fprintf(stderr, "randctl: benchmark: the daemon has no healthy noise source (the CPU's, "
                "hwrng, jitter): no prediction-resistant or full-entropy rows\n");
    } else {
        mode_rows("PR", sources, RANDD_MODE_PREDICTION_RESISTANT, MODE_PR_BYTES, o, h, out);
        mode_rows("FE", sources, RANDD_MODE_FULL_ENTROPY, MODE_FE_BYTES, o, h, out);
    }
    randd_close(h);
}

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
     * (with both cores busy, making and copying take turns and this falls short). */
    TARGET(librandd >= 0.8 * floor_rate, "bulk: randd_bytes() (BYTES_MEMFD) 1 MiB = %.0f%% of "
           "%s (>= 80%%)", 100 * librandd / floor_rate, floor_cipher());
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

/* Returns the number of targets missed (0 with --json or --csv, which print no targets). */
static int report(const struct options *o, const struct vdso_ctx *vdso, const randd_rng *rng)
{
    if (o->json)
        print_json();
    else if (o->csv)
        print_csv();
    else {
        printf("randctl benchmark: %.2f s per figure (median of %d runs; throughput and 32 B "
               "calls: of %d turns), %s vDSO getrandom\n", o->seconds, REPS,
               bench_turns_for(o->seconds), vdso->fn ? "with" : "no");
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
                        (o.compare_workers != NULL) + 2 + 1 + daemon_cpu_steps(&cost));
    if (o.modes_only) {
        bench_progress_plan(2);
        noise_modes(&o, out);
        goto done;
    }
    throughput(&o, &plain, daemon_ctx, &vdso);
    reseeds(&o, &plain);
    pingpong_floor(&o);
    latencies(&o, &plain, daemon_ctx, &vdso);
    ranges(&o, &plain, daemon_ctx);
    engines(&o, out);
    syscalls_per_request(out);
    for (size_t i = 0; i < o.nclients && !bench_failing(); i++) {
        bench_progress("clients: %u at once, 32 B requests", o.clients[i]);
        run_clients(o.clients[i], 4 * o.seconds, true);
    }
    if (o.compare_workers && !bench_failing())
        compare_workers(&o);
    daemon_cpu_rows(&o, &cost);
    noise_modes(&o, out);
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
    if ((missed = report(&o, &vdso, plain.rng)) > 0 && o.fail_on_miss) {
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
