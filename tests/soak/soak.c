/* soak: load and abuse against a running randd ($RANDD_SOCKET, pid in $RANDD_PID), loopback
 * only. 64 clients mix every op with random sizes, pipelining and malformed frames, checking
 * every reply (a PRIME may be BUSY: the clients share one uid and its share of the prime
 * worker); beside them, clients that connect and never send, send a byte at a time,
 * never read, or hang up mid-header, mid-body or mid-reply. Afterwards the daemon's RSS must
 * have stayed flat, its descriptors be back to the baseline, and STATUS's request and reply
 * counts equal what was sent.
 * Usage: soak [--seconds S] [--clients N]. Exit 0 pass, 1 a check failed, 2 could not run. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "prime.h"
#include "protocol.h"

#define ABUSERS_EACH 4
#define ABUSER_KINDS 4
#define MAX_OPS (RANDD_OP_LAST + 1)

static const char *socket_path;
static double deadline;
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* What the daemon should have counted: requests by op (0: unknown), replies by status. */
static uint64_t sent_ops[MAX_OPS], sent_statuses[RANDD_STATUS_COUNT], answered;
static uint64_t primes_found;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void failure(const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&lock);
    if (failures++ < 20) {
        fprintf(stderr, "soak: FAIL: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    pthread_mutex_unlock(&lock);
}

static void count(uint8_t op, int status)
{
    pthread_mutex_lock(&lock);
    sent_ops[op < MAX_OPS ? op : 0]++;
    if (status >= 0)
        sent_statuses[status]++;
    answered++;
    pthread_mutex_unlock(&lock);
}

static uint64_t rnd(uint64_t *s)                     /* splitmix64: sizes and choices */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int connect_daemon(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", socket_path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static int send_all(int fd, const void *p, size_t n)
{
    for (; n > 0;) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w <= 0)
            return -1;
        p = (const uint8_t *)p + w;
        n -= (size_t)w;
    }
    return 0;
}

static int recv_all(int fd, void *p, size_t n)
{
    for (; n > 0;) {
        ssize_t r = recv(fd, p, n, 0);

        if (r <= 0)
            return -1;
        p = (uint8_t *)p + r;
        n -= (size_t)r;
    }
    return 0;
}

/* Requests go through librandd's encoder, as every client's do. */
static size_t encode(uint8_t *q, size_t cap, const struct randd_request *req)
{
    size_t n = randd_request_encode(q, cap, req);

    if (n == 0) {
        fprintf(stderr, "soak: op %u does not fit in %zu bytes\n", req->op, cap);
        abort();
    }
    return n;
}

/* A header with no body: unknown ops, a body cut short. */
static size_t header_only(uint8_t *q, uint8_t op, uint32_t body_length)
{
    struct randd_header h = { RANDD_PROTOCOL_VERSION, op, 0, body_length };

    randd_header_encode(q, &h);
    return RANDD_HEADER_BYTES;
}

/* The frame in q with another version: what a client of some later protocol would send. */
static void set_version(uint8_t *q, uint8_t version)
{
    struct randd_header h;

    randd_header_decode(q, &h);
    h.version = version;
    randd_header_encode(q, &h);
}

/* --- well-formed and malformed requests, each reply checked ------------------------------- */

struct request {
    uint8_t buf[16 + 128];
    size_t len;
    uint8_t op;
    int want;                      /* expected status */
    uint32_t reply_len;            /* expected OK body length */
    bool closes;                   /* the daemon closes after this one */
    uint8_t r[64];                 /* RANGE */
    uint16_t rlen, count;
    unsigned bits;                 /* PRIME */
};

static void make_request(struct request *q, uint64_t *s)
{
    unsigned kind = (unsigned)(rnd(s) % 100);

    struct randd_request req = { 0 };

    memset(q, 0, sizeof(*q));
    q->want = RANDD_OK;
    if (kind < 45) {                       /* BYTES, mostly small; SEED, always small */
        req.op = kind < 3 ? RANDD_OP_SEED : RANDD_OP_BYTES;
        req.n = kind < 40 ? 1 + (uint32_t)(rnd(s) % RANDD_MAX_SEED)
                          : 1 + (uint32_t)(rnd(s) % (1u << 20));
        q->reply_len = req.n;
    } else if (kind < 70) {                            /* RANGE with a random r */
        req.op = RANDD_OP_RANGE;
        q->rlen = (uint16_t)(1 + rnd(s) % sizeof(q->r));
        q->count = (uint16_t)(1 + rnd(s) % 200);
        for (unsigned i = 0; i < q->rlen; i++)
            q->r[i] = (uint8_t)rnd(s);
        q->r[0] |= 1;                                  /* r > 0 */
        req.count = q->count, req.len = q->rlen, req.r = q->r;
        q->reply_len = (uint32_t)q->count * q->rlen;
    } else if (kind < 75) {
        req.op = RANDD_OP_STATUS;
        q->reply_len = UINT32_MAX;                     /* any length */
    } else if (kind < 80) {
        req.op = RANDD_OP_PRIME;
        q->bits = 16 + (unsigned)(rnd(s) % 241);       /* up to 256 bits: quick */
        req.bits = (uint16_t)q->bits;
        q->reply_len = (q->bits + 7) / 8;
    } else {                                           /* malformed, each its own way */
        switch (kind % 5) {
        case 0:
            q->op = (uint8_t)(RANDD_OP_LAST + 1 + rnd(s) % (255 - RANDD_OP_LAST));
            q->want = RANDD_UNKNOWN_OP;
            q->len = header_only(q->buf, q->op, 0);
            return;
        case 1:
            req.op = RANDD_OP_BYTES, req.n = 0, q->want = RANDD_INVALID_ARGUMENT;
            break;
        case 2:
            req.op = RANDD_OP_BYTES, req.n = RANDD_MAX_BYTES + 1, q->want = RANDD_TOO_LARGE;
            break;
        case 3:                                        /* a PRIME body one byte too long */
            q->op = RANDD_OP_PRIME, q->want = RANDD_MALFORMED;
            q->len = header_only(q->buf, q->op, 3);
            memset(q->buf + q->len, 0, 3), q->len += 3;
            return;
        default:
            req.op = RANDD_OP_BYTES, req.n = 16, q->want = RANDD_BAD_VERSION, q->closes = true;
            q->len = encode(q->buf, sizeof(q->buf), &req);
            set_version(q->buf, (uint8_t)(2 + rnd(s) % 200));
            q->op = req.op;
            return;
        }
    }
    q->op = req.op;
    q->len = encode(q->buf, sizeof(q->buf), &req);
}

/* The clients share one uid: a well-formed PRIME beyond its RANDD_PRIME_PER_UID under way is
 * rightly answered BUSY. */
static bool busy_is_right(const struct request *q, int status)
{
    return q->op == RANDD_OP_PRIME && q->want == RANDD_OK && status == RANDD_BUSY;
}

static int below_r(const uint8_t *v, const uint8_t *r, size_t len)
{
    return memcmp(v, r, len) < 0;
}

/* Reads and checks one reply. Returns 0, or -1 when the connection is done. */
static int check_reply(int fd, const struct request *q, uint8_t *body)
{
    uint8_t head[RANDD_HEADER_BYTES];
    struct randd_header h;

    if (recv_all(fd, head, sizeof(head)) < 0) {
        failure("op %u: connection lost before the reply", q->op);
        return -1;
    }
    randd_header_decode(head, &h);
    if (h.code != q->want && !busy_is_right(q, h.code)) {
        failure("op %u: status %s, expected %s", q->op, randd_status_name(h.code),
                randd_status_name(q->want));
        return -1;
    }
    if (h.length > (16u << 20) + 1 || recv_all(fd, body, h.length) < 0) {
        failure("op %u: reply body of %u bytes lost", q->op, h.length);
        return -1;
    }
    count(q->op, h.code);
    if (h.code != RANDD_OK)
        return q->closes ? -1 : 0;
    if (q->reply_len != UINT32_MAX && h.length != q->reply_len) {
        failure("op %u: %u bytes, expected %u", q->op, h.length, q->reply_len);
        return -1;
    }
    if (q->op == RANDD_OP_RANGE)
        for (unsigned i = 0; i < q->count; i++)
            if (!below_r(body + (size_t)i * q->rlen, q->r, q->rlen))
                failure("RANGE value %u not below r", i);
    if (q->op == RANDD_OP_PRIME) {
        unsigned top = (q->bits - 1) % 8;

        if (body[0] >> top != 1 || randd_is_prime_bytes(body, h.length) != 1)
            failure("PRIME %u bits: not a prime of that size", q->bits);
        pthread_mutex_lock(&lock);
        primes_found++;
        pthread_mutex_unlock(&lock);
    }
    return 0;
}

static void *mixed_client(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg * 7919 + 1;
    uint8_t *body = malloc((16u << 20) + 2);
    int fd = -1;

    while (now() < deadline) {
        struct request q[4];
        int depth = 1 + (int)(rnd(&s) % 4), rc = 0;

        if (fd < 0 && (fd = connect_daemon()) < 0) {
            failure("connect: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < depth; i++) {
            make_request(&q[i], &s);
            if (q[i].closes) {
                depth = i + 1;                 /* nothing after it would be read */
                break;
            }
        }
        for (int i = 0; i < depth && rc == 0; i++)
            rc = send_all(fd, q[i].buf, q[i].len);
        for (int i = 0; i < depth && rc == 0; i++)
            rc = check_reply(fd, &q[i], body);
        if (rc < 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0)
        close(fd);
    free(body);
    return NULL;
}

/* --- abusers --------------------------------------------------------------------------------- */

static void *silent_client(void *arg)
{
    (void)arg;
    while (now() < deadline) {
        int fd = connect_daemon();
        struct pollfd pf = { fd, POLLIN, 0 };

        if (fd < 0)
            return NULL;
        /* Until the deadline, or until the daemon closes an idle connection. */
        while (now() < deadline && poll(&pf, 1, 200) == 0)
            ;
        close(fd);
    }
    return NULL;
}

static void *trickle_client(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg + 99;
    uint8_t body[64];

    while (now() < deadline) {
        int fd = connect_daemon();
        struct request q;

        if (fd < 0)
            return NULL;
        make_request(&q, &s);
        while (q.op != RANDD_OP_BYTES || q.want != RANDD_OK || q.reply_len > sizeof(body))
            make_request(&q, &s);
        for (size_t i = 0; i < q.len; i++) {
            if (send_all(fd, q.buf + i, 1) < 0)
                break;
            usleep(2000);
        }
        check_reply(fd, &q, body);
        close(fd);
    }
    return NULL;
}

static void *stalled_client(void *arg)
{
    (void)arg;
    while (now() < deadline) {
        int fd = connect_daemon();
        struct randd_request req = { .op = RANDD_OP_BYTES, .n = RANDD_MAX_BYTES };
        uint8_t q[RANDD_HEADER_BYTES + 4];

        if (fd < 0)
            return NULL;
        if (send_all(fd, q, encode(q, sizeof(q), &req)) == 0)
            count(RANDD_OP_BYTES, RANDD_OK);      /* the daemon starts the reply at once */
        while (now() < deadline)
            usleep(100000);                        /* and we never read it */
        close(fd);
    }
    return NULL;
}

/* Hangs up part-way: in the header, in the body, or a few KiB into a 16 MiB reply. */
static void *quitter_client(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg * 31 + 5;
    struct randd_request req = { .op = RANDD_OP_BYTES, .n = RANDD_MAX_BYTES };
    uint8_t q[RANDD_HEADER_BYTES + 4], sink[4096];

    encode(q, sizeof(q), &req);
    while (now() < deadline) {
        int fd = connect_daemon();
        size_t keep;

        if (fd < 0)
            return NULL;
        switch (rnd(&s) % 3) {
        case 0:                                    /* mid-header */
            send_all(fd, q, 1 + rnd(&s) % (RANDD_HEADER_BYTES - 1));
            break;
        case 1:                                    /* mid-body */
            send_all(fd, q, RANDD_HEADER_BYTES + rnd(&s) % 4);
            break;
        default:                                   /* mid-reply */
            if (send_all(fd, q, sizeof(q)) == 0)
                count(RANDD_OP_BYTES, RANDD_OK);
            for (keep = 1 + rnd(&s) % (64 * 1024); keep > 0;) {
                size_t step = keep < sizeof(sink) ? keep : sizeof(sink);

                if (recv_all(fd, sink, step) < 0)
                    break;
                keep -= step;
            }
            break;
        }
        close(fd);
        usleep(1000);
    }
    return NULL;
}

/* --- the daemon from outside ------------------------------------------------------------------ */

static long rss_kib(const char *pid)
{
    char path[64], line[256];
    long v = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%s/status", pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            v = strtol(line + 6, NULL, 10);
    fclose(f);
    return v;
}

static int fd_count(const char *pid)
{
    char path[64];
    struct dirent *e;
    int n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%s/fd", pid);
    if (!(d = opendir(path)))
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* STATUS JSON over a connection the caller keeps, as one string (NULL if none came). */
static char *status_json(int fd)
{
    struct randd_request req = { .op = RANDD_OP_STATUS };
    uint8_t q[RANDD_HEADER_BYTES], head[RANDD_HEADER_BYTES];
    struct randd_header h;
    char *json = NULL;

    if (send_all(fd, q, encode(q, sizeof(q), &req)) == 0 && recv_all(fd, head, sizeof(head)) == 0) {
        randd_header_decode(head, &h);
        json = calloc(1, (size_t)h.length + 1);
        if (json && recv_all(fd, json, h.length) < 0)
            json[0] = '\0';
    }
    return json;
}

/* STATUS over fd once the daemon counts fd as its only client, every earlier connection
 * closed on its side too, so that its descriptors can be counted; a minute at most. The
 * polls before the one returned are counted as the soak's own STATUS requests when
 * count_polls is set (after the soak; before it, the returned one includes them). */
static char *status_when_only_client(int fd, bool count_polls)
{
    for (double end = now() + 60;; usleep(50000)) {
        char *json = status_json(fd);

        if (!json || strstr(json, "\"clients\":{\"connected\":1,") || now() >= end)
            return json;
        free(json);
        if (count_polls)
            count(RANDD_OP_STATUS, RANDD_OK);
    }
}

static uint64_t json_count(const char *json, const char *section, const char *key)
{
    char want[64];
    const char *p = strstr(json, section);

    snprintf(want, sizeof(want), "\"%s\":", key);
    p = p ? strstr(p, want) : NULL;
    return p ? strtoull(p + strlen(want), NULL, 10) : UINT64_MAX;
}

int main(int argc, char **argv)
{
    double seconds = 600;
    int clients = 64, fds0, fds1, probe;
    const char *pid = getenv("RANDD_PID");
    long rss0, rss_first_max = 0, rss_max = 0, rss1;
    pthread_t *t;
    char *before, *after;
    int nthreads = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients"))
            clients = atoi(argv[i + 1]);
    }
    socket_path = getenv("RANDD_SOCKET");
    if (!socket_path || !pid) {
        fprintf(stderr, "soak: needs RANDD_SOCKET and RANDD_PID (run it through tests/bench/with-daemon)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    probe = connect_daemon();
    if (probe < 0 || !(before = status_when_only_client(probe, false))) {
        fprintf(stderr, "soak: no STATUS from %s\n", socket_path);
        return 2;
    }
    if (!strstr(before, "\"clients\":{\"connected\":1,"))
        failure("other clients still connected before the soak: %s", before);
    rss0 = rss_kib(pid);
    fds0 = fd_count(pid);
    deadline = now() + seconds;
    t = calloc((size_t)clients + ABUSER_KINDS * ABUSERS_EACH, sizeof(*t));
    for (int i = 0; i < clients; i++)
        pthread_create(&t[nthreads++], NULL, mixed_client, (void *)(uintptr_t)i);
    for (int i = 0; i < ABUSERS_EACH; i++) {
        pthread_create(&t[nthreads++], NULL, silent_client, NULL);
        pthread_create(&t[nthreads++], NULL, trickle_client, (void *)(uintptr_t)i);
        pthread_create(&t[nthreads++], NULL, stalled_client, NULL);
        pthread_create(&t[nthreads++], NULL, quitter_client, (void *)(uintptr_t)i);
    }
    for (double start = now(); now() < deadline; sleep(1)) {
        long rss = rss_kib(pid);

        if (rss > rss_max)
            rss_max = rss;
        if (now() - start < seconds / 2 && rss > rss_first_max)
            rss_first_max = rss;
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    free(t);
    close(probe);                       /* idle through the soak: the daemon may have closed it */
    probe = connect_daemon();
    after = probe < 0 ? NULL : status_when_only_client(probe, true);
    count(RANDD_OP_STATUS, -1);                       /* the final STATUS counts itself */
    if (after && !strstr(after, "\"clients\":{\"connected\":1,"))
        failure("clients still connected a minute after the soak: %s", after);
    rss1 = rss_kib(pid);
    fds1 = fd_count(pid);
    if (probe >= 0)
        close(probe);

    printf("soak: %.0f s, %d clients + %d abusers: %llu replies checked; RSS %ld -> max %ld "
           "(first half %ld) -> %ld KiB; descriptors %d -> %d\n", seconds, clients,
           ABUSER_KINDS * ABUSERS_EACH, (unsigned long long)answered, rss0, rss_max,
           rss_first_max, rss1, fds0, fds1);
    if (fds1 != fds0)
        failure("daemon descriptors %d after the soak, %d before", fds1, fds0);
    if (getenv("RANDD_SANITIZED"))
        printf("soak: RSS not judged: AddressSanitizer holds freed memory in quarantine\n");
    else if (rss_max - rss0 > 16 * 1024 || rss_max - rss_first_max > 4 * 1024)
        failure("RSS grew: %ld KiB at start, %ld max in the first half, %ld max overall", rss0,
                rss_first_max, rss_max);
    for (int op = 0; op < MAX_OPS && after; op++) {
        uint64_t delta = json_count(after, "\"requests\"", randd_op_name(op)) -
                         json_count(before, "\"requests\"", randd_op_name(op));

        /* The first STATUS counted itself in "before"; everything since is ours. */
        if (delta != sent_ops[op])
            failure("STATUS counts %llu %s requests, the soak sent %llu", (unsigned long long)delta,
                    randd_op_name(op), (unsigned long long)sent_ops[op]);
    }
    for (int st = 0; st < RANDD_STATUS_COUNT && after; st++) {
        uint64_t delta = json_count(after, "\"replies\"", randd_status_name(st)) -
                         json_count(before, "\"replies\"", randd_status_name(st));

        /* "before" was built before its own OK was counted: one OK more than ours. */
        if (delta != sent_statuses[st] + (st == RANDD_OK))
            failure("STATUS counts %llu %s replies, the soak saw %llu", (unsigned long long)delta,
                    randd_status_name(st), (unsigned long long)sent_statuses[st]);
    }
    if (!after)
        failure("no STATUS after the soak");
    if (!primes_found)
        failure("no PRIME was answered with a prime (all BUSY?)");
    free(before);
    free(after);
    printf("soak: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
