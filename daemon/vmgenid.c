/* The VM generation watchers behind vmgenid.h: the kernel log and the uevent socket.
 *
 * The kernel log. drivers/virt/vmgenid.c calls add_vmfork_randomness() when the hypervisor's
 * ACPI notify says the generation ID changed; drivers/char/random.c then reseeds its crng and
 * logs pr_notice("crng reseeded due to virtual machine fork"), with the "random: " prefix,
 * unless its crng is not yet initialised (5.18 to 6.12 and later alike; never ratelimited).
 * /dev/kmsg hands out one record per read and wakes poll only when a record is logged, so
 * an idle system costs nothing. Only the kernel's own record is believed: a write to
 * /dev/kmsg (root's alone) is recorded with facility LOG_USER whatever prefix it claims
 * (printk's devkmsg_write), and the record's whole text must be the line, so a kernel message
 * that merely quotes it does not count. A record overwritten before randd read it (EPIPE) is
 * counted as lost; main takes a loss as a new generation (the fork line may have been among
 * them), at most once a second. /dev/kmsg must be the kernel's own character device (1:11):
 * a container may put a FIFO or the console there, which others could write.
 *
 * The uevent. Every kernel uevent reaches this socket (a device added, a disk changed); a
 * classic BPF filter passes only "change@" messages, so an idle daemon is not woken by
 * hotplug, and the parser keeps those with NEW_VMGENID=1. Only the kernel (netlink port 0) is
 * believed: the uevent group is multicast, but only with CAP_NET_ADMIN can userspace send to
 * it, and a unicast from a process has a port of its own. A synthetic uevent (a write to a
 * device's sysfs uevent file) comes from the kernel too, but its variables are prefixed
 * SYNTH_ARG_, so it cannot fake NEW_VMGENID=1. Mainline sent it from 6.8-rc1 until its revert
 * (3aadf100f93d, also in 6.8 stable), so few kernels do. */
#include "vmgenid.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define UEVENT_MAX 8192            /* the kernel's UEVENT_BUFFER_SIZE is 2048 */
#define KMSG_MAX 8192              /* a record is at most CONSOLE_EXT_LOG_MAX, 8192 */

static const char vm_fork_line[] = "random: crng reseeded due to virtual machine fork";

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

/* A record's header is "PRI,SEQ,USEC,FLAGS[,MORE];", PRI being facility * 8 + level: the
 * kernel's own messages are facility 0, so PRI is one digit, 0 to 7. */
bool vmgenid_is_vm_fork_log(const char *rec, size_t len)
{
    const char *text, *end;

    if (len < 2 || rec[0] < '0' || rec[0] > '7' || rec[1] != ',')
        return false;
    end = memchr(rec, '\n', len);
    if (!end)
        end = rec + len;
    text = memchr(rec, ';', (size_t)(end - rec));
    if (!text)
        return false;
    text++;
    return (size_t)(end - text) == sizeof(vm_fork_line) - 1 &&
           !memcmp(text, vm_fork_line, sizeof(vm_fork_line) - 1);
}

#define SAME_CHANGE_NS (1000 * 1000 * 1000ULL)

bool vmgenid_is_new_change(struct vmgenid *v, enum vmgenid_kind kind, uint64_t now_ns)
{
    bool same = v->unpaired && v->unpaired != kind && now_ns - v->unpaired_ns < SAME_CHANGE_NS;

    v->unpaired = same ? 0 : kind;
    v->unpaired_ns = now_ns;
    return !same;
}

void vmgenid_init(struct vmgenid *v)
{
    *v = (struct vmgenid){ .fd = -1, .kmsg_fd = -1, .kernel_only = true };
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

int vmgenid_open_kmsg(struct vmgenid *v)
{
    int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC), err;

    struct stat st;

    v->kmsg_fd = -1;
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 1 ||
        minor(st.st_rdev) != 11) {
        close(fd);
        return -ENOTTY;                   /* not the kernel's log: believe nothing read there */
    }
    if (lseek(fd, 0, SEEK_END) < 0) {
        err = errno;
        close(fd);
        return -err;
    }
    v->kmsg_fd = fd;
    return 0;
}

void vmgenid_open_kmsg_fd(struct vmgenid *v, int fd)
{
    v->kmsg_fd = fd;
}

void vmgenid_close(struct vmgenid *v)
{
    if (v->fd >= 0)
        close(v->fd);
    if (v->kmsg_fd >= 0)
        close(v->kmsg_fd);
    v->fd = -1;
    v->kmsg_fd = -1;
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
    v->uevents += found;
    return found;
}

unsigned vmgenid_read_kmsg(struct vmgenid *v)
{
    char rec[KMSG_MAX + 1];
    unsigned found = 0;

    for (;;) {
        ssize_t n = read(v->kmsg_fd, rec, sizeof(rec));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EPIPE) {          /* overwritten; the next read goes on */
            v->log_lost++;
            continue;
        }
        if (n <= 0)
            break;
        found += vmgenid_is_vm_fork_log(rec, (size_t)n);
    }
    v->log_lines += found;
    return found;
}
