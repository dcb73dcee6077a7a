/* The uevent listener behind vmgenid.h. Every kernel uevent reaches this socket (a device
 * added, a disk changed); a classic BPF filter passes only "change@" messages, so an idle
 * daemon is not woken by hotplug, and the parser keeps those with NEW_VMGENID=1. Only the
 * kernel (netlink port 0) is believed: the uevent group is multicast, but only with
 * CAP_NET_ADMIN can userspace send to it, and a unicast from a process has a port of its own.
 * A synthetic uevent (a write to a device's sysfs uevent file) comes from the kernel too, but
 * its variables are prefixed SYNTH_ARG_, so it cannot fake NEW_VMGENID=1. */
#include "vmgenid.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UEVENT_MAX 8192            /* the kernel's UEVENT_BUFFER_SIZE is 2048 */

bool vmgenid_is_new_generation(const char *msg, size_t len)
{
    size_t at = strnlen(msg, len) + 1;       /* past "ACTION@DEVPATH" */

    if (len < 7 || memcmp(msg, "change@", 7) != 0)
        return false;
    while (at < len) {
        size_t n = strnlen(msg + at, len - at);

        if (n == 13 && !memcmp(msg + at, "NEW_VMGENID=1", 13))
            return true;
        at += n + 1;
    }
    return false;
}

/* Passes messages that start with "change@": load the first four bytes ("chan") and the
 * next three ("ge@"), both big-endian as BPF reads them. */
static int attach_change_filter(int fd)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x6368616e, 0, 3),     /* "chan" */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffff00),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x67654000, 1, 0),     /* "ge@" */
        BPF_STMT(BPF_RET | BPF_K, 0),
        BPF_STMT(BPF_RET | BPF_K, UEVENT_MAX),
    };
    struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

void vmgenid_init(struct vmgenid *v)
{
    v->fd = -1;
    v->kernel_only = true;
}

int vmgenid_open(struct vmgenid *v)
{
    struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };   /* the kernel's */
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    NETLINK_KOBJECT_UEVENT), err;

    v->fd = -1;
    v->kernel_only = true;
    if (fd < 0)
        return -errno;
    if (attach_change_filter(fd) < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        err = errno;
        close(fd);
        return -err;
    }
    v->fd = fd;
    return 0;
}

void vmgenid_open_fd(struct vmgenid *v, int fd)
{
    v->fd = fd;
    v->kernel_only = false;
}

void vmgenid_close(struct vmgenid *v)
{
    if (v->fd >= 0)
        close(v->fd);
    v->fd = -1;
}

unsigned vmgenid_read(struct vmgenid *v)
{
    char msg[UEVENT_MAX];
    unsigned found = 0;

    for (;;) {
        struct sockaddr_nl from = { 0 };
        struct iovec iov = { msg, sizeof(msg) };
        struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from),
                             .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n = recvmsg(v->fd, &mh, MSG_DONTWAIT);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (v->kernel_only && (mh.msg_namelen < sizeof(from) || from.nl_family != AF_NETLINK ||
                               from.nl_pid != 0))
            continue;
        found += vmgenid_is_new_generation(msg, (size_t)n);
    }
    return found;
}
