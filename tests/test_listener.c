/* The listener (daemon/listener.c) in a loop of this test, with a protocol of the test's own:
 * one max_clients over two listeners, one uid's share of it, the refusals beyond them,
 * max-min fairness between uids (an idle connection of the biggest holder evicted for a
 * newcomer), peers' credentials, the close that gives the place back, and an idle timeout
 * that a reload changes. */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "listener.h"
#include "runner.h"

#define WAIT_NS (45 * 1000000000ull)   /* a deadline, not a pace: states end the loop */

struct test_client {
    struct listener_conn conn;
    int id;
};

struct proto {
    struct listener listener;
    struct test_client *opened[16];
    int nopened, refused, over_share, evicted, freed;
};

static struct loop *loop;
static int accepted, awaited;           /* connections accepted or refused; the loop's goal */

static void count_accepted(void)
{
    if (++accepted == awaited)
        loop_stop(loop);
}

static void test_open(void *arg, struct listener_conn *conn)
{
    struct proto *p = arg;
    struct test_client *c = LISTENER_CLIENT(conn, struct test_client, conn);

    c->id = p->nopened;
    p->opened[p->nopened++] = c;
    count_accepted();
}

static void test_event(void *arg, int fd, uint32_t events)
{
    (void)arg, (void)fd, (void)events;
}

static void test_release(struct listener_conn *conn)
{
    struct proto *p = conn->listener->ctx;

    p->freed++;
}

static bool never_waiting(const struct listener_conn *c)
{
    (void)c;
    return false;
}

static void test_refuse(void *arg, int fd, enum listener_refusal why, uid_t uid)
{
    struct proto *p = arg;

    ck_assert_int_ge(fd, 0);
    /* this test, over Unix or TCP; or the uids it connects as (fairness) */
    ck_assert(uid == geteuid() || uid == LISTENER_NO_UID || uid >= 65500);
    p->refused += why != LISTENER_EVICTED;
    p->over_share += why == LISTENER_UID_SHARE;
    p->evicted += why == LISTENER_EVICTED;
    count_accepted();
}

static const struct listener_ops ops = {
    .client_size = sizeof(struct test_client), .conn_offset = offsetof(struct test_client, conn),
    .open = test_open, .event = test_event, .release = test_release, .waiting = never_waiting,
    .refuse = test_refuse,
};

static char dir[64];

static int listening(const char *name, struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
    snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, name);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    return fd;
}

static int connect_to(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa, sizeof(*sa)), 0);
    return fd;
}

static void deadline(void *arg)
{
    (void)arg;
    loop_stop(loop);
}

/* Runs the loop until n connections were accepted or refused, or the deadline passed. */
static void run_until_accepted(int n)
{
    int timer = loop_add_timer(loop, WAIT_NS, deadline, NULL);

    awaited = n;
    if (accepted < awaited)
        ck_assert_int_eq(loop_run(loop), 0);
    loop_cancel_timer(loop, timer);
    ck_assert_msg(accepted == n, "%d connections accepted or refused in 45 s, wanted %d",
                  accepted, n);
}

static struct config config;

static void setup(void)
{
    strcpy(dir, "/tmp/randd-test-listener-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    config_defaults(&config);
    accepted = awaited = 0;
    loop = loop_new();
    ck_assert_ptr_nonnull(loop);
}

static void teardown(void)
{
    char cmd[128];

    loop_free(loop);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* start_two: listeners a and b on sockets of their own (their addresses in sa_a and sb) in
 * this test's loop, sharing clients' limits as randd's client and EGD listeners do. */
static void start_two(struct listener_clients *clients, struct proto *a,
                      struct sockaddr_un *sa_a, struct proto *b, struct sockaddr_un *sb)
{
    listener_clients_init(clients);
    listener_init(&a->listener, "a", &ops, a, &config, &config.idle_timeout);
    listener_init(&b->listener, "b", &ops, b, &config, &config.idle_timeout);
    ck_assert_int_eq(listener_add_fd(&a->listener, listening("a", sa_a)), 0);
    ck_assert_int_eq(listener_add_fd(&b->listener, listening("b", sb)), 0);
    ck_assert_int_eq(listener_start(&a->listener, loop, clients), 0);
    ck_assert_int_eq(listener_start(&b->listener, loop, clients), 0);
}

START_TEST(two_listeners_share_one_max_clients_and_refuse_beyond_it)
{
    struct listener_clients clients;
    struct proto a = { 0 }, b = { 0 };
    struct sockaddr_un sa_a, sb;
    int peers[4];

    config.max_clients = 3;
    config.max_clients_per_uid = 3;             /* every peer is one uid: the total alone */
    start_two(&clients, &a, &sa_a, &b, &sb);
    peers[0] = connect_to(&sa_a);
    peers[1] = connect_to(&sa_a);
    run_until_accepted(2);
    peers[2] = connect_to(&sb);
    peers[3] = connect_to(&sb);                 /* the fourth of three */
    run_until_accepted(4);
    ck_assert_int_eq(a.nopened, 2);
    ck_assert_int_eq(b.nopened + b.refused, 2);
    ck_assert_msg(b.nopened == 1 && b.refused == 1, "b opened %d and refused %d: max_clients "
                  "not shared", b.nopened, b.refused);
    ck_assert_uint_eq(clients.connected, 3);

    /* Every peer is this test: its uid, and trusted as root only. */
    for (int i = 0; i < a.nopened; i++) {
        ck_assert_uint_eq(a.opened[i]->conn.uid, geteuid());
        ck_assert(a.opened[i]->conn.trusted == (geteuid() == 0));
    }

    /* A close gives the place back. */
    listener_close_conn(&a.opened[0]->conn);
    ck_assert_int_eq(a.freed, 1);
    ck_assert_uint_eq(clients.connected, 2);
    listener_close(&a.listener);
    listener_close(&b.listener);
    ck_assert_int_eq(a.freed + b.freed, 3);
    ck_assert_uint_eq(clients.connected, 0);
    ck_assert_int_eq(b.over_share, 0);
    for (int i = 0; i < 4; i++)
        close(peers[i]);
    listener_clients_free(&clients);
}
END_TEST

/* One uid's share holds over both listeners, below max_clients: the refusal says why, is
 * counted, and a close gives the uid its place back. */
START_TEST(a_uids_share_holds_over_two_listeners_and_a_close_gives_it_back)
{
    struct listener_clients clients;
    struct proto a = { 0 }, b = { 0 };
    struct sockaddr_un sa_a, sb;
    int peers[4];

    config.max_clients = 8;
    config.max_clients_per_uid = 2;
    start_two(&clients, &a, &sa_a, &b, &sb);
    peers[0] = connect_to(&sa_a);
    run_until_accepted(1);
    peers[1] = connect_to(&sb);
    run_until_accepted(2);
    peers[2] = connect_to(&sb);                 /* the uid's third of two */
    run_until_accepted(3);
    ck_assert_msg(a.nopened == 1 && b.nopened == 1 && b.refused == 1 && b.over_share == 1,
                  "a opened %d; b opened %d, refused %d (%d over the share): wanted 1, 1, 1, "
                  "1 with max_clients_per_uid = 2 over both", a.nopened, b.nopened, b.refused,
                  b.over_share);
    ck_assert_uint_eq(clients.connected, 2);
    ck_assert_uint_eq(clients.over_uid_share, 1);

    listener_close_conn(&a.opened[0]->conn);
    peers[3] = connect_to(&sb);                 /* its place again */
    run_until_accepted(4);
    ck_assert_msg(b.nopened == 2 && b.refused == 1, "after a close, b opened %d and refused "
                  "%d: the uid did not get its place back", b.nopened, b.refused);
    listener_close(&a.listener);
    listener_close(&b.listener);
    ck_assert_uint_eq(clients.connected, 0);
    ck_assert_uint_eq(clients.nuids, 0);
    for (int i = 0; i < 4; i++)
        close(peers[i]);
    listener_clients_free(&clients);
}
END_TEST

/* A connection to sa made as uid (a child connects, and hands it back over a socketpair):
 * SO_PEERCRED is the connecting process's. */
static int connect_as_uid(const struct sockaddr_un *sa, uid_t uid)
{
    union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } ctl;
    char byte = 0;
    struct iovec iov = { &byte, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                          .msg_controllen = sizeof(ctl.buf) };
    int pair[2], fd, status;
    pid_t child;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    if ((child = fork()) == 0) {
        if (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
            _exit(1);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
            _exit(2);
        ctl.h = (struct cmsghdr){ .cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET,
                                  .cmsg_type = SCM_RIGHTS };
        memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(int));
        _exit(sendmsg(pair[1], &msg, 0) == 1 ? 0 : 3);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "connecting as uid %u: "
                  "status %d", (unsigned)uid, status);
    ck_assert_int_eq(recvmsg(pair[0], &msg, 0), 1);
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
    close(pair[0]);
    close(pair[1]);
    return fd;
}

/* Max-min fairness (issue 42), over two listeners: uid 65534 alone takes every place not
 * kept for root (7 of 8) on a; uid 65533, on b, then gets its fair share (7 over 2 uids: 3),
 * each place one of 65534's idle connections, evicted and closed on a; its fourth is
 * refused over its share. The places add up all along. */
START_TEST(a_newcomer_gets_its_fair_share_by_evicting_the_biggest_holders_idle_ones)
{
    struct listener_clients clients;
    struct proto a = { 0 }, b = { 0 };
    struct sockaddr_un sa_a, sb;
    int hog[8], newcomer[4], closed = 0;
    char byte;

    if (geteuid() != 0) {
        fprintf(stderr, "SKIP a_newcomer_gets_its_fair_share_by_evicting_the_biggest_holders_"
                        "idle_ones: needs root to connect as other uids\n");
        return;
    }
    config.max_clients = 8;                     /* an eighth kept for root: 7 others' */
    start_two(&clients, &a, &sa_a, &b, &sb);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    ck_assert_int_eq(chmod(sa_a.sun_path, 0777), 0);
    ck_assert_int_eq(chmod(sb.sun_path, 0777), 0);
    for (int i = 0; i < 8; i++)
        hog[i] = connect_as_uid(&sa_a, 65534);
    run_until_accepted(8);
    ck_assert_msg(a.nopened == 7 && a.over_share == 1, "uid 65534 alone opened %d, %d over "
                  "its share: wanted every place not kept for root, 7", a.nopened,
                  a.over_share);
    for (int i = 0; i < 4; i++)
        newcomer[i] = connect_as_uid(&sb, 65533);
    run_until_accepted(8 + 3 * 2 + 1);           /* 3 opened, each evicting one; 1 refused */
    ck_assert_msg(b.nopened == 3 && b.over_share == 1 && a.evicted == 3 && a.freed == 3,
                  "uid 65533 opened %d (%d over its share), evicting %d of 65534's (%d "
                  "freed): wanted its fair share 3, and 1 refused", b.nopened, b.over_share,
                  a.evicted, a.freed);
    ck_assert_uint_eq(clients.connected, 7);
    ck_assert_uint_eq(clients.evicted, 3);
    ck_assert_uint_eq(listener_fair_share(&clients, &config), 3);
    for (int i = 0; i < 7; i++)                 /* the evicted ones read end-of-file */
        closed += recv(hog[i], &byte, 1, MSG_DONTWAIT) == 0;
    ck_assert_int_eq(closed, 3);
    listener_close(&a.listener);
    listener_close(&b.listener);
    ck_assert_uint_eq(clients.connected, 0);
    for (int i = 0; i < 8; i++)
        close(hog[i]);
    for (int i = 0; i < 4; i++)
        close(newcomer[i]);
    listener_clients_free(&clients);
}
END_TEST

/* TCP peers have no uid, and any user can be one: together they get half a uid's share, so a
 * user holding its own and theirs still leaves room. */
START_TEST(tcp_peers_share_half_a_uids_share)
{
    struct listener_clients clients;
    struct proto t = { 0 };
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), peers[3];

    config.max_clients = 8;
    config.max_clients_per_uid = 4;
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(lfd, 16), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    listener_clients_init(&clients);
    listener_init(&t.listener, "tcp", &ops, &t, &config, &config.idle_timeout);
    ck_assert_int_eq(listener_add_fd(&t.listener, lfd), 0);
    ck_assert_int_eq(listener_start(&t.listener, loop, &clients), 0);
    for (int i = 0; i < 3; i++) {
        peers[i] = socket(AF_INET, SOCK_STREAM, 0);
        ck_assert_int_eq(connect(peers[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
        run_until_accepted(i + 1);
    }
    ck_assert_msg(t.nopened == 2 && t.over_share == 1, "TCP peers: %d opened, %d refused over "
                  "the share; wanted 2 and 1 (half of max_clients_per_uid = 4)", t.nopened,
                  t.over_share);
    ck_assert_uint_eq(t.opened[0]->conn.uid, LISTENER_NO_UID);
    ck_assert(!t.opened[0]->conn.trusted);
    listener_close(&t.listener);
    for (int i = 0; i < 3; i++)
        close(peers[i]);
    listener_clients_free(&clients);
}
END_TEST

START_TEST(a_reload_rearms_the_idle_sweep_for_the_new_timeout)
{
    struct listener_clients clients;
    struct proto a = { 0 };
    struct sockaddr_un sa;

    config.idle_timeout = 0;
    listener_clients_init(&clients);
    listener_init(&a.listener, "a", &ops, &a, &config, &config.idle_timeout);
    ck_assert_int_eq(listener_add_fd(&a.listener, listening("a", &sa)), 0);
    ck_assert_int_eq(listener_start(&a.listener, loop, &clients), 0);
    ck_assert_int_eq(a.listener.sweep_timer, 0);          /* 0: never */
    config.idle_timeout = 30;
    listener_reload(&a.listener);
    ck_assert_int_gt(a.listener.sweep_timer, 0);
    ck_assert_uint_eq(a.listener.sweep_timeout, 30);
    config.idle_timeout = 0;
    listener_reload(&a.listener);
    ck_assert_int_eq(a.listener.sweep_timer, 0);
    listener_close(&a.listener);
}
END_TEST

START_TEST(a_zeroed_or_socketless_listener_closes_cleanly)
{
    struct listener zeroed;
    struct proto a = { 0 };
    struct listener_clients clients;

    memset(&zeroed, 0, sizeof(zeroed));
    listener_close(&zeroed);                               /* randd stopped before opening */
    listener_clients_init(&clients);
    listener_init(&a.listener, "a", &ops, &a, &config, &config.idle_timeout);
    ck_assert(!listener_listening(&a.listener));
    ck_assert_int_eq(listener_start(&a.listener, loop, &clients), 0);
    listener_close(&a.listener);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("listener");
    TCase *tc = tcase_create("accept, limits, sweep");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, two_listeners_share_one_max_clients_and_refuse_beyond_it);
    tcase_add_test(tc, a_uids_share_holds_over_two_listeners_and_a_close_gives_it_back);
    tcase_add_test(tc, tcp_peers_share_half_a_uids_share);
    tcase_add_test(tc, a_newcomer_gets_its_fair_share_by_evicting_the_biggest_holders_idle_ones);
    tcase_add_test(tc, a_reload_rearms_the_idle_sweep_for_the_new_timeout);
    tcase_add_test(tc, a_zeroed_or_socketless_listener_closes_cleanly);
    suite_add_tcase(s, tc);
    return s;
}
