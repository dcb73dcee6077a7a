/* librandd (lib/client.c) over a socketpair, the test playing the daemon: replies no randd
 * would send each get a negative code, never a crash, a lie or a huge allocation (both cases
 * found by tests/fuzz/fuzz_reply.c); a call with bad arguments sends nothing, so the handle's
 * next call still gets its own reply; and a descriptor the program took back is left alone. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client_internal.h"
#include "protocol.h"
#include "runner.h"

/* Runs randd_status against a "daemon" that answers with reply and then closes. */
static int status_with_reply(const void *reply, size_t len, char **json)
{
    randd_handle *h;
    int sv[2], rc;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(write(sv[1], reply, len), (ssize_t)len);
    shutdown(sv[1], SHUT_WR);
    ck_assert_int_eq(randd_handle_from_fd(&h, sv[0]), 0);
    rc = randd_status(h, json);
    randd_close(h);
    close(sv[1]);
    return rc;
}

START_TEST(status_text_with_a_nul_byte_is_a_protocol_error)
{
    static const char reply[] = "\x01\x00\x00\x00\x00\x00\x00\x05{\0\"}";
    char *json = NULL;

    ck_assert_int_eq(status_with_reply(reply, 13, &json), -EPROTO);
    ck_assert_ptr_null(json);
}
END_TEST

START_TEST(status_reply_claiming_gigabytes_is_refused_before_allocating)
{
    static const char reply[] = "\x01\x00\x00\x00\x80\x00\x00\x0a{}";
    char *json = NULL;

    ck_assert_int_eq(status_with_reply(reply, 10, &json), -EPROTO);
    ck_assert_ptr_null(json);
}
END_TEST

START_TEST(a_well_formed_status_reply_is_returned_whole)
{
    static const char reply[] = "\x01\x00\x00\x00\x00\x00\x00\x0b{\"ready\":1}";
    char *json = NULL;

    ck_assert_int_eq(status_with_reply(reply, 19, &json), 11);
    ck_assert_str_eq(json, "{\"ready\":1}");
    free(json);
}
END_TEST

/* --- arguments checked before anything is sent ----------------------------------------- */

/* A handle whose "daemon" has already written reply: the answer to the one valid call the
 * test makes after the refused ones. A refused call that sent a request anyway would take
 * this reply as its own, and the valid call would find the connection out of step. */
static randd_handle *handle_with_reply(const void *reply, size_t len, int *peer)
{
    randd_handle *h;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(write(sv[1], reply, len), (ssize_t)len);
    ck_assert_int_eq(randd_handle_from_fd(&h, sv[0]), 0);
    randd_set_timeout(h, 10000);            /* a failure, should one hang, not a stuck test */
    *peer = sv[1];
    return h;
}

static void check_refused_unsent(int rc, int peer, const char *call)
{
    uint8_t byte;

    ck_assert_msg(rc == -EINVAL, "%s: returned %d (%s), wanted -EINVAL", call, rc,
                  randd_strerror(rc));
    ck_assert_msg(recv(peer, &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN,
                  "%s: refused, yet sent bytes to the daemon", call);
}

/* The request the valid call sent: its op, and a body that starts with want. */
static void check_request(int peer, uint8_t op, const uint8_t *want, size_t want_len)
{
    uint8_t got[RANDD_HEADER_BYTES + 16];
    ssize_t n = recv(peer, got, sizeof(got), MSG_DONTWAIT);

    ck_assert_msg(n >= (ssize_t)(RANDD_HEADER_BYTES + want_len),
                  "op %u: the daemon received %zd bytes", op, n);
    ck_assert_msg(got[1] == op, "the daemon received op %u, wanted %u", got[1], op);
    ck_assert_msg(!memcmp(got + RANDD_HEADER_BYTES, want, want_len),
                  "op %u: the request's body is not what the call asked for", op);
}

START_TEST(bytes_into_null_sends_nothing_and_the_next_call_is_served)
{
    static const uint8_t reply[] = "\x01\x00\x00\x00\x00\x00\x00\x10"
                                   "0123456789abcdef";
    uint8_t buf[16];
    int peer;
    randd_handle *h = handle_with_reply(reply, 24, &peer);

    check_refused_unsent(randd_bytes(h, NULL, 16), peer, "randd_bytes(h, NULL, 16)");
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);
    ck_assert_msg(!memcmp(buf, "0123456789abcdef", 16), "randd_bytes: not the daemon's bytes");
    check_request(peer, RANDD_OP_BYTES, (const uint8_t *)"\0\0\0\x10", 4);
    randd_close(h);
    close(peer);
}
END_TEST

START_TEST(range_with_bad_arguments_sends_nothing_and_the_next_call_is_served)
{
    static const uint8_t reply[] = "\x01\x00\x00\x00\x00\x00\x00\x02\x03\x05";
    static const uint8_t r[1] = { 6 }, zero[2] = { 0, 0 };
    uint8_t out[2];
    int peer;
    randd_handle *h = handle_with_reply(reply, 10, &peer);

    check_refused_unsent(randd_range(h, NULL, 1, out, 2), peer, "randd_range: r NULL");
    check_refused_unsent(randd_range(h, r, 1, NULL, 2), peer, "randd_range: out NULL");
    /* r = 0: the daemon would answer each of the four pipelined requests with an error, and
     * the call would read only the first. */
    check_refused_unsent(randd_range(h, zero, 2, out, 200000), peer, "randd_range: r = 0");
    check_refused_unsent(randd_range(h, r, 2, out, SIZE_MAX / 2 + 1), peer,
                         "randd_range: count * len beyond SIZE_MAX");
    ck_assert_int_eq(randd_range(h, r, 1, out, 2), 0);
    ck_assert_msg(out[0] == 3 && out[1] == 5, "randd_range: not the daemon's values");
    check_request(peer, RANDD_OP_RANGE, (const uint8_t *)"\0\x02\0\x01\x06", 5);
    randd_close(h);
    close(peer);
}
END_TEST

START_TEST(prime_into_null_sends_nothing_and_the_next_call_is_served)
{
    static const uint8_t reply[] = "\x01\x00\x00\x00\x00\x00\x00\x02\xff\xf1";
    uint8_t out[2];
    int peer;
    randd_handle *h = handle_with_reply(reply, 10, &peer);

    check_refused_unsent(randd_prime(h, 16, NULL), peer, "randd_prime(h, 16, NULL)");
    ck_assert_int_eq(randd_prime(h, 16, out), 0);
    ck_assert_msg(out[0] == 0xff && out[1] == 0xf1, "randd_prime: not the daemon's prime");
    check_request(peer, RANDD_OP_PRIME, (const uint8_t *)"\0\x10", 2);
    randd_close(h);
    close(peer);
}
END_TEST

START_TEST(null_json_or_data_sends_nothing_and_the_next_call_is_served)
{
    static const uint8_t reply[] = "\x01\x00\x00\x00\x00\x00\x00\x02{}";
    char *json = NULL;
    int peer;
    randd_handle *h = handle_with_reply(reply, 10, &peer);

    check_refused_unsent(randd_status(h, NULL), peer, "randd_status(h, NULL)");
    check_refused_unsent(randd_add_entropy(h, NULL, 16, 8), peer,
                         "randd_add_entropy(h, NULL, 16, 8)");
    ck_assert_int_eq(randd_status(h, &json), 2);
    ck_assert_str_eq(json, "{}");
    check_request(peer, RANDD_OP_STATUS, (const uint8_t *)"", 0);
    free(json);
    randd_close(h);
    close(peer);
}
END_TEST

/* A program that closes librandd's descriptor and reuses the number for a file of its own
 * must find its file untouched, and still open after randd_close. */
START_TEST(a_descriptor_closed_and_reused_by_the_program_is_neither_written_nor_closed)
{
    char path[] = "/tmp/randd-client-XXXXXX", *json = NULL;
    randd_handle *h;
    int sv[2], fd;
    struct stat st;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(randd_handle_from_fd(&h, sv[0]), 0);
    close(sv[0]);
    fd = mkstemp(path);
    ck_assert_int_eq(fd, sv[0]);                        /* the number came back */
    ck_assert_int_eq(randd_status(h, &json), -ENOTCONN);
    randd_close(h);
    ck_assert_int_eq(fstat(fd, &st), 0);                /* still open: not closed for us */
    ck_assert_int_eq(st.st_size, 0);
    close(fd);
    close(sv[1]);
    unlink(path);
}
END_TEST

/* --- BYTES_MEMFD ----------------------------------------------------------------------- */

#define BIG (64u << 10)                 /* where randd_bytes starts asking for BYTES_MEMFD */

static void put_header(uint8_t *p, uint8_t status, uint32_t length)
{
    struct randd_header h = { RANDD_PROTOCOL_VERSION, status, 0, length };

    randd_header_encode(p, &h);
}

/* The op of the next request the "daemon" receives; its body is read and dropped. */
static uint8_t next_op(int peer)
{
    uint8_t head[RANDD_HEADER_BYTES + 4];

    ck_assert_int_eq(recv(peer, head, sizeof(head), MSG_WAITALL), sizeof(head));
    return head[1];
}

/* A daemon without the op (UNKNOWN_OP) still serves a large call, over BYTES; the handle
 * remembers and asks with BYTES from then on. */
START_TEST(a_daemon_without_bytes_memfd_is_asked_with_bytes_once_told)
{
    static uint8_t body[BIG], out[BIG];
    static const char unknown[] = "unknown op 0x07";
    uint8_t frame[RANDD_HEADER_BYTES + sizeof(unknown)];
    randd_handle *h;
    int sv[2];

    memset(body, 0xa5, sizeof(body));
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(randd_handle_from_fd(&h, sv[0]), 0);
    randd_set_timeout(h, 10000);
    put_header(frame, RANDD_UNKNOWN_OP, sizeof(unknown));
    memcpy(frame + RANDD_HEADER_BYTES, unknown, sizeof(unknown));
    ck_assert_int_eq(write(sv[1], frame, sizeof(frame)), sizeof(frame));
    put_header(frame, RANDD_OK, BIG);
    for (int call = 0; call < 2; call++) {
        ck_assert_int_eq(write(sv[1], frame, RANDD_HEADER_BYTES), RANDD_HEADER_BYTES);
        ck_assert_int_eq(write(sv[1], body, sizeof(body)), sizeof(body));
        ck_assert_int_eq(randd_bytes(h, out, sizeof(out)), 0);
        ck_assert_mem_eq(out, body, sizeof(body));
        if (call == 0)
            ck_assert_uint_eq(next_op(sv[1]), RANDD_OP_BYTES_MEMFD);
        ck_assert_uint_eq(next_op(sv[1]), RANDD_OP_BYTES);
    }
    randd_close(h);
    close(sv[1]);
}
END_TEST

/* Sends an OK BYTES_MEMFD reply for n bytes at offset 0, with fd attached (-1: none). */
static void send_memfd_reply(int peer, uint32_t n, int fd)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    uint8_t frame[RANDD_HEADER_BYTES + RANDD_MEMFD_REPLY_BODY];
    struct iovec iov = { frame, sizeof(frame) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

    put_header(frame, RANDD_OK, RANDD_MEMFD_REPLY_BODY);
    randd_memfd_reply_encode(frame + RANDD_HEADER_BYTES, 0, n);
    if (fd >= 0) {
        struct cmsghdr *c;

        memset(&control, 0, sizeof(control));
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ck_assert_int_eq(sendmsg(peer, &msg, 0), sizeof(frame));
}

/* What a large randd_bytes returns when the "daemon" answers OK with fd attached. */
static int big_call_with_arena(int fd)
{
    static uint8_t out[BIG];
    randd_handle *h;
    int sv[2], rc;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(randd_handle_from_fd(&h, sv[0]), 0);
    randd_set_timeout(h, 10000);
    send_memfd_reply(sv[1], BIG, fd);
    rc = randd_bytes(h, out, sizeof(out));
    randd_close(h);
    close(sv[1]);
    return rc;
}

/* Only a memfd of the arena's size, sealed against shrinking, is mapped: a file that could
 * shrink under the mapping would turn a read into SIGBUS. An OK reply without any is a lie. */
START_TEST(an_arena_that_is_missing_unsealed_or_the_wrong_size_is_refused)
{
    int pipes[2], unsealed, small, good;

    ck_assert_int_eq(big_call_with_arena(-1), -EPROTO);
    ck_assert_int_eq(pipe(pipes), 0);
    ck_assert_int_eq(big_call_with_arena(pipes[0]), -EPROTO);
    unsealed = memfd_create("test", MFD_CLOEXEC);
    ck_assert_int_eq(ftruncate(unsealed, RANDD_MEMFD_ARENA_BYTES), 0);
    ck_assert_int_eq(big_call_with_arena(unsealed), -EPROTO);
    small = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert_int_eq(ftruncate(small, BIG), 0);
    ck_assert_int_eq(fcntl(small, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    ck_assert_int_eq(big_call_with_arena(small), -EPROTO);
    good = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert_int_eq(ftruncate(good, RANDD_MEMFD_ARENA_BYTES), 0);
    ck_assert_int_eq(fcntl(good, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    ck_assert_int_eq(big_call_with_arena(good), 0);
    close(pipes[0]);
    close(pipes[1]);
    close(unsealed);
    close(small);
    close(good);
}
END_TEST

/* --- BYTES_MEMFD failures fall back to BYTES -------------------------------------------- */

enum memfd_failure { RESET, NO_DESCRIPTOR, A_STATUS };

/* A "daemon" on a path, in a child, one connection at a time: each BYTES_MEMFD request fails
 * as told, each BYTES request of n is answered with n bytes of 0xa5. */
static void serve_failing_memfd(int listener, enum memfd_failure how)
{
    static uint8_t body[BIG];
    static const char refused[] = "the BYTES_MEMFD descriptor could not be passed";

    memset(body, 0xa5, sizeof(body));
    for (;;) {
        int c = accept(listener, NULL, NULL);
        uint8_t req[RANDD_HEADER_BYTES + 4], head[RANDD_HEADER_BYTES];

        while (c >= 0 && recv(c, req, sizeof(req), MSG_WAITALL) == sizeof(req)) {
            uint32_t n = (uint32_t)req[8] << 24 | req[9] << 16 | req[10] << 8 | req[11];

            if (req[1] == RANDD_OP_BYTES && n <= sizeof(body)) {
                put_header(head, RANDD_OK, n);
                if (write(c, head, sizeof(head)) < 0 || write(c, body, n) < 0)
                    break;
            } else if (how == NO_DESCRIPTOR) {
                send_memfd_reply(c, n, -1);
            } else if (how == A_STATUS) {
                put_header(head, RANDD_TOO_LARGE, sizeof(refused));
                if (write(c, head, sizeof(head)) < 0 || write(c, refused, sizeof(refused)) < 0)
                    break;
            } else {
                break;                  /* RESET */
            }
        }
        close(c);
    }
}

static void large_call_served_despite(enum memfd_failure how)
{
    static uint8_t out[BIG], want[BIG];
    char path[] = "/tmp/randd-test-client-XXXXXX";
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    randd_handle *h;
    int listener, rc;
    pid_t child;

    ck_assert_ptr_nonnull(mkdtemp(path));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", path);
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(listener, 8), 0);
    if ((child = fork()) == 0) {
        serve_failing_memfd(listener, how);
        _exit(0);
    }
    ck_assert_int_ge(child, 0);
    close(listener);
    ck_assert_int_eq(randd_open(&h, sa.sun_path), 0);
    randd_set_timeout(h, 10000);
    rc = randd_bytes(h, out, sizeof(out));
    randd_close(h);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    unlink(sa.sun_path);
    rmdir(path);
    memset(want, 0xa5, sizeof(want));
    ck_assert_msg(rc == 0, "failure %d: randd_bytes returned %d (%s), wanted the bytes over "
                  "BYTES", how, rc, randd_strerror(rc));
    ck_assert_mem_eq(out, want, sizeof(want));
}

/* A "daemon" that answers one BYTES request on its first connection, then leaves a BUSY on it
 * and closes it, as randd does to an idle connection it evicts for another uid; it tells
 * done when it has; its next connection is answered. */
static void serve_then_evict(int listener, int done)
{
    static const char evicted[] = "closed while idle to make room for another uid";
    uint8_t req[RANDD_HEADER_BYTES + 4], head[RANDD_HEADER_BYTES], body[64];

    memset(body, 0xa5, sizeof(body));
    for (int conn = 0;; conn++) {
        int c = accept(listener, NULL, NULL);

        while (c >= 0 && recv(c, req, sizeof(req), MSG_WAITALL) == sizeof(req)) {
            put_header(head, RANDD_OK, sizeof(body));
            if (write(c, head, sizeof(head)) < 0 || write(c, body, sizeof(body)) < 0)
                break;
            if (conn == 0) {
                put_header(head, RANDD_BUSY, sizeof(evicted));
                if (write(c, head, sizeof(head)) < 0 || write(c, evicted, sizeof(evicted)) < 0)
                    break;
                shutdown(c, SHUT_RDWR);
                if (write(done, "e", 1) < 0)
                    break;
                break;
            }
        }
        close(c);
    }
}

/* An idle connection the daemon closed (evicted for another uid, an idle timeout, a restart)
 * is no refusal of the next call, whatever reply it left: that call reconnects and is served,
 * where it once returned the BUSY left for nobody. */
START_TEST(a_call_after_the_daemon_closed_an_idle_connection_reconnects)
{
    char path[] = "/tmp/randd-test-client-XXXXXX";
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    uint8_t out[64], want[64];
    randd_handle *h;
    int listener, done[2], rc;
    char c;
    pid_t child;

    ck_assert_ptr_nonnull(mkdtemp(path));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", path);
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(listener, 8), 0);
    ck_assert_int_eq(pipe(done), 0);
    if ((child = fork()) == 0) {
        serve_then_evict(listener, done[1]);
        _exit(0);
    }
    ck_assert_int_ge(child, 0);
    close(listener);
    ck_assert_int_eq(randd_open(&h, sa.sun_path), 0);
    randd_set_timeout(h, 10000);
    ck_assert_int_eq(randd_bytes(h, out, sizeof(out)), 0);
    ck_assert_int_eq(read(done[0], &c, 1), 1);       /* the first connection is closed */
    rc = randd_bytes(h, out, sizeof(out));
    randd_close(h);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(done[0]), close(done[1]);
    unlink(sa.sun_path);
    rmdir(path);
    memset(want, 0xa5, sizeof(want));
    ck_assert_msg(rc == 0, "the call after the close returned %d (%s: %s), wanted the bytes "
                  "from a new connection", rc, randd_strerror(rc), randd_message(NULL));
    ck_assert_mem_eq(out, want, sizeof(want));
}
END_TEST

START_TEST(a_reset_on_bytes_memfd_is_served_over_bytes)
{
    large_call_served_despite(RESET);
}
END_TEST

START_TEST(an_ok_reply_without_its_descriptor_is_served_over_bytes)
{
    large_call_served_despite(NO_DESCRIPTOR);
}
END_TEST

START_TEST(any_status_to_bytes_memfd_is_served_over_bytes)
{
    large_call_served_despite(A_STATUS);
}
END_TEST

/* --- noise-source modes ---------------------------------------------------------------- */

/* A handle on one end of a socketpair, the test playing the daemon at the other (*peer); the
 * handle's timeout in ms. */
static randd_handle *handle_with_peer(int *peer, int timeout_ms)
{
    randd_handle *hd;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(randd_handle_from_fd(&hd, sv[0]), 0);
    randd_set_timeout(hd, timeout_ms);
    *peer = sv[1];
    return hd;
}

/* The next request the "daemon" receives: its header decoded, its u32 n; false if none has
 * come. */
static bool next_request(int peer, struct randd_header *h, uint32_t *n)
{
    uint8_t frame[RANDD_HEADER_BYTES + 4];

    if (recv(peer, frame, sizeof(frame), MSG_DONTWAIT | MSG_WAITALL) != sizeof(frame))
        return false;
    randd_header_decode(frame, h);
    *n = (uint32_t)frame[8] << 24 | (uint32_t)frame[9] << 16 | (uint32_t)frame[10] << 8 |
         frame[11];
    return true;
}

/* An OK reply of n bytes, each fill. */
static void send_ok(int peer, size_t n, uint8_t fill)
{
    static uint8_t frame[RANDD_HEADER_BYTES + (64u << 10)];

    ck_assert_uint_le(n, sizeof(frame) - RANDD_HEADER_BYTES);
    put_header(frame, RANDD_OK, (uint32_t)n);
    memset(frame + RANDD_HEADER_BYTES, fill, n);
    ck_assert_int_eq(write(peer, frame, RANDD_HEADER_BYTES + n),
                     (ssize_t)(RANDD_HEADER_BYTES + n));
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t value)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != value)
            return false;
    return true;
}

/* Full entropy goes 4096 bytes a request, each with the flag, one at a time: with one reply
 * given, the call sends the second request and waits; nothing more. When the call fails
 * (here, its timeout), the bytes it was served are wiped. */
START_TEST(full_entropy_is_asked_4096_bytes_at_a_time_one_request_in_flight)
{
    static uint8_t out[10000];
    struct randd_header h;
    uint32_t n;
    randd_handle *hd;
    int peer, rc;

    hd = handle_with_peer(&peer, 300);
    send_ok(peer, RANDD_MAX_FULL_ENTROPY, 0xa5);
    rc = randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_FULL_ENTROPY);
    ck_assert_msg(rc == -ETIMEDOUT, "a call left waiting for its second reply returned %d (%s)",
                  rc, randd_strerror(rc));
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(next_request(peer, &h, &n), "request %d of the call never came", i + 1);
        ck_assert_uint_eq(h.code, RANDD_OP_BYTES);
        ck_assert_msg(h.flags == RANDD_FLAG_FULL_ENTROPY, "request %d: flags 0x%04x, wanted "
                      "FULL_ENTROPY alone", i + 1, h.flags);
        ck_assert_uint_eq(n, RANDD_MAX_FULL_ENTROPY);
    }
    ck_assert_msg(!next_request(peer, &h, &n), "a third request went before the second's "
                  "reply: full-entropy requests were pipelined");
    ck_assert_msg(all_bytes(out, RANDD_MAX_FULL_ENTROPY, 0), "the failed call left the first "
                  "reply's bytes in the caller's buffer");
    randd_close(hd);
    close(peer);
}
END_TEST

/* A large prediction-resistant call is served over BYTES with the flag (never BYTES_MEMFD,
 * whose arena and read-ahead hold ordinary output), and NONBLOCK rides along when set; it
 * is split at RANDD_MAX_PREDICTION_RESISTANT, a noise reseed (and in approved mode one DRBG
 * generate) a request. */
START_TEST(prediction_resistance_goes_over_bytes_with_its_flag_whatever_the_size)
{
    static uint8_t out[RANDD_MAX_PREDICTION_RESISTANT + 100];
    struct randd_header h;
    uint32_t n;
    randd_handle *hd;
    int peer;

    hd = handle_with_peer(&peer, 10000);
    randd_set_nonblock(hd, 1);
    send_ok(peer, RANDD_MAX_PREDICTION_RESISTANT, 0x3c);
    send_ok(peer, 100, 0x3c);
    ck_assert_int_eq(randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_PREDICTION_RESISTANT),
                     0);
    ck_assert_msg(all_bytes(out, sizeof(out), 0x3c), "not the daemon's bytes");
    for (uint32_t want = RANDD_MAX_PREDICTION_RESISTANT; want; want = want == 100 ? 0 : 100) {
        ck_assert_msg(next_request(peer, &h, &n), "no request came");
        ck_assert_msg(h.code == RANDD_OP_BYTES, "op %u, wanted BYTES", h.code);
        ck_assert_msg(h.flags == (RANDD_FLAG_PREDICTION_RESISTANT | RANDD_FLAG_NONBLOCK),
                      "flags 0x%04x, wanted PREDICTION_RESISTANT | NONBLOCK", h.flags);
        ck_assert_uint_eq(n, want);
    }
    ck_assert_msg(!next_request(peer, &h, &n), "two requests expected, a third came");
    randd_close(hd);
    close(peer);
}
END_TEST

/* randd_seed in each mode: SEED, with the mode's flag. */
START_TEST(seed_carries_its_mode_flag)
{
    static const struct { enum randd_mode mode; uint16_t flags; } modes[] = {
        { RANDD_MODE_DEFAULT, 0 },
        { RANDD_MODE_PREDICTION_RESISTANT, RANDD_FLAG_PREDICTION_RESISTANT },
        { RANDD_MODE_FULL_ENTROPY, RANDD_FLAG_FULL_ENTROPY },
    };
    uint8_t out[48];
    struct randd_header h;
    uint32_t n;
    randd_handle *hd;
    int peer;

    hd = handle_with_peer(&peer, 10000);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        send_ok(peer, sizeof(out), 0x11);
        ck_assert_int_eq(randd_seed(hd, out, sizeof(out), modes[i].mode), 0);
        ck_assert_msg(next_request(peer, &h, &n), "mode %d: no request", modes[i].mode);
        ck_assert_msg(h.code == RANDD_OP_SEED && h.flags == modes[i].flags && n == sizeof(out),
                      "mode %d: op %u flags 0x%04x n %u, wanted SEED 0x%04x %zu",
                      modes[i].mode, h.code, h.flags, n, modes[i].flags, sizeof(out));
    }
    randd_close(hd);
    close(peer);
}
END_TEST

/* A mode not in the enum sends nothing; the next call is served. */
START_TEST(an_unknown_mode_sends_nothing_and_the_next_call_is_served)
{
    static const uint8_t reply[] = "\x01\x00\x00\x00\x00\x00\x00\x10"
                                   "0123456789abcdef";
    uint8_t buf[16];
    int peer;
    randd_handle *h = handle_with_reply(reply, 24, &peer);

    check_refused_unsent(randd_bytes_mode(h, buf, sizeof(buf), (enum randd_mode)3), peer,
                         "randd_bytes_mode(mode 3)");
    check_refused_unsent(randd_seed(h, buf, sizeof(buf), (enum randd_mode)-1), peer,
                         "randd_seed(mode -1)");
    check_refused_unsent(randd_bytes_mode(h, NULL, 16, RANDD_MODE_FULL_ENTROPY), peer,
                         "randd_bytes_mode(NULL)");
    ck_assert_int_eq(randd_bytes_mode(h, buf, sizeof(buf), RANDD_MODE_DEFAULT), 0);
    ck_assert_msg(!memcmp(buf, "0123456789abcdef", 16), "not the daemon's bytes");
    randd_close(h);
    close(peer);
}
END_TEST

/* NO_NOISE_SOURCE comes back as its own error, with the daemon's words and a text of its
 * own; the handle serves the next call on the same connection. */
START_TEST(no_noise_source_is_its_own_error_with_the_daemons_message)
{
    static const char why[] = "no healthy noise source: jitter quarantined";
    uint8_t frame[RANDD_HEADER_BYTES + sizeof(why)], out[32];
    randd_handle *hd;
    int peer, rc;

    hd = handle_with_peer(&peer, 10000);
    put_header(frame, RANDD_NO_NOISE_SOURCE, sizeof(why) - 1);
    memcpy(frame + RANDD_HEADER_BYTES, why, sizeof(why) - 1);
    ck_assert_int_eq(write(peer, frame, RANDD_HEADER_BYTES + sizeof(why) - 1),
                     (ssize_t)(RANDD_HEADER_BYTES + sizeof(why) - 1));
    rc = randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_FULL_ENTROPY);
    ck_assert_msg(rc == RANDD_ERR(RANDD_NO_NOISE_SOURCE), "returned %d (%s)", rc,
                  randd_strerror(rc));
    ck_assert_str_eq(randd_message(hd), why);
    ck_assert_msg(strstr(randd_strerror(rc), "noise source"), "randd_strerror: \"%s\"",
                  randd_strerror(rc));
    send_ok(peer, sizeof(out), 0x77);
    ck_assert_int_eq(randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_PREDICTION_RESISTANT),
                     0);
    randd_close(hd);
    close(peer);
}
END_TEST

/* Sends an error reply whose message is n bytes of 'x' ending in "(end)". */
static void send_long_message(int peer, int status, size_t n)
{
    static uint8_t frame[RANDD_HEADER_BYTES + 4096];

    ck_assert_uint_le(n, sizeof(frame) - RANDD_HEADER_BYTES);
    put_header(frame, (uint8_t)status, (uint32_t)n);
    memset(frame + RANDD_HEADER_BYTES, 'x', n);
    memcpy(frame + RANDD_HEADER_BYTES + n - 5, "(end)", 5);
    ck_assert_int_eq(write(peer, frame, RANDD_HEADER_BYTES + n), (ssize_t)(RANDD_HEADER_BYTES + n));
}

/* NO_NOISE_SOURCE names every noise source with its whole reason (three of 160 bytes and
 * more): kept whole. One past what the handle keeps is cut with a mark, never silently, and
 * the rest of it read, so the next call gets its own reply. */
START_TEST(a_long_message_is_kept_whole_and_an_overlong_one_cut_with_a_mark)
{
    static const char mark[] = "\xe2\x80\xa6";
    const char *msg;
    uint8_t out[32];
    randd_handle *hd;
    int peer;
    size_t n;

    hd = handle_with_peer(&peer, 10000);
    send_long_message(peer, RANDD_NO_NOISE_SOURCE, 700);
    ck_assert_int_eq(randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_FULL_ENTROPY),
                     RANDD_ERR(RANDD_NO_NOISE_SOURCE));
    msg = randd_message(hd);
    ck_assert_msg(strlen(msg) == 700 && !strcmp(msg + 695, "(end)"),
                  "a 700-byte message kept as %zu bytes ending \"%s\"", strlen(msg),
                  msg + (strlen(msg) > 8 ? strlen(msg) - 8 : 0));
    send_long_message(peer, RANDD_NO_NOISE_SOURCE, 4000);
    ck_assert_int_eq(randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_FULL_ENTROPY),
                     RANDD_ERR(RANDD_NO_NOISE_SOURCE));
    msg = randd_message(hd);
    n = strlen(msg);
    ck_assert_msg(n > sizeof(mark) && !strcmp(msg + n - (sizeof(mark) - 1), mark),
                  "a 4000-byte message cut to %zu bytes without the mark, ending \"%s\"", n,
                  msg + (n > 8 ? n - 8 : 0));
    send_ok(peer, sizeof(out), 0x77);
    ck_assert_int_eq(randd_bytes_mode(hd, out, sizeof(out), RANDD_MODE_FULL_ENTROPY), 0);
    randd_close(hd);
    close(peer);
}
END_TEST

/* A reply comes with its header in one receive, straight into the caller's buffer: an error
 * reply too, whose message (here longer than the handle keeps, and than the 4 KiB asked for
 * but not the whole of it) is kept cut with its mark, cleared from the buffer, and read to
 * its end, so the next call gets its own reply. */
START_TEST(an_error_message_that_came_into_the_callers_buffer_is_moved_out_of_it)
{
    static uint8_t out[4096];
    const char *msg;
    randd_handle *hd;
    int peer;
    size_t n;

    hd = handle_with_peer(&peer, 10000);
    send_long_message(peer, RANDD_NOT_READY, 4000);
    ck_assert_int_eq(randd_bytes(hd, out, sizeof(out)), RANDD_ERR(RANDD_NOT_READY));
    msg = randd_message(hd);
    n = strlen(msg);
    ck_assert_msg(n > 8 && msg[0] == 'x' && !strcmp(msg + n - 3, "\xe2\x80\xa6"),
                  "a 4000-byte message kept as %zu bytes, ending \"%s\"", n, msg + n - 8);
    ck_assert_msg(all_bytes(out, sizeof(out), 0), "the message was left in the caller's buffer");
    send_ok(peer, 32, 0x77);
    ck_assert_int_eq(randd_bytes(hd, out, 32), 0);
    ck_assert_msg(all_bytes(out, 32, 0x77), "the next call did not get its own reply");
    /* randd_prime wipes nothing of its own on failure: the reading must. */
    send_long_message(peer, RANDD_BUSY, 4000);
    ck_assert_int_eq(randd_prime(hd, 4096, out), RANDD_ERR(RANDD_BUSY));
    ck_assert_msg(!memchr(out, 'x', 512), "randd_prime left the message in the caller's buffer");
    randd_close(hd);
    close(peer);
}
END_TEST

/* A reply that is not what its header says (an error message longer than its length, an OK
 * body of the wrong size): the call fails with -EPROTO, and what came into the caller's
 * buffer with the header is wiped, randd_prime's included, which wipes nothing itself. */
START_TEST(a_reply_unlike_its_header_leaves_nothing_in_the_callers_buffer)
{
    static uint8_t reply[RANDD_HEADER_BYTES + 600], out[512];
    randd_handle *hd;
    int peer;

    hd = handle_with_peer(&peer, 10000);
    memset(reply, 'y', sizeof(reply));
    put_header(reply, RANDD_BUSY, 4);
    ck_assert_int_eq(write(peer, reply, sizeof(reply)), (ssize_t)sizeof(reply));
    ck_assert_int_eq(randd_prime(hd, 4096, out), -EPROTO);
    ck_assert_msg(all_bytes(out, sizeof(out), 0), "an overlong error reply was left in out");
    randd_close(hd);
    close(peer);
    hd = handle_with_peer(&peer, 10000);
    memset(reply, 0x5a, sizeof(reply));
    put_header(reply, RANDD_OK, 100);
    ck_assert_int_eq(write(peer, reply, RANDD_HEADER_BYTES + 100), RANDD_HEADER_BYTES + 100);
    ck_assert_int_eq(randd_prime(hd, 4096, out), -EPROTO);
    ck_assert_msg(all_bytes(out, sizeof(out), 0), "a 100-byte body was left in out");
    randd_close(hd);
    close(peer);
}
END_TEST

/* A program with a signal every few milliseconds (a profiler's SIGPROF, a timer's SIGALRM):
 * each interrupts the wait for a reply, and the wait that follows must be for what is left
 * of the timeout, not the whole of it again, or the call never times out. The ticks stop by
 * themselves after 2 s, so a call that outlives them fails here instead of hanging. */
static volatile sig_atomic_t ticks;

static void tick(int sig)
{
    static const struct itimerval off;

    (void)sig;
    if (++ticks == 200)
        setitimer(ITIMER_REAL, &off, NULL);
}

START_TEST(a_timeout_holds_under_a_signal_every_few_milliseconds)
{
    struct sigaction sa = { .sa_handler = tick, .sa_flags = SA_RESTART }, old;
    struct itimerval every_10_ms = { { 0, 10000 }, { 0, 10000 } }, off = { { 0, 0 }, { 0, 0 } };
    struct timespec t0, t1;
    uint8_t out[32];
    randd_handle *hd;
    int peer, rc;
    long ms;

    hd = handle_with_peer(&peer, 300);          /* the "daemon" never answers */
    ticks = 0;
    ck_assert_int_eq(sigaction(SIGALRM, &sa, &old), 0);
    ck_assert_int_eq(setitimer(ITIMER_REAL, &every_10_ms, NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = randd_bytes(hd, out, sizeof(out));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ck_assert_int_eq(rc, -ETIMEDOUT);
    ck_assert_msg(ms < 1500, "a 300 ms timeout took %ld ms under a signal every 10 ms", ms);
    randd_close(hd);
    close(peer);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("client");
    TCase *tc = tcase_create("reply decoding");
    TCase *args = tcase_create("arguments");

    tcase_add_test(tc, status_text_with_a_nul_byte_is_a_protocol_error);
    tcase_add_test(tc, status_reply_claiming_gigabytes_is_refused_before_allocating);
    tcase_add_test(tc, a_well_formed_status_reply_is_returned_whole);
    tcase_add_test(tc, a_descriptor_closed_and_reused_by_the_program_is_neither_written_nor_closed);
    tcase_add_test(tc, a_daemon_without_bytes_memfd_is_asked_with_bytes_once_told);
    tcase_add_test(tc, an_arena_that_is_missing_unsealed_or_the_wrong_size_is_refused);
    tcase_add_test(tc, a_call_after_the_daemon_closed_an_idle_connection_reconnects);
    tcase_add_test(tc, a_reset_on_bytes_memfd_is_served_over_bytes);
    tcase_add_test(tc, an_ok_reply_without_its_descriptor_is_served_over_bytes);
    tcase_add_test(tc, any_status_to_bytes_memfd_is_served_over_bytes);
    tcase_add_test(tc, full_entropy_is_asked_4096_bytes_at_a_time_one_request_in_flight);
    tcase_add_test(tc, prediction_resistance_goes_over_bytes_with_its_flag_whatever_the_size);
    tcase_add_test(tc, seed_carries_its_mode_flag);
    tcase_add_test(tc, no_noise_source_is_its_own_error_with_the_daemons_message);
    tcase_add_test(tc, a_long_message_is_kept_whole_and_an_overlong_one_cut_with_a_mark);
    tcase_add_test(tc, an_error_message_that_came_into_the_callers_buffer_is_moved_out_of_it);
    tcase_add_test(tc, a_timeout_holds_under_a_signal_every_few_milliseconds);
    tcase_add_test(tc, a_reply_unlike_its_header_leaves_nothing_in_the_callers_buffer);
    suite_add_tcase(s, tc);
    tcase_add_test(args, bytes_into_null_sends_nothing_and_the_next_call_is_served);
    tcase_add_test(args, range_with_bad_arguments_sends_nothing_and_the_next_call_is_served);
    tcase_add_test(args, prime_into_null_sends_nothing_and_the_next_call_is_served);
    tcase_add_test(args, null_json_or_data_sends_nothing_and_the_next_call_is_served);
    tcase_add_test(args, an_unknown_mode_sends_nothing_and_the_next_call_is_served);
    tcase_set_timeout(args, 30);
    suite_add_tcase(s, args);
    return s;
}
