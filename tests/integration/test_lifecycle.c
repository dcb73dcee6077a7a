/* randd's life as a service, end to end: a stale socket replaced and a live one left alone,
 * socket activation, READY=1 and the watchdog on NOTIFY_SOCKET, NOT_READY before seeding,
 * and a librandd handle that lives through a fork, a restart and a SIGKILLed daemon. Under a
 * real systemd: make check-systemd (tests/system/check-systemd.sh). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "protocol.h"
#include "randd.h"

START_TEST(stale_socket_is_replaced_and_a_live_one_is_not_stolen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0), status;
    char *second[] = { randd_path(), "--config", conf, "--socket", sock, NULL };
    pid_t pid;

    strcpy(sa.sun_path, sock);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);                                   /* a killed daemon leaves this behind */
    start_daemon_with("", NULL);                 /* waits until it answers on sock */
    pid = spawn(second, NULL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
                  "a second randd on a live socket did not exit 1");
    wait_listening(sock);                        /* and the first still answers */
}
END_TEST

START_TEST(systemd_socket_activation_is_used)
{
    char *argv[] = { "/usr/bin/systemd-socket-activate", "-l", sock, randd_path(),
                     "--config", conf, NULL };

    if (access(argv[0], X_OK) != 0) {
        fprintf(stderr, "SKIP systemd_socket_activation_is_used: no systemd-socket-activate\n");
        return;
    }
    write_config("socket = /nonexistent/never-bound.sock\n");
    daemon_pid = spawn(argv, NULL);
    wait_listening(sock);                        /* it serves on the socket it was given */
    ck_assert_int_ne(access("/nonexistent/never-bound.sock", F_OK), 0);
}
END_TEST

/* Collects NOTIFY_SOCKET datagrams until one contains want (or about 10 s pass). */
static bool notified(int fd, const char *want, char *msg, size_t cap)
{
    for (int i = 0; i < 20; i++) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t n;

        if (poll(&pf, 1, 500) != 1)
            continue;
        n = recv(fd, msg, cap - 1, 0);
        msg[n > 0 ? n : 0] = '\0';
        if (strstr(msg, want))
            return true;
    }
    return false;
}

START_TEST(ready_is_notified_to_systemd)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char notify[128], msg[512] = "";
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool ready = false;

    snprintf(notify, sizeof(notify), "%s/notify", dir);
    strcpy(sa.sun_path, notify);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    extra_env = "WATCHDOG_USEC=400000";
    start_daemon_with("", notify);
    extra_env = NULL;
    ready = notified(fd, "READY=1", msg, sizeof(msg));
    ck_assert_msg(ready, "no READY=1 on NOTIFY_SOCKET (last message: %s)", msg);
    ck_assert_msg(notified(fd, "WATCHDOG=1", msg, sizeof(msg)),
                  "no WATCHDOG=1 with WATCHDOG_USEC set (last message: %s)", msg);
    close(fd);
}
END_TEST

/* Without any source the daemon never seeds: NONBLOCK gets NOT_READY, a plain request
 * waits, and other clients (STATUS) are still answered meanwhile. */
START_TEST(not_ready_daemon_answers_nonblock_with_not_ready)
{
    uint8_t body[256];
    int waiting, other;
    struct pollfd pf;

    start_daemon_with(NEVER_SEEDS, NULL);
    other = connect_raw();
    send_request(other, &(struct randd_request){ .op = RANDD_OP_BYTES, .flags = RANDD_FLAG_NONBLOCK,
                                                 .n = 32 });
    check_status(other, RANDD_NOT_READY, "NONBLOCK before seeding");
    waiting = connect_raw();
    send_bytes(waiting, 32);
    send_request(other, &(struct randd_request){ .op = RANDD_OP_STATUS });
    ck_assert_int_eq(read_reply(other, body, sizeof(body), NULL), RANDD_OK);
    pf = (struct pollfd){ waiting, POLLIN, 0 };
    ck_assert_msg(poll(&pf, 1, 300) == 0, "a request was answered by an unseeded daemon");
    close(waiting);
    close(other);
}
END_TEST

START_TEST(a_handle_reconnects_after_fork_and_after_a_daemon_restart)
{
    randd_handle *h;
    uint8_t buf[32];
    pid_t child;
    int status;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);
    child = fork();
    if (child == 0)
        _exit(randd_bytes(h, buf, sizeof(buf)) == 0 ? 0 : 1);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child's request failed");
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);    /* parent's stream intact */
    stop_daemon();
    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);    /* one reconnect */
    randd_close(h);
}
END_TEST

/* SIGKILL in the middle of a stream: the socket file stays behind, a call while the daemon is
 * down fails cleanly, and once a new daemon replaces the stale socket the same librandd handle
 * is served again. */
START_TEST(a_handle_outlives_a_sigkilled_daemon)
{
    randd_handle *h, *streamer;
    uint8_t buf[32];
    struct stat st;
    pid_t child;
    int status;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    randd_set_timeout(h, 5000);
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {                                /* load: 1 MiB calls until it breaks */
        static uint8_t big[1 << 20];

        if (randd_open(&streamer, sock) < 0)
            _exit(2);
        randd_set_timeout(streamer, 5000);
        while (randd_bytes(streamer, big, sizeof(big)) == 0)
            ;
        _exit(0);
    }
    free(wait_count("\"bytes_served\":", 1 << 20,
                    "the streaming child to get its first 1 MiB"));
    ck_assert_int_eq(kill(daemon_pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(daemon_pid, &status, 0), daemon_pid);
    daemon_pid = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the streaming client did not see its daemon go (status 0x%x)", status);
    ck_assert_int_eq(stat(sock, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), -ECONNREFUSED);
    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);
    randd_close(h);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("randd over its socket");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);          /* above the waits' WAIT_SECONDS */
    tcase_add_test(tc, stale_socket_is_replaced_and_a_live_one_is_not_stolen);
    tcase_add_test(tc, systemd_socket_activation_is_used);
    tcase_add_test(tc, ready_is_notified_to_systemd);
    tcase_add_test(tc, not_ready_daemon_answers_nonblock_with_not_ready);
    tcase_add_test(tc, a_handle_reconnects_after_fork_and_after_a_daemon_restart);
    tcase_add_test(tc, a_handle_outlives_a_sigkilled_daemon);
    suite_add_tcase(s, tc);
    return s;
}
