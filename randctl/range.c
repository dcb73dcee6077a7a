/* randctl range: integers uniform in [0, R), or [L, L+R) with --from, drawn by the daemon
 * with RNG-BC-8. R and L are decimal or 0x-hex; BIGNUM only parses and prints them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>

#include "randctl.h"

#define MAX_COUNT  1000000
#define MAX_OUTPUT (64u << 20)    /* count * bytes of R held at once */

static BIGNUM *parse_number(const char *s)
{
    BIGNUM *bn = NULL;
    int hex = !strncmp(s, "0x", 2) || !strncmp(s, "0X", 2);
    const char *digits = hex ? s + 2 : s;
    int used = *digits == '-' ? 0 : hex ? BN_hex2bn(&bn, digits) : BN_dec2bn(&bn, digits);

    if (used <= 0 || digits[used] != '\0') {
        BN_free(bn);
        return NULL;
    }
    return bn;
}

static int print_values(const uint8_t *values, size_t len, size_t count, const BIGNUM *from)
{
    BIGNUM *v = BN_new();
    int rc = EXIT_OK;

    for (size_t i = 0; v && i < count && rc == EXIT_OK; i++) {
        char *text;

        if (!BN_bin2bn(values + i * len, (int)len, v) || (from && !BN_add(v, v, from)) ||
            !(text = BN_bn2dec(v))) {
            rc = fail("range", -12 /* ENOMEM */);
            break;
        }
        if (printf("%s\n", text) < 0)
            rc = EXIT_FAILED;
        OPENSSL_free(text);
    }
    BN_clear_free(v);
    return v ? rc : fail("range", -12);
}

static int run_range(int argc, char **argv)
{
    BIGNUM *r = NULL, *from = NULL;
    unsigned long long count = 1;
    uint8_t rbytes[1024], *values = NULL;
    randd_handle *h;
    size_t len;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            if (!parse_count(argv[++i], MAX_COUNT, &count) || count == 0) {
                rc = usage_error(&cmd_range, "--count: not a number from 1 to %d: %s",
                                 MAX_COUNT, argv[i]);
                goto out;
            }
        } else if (!strcmp(argv[i], "--from") && i + 1 < argc && !from) {
            if (!(from = parse_number(argv[++i]))) {
                rc = usage_error(&cmd_range, "--from: not a number: %s", argv[i]);
                goto out;
            }
        } else if (!r && argv[i][0] != '-') {
            if (!(r = parse_number(argv[i]))) {
                rc = usage_error(&cmd_range, "R: not a decimal or 0x-hex number: %s", argv[i]);
                goto out;
            }
        } else {
            rc = usage_error(&cmd_range, "bad argument: %s", argv[i]);
            goto out;
        }
    }
    if (!r || BN_is_zero(r) || BN_num_bytes(r) > (int)sizeof(rbytes)) {
        rc = usage_error(&cmd_range, r ? "R must be from 1 to 2^8192 - 1" : "R is missing");
        goto out;
    }
    len = (size_t)BN_bn2bin(r, rbytes);
    if (len * count > MAX_OUTPUT) {
        rc = usage_error(&cmd_range, "--count %llu of a %zu-byte R is over 64 MiB at once",
                         count, len);
        goto out;
    }
    values = malloc(len * count);
    if (!values) {
        rc = fail("range", -12);
        goto out;
    }
    if ((rc = open_daemon(&h)) != EXIT_OK)
        goto out;
    rc = randd_range(h, rbytes, len, values, count);
    rc = rc < 0 ? fail_with("range", rc, randd_message(h)) : print_values(values, len, count, from);
    randd_close(h);
out:
    if (values)
        OPENSSL_clear_free(values, len * count);
    BN_free(r);
    BN_free(from);
    return rc;
}

const struct command cmd_range = {
    "range", "range R [--count K] [--from L]  K integers in [L, L+R), L = 0 by default",
    run_range,
};
