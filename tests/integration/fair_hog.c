/* fair-hog: a local user holding every connection it can, for test_fairness.sh, and the
 * EGD client that test needs (bash reaches neither a Unix socket nor holds hundreds of them).
 *
 *   fair-hog hold v1|egd|stall ADDRESS COUNT
 *     Opens connections until COUNT are held or one is refused: each is held once served one
 *     request (v1: BYTES of 8; egd: the entropy level), so it sits idle; stall: once the
 *     header of a 16 MiB BYTES reply came, whose body it never reads. Prints "holding N
 *     connections" and, until killed, keeps taking places: a held connection the daemon
 *     closes (evicted to make room for another uid) is replaced by a new one, one try each
 *     HOLD_POLL_MS. On SIGTERM prints "held N; M closed by the daemon; R refused" and exits.
 *   fair-hog egd-wait ADDRESS COUNT
 *     COUNT EGD connections, each with a blocking read of 255 bytes sent and never read.
 *     Prints "waiting on N connections" and holds them until killed.
 *   fair-hog egd-read ADDRESS N
 *     One blocking EGD read of N bytes on a new connection, timed from connect to its last
 *     byte: prints "MILLISECONDS". Exits 1, saying why, if it is closed or takes a minute.
 *   fair-hog slow-read ADDRESS FLAGS N MARK
 *     One BYTES request of N with FLAGS (2: prediction-resistant) on a small receive buffer;
 *     reads the header and the first piece, prints "reading", then waits until the file
 *     MARK exists before it reads on, to the end or until the daemon closes. Prints
 *     "received R of N". For test_selftest.sh: what a reply begun before a halt sends after.
 *   fair-hog free-port
 *     Prints a loopback TCP port free at this moment.
 *
 * ADDRESS is a Unix socket's path, or HOST:PORT (IPv4) for EGD over TCP. Test-only: never
 * installed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

#define REPLY_WAIT_MS 60000          /* a loaded machine; a reply never comes: give up */
#define HOLD_POLL_MS  5
#define MAX_HELD      4096

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A connection to a Unix path, or to HOST:PORT; -1 (saying why) if there is none. */
static int dial(const char *address)
{
    const char *colon = address[0] != '/' ? strrchr(address, ':') : NULL;
    int fd;

    if (colon) {
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)atoi(colon + 1)) };
        char host[64];

        snprintf(host, sizeof(host), "%.*s", (int)(colon - address), address);
        if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
            fprintf(stderr, "fair-hog: %s: not HOST:PORT\n", address);
            exit(2);
        }
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
    } else {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", address);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
    }
    fprintf(stderr, "fair-hog: %s: %s\n", address, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Reads exactly n bytes within REPLY_WAIT_MS; -1 if closed first or too slow. */
static int read_exactly(int fd, uint8_t *buf, size_t n)
{
    struct pollfd p = { fd, POLLIN, 0 };

    while (n > 0) {
        ssize_t got;

        if (poll(&p, 1, REPLY_WAIT_MS) != 1 || (got = recv(fd, buf, n, 0)) <= 0)
            return -1;
        buf += got;
        n -= (size_t)got;
    }
    return 0;
}

/* A new connection served one request, so idle now; -1 if refused (or none). */
static int served_connection(const char *proto, const char *address)
{
    uint8_t frame[RANDD_HEADER_BYTES + 8], reply[RANDD_HEADER_BYTES + 8];
    struct randd_header h;
    int fd = dial(address);
    size_t len;

    if (fd < 0)
        return -1;
    if (!strcmp(proto, "egd")) {
        if (send(fd, "\x00", 1, MSG_NOSIGNAL) == 1 && read_exactly(fd, reply, 4) == 0)
            return fd;
    } else if (!strcmp(proto, "stall")) {
        len = randd_request_encode(frame, sizeof(frame), &(struct randd_request){
                                       .op = RANDD_OP_BYTES, .n = RANDD_MAX_BYTES });
        (void)!send(fd, frame, len, MSG_NOSIGNAL);
        if (read_exactly(fd, reply, RANDD_HEADER_BYTES) == 0) {
            randd_header_decode(reply, &h);
            if (h.code == RANDD_OK)
                return fd;
        }
    } else {
        len = randd_request_encode(frame, sizeof(frame),
                                   &(struct randd_request){ .op = RANDD_OP_BYTES, .n = 8 });
        /* Refused, the daemon may close before the request is sent (EPIPE): BUSY is there. */
        (void)!send(fd, frame, len, MSG_NOSIGNAL);
        if (read_exactly(fd, reply, RANDD_HEADER_BYTES) == 0) {
            randd_header_decode(reply, &h);
            if (h.code == RANDD_OK && h.length == 8 && read_exactly(fd, reply, 8) == 0)
                return fd;
        }
    }
    close(fd);
    return -1;
}

static int hold(const char *proto, const char *address, long count)
{
    static struct pollfd held[MAX_HELD];
    long n = 0, closed = 0, refused = 0;
    /* A stalled reply is always readable: only its end (the daemon shut it) counts. */
    short watch = strcmp(proto, "stall") ? POLLIN : POLLRDHUP;

    if (count < 1 || count > MAX_HELD) {
        fprintf(stderr, "fair-hog: COUNT is 1 to %d\n", MAX_HELD);
        return 2;
    }
    signal(SIGTERM, on_term);
    while (n < count && (held[n].fd = served_connection(proto, address)) >= 0)
        held[n++].events = watch;
    refused += n < count;
    printf("holding %ld connections\n", n);
    fflush(stdout);
    while (!stopping) {
        int fd;

        if (poll(held, (nfds_t)n, HOLD_POLL_MS) > 0)
            for (long i = 0; i < n; i++)
                if (held[i].revents) {       /* evicted: BUSY and end-of-file, or a reset */
                    close(held[i].fd);
                    held[i--] = held[--n];
                    closed++;
                }
        if (n < count && !stopping) {
            if ((fd = served_connection(proto, address)) >= 0)
                held[n++] = (struct pollfd){ fd, watch, 0 };
            else
                refused++;
        }
    }
    printf("held %ld; %ld closed by the daemon; %ld refused\n", n, closed, refused);
    return 0;
}

static _Noreturn void egd_wait(const char *address, long count)
{
    long n = 0;

    for (; n < count; n++) {
        int fd = dial(address);

        if (fd < 0 || send(fd, "\x02\xff", 2, MSG_NOSIGNAL) != 2)
            break;
    }
    printf("waiting on %ld connections\n", n);
    fflush(stdout);
    for (;;)
        pause();
}

static int egd_read(const char *address, long n)
{
    uint8_t cmd[2] = { 0x02, (uint8_t)n }, buf[255];
    double start = now_ms();
    int fd = dial(address);

    if (n < 1 || n > 255) {
        fprintf(stderr, "fair-hog: N is 1 to 255\n");
        return 2;
    }
    if (fd < 0 || send(fd, cmd, 2, MSG_NOSIGNAL) != 2 || read_exactly(fd, buf, (size_t)n) < 0) {
        fprintf(stderr, "fair-hog: EGD read of %ld bytes from %s: %s\n", n, address,
                fd < 0 ? "no connection" : "closed, or no answer within a minute");
        return 1;
    }
    printf("%.1f\n", now_ms() - start);
    explicit_bzero(buf, sizeof(buf));
    close(fd);
    return 0;
}

static int slow_read(const char *address, long flags, long n, const char *mark)
{
    uint8_t frame[RANDD_HEADER_BYTES + 8], buf[65536];
    int fd = dial(address), small = 4096;
    struct randd_header h;
    long received = 0;
    size_t len;
    ssize_t got;

    if (fd < 0 || n < 1 || n > RANDD_MAX_BYTES) {
        fprintf(stderr, "fair-hog: slow-read: %s\n", fd < 0 ? "no connection" : "N out of range");
        return 2;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    len = randd_request_encode(frame, sizeof(frame), &(struct randd_request){
                                   .op = RANDD_OP_BYTES, .flags = (uint16_t)flags,
                                   .n = (uint32_t)n });
    if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len ||
        read_exactly(fd, buf, RANDD_HEADER_BYTES) < 0) {
        fprintf(stderr, "fair-hog: slow-read: no reply\n");
        return 1;
    }
    randd_header_decode(buf, &h);
    if (h.code != RANDD_OK || (got = recv(fd, buf, 4096, 0)) <= 0) {
        fprintf(stderr, "fair-hog: slow-read: status %u, or nothing after it\n", h.code);
        return 1;
    }
    received = got;
    printf("reading\n");
    fflush(stdout);
    while (access(mark, F_OK) != 0)
        poll(NULL, 0, 20);
    while (received < n && read_exactly(fd, buf, 1) == 0) {
        received++;
        if ((got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
            received += got;
    }
    explicit_bzero(buf, sizeof(buf));
    printf("received %ld of %ld\n", received, n);
    close(fd);
    return 0;
}

static int free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        perror("fair-hog: free-port");
        return 1;
    }
    printf("%u\n", (unsigned)ntohs(sa.sin_port));
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "hold") &&
        (!strcmp(argv[2], "v1") || !strcmp(argv[2], "egd") || !strcmp(argv[2], "stall")))
        return hold(argv[2], argv[3], strtol(argv[4], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "egd-wait"))
        egd_wait(argv[2], strtol(argv[3], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "egd-read"))
        return egd_read(argv[2], strtol(argv[3], NULL, 10));
    if (argc == 6 && !strcmp(argv[1], "slow-read"))
        return slow_read(argv[2], strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                         argv[5]);
    if (argc == 2 && !strcmp(argv[1], "free-port"))
        return free_port();
    fprintf(stderr, "usage: fair-hog hold v1|egd|stall ADDRESS COUNT | egd-wait ADDRESS COUNT | "
                    "egd-read ADDRESS N | slow-read ADDRESS FLAGS N MARK | free-port\n");
    return 2;
}
