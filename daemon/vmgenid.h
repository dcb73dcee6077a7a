/* New VM generations: the kernel's vmgenid driver announces a restored or cloned snapshot
 * with a kobject uevent carrying NEW_VMGENID=1. This module listens for it on a
 * NETLINK_KOBJECT_UEVENT socket and says when one came; what to do about it (reseed, publish
 * the generation) is main's and the pool's. */
#ifndef RANDD_VMGENID_H
#define RANDD_VMGENID_H

#include <stdbool.h>
#include <stddef.h>

struct vmgenid {
    int fd;
    bool kernel_only;                /* accept messages from the kernel (port 0) only */
};

/* Not listening: vmgenid_close is then a no-op (randd may stop before it opens). */
void vmgenid_init(struct vmgenid *v);
/* Opens the uevent socket. Returns 0, or a negative errno (randd then relies on the
 * CLOCK_BOOTTIME jump alone, as before). */
int vmgenid_open(struct vmgenid *v);
/* Test seam: listens on fd (a datagram socket a test writes uevents into) instead,
 * accepting any sender. */
void vmgenid_open_fd(struct vmgenid *v, int fd);
void vmgenid_close(struct vmgenid *v);

/* Reads every queued message; returns how many announced a new VM generation. */
unsigned vmgenid_read(struct vmgenid *v);

/* Whether one uevent message (the kernel's "ACTION@DEVPATH\0KEY=VALUE\0...") announces a
 * new VM generation. */
bool vmgenid_is_new_generation(const char *msg, size_t len);

#endif
