/* BYTES_MEMFD's arena: a memfd made by the daemon, never one a client lends (a lent file could
 * be a FUSE file, a pipe, or be truncated under our mapping: SIGBUS). It is created once per
 * connection and reused: a fresh memfd for every reply would allocate, zero and map its pages
 * each time, which costs several times the ChaCha20 that fills them (lib/PROTOCOL.md).
 *
 * Sealed before it is shared: F_SEAL_SHRINK and F_SEAL_GROW, so no client can truncate it
 * under our mapping, and F_SEAL_SEAL, so none can lift them. Not F_SEAL_WRITE: the generator
 * writes the next slot while the client copies the last. */
#include "memfd_arena.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol.h"

struct memfd_arena {
    uint8_t *map;                 /* MAP_SHARED, RANDD_MEMFD_ARENA_BYTES */
    int fd;                       /* until the client has it; then -1 */
    unsigned next_slot;
};

static unsigned arenas_alive;     /* atomic: serving loops may share the cap */

static bool reserve(void)
{
    unsigned n = __atomic_load_n(&arenas_alive, __ATOMIC_RELAXED);

    do {
        if (n >= MEMFD_ARENA_MAX)
            return false;
    } while (!__atomic_compare_exchange_n(&arenas_alive, &n, n + 1, false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return true;
}

static int make_sealed_memfd(void)
{
    int fd = memfd_create("randd-bytes", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return -errno;
    if (ftruncate(fd, RANDD_MEMFD_ARENA_BYTES) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        int err = -errno;

        close(fd);
        return err;
    }
    return fd;
}

int memfd_arena_open(struct memfd_arena **out)
{
    struct memfd_arena *a;
    int err = -ENOMEM;

    if (!reserve())
        return -EBUSY;
    a = calloc(1, sizeof(*a));
    if (!a)
        goto fail;
    a->fd = make_sealed_memfd();
    if (a->fd < 0) {
        err = a->fd;
        goto fail;
    }
    /* Pages are allocated as the generator first writes them: a client asking for 64 KiB at
     * a time makes the daemon hold 128 KiB, not the whole arena. */
    a->map = mmap(NULL, RANDD_MEMFD_ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->map == MAP_FAILED) {
        err = -errno;
        close(a->fd);
        goto fail;
    }
    *out = a;
    return 0;

fail:
    free(a);
    __atomic_fetch_sub(&arenas_alive, 1, __ATOMIC_RELAXED);
    return err;
}

uint8_t *memfd_arena_next_slot(struct memfd_arena *a, uint32_t *offset)
{
    *offset = a->next_slot * RANDD_MEMFD_SLOT_BYTES;
    a->next_slot = (a->next_slot + 1) % RANDD_MEMFD_SLOTS;
    return a->map + *offset;
}

bool memfd_arena_unsent(const struct memfd_arena *a)
{
    return a->fd >= 0;
}

ssize_t memfd_arena_send(struct memfd_arena *a, int sock, const void *buf, size_t n)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct iovec iov = { (void *)buf, n };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    ssize_t sent;

    memset(&control, 0, sizeof(control));
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &a->fd, sizeof(int));
    sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (sent > 0) {
        close(a->fd);             /* the client owns its copy; ours would only count */
        a->fd = -1;
    }
    return sent;
}

void memfd_arena_close(struct memfd_arena *a)
{
    if (!a)
        return;
    /* MADV_REMOVE frees the pages of the file, not only our mapping of them: a client that
     * keeps its fd keeps an empty file, and nothing charged to randd. */
    if (madvise(a->map, RANDD_MEMFD_ARENA_BYTES, MADV_REMOVE) < 0)
        explicit_bzero(a->map, RANDD_MEMFD_ARENA_BYTES);
    munmap(a->map, RANDD_MEMFD_ARENA_BYTES);
    if (a->fd >= 0)
        close(a->fd);
    free(a);
    __atomic_fetch_sub(&arenas_alive, 1, __ATOMIC_RELAXED);
}

unsigned memfd_arena_count(void)
{
    return __atomic_load_n(&arenas_alive, __ATOMIC_RELAXED);
}
