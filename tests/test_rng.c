/* The in-process generator (lib/rng.c) against a fake daemon in a thread of this test: what
 * it asks the daemon for, when it reseeds, the getrandom fallback, fork and thread safety,
 * and that bytes handed out are gone from its memory. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "generation.h"
#include "process_token.h"
#include "protocol.h"
#include "rng_internal.h"
#include "runner.h"

/* --- a fake randd: answers BYTES with a pattern, or NOT_READY ----------------------------- */

struct fake_daemon {
    char dir[64];                      /* private (0700): librandd trusts a word file there */
    char path[108];
    int listen_fd;
    pthread_t thread;
    uint8_t pattern;                   /* reply k's byte i is pattern ^ i ^ k: fresh seeds */
    int not_ready;
    int requests;                      /* BYTES requests answered */
    uint32_t last_n;
    pthread_mutex_t lock;
};

static int read_all(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (uint8_t *)buf + got, n - got);

        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void serve_one(struct fake_daemon *f, int fd)
{
    uint8_t head[RANDD_HEADER_BYTES], body[4], reply[RANDD_HEADER_BYTES + 1024];
    struct randd_header h;

    while (read_all(fd, head, sizeof(head)) == 0) {
        randd_header_decode(head, &h);
        if (h.code != RANDD_OP_BYTES || h.length != 4 || read_all(fd, body, 4) < 0)
            return;
        uint32_t n = (uint32_t)body[0] << 24 | (uint32_t)body[1] << 16 | body[2] << 8 | body[3];
        struct randd_header out = { RANDD_PROTOCOL_VERSION, RANDD_OK, 0, n };

        pthread_mutex_lock(&f->lock);
        if (f->not_ready) {
            static const char why[] = "not ready";

            out.code = RANDD_NOT_READY;
            out.length = sizeof(why) - 1;
            memcpy(reply + RANDD_HEADER_BYTES, why, out.length);
        } else {
            ck_assert_uint_le(n, 1024);
            for (uint32_t i = 0; i < n; i++)
                reply[RANDD_HEADER_BYTES + i] = (uint8_t)(f->pattern ^ i ^ f->requests);
            f->requests++;
            f->last_n = n;
        }
        pthread_mutex_unlock(&f->lock);
        randd_header_encode(reply, &out);
        if (write(fd, reply, RANDD_HEADER_BYTES + out.length) < 0)
            return;
    }
}

static void *fake_daemon_run(void *arg)
{
    struct fake_daemon *f = arg;
    int fd;

    while ((fd = accept(f->listen_fd, NULL, NULL)) >= 0) {
        serve_one(f, fd);
        close(fd);
    }
    return NULL;
}

static void fake_daemon_start(struct fake_daemon *f, uint8_t pattern)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };

    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->lock, NULL);
    f->pattern = pattern;

    strcpy(f->dir, "/tmp/randd-test-rng-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/randd.sock", f->dir);
    strcpy(addr.sun_path, f->path);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(f->listen_fd, 0);
    ck_assert_int_eq(bind(f->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    ck_assert_int_eq(listen(f->listen_fd, 64), 0);
    ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_daemon_run, f), 0);
}

static int fake_daemon_requests(struct fake_daemon *f)
{
    int n;

    pthread_mutex_lock(&f->lock);
    n = f->requests;
    pthread_mutex_unlock(&f->lock);
    return n;
}

static void fake_daemon_stop(struct fake_daemon *f)
{
    shutdown(f->listen_fd, SHUT_RDWR);
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
    unlink(f->path);
    rmdir(f->dir);
}

static randd_rng *new_rng(const char *socket, uint64_t reseed_bytes, unsigned reseed_seconds)
{
    struct randd_rng_options opt = { socket, reseed_bytes, reseed_seconds, 0 };
    randd_rng *rng;
    int rc = randd_rng_new(&rng, &opt);

    ck_assert_msg(rc == 0, "randd_rng_new: %s", randd_strerror(rc));
    return rng;
}

/* A generator forced onto one cipher through RANDD_RNG_CIPHER; NULL means AES was asked for
 * on a CPU without it, which randd_rng_new must refuse (the caller skips then). */
static randd_rng *new_rng_running(const char *cipher, const char *socket)
{
    struct randd_rng_options opt = { socket, 0, 0, 0 };
    randd_rng *rng;
    int rc;

    setenv("RANDD_RNG_CIPHER", cipher, 1);
    rc = randd_rng_new(&rng, &opt);
    unsetenv("RANDD_RNG_CIPHER");
    if (strcmp(cipher, "aes256ctr") == 0 && !randd_crypto_has_hardware_aes()) {
        ck_assert_msg(rc == -ENOTSUP, "AES without hardware AES: want -ENOTSUP, got %d", rc);
        return NULL;
    }
    ck_assert_msg(rc == 0, "randd_rng_new (%s): %s", cipher, randd_strerror(rc));
    ck_assert_str_eq(randd_rng_cipher(rng), cipher);
    return rng;
}

/* --- seeding -------------------------------------------------------------------------------- */

START_TEST(seeds_with_64_bytes_from_the_daemon)
{
    struct fake_daemon f;
    randd_rng *rng;

    fake_daemon_start(&f, 0x11);
    rng = new_rng(f.path, 0, 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 1);
    ck_assert_uint_eq(f.last_n, RNG_SEED_BYTES);
    ck_assert_int_eq(randd_rng_seed_source(rng), RANDD_RNG_FROM_DAEMON);
    randd_rng_free(rng);
    fake_daemon_stop(&f);
}
END_TEST

/* The daemon's seed alone never fixes the output: getrandom() goes into every seed, so two
 * generators seeded with the same bytes (a fake daemon answering 0x11 every time) differ. */
START_TEST(the_same_daemon_seed_never_gives_the_same_output)
{
    struct fake_daemon f1, f2;
    uint8_t a[100], b[100];
    randd_rng *r1, *r2;

    fake_daemon_start(&f1, 0x11);
    fake_daemon_start(&f2, 0x11);
    r1 = new_rng(f1.path, 0, 0);
    r2 = new_rng(f2.path, 0, 0);
    ck_assert_int_eq(randd_rng_seed_source(r1), RANDD_RNG_FROM_DAEMON);
    ck_assert_int_eq(randd_rng_bytes(r1, a, sizeof(a)), 0);
    ck_assert_int_eq(randd_rng_bytes(r2, b, sizeof(b)), 0);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0,
                  "two generators seeded with the same daemon bytes gave the same output");
    randd_rng_free(r1);
    randd_rng_free(r2);
    fake_daemon_stop(&f1);
    fake_daemon_stop(&f2);
}
END_TEST

START_TEST(without_a_daemon_it_seeds_from_getrandom_and_says_so)
{
    struct randd_rng_options strict = { "/nonexistent/randd.sock", 0, 0, RANDD_RNG_REQUIRE_DAEMON };
    randd_rng *rng;
    uint8_t buf[64] = { 0 }, zero[64] = { 0 };

    rng = new_rng("/nonexistent/randd.sock", 0, 0);
    ck_assert_int_eq(randd_rng_seed_source(rng), RANDD_RNG_FROM_GETRANDOM);
    ck_assert_int_eq(randd_rng_bytes(rng, buf, sizeof(buf)), 0);
    ck_assert_msg(memcmp(buf, zero, sizeof(buf)) != 0, "64 zero bytes");
    randd_rng_free(rng);

    rng = (randd_rng *)1;
    ck_assert_int_eq(randd_rng_new(&rng, &strict), -ENOENT);
    ck_assert_ptr_null(rng);
}
END_TEST

START_TEST(a_daemon_that_is_not_ready_means_getrandom_not_waiting)
{
    struct fake_daemon f;
    randd_rng *rng;

    fake_daemon_start(&f, 0x11);
    f.not_ready = 1;
    rng = new_rng(f.path, 0, 0);
    ck_assert_int_eq(randd_rng_seed_source(rng), RANDD_RNG_FROM_GETRANDOM);
    /* Once the daemon is ready, the next reseed comes from it again. */
    pthread_mutex_lock(&f.lock);
    f.not_ready = 0;
    pthread_mutex_unlock(&f.lock);
    ck_assert_int_eq(randd_rng_reseed(rng), 0);
    ck_assert_int_eq(randd_rng_seed_source(rng), RANDD_RNG_FROM_DAEMON);
    randd_rng_free(rng);
    fake_daemon_stop(&f);
}
END_TEST

/* --- reseeding -------------------------------------------------------------------------------- */

START_TEST(reseeds_after_reseed_bytes)
{
    enum { LIMIT = 4096, DRAWN = 12800 };
    struct fake_daemon f;
    randd_rng *rng;
    uint8_t buf[32];
    int reseeds;

    fake_daemon_start(&f, 0x33);
    rng = new_rng(f.path, LIMIT, 0);
    for (int i = 0; i < DRAWN / 32; i++)
        ck_assert_int_eq(randd_rng_bytes(rng, buf, sizeof(buf)), 0);
    /* A reseed waits for the next batch boundary: between LIMIT and LIMIT + a batch apart. */
    reseeds = fake_daemon_requests(&f) - 1;
    ck_assert_msg(reseeds >= DRAWN / (LIMIT + RNG_BATCH) && reseeds <= DRAWN / LIMIT,
                  "%d reseeds for %d bytes at one per %d", reseeds, DRAWN, LIMIT);

    /* A large request counts too. */
    uint8_t *big = malloc(5 * LIMIT);
    int before = fake_daemon_requests(&f);

    ck_assert_int_eq(randd_rng_bytes(rng, big, 5 * LIMIT), 0);
    ck_assert_int_eq(randd_rng_bytes(rng, big, 5 * LIMIT), 0);
    ck_assert_int_ge(fake_daemon_requests(&f) - before, 1);
    free(big);
    randd_rng_free(rng);
    fake_daemon_stop(&f);
}
END_TEST

START_TEST(reseeds_after_reseed_seconds)
{
    struct fake_daemon f;
    randd_rng *rng;
    uint8_t buf[RNG_BATCH];

    fake_daemon_start(&f, 0x44);
    rng = new_rng(f.path, 0, 1);
    ck_assert_int_eq(randd_rng_bytes(rng, buf, sizeof(buf)), 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 1);
    usleep(1100 * 1000);                 /* past reseed_seconds: the behaviour under test is time */
    ck_assert_int_eq(randd_rng_bytes(rng, buf, sizeof(buf)), 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 2);
    randd_rng_free(rng);
    fake_daemon_stop(&f);
}
END_TEST

/* --- fork and threads --------------------------------------------------------------------- */

/* qemu-user's madvise(): MADV_WIPEONFORK accepted and ignored, while ignore_wipeonfork is
 * set. librandd.a is linked into this program, so its calls come here; every other advice,
 * and this one otherwise, goes to the kernel. */
static bool ignore_wipeonfork;

int madvise(void *addr, size_t len, int advice)
{
    if (advice == MADV_WIPEONFORK && ignore_wipeonfork)
        return 0;
    return (int)syscall(SYS_madvise, addr, len, advice);
}

enum child_kind { FORKED, RAW_CLONE };

/* After fork() (or a raw clone(), which runs no atfork handler), parent and child draw the
 * same amount from "the same" generator; without fork protection both would print the same
 * bytes. The child must reseed from the daemon. */
static void fork_and_compare(randd_rng *rng, struct fake_daemon *f, enum child_kind kind)
{
    uint8_t mine[32], childs[32];
    int fds[2], status, before = fake_daemon_requests(f);
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    pid = kind == FORKED ? fork() : (pid_t)runner_raw_clone();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        uint8_t out[32];
        int ok = (rng ? randd_rng_bytes(rng, out, sizeof(out)) : randd_random(out, sizeof(out))) == 0;

        ok = ok && write(fds[1], out, sizeof(out)) == (ssize_t)sizeof(out);
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    ck_assert_int_eq(rng ? randd_rng_bytes(rng, mine, sizeof(mine)) : randd_random(mine, sizeof(mine)), 0);
    ck_assert_int_eq(read_all(fds[0], childs, sizeof(childs)), 0);
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(status, 0);
    ck_assert_msg(memcmp(mine, childs, sizeof(mine)) != 0, "parent and child (%s) drew the same "
                  "bytes", kind == FORKED ? "fork()" : "a raw clone()");
    ck_assert_msg(fake_daemon_requests(f) - before == 1, "child reseeded %d times, want 1",
                  fake_daemon_requests(f) - before);
}

/* Every kind of child, from a generator with a batch in hand and from randd_random()'s. */
static void children_never_share_output_with_their_parent(void)
{
    struct fake_daemon f;
    randd_rng *rng;
    uint8_t warm[16];

    fake_daemon_start(&f, 0x55);
    rng = new_rng(f.path, 0, 0);
    ck_assert_int_eq(randd_rng_bytes(rng, warm, sizeof(warm)), 0);   /* a batch in hand */
    fork_and_compare(rng, &f, FORKED);
    fork_and_compare(rng, &f, RAW_CLONE);
    randd_rng_free(rng);

    /* The per-thread generator too. */
    setenv("RANDD_SOCKET", f.path, 1);
    ck_assert_int_eq(randd_random(warm, sizeof(warm)), 0);
    fork_and_compare(NULL, &f, FORKED);
    fork_and_compare(NULL, &f, RAW_CLONE);
    unsetenv("RANDD_SOCKET");
    fake_daemon_stop(&f);
}

/* randd restarted: the new randd replaced the word file and retired the old word. The
 * generator reseeds, maps the new word, and from then on follows that one. */
START_TEST(a_retired_vm_generation_word_is_replaced_by_the_new_one)
{
    char path[200], why[300];
    struct fake_daemon f;
    struct randd_generation first, second;
    uint8_t out[32];
    randd_rng *rng;

    fake_daemon_start(&f, 0x31);
    ck_assert_int_eq(randd_generation_path(f.path, path, sizeof(path)), 0);
    ck_assert_msg(randd_generation_publish(&first, path, why, sizeof(why)) == 0, "%s", why);
    rng = new_rng(f.path, 0, 0);
    ck_assert_ptr_nonnull(rng->vm_word);
    ck_assert_msg(randd_generation_publish(&second, path, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_eq(randd_rng_bytes(rng, out, sizeof(out)), 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 2);          /* the retired word moved */
    randd_generation_bump(second.word);
    ck_assert_int_eq(randd_rng_bytes(rng, out, sizeof(out)), 0);
    ck_assert_msg(fake_daemon_requests(&f) == 3, "a bump of the new word went unseen");
    ck_assert_uint_eq(rng->secret->vm_generation, 1);
    randd_rng_free(rng);
    ck_assert_int_eq(randd_generation_withdraw(&first), 0);  /* its file is gone already */
    ck_assert_int_eq(randd_generation_withdraw(&second), 0);
    fake_daemon_stop(&f);
}
END_TEST

/* A new VM generation (randd bumps the word it publishes beside its socket when vmgenid says
 * a snapshot was restored or cloned): the next call reseeds from the daemon first, even one
 * the current batch could serve; without a bump, calls never touch the daemon. */
START_TEST(a_new_vm_generation_reseeds_before_the_next_output)
{
    char path[200];
    struct fake_daemon f;
    static uint8_t big[8192];
    struct randd_generation published;
    uint64_t *word;
    uint8_t out[32];
    char why[300];
    randd_rng *rng;

    fake_daemon_start(&f, 0x21);
    ck_assert_int_eq(randd_generation_path(f.path, path, sizeof(path)), 0);
    ck_assert_msg(randd_generation_publish(&published, path, why, sizeof(why)) == 0, "%s", why);
    word = published.word;
    rng = new_rng(f.path, 0, 0);
    ck_assert_int_eq(randd_rng_bytes(rng, out, sizeof(out)), 0);
    ck_assert_int_eq(randd_rng_bytes(rng, out, sizeof(out)), 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 1);
    randd_generation_bump(word);
    ck_assert_int_eq(randd_rng_bytes(rng, out, sizeof(out)), 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 2);
    ck_assert_uint_eq(rng->secret->vm_generation, 1);
    ck_assert_int_eq(randd_rng_bytes(rng, big, sizeof(big)), 0);   /* the direct path too */
    randd_generation_bump(word);
    ck_assert_int_eq(randd_rng_bytes(rng, out, 8), 0);
    ck_assert_int_eq(fake_daemon_requests(&f), 3);
    randd_rng_free(rng);
    ck_assert_int_eq(randd_generation_withdraw(&published), 0);
    fake_daemon_stop(&f);
}
END_TEST

START_TEST(a_child_never_shares_output_with_its_parent)
{
    children_never_share_output_with_their_parent();
}
END_TEST

/* Under qemu-user the advice is accepted and ignored: the secret page is not wiped in a child
 * made by a raw clone(), which no atfork handler sees either. librandd must notice (smaps
 * does not show the page wiped) and tell the child by its pid. */
START_TEST(a_child_never_shares_output_with_its_parent_where_wipeonfork_is_ignored)
{
    if (randd_process_check() != RANDD_PROCESS_UNDECIDED) {
        printf("SKIP a_child_never_shares_output..._where_wipeonfork_is_ignored: librandd "
               "already chose how to tell a child in this process (CK_FORK=no)\n");
        return;
    }
    ignore_wipeonfork = true;
    children_never_share_output_with_their_parent();
    ck_assert_int_eq(randd_process_check(), RANDD_PROCESS_BY_PID);
}
END_TEST

/* Where the kernel wipes a page in a child (smaps shows "wf" among its VmFlags), telling a
 * child from its parent is a load, not a getpid() a call. Under qemu-user (check-cross sets
 * RANDD_TEST_EMULATOR), which ignores the advice, it is the getpid(). */
START_TEST(a_child_is_told_by_a_wiped_page_where_the_kernel_wipes_it)
{
    const char *emulator = getenv("RANDD_TEST_EMULATOR");
    enum randd_process_check want = emulator && *emulator ? RANDD_PROCESS_BY_PID
                                                          : RANDD_PROCESS_BY_WIPED_PAGE;

    if (access("/proc/self/smaps", R_OK) != 0) {
        printf("SKIP a_child_is_told_by_a_wiped_page...: /proc/self/smaps: %s\n",
               strerror(errno));
        return;
    }
    ck_assert_uint_ne(randd_process_token(), 0);
    ck_assert_uint_eq(randd_process_token(), randd_process_token());
    ck_assert_msg(randd_process_check() == want, "told by %s, wanted %s%s",
                  randd_process_check() == RANDD_PROCESS_BY_PID ? "getpid()" : "a wiped page",
                  want == RANDD_PROCESS_BY_PID ? "getpid() under " : "a wiped page",
                  want == RANDD_PROCESS_BY_PID ? emulator : "");
}
END_TEST

enum { THREADS = 8, THREAD_DRAWS = 2000 };

struct thread_result {
    uint8_t first[32];
    int rc;
};

static void *draw_in_thread(void *arg)
{
    struct thread_result *res = arg;
    uint8_t buf[32];

    res->rc = randd_random(res->first, sizeof(res->first));
    for (int i = 0; i < THREAD_DRAWS && res->rc == 0; i++)
        res->rc = randd_random(buf, 1 + i % 32);
    return NULL;
}

START_TEST(each_thread_gets_its_own_generator)
{
    struct fake_daemon f;
    struct thread_result res[THREADS];
    pthread_t t[THREADS];

    fake_daemon_start(&f, 0x66);
    setenv("RANDD_SOCKET", f.path, 1);
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, draw_in_thread, &res[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    unsetenv("RANDD_SOCKET");
    for (int i = 0; i < THREADS; i++) {
        ck_assert_msg(res[i].rc == 0, "thread %d: %s", i, randd_strerror(res[i].rc));
        for (int j = 0; j < i; j++)
            ck_assert_msg(memcmp(res[i].first, res[j].first, 32) != 0,
                          "threads %d and %d drew the same bytes", i, j);
    }
    ck_assert_int_eq(fake_daemon_requests(&f), THREADS);
    fake_daemon_stop(&f);
}
END_TEST

/* --- fast key erasure ------------------------------------------------------------------------ */

static int contains(const void *hay, size_t hlen, const void *needle, size_t nlen)
{
    return memmem(hay, hlen, needle, nlen) != NULL;
}

static const char *const ciphers[] = { "chacha20", "aes256ctr" };

/* Under each cipher (_i indexes ciphers): the key moves on at every call, and neither the
 * bytes handed out nor the key that made them stay in the generator. */
START_TEST(bytes_handed_out_are_gone_from_its_memory)
{
    randd_rng *rng = new_rng_running(ciphers[_i], "/nonexistent/randd.sock");
    uint8_t small[24], key_before[RANDD_STREAM_KEY];
    uint8_t *big;

    if (!rng)
        return;
    big = malloc(1 << 16);
    memcpy(key_before, rng->secret->key, sizeof(key_before));
    ck_assert_int_eq(randd_rng_bytes(rng, small, 1), 0);         /* a refill: a new key */
    ck_assert_msg(memcmp(rng->secret->key, key_before, sizeof(key_before)) != 0,
                  "%s: the key did not change at a refill", ciphers[_i]);

    ck_assert_int_eq(randd_rng_bytes(rng, small, sizeof(small)), 0);
    ck_assert_msg(!contains(rng->secret, rng->secret_len, small, sizeof(small)),
                  "a small request's bytes are still in the generator");
    ck_assert_msg(!contains(rng->secret, rng->secret_len, small + 8, 8),
                  "part of a small request's bytes is still in the generator");

    memcpy(key_before, rng->secret->key, sizeof(key_before));
    ck_assert_int_eq(randd_rng_bytes(rng, big, 1 << 16), 0);
    ck_assert_msg(!contains(rng->secret, rng->secret_len, key_before, sizeof(key_before)),
                  "the key that made a large request's bytes is still there");
    ck_assert_msg(!contains(rng->secret, rng->secret_len, big + 1000, 16),
                  "a large request's bytes are in the generator");
    ck_assert_msg(memcmp(rng->secret->key, key_before, sizeof(key_before)) != 0,
                  "%s: the key did not change at a large request", ciphers[_i]);
    free(big);
    randd_rng_free(rng);
}
END_TEST

/* Known steps for key 00..1f, computed apart with `openssl enc -chacha20` and `openssl enc
 * -aes-256-ctr -K 0001..1f -iv 0` over zeros: each step's first 32 bytes become the next key
 * and the bytes after them are output, so a 4 KiB request is keystream bytes 32..4127, and
 * the small request after it comes from the next key's batch, bytes 32..63. */
static const struct known_steps {
    const char *cipher;
    const char *key2, *head, *tail, *key3, *small;   /* hex */
} known_steps[] = {
    { "chacha20", "39fd2b7dd9c5196a8dbd0377b8dc4a498a35d86fbcde6accb2cc7d4cd8ea2492",
      "2b23cce7a26023ab3f0eef693ac87f64", "884a1f05d04af099998ecacf673c3777",
      "0ab756b1bffab801632a21c42e6092aff72876f4a1a4b2ba06487fea9267e38d",
      "2d41a59c90e41a8e7a4dccaa1c46069983b1a333ce25719ec3437768ab57fa42" },
    { "aes256ctr", "f29000b62a499fd0a9f39a6add2e7780f05d76ae4ab99fe5a6f69b3148c2363d",
      "0ebcb5deb52c83bd08a8a935182c9199", "21cc98e5d32dd49c9ec1f278e2c7b86f",
      "166b2877842f585616323fba042dc3cfed0ee625e5e03a7c33bdfd7424792666",
      "9720e40516407d2c249a9b756a46f71a80de909711cfa30bcd151fce144c5d56" },
};

START_TEST(output_is_the_keystream_after_the_next_key)
{
    const struct known_steps *k = &known_steps[_i];
    randd_rng *rng = new_rng_running(k->cipher, "/nonexistent/randd.sock");
    uint8_t key2[32], key3[32], head[16], tail[16], small_want[32], small[32];
    uint8_t *big;

    if (!rng)
        return;                              /* no hardware AES: refused, as checked */
    big = malloc(4096);
    for (int i = 0; i < RANDD_STREAM_KEY; i++)
        rng->secret->key[i] = (uint8_t)i;
    unhex(k->key2, key2, 32);
    unhex(k->head, head, 16);
    unhex(k->tail, tail, 16);
    unhex(k->key3, key3, 32);
    unhex(k->small, small_want, 32);

    ck_assert_int_eq(randd_rng_bytes(rng, big, 4096), 0);
    ck_assert_mem_eq(big, head, 16);
    ck_assert_mem_eq(big + 4096 - 16, tail, 16);
    ck_assert_mem_eq(rng->secret->key, key2, 32);
    ck_assert_int_eq(randd_rng_bytes(rng, small, sizeof(small)), 0);
    ck_assert_mem_eq(small, small_want, 32);
    ck_assert_mem_eq(rng->secret->key, key3, 32);
    free(big);
    randd_rng_free(rng);
}
END_TEST

/* One seed, two ciphers, two different streams; and AES is the default exactly where the CPU
 * has it. */
START_TEST(the_cipher_is_aes_where_the_cpu_has_it_and_can_be_forced)
{
    struct fake_daemon f1, f2;
    randd_rng *dflt, *chacha, *aes;
    uint8_t a[100], b[100];

    unsetenv("RANDD_RNG_CIPHER");
    dflt = new_rng("/nonexistent/randd.sock", 0, 0);
    ck_assert_str_eq(randd_rng_cipher(dflt),
                     randd_crypto_has_hardware_aes() ? "aes256ctr" : "chacha20");
    randd_rng_free(dflt);

    fake_daemon_start(&f1, 0x33);
    fake_daemon_start(&f2, 0x33);
    chacha = new_rng_running("chacha20", f1.path);
    aes = new_rng_running("aes256ctr", f2.path);
    if (aes) {
        ck_assert_int_eq(randd_rng_bytes(chacha, a, sizeof(a)), 0);
        ck_assert_int_eq(randd_rng_bytes(aes, b, sizeof(b)), 0);
        ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "same seed, same stream under both");
        randd_rng_free(aes);
    }
    randd_rng_free(chacha);
    fake_daemon_stop(&f1);
    fake_daemon_stop(&f2);
}
END_TEST

/* A value we do not know is refused, not quietly replaced by the default. */
START_TEST(an_unknown_cipher_is_refused)
{
    static const char *const bad[] = { "aes", "ChaCha20", "aes256ctr ", "rc4" };
    randd_rng *rng;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rng = (randd_rng *)1;
        setenv("RANDD_RNG_CIPHER", bad[i], 1);
        int rc = randd_rng_new(&rng, NULL);

        unsetenv("RANDD_RNG_CIPHER");
        ck_assert_msg(rc == -EINVAL, "RANDD_RNG_CIPHER=\"%s\": want -EINVAL, got %d",
                      bad[i], rc);
        ck_assert_ptr_null(rng);
    }
}
END_TEST

/* Every size path gives bytes that look uniform: a chi-square over byte values. */
START_TEST(output_of_every_size_looks_uniform)
{
    static const size_t sizes[] = { 1, 31, 32, 991, 992, 993, 4095, 4096, 65536, 1 << 20 };
    randd_rng *rng = new_rng("/nonexistent/randd.sock", 0, 0);
    size_t total = 0, counts[256] = { 0 };
    uint8_t *buf = malloc(1 << 20);
    double chi = 0;

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (int rep = 0; rep < 3; rep++) {
            ck_assert_int_eq(randd_rng_bytes(rng, buf, sizes[k]), 0);
            for (size_t i = 0; i < sizes[k]; i++)
                counts[buf[i]]++;
            total += sizes[k];
        }
    }
    for (int v = 0; v < 256; v++) {
        double e = total / 256.0, d = counts[v] - e;

        chi += d * d / e;
    }
    /* 255 degrees of freedom: p = 1e-6 at about 361. */
    ck_assert_msg(chi < 361, "chi-square %.1f over %zu bytes", chi, total);
    free(buf);
    randd_rng_free(rng);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("rng");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, seeds_with_64_bytes_from_the_daemon);
    tcase_add_test(tc, the_same_daemon_seed_never_gives_the_same_output);
    tcase_add_test(tc, without_a_daemon_it_seeds_from_getrandom_and_says_so);
    tcase_add_test(tc, a_daemon_that_is_not_ready_means_getrandom_not_waiting);
    tcase_add_test(tc, reseeds_after_reseed_bytes);
    tcase_add_test(tc, reseeds_after_reseed_seconds);
    tcase_add_test(tc, a_new_vm_generation_reseeds_before_the_next_output);
    tcase_add_test(tc, a_retired_vm_generation_word_is_replaced_by_the_new_one);
    tcase_add_test(tc, a_child_never_shares_output_with_its_parent);
    tcase_add_test(tc, a_child_never_shares_output_with_its_parent_where_wipeonfork_is_ignored);
    tcase_add_test(tc, a_child_is_told_by_a_wiped_page_where_the_kernel_wipes_it);
    tcase_add_test(tc, each_thread_gets_its_own_generator);
    tcase_add_loop_test(tc, bytes_handed_out_are_gone_from_its_memory, 0, 2);
    tcase_add_loop_test(tc, output_is_the_keystream_after_the_next_key, 0,
                        sizeof(known_steps) / sizeof(known_steps[0]));
    tcase_add_test(tc, the_cipher_is_aes_where_the_cpu_has_it_and_can_be_forced);
    tcase_add_test(tc, an_unknown_cipher_is_refused);
    tcase_add_test(tc, output_of_every_size_looks_uniform);
    suite_add_tcase(s, tc);
    return s;
}
