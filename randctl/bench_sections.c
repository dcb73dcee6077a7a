/* randctl benchmark's sections: each takes its rows, with the engine's rates and histograms,
 * from the methods the other files provide: throughput at every size, the seeding cost, the
 * ping-pong floor, latencies, ranges, the engines' raw rates and the noise-source modes. The
 * daemon's own rows are bench_daemon.c's; the order they run in is benchmark.c's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "aes_ctr.h"
#include "bench.h"
#include "cymric.h"
#include "json.h"
#include "randen.h"

/* The ping-pong floor; the keystream floor is measured among the throughput runs. */
void section_pingpong_floor(const struct options *o)
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
void section_throughput(const struct options *o, struct plain_ctx *p, struct randd_ctx *r,
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
    static double rates[NMETHODS][NSIZES][TURNS], floor_rates[NSIZES * TURNS],
                  openssl_rates[NSIZES * TURNS];
    bool own_keystream;
    static double stream_rates[TURNS];
    int turns = bench_turns_for(o->seconds);
    double slice = o->seconds / turns, seeds = seed_requests();
    bool have[NMETHODS];
    struct stream st;
    int rc;

    for (size_t m = 0; m < NMETHODS; m++)
        have[m] = (methods[m].op != op_vdso || v->fn) &&
                  (methods[m].op != op_rand_bytes_randd || p->randd_seeded);

    own_keystream = floor_is_aes() && randd_aes256ctr_available();
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
            if (own_keystream)
                openssl_rates[s * turns + rep] =
                    bench_rate_once(op_openssl_keystream, p, 16384, slice) * 16384 / 1e6;
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
    if (own_keystream)               /* the floor is randd's code: OpenSSL's beside it */
        bench_record("floor", "AES-256-CTR (OpenSSL)", 16384, "throughput", "MB/s",
                     bench_median(openssl_rates, NSIZES * turns));
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

void section_latencies(const struct options *o, struct plain_ctx *p, struct randd_ctx *r,
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

void section_ranges(const struct options *o, struct plain_ctx *p, struct randd_ctx *r)
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
void section_reseeds(const struct options *o, struct plain_ctx *p)
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

void section_engines(const struct options *o, uint8_t *out)
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
void section_noise_modes(const struct options *o, uint8_t *out)
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

