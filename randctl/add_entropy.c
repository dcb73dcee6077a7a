/* randctl add-entropy: mixes a file's bytes into the daemon's pool with a stated credit.
 * Only root or the daemon's trusted_group may. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "randctl.h"

#define MAX_DATA (64u * 1024 - 4)      /* one ADD_ENTROPY request body */

static int run_add_entropy(int argc, char **argv)
{
    static uint8_t data[MAX_DATA + 1];
    const char *path = NULL;
    unsigned long long bits = 0;
    int have_bits = 0, rc;
    randd_handle *h;
    size_t n;
    FILE *f;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bits") && i + 1 < argc && !have_bits) {
            if (!parse_count(argv[++i], 8ull * MAX_DATA, &bits))
                return usage_error(&cmd_add_entropy, "--bits: not a number: %s", argv[i]);
            have_bits = 1;
        } else if (!path) {
            path = argv[i];
        } else {
            return usage_error(&cmd_add_entropy, "bad argument: %s", argv[i]);
        }
    }
    if (!path || !have_bits)
        return usage_error(&cmd_add_entropy, "FILE and --bits B are both needed");
    f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return fail(path, -errno);
    n = fread(data, 1, sizeof(data), f);
    if (f != stdin)
        fclose(f);
    if (n == 0 || n > MAX_DATA) {
        OPENSSL_cleanse(data, n);
        return data_error(&cmd_add_entropy, "%s: %s", path,
                          n ? "more than 65532 bytes" : "empty");
    }
    if (bits > 8 * n) {
        OPENSSL_cleanse(data, n);
        return usage_error(&cmd_add_entropy, "--bits %llu is more than 8 per byte of %zu bytes",
                           bits, n);
    }
    if ((rc = open_daemon(&h)) == EXIT_OK) {
        int err = randd_add_entropy(h, data, n, (unsigned)bits);

        rc = err < 0 ? fail_with("add-entropy", err, randd_message(h)) : EXIT_OK;
        randd_close(h);
    }
    OPENSSL_cleanse(data, n);
    return rc;
}

const struct command cmd_add_entropy = {
    "add-entropy", "add-entropy FILE --bits B       mix FILE (- for stdin) in, credited B bits",
    run_add_entropy,
};
