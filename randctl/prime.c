/* randctl prime: random primes of an exact size from the daemon, one per line, in decimal
 * or hex. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>

#include "protocol.h"
#include "randctl.h"

#define MAX_COUNT 100000

static int print_prime(const uint8_t *p, size_t len, int hex)
{
    BIGNUM *v = BN_bin2bn(p, (int)len, NULL);
    char *text = v ? (hex ? BN_bn2hex(v) : BN_bn2dec(v)) : NULL;
    int rc = text && printf("%s%s\n", hex ? "0x" : "", text) > 0 ? EXIT_OK : fail("prime", -EIO);

    OPENSSL_clear_free(text, text ? strlen(text) : 0);
    BN_clear_free(v);
    return rc;
}

static int run_prime(int argc, char **argv)
{
    unsigned long long bits = 0, count = 1;
    uint8_t prime[(RANDD_PRIME_MAX_BITS + 7) / 8];
    int hex = 0, have_bits = 0, rc;
    randd_handle *h;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            if (!parse_count(argv[++i], MAX_COUNT, &count) || count == 0)
                return usage_error(&cmd_prime, "--count: not a number from 1 to %d: %s",
                                   MAX_COUNT, argv[i]);
        } else if (!strcmp(argv[i], "--hex")) {
            hex = 1;
        } else if (!have_bits && argv[i][0] != '-') {
            if (!parse_count(argv[i], RANDD_PRIME_MAX_BITS, &bits) || bits < RANDD_PRIME_MIN_BITS)
                return usage_error(&cmd_prime, "BITS: not a number from %d to %d: %s",
                                   RANDD_PRIME_MIN_BITS, RANDD_PRIME_MAX_BITS, argv[i]);
            have_bits = 1;
        } else {
            return usage_error(&cmd_prime, "bad argument: %s", argv[i]);
        }
    }
    if (!have_bits)
        return usage_error(&cmd_prime, "BITS is missing");
    if ((rc = open_daemon(&h)) != EXIT_OK)
        return rc;
    for (unsigned long long i = 0; i < count && rc == EXIT_OK; i++) {
        int err = randd_prime(h, (unsigned)bits, prime);

        rc = err < 0 ? fail_with("prime", err, randd_message(h))
                     : print_prime(prime, (bits + 7) / 8, hex);
    }
    OPENSSL_cleanse(prime, sizeof(prime));
    randd_close(h);
    return rc;
}

const struct command cmd_prime = {
    "prime", "prime BITS [--count K] [--hex]  K random primes of exactly BITS bits (16..4096)",
    run_prime,
};
