/* BYTES_MEMFD's arena: a memfd made by the daemon, never one a client lends (a lent file could
 * be a FUSE file, a pipe, or be truncated under our mapping: SIGBUS). It is created once per
 * connection and reused: a fresh memfd for every reply would allocate, zero and map its pages
 * each time, which costs several times the ChaCha20 that fills them (lib/PROTOCOL.md).
 *
 * Sealed before it is shared: F_SEAL_SHRINK and F_SEAL_GROW, so no client can truncate it
 * under our mapping, and F_SEAL_SEAL, so none can lift them. Not F_SEAL_WRITE: the generator
 * writes the next slot while the client copies the last.
 *
 * Descriptors in flight. Once sent, the memfd sits in the client's socket until the client
 * reads the reply it came with, and the kernel counts it against randd's uid meanwhile (past
 * RLIMIT_NOFILE, every SCM_RIGHTS send of that uid fails with ETOOMANYREFS). A client that
 * never reads, shuts down writing and keeps its socket would keep it there after randd let the
 * connection go; so an arena counts in MEMFD_ARENA_PER_UID and MEMFD_ARENA_MAX until its memfd
 * can no longer be in flight. To tell, the arena keeps a duplicate of the connection's socket
 * from the send on: SIOCOUTQ on an AF_UNIX stream socket is what the peer has not read yet
 * (the skbs we sent, freed as it reads them, or purged when it closes). At close, an arena
 * whose socket still has bytes unread is "kept": its pages freed, its socket shut for
 * sending (the peer reads what it was sent, then end-of-file), its place in the count held.
 * memfd_arena_open looks at the kept ones first and forgets those now read or whose peer is
 * gone. Holding replies unread thus gains a client nothing: its share stays taken. */
#include "memfd_arena.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol.h"

struct memfd_arena {
    uint8_t *map;                 /* MAP_SHARED, RANDD_MEMFD_ARENA_BYTES; NULL once kept */
    int fd;                       /* until the client has it; then -1 */
    int sock;                     /* the connection's socket, from the send on; else -1 */
    unsigned next_slot;
    uid_t uid;                    /* whose share it counts in */
    struct memfd_arena *next;     /* in arenas.kept */
};

/* Who holds the arenas alive: serving loops share the caps, so under a lock (taken only
 * when a connection first asks and when it closes). */
static struct {
    pthread_mutex_t lock;
    unsigned alive;
    struct { uid_t uid; unsigned n; } holders[MEMFD_ARENA_MAX];
    struct memfd_arena *kept;     /* closed, their memfd maybe still in flight */
} arenas = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Under the lock. */
static void uncount(uid_t uid)
{
    for (size_t i = 0; i < MEMFD_ARENA_MAX; i++)
        if (arenas.holders[i].n && arenas.holders[i].uid == uid) {
            arenas.holders[i].n--;
            arenas.alive--;
            break;
        }
}

/* Whether the peer may not have received the memfd sent on sock: some of what we sent is
 * unread. Conservative: part of a later reply unread, or a failed ioctl, count as unread. */
static bool may_be_in_flight(int sock)
{
    int unread = 0;

    return ioctl(sock, SIOCOUTQ, &unread) < 0 || unread > 0;
}

/* Under the lock: the kept arenas whose peer has read everything or is gone (its socket's
 * queue is purged then) stop counting. At most MEMFD_ARENA_MAX ioctls, on a connection's
 * first BYTES_MEMFD only. */
static void forget_delivered(void)
{
    struct memfd_arena **p = &arenas.kept, *a;

    while ((a = *p)) {
        if (may_be_in_flight(a->sock)) {
            p = &a->next;
            continue;
        }
        *p = a->next;
        close(a->sock);
        uncount(a->uid);
        free(a);
    }
}

static int reserve(uid_t uid)
{
    size_t mine = MEMFD_ARENA_MAX, unused = MEMFD_ARENA_MAX;
    int rc = 0;

    pthread_mutex_lock(&arenas.lock);
    forget_delivered();
    for (size_t i = 0; i < MEMFD_ARENA_MAX; i++) {
        if (arenas.holders[i].n && arenas.holders[i].uid == uid)
            mine = i;
        else if (!arenas.holders[i].n && unused == MEMFD_ARENA_MAX)
            unused = i;
    }
    if (arenas.alive >= MEMFD_ARENA_MAX) {
        rc = -EBUSY;
    } else if (mine < MEMFD_ARENA_MAX) {
        if (arenas.holders[mine].n >= MEMFD_ARENA_PER_UID)
            rc = -EDQUOT;
        else
            arenas.holders[mine].n++;
    } else {                      /* fewer than MEMFD_ARENA_MAX alive: a holder is unused */
        arenas.holders[unused].uid = uid;
        arenas.holders[unused].n = 1;
    }
    if (rc == 0)
        arenas.alive++;
    pthread_mutex_unlock(&arenas.lock);
    return rc;
}

static void release(uid_t uid)
{
    pthread_mutex_lock(&arenas.lock);
    uncount(uid);
    pthread_mutex_unlock(&arenas.lock);
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

int memfd_arena_open(struct memfd_arena **out, uid_t uid)
{
    struct memfd_arena *a;
    int err = reserve(uid);

    if (err < 0)
        return err;
    err = -ENOMEM;
    a = calloc(1, sizeof(*a));
    if (!a)
        goto fail;
    a->uid = uid;
    a->sock = -1;
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
    release(uid);
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
    /* The duplicate first: an fd sent that we could not watch would go uncounted. */
    if (a->sock < 0 && (a->sock = fcntl(sock, F_DUPFD_CLOEXEC, 0)) < 0)
        return -1;
    sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (sent > 0) {
        close(a->fd);             /* the client owns its copy; ours would only count */
        a->fd = -1;
    } else {
        int err = errno;

        close(a->sock);
        a->sock = -1;
        errno = err;
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
    a->map = NULL;
    if (a->fd >= 0)
        close(a->fd);
    if (a->sock >= 0 && may_be_in_flight(a->sock)) {
        /* The connection is over for us: the peer reads what it was sent and end-of-file,
         * as after a close, and a client that asks again reconnects. */
        shutdown(a->sock, SHUT_WR);
        pthread_mutex_lock(&arenas.lock);
        a->next = arenas.kept;
        arenas.kept = a;
        pthread_mutex_unlock(&arenas.lock);
        return;
    }
    if (a->sock >= 0)
        close(a->sock);
    release(a->uid);
    free(a);
}

void memfd_arena_fini(void)
{
    pthread_mutex_lock(&arenas.lock);
    while (arenas.kept) {
        struct memfd_arena *a = arenas.kept;

        arenas.kept = a->next;
        close(a->sock);
        uncount(a->uid);
        free(a);
    }
    pthread_mutex_unlock(&arenas.lock);
}
