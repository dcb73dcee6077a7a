/* librandd's reply decoding (lib/client.c) against replies no randd would send, over a
 * socketpair: each gets a negative code, never a crash, a lie or a huge allocation.
 * Both cases were found by tests/fuzz/fuzz_reply.c. And a descriptor the program took back
 * is left alone. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_internal.h"
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

Suite *test_suite(void)
{
    Suite *s = suite_create("client");
    TCase *tc = tcase_create("reply decoding");

    tcase_add_test(tc, status_text_with_a_nul_byte_is_a_protocol_error);
    tcase_add_test(tc, status_reply_claiming_gigabytes_is_refused_before_allocating);
    tcase_add_test(tc, a_well_formed_status_reply_is_returned_whole);
    tcase_add_test(tc, a_descriptor_closed_and_reused_by_the_program_is_neither_written_nor_closed);
    suite_add_tcase(s, tc);
    return s;
}
