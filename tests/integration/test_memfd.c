/* BYTES_MEMFD and librandd's read-ahead, end to end: the sealed memfd a connection gets and
 * its slots, pages wiped after use and freed when the client goes, the arena caps per uid
 * and over all, and librandd's blocks read ahead (used in turn, wiped by another call, never
 * across a new VM generation or a fork, not at all where the generation word is not
 * trusted). The arena itself, unit by unit: tests/test_memfd_arena.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "memfd_arena.h"
#include "protocol.h"
#include "randd.h"

/* --- BYTES_MEMFD ---------------------------------------------------------------------- */

/* Reads the reply to a BYTES_MEMFD request for want bytes: its status, and for OK the offset
 * of the bytes in the arena (the reply must place want bytes inside it), and the memfd that
 * came with it (-1 if none did). */
static int read_memfd_reply(int fd, uint32_t want, uint32_t *offset, int *memfd)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    uint8_t head[RANDD_HEADER_BYTES], body[256];
    struct iovec iov = { head, sizeof(head) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct pollfd pf = { fd, POLLIN, 0 };
    struct cmsghdr *c;
    struct randd_header h;
    ssize_t got;

    *memfd = -1;
    ck_assert_msg(poll(&pf, 1, 30000) == 1, "no reply within 30 s");
    got = recvmsg(fd, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    ck_assert_int_eq(got, sizeof(head));
    ck_assert_msg(!(msg.msg_flags & MSG_CTRUNC), "more than one descriptor came with a reply");
    if ((c = CMSG_FIRSTHDR(&msg)) && c->cmsg_type == SCM_RIGHTS)
        memcpy(memfd, CMSG_DATA(c), sizeof(int));
    randd_header_decode(head, &h);
    ck_assert_uint_le(h.length, sizeof(body));
    read_exact(fd, body, h.length);
    if (h.code == RANDD_OK) {
        ck_assert_uint_eq(h.length, RANDD_MEMFD_REPLY_BODY);
        ck_assert_msg(randd_memfd_reply_decode(body, want, RANDD_MEMFD_ARENA_BYTES,
                                               offset) == 0,
                      "a BYTES_MEMFD reply that does not place %u bytes in the arena", want);
    }
    return h.code;
}

static void send_bytes_memfd(int fd, uint32_t n)
{
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_BYTES_MEMFD, .n = n });
}

/* How many of the daemon's mappings are of the arena memfd (/proc/PID/maps). */
static int daemon_arena_mappings(void)
{
    char path[64], line[512];
    int n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)daemon_pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        n += strstr(line, "memfd:randd-bytes") != NULL;
    fclose(f);
    return n;
}

/* How many of the daemon's descriptors are arena memfds (/proc/PID/fd). */
static int daemon_arena_fds(void)
{
    char path[320], target[256];
    struct dirent *e;
    DIR *d;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)daemon_pid);
    d = opendir(path);
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d))) {
        ssize_t len;

        snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)daemon_pid, e->d_name);
        len = readlink(path, target, sizeof(target) - 1);
        if (len > 0) {
            target[len] = '\0';
            n += strstr(target, "memfd:randd-bytes") != NULL;
        }
    }
    closedir(d);
    return n;
}

/* randd closes its memfd just after the send that passes it, so a client can hold the reply
 * an instant before that close (on another serving loop, much more than an instant). */
static void wait_no_arena_fds(const char *what)
{
    for (double end = seconds_now() + WAIT_SECONDS; daemon_arena_fds() > 0; usleep(20000))
        ck_assert_msg(seconds_now() < end, "randd still holds a memfd after %d s: %s",
                      WAIT_SECONDS, what);
}

static size_t zero_bytes(const uint8_t *p, size_t n)
{
    size_t zeros = 0;

    for (size_t i = 0; i < n; i++)
        zeros += p[i] == 0;
    return zeros;
}

/* One memfd per connection, sealed so that no one can shrink or grow it or change the seals,
 * its slots filled in turn with fresh bytes; the limits of the op answered like BYTES's. */
START_TEST(bytes_memfd_hands_over_one_sealed_memfd_filled_slot_by_slot)
{
    uint32_t offset[3];
    uint8_t body[4] = { 0 };
    const uint8_t *map;
    struct stat st;
    int fd, memfd, again;

    start_daemon_with("", NULL);
    fd = connect_raw();
    send_bytes_memfd(fd, RANDD_MEMFD_SLOT_BYTES);
    ck_assert_int_eq(read_memfd_reply(fd, RANDD_MEMFD_SLOT_BYTES, &offset[0], &memfd),
                     RANDD_OK);
    ck_assert_msg(memfd >= 0, "the first BYTES_MEMFD reply came without the memfd");
    ck_assert_int_eq(fcntl(memfd, F_GET_SEALS),
                     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    ck_assert_int_eq(fstat(memfd, &st), 0);
    ck_assert_int_eq(st.st_size, RANDD_MEMFD_ARENA_BYTES);
    ck_assert_int_lt(ftruncate(memfd, 4096), 0);            /* sealed: SIGBUS is not ours */
    map = mmap(NULL, RANDD_MEMFD_ARENA_BYTES, PROT_READ, MAP_SHARED, memfd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    /* Random: about 1 in 256 bytes is zero, never a page of them. */
    ck_assert_uint_lt(zero_bytes(map + offset[0], RANDD_MEMFD_SLOT_BYTES),
                      RANDD_MEMFD_SLOT_BYTES / 128);

    send_bytes_memfd(fd, 1000);
    ck_assert_int_eq(read_memfd_reply(fd, 1000, &offset[1], &again), RANDD_OK);
    ck_assert_msg(again < 0, "a second memfd came on the same connection");
    ck_assert_msg(offset[1] != offset[0], "the next reply overwrote the slot just handed out");
    ck_assert_uint_lt(zero_bytes(map + offset[1], 1000), 50);
    send_bytes_memfd(fd, 32);
    ck_assert_int_eq(read_memfd_reply(fd, 32, &offset[2], &again), RANDD_OK);
    ck_assert_uint_eq(offset[2], offset[0]);                   /* two slots, in turn */
    ck_assert_msg(memcmp(map + offset[2], map + offset[1], 32) != 0, "the same bytes twice");

    send_bytes_memfd(fd, 0);
    check_status(fd, RANDD_INVALID_ARGUMENT, "BYTES_MEMFD n = 0");
    send_bytes_memfd(fd, RANDD_MEMFD_SLOT_BYTES + 1);
    check_status(fd, RANDD_TOO_LARGE, "BYTES_MEMFD n over a slot");
    send_frame(fd, 1, RANDD_OP_BYTES_MEMFD, 0, 3, body, 3);
    check_status(fd, RANDD_MALFORMED, "BYTES_MEMFD body of 3 bytes");
    check_still_usable(fd, "BYTES_MEMFD errors");
    munmap((void *)map, RANDD_MEMFD_ARENA_BYTES);
    close(memfd);
    close(fd);
}
END_TEST

/* Bytes of the daemon's one arena that are not zero, as the daemon's own mapping holds them. */
static size_t daemon_arena_nonzero(void)
{
    char path[64], line[512];
    unsigned long start = 0, end = 0;
    uint8_t *seen = malloc(RANDD_MEMFD_ARENA_BYTES);
    size_t zeros;
    int mem;
    FILE *f;

    ck_assert_ptr_nonnull(seen);
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)daemon_pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "memfd:randd-bytes"))
            ck_assert_int_eq(sscanf(line, "%lx-%lx", &start, &end), 2);
    fclose(f);
    ck_assert_uint_eq(end - start, RANDD_MEMFD_ARENA_BYTES);
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)daemon_pid);
    mem = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(mem, 0);
    ck_assert_int_eq(pread(mem, seen, RANDD_MEMFD_ARENA_BYTES, (off_t)start),
                     RANDD_MEMFD_ARENA_BYTES);
    close(mem);
    zeros = zero_bytes(seen, RANDD_MEMFD_ARENA_BYTES);
    free(seen);
    return RANDD_MEMFD_ARENA_BYTES - zeros;
}

/* The bytes a librandd caller took are wiped from the shared pages at once: read through the
 * daemon's own mapping (/proc/PID/mem). When the connection goes, the daemon unmaps the arena
 * and frees its pages, even those of a client that keeps the memfd. */
START_TEST(memfd_pages_are_wiped_after_use_and_unmapped_when_the_client_goes)
{
    uint8_t *buf = malloc(3 * RANDD_MEMFD_SLOT_BYTES), *seen = malloc(RANDD_MEMFD_ARENA_BYTES);
    uint32_t offset;
    randd_handle *h;
    struct stat st;
    size_t left;
    int fd, memfd;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_bytes(h, buf, 3 * RANDD_MEMFD_SLOT_BYTES), 0);
    ck_assert_uint_lt(zero_bytes(buf, 3 * RANDD_MEMFD_SLOT_BYTES), RANDD_MEMFD_SLOT_BYTES / 64);
    ck_assert_int_eq(daemon_arena_mappings(), 1);
    wait_no_arena_fds("closed once the client had its copy");
    left = daemon_arena_nonzero();
    ck_assert_msg(left == 0, "%zu bytes handed to the caller are still in the shared pages",
                  left);
    randd_close(h);

    fd = connect_raw();                        /* a client that keeps its memfd */
    send_bytes_memfd(fd, RANDD_MEMFD_SLOT_BYTES);
    ck_assert_int_eq(read_memfd_reply(fd, RANDD_MEMFD_SLOT_BYTES, &offset, &memfd), RANDD_OK);
    ck_assert_int_ge(memfd, 0);
    close(fd);
    daemon_fd_count();                          /* waits until the daemon closed both */
    ck_assert_int_eq(daemon_arena_mappings(), 0);
    ck_assert_int_eq(fstat(memfd, &st), 0);
    ck_assert_msg(st.st_blocks == 0, "the kept memfd still holds %lld KiB of pages",
                  (long long)st.st_blocks / 2);
    ck_assert_int_eq(pread(memfd, seen, RANDD_MEMFD_SLOT_BYTES, offset),
                     RANDD_MEMFD_SLOT_BYTES);
    ck_assert_uint_eq(zero_bytes(seen, RANDD_MEMFD_SLOT_BYTES), RANDD_MEMFD_SLOT_BYTES);
    close(memfd);
    free(buf);
    free(seen);
}
END_TEST

/* --- librandd's read-ahead ------------------------------------------------------------ */

#define BLOCK (256u << 10)

/* Waits until the daemon has read at least n BYTES_MEMFD requests; returns how many. */
static unsigned long long memfd_requests(unsigned long long n)
{
    char *json = wait_count("\"bytes_memfd\":", n, "BYTES_MEMFD requests");
    unsigned long long got = json_number(json, "\"bytes_memfd\":");

    free(json);
    return got;
}

/* Two large calls in a row: the handle then asks for a block per slot ahead, and the next
 * call is answered from them (no request of its own). The blocks never repeat, and any other
 * call on the handle wipes what was read ahead, unused. */
START_TEST(a_reader_of_large_blocks_gets_them_read_ahead_and_another_call_wipes_them)
{
    uint8_t *a = malloc(BLOCK), *b = malloc(BLOCK), *c = malloc(BLOCK), *d = malloc(BLOCK);
    randd_handle *h;
    char *json;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_bytes(h, a, BLOCK), 0);
    ck_assert_int_eq(randd_bytes(h, b, BLOCK), 0);
    ck_assert_uint_eq(memfd_requests(4), 4);            /* 2 calls, 2 blocks ahead */
    ck_assert_msg(daemon_arena_nonzero() > 0, "nothing was read ahead into the arena");
    ck_assert_int_eq(randd_bytes(h, c, BLOCK), 0);
    ck_assert_uint_eq(memfd_requests(5), 5);            /* no request for c; 1 more ahead */
    ck_assert(memcmp(a, b, BLOCK) != 0 && memcmp(b, c, BLOCK) != 0 && memcmp(a, c, BLOCK) != 0);
    ck_assert_int_gt(randd_status(h, &json), 0);        /* reads the replies ahead first */
    free(json);
    ck_assert_uint_eq(daemon_arena_nonzero(), 0);
    ck_assert_int_eq(randd_bytes(h, d, BLOCK), 0);      /* one call: nothing ahead */
    ck_assert_uint_eq(memfd_requests(6), 6);
    ck_assert(memcmp(c, d, BLOCK) != 0);
    ck_assert_uint_eq(daemon_arena_nonzero(), 0);
    randd_close(h);
    free(a), free(b), free(c), free(d);
}
END_TEST

/* Blocks read ahead before the VM generation moved (a snapshot restored, a clone) could be
 * in both clones: the next call drops them and asks afresh. */
START_TEST(blocks_read_ahead_before_a_new_vm_generation_are_never_used)
{
    uint8_t *buf = malloc(BLOCK);
    char path[sizeof(sock) + 16];
    uint64_t word;
    randd_handle *h;
    int fd;

    start_daemon_with("", NULL);
    snprintf(path, sizeof(path), "%s.generation", sock);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "SKIP blocks_read_ahead_before_a_new_vm_generation...: %s is not "
                        "writable here (%s); CI runs as root\n", path, strerror(errno));
        free(buf);
        return;
    }
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_bytes(h, buf, BLOCK), 0);
    ck_assert_int_eq(randd_bytes(h, buf, BLOCK), 0);
    ck_assert_uint_eq(memfd_requests(4), 4);            /* 2 calls, 2 blocks ahead */
    ck_assert_int_eq(pread(fd, &word, sizeof(word), 0), sizeof(word));
    word++;                                             /* what randd does on a new VM */
    ck_assert_int_eq(pwrite(fd, &word, sizeof(word), 0), sizeof(word));
    close(fd);
    ck_assert_int_eq(randd_bytes(h, buf, BLOCK), 0);
    ck_assert_uint_eq(memfd_requests(7), 7);            /* both dropped, 1 fresh, 2 ahead */
    randd_close(h);
    free(buf);
}
END_TEST

/* The generation word is trusted only when no one but root or randd could have written it:
 * with randd's own file made writable by others, the handle reads nothing ahead (it could not
 * tell a clone) and randd_message() says why. */
START_TEST(a_generation_word_others_could_write_is_not_used_and_the_handle_says_why)
{
    uint8_t *buf = malloc(BLOCK);
    char path[sizeof(sock) + 16];
    randd_handle *h;

    start_daemon_with("", NULL);
    snprintf(path, sizeof(path), "%s.generation", sock);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_bytes(h, buf, 32), 0);       /* served: the word is published */
    ck_assert_msg(chmod(path, 0666) == 0, "chmod %s: %s", path, strerror(errno));
    ck_assert_int_eq(randd_bytes(h, buf, BLOCK), 0);
    ck_assert_int_eq(randd_bytes(h, buf, BLOCK), 0);    /* the second in a row would read ahead */
    ck_assert_msg(strstr(randd_message(h), path) &&
                  strstr(randd_message(h), "writable by others (mode 0666)"),
                  "randd_message: \"%s\"", randd_message(h));
    ck_assert_int_eq(randd_bytes(h, buf, BLOCK), 0);
    ck_assert_uint_eq(memfd_requests(3), 3);            /* three calls, nothing ahead */
    randd_close(h);
    free(buf);
}
END_TEST

/* A child forked with blocks read ahead never sees them: the arena is not inherited, and
 * its handle reconnects. */
START_TEST(a_forked_child_never_gets_the_parents_blocks_read_ahead)
{
    uint8_t *mine = malloc(BLOCK), *its = malloc(BLOCK);
    randd_handle *h;
    int pipefd[2], status;
    pid_t child;

    start_daemon_with("", NULL);
    ck_assert_int_eq(randd_open(&h, sock), 0);
    ck_assert_int_eq(randd_bytes(h, mine, BLOCK), 0);
    ck_assert_int_eq(randd_bytes(h, mine, BLOCK), 0);
    ck_assert_uint_eq(memfd_requests(4), 4);
    ck_assert_int_eq(pipe(pipefd), 0);
    child = fork();
    if (child == 0) {
        bool ok = randd_bytes(h, its, BLOCK) == 0;

        _exit(ok && write(pipefd[1], its, BLOCK) == (ssize_t)BLOCK ? 0 : 1);
    }
    close(pipefd[1]);
    ck_assert_int_eq(randd_bytes(h, mine, BLOCK), 0);
    for (size_t got = 0; got < BLOCK;) {
        ssize_t n = read(pipefd[0], its + got, BLOCK - got);

        ck_assert_msg(n > 0, "the child sent %zu of %u bytes", got, BLOCK);
        got += (size_t)n;
    }
    close(pipefd[0]);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's call failed");
    ck_assert_msg(memcmp(mine, its, BLOCK) != 0, "parent and child got the same bytes");
    randd_close(h);
    free(mine), free(its);
}
END_TEST

/* A BYTES_MEMFD request on fd answered BUSY saying why; BYTES still serves it. */
static void check_memfd_busy(int fd, const char *why)
{
    char msg[128] = "";

    send_bytes_memfd(fd, 64);
    ck_assert_int_eq(read_reply(fd, msg, sizeof(msg) - 1, NULL), RANDD_BUSY);
    ck_assert_msg(strstr(msg, why), "BUSY said \"%s\", not \"%s\"", msg, why);
    check_still_usable(fd, "a BUSY BYTES_MEMFD");
    close(fd);
}

/* Clients that take arenas and never close a descriptor: one uid gets MEMFD_ARENA_PER_UID
 * (then BUSY), and MEMFD_ARENA_MAX are alive at most over every uid (then BUSY for anyone);
 * BYTES still serves. The daemon holds no memfd descriptor, and once the connections close
 * its descriptors and memory are back where they were, although the clients still hold
 * every memfd. As root it fills the cap with four uids; otherwise only its own share. */
START_TEST(memfd_hoarders_hit_the_arena_caps_and_leave_nothing_behind)
{
    enum { UIDS = MEMFD_ARENA_MAX / MEMFD_ARENA_PER_UID };
    static const uid_t uids[UIDS] = { 0, 65531, 65532, 65533 };
    int socks[MEMFD_ARENA_MAX], memfds[MEMFD_ARENA_MAX], extra, baseline, fresh, hoard = 0;
    bool root = geteuid() == 0;
    uint32_t offset;
    long rss;

    _Static_assert(UIDS * MEMFD_ARENA_PER_UID == MEMFD_ARENA_MAX, "four uids fill the cap");
    start_daemon_with("", NULL);
    baseline = daemon_fd_count();
    rss = daemon_rss_kib();
    for (int u = 0; u < (root ? UIDS : 1); u++) {
        for (int i = 0; i < MEMFD_ARENA_PER_UID; i++, hoard++) {
            socks[hoard] = root ? connect_as(uids[u]) : connect_raw();
            send_bytes_memfd(socks[hoard], RANDD_MEMFD_SLOT_BYTES);
            ck_assert_int_eq(read_memfd_reply(socks[hoard], RANDD_MEMFD_SLOT_BYTES, &offset,
                                              &memfds[hoard]), RANDD_OK);
            ck_assert_int_ge(memfds[hoard], 0);
        }
        if (u == 0)                           /* our uid's share is taken, the cap is not */
            check_memfd_busy(connect_raw(), "BYTES_MEMFD arenas already");
    }
    if (root) {
        check_memfd_busy(connect_as_nobody(), "every BYTES_MEMFD arena is in use");
    } else {
        fprintf(stderr, "SKIP memfd_hoarders...: the cap over every uid needs root to act "
                        "as four uids\n");
    }
    free(wait_count("\"BUSY\":", 1, "the BUSY reply counted"));
    wait_no_arena_fds("arenas handed out");
    ck_assert_int_eq(daemon_arena_mappings(), hoard);
    for (int i = 0; i < hoard; i++)
        close(socks[i]);
    ck_assert_int_eq(daemon_fd_count(), baseline);
    ck_assert_int_eq(daemon_arena_mappings(), 0);
    check_rss_growth(rss, "hoarded arenas after their connections closed");
    for (int i = 0; i < hoard; i++) {
        struct stat st;

        ck_assert_int_eq(fstat(memfds[i], &st), 0);
        ck_assert_msg(st.st_blocks == 0, "hoarded memfd %d holds %lld KiB", i,
                      (long long)st.st_blocks / 2);
    }
    extra = connect_raw();                    /* the caps count live arenas only */
    send_bytes_memfd(extra, 64);
    ck_assert_int_eq(read_memfd_reply(extra, 64, &offset, &fresh), RANDD_OK);
    ck_assert_int_ge(fresh, 0);
    close(fresh);
    close(extra);
    for (int i = 0; i < hoard; i++)
        close(memfds[i]);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("BYTES_MEMFD and read-ahead");
    TCase *tc = tcase_create("randd over its socket");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);          /* above the waits' WAIT_SECONDS */
    tcase_add_test(tc, bytes_memfd_hands_over_one_sealed_memfd_filled_slot_by_slot);
    tcase_add_test(tc, memfd_pages_are_wiped_after_use_and_unmapped_when_the_client_goes);
    tcase_add_test(tc, a_reader_of_large_blocks_gets_them_read_ahead_and_another_call_wipes_them);
    tcase_add_test(tc, blocks_read_ahead_before_a_new_vm_generation_are_never_used);
    tcase_add_test(tc, a_generation_word_others_could_write_is_not_used_and_the_handle_says_why);
    tcase_add_test(tc, a_forked_child_never_gets_the_parents_blocks_read_ahead);
    tcase_add_test(tc, memfd_hoarders_hit_the_arena_caps_and_leave_nothing_behind);
    suite_add_tcase(s, tc);
    return s;
}
