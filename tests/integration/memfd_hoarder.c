/* memfd-hoarder: a local user's attack on descriptors in flight, for test_arenas.sh, and a
 * way to put descriptors in flight for randd's own uid.
 *
 *   memfd-hoarder connect SOCKET COUNT
 *     COUNT connections, each asking BYTES_MEMFD for 1 byte (through lib/protocol.c's
 *     encoder), shut for writing once asked, the reply waited for but never read: a memfd
 *     that came with it stays in flight in the socket, counted against randd's uid. Then it
 *     peeks at every reply (MSG_PEEK takes a copy of a descriptor and leaves the original in
 *     flight) and prints "holding C connections: F with a descriptor, B answered BUSY,
 *     O other", and holds them until killed.
 *   memfd-hoarder inflight COUNT
 *     Sends COUNT descriptors to itself over a socketpair and never receives them: COUNT in
 *     flight against the caller's uid. Prints "holding COUNT descriptors in flight", holds
 *     them until killed.
 *
 * Needs a descriptor limit above COUNT (connect: each connection is one, and a peeked
 * descriptor is closed at once). Test-only: never installed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "protocol.h"

#define REPLY_WAIT_MS 60000          /* a loaded machine; a reply never comes: give up */

static int ask_and_shut(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct randd_request req = { .op = RANDD_OP_BYTES_MEMFD, .n = 1 };
    uint8_t frame[RANDD_HEADER_BYTES + 4];
    size_t len = randd_request_encode(frame, sizeof(frame), &req);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct pollfd p = { fd, POLLIN, 0 };

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len || shutdown(fd, SHUT_WR) < 0) {
        fprintf(stderr, "memfd-hoarder: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (poll(&p, 1, REPLY_WAIT_MS) != 1) {
        fprintf(stderr, "memfd-hoarder: %s: no reply\n", path);
        return -1;
    }
    return fd;
}

/* The reply's status (peeked), and whether a descriptor came with it. */
static int peek(int fd, int *status)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    uint8_t head[RANDD_HEADER_BYTES];
    struct iovec iov = { head, sizeof(head) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct cmsghdr *c;
    int got = 0;

    *status = -1;
    if (recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 2)
        return 0;
    *status = head[1];
    for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int copy;

            memcpy(&copy, CMSG_DATA(c), sizeof(int));
            close(copy);
            got = 1;
        }
    return got;
}

static int hoard_connections(const char *path, long count)
{
    int *fds = calloc((size_t)count, sizeof(int));
    long with_fd = 0, busy = 0, other = 0;

    if (!fds)
        return 1;
    for (long i = 0; i < count; i++)
        if ((fds[i] = ask_and_shut(path)) < 0)
            return 1;
    for (long i = 0; i < count; i++) {
        int status;

        with_fd += peek(fds[i], &status);
        if (status == RANDD_BUSY)
            busy++;
        else if (status != RANDD_OK)
            other++;
    }
    printf("holding %ld connections: %ld with a descriptor, %ld answered BUSY, %ld other\n",
           count, with_fd, busy, other);
    fflush(stdout);
    for (;;)
        pause();
}

static int hoard_in_flight(long count)
{
    enum { PER_MESSAGE = 250 };       /* under SCM_MAX_FD; few skbs, so sending never blocks */
    int sv[2], devnull = open("/dev/null", O_RDONLY | O_CLOEXEC), same[PER_MESSAGE];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(same))];
    } control;
    char byte = 0;
    struct iovec iov = { &byte, 1 };

    if (devnull < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return perror("memfd-hoarder"), 1;
    for (int i = 0; i < PER_MESSAGE; i++)
        same[i] = devnull;
    for (long sent = 0; sent < count;) {
        int n = count - sent < PER_MESSAGE ? (int)(count - sent) : PER_MESSAGE;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

        memset(&control, 0, sizeof(control));
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(c), same, n * sizeof(int));
        if (sendmsg(sv[0], &msg, 0) != 1)
            return fprintf(stderr, "memfd-hoarder: after %ld descriptors: %s\n", sent,
                           strerror(errno)), 1;
        sent += n;
    }
    printf("holding %ld descriptors in flight\n", count);
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "connect"))
        return hoard_connections(argv[2], strtol(argv[3], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "inflight"))
        return hoard_in_flight(strtol(argv[2], NULL, 10));
    fprintf(stderr, "usage: memfd-hoarder connect SOCKET COUNT | inflight COUNT\n");
    return 2;
}
