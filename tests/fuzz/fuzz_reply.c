/* libFuzzer: librandd's reply decoder fed arbitrary daemon replies over a socketpair:
 * every call must return 0 or a negative code, never crash, hang or overrun. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_internal.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A sealed memfd of the arena's size, as randd would send with its first BYTES_MEMFD reply:
 * attached to the first byte of the "daemon's" words, so that OK replies with any offset and
 * n reach the copy out of the mapping. */
static int arena(void)
{
    static int fd = -1;

    if (fd < 0) {
        fd = memfd_create("fuzz-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, RANDD_MEMFD_ARENA_BYTES) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
            abort();
    }
    return fd;
}

static ssize_t send_with_arena(int sock, const uint8_t *p, size_t n)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control = { 0 };
    struct iovec iov = { (void *)p, n };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fd = arena();

    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &msg, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t r[2] = { 0x01, 0x00 };
    static uint8_t big[RANDD_MEMFD_SLOT_BYTES + 1];     /* two BYTES_MEMFD requests */
    const uint8_t pick = size ? data[0] : 0, *words = data + 1;
    size_t words_len = size ? size - 1 : 0;
    uint8_t out[512];
    randd_handle *h;
    char *json = NULL;
    int sv[2], rc;

    if (size < 1 || size > 60000 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return 0;
    /* The first byte picks the call (and a PRIME's size, 16..4096 bits; 250 and 255: a call
     * large enough for BYTES_MEMFD, 255 with an arena); the rest is what the "daemon" says,
     * then EOF. */
    if (pick == 255 && words_len > 0 && send_with_arena(sv[1], words, 1) == 1)
        words++, words_len--;
    if (write(sv[1], words, words_len) != (ssize_t)words_len) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    /* Half-close: the client sees EOF after the reply, yet its request can still land. */
    shutdown(sv[1], SHUT_WR);
    if (randd_handle_from_fd(&h, sv[0]) < 0) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    randd_set_timeout(h, 1000);
    switch (pick % 5) {
    case 0:
        rc = pick < 250 ? randd_bytes(h, out, 1 + pick % 64) : randd_bytes(h, big, sizeof(big));
        break;
    case 1: rc = randd_range(h, r, sizeof(r), out, 1 + pick % 100); break;
    case 2: rc = randd_status(h, &json); break;
    case 3: rc = randd_add_entropy(h, "x", 1, 8); break;
    default: rc = randd_prime(h, 16 + pick / 5 * 80, out); break;
    }
    if (rc > 0 && (pick % 5 != 2 || !json || strlen(json) != (size_t)rc))
        abort();
    free(json);
    randd_strerror(rc);
    randd_close(h);
    close(sv[1]);
    return 0;
}
