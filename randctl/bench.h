/* What randctl benchmark's files share: the measuring engine's API (bench_engine.c: the rows,
 * the progress line, rates, medians, histograms, the first failure, and a pipelining
 * connection to the daemon), and the contexts the methods measured run in. The methods live
 * in bench_alternatives.c, bench_vdso.c and bench_daemon.c, the sections that take their rows
 * in bench_sections.c and bench_daemon.c, the report and the command in benchmark.c. */
#ifndef RANDCTL_BENCH_H
#define RANDCTL_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/types.h>

#include "randctl.h"

#define MIB           (1u << 20)
#define REPS          5              /* each figure is the median of REPS timed runs */
/* Figures that targets compare across methods (throughput, the 32-byte call) are medians of
 * TURNS shorter runs, every method in turn: on a shared machine the neighbours' load swings
 * within a second, and 0.2 s turns 0.8 s apart moved in-process/RAND_bytes at 64 KiB from
 * 0.89x to 1.5x between runs where 20 ms turns held 1.13x at a load of 30 (issue 32).
 * Turns shorter than TURN_MIN seconds would only add the slowest calls' overshoot (a 1 MiB
 * getrandom takes 8 ms), so a short --seconds, as the tests use, takes fewer. */
#define TURNS         25
#define TURN_MIN      0.02
#define PIPELINE      8              /* requests in flight in the randd throughput runs */
#define RANGE_COUNT   1000

static const size_t sizes[] = { 32, 4096, 65536, MIB };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* secp256k1's group order: a 256-bit r close to, but not at, a power of two. */
static const uint8_t range_r[32] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
};

/* The command's options, as every section reads them. */
struct options {
    double seconds;
    unsigned clients[8];
    size_t nclients;
    int json, csv;
    int fail_on_miss;                 /* --fail-on-miss: a MISS exits 1, for scripts */
    const char *compare_workers;      /* a randd to start with workers = 1 and 2; NULL: no */
    int modes_only;                   /* --modes: the noise-source modes' rows alone */
};

/* --- the engine (bench_engine.c) ----------------------------------------------------------- */

double bench_now(void);

/* The first thing that failed: every measurement after it returns at once, and the command
 * reports it and exits 1. */
void bench_failure(const char *what, int err);
bool bench_failing(void);
/* The first failure's error (0: none) and, through what, what failed. */
int bench_failed(const char **what);

/* One row of the report. Its strings are kept, not copied. */
struct result {
    const char *section, *method;
    size_t size;                /* request size in bytes; 0 when it does not apply */
    const char *metric, *unit;
    double value;
};

const struct result *bench_record(const char *section, const char *method, size_t size,
                                  const char *metric, const char *unit, double value);
const struct result *bench_find(const char *section, const char *method, size_t size,
                                const char *metric);
/* The row's value; NAN when there is no such row. */
double bench_value_of(const char *section, const char *method, size_t size, const char *metric);
/* Every row so far, in the order recorded. */
const struct result *bench_results(size_t *n);

/* "[step/steps] what", a line each on a pipe, one line rewritten on a terminal. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* How many steps the run has, for the [N/M] before each line. */
void bench_progress_plan(int n);
/* Steps that were planned but will not be taken (a section that left its rows out). */
void bench_progress_skip(int n);

/* One operation of size bytes on ctx: 0 or a negative errno. */
typedef int (*op_fn)(void *ctx, size_t size);

/* Operations per second over one run of about seconds; NAN once anything failed. */
double bench_rate_once(op_fn op, void *ctx, size_t size, double seconds);
/* Operations per second: the median of REPS runs of seconds / REPS each. */
double bench_rate(op_fn op, void *ctx, size_t size, double seconds);
/* How many turns the cross-method figures take: TURNS, or fewer of TURN_MIN, at least REPS. */
int bench_turns_for(double seconds);
/* The median of v's n values (v is sorted). */
double bench_median(double *v, size_t n);

/* Latencies, binned logarithmically (2% wide bins) so any number of samples fits. */
#define HIST_BINS 1200
struct histogram {
    uint64_t bins[HIST_BINS];
    uint64_t total;
};

void hist_add(struct histogram *h, double ns);
void hist_merge(struct histogram *into, const struct histogram *h);
double hist_percentile(const struct histogram *h, double p);
/* Each op's latency into h, for about seconds. */
void bench_latency(op_fn op, void *ctx, size_t size, double seconds, struct histogram *h);

/* A connection to the daemon, speaking the protocol directly so requests pipeline. */
struct conn {
    int fd;
    size_t have, pos;
    uint8_t buf[64 << 10];
};

struct randd_ctx {
    struct conn conn;
    uint8_t *out;
    int depth;                 /* requests sent before the replies are read */
};

int conn_open(struct conn *c);
/* Where conn_open connects from now on: path, or the running daemon's when NULL. */
void conn_use_socket(const char *path);
/* depth BYTES requests of size (ctx: a struct randd_ctx), then their replies. */
int op_randd(void *ctx, size_t size);
/* One RANGE of RANGE_COUNT numbers below range_r (ctx: a struct randd_ctx). */
int op_range(void *ctx, size_t size);

/* --- the alternatives (bench_alternatives.c, bench_vdso.c) ---------------------------------- */

/* What the alternatives run in: op_getrandom, op_urandom, op_rand_bytes, op_rand_bytes_randd,
 * op_librandd, op_in_process, op_keystream and op_bn_rand_range each take one. */
struct plain_ctx {
    uint8_t *out;
    int fd;
    randd_handle *daemon;            /* librandd's handle: what a randd_bytes caller gets */
    randd_rng *rng;
    EVP_CIPHER_CTX *cipher;
    BIGNUM *r, *v;
    OSSL_LIB_CTX *randd_seeded;      /* RAND_bytes with randd.so as seed source; NULL: none */
};

int op_getrandom(void *ctx, size_t size);
int op_urandom(void *ctx, size_t size);
int op_rand_bytes(void *ctx, size_t size);
int op_rand_bytes_randd(void *ctx, size_t size);
int op_librandd(void *ctx, size_t size);
int op_in_process(void *ctx, size_t size);
int op_keystream(void *ctx, size_t size);
int op_openssl_keystream(void *ctx, size_t size);
int op_bn_rand_range(void *ctx, size_t size);

/* The keystream floor's cipher: the one randd's generators run by default here. */
bool floor_is_aes(void);
const char *floor_cipher(void);
const char *floor_name(void);

/* OpenSSL in a library context of its own whose seed source is randd.so. */
struct seeded {
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *base, *randd;
};

int seeded_open(struct seeded *s);
void seeded_close(struct seeded *s);
/* The daemon's count of SEED requests, from STATUS; NAN when it cannot be had. */
double seed_requests(void);

/* The AF_UNIX ping-pong floor: an echo thread answering 8 bytes with 32 (op_pingpong). */
struct echo {
    int fds[2];
    pthread_t thread;
};

int echo_open(struct echo *e);
void echo_close(struct echo *e);
int op_pingpong(void *ctx, size_t size);

/* The AF_UNIX stream floor: a thread writing ready bytes, 64 KiB a write (op_stream). */
struct stream {
    int fds[2];
    pthread_t thread;
    uint8_t *out;
};

int stream_open(struct stream *st);
void stream_close(struct stream *st);
int op_stream(void *ctx, size_t size);

/* The kernel's vDSO getrandom (Linux 6.11+), where there is one (op_vdso). */
typedef ssize_t (*vgetrandom_fn)(void *buf, size_t len, unsigned flags, void *state,
                                 size_t state_len);

struct vdso_ctx {
    vgetrandom_fn fn;               /* NULL: no vDSO getrandom here */
    void *state;
    size_t state_len;
    uint8_t *out;
};

/* 0, or -ENOSYS where the vDSO has no getrandom. */
int vdso_open(struct vdso_ctx *v);
int op_vdso(void *ctx, size_t size);

/* --- the sections (bench_sections.c) -------------------------------------------------------- */

void section_throughput(const struct options *o, struct plain_ctx *p, struct randd_ctx *r,
                        struct vdso_ctx *v);
void section_reseeds(const struct options *o, struct plain_ctx *p);
void section_pingpong_floor(const struct options *o);
void section_latencies(const struct options *o, struct plain_ctx *p, struct randd_ctx *r,
                       struct vdso_ctx *v);
void section_ranges(const struct options *o, struct plain_ctx *p, struct randd_ctx *r);
void section_engines(const struct options *o, uint8_t *out);
void section_noise_modes(const struct options *o, uint8_t *out);

/* --- the daemon's side (bench_daemon.c) ----------------------------------------------------- */

/* What the daemon measured is, from its STATUS, read once: mode ("default", "approved"),
 * pool.engine and, for a DRBG engine, pool.drbg.mechanism; "" where STATUS does not say (a
 * daemon from before them). */
struct daemon_identity {
    char mode[16], engine[32], drbg[64];
};

/* Reads it from h, and records it as rows "daemon,MODE,0,mode,1," and
 * "daemon,ENGINE,0,engine,1," (1, labelled, as the metrics' randd_mode and randd_engine). */
void daemon_identity_rows(randd_handle *h, struct daemon_identity *id);

/* n clients at once for seconds: returns the aggregate requests a second (NAN on failure),
 * and records it, p99.9 and errors as "randd xN" when asked. */
double run_clients(unsigned n, double seconds, bool record_them);
/* The same randd (o->compare_workers) with workers = 1 and 2, started here. */
void compare_workers(const struct options *o);

struct daemon_cost {
    pid_t pid;                 /* 0: unknown, no rows */
    double idle_rss_mib;       /* VmRSS before the benchmark's first request, settled */
};

/* The daemon at the other end of fd, if this process can see its /proc; and its RSS once it
 * has settled (up to 20 s). */
void daemon_cost_begin(struct daemon_cost *c, int fd);
void daemon_cpu_rows(const struct options *o, const struct daemon_cost *c);
/* How many progress steps daemon_cpu_rows takes: none where the daemon cannot be seen. */
int daemon_cpu_steps(const struct options *o, const struct daemon_cost *c);
void daemon_memory_rows(const struct daemon_cost *c);
/* Prints the CPU and memory targets' lines; returns how many were missed. */
int daemon_cost_targets(void);
void syscalls_per_request(uint8_t *out);
/* Prints the system calls' target line; adds to *missed when it is missed. */
void syscall_targets(int *missed);

#endif
