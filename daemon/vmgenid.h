/* New VM generations: what tells randd that its VM was restored from a snapshot or cloned.
 * Two kernel announcements are watched, each on a descriptor of its own that is quiet while
 * nothing happens: the kernel's own log line (every kernel with the vmgenid driver, 5.18 and
 * later, so Debian 12's 6.1 and 6.12) read from /dev/kmsg, and the NEW_VMGENID=1 uevent
 * (mainline 6.8 only). This module says when one came; what to do about it (reseed, publish
 * the generation) is main's and the pool's. */
#ifndef RANDD_VMGENID_H
#define RANDD_VMGENID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vmgenid_kind { VMGENID_UEVENT = 1, VMGENID_KERNEL_LOG = 2 };

struct vmgenid {
    int fd;                          /* the uevent socket */
    int kmsg_fd;                     /* /dev/kmsg, read from its end when opened */
    bool kernel_only;                /* accept uevents from the kernel (port 0) only */
    uint64_t uevents;                /* NEW_VMGENID=1 uevents seen */
    uint64_t log_lines;              /* the kernel's "virtual machine fork" lines seen */
    uint64_t log_lost;               /* times kernel log records were overwritten unread */
    enum vmgenid_kind unpaired;      /* the last announcement, if not yet paired; or 0 */
    uint64_t unpaired_ns;            /* and when it came */
};

/* Not listening: vmgenid_close is then a no-op (randd may stop before it opens). */
void vmgenid_init(struct vmgenid *v);
/* Opens the uevent socket. Returns 0, or a negative errno. */
int vmgenid_open(struct vmgenid *v);
/* Opens /dev/kmsg and moves to its end: only lines logged from now on count (the log of a
 * restored VM already holds the line of every earlier restore). Needs CAP_SYSLOG where
 * kernel.dmesg_restrict = 1, at open only: randd opens it before dropping privileges.
 * Returns 0, or a negative errno. */
int vmgenid_open_kmsg(struct vmgenid *v);
/* Test seams: listen on fd (a datagram socket a test writes uevents, or kernel log records
 * in /dev/kmsg's format, into) instead, accepting any sender. */
void vmgenid_open_fd(struct vmgenid *v, int fd);
void vmgenid_open_kmsg_fd(struct vmgenid *v, int fd);
void vmgenid_close(struct vmgenid *v);

/* Read every queued uevent (kernel log record); return how many announced a new VM
 * generation. */
unsigned vmgenid_read(struct vmgenid *v);
unsigned vmgenid_read_kmsg(struct vmgenid *v);

/* One announcement of kind, come at now_ns: whether it is a new VM generation. A kernel that
 * sends both (6.8) sends them from one call: one of the other kind within a second of an
 * unpaired one is the same change. Two of one kind always count, and a pair is matched once,
 * so two real changes are never taken for one. */
bool vmgenid_is_new_change(struct vmgenid *v, enum vmgenid_kind kind, uint64_t now_ns);

/* Whether one uevent message (the kernel's "ACTION@DEVPATH\0KEY=VALUE\0...") announces a
 * new VM generation. */
bool vmgenid_is_new_generation(const char *msg, size_t len);
/* Whether one /dev/kmsg record ("PRI,SEQ,USEC,FLAGS;TEXT\n KEY=VALUE\n...") is the kernel's
 * own "random: crng reseeded due to virtual machine fork". */
bool vmgenid_is_vm_fork_log(const char *rec, size_t len);

#endif
