/* randd's ops end to end, each through librandd and as raw frames: BYTES of every size,
 * RANGE bounds and uniformity, PRIME, SEED, ADD_ENTROPY's privilege, both engines and both
 * ciphers, pipelined and read-ahead requests; and malformed input (bad versions, unknown ops
 * and flags, bodies that disagree with their op, huge bodies), each answered with its status
 * and closed gracefully where the stream cannot go on. Limits and shares: test_limits.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>

#include "crypto.h"
#include "harness.h"
#include "protocol.h"
#include "randen.h"
#include "randd.h"

/* v big-endian in p[0..3], for hand-built bodies; returns p. */
static uint8_t *be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
    return p;
}

START_TEST(bytes_of_every_size_through_librandd)
{
    static const size_t sizes[] = { 1, 32, 4096, RANDD_MAX_BYTES, RANDD_MAX_BYTES * 2 + 5 };
    randd_handle *h;
    uint8_t *buf = malloc(RANDD_MAX_BYTES * 2 + 5);

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t zeros = 0;

        memset(buf, 0, sizes[i]);
        ck_assert_msg(randd_bytes(h, buf, sizes[i]) == 0, "randd_bytes(%zu)", sizes[i]);
        for (size_t j = 0; j < sizes[i]; j++)
            zeros += buf[j] == 0;
        ck_assert_msg(sizes[i] < 4096 || zeros < sizes[i] / 128,
                      "%zu zero bytes in %zu: not random", zeros, sizes[i]);
    }
    randd_close(h);
    free(buf);
}
END_TEST

START_TEST(every_malformed_request_gets_its_status_and_the_connection_lives)
{
    uint8_t body[1100] = { 0 }, r[1025] = { 0 };
    int fd;

    start_daemon_with("", NULL);
    fd = connect_raw();
    send_bytes(fd, 0);
    check_status(fd, RANDD_INVALID_ARGUMENT, "BYTES n = 0");
    send_bytes(fd, RANDD_MAX_BYTES + 1);
    check_status(fd, RANDD_TOO_LARGE, "BYTES n = 16 MiB + 1");
    send_frame(fd, 1, RANDD_OP_BYTES, 0, 3, body, 3);
    check_status(fd, RANDD_MALFORMED, "BYTES with a 3-byte body");
    send_frame(fd, 1, RANDD_OP_STATUS, 0, 1, body, 1);
    check_status(fd, RANDD_MALFORMED, "STATUS with a body");
    send_frame(fd, 1, 0x77, 0, 0, body, 0);
    check_status(fd, RANDD_UNKNOWN_OP, "op 0x77");
    send_frame(fd, 1, RANDD_OP_BYTES, 0x0100, 4, be32(body, 8), 4);
    check_status(fd, RANDD_MALFORMED, "unknown flag");
    r[0] = 1;                                               /* r 0x0100 */
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_RANGE, .count = 0, .len = 2, .r = r });
    check_status(fd, RANDD_INVALID_ARGUMENT, "RANGE count = 0");
    r[0] = 0;                                               /* r = 0 */
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_RANGE, .count = 1, .len = 2, .r = r });
    check_status(fd, RANDD_INVALID_ARGUMENT, "RANGE r = 0");
    r[0] = 1;
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_RANGE, .count = 1, .len = 1025,
                                              .r = r });
    check_status(fd, RANDD_TOO_LARGE, "RANGE len = 1025");
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_RANGE, .count = 1025, .len = 1024,
                                              .r = r });
    check_status(fd, RANDD_TOO_LARGE, "RANGE count * len over 1 MiB");
    memset(body, 0, 8);
    body[1] = 1, body[3] = 3, body[4] = 1;                  /* len says 3, body has 2 */
    send_frame(fd, 1, RANDD_OP_RANGE, 0, 6, body, 6);
    check_status(fd, RANDD_MALFORMED, "RANGE len disagreeing with the body");
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_ADD_ENTROPY, .entropy_bits = 9,
                                              .data = r, .data_len = 1 });
    check_status(fd, RANDD_INVALID_ARGUMENT, "ADD_ENTROPY 9 bits for 1 byte");
    check_still_usable(fd, "after eleven errors");
    close(fd);
}
END_TEST

/* The request bytes the daemon never reads (the body after a bad version, the start of a
 * huge body) must not turn its close into a reset: the client reads the reply, then EOF. */
START_TEST(bad_version_and_huge_bodies_are_answered_then_closed_with_eof)
{
    uint8_t body[2048] = { 0 };
    int fd;

    start_daemon_with("", NULL);
    fd = connect_raw();
    send_frame(fd, 2, RANDD_OP_BYTES, 0, 4, be32(body, 8), 4);
    check_status(fd, RANDD_BAD_VERSION, "version 2");
    check_end_of_file(fd, "version 2 with a 4-byte body");
    close(fd);
    fd = connect_raw();
    send_frame(fd, 0, RANDD_OP_STATUS, 0, sizeof(body), body, sizeof(body));
    check_status(fd, RANDD_BAD_VERSION, "version 0");
    check_end_of_file(fd, "version 0 with a 2048-byte body");
    close(fd);
    fd = connect_raw();
    send_frame(fd, 1, RANDD_OP_ADD_ENTROPY, 0, RANDD_MAX_REQUEST_BODY + 1, body, sizeof(body));
    check_status(fd, RANDD_TOO_LARGE, "body_length 64 KiB + 1");
    check_end_of_file(fd, "body_length 64 KiB + 1, 2048 bytes of it sent");
    close(fd);
    fd = connect_raw();
    check_still_usable(fd, "a new connection after all three");
    close(fd);
}
END_TEST

/* The graceful close is bounded: a peer that never closes, or sends on and on, is closed
 * anyway (POLLHUP: the daemon's end is gone), and others are served meanwhile. */
START_TEST(a_peer_that_never_closes_after_a_framing_error_is_closed_anyway)
{
    static uint8_t flood[1 << 16];
    int silent, sender, other;
    struct pollfd pf;

    start_daemon_with("", NULL);
    silent = connect_raw();
    sender = connect_raw();
    send_frame(silent, 2, RANDD_OP_STATUS, 0, 0, NULL, 0);
    send_frame(sender, 2, RANDD_OP_STATUS, 0, 0, NULL, 0);
    check_status(silent, RANDD_BAD_VERSION, "version 2, silent peer");
    check_status(sender, RANDD_BAD_VERSION, "version 2, flooding peer");
    check_end_of_file(silent, "version 2, silent peer");
    check_end_of_file(sender, "version 2, flooding peer");
    other = connect_raw();
    check_still_usable(other, "while two connections close gracefully");
    close(other);
    /* The flood: sends until the daemon's end is gone (EPIPE, or ECONNRESET with data of
     * ours unread), 30 s at most. */
    fcntl(sender, F_SETFL, O_NONBLOCK);
    for (time_t until = time(NULL) + 30;;) {
        ssize_t sent = send(sender, flood, sizeof(flood), MSG_NOSIGNAL);

        if (sent < 0 && (errno == EPIPE || errno == ECONNRESET))
            break;
        ck_assert_msg(sent >= 0 || errno == EAGAIN, "flooding peer: send: %s", strerror(errno));
        ck_assert_msg(time(NULL) < until, "flooding peer still open 30 s after its error");
        pf = (struct pollfd){ sender, POLLOUT, 0 };
        poll(&pf, 1, 100);
    }
    pf = (struct pollfd){ silent, 0, 0 };
    ck_assert_msg(poll(&pf, 1, 30000) == 1 && (pf.revents & POLLHUP),
                  "silent peer still open 30 s after its error (revents 0x%x)", pf.revents);
    close(sender);
    close(silent);
}
END_TEST

/* Values below r, and uniform by chi-square (p = 1e-4 limit) for small and odd-sized r. */
START_TEST(range_values_are_below_r_and_uniform)
{
    static const unsigned ranges[] = { 10, 200, 499, 1000 };
    static uint8_t out[2 * 200000];
    randd_handle *h;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        unsigned rv = ranges[i], count = rv * 100, counts[1000] = { 0 };
        uint8_t r[2] = { (uint8_t)(rv >> 8), (uint8_t)rv };
        double expected = (double)count / rv, chi = 0, a = 2.0 / (9.0 * (rv - 1));

        ck_assert_int_eq(randd_range(h, r, 2, out, count), 0);
        for (unsigned j = 0; j < count; j++) {
            unsigned v = out[2 * j] << 8 | out[2 * j + 1];

            ck_assert_msg(v < rv, "value %u not below %u", v, rv);
            counts[v]++;
        }
        for (unsigned v = 0; v < rv; v++)
            chi += (counts[v] - expected) * (counts[v] - expected) / expected;
        ck_assert_msg(chi < (rv - 1) * pow(1 - a + 3.719 * sqrt(a), 3),
                      "r = %u: chi-square %.1f", rv, chi);
    }
    randd_close(h);
}
END_TEST

START_TEST(pipelined_requests_are_answered_in_order)
{
    uint8_t frames[100 * (RANDD_HEADER_BYTES + 4)];
    size_t at = 0;
    int fd;

    start_daemon_with("", NULL);
    fd = connect_raw();
    for (uint32_t i = 0; i < 100; i++)
        at += randd_request_encode(frames + at, sizeof(frames) - at,
                                   &(struct randd_request){ .op = RANDD_OP_BYTES, .n = i + 1 });
    ck_assert_int_eq(at, sizeof(frames));
    ck_assert_int_eq(send(fd, frames, sizeof(frames), 0), (ssize_t)sizeof(frames));
    for (uint32_t i = 0; i < 100; i++) {
        uint8_t body[128];
        uint32_t len;

        ck_assert_int_eq(read_reply(fd, body, sizeof(body), &len), RANDD_OK);
        ck_assert_msg(len == i + 1, "reply %u has %u bytes: out of order", i, len);
    }
    close(fd);
}
END_TEST

/* randd reads a client's stream 128 bytes at a time, and a turn of the loop ends after 32
 * requests. The first request here (BYTES with an 8-byte body: MALFORMED, 16 bytes) shifts
 * the 41 BYTES after it off the 128-byte reads, so that when the 32nd is answered randd has
 * read the whole 508 bytes and 10 requests wait in its buffer with nothing left in the
 * socket. epoll would never report them again: randd must answer them in the same turn. */
START_TEST(requests_read_ahead_are_answered_though_the_socket_is_empty)
{
    uint8_t frames[RANDD_HEADER_BYTES + 8 + 41 * (RANDD_HEADER_BYTES + 4)];
    struct randd_header odd = { RANDD_PROTOCOL_VERSION, RANDD_OP_BYTES, 0, 8 };
    size_t at = RANDD_HEADER_BYTES + 8;
    int fd;

    randd_header_encode(frames, &odd);
    memset(frames + RANDD_HEADER_BYTES, 0, 8);
    for (int i = 0; i < 41; i++)
        at += randd_request_encode(frames + at, sizeof(frames) - at,
                                   &(struct randd_request){ .op = RANDD_OP_BYTES, .n = 16 });
    ck_assert_int_eq(at, sizeof(frames));
    start_daemon_with("", NULL);
    fd = connect_raw();
    ck_assert_int_eq(send(fd, frames, sizeof(frames), 0), (ssize_t)sizeof(frames));
    check_status(fd, RANDD_MALFORMED, "BYTES with an 8-byte body");
    for (int i = 0; i < 41; i++) {
        uint8_t body[16];

        ck_assert_int_eq(read_reply(fd, body, sizeof(body), NULL), RANDD_OK);  /* 120 s each */
    }
    close(fd);
}
END_TEST

/* PRIME: primes of the exact size, as librandd and the raw protocol see them. */
START_TEST(prime_replies_are_primes_of_the_exact_size)
{
    static const unsigned sizes[] = { 16, 64, 65, 128, 129, 256, 1024 };
    BN_CTX *ctx = BN_CTX_new();
    uint8_t out[128], b[2] = { 0 };
    randd_handle *h;
    int fd;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        BIGNUM *bn;
        int rc = randd_prime(h, sizes[i], out);

        ck_assert_msg(rc == 0, "PRIME %u: %s", sizes[i], randd_strerror(rc));
        bn = BN_bin2bn(out, (int)(sizes[i] + 7) / 8, NULL);
        ck_assert_msg(BN_num_bits(bn) == (int)sizes[i], "PRIME %u: %d bits", sizes[i], BN_num_bits(bn));
        ck_assert_msg(BN_check_prime(bn, ctx, NULL) == 1, "PRIME %u: not prime", sizes[i]);
        BN_free(bn);
    }
    randd_close(h);

    fd = connect_raw();
    send_prime(fd, 15);
    check_status(fd, RANDD_INVALID_ARGUMENT, "PRIME 15 bits");
    send_prime(fd, 4097);
    check_status(fd, RANDD_TOO_LARGE, "PRIME 4097 bits");
    send_frame(fd, 1, RANDD_OP_PRIME, 0, 1, b, 1);
    check_status(fd, RANDD_MALFORMED, "PRIME with a 1-byte body");
    check_still_usable(fd, "PRIME errors");
    close(fd);
    BN_CTX_free(ctx);
}
END_TEST

/* A 4096-bit search takes a while (0.2 to 1.9 s here, `randctl prime 4096`; even a first
 * candidate that is prime costs four 4096-bit exponentiations, about 50 ms, against well
 * under a millisecond for a BYTES round trip); it runs off the loop, so others are served
 * meanwhile, and a client that leaves mid-search costs nothing but the search. */
START_TEST(a_long_prime_search_does_not_hold_up_other_clients)
{
    uint8_t body[600], small[32];
    struct pollfd pf;
    randd_handle *h;
    uint32_t len;
    int slow, leaver;

    start_daemon_with("", NULL);
    slow = connect_raw();
    leaver = connect_raw();
    send_prime(leaver, 2048);
    send_prime(slow, 4096);
    close(leaver);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(randd_bytes(h, small, sizeof(small)), 0);
    /* Twenty BYTES round trips done; the 4096-bit prime is still being found. */
    pf = (struct pollfd){ slow, POLLIN, 0 };
    ck_assert_int_eq(poll(&pf, 1, 0), 0);
    ck_assert_int_eq(read_reply(slow, body, sizeof(body), &len), RANDD_OK);
    ck_assert_uint_eq(len, 512);
    ck_assert_msg(body[0] & 0x80, "top bit of a 4096-bit prime not set");
    ck_assert_msg(body[511] & 1, "a 4096-bit prime that is even");
    randd_close(h);
    close(slow);
}
END_TEST

/* engine = randen serves through the same paths, and STATUS says which engine it is. */
START_TEST(randen_engine_serves_bytes_and_ranges)
{
    static const uint8_t r[] = { 0x01, 0x00, 0x01 };
    uint8_t buf[5000], values[3 * 100];
    randd_handle *h;
    char *json;

    if (!randd_randen_available()) {
        fprintf(stderr, "SKIP: randen_engine_serves_bytes_and_ranges: no AES round "
                "instructions\n");
        return;
    }
    start_daemon_with("engine = randen\n", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_gt(randd_status(h, &json), 0);
    ck_assert_msg(strstr(json, "\"pool\":{\"engine\":\"randen\""), "STATUS: %.300s", json);
    free(json);
    ck_assert_int_eq(randd_bytes(h, buf, sizeof(buf)), 0);
    ck_assert_int_eq(randd_range(h, r, sizeof(r), values, 100), 0);
    for (int i = 0; i < 100; i++)
        ck_assert_msg(memcmp(values + 3 * i, r, 3) < 0, "value %d not below r", i);
    randd_close(h);
}
END_TEST

/* Starts randd with config, checks STATUS's pool.cipher is want, and that raw BYTES (through
 * a serving loop's generator) gives two distinct answers that are not all zeros. */
static void serves_with_cipher(const char *config, const char *want)
{
    static uint8_t a[70000], b[sizeof(a)], zeros[sizeof(a)];
    char pattern[64], *json;
    randd_handle *h;
    int fd;

    start_daemon_with(config, NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_gt(randd_status(h, &json), 0);
    snprintf(pattern, sizeof(pattern), "\"pool\":{\"engine\":\"cymric\",\"cipher\":\"%s\"",
             want);
    ck_assert_msg(strstr(json, pattern), "STATUS lacks %s: %.300s", pattern, json);
    free(json);
    randd_close(h);
    fd = connect_raw();
    send_bytes(fd, sizeof(a));
    ck_assert_int_eq(read_reply(fd, a, sizeof(a), NULL), RANDD_OK);
    send_bytes(fd, sizeof(b));
    ck_assert_int_eq(read_reply(fd, b, sizeof(b), NULL), RANDD_OK);
    close(fd);
    ck_assert_msg(memcmp(a, zeros, sizeof(a)) && memcmp(a, b, sizeof(a)),
                  "cipher %s: zero or repeated output", want);
}

/* cipher = auto is AES-256-CTR where the CPU does AES in hardware, ChaCha20 elsewhere, in
 * every loop; STATUS says which. */
START_TEST(auto_cipher_is_hardware_aes_and_status_says_so)
{
    serves_with_cipher("workers = 2\n",
                       randd_crypto_has_hardware_aes() ? "aes256ctr" : "chacha20");
}
END_TEST

START_TEST(cipher_chacha20_is_run_when_asked)
{
    serves_with_cipher("cipher = chacha20\n", "chacha20");
}
END_TEST

START_TEST(add_entropy_needs_root_or_the_trusted_group)
{
    static const uint8_t data[32] = { 1, 2, 3 };
    randd_handle *h;
    pid_t child;
    int status;

    if (geteuid() != 0) {
        fprintf(stderr, "SKIP add_entropy_needs_root...: needs root to act as another uid\n");
        return;
    }
    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_add_entropy(h, data, sizeof(data), 64), 0);
    randd_close(h);
    chmod(dir, 0755);
    child = fork();
    if (child == 0) {
        randd_handle *nobody;

        if (setgid(65534) < 0 || setuid(65534) < 0 || randd_open(&nobody, sock) < 0)
            _exit(10);
        _exit(randd_add_entropy(nobody, data, sizeof(data), 64) == RANDD_ERR(RANDD_NOT_PERMITTED)
                  ? 0 : 11);
    }
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "uid 65534 was not refused with NOT_PERMITTED (step %d)", WEXITSTATUS(status));
}
END_TEST

/* SEED is BYTES under its own name: served alike, limited to a seed's size, and counted
 * apart in STATUS so that an operator sees how often OpenSSL's provider seeds from randd. */
START_TEST(seed_requests_are_served_and_counted_apart_from_bytes)
{
    uint8_t b[4] = { 0 }, out[RANDD_MAX_SEED], zero[RANDD_MAX_SEED] = { 0 };
    struct randd_request seed = { .op = RANDD_OP_SEED };
    uint32_t len;
    char *json;
    int fd;

    start_daemon_with("", NULL);
    fd = connect_raw();
    seed.n = 48;
    send_request(fd, &seed);
    ck_assert_int_eq(read_reply(fd, out, sizeof(out), &len), RANDD_OK);
    ck_assert_uint_eq(len, 48);
    seed.flags = RANDD_FLAG_NONBLOCK, seed.n = RANDD_MAX_SEED;
    send_request(fd, &seed);
    ck_assert_int_eq(read_reply(fd, out, sizeof(out), &len), RANDD_OK);
    ck_assert_uint_eq(len, RANDD_MAX_SEED);
    ck_assert_msg(memcmp(out + RANDD_MAX_SEED - 64, zero, 64) != 0, "SEED ended in zeros");
    seed.flags = 0, seed.n = RANDD_MAX_SEED + 1;
    send_request(fd, &seed);
    check_status(fd, RANDD_TOO_LARGE, "SEED n = 4097");
    seed.n = 0;
    send_request(fd, &seed);
    check_status(fd, RANDD_INVALID_ARGUMENT, "SEED n = 0");
    send_frame(fd, 1, RANDD_OP_SEED, 0, 2, b, 2);
    check_status(fd, RANDD_MALFORMED, "SEED with a 2-byte body");
    check_still_usable(fd, "SEED errors");
    close(fd);
    json = wait_count("\"bytes\":", 1, "the BYTES request to be counted");
    ck_assert_msg(json_number(json, "\"seed\":") == 5 && json_number(json, "\"bytes\":") == 1,
                  "STATUS should count 5 SEED requests and 1 BYTES: %s", json);
    free(json);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("randd over its socket");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);          /* above the waits' WAIT_SECONDS */
    tcase_add_test(tc, bytes_of_every_size_through_librandd);
    tcase_add_test(tc, every_malformed_request_gets_its_status_and_the_connection_lives);
    tcase_add_test(tc, bad_version_and_huge_bodies_are_answered_then_closed_with_eof);
    tcase_add_test(tc, a_peer_that_never_closes_after_a_framing_error_is_closed_anyway);
    tcase_add_test(tc, range_values_are_below_r_and_uniform);
    tcase_add_test(tc, pipelined_requests_are_answered_in_order);
    tcase_add_test(tc, requests_read_ahead_are_answered_though_the_socket_is_empty);
    tcase_add_test(tc, prime_replies_are_primes_of_the_exact_size);
    tcase_add_test(tc, a_long_prime_search_does_not_hold_up_other_clients);
    tcase_add_test(tc, randen_engine_serves_bytes_and_ranges);
    tcase_add_test(tc, auto_cipher_is_hardware_aes_and_status_says_so);
    tcase_add_test(tc, cipher_chacha20_is_run_when_asked);
    tcase_add_test(tc, add_entropy_needs_root_or_the_trusted_group);
    tcase_add_test(tc, seed_requests_are_served_and_counted_apart_from_bytes);
    suite_add_tcase(s, tc);
    return s;
}
