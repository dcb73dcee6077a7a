/* The noise-source modes end to end (issue 28): build/randd with its real sources, driven by
 * raw protocol frames through the codec: a daemon without a noise source refuses the modes
 * and says why, full entropy from jitter alone and what STATUS counts for it, one noise
 * reseed per prediction-resistant request, NONBLOCK, a quarantined source, a client that
 * leaves while waiting, and the queue's fairness between two uids. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "randd.h"
#include "client_internal.h"
#include "harness.h"
#include "runner.h"

/* --- the modes ------------------------------------------------------------------------- */

#define FLAG_PR   RANDD_FLAG_PREDICTION_RESISTANT
#define FLAG_FULL RANDD_FLAG_FULL_ENTROPY
#define BLOCK_CREDIT 320                  /* 256 bits out, 64 of margin (daemon/noise.h) */
#define NOISE_HAMMERS 4                   /* root's connections: its share of the queue */

/* A number in STATUS's noise object (inside: "full_entropy" or "prediction_resistant", or
 * NULL for the object's own keys). */
static unsigned long long noise_number(const char *json, const char *inside, const char *key)
{
    const char *at = strstr(json, "\"noise\":{");

    ck_assert_msg(at, "STATUS has no noise object: %s", json);
    if (inside) {
        char name[64];

        snprintf(name, sizeof(name), "\"%s\":{", inside);
        at = strstr(at, name);
        ck_assert_msg(at, "STATUS's noise object has no %s: %s", inside, json);
    }
    return json_number(at, key);
}

/* sources[] entry of name: its noise_bits. */
static double source_noise_bits(const char *json, const char *name)
{
    char key[64];
    const char *at;

    snprintf(key, sizeof(key), "\"name\":\"%s\"", name);
    at = strstr(json, key);
    ck_assert_msg(at, "STATUS has no source %s: %s", name, json);
    at = strstr(at, "\"noise_bits\":");
    return at ? strtod(at + strlen("\"noise_bits\":"), NULL) : 0;
}

static void send_mode(int fd, uint8_t op, uint16_t flags, uint32_t n)
{
    send_request(fd, &(struct randd_request){ .op = op, .flags = flags, .n = n });
}

/* Idle CPU time of the whole machine over about half a second, in cores (from /proc/stat's
 * cpu line: idle and iowait, in USER_HZ ticks); -1 when /proc/stat cannot be read. */
static double idle_cores_now(void)
{
    unsigned long long idle[2], iowait[2];
    double t[2];

    for (int i = 0; i < 2; i++) {
        FILE *f = fopen("/proc/stat", "r");
        int got = f ? fscanf(f, "cpu %*u %*u %*u %llu %llu", &idle[i], &iowait[i]) : 0;

        if (f)
            fclose(f);
        if (got != 2)
            return -1;
        t[i] = seconds_now();
        if (i == 0)
            usleep(500000);
    }
    return (double)(idle[1] + iowait[1] - idle[0] - iowait[0]) /
           (double)sysconf(_SC_CLK_TCK) / (t[1] - t[0]);
}

/* The jitter worker runs at SCHED_IDLE by design, so CPU hogs starve it: the tests that need
 * jitter to make many blocks (hundreds of thousands of samples) skip beside them, saying so.
 * check-loaded says it runs hogs on every core (RANDD_TEST_CPU_HOGS=1); hogs of someone
 * else's (a make check beside stress-ng) show as a machine with less than a fifth of a core
 * idle. make check on a machine of its own runs them. */
static bool jitter_starved_by_hogs(void)
{
    double idle;

    if (getenv("RANDD_TEST_CPU_HOGS")) {
        fprintf(stderr, "skipped under CPU hogs: the jitter worker (SCHED_IDLE) gets no CPU\n");
        return true;
    }
    if ((idle = idle_cores_now()) >= 0 && idle < 0.2) {
        fprintf(stderr, "skipped: %.2f of a core idle (CPU hogs beside the tests), and the "
                "jitter worker (SCHED_IDLE) gets only idle CPU\n", idle);
        return true;
    }
    return false;
}

/* The CPU source's name in the running daemon's STATUS (rdseed, rndrrs, darn or trng, after
 * the instruction), set by daemon_has_cpu_source. */
static char cpu_source[16];

/* Whether the running daemon has the CPU's noise source among its sources (STATUS
 * cpu_source.in_use): the tests whose noise source it is skip without it, and say why. */
static bool daemon_has_cpu_source(void)
{
    char *json = status_now(), *at = strstr(json, "\"cpu_source\":{\"name\":\"");
    int len = 0;

    cpu_source[0] = '\0';
    ck_assert_msg(at, "STATUS has no cpu_source: %s", json);
    at += strlen("\"cpu_source\":{\"name\":\"");
    if (sscanf(at, "%15[a-z0-9]\",\"in_use\":true%n", cpu_source, &len) < 1 || !len) {
        fprintf(stderr, "skipped: the CPU noise source is not in use here: %.*s\n",
                (int)strcspn(at, "}"), at);
        cpu_source[0] = '\0';
    }
    free(json);
    return cpu_source[0] != '\0';
}

/* The status and message of the reply to a mode request; the body into out (n bytes). */
static int mode_reply(int fd, uint8_t *out, size_t n, char *msg, size_t msglen)
{
    uint8_t body[RANDD_MAX_FULL_ENTROPY + 256];
    uint32_t len;
    int status = read_reply(fd, body, sizeof(body) - 1, &len);

    if (status == RANDD_OK) {
        ck_assert_uint_eq(len, n);
        if (out)
            memcpy(out, body, n);
    } else if (msg) {
        body[len < sizeof(body) - 1 ? len : sizeof(body) - 1] = 0;
        snprintf(msg, msglen, "%.200s", (char *)body);
    }
    return status;
}

/* Only getrandom: no noise source. Each mode, on BYTES and SEED, with NONBLOCK or without,
 * gets NO_NOISE_SOURCE at once with a message saying so; the connection and ordinary
 * requests go on. */
START_TEST(a_daemon_with_only_getrandom_serves_no_noise_modes_and_says_why)
{
    static const uint16_t flags[] = { FLAG_PR, FLAG_FULL, FLAG_PR | FLAG_FULL,
                                      FLAG_FULL | RANDD_FLAG_NONBLOCK };
    char msg[256], *json;
    int fd;

    start_daemon_with("cpu_source = no\nhwrng = no\njitter = no\n", NULL);
    fd = connect_raw();
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        for (int seed = 0; seed < 2; seed++) {
            send_mode(fd, seed ? RANDD_OP_SEED : RANDD_OP_BYTES, flags[i], 64);
            ck_assert_int_eq(mode_reply(fd, NULL, 0, msg, sizeof(msg)), RANDD_NO_NOISE_SOURCE);
            ck_assert_msg(strstr(msg, "no noise source is configured") &&
                          strstr(msg, "getrandom is not one"),
                          "NO_NOISE_SOURCE should say why: \"%s\"", msg);
        }
    check_still_usable(fd, "NO_NOISE_SOURCE");
    close(fd);
    json = status_now();
    ck_assert_msg(noise_number(json, NULL, "\"refused_no_noise_source\":") == 8 &&
                  json_number(json, "\"NO_NOISE_SOURCE\":") == 8 &&
                  noise_number(json, NULL, "\"blocks_made\":") == 0 &&
                  noise_number(json, "full_entropy", "\"served_bytes\":") == 0,
                  "STATUS should count 8 refusals and nothing made or served: %s", json);
    free(json);
}
END_TEST

/* The flags mean something on BYTES and SEED alone; full entropy is at most 4096 a request. */
START_TEST(mode_flags_elsewhere_are_malformed_and_full_entropy_is_capped)
{
    int fd;

    start_daemon_with("cpu_source = no\nhwrng = no\njitter = no\n", NULL);
    fd = connect_raw();
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_BYTES_MEMFD, .flags = FLAG_PR,
                                              .n = 64 });
    check_status(fd, RANDD_MALFORMED, "BYTES_MEMFD with PREDICTION_RESISTANT");
    send_request(fd, &(struct randd_request){ .op = RANDD_OP_STATUS, .flags = FLAG_FULL });
    check_status(fd, RANDD_MALFORMED, "STATUS with FULL_ENTROPY");
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY + 1);
    check_status(fd, RANDD_TOO_LARGE, "FULL_ENTROPY n = 4097");
    send_mode(fd, RANDD_OP_BYTES, 0x0008, 64);
    check_status(fd, RANDD_MALFORMED, "BYTES with an unknown flag");
    check_still_usable(fd, "refused flags");
    close(fd);
}
END_TEST

/* cpu_source = no, no hwrng, jitter = yes: 4 KiB of full entropy served (waiting, not NONBLOCK),
 * and STATUS shows jitter gave at least 32,768 bits and the margin, all spent by the mode. */
START_TEST(full_entropy_from_jitter_alone_spends_its_bits_and_the_margin)
{
    uint8_t out[RANDD_MAX_FULL_ENTROPY], zero[64] = { 0 };
    unsigned long long consumed, need = RANDD_MAX_FULL_ENTROPY / 32 * BLOCK_CREDIT;
    double jitter_bits;
    char msg[256], *json;
    int fd;
    double t0;

    if (jitter_starved_by_hogs())
        return;
    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\n", NULL);
    fd = connect_raw();
    t0 = seconds_now();
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, sizeof(out));
    ck_assert_int_eq(mode_reply(fd, out, sizeof(out), msg, sizeof(msg)), RANDD_OK);
    fprintf(stderr, "jitter alone: 4096 bytes of full entropy in %.3f s\n", seconds_now() - t0);
    ck_assert_msg(memcmp(out + sizeof(out) - sizeof(zero), zero, sizeof(zero)) != 0,
                  "full entropy ended in zeros");
    close(fd);
    json = status_now();
    consumed = noise_number(json, "full_entropy", "\"consumed_bits\":");
    jitter_bits = source_noise_bits(json, "jitter");
    ck_assert_msg(consumed == need && consumed >= 32768 + 128 * 64 &&
                  noise_number(json, "full_entropy", "\"served_bytes\":") == sizeof(out) &&
                  jitter_bits >= (double)consumed,
                  "4096 bytes should spend %llu bits (32,768 and 64 a block of margin), all "
                  "from jitter: consumed %llu, jitter gave %.0f: %s", need, consumed,
                  jitter_bits, json);
    ck_assert_msg(json_number(json, "\"bytes_full\":") == 1, "requests.bytes_full: %s", json);
    free(json);
}
END_TEST

/* Each prediction-resistant request, BYTES or SEED, small or 1 MiB, is one reseed from a
 * block of noise (320 credited bits), counted apart from the ordinary requests. */
START_TEST(each_prediction_resistant_request_is_one_noise_reseed)
{
    static uint8_t big[1 << 20];
    uint8_t a[48], b[48];
    unsigned long long after;
    char *json;
    int fd;

    start_daemon_with("hwrng = no\njitter = no\n", NULL);    /* the CPU source: or skip */
    if (!daemon_has_cpu_source())
        return;
    fd = connect_raw();
    send_mode(fd, RANDD_OP_SEED, FLAG_PR, sizeof(a));
    ck_assert_int_eq(mode_reply(fd, a, sizeof(a), NULL, 0), RANDD_OK);
    send_mode(fd, RANDD_OP_SEED, FLAG_PR, sizeof(b));
    ck_assert_int_eq(mode_reply(fd, b, sizeof(b), NULL, 0), RANDD_OK);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "two seeds alike");
    send_mode(fd, RANDD_OP_BYTES, FLAG_PR, sizeof(big));
    ck_assert_int_eq(read_reply(fd, big, sizeof(big), NULL), RANDD_OK);
    send_mode(fd, RANDD_OP_BYTES, FLAG_PR | RANDD_FLAG_NONBLOCK, 100);
    ck_assert_int_eq(read_reply(fd, big, 100, NULL), RANDD_OK);  /* the reserve serves it */
    close(fd);
    json = status_now();
    after = noise_number(json, NULL, "\"noise_reseeds\":");
    ck_assert_msg(after == 4 &&
                  noise_number(json, "prediction_resistant", "\"consumed_bits\":") ==
                      4 * BLOCK_CREDIT &&
                  noise_number(json, "prediction_resistant", "\"answered\":") == 4 &&
                  json_number(json, "\"seed_pr\":") == 2 &&
                  json_number(json, "\"bytes_pr\":") == 2 &&
                  json_number(json, "\"seed\":") == 0 && json_number(json, "\"bytes\":") == 0,
                  "4 requests should be 4 noise reseeds of 320 bits, counted as 2 seed_pr and "
                  "2 bytes_pr: %s", json);
    free(json);
}
END_TEST

/* NONBLOCK: 4 KiB of full entropy is more than the reserve ever holds: NOT_READY, saying how
 * much was needed, and the request does not wait. */
START_TEST(nonblock_full_entropy_beyond_what_is_ready_is_not_ready)
{
    char msg[256], *json;
    int fd;

    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\n", NULL);
    fd = connect_raw();
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL | RANDD_FLAG_NONBLOCK, RANDD_MAX_FULL_ENTROPY);
    ck_assert_int_eq(mode_reply(fd, NULL, 0, msg, sizeof(msg)), RANDD_NOT_READY);
    ck_assert_msg(strstr(msg, "40960 bits needed"), "NOT_READY should say what it needs: %s",
                  msg);
    check_still_usable(fd, "NOT_READY");
    close(fd);
    json = status_now();
    ck_assert_msg(noise_number(json, NULL, "\"waiting\":") == 0 &&
                  noise_number(json, NULL, "\"refused_not_ready\":") == 1,
                  "nothing should wait after NOT_READY: %s", json);
    free(json);
}
END_TEST

static bool nothing_waits(const char *json)
{
    return noise_number(json, NULL, "\"waiting\":") == 0 &&
           noise_number(json, NULL, "\"cancelled\":") == 1;
}

static bool one_waits(const char *json)
{
    return noise_number(json, NULL, "\"waiting\":") == 1;
}

/* A client that closes while its request waits leaves the queue. */
START_TEST(a_client_that_leaves_while_waiting_drops_its_request)
{
    char *json;
    int fd;

    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\njitter_oversampling = 64\n",
                      NULL);
    fd = connect_raw();
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
    free(wait_status(one_waits, "the request to wait"));
    close(fd);
    json = wait_status(nothing_waits, "the waiting request to be dropped");
    ck_assert_uint_eq(noise_number(json, "full_entropy", "\"served_bytes\":"), 0);
    free(json);
}
END_TEST

/* A request waiting for noise when its last noise source fails does not wait for ever: it is
 * answered NO_NOISE_SOURCE, naming the source. */
START_TEST(a_waiting_request_is_answered_when_the_last_noise_source_fails)
{
    struct randd_request inject = { .op = RANDD_OP_INJECT_FAILURE, .test = RANDD_TEST_RCT,
                                    .data = (const uint8_t *)"jitter", .data_len = 6 };
    char msg[256];
    int fd, admin;

    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\njitter_oversampling = 64\n",
                      NULL);
    fd = connect_raw();
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
    free(wait_status(one_waits, "the request to wait"));
    admin = connect_raw();
    send_request(admin, &inject);
    check_status(admin, RANDD_OK, "INJECT_FAILURE rct jitter");
    close(admin);
    ck_assert_int_eq(mode_reply(fd, NULL, 0, msg, sizeof(msg)), RANDD_NO_NOISE_SOURCE);
    ck_assert_msg(strstr(msg, "jitter quarantined"), "the reply should name jitter: %s", msg);
    close(fd);
}
END_TEST

/* The only noise source quarantined: it contributes nothing (what it gave is wiped), and a
 * request gets NO_NOISE_SOURCE naming it. */
START_TEST(a_quarantined_noise_source_contributes_nothing)
{
    struct randd_request inject = { .op = RANDD_OP_INJECT_FAILURE, .test = RANDD_TEST_RCT };
    char msg[256], *json, quarantined[64];
    uint8_t one[32];
    int fd;

    start_daemon_with("hwrng = no\njitter = no\n", NULL);
    if (!daemon_has_cpu_source())
        return;
    inject.data = (const uint8_t *)cpu_source;
    inject.data_len = strlen(cpu_source);
    snprintf(quarantined, sizeof(quarantined), "%s quarantined", cpu_source);
    fd = connect_raw();
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, sizeof(one));    /* asked: the reserve fills */
    ck_assert_int_eq(mode_reply(fd, one, sizeof(one), NULL, 0), RANDD_OK);
    send_request(fd, &inject);
    check_status(fd, RANDD_OK, "INJECT_FAILURE rct on the CPU source");
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, sizeof(one));
    ck_assert_int_eq(mode_reply(fd, NULL, 0, msg, sizeof(msg)), RANDD_NO_NOISE_SOURCE);
    ck_assert_msg(strstr(msg, quarantined), "the reply should name %s: %s", cpu_source, msg);
    close(fd);
    json = status_now();
    ck_assert_msg(noise_number(json, NULL, "\"available_bits\":") == 0 &&
                  noise_number(json, NULL, "\"dropped_bits\":") > 0,
                  "what %s gave should be wiped: %s", cpu_source, json);
    free(json);
}
END_TEST

/* Fairness: root keeps 4 requests of 4 KiB waiting (its share, with 4 more behind them)
 * while nobody asks 64 bytes (2 blocks). Blocks go round-robin between uids, a block at a time, so
 * nobody's request completes with at most one of root's blocks granted per block of its own:
 * STATUS's wait_ratio_max (blocks granted to other uids while a request waited, per block it
 * needed, the worst so far) stays at or under 1 (uids waiting - 1). */
static bool four_wait(const char *json)
{
    return noise_number(json, NULL, "\"waiting\":") == NOISE_HAMMERS;
}

START_TEST(one_uid_hammering_full_entropy_leaves_another_its_fair_share)
{
    int hammer[NOISE_HAMMERS], small;
    uint8_t out[64];
    double t0, small_s, root_bytes;
    char *json, *at;
    double ratio;

    if (jitter_starved_by_hogs())
        return;
    /* jitter alone: slow enough that root's requests are still waiting when nobody asks */
    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\n", NULL);
    t0 = seconds_now();
    for (int i = 0; i < NOISE_HAMMERS; i++) {
        hammer[i] = connect_raw();
        send_mode(hammer[i], RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
        send_mode(hammer[i], RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
    }

    free(wait_status(four_wait, "root's 4 requests to wait"));
    small = connect_as(65534);
    t0 = seconds_now();
    send_mode(small, RANDD_OP_BYTES, FLAG_FULL, sizeof(out));
    ck_assert_int_eq(mode_reply(small, out, sizeof(out), NULL, 0), RANDD_OK);
    small_s = seconds_now() - t0;
    /* Root's first four, still waiting: how far they got while nobody was served. */
    json = status_now();
    root_bytes = (double)noise_number(json, "full_entropy", "\"served_bytes\":") - sizeof(out);
    free(json);
    close(small);
    for (int i = 0; i < NOISE_HAMMERS; i++)
        close(hammer[i]);              /* their requests leave the queue */
    json = status_now();
    at = strstr(json, "\"wait_ratio_max\":");
    ck_assert_msg(at, "no wait_ratio_max: %s", json);
    ratio = strtod(at + strlen("\"wait_ratio_max\":"), NULL);
    fprintf(stderr, "fairness: nobody's 64 bytes in %.4f s, root's 4 x 4 KiB waiting (%.0f "
            "bytes of them served by then); wait_ratio_max %.3f\n", small_s, root_bytes, ratio);
    ck_assert_msg(ratio <= 1.0, "a request waited for more than one block of another uid "
                  "per block of its own: %s", json);
    free(json);
}
END_TEST

/* egd_full_entropy = yes: an EGD blocking read (0x02) is full entropy, spent from the noise
 * reservoir like protocol v1's; a bad value is refused with its file and line. */
START_TEST(egd_blocking_reads_are_full_entropy_when_configured)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    uint8_t ask[2] = { 0x02, 64 }, out[64];
    char text[512], egd[100], cmd[512], *json;
    FILE *p;
    int fd;

    snprintf(egd, sizeof(egd), "%s/egd.sock", dir);
    write_file(conf, "egd_full_entropy = maybe\n");      /* line 1, whatever the workers */
    snprintf(cmd, sizeof(cmd), "%s --check-config --config %s 2>&1", randd_path(), conf);
    ck_assert_ptr_nonnull(p = popen(cmd, "r"));
    text[fread(text, 1, sizeof(text) - 1, p)] = 0;
    ck_assert_int_ne(pclose(p), 0);
    ck_assert_msg(strstr(text, "randd.conf:1: egd_full_entropy: not yes or no"),
                  "the error should name the file, line and key: %s", text);
    snprintf(text, sizeof(text), "hwrng = no\njitter = no\negd_socket = %s\n"
             "egd_full_entropy = yes\n", egd);
    start_daemon_with(text, NULL);
    if (!daemon_has_cpu_source())
        return;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", egd);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(send(fd, ask, sizeof(ask), 0), 2);
    read_exact(fd, out, sizeof(out));
    close(fd);
    json = status_now();
    ck_assert_msg(json_number(json, "\"full_entropy_bytes\":") == 64 &&
                  noise_number(json, "full_entropy", "\"consumed_bits\":") ==
                      2 * BLOCK_CREDIT &&
                  noise_number(json, "full_entropy", "\"served_bytes\":") == 64,
                  "64 EGD bytes should spend 2 blocks of 320 bits: %s", json);
    free(json);
}
END_TEST

/* --- review28: adversarial findings (each fails against fe-daemon 9818e9e) -------------- */

#define CROWD_UIDS 16                     /* 16 uids x 4 places: the 64 in all */
#define CROWD_UID0 20000

static bool crowd_waits(const char *json)
{
    return noise_number(json, NULL, "\"waiting\":") == CROWD_UIDS * NOISE_HAMMERS;
}

/* One user with subordinate uids (65536 of them on Debian, through newuidmap; PROTOCOL.md
 * counts them for max_clients) keeps 16 of them with 4 requests each waiting: the 64 in all.
 * A uid with nothing waiting must still get its place and its fair share, not BUSY for as
 * long as the crowd keeps the queue full (root too: the queue keeps no share for it). */
START_TEST(sixteen_uids_filling_the_queue_do_not_lock_out_another)
{
    int crowd[CROWD_UIDS * NOISE_HAMMERS], small;
    uint8_t out[64];
    char msg[256] = "";
    int status;

    if (jitter_starved_by_hogs())
        return;
    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\njitter_oversampling = 64\n",
                      NULL);
    for (int u = 0; u < CROWD_UIDS; u++)
        for (int i = 0; i < NOISE_HAMMERS; i++) {
            int fd = connect_as(CROWD_UID0 + u);

            send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
            crowd[u * NOISE_HAMMERS + i] = fd;
        }
    free(wait_status(crowd_waits, "the crowd's 64 requests to wait"));
    small = connect_as(65534);
    send_mode(small, RANDD_OP_BYTES, FLAG_FULL, sizeof(out));
    status = mode_reply(small, out, sizeof(out), msg, sizeof(msg));
    ck_assert_msg(status == RANDD_OK, "uid 65534, with nothing waiting, was refused while 16 "
                  "other uids keep the queue full: %s (%s)", randd_status_name(status), msg);
    close(small);
    for (int i = 0; i < CROWD_UIDS * NOISE_HAMMERS; i++)
        close(crowd[i]);
}
END_TEST

static bool two_wait(const char *json)
{
    return noise_number(json, NULL, "\"waiting\":") == 2;
}

static bool sixty_blocks_made(const char *json)
{
    return noise_number(json, NULL, "\"blocks_made\":") >= 60;
}

/* Root and nobody each wait for 4 KiB; root leaves half way. What root was granted was never
 * handed out: it goes to nobody, who waits for it, not to the bin (noise_cancel keeps only
 * what fits in the 16-block reserve and wipes the rest, before it grants). */
START_TEST(a_client_that_leaves_gives_its_blocks_to_those_waiting)
{
    int leaver, stayer;
    char *json;

    if (jitter_starved_by_hogs())
        return;
    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\njitter_oversampling = 64\n",
                      NULL);
    leaver = connect_raw();
    send_mode(leaver, RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
    stayer = connect_as(65534);
    send_mode(stayer, RANDD_OP_BYTES, FLAG_FULL, RANDD_MAX_FULL_ENTROPY);
    free(wait_status(two_wait, "both requests to wait"));
    free(wait_status(sixty_blocks_made, "60 blocks made (about 30 granted to each)"));
    close(leaver);
    json = wait_status(one_waits, "the leaver's request to leave the queue");
    ck_assert_msg(noise_number(json, NULL, "\"dropped_bits\":") == 0,
                  "blocks never handed out were wiped while nobody waited for them: %s", json);
    free(json);
    ck_assert_int_eq(mode_reply(stayer, NULL, RANDD_MAX_FULL_ENTROPY, NULL, 0), RANDD_OK);
    close(stayer);
}
END_TEST

static bool reserve_full(const char *json)
{
    return noise_number(json, NULL, "\"blocks_ready\":") == 16;
}

/* NOT_READY's message says how many bits are ready: with the 16-block reserve full that is
 * 5120, not the 0 left after the refused request was granted them for a moment. */
START_TEST(nonblock_not_ready_says_what_was_ready)
{
    char msg[256];
    int fd;

    start_daemon_with("cpu_source = no\nhwrng = no\njitter = yes\n", NULL);
    fd = connect_raw();
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL, 32);           /* asked: the reserve fills */
    ck_assert_int_eq(mode_reply(fd, NULL, 32, NULL, 0), RANDD_OK);
    free(wait_status(reserve_full, "the reserve to hold 16 blocks"));
    send_mode(fd, RANDD_OP_BYTES, FLAG_FULL | RANDD_FLAG_NONBLOCK, RANDD_MAX_FULL_ENTROPY);
    ck_assert_int_eq(mode_reply(fd, NULL, 0, msg, sizeof(msg)), RANDD_NOT_READY);
    ck_assert_msg(strstr(msg, "5120 ready"), "NOT_READY should count the 16 blocks ready "
                  "(5120 bits): %s", msg);
    ck_assert_msg(strstr(msg, "at most 512 bytes"), "NOT_READY for 4 KiB with NONBLOCK "
                  "should say it can never be ready at once: %s", msg);
    close(fd);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("noise modes");
    TCase *tc = tcase_create("randd's full entropy and prediction resistance");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_daemon_with_only_getrandom_serves_no_noise_modes_and_says_why);
    tcase_add_test(tc, mode_flags_elsewhere_are_malformed_and_full_entropy_is_capped);
    tcase_add_test(tc, full_entropy_from_jitter_alone_spends_its_bits_and_the_margin);
    tcase_add_test(tc, each_prediction_resistant_request_is_one_noise_reseed);
    tcase_add_test(tc, nonblock_full_entropy_beyond_what_is_ready_is_not_ready);
    tcase_add_test(tc, a_client_that_leaves_while_waiting_drops_its_request);
    tcase_add_test(tc, a_quarantined_noise_source_contributes_nothing);
    tcase_add_test(tc, a_waiting_request_is_answered_when_the_last_noise_source_fails);
    tcase_add_test(tc, one_uid_hammering_full_entropy_leaves_another_its_fair_share);
    tcase_add_test(tc, egd_blocking_reads_are_full_entropy_when_configured);
    tcase_add_test(tc, sixteen_uids_filling_the_queue_do_not_lock_out_another);
    tcase_add_test(tc, a_client_that_leaves_gives_its_blocks_to_those_waiting);
    tcase_add_test(tc, nonblock_not_ready_says_what_was_ready);
    suite_add_tcase(s, tc);
    return s;
}
