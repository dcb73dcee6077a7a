/* workers = 2, end to end: two serving loops, each taking clients (even one slow to start),
 * STATUS's totals the sums of the loops' figures, max_clients held across both, idle clients
 * closed on each, a reload reaching both. Each uid's share across loops: test_limits.c. The
 * whole suite runs against several loops with RANDD_TEST_WORKERS=N. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "protocol.h"
#include "randd.h"

/* key's value in the i-th object of STATUS's "workers" array (one per serving loop); fails
 * when there is no such loop. */
static unsigned long long loop_figure(const char *json, int i, const char *key)
{
    const char *array = strstr(json, "\"workers\":["), *at = array;

    ck_assert_msg(array, "STATUS has no workers array: %s", json);
    for (int n = 0; n <= i; n++) {
        at = strchr(at + 1, '{');
        ck_assert_msg(at && at < strchr(array, ']'), "STATUS lists fewer than %d serving "
                      "loops: %s", i + 1, json);
    }
    return json_number(at, key);
}

/* STATUS, once the daemon has seen clients go and a new one is not BUSY. */
static char *status_once_there_is_room(void)
{
    for (double end = seconds_now() + WAIT_SECONDS;; usleep(20000)) {
        randd_handle *h;
        char *json = NULL;
        int rc;

        ck_assert_int_eq(randd_open(&h, sock), 0);
        rc = randd_status(h, &json);
        randd_close(h);
        if (rc > 0)
            return json;
        /* Turned away: BUSY, or the close that follows it, if that came first. */
        ck_assert_msg((rc == RANDD_ERR(RANDD_BUSY) || rc == -EPIPE || rc == -ECONNRESET) &&
                      seconds_now() < end, "STATUS: %s, after %d s waiting for room under "
                      "max_clients", randd_strerror(rc), WAIT_SECONDS);
    }
}

/* BYTES served by each of the two loops so far: only test clients ask for bytes. */
static void bytes_by_loop(unsigned long long out[2])
{
    char *json = status_now();

    for (int i = 0; i < 2; i++)
        out[i] = loop_figure(json, i, "\"bytes_served\":");
    free(json);
}

#define SPREAD_MAX 200

static unsigned long long spread_bytes_asked;  /* by connect_on_both_loops' clients, closed too */

/* Connects clients one after the other, as most clients come, each with a BYTES round trip,
 * until min of them are open and both loops hold one. A loop that is busy, or not scheduled
 * on a loaded machine (or under qemu-user), is passed over by accepts for a while: so this
 * waits for the state, by time (WAIT_SECONDS), not by a count of clients, which a fast
 * machine goes through in a moment. Each client's loop is told by which loop's bytes grew;
 * one that would leave min - 1 or more on the same loop as all the others is closed again.
 * Returns how many (at most min); their descriptors stay open in fds[SPREAD_MAX]. */
static int connect_on_both_loops_within(int *fds, int min, int seconds)
{
    unsigned long long was[2], now[2];
    double end = seconds_now() + seconds;
    int n = 0, tried = 0, on[2] = { 0, 0 };

    spread_bytes_asked = 0;
    bytes_by_loop(was);
    while (n < min || !on[0] || !on[1]) {
        int fd = connect_raw(), loop;

        check_still_usable(fd, "a new client");
        spread_bytes_asked += 8;
        tried++;
        bytes_by_loop(now);
        ck_assert_msg(now[0] - was[0] + now[1] - was[1] == 8, "a client's 8 bytes, served by "
                      "the loops as %llu and %llu", now[0] - was[0], now[1] - was[1]);
        loop = now[1] != was[1];
        memcpy(was, now, sizeof(was));
        if (n >= min - 1 && on[loop] && !on[!loop]) {
            close(fd);
            ck_assert_msg(seconds_now() < end, "%d clients in %d s, and loop %d served none of "
                          "them", tried, seconds, !loop);
            continue;
        }
        fds[n++] = fd;
        on[loop]++;
    }
    return n;
}

static int connect_on_both_loops(int *fds, int min)
{
    return connect_on_both_loops_within(fds, min, WAIT_SECONDS);
}

static void close_all_of(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

static int expected_connected;             /* for connected_as_expected */

static bool connected_as_expected(const char *json)
{
    return json_number(json, "\"connected\":") == (unsigned long long)expected_connected;
}

/* Clients on both loops; STATUS's totals are the sums of the loops' figures and of what the
 * clients asked. */
START_TEST(with_two_workers_both_loops_serve_and_status_adds_up)
{
    int fds[SPREAD_MAX], n;
    uint8_t body[256];
    uint32_t len;
    unsigned long long asked, ops = 0, loops_requests = 0, loops_bytes = 0;
    unsigned long long loops_connected = 0;
    char *json, key[64];

    start_daemon_with("workers = 2\n", NULL);
    n = connect_on_both_loops(fds, 20);
    asked = spread_bytes_asked;
    for (int i = 0; i < n; i++) {
        send_bytes(fds[i], 100 + (uint32_t)i);
        ck_assert_int_eq(read_reply(fds[i], body, sizeof(body), &len), RANDD_OK);
        ck_assert_uint_eq(len, 100 + (uint32_t)i);
        asked += len;
    }
    expected_connected = n + 1;                  /* and the STATUS client */
    json = wait_status(connected_as_expected, "the clients and STATUS's, connected");
    for (int i = 0; i < 2; i++) {
        loops_requests += loop_figure(json, i, "\"requests\":");
        loops_bytes += loop_figure(json, i, "\"bytes_served\":");
        loops_connected += loop_figure(json, i, "\"connected\":");
    }
    for (int op = 0; op <= RANDD_OP_LAST; op++) {
        snprintf(key, sizeof(key), "\"%s\":", randd_op_name(op));
        ops += json_number(strstr(json, "\"requests\":{"), key);
    }
    ck_assert_msg(loops_requests == ops, "loops' requests %llu, STATUS's total %llu: %s",
                  loops_requests, ops, json);
    ck_assert_uint_eq(json_number(json, "\"bytes_served\":"), asked);
    ck_assert_uint_eq(loops_bytes, asked);
    ck_assert_uint_eq(loops_connected, (unsigned)n + 1);
    ck_assert_msg(strstr(json, "\"workers\":\"2\""), "config in effect lacks workers: %s",
                  json);
    free(json);
    close_all_of(fds, n);
}
END_TEST

/* max_clients set (by a reload) to what both loops hold together: neither holds it alone,
 * yet one client more is BUSY, and room made on either loop lets one in again. */
START_TEST(with_two_workers_max_clients_holds_across_loops)
{
    int fds[SPREAD_MAX], n, extra;
    char text[128];
    uint8_t byte;

    start_daemon_with("workers = 2\n", NULL);
    n = connect_on_both_loops(fds, 4);
    expected_connected = n + 1;                  /* and the STATUS client */
    free(wait_status(connected_as_expected, "only the clients and STATUS's connected"));
    snprintf(text, sizeof(text), "workers = 2\nmax_clients = %d\nmax_clients_per_uid = %d\n",
             n + 1, n + 1);
    write_config(text);
    kill(daemon_pid, SIGHUP);
    wait_log("reload: ");
    extra = connect_when_room();                 /* the (n + 1)th: within the limit */
    fds[n] = connect_raw();
    check_status(fds[n], RANDD_BUSY, "one client past max_clients over two loops");
    ck_assert_int_le(recv(fds[n], &byte, 1, 0), 0);
    close(fds[n]);
    close(extra);
    free(status_once_there_is_room());
    close_all_of(fds, n);
}
END_TEST

/* Waits until every fd reads end-of-file (closed by the daemon), failing with what. */
static void wait_all_closed(const int *fds, int n, const char *what)
{
    uint8_t byte;

    for (int i = 0; i < n; i++) {
        struct pollfd pf = { fds[i], POLLIN, 0 };

        ck_assert_msg(poll(&pf, 1, WAIT_SECONDS * 1000) == 1, "%s: client %d not closed "
                      "within %d s", what, i, WAIT_SECONDS);
        ck_assert_msg(recv(fds[i], &byte, 1, 0) == 0, "%s: client %d got data, not "
                      "end-of-file", what, i);
    }
}

/* Idle clients on both loops are closed: each loop sweeps its own, and the counts agree. */
START_TEST(with_two_workers_idle_clients_on_every_loop_are_closed)
{
    int fds[SPREAD_MAX], n;
    char *json;

    start_daemon_with("workers = 2\nidle_timeout = 1\n", NULL);
    n = connect_on_both_loops(fds, 4);
    wait_all_closed(fds, n, "idle_timeout = 1 with two loops");
    expected_connected = 1;                      /* STATUS's own */
    json = wait_status(connected_as_expected, "the loops' counts to drop");
    ck_assert_uint_eq(loop_figure(json, 0, "\"connected\":") +
                      loop_figure(json, 1, "\"connected\":"), 1);
    free(json);
    close_all_of(fds, n);
}
END_TEST

/* A reload reaches every loop: idle_timeout set by SIGHUP closes idle clients on both. */
START_TEST(with_two_workers_a_reload_reaches_every_loop)
{
    int fds[SPREAD_MAX], n;

    start_daemon_with("workers = 2\nidle_timeout = 0\n", NULL);
    n = connect_on_both_loops(fds, 4);
    write_config("workers = 2\nidle_timeout = 1\n");
    kill(daemon_pid, SIGHUP);
    wait_log("reload: ");
    wait_all_closed(fds, n, "idle_timeout = 1 by a reload, two loops");
    close_all_of(fds, n);
}
END_TEST

/* A serving loop whose thread is slow to start (as on a loaded machine, or under qemu-user,
 * where one once came so late that the other took all 200 clients) gets clients all the
 * same: no loop serves before every loop waits on the socket. libfault holds the first
 * loop's thread back 8 s: without the start gate the other loop answers STATUS and takes
 * every client meanwhile; with it, both serve once STATUS is answered, well within 5 s. */
START_TEST(with_two_workers_a_loop_slow_to_start_still_gets_clients)
{
    const char *libfault = getenv("LIBFAULT");
    char preload[PATH_MAX];
    int fds[SPREAD_MAX], n;

    if (getenv("RANDD_SANITIZED") || !libfault || !realpath(libfault, preload) ||
        strcmp(strrchr(randd_path(), '/') ? strrchr(randd_path(), '/') + 1 : randd_path(),
               "randd")) {
        printf("SKIP with_two_workers_a_loop_slow_to_start_still_gets_clients: needs "
               "$LIBFAULT preloaded into a plain build of randd\n");
        return;
    }
    setenv("RANDD_FAULTS", "loop=late", 1);
    setenv("LD_PRELOAD", preload, 1);
    start_daemon_with("workers = 2\n", NULL);
    unsetenv("LD_PRELOAD");
    unsetenv("RANDD_FAULTS");
    n = connect_on_both_loops_within(fds, 4, 5);
    close_all_of(fds, n);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("two serving loops");
    TCase *tc = tcase_create("randd over its socket");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);          /* above the waits' WAIT_SECONDS */
    tcase_add_test(tc, with_two_workers_both_loops_serve_and_status_adds_up);
    tcase_add_test(tc, with_two_workers_max_clients_holds_across_loops);
    tcase_add_test(tc, with_two_workers_idle_clients_on_every_loop_are_closed);
    tcase_add_test(tc, with_two_workers_a_reload_reaches_every_loop);
    tcase_add_test(tc, with_two_workers_a_loop_slow_to_start_still_gets_clients);
    suite_add_tcase(s, tc);
    return s;
}
