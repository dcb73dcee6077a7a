/* What one client, or one uid, may hold of randd, end to end: many clients at once, a
 * reader that stops, PRIME's share per uid, max_clients and each uid's share of it (with
 * one and two serving loops), eviction for a second uid, idle and trickling clients, stalled
 * replies' memory, running out of descriptors, and clients leaving mid-request. The shell
 * side of fairness (fair-hog against EGD and TCP): test_fairness.sh. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h"
#include "harness.h"
#include "protocol.h"
#include "randd.h"

START_TEST(two_hundred_concurrent_clients_are_served)
{
    enum { CLIENTS = 200 };
    int fds[CLIENTS];
    uint8_t body[64];

    start_daemon_with("", NULL);
    for (int i = 0; i < CLIENTS; i++)
        fds[i] = connect_raw();
    for (int i = 0; i < CLIENTS; i++)
        send_bytes(fds[i], 32);
    for (int i = 0; i < CLIENTS; i++) {
        ck_assert_int_eq(read_reply(fds[i], body, sizeof(body), NULL), RANDD_OK);
        close(fds[i]);
    }
}
END_TEST

/* A client that asks for 16 MiB and never reads holds one buffer; others are served. */
START_TEST(a_reader_that_stops_does_not_delay_others)
{
    uint8_t body[64];
    int stalled, fast;

    start_daemon_with("", NULL);
    stalled = connect_raw();
    send_bytes(stalled, RANDD_MAX_BYTES);
    free(wait_count("\"bytes\":", 1, "the stalled client's request to be taken"));
    fast = connect_raw();
    /* Liveness, not speed: a blocked server would not answer at all (read_reply fails). */
    for (int i = 0; i < 50; i++) {
        send_bytes(fast, 32);
        ck_assert_int_eq(read_reply(fast, body, sizeof(body), NULL), RANDD_OK);
    }
    close(fast);
    close(stalled);
}
END_TEST

/* Waits (up to a generous deadline) for one of fds[0..n) still open (>= 0) to become
 * readable; returns its index. */
static int wait_readable(const int *fds, int n, const char *awaited)
{
    struct pollfd pf[16];

    ck_assert_int_le(n, 16);
    for (int i = 0; i < n; i++)
        pf[i] = (struct pollfd){ fds[i], POLLIN, 0 };
    ck_assert_msg(poll(pf, (nfds_t)n, 120000) > 0, "no reply within 120 s: %s", awaited);
    for (int i = 0; i < n; i++)
        if (pf[i].revents)
            return i;
    return -1;
}

/* Until STATUS counts n PRIME requests read: the daemon has queued (or refused) them. */
static void wait_prime_requests_read(unsigned long n)
{
    free(wait_count("\"prime\":", n, "PRIME requests to be read"));
}

enum { MINE = RANDD_PRIME_PER_UID + 2 };    /* uid 0's PRIME requests: 2 beyond its share */

/* Sends MINE PRIME requests from uid 0, each on its own connection. The first, for 4096 bits,
 * the worker starts at once; it outlasts this test's round trips by far (its final 128
 * Miller-Rabin rounds alone take over a second), and the test ends it by closing fds[0]. Of
 * the 2048-bit ones after it, those beyond the uid's share must be answered BUSY at once: they
 * are closed and set to -1; the others wait in the queue. */
static void fill_uid0_prime_share(int fds[MINE])
{
    int busy = 0, i;

    fds[0] = connect_raw();
    send_prime(fds[0], 4096);
    wait_prime_requests_read(1);
    for (i = 1; i < MINE; i++) {
        fds[i] = connect_raw();
        send_prime(fds[i], 2048);
    }
    while (busy < MINE - RANDD_PRIME_PER_UID) {
        uint8_t body[600];
        int status;

        i = wait_readable(fds, MINE, "BUSY for uid 0's PRIME requests beyond its share");
        status = read_reply(fds[i], body, sizeof(body), NULL);
        ck_assert_msg(status == RANDD_BUSY, "PRIME request %d of %d from uid 0: status %s "
                      "after %d BUSY, wanted BUSY for %d beyond its share of %d", i + 1, MINE,
                      randd_status_name(status), busy, MINE - RANDD_PRIME_PER_UID,
                      RANDD_PRIME_PER_UID);
        busy++;
        close(fds[i]);
        fds[i] = -1;                         /* poll skips it */
    }
}

static void close_all(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* One uid cannot take the PRIME worker: beyond RANDD_PRIME_PER_UID, its requests (over as
 * many connections as it likes) are answered BUSY at once, and another uid's request is
 * served next, before the first uid's queued ones. */
START_TEST(prime_requests_beyond_a_uids_share_are_busy_and_other_uids_go_first)
{
    int fds[MINE + 1], answered = 0, theirs, i;
    uint8_t body[600];
    randd_handle *h;
    uint32_t len;
    char *json;

    if (geteuid() != 0) {
        fprintf(stderr, "SKIP prime_requests_beyond_a_uids_share...: needs root to act as "
                        "another uid\n");
        return;
    }
    start_daemon_with("", NULL);
    theirs = connect_as_nobody();
    fill_uid0_prime_share(fds);
    send_prime(theirs, 64);
    wait_prime_requests_read(MINE + 1);
    /* uid 0's running search ends (its client leaves), and uid 65534's request, queued after
     * uid 0's three, goes before them. The 4096-bit search may by luck have found its prime
     * before uid 65534's request was queued; the worker then already runs one of uid 0's, which
     * may come first. So at most one of uid 0's is answered first: a first-come-first-served
     * worker answers all three first. */
    close(fds[0]);
    fds[0] = -1;
    fds[MINE] = theirs;
    for (;;) {
        struct pollfd pf = { theirs, POLLIN, 0 };

        i = wait_readable(fds, MINE + 1, "uid 65534's PRIME 64");
        if (i == MINE || poll(&pf, 1, 0) == 1)
            break;                           /* theirs first if both are in */
        ck_assert_int_eq(read_reply(fds[i], body, sizeof(body), &len), RANDD_OK);
        answered++;
        close(fds[i]);
        fds[i] = -1;
    }
    ck_assert_int_eq(read_reply(theirs, body, sizeof(body), &len), RANDD_OK);
    ck_assert_msg(len == 8 && body[0] & 0x80 && body[7] & 1, "PRIME 64 for uid 65534: "
                  "%u bytes, not a 64-bit prime", len);
    ck_assert_msg(answered <= 1, "uid 65534's PRIME was answered after %d of uid 0's %d "
                  "queued searches, wanted before them (or after the one running)", answered,
                  RANDD_PRIME_PER_UID - 1);

    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_gt(randd_status(h, &json), 0);
    ck_assert_msg(strstr(json, "\"BUSY\":2,"), "STATUS does not count 2 BUSY replies: %s",
                  strstr(json, "\"replies\""));
    free(json);
    randd_close(h);
    close_all(fds, MINE + 1);
}
END_TEST

/* randctl, from a uid whose PRIME share is taken: BUSY is exit 6 and a message that says so. */
START_TEST(randctl_prime_over_the_share_exits_6_saying_busy)
{
    const char *randctl = getenv("RANDCTL") && *getenv("RANDCTL") ? getenv("RANDCTL")
                                                                   : "build/randctl";
    char err_path[128], err[256] = "";
    int fds[MINE], status;
    pid_t child;
    FILE *f;

    start_daemon_with("", NULL);
    fill_uid0_prime_share(fds);
    snprintf(err_path, sizeof(err_path), "%s/randctl.err", dir);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int out = open("/dev/null", O_WRONLY), e = open(err_path, O_WRONLY | O_CREAT, 0600);

        dup2(out, 1);
        dup2(e, 2);
        execl(randctl, "randctl", "--socket", sock, "prime", "16", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    f = fopen(err_path, "r");
    ck_assert_ptr_nonnull(f);
    (void)!fgets(err, sizeof(err), f);
    fclose(f);
    err[strcspn(err, "\n")] = '\0';
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 6 && strstr(err, "busy"),
                  "randctl prime 16 with uid 0's share taken: status 0x%x, said \"%s\"; "
                  "wanted exit 6 and busy", status, err);
    close_all(fds, MINE);
}
END_TEST

START_TEST(idle_clients_are_closed_after_idle_timeout)
{
    struct pollfd pf = { .events = POLLIN };
    uint8_t byte;
    int idle, busy;
    double end;

    start_daemon_with("idle_timeout = 2\n", NULL);
    idle = connect_raw();
    busy = connect_raw();
    pf.fd = idle;
    /* A request every 250 ms (pacing) keeps busy well inside idle_timeout, until the daemon
     * closes the idle one. */
    for (end = seconds_now() + WAIT_SECONDS; poll(&pf, 1, 250) == 0;) {
        ck_assert_msg(seconds_now() < end, "idle client not closed within %d s", WAIT_SECONDS);
        check_still_usable(busy, "a client making progress");
    }
    ck_assert_msg(recv(idle, &byte, 1, 0) == 0, "the idle client got data, not end-of-file");
    check_still_usable(busy, "a client making progress, after the idle one was closed");
    close(idle);
    close(busy);
}
END_TEST

START_TEST(clients_over_max_clients_are_told_busy)
{
    uint8_t body[64];
    int a, b, c;

    start_daemon_with("max_clients = 2\nmax_clients_per_uid = 2\n", NULL);
    a = connect_when_room();                         /* once STATUS's client is seen gone */
    b = connect_when_room();
    c = connect_raw();
    check_status(c, RANDD_BUSY, "third client with max_clients = 2");
    ck_assert_int_le(recv(c, body, 1, 0), 0);
    close(a);
    check_still_usable(b, "the second client");
    close(b);
    close(c);
}
END_TEST

/* A connection turned away is closed, often before the client sends its first request, whose
 * send then fails (EPIPE): librandd reads the BUSY waiting for it all the same, and its
 * reason. Made certain here by waiting for the close before the call. */
static void check_librandd_reads_busy_though_closed_first(void)
{
    struct pollfd pf = { connect_as_nobody(), POLLRDHUP, 0 };
    uint8_t out[8];
    randd_handle *h;
    int rc;

    ck_assert_msg(poll(&pf, 1, WAIT_SECONDS * 1000) == 1, "a connection over the uid's share "
                  "was not closed within %d s", WAIT_SECONDS);
    ck_assert_int_eq(randd_handle_from_fd(&h, pf.fd), 0);
    rc = randd_bytes(h, out, sizeof(out));
    ck_assert_msg(rc == RANDD_ERR(RANDD_BUSY) && strstr(randd_message(h), "fair share"),
                  "librandd on a connection turned away and closed: %s (\"%s\"), wanted BUSY "
                  "naming the fair share", randd_strerror(rc), randd_message(h));
    randd_close(h);
}

/* The attack of issue 26 (4): one uid opens every place it can and keeps them. Alone, it
 * gets every place not kept for root (max-min fairness, issue 42: free places go to whoever
 * asks) and BUSY for the rest, naming its fair share, and root is served while those
 * connections are all still open. config_text sets workers. */
static void check_a_uids_share_leaves_room_for_root(const char *config_text)
{
    enum { MAX = 8, ROOTS = 1, SHARE = MAX - ROOTS };
    int held[MAX], nheld = 0, busy = 0;
    char text[128], *json;
    uint8_t out[64], request[RANDD_HEADER_BYTES + 4];
    size_t n = randd_request_encode(request, sizeof(request),
                                    &(struct randd_request){ .op = RANDD_OP_BYTES, .n = 8 });
    randd_handle *root;

    snprintf(text, sizeof(text), "%smax_clients = %d\n", config_text, MAX);
    start_daemon_with(text, NULL);
    for (int i = 0; i < MAX; i++) {
        char msg[160] = "";
        int fd = connect_as_nobody(), status;

        /* Turned away, the daemon may have closed before the request is sent (EPIPE); its
         * BUSY is there to read all the same. */
        (void)!send(fd, request, n, MSG_NOSIGNAL);
        status = read_reply(fd, msg, sizeof(msg) - 1, NULL);
        if (status == RANDD_OK) {
            held[nheld++] = fd;
            continue;
        }
        ck_assert_msg(status == RANDD_BUSY, "nobody's connection %d: status %s (%s), wanted "
                      "OK or BUSY", i + 1, randd_status_name(status), msg);
        ck_assert_msg(strstr(msg, "uid 65534") && strstr(msg, "fair share"),
                      "BUSY over the uid's share does not say so: \"%s\"", msg);
        busy++;
        close(fd);
    }
    ck_assert_msg(nheld == SHARE && busy == MAX - SHARE, "nobody holds %d of max_clients = %d "
                  "(%d BUSY); wanted every place not kept for root, %d", nheld, MAX, busy,
                  SHARE);
    check_librandd_reads_busy_though_closed_first();
    busy++;

    /* Root, through librandd as any program, while every one of them is still open. */
    ck_assert_int_eq(randd_open(&root, sock), 0);
    ck_assert_msg(randd_bytes(root, out, sizeof(out)) == 0, "root was not served while uid "
                  "65534 held its share");
    ck_assert_int_gt(randd_status(root, &json), 0);
    ck_assert_msg(json_number(json, "\"over_uid_share\":") == (unsigned long long)busy &&
                  json_number(json, "\"per_uid\":") == SHARE, "STATUS does not count %d "
                  "turned away over a share of %d: %s", busy, SHARE, json);
    free(json);
    randd_close(root);
    for (int i = 0; i < nheld; i++) {
        check_still_usable(held[i], "a connection of nobody's share, after root was served");
        close(held[i]);
    }
}

START_TEST(a_uid_holding_its_share_of_connections_leaves_room_for_root)
{
    check_a_uids_share_leaves_room_for_root("");
}
END_TEST

/* Serving loops share the counts: the share holds over both. */
START_TEST(with_two_workers_a_uids_share_holds_across_loops)
{
    check_a_uids_share_leaves_room_for_root("workers = 2\n");
}
END_TEST

/* Connections from uid as many as tries, each asking BYTES: those served are kept in held
 * (*nheld grows), those turned away must be BUSY saying busy_says. Returns how many were. */
static int hold_as(uid_t uid, int tries, int *held, int *nheld, const char *busy_says)
{
    uint8_t request[RANDD_HEADER_BYTES + 4];
    size_t n = randd_request_encode(request, sizeof(request),
                                    &(struct randd_request){ .op = RANDD_OP_BYTES, .n = 8 });
    int busy = 0;

    for (int i = 0; i < tries; i++) {
        char msg[160] = "";
        int fd = connect_as(uid), status;

        (void)!send(fd, request, n, MSG_NOSIGNAL);       /* EPIPE once turned away */
        status = read_reply(fd, msg, sizeof(msg) - 1, NULL);
        if (status == RANDD_OK) {
            held[(*nheld)++] = fd;
            continue;
        }
        ck_assert_msg(status == RANDD_BUSY && strstr(msg, busy_says), "uid %u's connection "
                      "%d: %s (\"%s\"), wanted OK or BUSY saying \"%s\"", (unsigned)uid, i + 1,
                      randd_status_name(status), msg, busy_says);
        busy++;
        close(fd);
    }
    return busy;
}

/* Waits for want of nobody's connections in held to be evicted: each reads BUSY saying it
 * made room, then end-of-file. They are closed and dropped from held. */
static void drop_evicted(int *held, int *nheld, int want)
{
    int evicted = 0;

    for (double end = seconds_now() + WAIT_SECONDS; evicted < want; usleep(10000)) {
        for (int i = 0; i < *nheld; i++) {
            struct pollfd pf = { held[i], POLLIN, 0 };
            char msg[160] = "";
            int status;

            if (poll(&pf, 1, 0) != 1)
                continue;
            status = read_reply(held[i], msg, sizeof(msg) - 1, NULL);
            ck_assert_msg(status == RANDD_BUSY && strstr(msg, "make room"), "an evicted "
                          "connection read %s (\"%s\"), wanted BUSY saying it made room",
                          randd_status_name(status), msg);
            close(held[i]);
            held[i--] = held[--*nheld];
            evicted++;
        }
        ck_assert_msg(seconds_now() < end, "%d of nobody's connections evicted within %d s, "
                      "wanted %d", evicted, WAIT_SECONDS, want);
    }
}

/* Issue 42: one uid holds every place not kept for root; a second uid still gets its fair
 * share of them (7 over 2 uids: 3), each place one of the first uid's idle connections,
 * which reads BUSY saying why; past its share it is BUSY. Root's tools are still served. */
START_TEST(a_second_uid_gets_its_fair_share_from_one_holding_every_place)
{
    enum { MAX = 8, ROOTS = 1, FAIR = (MAX - ROOTS) / 2 };
    int held[MAX], nheld = 0, mine[MAX], nmine = 0, busy;
    uint8_t out[64];
    randd_handle *root;
    char *json;

    if (geteuid() != 0) {
        fprintf(stderr, "SKIP a_second_uid_gets_its_fair_share_from_one_holding_every_place: "
                        "needs root to act as two other uids\n");
        return;
    }
    start_daemon_with("max_clients = 8\n", NULL);
    busy = hold_as(65534, MAX, held, &nheld, "fair share");
    ck_assert_msg(nheld == MAX - ROOTS && busy == 1, "nobody holds %d (%d BUSY), wanted every "
                  "place not kept for root, %d", nheld, busy, MAX - ROOTS);
    busy += hold_as(100000, FAIR + 1, mine, &nmine, "fair share");
    ck_assert_msg(nmine == FAIR && busy == 2, "uid 100000 holds %d (%d BUSY in all): wanted "
                  "its fair share, %d", nmine, busy, FAIR);
    drop_evicted(held, &nheld, FAIR);
    ck_assert_int_eq(nheld, MAX - ROOTS - FAIR);

    ck_assert_int_eq(randd_open(&root, sock), 0);
    ck_assert_msg(randd_bytes(root, out, sizeof(out)) == 0, "root was not served while two "
                  "uids held every place they could: %s", randd_message(root));
    ck_assert_int_gt(randd_status(root, &json), 0);
    ck_assert_msg(json_number(json, "\"over_uid_share\":") == 2 &&
                  json_number(json, "\"evicted\":") == FAIR &&
                  json_number(json, "\"per_uid\":") == FAIR, "STATUS does not count 2 over "
                  "the share and %d evicted, with a share of %d: %s", FAIR, FAIR, json);
    free(json);
    randd_close(root);
    for (int i = 0; i < nheld; i++) {
        check_still_usable(held[i], "a connection nobody kept");
        close(held[i]);
    }
    for (int i = 0; i < nmine; i++) {
        check_still_usable(mine[i], "a connection of uid 100000");
        close(mine[i]);
    }
}
END_TEST

/* A byte now and then is not progress, only a whole request is: a peer that trickles one
 * four times inside idle_timeout is closed all the same, while one sending whole requests as
 * often is kept. */
START_TEST(a_client_trickling_a_request_is_closed_after_idle_timeout)
{
    uint8_t frame[RANDD_HEADER_BYTES + 1000] = { 0 }, byte;
    struct randd_header h = { RANDD_PROTOCOL_VERSION, RANDD_OP_ADD_ENTROPY, 0, 1000 };
    struct pollfd pf = { .events = POLLIN };
    int trickler, busy;
    size_t sent = 0;
    double start, end;

    start_daemon_with("idle_timeout = 1\n", NULL);
    randd_header_encode(frame, &h);
    trickler = connect_as_nobody();
    busy = connect_raw();
    pf.fd = trickler;
    start = seconds_now();
    /* A byte every 250 ms (pacing: four inside idle_timeout, as the attack needs) until the
     * daemon closes it; the whole frame would take over four minutes. */
    for (end = start + WAIT_SECONDS; poll(&pf, 1, 250) == 0; sent++) {
        ck_assert_msg(seconds_now() < end, "a client sending a byte every 250 ms was not "
                      "closed within %d s with idle_timeout = 1 (%zu bytes sent)",
                      WAIT_SECONDS, sent);
        ck_assert_int_lt(sent, sizeof(frame));
        ck_assert_int_eq(send(trickler, frame + sent, 1, MSG_NOSIGNAL), 1);
        check_still_usable(busy, "a client sending whole requests");
    }
    ck_assert_msg(recv(trickler, &byte, 1, 0) <= 0, "the trickling client got a reply, not "
                  "end-of-file");
    ck_assert_msg(seconds_now() - start >= 0.9, "closed after %.2f s, before idle_timeout = 1",
                  seconds_now() - start);
    check_still_usable(busy, "a client sending whole requests, after the trickler was closed");
    close(trickler);
    close(busy);
}
END_TEST

/* 50 clients each ask for 16 MiB and never read: replies are made as sockets drain, so
 * the daemon holds a 16 KiB chunk per client, not 800 MiB. */
START_TEST(stalled_large_replies_keep_memory_small)
{
    enum { CLIENTS = 50 };
    int fds[CLIENTS];
    long before;

    start_daemon_with("", NULL);
    before = daemon_rss_kib();
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = connect_raw();
        send_bytes(fds[i], RANDD_MAX_BYTES);
    }
    free(wait_count("\"bytes\":", 50, "all 50 stalled requests to be taken"));
    check_rss_growth(before, "50 stalled 16 MiB replies");
    check_still_usable(connect_raw(), "a new client while 50 replies are stalled");
    for (int i = 0; i < CLIENTS; i++)
        close(fds[i]);
}
END_TEST

/* Out of descriptors, accept() fails with EMFILE: the daemon must pause accepting rather
 * than spin on the level-triggered listener, and serve again once descriptors free up. */
START_TEST(running_out_of_descriptors_pauses_accept_without_spinning)
{
    enum { CLIENTS = 40 };
    int fds[CLIENTS];
    double cpu;

    /* valgrind (tests/valgrind-randd, which reads RANDD_REAL) keeps 12 descriptors below the
     * limit for itself: the daemon under it gets the same 24 as a plain one. */
    fd_limit = getenv("RANDD_REAL") ? 36 : 24;
    start_daemon_with("", NULL);
    fd_limit = 0;
    for (int i = 0; i < CLIENTS; i++)
        fds[i] = connect_raw();             /* the backlog takes what accept cannot */
    wait_log("pausing new connections");
    cpu = serving_cpu_seconds();
    sleep(1);                               /* the window CPU time is measured over */
    ck_assert_msg(serving_cpu_seconds() - cpu < 0.3,
                  "randd's loop used %.2f CPU seconds in 1 s at EMFILE: spinning",
                  serving_cpu_seconds() - cpu);
    for (int i = 0; i < CLIENTS; i++)
        close(fds[i]);
    fds[0] = connect_raw();                 /* served once the closes free descriptors */
    check_still_usable(fds[0], "a client after descriptors freed up");
    close(fds[0]);
}
END_TEST

/* Clients that hang up half-way through a header, half-way through a body, or a few KiB into
 * a 16 MiB reply (the daemon's next write fails with EPIPE): each costs nothing that stays.
 * The daemon's descriptors go back to the baseline and everyone else is still served. */
START_TEST(clients_leaving_mid_request_or_mid_reply_leave_nothing_behind)
{
    struct randd_request bytes = { .op = RANDD_OP_BYTES, .n = 32 };
    uint8_t frame[RANDD_HEADER_BYTES + 4], part[4096];
    int baseline, now, fd;

    start_daemon_with("", NULL);
    baseline = daemon_fd_count();
    ck_assert_int_eq(randd_request_encode(frame, sizeof(frame), &bytes), sizeof(frame));
    for (int i = 0; i < 20; i++) {
        fd = connect_raw();                          /* mid-header */
        ck_assert_int_eq(send(fd, frame, 3, 0), 3);
        close(fd);
        fd = connect_raw();                          /* mid-body */
        ck_assert_int_eq(send(fd, frame, RANDD_HEADER_BYTES + 2, 0), RANDD_HEADER_BYTES + 2);
        close(fd);
        fd = connect_raw();                          /* mid-reply */
        send_bytes(fd, RANDD_MAX_BYTES);
        read_exact(fd, part, sizeof(part));
        close(fd);
    }
    now = daemon_fd_count();
    ck_assert_msg(now == baseline, "randd holds %d descriptors, %d before the quitters", now,
                  baseline);
    fd = connect_raw();
    check_still_usable(fd, "a client after 60 that hung up early");
    close(fd);
    ck_assert_int_eq(kill(daemon_pid, 0), 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("limits and uid shares");
    TCase *tc = tcase_create("randd over its socket");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);          /* above the waits' WAIT_SECONDS */
    tcase_add_test(tc, prime_requests_beyond_a_uids_share_are_busy_and_other_uids_go_first);
    tcase_add_test(tc, randctl_prime_over_the_share_exits_6_saying_busy);
    tcase_add_test(tc, two_hundred_concurrent_clients_are_served);
    tcase_add_test(tc, a_reader_that_stops_does_not_delay_others);
    tcase_add_test(tc, clients_over_max_clients_are_told_busy);
    tcase_add_test(tc, a_uid_holding_its_share_of_connections_leaves_room_for_root);
    tcase_add_test(tc, with_two_workers_a_uids_share_holds_across_loops);
    tcase_add_test(tc, a_second_uid_gets_its_fair_share_from_one_holding_every_place);
    tcase_add_test(tc, a_client_trickling_a_request_is_closed_after_idle_timeout);
    tcase_add_test(tc, idle_clients_are_closed_after_idle_timeout);
    tcase_add_test(tc, running_out_of_descriptors_pauses_accept_without_spinning);
    tcase_add_test(tc, stalled_large_replies_keep_memory_small);
    tcase_add_test(tc, clients_leaving_mid_request_or_mid_reply_leave_nothing_behind);
    suite_add_tcase(s, tc);
    return s;
}
