/* The EGD sockets beside protocol v1, end to end, over Unix and TCP: every command, who may
 * add entropy, unknown commands closed gracefully, nothing reported before seeding, clients
 * exempt from idle_timeout but not from egd_idle_timeout (set by a reload too), trickled
 * commands, clients that stop reading, running out of descriptors, max_clients shared with
 * v1 clients, socket activation by name, and Debian's ekeyd-egd-linux as a client. QEMU's
 * rng-egd in a guest: make check-qemu. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "protocol.h"
#include "randd.h"

static char egd_sock[160];
static int egd_port;

static int free_tcp_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static void start_egd_daemon(const char *extra)
{
    char text[512];

    snprintf(egd_sock, sizeof(egd_sock), "%s/egd.sock", dir);
    egd_port = free_tcp_port();
    snprintf(text, sizeof(text), "egd_socket = %s\negd_listen = 127.0.0.1:%d\n%s", egd_sock,
             egd_port, extra);
    start_daemon_with(text, NULL);
}

static int connect_egd(bool tcp)
{
    struct sockaddr_un su = { .sun_family = AF_UNIX };
    struct sockaddr_in si = { .sin_family = AF_INET, .sin_port = htons((uint16_t)egd_port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    strcpy(su.sun_path, egd_sock);
    ck_assert_int_eq(tcp ? connect(fd, (struct sockaddr *)&si, sizeof(si))
                         : connect(fd, (struct sockaddr *)&su, sizeof(su)), 0);
    return fd;
}

/* The STATUS JSON's egd section, for counters. */
static void egd_status(char *out, size_t cap)
{
    randd_handle *h;
    char *json, *at;

    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_gt(randd_status(h, &json), 0);
    randd_close(h);
    at = strstr(json, "\"egd\":");
    ck_assert_ptr_nonnull(at);
    snprintf(out, cap, "%.*s", (int)(strchr(at, '}') - at + 1), at);
    free(json);
}

START_TEST(egd_commands_work_over_unix_and_tcp)
{
    for (int tcp = 0; tcp <= 1; tcp++) {
        uint8_t buf[300], add[] = { 0x03, 0x00, 0x10, 0x02, 0xaa, 0xbb };
        int fd;
        char pid[32];

        start_egd_daemon("");
        fd = connect_egd(tcp);
        ck_assert_int_eq(send(fd, "\x00", 1, 0), 1);               /* entropy level */
        read_exact(fd, buf, 4);
        ck_assert_uint_eq((uint32_t)buf[0] << 24 | buf[1] << 16 | buf[2] << 8 | buf[3], 4096);
        ck_assert_int_eq(send(fd, "\x01\x0a", 2, 0), 2);           /* non-blocking read */
        read_exact(fd, buf, 11);
        ck_assert_uint_eq(buf[0], 10);
        ck_assert_int_eq(send(fd, "\x02\xff", 2, 0), 2);           /* blocking read */
        read_exact(fd, buf, 255);
        ck_assert_int_eq(send(fd, add, sizeof(add), 0), (ssize_t)sizeof(add));   /* no reply */
        ck_assert_int_eq(send(fd, "\x04", 1, 0), 1);               /* pid */
        read_exact(fd, buf, 1);
        read_exact(fd, buf + 1, buf[0]);
        snprintf(pid, sizeof(pid), "%d", (int)daemon_pid);
        ck_assert_msg(buf[0] == strlen(pid) && !memcmp(buf + 1, pid, buf[0]),
                      "0x04 did not name pid %s", pid);
        close(fd);
        egd_status((char *)buf, sizeof(buf));
        ck_assert_msg(strstr((char *)buf, "\"commands\":[1,1,1,1,1]") &&
                      strstr((char *)buf, "\"bytes_served\":265"), "%s: %s", tcp ? "tcp" : "unix",
                      buf);
        /* Added entropy counts only from a privileged peer on the Unix socket. */
        ck_assert_ptr_nonnull(strstr((char *)buf, tcp || geteuid() != 0
                                     ? "\"entropy_bytes_added\":0,\"entropy_bytes_dropped\":2"
                                     : "\"entropy_bytes_added\":2,\"entropy_bytes_dropped\":0"));
        stop_daemon();
    }
}
END_TEST

/* Out of descriptors the EGD sockets pause accept as the client socket does (one listener,
 * listener.c, accepts for both: EGD's own copy once spun at EMFILE), and serve again once
 * descriptors free up. */
START_TEST(egd_running_out_of_descriptors_pauses_accept_without_spinning)
{
    enum { CLIENTS = 40 };
    int fds[CLIENTS];
    uint8_t level[4];
    double cpu;

    /* As in the client socket's test: valgrind keeps 12 descriptors for itself. */
    fd_limit = getenv("RANDD_REAL") ? 36 : 24;
    start_egd_daemon("");
    fd_limit = 0;
    for (int i = 0; i < CLIENTS; i++)
        fds[i] = connect_egd(i % 2);         /* the backlogs take what accept cannot */
    wait_log("egd: accept: ");
    cpu = serving_cpu_seconds();
    sleep(1);                               /* the window CPU time is measured over */
    ck_assert_msg(serving_cpu_seconds() - cpu < 0.3,
                  "randd's loop used %.2f CPU seconds in 1 s at EMFILE on the EGD sockets: spinning",
                  serving_cpu_seconds() - cpu);
    for (int i = 0; i < CLIENTS; i++)
        close(fds[i]);
    for (int tcp = 0; tcp <= 1; tcp++) {    /* served once the closes free descriptors */
        fds[0] = connect_egd(tcp);
        ck_assert_int_eq(send(fds[0], "\x00", 1, 0), 1);
        read_exact(fds[0], level, sizeof(level));
        close(fds[0]);
    }
}
END_TEST

/* A Unix peer whose trusted_group is one of its supplementary groups, not its primary one,
 * adds entropy over EGD as it may over protocol v1 (EGD's own check once saw only the
 * primary group). */
START_TEST(egd_trusts_the_trusted_group_as_a_supplementary_group)
{
    static const uint8_t add[] = { 0x03, 0x00, 0x10, 0x02, 0xaa, 0xbb };
    const struct group *trusted = getgrnam("nogroup"), *primary = getgrnam("daemon");
    char st[300], extra[64];
    int status;
    pid_t child;

    if (geteuid() != 0 || !trusted || !primary) {
        fprintf(stderr, "SKIP egd_trusts_the_trusted_group...: needs root and the groups "
                        "nogroup and daemon\n");
        return;
    }
    snprintf(extra, sizeof(extra), "trusted_group = %s\n", trusted->gr_name);
    start_egd_daemon(extra);
    chmod(dir, 0755);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        gid_t groups[1] = { trusted->gr_gid };
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);

        strcpy(sa.sun_path, egd_sock);
        if (setgroups(1, groups) < 0 || setresgid(primary->gr_gid, primary->gr_gid,
                                                   primary->gr_gid) < 0 ||
            setresuid(65534, 65534, 65534) < 0)
            _exit(10);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            _exit(11);
        _exit(send(fd, add, sizeof(add), 0) == (ssize_t)sizeof(add) ? 0 : 12);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "uid 65534 in group %s could not send to %s (step %d)", trusted->gr_name,
                  egd_sock, WEXITSTATUS(status));
    for (double end = seconds_now() + WAIT_SECONDS;; usleep(50000)) {
        egd_status(st, sizeof(st));
        if (!strstr(st, "\"entropy_bytes_added\":0,\"entropy_bytes_dropped\":0"))
            break;
        ck_assert_msg(seconds_now() < end, "waited %d s for the 0x03 command: %s",
                      WAIT_SECONDS, st);
    }
    ck_assert_msg(strstr(st, "\"entropy_bytes_added\":2,\"entropy_bytes_dropped\":0"),
                  "a peer in trusted_group by a supplementary group was not trusted: %s", st);
}
END_TEST

/* An EGD client that got a place, its entropy-level command answered. EGD cannot say BUSY
 * (a refused client is closed), so one refused while the daemon has yet to see an earlier
 * client (STATUS's) go tries again. */
static int connect_egd_when_room(void)
{
    for (double end = seconds_now() + WAIT_SECONDS;; usleep(20000)) {
        int fd = connect_egd(true);
        uint8_t level[4];
        size_t got = 0;

        if (send(fd, "\x00", 1, MSG_NOSIGNAL) == 1)
            for (struct pollfd pf = { fd, POLLIN, 0 }; got < sizeof(level);) {
                ssize_t n;

                ck_assert_msg(poll(&pf, 1, 30000) == 1, "no EGD answer within 30 s");
                if ((n = recv(fd, level + got, sizeof(level) - got, 0)) <= 0)
                    break;
                got += (size_t)n;
            }
        if (got == sizeof(level))
            return fd;
        close(fd);
        ck_assert_msg(seconds_now() < end, "no place for an EGD client within %d s",
                      WAIT_SECONDS);
    }
}

START_TEST(egd_and_protocol_clients_share_max_clients)
{
    uint8_t byte;
    int v1, egd, third;

    start_egd_daemon("max_clients = 2\nmax_clients_per_uid = 2\n");
    v1 = connect_when_room();
    egd = connect_egd_when_room();
    check_still_usable(v1, "the v1 client");        /* both accepted */
    third = connect_raw();
    check_status(third, RANDD_BUSY, "a third client with one v1 and one EGD client connected");
    close(third);
    third = connect_egd(false);             /* EGD cannot say busy: it is just closed */
    ck_assert_int_le(recv(third, &byte, 1, 0), 0);
    close(third);
    close(v1);
    close(egd);
}
END_TEST

START_TEST(egd_unknown_command_closes_and_is_counted)
{
    uint8_t byte, st[300];
    int fd;

    start_egd_daemon("");
    fd = connect_egd(true);
    ck_assert_int_eq(send(fd, "\x09", 1, 0), 1);
    ck_assert_int_le(recv(fd, &byte, 1, 0), 0);
    close(fd);
    egd_status((char *)st, sizeof(st));
    ck_assert_ptr_nonnull(strstr((char *)st, "\"unknown_commands\":1"));
    fd = connect_egd(false);                       /* the listener keeps serving */
    ck_assert_int_eq(send(fd, "\x02\x08", 2, 0), 2);
    read_exact(fd, st, 8);
    close(fd);
}
END_TEST

/* An unknown command closes the connection gracefully too: with bytes after it unread, the
 * client still gets end-of-file, not ECONNRESET (Unix) or a reset (TCP). */
START_TEST(egd_unknown_command_closes_with_eof_even_with_bytes_unread)
{
    uint8_t junk[101] = { 0x09 };

    start_egd_daemon("");
    for (int tcp = 0; tcp <= 1; tcp++) {
        int fd = connect_egd(tcp);

        ck_assert_int_eq(send(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
        check_end_of_file(fd, tcp ? "EGD over TCP, 0x09 and 100 more bytes"
                                  : "EGD over Unix, 0x09 and 100 more bytes");
        close(fd);
    }
}
END_TEST

START_TEST(egd_before_seeding_reports_nothing_and_blocking_reads_wait)
{
    uint8_t buf[8];
    int fd, waiting;
    struct pollfd pf;

    start_egd_daemon(NEVER_SEEDS);
    fd = connect_egd(false);
    ck_assert_int_eq(send(fd, "\x00\x01\x08", 3, 0), 3);
    read_exact(fd, buf, 5);
    ck_assert_msg(!buf[0] && !buf[1] && !buf[2] && !buf[3], "level not 0 while unseeded");
    ck_assert_uint_eq(buf[4], 0);                  /* non-blocking read: 0 bytes */
    waiting = connect_egd(true);
    ck_assert_int_eq(send(waiting, "\x02\x08", 2, 0), 2);
    ck_assert_int_eq(send(fd, "\x04", 1, 0), 1);   /* others still answered */
    read_exact(fd, buf, 1);
    pf = (struct pollfd){ waiting, POLLIN, 0 };
    ck_assert_msg(poll(&pf, 1, 300) == 0, "blocking read answered by an unseeded daemon");
    close(fd);
    close(waiting);
}
END_TEST

/* Waits until a protocol v1 client, connected now and silent, is closed by the idle sweep:
 * proof that idle_timeout has passed since this call and that the sweep ran meanwhile. */
static void wait_for_an_idle_v1_client_to_be_closed(void)
{
    struct pollfd pf = { connect_raw(), POLLIN, 0 };
    uint8_t byte;

    ck_assert_msg(poll(&pf, 1, WAIT_SECONDS * 1000) == 1,
                  "an idle protocol v1 client was not closed within %d s", WAIT_SECONDS);
    ck_assert_msg(recv(pf.fd, &byte, 1, 0) == 0, "the idle v1 client got data, not end-of-file");
    close(pf.fd);
}

/* QEMU's rng-egd holds one connection for the VM's life (paused, in firmware, or with a
 * guest that does not read for hours) and never notices a close: EGD clients are exempt
 * from idle_timeout unless egd_idle_timeout says otherwise. */
START_TEST(egd_clients_idle_longer_than_idle_timeout_are_still_served)
{
    uint8_t buf[16];
    int fds[2];

    start_egd_daemon("idle_timeout = 1\n");
    for (int tcp = 0; tcp <= 1; tcp++) {
        fds[tcp] = connect_egd(tcp);
        ck_assert_int_eq(send(fds[tcp], "\x02\x10", 2, 0), 2);
        read_exact(fds[tcp], buf, 16);
    }
    /* Three sweeps in a row closed a v1 client idle since after the EGD clients' last
     * command: they have been idle for well over idle_timeout, through several sweeps. */
    for (int i = 0; i < 3; i++)
        wait_for_an_idle_v1_client_to_be_closed();
    for (int tcp = 0; tcp <= 1; tcp++) {
        ck_assert_msg(send(fds[tcp], "\x02\x10", 2, MSG_NOSIGNAL) == 2,
                      "the EGD client over %s was closed while idle: %s", tcp ? "TCP" : "Unix",
                      strerror(errno));
        read_exact(fds[tcp], buf, 16);
        close(fds[tcp]);
    }
}
END_TEST

/* egd_idle_timeout, for those who want EGD clients closed: it applies on SIGHUP even when
 * the daemon started without one, and it closes only clients that make no progress. */
START_TEST(egd_idle_timeout_set_by_a_reload_closes_idle_egd_clients)
{
    char text[512];
    struct pollfd pf = { .events = POLLIN };
    uint8_t buf[16];
    int idle, busy;
    double end;

    start_egd_daemon("idle_timeout = 0\n");
    idle = connect_egd(false);
    busy = connect_egd(true);
    ck_assert_int_eq(send(idle, "\x02\x10", 2, 0), 2);
    read_exact(idle, buf, 16);
    snprintf(text, sizeof(text), "egd_socket = %s\negd_listen = 127.0.0.1:%d\n"
             "idle_timeout = 0\negd_idle_timeout = 1\n", egd_sock, egd_port);
    write_config(text);
    kill(daemon_pid, SIGHUP);
    wait_log("reload: ");
    pf.fd = idle;
    /* A command every 250 ms (pacing) keeps busy well inside the timeout, until the daemon
     * closes the idle one. */
    for (end = seconds_now() + WAIT_SECONDS; poll(&pf, 1, 250) == 0;) {
        ck_assert_msg(seconds_now() < end, "idle EGD client not closed within %d s of a reload "
                      "to egd_idle_timeout = 1", WAIT_SECONDS);
        ck_assert_int_eq(send(busy, "\x02\x01", 2, 0), 2);
        read_exact(busy, buf, 1);
    }
    ck_assert_msg(recv(idle, buf, 1, 0) == 0, "the idle EGD client got data, not end-of-file");
    ck_assert_int_eq(send(busy, "\x02\x10", 2, 0), 2);
    read_exact(busy, buf, 16);
    close(idle);
    close(busy);
}
END_TEST

/* As for a protocol v1 client (test_limits.c), a command trickled a byte at a time (0x03
 * with 255 bytes of data, four bytes inside egd_idle_timeout) is not progress, and its
 * client is closed. */
START_TEST(egd_a_client_trickling_a_command_is_closed_after_egd_idle_timeout)
{
    uint8_t command[4 + 255] = { 0x03, 0, 8, 255 }, byte;
    struct pollfd pf = { .events = POLLIN };
    size_t sent = 0;
    double end;

    start_egd_daemon("egd_idle_timeout = 1\n");
    pf.fd = connect_egd(true);
    for (end = seconds_now() + WAIT_SECONDS; poll(&pf, 1, 250) == 0; sent++) {
        ck_assert_msg(seconds_now() < end, "an EGD client sending a byte every 250 ms was not "
                      "closed within %d s with egd_idle_timeout = 1 (%zu bytes sent)",
                      WAIT_SECONDS, sent);
        ck_assert_int_lt(sent, sizeof(command));
        ck_assert_int_eq(send(pf.fd, command + sent, 1, MSG_NOSIGNAL), 1);
    }
    ck_assert_msg(recv(pf.fd, &byte, 1, 0) <= 0, "the trickling EGD client got data, not "
                  "end-of-file");
    close(pf.fd);
}
END_TEST

/* With no idle close, an EGD client that sends commands and never reads its replies must
 * still cost a bounded amount: the daemon stops reading its commands once a reply cannot be
 * sent, so the socket buffers fill and the client's sends block. Other clients go on. */
START_TEST(egd_clients_that_stop_reading_hold_bounded_memory)
{
    enum { CLIENTS = 20 };
    static uint8_t commands[4096];
    const size_t cap = 64u << 20;        /* sent by one client: the daemon never stopped */
    struct pollfd pf[CLIENTS];
    size_t sent[CLIENTS] = { 0 };
    uint8_t buf[16];
    long before;
    int fd;

    for (size_t i = 0; i < sizeof(commands); i += 2)
        commands[i] = 0x02, commands[i + 1] = 0xff;     /* blocking reads of 255 bytes */
    start_egd_daemon("");
    before = daemon_rss_kib();
    for (int i = 0; i < CLIENTS; i++) {
        pf[i] = (struct pollfd){ connect_egd(i % 2), POLLOUT, 0 };
        fcntl(pf[i].fd, F_SETFL, O_NONBLOCK);
    }
    /* Until no client could send for a second: each is stalled on the daemon. */
    while (poll(pf, CLIENTS, 1000) > 0) {
        for (int i = 0; i < CLIENTS; i++) {
            ssize_t n;

            while (pf[i].revents && (n = send(pf[i].fd, commands, sizeof(commands),
                                              MSG_NOSIGNAL)) > 0)
                ck_assert_msg((sent[i] += (size_t)n) < cap, "the daemon took %zu MiB of "
                              "commands from a client that reads nothing", sent[i] >> 20);
            ck_assert_msg(!pf[i].revents || errno == EAGAIN, "client %d: %s", i, strerror(errno));
        }
    }
    check_rss_growth(before, "20 EGD clients that stopped reading");
    fd = connect_egd(false);                             /* others are still served */
    ck_assert_int_eq(send(fd, "\x02\x10", 2, 0), 2);
    read_exact(fd, buf, 16);
    close(fd);
    check_still_usable(connect_raw(), "a v1 client beside EGD clients that stopped reading");
    for (int i = 0; i < CLIENTS; i++)
        close(pf[i].fd);
}
END_TEST

/* Under systemd the EGD sockets come from randd-egd.socket as FileDescriptorName=egd. */
START_TEST(egd_sockets_come_through_socket_activation_by_name)
{
    char listen_tcp[64], *argv[] = { "/usr/bin/systemd-socket-activate", "-l", sock, "-l",
                                     listen_tcp, "--fdname=randd:egd", randd_path(),
                                     "--config", conf, NULL };
    uint8_t buf[16];
    int fd;

    if (access(argv[0], X_OK) != 0) {
        fprintf(stderr, "SKIP egd_sockets_come_...: no systemd-socket-activate\n");
        return;
    }
    egd_port = free_tcp_port();
    snprintf(listen_tcp, sizeof(listen_tcp), "127.0.0.1:%d", egd_port);
    write_config("");                           /* no egd_* keys: only what systemd passed */
    daemon_pid = spawn(argv, NULL);
    wait_listening(sock);
    fd = connect_egd(true);
    ck_assert_int_eq(send(fd, "\x02\x10", 2, 0), 2);
    read_exact(fd, buf, 16);
    close(fd);
}
END_TEST

/* Debian's ekeyd-egd-linux, a client no one here wrote, draws from the TCP listener. It
 * waits for POLLOUT on /dev/random, which kernels since 5.18 give only before they are
 * initialised; so it runs in a private mount namespace where /dev/random is /dev/urandom
 * (always writable, and it takes RNDADDENTROPY), as an early-boot kernel would look. */
START_TEST(ekeyd_egd_linux_draws_from_randd)
{
    char cmd[256], st[300];
    uint8_t body[64];
    const char *served;
    pid_t ekeyd;
    int fd, status;

    if (access("/usr/sbin/ekeyd-egd-linux", X_OK) != 0 || geteuid() != 0 ||
        system("unshare -m true 2>/dev/null") != 0) {
        fprintf(stderr, "SKIP ekeyd_egd_linux_draws_from_randd: needs ekeyd-egd-linux, root "
                        "and mount namespaces\n");
        return;
    }
    start_egd_daemon("");
    snprintf(cmd, sizeof(cmd), "mount --bind /dev/urandom /dev/random && "
             "exec /usr/sbin/ekeyd-egd-linux -H 127.0.0.1 -p %d >/dev/null 2>&1", egd_port);
    ekeyd = fork();
    ck_assert_int_ge(ekeyd, 0);
    if (ekeyd == 0) {
        execlp("unshare", "unshare", "-m", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (double end = seconds_now() + WAIT_SECONDS;; usleep(50000)) {
        egd_status(st, sizeof(st));
        served = strstr(st, "\"bytes_served\":");
        if (served && atol(served + 15) >= 1024)
            break;
        ck_assert_msg(waitpid(ekeyd, &status, WNOHANG) == 0,
                      "ekeyd-egd-linux exited (status 0x%x) having drawn too little: %s", status, st);
        ck_assert_msg(seconds_now() < end, "ekeyd drew too little in %d s: %s", WAIT_SECONDS, st);
    }
    kill(ekeyd, SIGTERM);
    waitpid(ekeyd, &status, 0);
    fd = connect_raw();                            /* and randd still serves */
    send_bytes(fd, 32);
    ck_assert_int_eq(read_reply(fd, body, sizeof(body), NULL), RANDD_OK);
    close(fd);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("EGD");
    TCase *tc = tcase_create("randd over its socket");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);          /* above the waits' WAIT_SECONDS */
    tcase_add_test(tc, egd_and_protocol_clients_share_max_clients);
    tcase_add_test(tc, egd_running_out_of_descriptors_pauses_accept_without_spinning);
    tcase_add_test(tc, egd_trusts_the_trusted_group_as_a_supplementary_group);
    tcase_add_test(tc, egd_commands_work_over_unix_and_tcp);
    tcase_add_test(tc, egd_unknown_command_closes_and_is_counted);
    tcase_add_test(tc, egd_unknown_command_closes_with_eof_even_with_bytes_unread);
    tcase_add_test(tc, egd_before_seeding_reports_nothing_and_blocking_reads_wait);
    tcase_add_test(tc, ekeyd_egd_linux_draws_from_randd);
    tcase_add_test(tc, egd_sockets_come_through_socket_activation_by_name);
    tcase_add_test(tc, egd_clients_idle_longer_than_idle_timeout_are_still_served);
    tcase_add_test(tc, egd_idle_timeout_set_by_a_reload_closes_idle_egd_clients);
    tcase_add_test(tc, egd_a_client_trickling_a_command_is_closed_after_egd_idle_timeout);
    tcase_add_test(tc, egd_clients_that_stop_reading_hold_bounded_memory);
    suite_add_tcase(s, tc);
    return s;
}
