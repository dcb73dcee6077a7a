/* randctl bytes and stream: random bytes as hex, base64 or raw, and an endless raw stream
 * for rngtest or dieharder that ends quietly when the reader goes away. */
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

/* Output in chunks; N of 0 with endless set means until the reader stops. */
static int produce(unsigned long long n, int endless, enum format format)
{
    static uint8_t buf[CHUNK];
    size_t chunk = format == BASE64 ? CHUNK - CHUNK % 3 : CHUNK;   /* no padding midway */
    randd_handle *h;
    int rc = open_daemon(&h);

    if (rc != EXIT_OK)
        return rc;
    while (endless || n > 0) {
        size_t step = !endless && n < chunk ? (size_t)n : chunk;
        int err = randd_bytes(h, buf, step);

        if (err < 0) {
            randd_close(h);
            return fail("bytes", err);
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

static int run_bytes(int argc, char **argv)
{
    enum format format = HEX;
    unsigned long long n = 0;
    int have_n = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hex"))
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
    return produce(n, 0, format);
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
    "bytes", "bytes N [--hex|--base64|--raw]   N random bytes (hex by default)", run_bytes,
};

const struct command cmd_stream = {
    "stream", "stream [N]                       raw bytes to stdout, until N or the reader "
              "stops", run_stream,
};
