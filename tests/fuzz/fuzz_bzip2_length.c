/* libFuzzer: the bzip2 length count (internal/bzip2_length.c) against libbz2 itself. Every
 * input is turned into a text, and randd_bzlen_count must give the byte count that
 * BZ2_bzBuffToBuffCompress writes for it, at the level the input chooses; anything else
 * aborts. The texts are the input's own bytes, the decimal text of samples that the IID
 * track's compression statistic writes (the path the shuffles take), and both again built
 * from a short program of runs and repeats, which is how a fuzzer's small inputs reach
 * block boundaries, runs that straddle them and long periodic stretches.
 *
 * The first byte: level 1 + b % 9, and the shape (b / 9) % 4: 0 bytes, 1 decimal text, 2
 * bytes from a program, 3 decimal text of samples from a program. The decimal texts take
 * the sample width in bits from the next byte. A program is a list of 3-byte steps: a, b,
 * c with a < 0x80 is a run of c + 1 bytes b; with a >= 0x80, the last ((a & 0x7f) << 8 | b)
 * + 1 bytes written, repeated c + 1 times. The counters are kept from one input to the
 * next, as a permutation test keeps its thread's. */
#include <bzlib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bzip2_length.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A program writes at most this, more than a level-9 block; samples a quarter of it, as
 * their text is up to 4 times as long. More would slow the fuzzer to a crawl. */
#define MAX_EXPANDED (1u << 20)

static struct randd_bzlen *counter[10];

/* The bytes a program writes; n set to their count. NULL: no memory. */
static uint8_t *expand(const uint8_t *p, size_t size, size_t cap, size_t *n)
{
    uint8_t *out = malloc(cap);
    size_t at = 0;

    if (!out)
        return NULL;
    for (; size >= 3 && at < cap; p += 3, size -= 3) {
        unsigned count = p[2] + 1u;

        if (p[0] < 0x80) {
            for (unsigned i = 0; i < count && at < cap; i++)
                out[at++] = p[1];
        } else {
            size_t back = ((size_t)(p[0] & 0x7f) << 8 | p[1]) + 1;

            if (back > at)
                back = at;
            for (unsigned r = 0; back && r < count && at < cap; r++)
                for (size_t i = 0; i < back && at < cap; i++, at++)
                    out[at] = out[at - back];
        }
    }
    *n = at;
    return out;
}

/* Samples of `bits` bits as the compression statistic writes them: decimal values, one
 * space between. The text is allocated to its exact length, so that a read past its end is
 * one AddressSanitizer sees. */
static uint8_t *decimal(const uint8_t *v, size_t n, unsigned bits, size_t *len)
{
    char *text = malloc(4 * n + 1), *t = text;
    uint8_t *exact;

    if (!text)
        return NULL;
    for (size_t i = 0; i < n; i++)
        t += sprintf(t, "%u ", v[i] & ((1u << bits) - 1));
    *len = (size_t)(t - text) - (n > 0);
    exact = malloc(*len ? *len : 1);
    if (exact)
        memcpy(exact, text, *len);
    free(text);
    return exact;
}

static void agree(const uint8_t *in, size_t n, int level)
{
    unsigned len = (unsigned)(n + n / 50 + 1000);
    char *out = malloc(len);
    uint64_t counted;
    int rc;

    if (!out)
        return;
    rc = BZ2_bzBuffToBuffCompress(out, &len, (char *)(uintptr_t)in, (unsigned)n, level, 0, 0);
    free(out);
    if (rc != BZ_OK) {
        fprintf(stderr, "fuzz_bzip2_length: libbz2 failed (%d) on %zu bytes\n", rc, n);
        abort();
    }
    if (!counter[level] && !(counter[level] = randd_bzlen_new(level)))
        abort();
    counted = randd_bzlen_count(counter[level], in, n);
    if (counted != len) {
        fprintf(stderr, "fuzz_bzip2_length: %zu bytes at level %d: libbz2 wrote %u bytes, "
                "the count says %llu\n", n, level, len, (unsigned long long)counted);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int level;
    unsigned shape, bits = 8;
    uint8_t *own = NULL, *text = NULL;
    const uint8_t *in;
    size_t n;

    if (size < 1)
        return 0;
    level = 1 + data[0] % 9;
    shape = (data[0] / 9u) % 4;
    data++;
    size--;
    if ((shape & 1) && size >= 1) {
        bits = 1 + data[0] % 8;
        data++;
        size--;
    }
    if (shape >= 2) {
        if (!(own = expand(data, size, MAX_EXPANDED >> 2 * (shape & 1), &n)))
            return 0;
        in = own;
    } else {
        in = data;
        n = size;
    }
    if (shape & 1) {
        if (!(text = decimal(in, n, bits, &n)))
            goto out;
        in = text;
    }
    agree(in, n, level);
out:
    free(text);
    free(own);
    return 0;
}
