/* randctl benchmark's measuring engine: the rows of the report, the progress line, rates
 * and their medians, latency histograms, the first failure (after which every measurement
 * returns at once), and a connection to the daemon that speaks the protocol itself so that
 * requests pipeline. It measures what it is handed; what is measured lives elsewhere. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "protocol.h"

double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The first thing that failed: every measurement after it returns at once, and the command
 * reports it and exits 1. */
static const char *failed_what;
static int failed_err;

void bench_failure(const char *what, int err)
{
    if (!failed_err) {
        failed_what = what;
        failed_err = err < 0 ? err : -EIO;
    }
}

bool bench_failing(void)
{
    return failed_err != 0;
}

/* The first failure's error (0: none) and, through what, what failed. */
int bench_failed(const char **what)
{
    *what = failed_what;
    return failed_err;
}

/* --- results ------------------------------------------------------------------------------ */

static struct result rows[160];
static size_t nrows;

const struct result *bench_record(const char *section, const char *method, size_t size,
                                  const char *metric, const char *unit, double value)
{
    struct result *r = &rows[nrows++];

    *r = (struct result){ section, method, size, metric, unit, value };
    return r;
}

const struct result *bench_find(const char *section, const char *method, size_t size,
                                const char *metric)
{
    for (size_t i = 0; i < nrows; i++)
        if (!strcmp(rows[i].section, section) && !strcmp(rows[i].method, method) &&
            rows[i].size == size && !strcmp(rows[i].metric, metric))
            return &rows[i];
    return NULL;
}

double bench_value_of(const char *section, const char *method, size_t size, const char *metric)
{
    const struct result *r = bench_find(section, method, size, metric);

    return r ? r->value : NAN;
}

/* Every row so far, in the order recorded. */
const struct result *bench_results(size_t *n)
{
    *n = nrows;
    return rows;
}

/* --- progress ----------------------------------------------------------------------------- */

static int step, steps;

/* How many steps the run has, for the [N/M] before each line. */
void bench_progress_plan(int n)
{
    steps = n;
}

/* Steps that were planned but will not be taken (a section that left its rows out). */
void bench_progress_skip(int n)
{
    step += n;
}

void bench_progress(const char *fmt, ...)
{
    va_list ap;

    step++;
    fprintf(stderr, isatty(STDERR_FILENO) ? "\r\033[K[%2d/%d] " : "[%2d/%d] ", step, steps);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (!isatty(STDERR_FILENO))
        fputc('\n', stderr);
}

/* --- timing ------------------------------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Operations per second over one run of about seconds; NAN once anything failed. */
double bench_rate_once(op_fn op, void *ctx, size_t size, double seconds)
{
    double start = bench_now(), elapsed;
    uint64_t ops = 0;
    unsigned batch = 1;

    if (bench_failing())
        return NAN;
    do {
        for (unsigned i = 0; i < batch; i++) {
            int rc = op(ctx, size);

            if (rc < 0) {
                bench_failure("request failed", rc);
                return NAN;
            }
        }
        ops += batch;
        elapsed = bench_now() - start;
        if (batch < (1u << 16) && elapsed < 1e-3)
            batch *= 2;                      /* the clock is read about once a millisecond */
    } while (elapsed < seconds);
    return (double)ops / elapsed;
}

/* How many turns the cross-method figures take: TURNS, or fewer of TURN_MIN, at least REPS. */
int bench_turns_for(double seconds)
{
    int n = (int)(seconds / TURN_MIN);

    return n > TURNS ? TURNS : n < REPS ? REPS : n;
}

double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof(v[0]), compare_doubles);
    return v[n / 2];
}

/* Operations per second: the median of REPS runs of seconds / REPS each. */
double bench_rate(op_fn op, void *ctx, size_t size, double seconds)
{
    double rates[REPS];

    for (int r = 0; r < REPS; r++)
        rates[r] = bench_rate_once(op, ctx, size, seconds / REPS);
    return bench_median(rates, REPS);
}

void hist_add(struct histogram *h, double ns)
{
    int bin = ns < 1 ? 0 : (int)(log(ns) / log(1.02));

    h->bins[bin < HIST_BINS ? bin : HIST_BINS - 1]++;
    h->total++;
}

void hist_merge(struct histogram *into, const struct histogram *h)
{
    for (int i = 0; i < HIST_BINS; i++)
        into->bins[i] += h->bins[i];
    into->total += h->total;
}

double hist_percentile(const struct histogram *h, double p)
{
    uint64_t want = (uint64_t)ceil(p / 100 * (double)h->total), seen = 0;

    for (int i = 0; i < HIST_BINS; i++)
        if ((seen += h->bins[i]) >= want && h->bins[i])
            return pow(1.02, i + 0.5);
    return NAN;
}

void bench_latency(op_fn op, void *ctx, size_t size, double seconds, struct histogram *h)
{
    double end = bench_now() + seconds;

    while (!bench_failing() && bench_now() < end) {
        for (int i = 0; i < 64; i++) {
            double t0 = bench_now();
            int rc = op(ctx, size);

            if (rc < 0) {
                bench_failure("request failed", rc);
                return;
            }
            hist_add(h, (bench_now() - t0) * 1e9);
        }
    }
}

/* --- a connection to the daemon, speaking the protocol directly so requests pipeline ------ */

/* A daemon the benchmark started itself (--compare-workers); NULL: the running one. */
static const char *started_socket;

/* Where conn_open connects from now on: path, or the running daemon's when NULL. */
void conn_use_socket(const char *path)
{
    started_socket = path;
}

int conn_open(struct conn *c)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    const char *path = started_socket ? started_socket : daemon_socket();

    c->have = c->pos = 0;
    c->fd = -1;
    if (strlen(path) >= sizeof(addr.sun_path))
        return -ENAMETOOLONG;
    strcpy(addr.sun_path, path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -errno;
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int err = -errno;

        close(c->fd);
        c->fd = -1;
        return err;
    }
    return 0;
}

static int send_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);     /* a daemon gone is an error, not a signal */

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EPIPE;
        p = (const uint8_t *)p + w;
        n -= (size_t)w;
    }
    return 0;
}

/* n bytes of the reply stream; large reads bypass the buffer. */
static int conn_read(struct conn *c, void *dst, size_t n)
{
    uint8_t *out = dst;

    while (n > 0) {
        if (c->pos == c->have) {
            ssize_t r;

            c->pos = c->have = 0;
            if (n >= sizeof(c->buf)) {
                r = read(c->fd, out, n);
                if (r > 0) {
                    out += r;
                    n -= (size_t)r;
                    continue;
                }
            } else {
                r = read(c->fd, c->buf, sizeof(c->buf));
                if (r > 0)
                    c->have = (size_t)r;
            }
            if (r == 0)
                return -ECONNRESET;
            if (r < 0 && errno != EINTR)
                return -errno;
            continue;
        }
        size_t take = c->have - c->pos < n ? c->have - c->pos : n;

        memcpy(out, c->buf + c->pos, take);
        c->pos += take;
        out += take;
        n -= take;
    }
    return 0;
}

/* One reply into out (len bytes expected); a non-OK status becomes an error. A body of a
 * buffer or more, with nothing buffered, is read with its header in one readv, straight
 * into out, as a client that knows the size does: read through the buffer, the first 64 KiB
 * of each reply were copied twice. */
static int read_reply(struct conn *c, void *out, size_t len)
{
    uint8_t head[RANDD_HEADER_BYTES];
    uint32_t length;
    size_t body = 0;                  /* bytes of the body already in out */
    int rc = 0;

    if (c->pos == c->have && len >= sizeof(c->buf)) {
        struct iovec parts[2] = { { head, sizeof(head) }, { out, len } };
        ssize_t r;

        while ((r = readv(c->fd, parts, 2)) < 0 && errno == EINTR)
            ;
        if (r <= 0)
            return r < 0 ? -errno : -ECONNRESET;
        if ((size_t)r >= sizeof(head))
            body = (size_t)r - sizeof(head);
        else
            rc = conn_read(c, head + r, sizeof(head) - (size_t)r);
    } else
        rc = conn_read(c, head, sizeof(head));
    if (rc == 0)
        rc = randd_reply_decode(head, len, &length);
    return rc < 0 ? rc : conn_read(c, (uint8_t *)out + body, len - body);
}

/* depth BYTES requests sent at once, then their replies read: the pipelining librandd does,
 * with every request the size measured. */
int op_randd(void *ctx, size_t size)
{
    struct randd_ctx *r = ctx;
    struct randd_request bytes = { .op = RANDD_OP_BYTES, .n = (uint32_t)size };
    uint8_t req[PIPELINE * (RANDD_HEADER_BYTES + 4)];
    size_t len = 0;
    int rc;

    for (int i = 0; i < r->depth; i++)
        len += randd_request_encode(req + len, sizeof(req) - len, &bytes);
    rc = send_all(r->conn.fd, req, len);
    for (int i = 0; i < r->depth && rc == 0; i++)
        rc = read_reply(&r->conn, r->out, size);
    return rc;
}

int op_range(void *ctx, size_t size)
{
    struct randd_ctx *r = ctx;
    struct randd_request range = { .op = RANDD_OP_RANGE, .count = RANGE_COUNT,
                                   .len = sizeof(range_r), .r = range_r };
    uint8_t req[RANDD_HEADER_BYTES + 4 + sizeof(range_r)];
    int rc;

    (void)size;
    rc = send_all(r->conn.fd, req, randd_request_encode(req, sizeof(req), &range));
    return rc < 0 ? rc : read_reply(&r->conn, r->out, RANGE_COUNT * sizeof(range_r));
}
