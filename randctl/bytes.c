/* randctl bytes and stream: random bytes as hex, base64 or raw (ordinary, prediction-
 * resistant or full-entropy), and an endless raw stream for rngtest or dieharder that ends
 * quietly when the reader goes away. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "randctl.h"

#define CHUNK (1u << 20)

enum format { HEX, BASE64, RAW };

static int write_all(const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int emit(const uint8_t *buf, size_t n, enum format format)
{
    static char text[2 * CHUNK + 4];

    if (format == RAW)
        return write_all(buf, n);
    if (format == HEX) {
        for (size_t i = 0; i < n; i++)
            snprintf(text + 2 * i, 3, "%02x", buf[i]);
        return write_all((uint8_t *)text, 2 * n);
    }
    return write_all((uint8_t *)text, (size_t)EVP_EncodeBlock((unsigned char *)text, buf, (int)n));
}

/* What a mode's failure means, beside librandd's text and the daemon's own words: scripts
 * get an exit status of its own (randctl(1)), people a line that says what to do. */
static int mode_failure(randd_handle *h, enum randd_mode mode, int timeout_ms, int err)
{
    const char *what = mode == RANDD_MODE_FULL_ENTROPY ? "bytes --full-entropy"
                       : mode == RANDD_MODE_PREDICTION_RESISTANT
                           ? "bytes --prediction-resistant" : "bytes";
    const char *daemon = randd_message(h);

    if (err == -ETIMEDOUT) {
        fprintf(stderr, "randctl: %s: not served within the timeout (%d ms)\n", what,
                timeout_ms);
        return EXIT_TIMED_OUT;
    }
    if (err == RANDD_ERR(RANDD_NO_NOISE_SOURCE)) {
        fprintf(stderr, "randctl: %s: %s%s%s\n", what, randd_strerror(err),
                *daemon ? ": " : "", daemon);
        return EXIT_NO_NOISE_SOURCE;
    }
    if (err == RANDD_ERR(RANDD_NOT_READY)) {    /* "daemon not ready" would mislead here */
        fprintf(stderr, "randctl: %s: not enough noise-source entropy ready now (--nonblock)"
                "%s%s\n", what, *daemon ? ": " : "", daemon);
        return EXIT_NOT_READY;
    }
    if (err == RANDD_ERR(RANDD_BUSY)) {         /* not clients or primes: the modes' queue */
        fprintf(stderr, "randctl: %s: busy: this user has as many requests waiting for noise "
                "entropy as the daemon allows; try again later%s%s\n", what,
                *daemon ? ": " : "", daemon);
        return EXIT_BUSY;
    }
    return fail_with(what, err, daemon);
}

/* Plain bytes: librandd's text, and for NOT_READY the daemon's own reason after it (a
 * self-test failed, require_noise_source holds output back), which the text cannot know. */
static int default_failure(randd_handle *h, int err)
{
    const char *daemon = randd_message(h);

    if (err != RANDD_ERR(RANDD_NOT_READY) || !*daemon)
        return fail("bytes", err);
    fprintf(stderr, "randctl: bytes: daemon not ready: %s\n", daemon);
    return EXIT_NOT_READY;
}

/* Output in chunks; N of 0 with endless set means until the reader stops. */
static int produce_mode(unsigned long long n, int endless, enum format format,
                        enum randd_mode mode, int timeout_ms)
{
    static uint8_t buf[CHUNK];
    size_t chunk = format == BASE64 ? CHUNK - CHUNK % 3 : CHUNK;   /* no padding midway */
    randd_handle *h;
    int rc = open_daemon(&h);

    if (rc != EXIT_OK)
        return rc;
    randd_set_timeout(h, timeout_ms);
    while (endless || n > 0) {
        size_t step = !endless && n < chunk ? (size_t)n : chunk;
        int err = randd_bytes_mode(h, buf, step, mode);

        if (err < 0) {
            rc = mode == RANDD_MODE_DEFAULT && err != -ETIMEDOUT
                     ? default_failure(h, err) : mode_failure(h, mode, timeout_ms, err);
            randd_close(h);
            return rc;
        }
        err = emit(buf, step, format);
        OPENSSL_cleanse(buf, step);
        if (err == -EPIPE)
            break;                           /* the reader is done: not an error */
        if (err < 0) {
            randd_close(h);
            return fail("stdout", err);
        }
        n -= endless ? 0 : step;
    }
    randd_close(h);
    if (format != RAW)
        write_all((const uint8_t *)"\n", 1);
    return EXIT_OK;
}

static int produce(unsigned long long n, int endless, enum format format)
{
    return produce_mode(n, endless, format, RANDD_MODE_DEFAULT, 0);
}

static int run_bytes(int argc, char **argv)
{
    enum format format = HEX;
    enum randd_mode mode = RANDD_MODE_DEFAULT;
    unsigned long long n = 0, timeout_ms = 0;
    int have_n = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--prediction-resistant") && mode != RANDD_MODE_FULL_ENTROPY)
            mode = RANDD_MODE_PREDICTION_RESISTANT;
        else if (!strcmp(argv[i], "--full-entropy"))
            mode = RANDD_MODE_FULL_ENTROPY;      /* implies prediction resistance */
        else if (!strcmp(argv[i], "--prediction-resistant"))
            ;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc &&
                 parse_count(argv[i + 1], 3600000, &timeout_ms) && timeout_ms > 0)
            i++;
        else if (!strcmp(argv[i], "--hex"))
            format = HEX;
        else if (!strcmp(argv[i], "--base64"))
            format = BASE64;
        else if (!strcmp(argv[i], "--raw"))
            format = RAW;
        else if (!have_n && parse_count(argv[i], 1ull << 40, &n) && n > 0)
            have_n = 1;
        else
            return usage_error(&cmd_bytes, "bad argument: %s", argv[i]);
    }
    if (!have_n)
        return usage_error(&cmd_bytes, "how many bytes? (N >= 1)");
    signal(SIGPIPE, SIG_IGN);
    return produce_mode(n, 0, format, mode, (int)timeout_ms);
}

static int run_stream(int argc, char **argv)
{
    unsigned long long n = 0;

    if (argc > 2 || (argc == 2 && (!parse_count(argv[1], ~0ull, &n) || n == 0)))
        return usage_error(&cmd_stream, "bad argument: %s", argv[argc - 1]);
    signal(SIGPIPE, SIG_IGN);
    return produce(n, argc == 1, RAW);
}

const struct command cmd_bytes = {
    "bytes", "bytes N [--hex|--base64|--raw] [--prediction-resistant|--full-entropy] "
             "[--timeout MS]   N random bytes (hex by default)", run_bytes,
};

const struct command cmd_stream = {
    "stream", "stream [N]                       raw bytes to stdout, until N or the reader "
              "stops", run_stream,
};
