/* The VM generation watchers (daemon/vmgenid.c): which uevents and kernel log records
 * announce a new generation, the seams a test writes them into, and that only the kernel is
 * believed on the real netlink socket and the real /dev/kmsg. */
#include <errno.h>
#include <fcntl.h>
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

    vmgenid_init(&v);
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

    vmgenid_init(&v);
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

/* What /dev/kmsg gave on this machine (a Firecracker guest restored from a snapshot). */
static const char kernel_record[] =
    "5,336,1277033,-;random: crng reseeded due to virtual machine fork\n";

START_TEST(only_the_kernels_own_vm_fork_line_counts)
{
    static const char *const not_it[] = {
        /* written to /dev/kmsg by root: printk makes it facility LOG_USER (1) */
        "13,337,1277040,-;random: crng reseeded due to virtual machine fork\n",
        "12,338,1277041,-;random: crng reseeded due to virtual machine fork\n",
        /* the kernel, quoting it or saying something else */
        "4,339,1277042,-;audit: comm=\"random: crng reseeded due to virtual machine fork\"\n",
        "5,340,1277043,-;random: crng reseeded due to virtual machine fork, twice\n",
        "5,341,1277044,-;random: crng reseeded due to virtual machine for\n",
        "5,342,1277045,-;random: crng init done\n",
        /* the line in a dictionary (continuation) line, not the text */
        "5,343,1277046,-;random: x\n random: crng reseeded due to virtual machine fork\n",
        "5;random: crng reseeded due to virtual machine fork\n",      /* no header */
        "5,344,1277047,-random: crng reseeded due to virtual machine fork\n",  /* no ';' */
        "",
    };
    static const char with_caller[] =
        "5,336,1277033,-,caller=T42;random: crng reseeded due to virtual machine fork\n";
    static const char with_dictionary[] =
        "5,336,1277033,-;random: crng reseeded due to virtual machine fork\n"
        " SUBSYSTEM=acpi\n DEVICE=+acpi:QEMUVGID:00\n";

    ck_assert(vmgenid_is_vm_fork_log(kernel_record, sizeof(kernel_record) - 1));
    ck_assert(vmgenid_is_vm_fork_log(kernel_record, sizeof(kernel_record) - 2)); /* no \n */
    ck_assert(vmgenid_is_vm_fork_log(with_caller, sizeof(with_caller) - 1));
    ck_assert(vmgenid_is_vm_fork_log(with_dictionary, sizeof(with_dictionary) - 1));
    ck_assert(!vmgenid_is_vm_fork_log(kernel_record, 40));                 /* cut short */
    for (size_t i = 0; i < sizeof(not_it) / sizeof(not_it[0]); i++)
        ck_assert_msg(!vmgenid_is_vm_fork_log(not_it[i], strlen(not_it[i])),
                      "counted as a VM fork: %s", not_it[i]);
}
END_TEST

/* The seam: records written into a datagram socket, one a read, as /dev/kmsg gives them. */
START_TEST(simulated_kernel_log_records_through_the_seam_are_counted)
{
    static const char other[] = "6,335,1277000,-;virtio_net virtio0 eth0: renamed\n";
    struct vmgenid v;
    int sv[2];

    vmgenid_init(&v);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    vmgenid_open_kmsg_fd(&v, sv[0]);
    ck_assert_uint_eq(vmgenid_read_kmsg(&v), 0);
    ck_assert_int_eq(send(sv[1], other, strlen(other), 0), (ssize_t)strlen(other));
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(send(sv[1], kernel_record, strlen(kernel_record), 0),
                         (ssize_t)strlen(kernel_record));
    ck_assert_uint_eq(vmgenid_read_kmsg(&v), 2);
    ck_assert_uint_eq(vmgenid_read_kmsg(&v), 0);
    ck_assert_uint_eq(v.log_lines, 2);
    vmgenid_close(&v);
    close(sv[1]);
}
END_TEST

/* The real /dev/kmsg: a fresh watch starts at the log's end (a restored machine's log holds
 * the line of its earlier restores), and a line root writes to /dev/kmsg, word for word the
 * kernel's, is not believed. A second reader shows the forged record was there to read. */
START_TEST(the_kernel_log_is_read_from_its_end_and_root_cannot_forge_the_line)
{
    static const char forged[] = "<5>random: crng reseeded due to virtual machine fork\n";
    char rec[8193];
    struct vmgenid v;
    int writer, witness, rc;
    ssize_t n;
    bool seen = false;

    vmgenid_init(&v);
    if ((rc = vmgenid_open_kmsg(&v)) < 0) {
        fprintf(stderr, "SKIP the_kernel_log_is_read_from_its_end...: /dev/kmsg: %s\n",
                strerror(-rc));
        return;
    }
    ck_assert_uint_eq(vmgenid_read_kmsg(&v), 0);
    writer = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    witness = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer < 0 || witness < 0) {
        fprintf(stderr, "SKIP ...root_cannot_forge_the_line: /dev/kmsg not writable: %s\n",
                strerror(errno));
    } else {
        ck_assert_int_ge(lseek(witness, 0, SEEK_END), 0);
        ck_assert_int_eq(write(writer, forged, strlen(forged)), (ssize_t)strlen(forged));
        while ((n = read(witness, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE))
            if (n > 0) {
                rec[n] = '\0';
                seen |= strstr(rec, "virtual machine fork") != NULL;
            }
        ck_assert_msg(seen, "the forged line was not in /dev/kmsg for a second reader");
        ck_assert_uint_eq(vmgenid_read_kmsg(&v), 0);
        ck_assert_uint_eq(v.log_lines, 0);
    }
    if (writer >= 0)
        close(writer);
    if (witness >= 0)
        close(witness);
    vmgenid_close(&v);
}
END_TEST

/* A 6.8 kernel sends both for one change; two changes are never taken for one. */
START_TEST(a_log_line_and_uevent_pair_is_one_change)
{
    const uint64_t ms = 1000 * 1000;
    struct vmgenid v;

    vmgenid_init(&v);
    ck_assert(vmgenid_is_new_change(&v, VMGENID_KERNEL_LOG, 1000 * ms));
    ck_assert(!vmgenid_is_new_change(&v, VMGENID_UEVENT, 1001 * ms));       /* its pair */
    ck_assert(vmgenid_is_new_change(&v, VMGENID_KERNEL_LOG, 1100 * ms));    /* a second */
    ck_assert(!vmgenid_is_new_change(&v, VMGENID_UEVENT, 1100 * ms));
    ck_assert(vmgenid_is_new_change(&v, VMGENID_UEVENT, 1200 * ms));        /* paired once */
    ck_assert(vmgenid_is_new_change(&v, VMGENID_UEVENT, 1300 * ms));        /* same kind */
    ck_assert(vmgenid_is_new_change(&v, VMGENID_KERNEL_LOG, 2400 * ms));    /* too late */
    ck_assert(vmgenid_is_new_change(&v, VMGENID_KERNEL_LOG, 2401 * ms));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("vmgenid");
    TCase *tc = tcase_create("uevents");

    tcase_add_test(tc, only_a_change_event_with_new_vmgenid_1_counts);
    tcase_add_test(tc, simulated_uevents_through_the_seam_are_counted);
    tcase_add_test(tc, a_uevent_from_a_process_is_not_believed);
    tcase_add_test(tc, only_the_kernels_own_vm_fork_line_counts);
    tcase_add_test(tc, simulated_kernel_log_records_through_the_seam_are_counted);
    tcase_add_test(tc, the_kernel_log_is_read_from_its_end_and_root_cannot_forge_the_line);
    tcase_add_test(tc, a_log_line_and_uevent_pair_is_one_change);
    suite_add_tcase(s, tc);
    return s;
}
