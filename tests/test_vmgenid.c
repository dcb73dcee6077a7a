/* The VM generation listener (daemon/vmgenid.c): which uevents announce a new generation,
 * the seam a test writes uevents into, and that only the kernel is believed on the real
 * netlink socket. */
#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runner.h"
#include "vmgenid.h"

/* What drivers/virt/vmgenid.c sends: kobject_uevent_env(KOBJ_CHANGE, "NEW_VMGENID=1"). */
static const char kernel_uevent[] =
    "change@/devices/platform/VMGENCTR:00\0ACTION=change\0DEVPATH=/devices/platform/VMGENCTR:00\0"
    "SUBSYSTEM=platform\0NEW_VMGENID=1\0DRIVER=vmgenid\0MODALIAS=acpi:VMGENCTR:VM_GEN_COUNTER:\0"
    "SEQNUM=1234";

START_TEST(only_a_change_event_with_new_vmgenid_1_counts)
{
    static const char added[] = "add@/devices/platform/VMGENCTR:00\0ACTION=add\0NEW_VMGENID=1";
    static const char synthetic[] =
        "change@/devices/platform/VMGENCTR:00\0ACTION=change\0SYNTH_UUID=0\0"
        "SYNTH_ARG_NEW_VMGENID=1";
    static const char other[] = "change@/devices/virtual/block/loop0\0ACTION=change\0DISK_RO=1";
    static const char zero[] = "change@/devices/platform/VMGENCTR:00\0NEW_VMGENID=0";

    ck_assert(vmgenid_is_new_generation(kernel_uevent, sizeof(kernel_uevent)));
    ck_assert(!vmgenid_is_new_generation(added, sizeof(added)));
    ck_assert(!vmgenid_is_new_generation(synthetic, sizeof(synthetic)));
    ck_assert(!vmgenid_is_new_generation(other, sizeof(other)));
    ck_assert(!vmgenid_is_new_generation(zero, sizeof(zero)));
    ck_assert(!vmgenid_is_new_generation(kernel_uevent, 20));   /* cut short */
}
END_TEST

/* The seam: uevents written into a datagram socket, as the kernel would queue them. */
START_TEST(simulated_uevents_through_the_seam_are_counted)
{
    static const char other[] = "add@/devices/virtual/net/lo\0ACTION=add";
    struct vmgenid v;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    vmgenid_open_fd(&v, sv[0]);
    ck_assert_uint_eq(vmgenid_read(&v), 0);
    ck_assert_int_eq(send(sv[1], other, sizeof(other), 0), (ssize_t)sizeof(other));
    ck_assert_int_eq(send(sv[1], kernel_uevent, sizeof(kernel_uevent), 0),
                     (ssize_t)sizeof(kernel_uevent));
    ck_assert_int_eq(send(sv[1], kernel_uevent, sizeof(kernel_uevent), 0),
                     (ssize_t)sizeof(kernel_uevent));
    ck_assert_uint_eq(vmgenid_read(&v), 2);
    ck_assert_uint_eq(vmgenid_read(&v), 0);
    vmgenid_close(&v);
    close(sv[1]);
}
END_TEST

/* On the real socket a process may unicast to our port (root can), but it is not port 0:
 * the message is read and ignored. */
START_TEST(a_uevent_from_a_process_is_not_believed)
{
    struct sockaddr_nl to = { .nl_family = AF_NETLINK };
    socklen_t len = sizeof(to);
    struct vmgenid v;
    int sender;

    if (vmgenid_open(&v) < 0) {
        fprintf(stderr, "SKIP a_uevent_from_a_process_is_not_believed: no uevent socket: %s\n",
                strerror(errno));
        return;
    }
    ck_assert(v.kernel_only);
    ck_assert_int_eq(getsockname(v.fd, (struct sockaddr *)&to, &len), 0);
    to.nl_groups = 0;
    sender = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
    ck_assert_int_ge(sender, 0);
    if (sendto(sender, kernel_uevent, sizeof(kernel_uevent), 0, (struct sockaddr *)&to,
               sizeof(to)) < 0) {
        fprintf(stderr, "SKIP a_uevent_from_a_process_is_not_believed: sendto: %s\n",
                strerror(errno));
    } else {
        ck_assert_uint_eq(vmgenid_read(&v), 0);
    }
    close(sender);
    vmgenid_close(&v);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("vmgenid");
    TCase *tc = tcase_create("uevents");

    tcase_add_test(tc, only_a_change_event_with_new_vmgenid_1_counts);
    tcase_add_test(tc, simulated_uevents_through_the_seam_are_counted);
    tcase_add_test(tc, a_uevent_from_a_process_is_not_believed);
    suite_add_tcase(s, tc);
    return s;
}
