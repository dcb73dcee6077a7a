/* trust-probe: the programs tests/integration/test_trust.sh runs to test whom librandd
 * trusts. One binary, one mode per argument list:
 *   trust-probe fake-daemon PATH       a "daemon" that answers every BYTES and SEED with 0x41
 *                                      bytes (BYTES_MEMFD: UNKNOWN_OP), one line per request
 *                                      on stdout
 *   trust-probe bytes [PATH]           randd_open(PATH, or NULL) and 32 bytes of randd_bytes
 *   trust-probe random                 32 bytes of randd_random
 *   trust-probe deadline PATH MS       randd_bytes with a timeout of MS against a listener
 *                                      whose backlog is full
 * The test installs a copy setuid root, so the modes that print bytes take nothing from
 * their environment but what librandd itself reads. Output: hex bytes, or "error: CODE:
 * TEXT: MESSAGE" and a non-zero exit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "randd.h"

static void print_hex(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
}

static int report(const char *what, int rc, const randd_handle *h)
{
    printf("error: %s: %d: %s: %s\n", what, rc, randd_strerror(rc), randd_message(h));
    return 2;
}

static int listen_at(const char *path, int backlog)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || strlen(path) >= sizeof(sa.sun_path)) {
        perror("trust-probe: socket");
        exit(1);
    }
    strcpy(sa.sun_path, path);
    unlink(path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
        fprintf(stderr, "trust-probe: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return fd;
}

static int read_all(int fd, void *buf, size_t n)
{
    for (uint8_t *p = buf; n > 0;) {
        ssize_t got = read(fd, p, n);

        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static void reply(int fd, int status, const void *body, uint32_t length)
{
    struct randd_header h = { RANDD_PROTOCOL_VERSION, (uint8_t)status, 0, length };
    uint8_t head[RANDD_HEADER_BYTES];

    randd_header_encode(head, &h);
    if (write(fd, head, sizeof(head)) < 0 || (length && write(fd, body, length) < 0))
        return;
}

/* Serves one connection until the client closes it. */
static void serve(int fd)
{
    static uint8_t body[RANDD_MAX_REQUEST_BODY], fill[RANDD_MAX_BYTES];
    uint8_t head[RANDD_HEADER_BYTES];
    struct randd_header h;
    struct randd_request req;
    char why[128];

    memset(fill, 0x41, sizeof(fill));
    while (read_all(fd, head, sizeof(head)) == 0) {
        randd_header_decode(head, &h);
        if (h.length > sizeof(body) || read_all(fd, body, h.length) < 0)
            return;
        printf("request op %d\n", h.code);
        fflush(stdout);
        if (randd_parse_request(&h, body, &req, why, sizeof(why)) != RANDD_OK)
            reply(fd, RANDD_MALFORMED, why, (uint32_t)strlen(why));
        else if (req.op == RANDD_OP_BYTES || req.op == RANDD_OP_SEED)
            reply(fd, RANDD_OK, fill, req.n);
        else if (req.op == RANDD_OP_STATUS)
            reply(fd, RANDD_OK, "{}", 2);
        else
            reply(fd, RANDD_UNKNOWN_OP, "fake", 4);
    }
}

static _Noreturn void fake_daemon(const char *path)
{
    int lfd = listen_at(path, 16);

    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd >= 0) {
            serve(fd);
            close(fd);
        }
    }
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Fills the backlog of a listener that never accepts, then asks for bytes with a timeout:
 * the call must end with -ETIMEDOUT about the timeout later, not wait for room for ever. */
static int deadline(const char *path, int ms)
{
    uint8_t buf[32];
    randd_handle *h;
    double start;
    int rc;

    (void)listen_at(path, 0);
    for (int i = 0; i < 64; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        strcpy(sa.sun_path, path);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            if (errno != EAGAIN) {
                fprintf(stderr, "trust-probe: filling %s: %s\n", path, strerror(errno));
                return 1;
            }
            close(fd);
            break;                   /* full: the next connect() would wait */
        }
    }
    start = now_ms();
    if ((rc = randd_open(&h, path)) < 0)
        return report("open", rc, NULL);
    printf("open took %.0f ms\n", now_ms() - start);
    randd_set_timeout(h, ms);
    start = now_ms();
    rc = randd_bytes(h, buf, sizeof(buf));
    printf("bytes took %.0f ms: %s: %s\n", now_ms() - start, randd_strerror(rc),
           randd_message(h));
    randd_close(h);
    return rc == -ETIMEDOUT ? 0 : 3;
}

int main(int argc, char **argv)
{
    uint8_t buf[32];
    randd_handle *h;
    int rc;

    if (argc == 3 && !strcmp(argv[1], "fake-daemon"))
        fake_daemon(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "deadline"))
        return deadline(argv[2], atoi(argv[3]));
    if (argc == 2 && !strcmp(argv[1], "random")) {
        if ((rc = randd_random(buf, sizeof(buf))) < 0)
            return report("random", rc, NULL);
        print_hex(buf, sizeof(buf));
        return 0;
    }
    if ((argc == 2 || argc == 3) && !strcmp(argv[1], "bytes")) {
        if ((rc = randd_open(&h, argc == 3 ? argv[2] : NULL)) < 0)
            return report("open", rc, NULL);
        rc = randd_bytes(h, buf, sizeof(buf));
        if (rc < 0)
            rc = report("bytes", rc, h);
        else
            print_hex(buf, sizeof(buf));
        randd_close(h);
        return rc;
    }
    fprintf(stderr, "usage: trust-probe fake-daemon PATH | bytes [PATH] | random | "
                    "deadline PATH MS\n");
    return 1;
}
