/* The protocol codec (lib/protocol.c): the one request encoder against PROTOCOL.md's example
 * and against its own decoder, replies' headers as clients judge them, and the tables of
 * names STATUS, randctl and strerror read. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "protocol.h"
#include "runner.h"

START_TEST(the_protocol_md_example_encodes_byte_for_byte)
{
    static const uint8_t want[] = { 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04,
                                    0x00, 0x00, 0x00, 0x20 };
    struct randd_request req = { .op = RANDD_OP_BYTES, .n = 32 };
    uint8_t out[32];

    ck_assert_uint_eq(randd_request_encode(out, sizeof(out), &req), sizeof(want));
    ck_assert_mem_eq(out, want, sizeof(want));
}
END_TEST

/* Encodes req, decodes the frame with the daemon's decoder, and returns what it decoded. */
static struct randd_request round_trip(const struct randd_request *req, uint8_t *frame,
                                       size_t cap)
{
    struct randd_request got;
    struct randd_header h;
    char why[160] = "";
    size_t n = randd_request_encode(frame, cap, req);
    int status;

    ck_assert_msg(n >= RANDD_HEADER_BYTES, "op %u: nothing encoded", req->op);
    randd_header_decode(frame, &h);
    ck_assert_uint_eq(h.length, n - RANDD_HEADER_BYTES);
    status = randd_parse_request(&h, frame + RANDD_HEADER_BYTES, &got, why, sizeof(why));
    ck_assert_msg(status == RANDD_OK, "op %u: decoded as %s (%s)", req->op,
                  randd_status_name(status), why);
    ck_assert_uint_eq(got.op, req->op);
    ck_assert_uint_eq(got.flags, req->flags);
    return got;
}

START_TEST(every_op_round_trips_through_the_decoder)
{
    static const uint8_t r[3] = { 0x01, 0x00, 0x01 }, data[5] = { 1, 2, 3, 4, 5 };
    uint8_t frame[64];
    struct randd_request got;

    got = round_trip(&(struct randd_request){ .op = RANDD_OP_BYTES, .n = RANDD_MAX_BYTES,
                                              .flags = RANDD_FLAG_NONBLOCK }, frame,
                     sizeof(frame));
    ck_assert_uint_eq(got.n, RANDD_MAX_BYTES);
    got = round_trip(&(struct randd_request){ .op = RANDD_OP_RANGE, .count = 300, .len = 3,
                                              .r = r }, frame, sizeof(frame));
    ck_assert_uint_eq(got.count, 300);
    ck_assert_uint_eq(got.len, 3);
    ck_assert_mem_eq(got.r, r, sizeof(r));
    round_trip(&(struct randd_request){ .op = RANDD_OP_STATUS }, frame, sizeof(frame));
    got = round_trip(&(struct randd_request){ .op = RANDD_OP_ADD_ENTROPY, .entropy_bits = 40,
                                              .data = data, .data_len = sizeof(data) },
                     frame, sizeof(frame));
    ck_assert_uint_eq(got.entropy_bits, 40);
    ck_assert_uint_eq(got.data_len, sizeof(data));
    ck_assert_mem_eq(got.data, data, sizeof(data));
    got = round_trip(&(struct randd_request){ .op = RANDD_OP_PRIME, .bits = 4096 }, frame,
                     sizeof(frame));
    ck_assert_uint_eq(got.bits, 4096);
    got = round_trip(&(struct randd_request){ .op = RANDD_OP_SEED, .n = RANDD_MAX_SEED }, frame,
                     sizeof(frame));
    ck_assert_uint_eq(got.n, RANDD_MAX_SEED);
    got = round_trip(&(struct randd_request){ .op = RANDD_OP_BYTES_MEMFD,
                                              .n = RANDD_MEMFD_SLOT_BYTES }, frame,
                     sizeof(frame));
    ck_assert_uint_eq(got.n, RANDD_MEMFD_SLOT_BYTES);
    round_trip(&(struct randd_request){ .op = RANDD_OP_SELFTEST }, frame, sizeof(frame));
    got = round_trip(&(struct randd_request){ .op = RANDD_OP_INJECT_FAILURE,
                                              .test = RANDD_TEST_STUCK,
                                              .data = (const uint8_t *)"jitter",
                                              .data_len = 6 },
                     frame, sizeof(frame));
    ck_assert_uint_eq(got.test, RANDD_TEST_STUCK);
    ck_assert_uint_eq(got.data_len, 6);
    ck_assert_mem_eq(got.data, "jitter", 6);
}
END_TEST

/* The modes ride on BYTES and SEED alone; full entropy is at most 4096 bytes a request,
 * prediction resistance keeps the op's own limit. */
START_TEST(mode_flags_are_for_bytes_and_seed_and_full_entropy_is_capped)
{
    static const struct { uint8_t op; uint16_t flags; uint32_t n; int status; } cases[] = {
        { RANDD_OP_BYTES, RANDD_FLAG_PREDICTION_RESISTANT, RANDD_MAX_BYTES, RANDD_OK },
        { RANDD_OP_BYTES, RANDD_FLAG_FULL_ENTROPY | RANDD_FLAG_NONBLOCK, 4096, RANDD_OK },
        { RANDD_OP_BYTES, RANDD_FLAG_FULL_ENTROPY, 4097, RANDD_TOO_LARGE },
        { RANDD_OP_BYTES, RANDD_FLAG_MODES, 4097, RANDD_TOO_LARGE },
        { RANDD_OP_SEED, RANDD_FLAG_PREDICTION_RESISTANT, RANDD_MAX_SEED, RANDD_OK },
        { RANDD_OP_SEED, RANDD_FLAG_FULL_ENTROPY, 4097, RANDD_TOO_LARGE },
        { RANDD_OP_BYTES_MEMFD, RANDD_FLAG_PREDICTION_RESISTANT, 64, RANDD_MALFORMED },
        { RANDD_OP_BYTES_MEMFD, RANDD_FLAG_FULL_ENTROPY, 64, RANDD_MALFORMED },
        { RANDD_OP_BYTES, 0x0008, 64, RANDD_MALFORMED },
    };
    uint8_t frame[64];
    struct randd_header h;
    struct randd_request req;
    char why[160];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = randd_request_encode(frame, sizeof(frame), &(struct randd_request){
            .op = cases[i].op, .flags = cases[i].flags, .n = cases[i].n });

        ck_assert_uint_gt(n, 0);
        randd_header_decode(frame, &h);
        ck_assert_msg(randd_parse_request(&h, frame + RANDD_HEADER_BYTES, &req, why,
                                          sizeof(why)) == cases[i].status,
                      "case %zu: op %u flags 0x%x n %u: wanted %s, got \"%s\"", i,
                      cases[i].op, cases[i].flags, cases[i].n,
                      randd_status_name(cases[i].status), why);
    }
    randd_header_decode(frame, &h);
    h.code = RANDD_OP_STATUS, h.flags = RANDD_FLAG_FULL_ENTROPY, h.length = 0;
    ck_assert_int_eq(randd_check_header(&h, why, sizeof(why)), RANDD_MALFORMED);
    ck_assert_str_eq(why, "unknown flags 0x0004");
}
END_TEST

/* INJECT_FAILURE's body: a test randd has, a printable name of 1 to 31 bytes; SELFTEST's:
 * none. Anything else is refused, saying what. */
START_TEST(inject_failure_and_selftest_bodies_are_checked)
{
    static const struct { const char *body; size_t len; int status; const char *why; } bad[] = {
        { "\x00", 1, RANDD_MALFORMED, "INJECT_FAILURE body is 1 bytes, not 2 to 32" },
        { "\x00" "0123456789012345678901234567890x", 33, RANDD_MALFORMED,
          "INJECT_FAILURE body is 33 bytes, not 2 to 32" },
        { "\x04" "jitter", 7, RANDD_INVALID_ARGUMENT, "INJECT_FAILURE test = 4 (at most 3)" },
        { "\x00" "jit ter", 8, RANDD_INVALID_ARGUMENT,
          "INJECT_FAILURE source name holds byte 0x20" },
        { "\x00" "jit\nter", 8, RANDD_INVALID_ARGUMENT,
          "INJECT_FAILURE source name holds byte 0x0a" },
    };
    struct randd_request req;
    char why[160];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct randd_header h = { RANDD_PROTOCOL_VERSION, RANDD_OP_INJECT_FAILURE, 0,
                                  (uint32_t)bad[i].len };

        ck_assert_int_eq(randd_parse_request(&h, (const uint8_t *)bad[i].body, &req, why,
                                             sizeof(why)), bad[i].status);
        ck_assert_str_eq(why, bad[i].why);
    }
    ck_assert_int_eq(randd_parse_request(&(struct randd_header){ RANDD_PROTOCOL_VERSION,
                                                                  RANDD_OP_SELFTEST, 0, 1 },
                                         (const uint8_t *)"x", &req, why, sizeof(why)),
                     RANDD_MALFORMED);
    ck_assert_str_eq(why, "SELFTEST body is 1 bytes, not 0");
    ck_assert_int_eq(randd_health_test_from_name("lag"), RANDD_TEST_LAG);
    ck_assert_int_eq(randd_health_test_from_name("LAG"), -1);
}
END_TEST

/* BYTES_MEMFD's n is 1 up to one slot: the arena holds two replies, not a 16 MiB BYTES. */
START_TEST(bytes_memfd_asks_for_one_slot_at_most)
{
    struct randd_request req = { .op = RANDD_OP_BYTES_MEMFD }, got;
    static const uint32_t n[] = { 0, 1, RANDD_MEMFD_SLOT_BYTES, RANDD_MEMFD_SLOT_BYTES + 1 };
    static const int want[] = { RANDD_INVALID_ARGUMENT, RANDD_OK, RANDD_OK, RANDD_TOO_LARGE };
    struct randd_header h;
    uint8_t frame[16];
    char why[160];

    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
        req.n = n[i];
        ck_assert_uint_eq(randd_request_encode(frame, sizeof(frame), &req), 12);
        randd_header_decode(frame, &h);
        ck_assert_msg(randd_parse_request(&h, frame + RANDD_HEADER_BYTES, &got, why,
                                          sizeof(why)) == want[i],
                      "BYTES_MEMFD n = %u: not %s (%s)", n[i], randd_status_name(want[i]), why);
    }
    ck_assert_ptr_nonnull(strstr(why, "BYTES_MEMFD"));
}
END_TEST

/* The reply's offset and n must place the bytes inside the arena: anything else would have
 * a client read past its mapping. */
START_TEST(memfd_replies_outside_the_arena_are_refused)
{
    uint8_t body[RANDD_MEMFD_REPLY_BODY];
    uint32_t offset;

    randd_memfd_reply_encode(body, RANDD_MEMFD_SLOT_BYTES, 100);
    ck_assert_int_eq(randd_memfd_reply_decode(body, 100, RANDD_MEMFD_ARENA_BYTES, &offset), 0);
    ck_assert_uint_eq(offset, RANDD_MEMFD_SLOT_BYTES);
    ck_assert_int_eq(randd_memfd_reply_decode(body, 99, RANDD_MEMFD_ARENA_BYTES, &offset),
                     -EPROTO);                                 /* not the n asked for */
    randd_memfd_reply_encode(body, RANDD_MEMFD_ARENA_BYTES - 99, 100);
    ck_assert_int_eq(randd_memfd_reply_decode(body, 100, RANDD_MEMFD_ARENA_BYTES, &offset),
                     -EPROTO);                                 /* one byte past the end */
    randd_memfd_reply_encode(body, UINT32_MAX, 100);
    ck_assert_int_eq(randd_memfd_reply_decode(body, 100, RANDD_MEMFD_ARENA_BYTES, &offset),
                     -EPROTO);
}
END_TEST

/* Arguments are the daemon's to judge: the encoder writes them as given. */
START_TEST(arguments_the_daemon_refuses_are_encoded_as_given)
{
    struct randd_request req = { .op = RANDD_OP_BYTES, .n = 0 }, got;
    struct randd_header h;
    uint8_t frame[16];
    char why[160];

    ck_assert_uint_eq(randd_request_encode(frame, sizeof(frame), &req), 12);
    randd_header_decode(frame, &h);
    ck_assert_int_eq(randd_parse_request(&h, frame + RANDD_HEADER_BYTES, &got, why, sizeof(why)),
                     RANDD_INVALID_ARGUMENT);
}
END_TEST

START_TEST(a_frame_that_does_not_fit_or_an_unknown_op_encodes_nothing)
{
    static const uint8_t r[32] = { 1 };
    struct randd_request range = { .op = RANDD_OP_RANGE, .count = 1, .len = 32, .r = r };
    uint8_t frame[64];

    ck_assert_uint_eq(randd_request_encode(frame, 43, &range), 0);
    ck_assert_uint_eq(randd_request_encode(frame, 44, &range), 44);
    ck_assert_uint_eq(randd_request_encode(frame, 4, &(struct randd_request){
                                               .op = RANDD_OP_STATUS }), 0);
    ck_assert_uint_eq(randd_request_encode(frame, sizeof(frame), &(struct randd_request){
                                               .op = 0x77 }), 0);
    ck_assert_uint_eq(randd_request_encode(frame, sizeof(frame), &(struct randd_request){
                                               .op = 0 }), 0);
}
END_TEST

static int reply(uint8_t version, uint8_t status, uint32_t body, size_t want, uint32_t *length)
{
    struct randd_header h = { version, status, 0, body };
    uint8_t head[RANDD_HEADER_BYTES];

    randd_header_encode(head, &h);
    return randd_reply_decode(head, want, length);
}

START_TEST(replies_are_judged_as_a_client_needs)
{
    uint32_t length;

    ck_assert_int_eq(reply(1, RANDD_OK, 32, 32, &length), 0);
    ck_assert_uint_eq(length, 32);
    ck_assert_int_eq(reply(1, RANDD_OK, 31, 32, &length), -EPROTO);
    ck_assert_int_eq(reply(1, RANDD_OK, 5000, SIZE_MAX, &length), 0);
    ck_assert_uint_eq(length, 5000);
    ck_assert_int_eq(reply(1, RANDD_BUSY, 17, 32, &length), RANDD_ERR(RANDD_BUSY));
    ck_assert_uint_eq(length, 17);                          /* the message to read */
    ck_assert_int_eq(reply(2, RANDD_OK, 32, 32, &length), -EPROTO);
    ck_assert_int_eq(reply(0, RANDD_BUSY, 0, 32, &length), -EPROTO);
}
END_TEST

/* Every value of each set has its own name, and a value outside the set a placeholder. */
static void check_names(const char *set, const char *(*name)(int), int first, int count,
                        const char *outside)
{
    for (int i = first; i < count; i++) {
        ck_assert_msg(name(i) && *name(i), "%s %d has no name", set, i);
        ck_assert_msg(strcmp(name(i), outside) != 0, "%s %d is named like no %s", set, i, set);
        for (int j = first; j < i; j++)
            ck_assert_msg(strcmp(name(i), name(j)) != 0, "%s %d and %d are both \"%s\"", set,
                          i, j, name(i));
    }
    ck_assert_str_eq(name(count), outside);
    ck_assert_str_eq(name(-1), outside);
}

START_TEST(every_name_table_names_each_value_once)
{
    check_names("op", randd_op_name, 1, RANDD_OP_LAST + 1, "unknown");
    check_names("status", randd_status_name, 0, RANDD_STATUS_COUNT, "UNKNOWN_STATUS");
    check_names("status text", randd_status_text, 0, RANDD_STATUS_COUNT,
                "unknown status from the daemon");
    check_names("health test", randd_health_test_name, 0, RANDD_HEALTH_TEST_COUNT, "unknown");
    check_names("source state", randd_source_state_name, 0, RANDD_SOURCE_STATE_COUNT,
                "unknown");
    check_names("engine", randd_engine_name, 0, RANDD_ENGINE_COUNT, "unknown");
    check_names("op on the wire", randd_op_wire_name, 1, RANDD_OP_LAST + 1, "UNKNOWN_OP");
    ck_assert_str_eq(randd_op_name(RANDD_OP_PRIME), "prime");
    ck_assert_str_eq(randd_status_name(RANDD_BUSY), "BUSY");
    ck_assert_str_eq(randd_source_state_name(RANDD_SOURCE_QUARANTINED), "quarantined");
}
END_TEST

/* Messages name an op as the protocol does: its STATUS key in capitals, from the one table. */
START_TEST(an_ops_wire_name_is_its_status_key_in_capitals)
{
    for (int op = 1; op <= RANDD_OP_LAST; op++) {
        const char *key = randd_op_name(op), *wire = randd_op_wire_name(op);
        size_t i;

        for (i = 0; key[i] && toupper((unsigned char)key[i]) == wire[i]; i++)
            ;
        ck_assert_msg(!key[i] && !wire[i], "op %d: key \"%s\", wire name \"%s\"", op, key,
                      wire);
    }
    ck_assert_str_eq(randd_op_wire_name(RANDD_OP_BYTES_MEMFD), "BYTES_MEMFD");
}
END_TEST

START_TEST(engines_are_found_by_their_names_only)
{
    for (int e = 0; e < RANDD_ENGINE_COUNT; e++)
        ck_assert_int_eq(randd_engine_from_name(randd_engine_name(e)), e);
    ck_assert_int_eq(randd_engine_from_name("Randen"), -1);
    ck_assert_int_eq(randd_engine_from_name(""), -1);
    ck_assert_int_eq(randd_engine_from_name("unknown"), -1);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("protocol");
    TCase *tc = tcase_create("codec and names");

    tcase_add_test(tc, the_protocol_md_example_encodes_byte_for_byte);
    tcase_add_test(tc, every_op_round_trips_through_the_decoder);
    tcase_add_test(tc, arguments_the_daemon_refuses_are_encoded_as_given);
    tcase_add_test(tc, a_frame_that_does_not_fit_or_an_unknown_op_encodes_nothing);
    tcase_add_test(tc, replies_are_judged_as_a_client_needs);
    tcase_add_test(tc, bytes_memfd_asks_for_one_slot_at_most);
    tcase_add_test(tc, memfd_replies_outside_the_arena_are_refused);
    tcase_add_test(tc, every_name_table_names_each_value_once);
    tcase_add_test(tc, an_ops_wire_name_is_its_status_key_in_capitals);
    tcase_add_test(tc, engines_are_found_by_their_names_only);
    tcase_add_test(tc, inject_failure_and_selftest_bodies_are_checked);
    tcase_add_test(tc, mode_flags_are_for_bytes_and_seed_and_full_entropy_is_capped);
    suite_add_tcase(s, tc);
    return s;
}
