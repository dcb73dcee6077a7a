/* daemon/memfd_arena.c over a socketpair, the test playing the client: an arena whose memfd
 * the client has not received keeps its place in the uid's share after the connection is
 * closed, until the client reads it or goes; the client then reads what it was sent and
 * end-of-file, as after a close. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "memfd_arena.h"
#include "runner.h"

#define UID 4242                        /* no other test's */

/* An arena for UID whose memfd went with one byte on a new connection, which the daemon then
 * closes: *client is the client's end, the reply unread. */
static void arena_sent_and_closed(int *client)
{
    struct memfd_arena *a;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ck_assert_int_eq(memfd_arena_open(&a, UID), 0);
    ck_assert_int_eq(memfd_arena_send(a, sv[0], "r", 1), 1);
    close(sv[0]);                       /* as the listener does, before the release */
    memfd_arena_close(a);
    *client = sv[1];
}

/* How many more arenas UID may open now (they are closed again). */
static int room_for_uid(void)
{
    struct memfd_arena *a[MEMFD_ARENA_PER_UID];
    int n = 0, rc;

    while (n < MEMFD_ARENA_PER_UID && (rc = memfd_arena_open(&a[n], UID)) == 0)
        n++;
    ck_assert_msg(n == MEMFD_ARENA_PER_UID || rc == -EDQUOT, "memfd_arena_open: %d", rc);
    for (int i = 0; i < n; i++)
        memfd_arena_close(a[i]);
    return n;
}

/* The reply the client reads, and whether a descriptor came with it. */
static int read_reply(int client, char *byte)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    struct iovec iov = { byte, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct cmsghdr *c;
    int fd = -1;

    ck_assert_int_eq(recvmsg(client, &msg, MSG_CMSG_CLOEXEC), 1);
    c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

START_TEST(an_unread_memfd_keeps_its_place_until_the_client_reads_it)
{
    int client;
    char byte = 0;

    ck_assert_int_eq(room_for_uid(), MEMFD_ARENA_PER_UID);
    arena_sent_and_closed(&client);
    ck_assert_msg(room_for_uid() == MEMFD_ARENA_PER_UID - 1,
                  "a closed connection's memfd still in flight: its arena stopped counting");
    ck_assert_msg(read_reply(client, &byte) && byte == 'r', "the reply or its memfd is lost");
    ck_assert_msg(recv(client, &byte, 1, 0) == 0, "no end-of-file after the reply");
    ck_assert_msg(room_for_uid() == MEMFD_ARENA_PER_UID,
                  "the memfd was received, yet its arena still counts");
    close(client);
}
END_TEST

START_TEST(an_unread_memfd_stops_counting_when_the_client_closes)
{
    int clients[MEMFD_ARENA_PER_UID];

    for (int i = 0; i < MEMFD_ARENA_PER_UID; i++)
        arena_sent_and_closed(&clients[i]);
    ck_assert_int_eq(room_for_uid(), 0);
    close(clients[0]);
    ck_assert_int_eq(room_for_uid(), 1);
    for (int i = 1; i < MEMFD_ARENA_PER_UID; i++)
        close(clients[i]);
    ck_assert_int_eq(room_for_uid(), MEMFD_ARENA_PER_UID);
}
END_TEST

START_TEST(an_arena_read_before_the_close_stops_counting_at_once)
{
    struct memfd_arena *a;
    int sv[2];
    char byte;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ck_assert_int_eq(memfd_arena_open(&a, UID), 0);
    ck_assert_int_eq(memfd_arena_send(a, sv[0], "r", 1), 1);
    ck_assert(read_reply(sv[1], &byte));
    close(sv[0]);
    memfd_arena_close(a);
    ck_assert_msg(recv(sv[1], &byte, 1, 0) == 0, "the connection was not closed");
    ck_assert_int_eq(room_for_uid(), MEMFD_ARENA_PER_UID);
    close(sv[1]);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("memfd_arena");
    TCase *tc = tcase_create("descriptors in flight");

    tcase_add_test(tc, an_unread_memfd_keeps_its_place_until_the_client_reads_it);
    tcase_add_test(tc, an_unread_memfd_stops_counting_when_the_client_closes);
    tcase_add_test(tc, an_arena_read_before_the_close_stops_counting_at_once);
    suite_add_tcase(s, tc);
    return s;
}
