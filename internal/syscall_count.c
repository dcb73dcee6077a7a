/* Counting the calling thread's system calls: a perf counter on the raw_syscalls:sys_enter
 * tracepoint for this thread only (pid 0, any CPU), its number read from tracefs, filtered by
 * system call number when one is asked for. It counts what the kernel entered, whatever
 * libc wrapped it in: no ptrace, so nothing slows the calls down as strace does. Where tracefs
 * is not mounted, root reads that number through a mount of its own attached nowhere. */
#include "syscall_count.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const tracepoint_ids[] = {
    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};
#define ID_UNDER_TRACEFS "/events/raw_syscalls/sys_enter/id"

/* The number in f, which it closes; -EBADF for no f, -EPROTO for no number. */
static long read_id_from(FILE *f)
{
    long id;
    int ok;

    if (!f)
        return -EBADF;
    ok = fscanf(f, "%ld", &id) == 1 && id >= 0;
    fclose(f);
    return ok ? id : -EPROTO;
}

/* The number in the file at path, or -errno. */
static long read_id(const char *path)
{
    FILE *f = fopen(path, "re");

    return f ? read_id_from(f) : -errno;
}

/* Where no tracefs is mounted (a fresh VM, many containers) and this is root: a tracefs mount
 * of its own that is never attached to any path (fsopen, fsmount: Linux 5.2), the number read
 * through its descriptor, and the mount gone with the last descriptor. Nothing appears in any
 * directory or mount table, nothing propagates to other namespaces, and a process killed
 * meanwhile leaves nothing behind. The id is the kernel's, whichever mount it is read from. */
static long id_from_a_detached_mount(void)
{
    int fs, mnt = -1, file;
    long id = -EPERM;

    if (geteuid() != 0)
        return id;
    fs = fsopen("tracefs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return -errno;
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
        mnt = fsmount(fs, FSMOUNT_CLOEXEC,
                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                      MOUNT_ATTR_NOEXEC);
    id = mnt < 0 ? -errno : id;
    close(fs);
    if (mnt < 0)
        return id;
    file = openat(mnt, ID_UNDER_TRACEFS + 1, O_RDONLY | O_CLOEXEC);
    id = file < 0 ? -errno : read_id_from(fdopen(file, "r"));
    if (file >= 0 && id == -EBADF)
        close(file);                    /* fdopen failed: the descriptor is still ours */
    close(mnt);
    return id;
}

/* The tracepoint's number, or -errno with the reason in why. Read once: it is fixed until
 * the kernel boots again. */
static long tracepoint_id(char *why, size_t cap)
{
    static long known = -1;
    long id = __atomic_load_n(&known, __ATOMIC_RELAXED), err = -ENOENT;

    if (id >= 0)
        return id;
    for (size_t i = 0; i < sizeof(tracepoint_ids) / sizeof(tracepoint_ids[0]) && id < 0; i++) {
        id = read_id(tracepoint_ids[i]);
        err = id >= 0 || id == -ENOENT ? err : id;
    }
    if (id < 0)
        id = id_from_a_detached_mount();
    if (id >= 0) {
        __atomic_store_n(&known, id, __ATOMIC_RELAXED);
        return id;
    }
    snprintf(why, cap, "cannot read raw_syscalls:sys_enter's id from %s: %s (tracefs not mounted "
             "there, or not readable by this user; a detached tracefs mount of its own: %s)",
             tracepoint_ids[0], strerror((int)-err), strerror((int)-id));
    return err;
}

int syscall_counter_start(struct syscall_counter *c, long nr, char *why, size_t cap)
{
    struct perf_event_attr attr = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr),
                                    .disabled = 1 };
    long id = tracepoint_id(why, cap);
    char filter[32];
    int err;

    c->fd = -1;
    c->nr = nr;
    if (id < 0)
        return (int)id;
    attr.config = (uint64_t)id;
    c->fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (c->fd < 0) {
        err = errno;
        snprintf(why, cap, "perf_event_open(raw_syscalls:sys_enter, this thread): %s%s",
                 strerror(err), err == EACCES || err == EPERM
                     ? " (kernel.perf_event_paranoid, a missing CAP_PERFMON, or a seccomp filter)"
                     : "");
        return -err;
    }
    snprintf(filter, sizeof(filter), "id == %ld", nr);
    if ((nr >= 0 && ioctl(c->fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) ||
        ioctl(c->fd, PERF_EVENT_IOC_RESET, 0) < 0 || ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
        err = errno;
        snprintf(why, cap, "perf event on raw_syscalls:sys_enter: %s: %s",
                 nr >= 0 ? "filtering by system call number" : "enabling", strerror(err));
        close(c->fd);
        c->fd = -1;
        return -err;
    }
    return 0;
}

int syscall_counter_stop(struct syscall_counter *c, uint64_t *calls)
{
    uint64_t value = 0;
    ssize_t got;
    int rc = 0;

    if (c->fd < 0)
        return -EBADF;
    /* The read enters the kernel while the counter runs: it counts itself, once. */
    got = read(c->fd, &value, sizeof(value));
    if (got != (ssize_t)sizeof(value))
        rc = got < 0 ? -errno : -EIO;
    else if ((c->nr < 0 || c->nr == SYS_read) && value > 0)
        value--;
    close(c->fd);
    c->fd = -1;
    *calls = rc < 0 ? 0 : value;
    return rc;
}
