/* latency-probe: how long ordinary requests take, for test_ordinary_latency.sh, measured by
 * a client of its own rather than randctl, whose start-up (exec, dynamic linking, more so
 * beside CPU hogs) would be counted with the daemon's time.
 *
 *   latency-probe SOCKET COUNT PAUSE_MS SIZE...
 *     COUNT plain BYTES requests (no flags), each on a new connection, their sizes taken
 *     from the SIZEs in turn, PAUSE_MS apart. Each is timed from connect to the last byte
 *     of its reply and printed as "SIZE SECONDS", one line a request. Exits 1, saying why,
 *     on any refusal, short reply or a reply that does not come within a minute.
 *
 *   latency-probe --nonblock-burst SOCKET COUNT SIZE
 *     COUNT NONBLOCK BYTES requests of SIZE bytes, sent at once on one connection (so they
 *     can wait in the socket while the daemon is stopped), then "sent" on stdout; then the
 *     replies are read and counted: "ok N not_ready M". Exits 1 on any other status or a
 *     short or missing reply.
 *
 * Test-only: never installed. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

#define REPLY_WAIT_MS 60000          /* a loaded machine; a reply never comes: give up */
#define READ_CHUNK    (256u << 10)

static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads exactly n bytes (into buf, at most cap of them kept: a body is only counted). */
static int read_all(int fd, uint8_t *buf, size_t cap, size_t n, const char *what)
{
    struct pollfd p = { fd, POLLIN, 0 };

    while (n > 0) {
        ssize_t got;

        if (poll(&p, 1, REPLY_WAIT_MS) != 1) {
            fprintf(stderr, "latency-probe: no %s within %d ms\n", what, REPLY_WAIT_MS);
            return -1;
        }
        got = recv(fd, buf, n < cap ? n : cap, 0);
        if (got <= 0) {
            fprintf(stderr, "latency-probe: %s: %s\n", what,
                    got == 0 ? "the daemon closed the connection" : strerror(errno));
            return -1;
        }
        n -= (size_t)got;
    }
    return 0;
}

/* One BYTES request of size bytes on a new connection; its time in *seconds. */
static int one_request(const char *path, uint32_t size, uint8_t *buf, double *seconds)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct randd_request req = { .op = RANDD_OP_BYTES, .n = size };
    uint8_t frame[RANDD_HEADER_BYTES + 4], head[RANDD_HEADER_BYTES];
    size_t len = randd_request_encode(frame, sizeof(frame), &req);
    struct randd_header h;
    double start = now_seconds();
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = -1;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len) {
        fprintf(stderr, "latency-probe: %s: %s\n", path, strerror(errno));
        goto out;
    }
    if (read_all(fd, head, sizeof(head), sizeof(head), "reply header") < 0)
        goto out;
    randd_header_decode(head, &h);
    if (h.code != RANDD_OK || h.length != size) {
        fprintf(stderr, "latency-probe: BYTES %u answered status %u with %u bytes\n",
                (unsigned)size, (unsigned)h.code, (unsigned)h.length);
        goto out;
    }
    if (read_all(fd, buf, READ_CHUNK, size, "reply body") < 0)
        goto out;
    *seconds = now_seconds() - start;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* --nonblock-burst: see the top of the file. */
static int nonblock_burst(const char *path, long count, uint32_t size, uint8_t *buf)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct randd_request req = { .op = RANDD_OP_BYTES, .flags = RANDD_FLAG_NONBLOCK,
                                 .n = size };
    uint8_t frame[RANDD_HEADER_BYTES + 4], head[RANDD_HEADER_BYTES];
    size_t len = randd_request_encode(frame, sizeof(frame), &req);
    long ok = 0, not_ready = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = 1;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "latency-probe: %s: %s\n", path, strerror(errno));
        goto out;
    }
    for (long i = 0; i < count; i++)
        if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len) {
            fprintf(stderr, "latency-probe: sending request %ld: %s\n", i + 1, strerror(errno));
            goto out;
        }
    printf("sent\n");
    fflush(stdout);
    for (long i = 0; i < count; i++) {
        struct randd_header h;

        if (read_all(fd, head, sizeof(head), sizeof(head), "reply header") < 0)
            goto out;
        randd_header_decode(head, &h);
        if (h.code == RANDD_OK && h.length == size)
            ok++;
        else if (h.code == RANDD_NOT_READY)
            not_ready++;
        else {
            fprintf(stderr, "latency-probe: NONBLOCK BYTES %u answered status %u with %u "
                    "bytes\n", (unsigned)size, (unsigned)h.code, (unsigned)h.length);
            goto out;
        }
        if (h.length && read_all(fd, buf, READ_CHUNK, h.length, "reply body") < 0)
            goto out;
    }
    printf("ok %ld not_ready %ld\n", ok, not_ready);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    static uint8_t buf[READ_CHUNK];
    long count, pause_ms;

    if (argc == 5 && !strcmp(argv[1], "--nonblock-burst")) {
        long size = atol(argv[4]);
        int rc;

        if ((count = atol(argv[3])) < 1 || size < 1 || size > (long)READ_CHUNK) {
            fprintf(stderr, "usage: latency-probe --nonblock-burst SOCKET COUNT SIZE\n");
            return 2;
        }
        rc = nonblock_burst(argv[2], count, (uint32_t)size, buf);
        explicit_bzero(buf, sizeof(buf));
        return rc;
    }

    if (argc < 5 || (count = atol(argv[2])) < 1 || (pause_ms = atol(argv[3])) < 0) {
        fprintf(stderr, "usage: latency-probe SOCKET COUNT PAUSE_MS SIZE...\n");
        return 2;
    }
    for (long i = 0; i < count; i++) {
        long size = atol(argv[4 + i % (argc - 4)]);
        double seconds;

        if (size < 1 || size > RANDD_MAX_BYTES) {
            fprintf(stderr, "latency-probe: a SIZE is 1 to %u\n", (unsigned)RANDD_MAX_BYTES);
            return 2;
        }
        if (one_request(argv[1], (uint32_t)size, buf, &seconds) < 0)
            return 1;
        printf("%ld %.6f\n", size, seconds);
        fflush(stdout);
        if (pause_ms)
            nanosleep(&(struct timespec){ pause_ms / 1000, (pause_ms % 1000) * 1000000L }, NULL);
    }
    explicit_bzero(buf, sizeof(buf));
    return 0;
}
