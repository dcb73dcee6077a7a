/* RNG-BC-8: uniform integers in [0, r) by the optimized simple discard method. A candidate is
 * compared with r byte by byte from the top; only the bytes at and above the first larger byte
 * are drawn again. The top byte is masked to r's bit length, so any bit length works.
 * Owns no randomness: bytes come from a caller-supplied source. */
#ifndef RANDD_RNGBC_H
#define RANDD_RNGBC_H

#include <stddef.h>
#include <stdint.h>

#define RANDD_RNGBC_MAX_BYTES 1024   /* r up to 8192 bits */

/* Where random bytes come from: fill writes n bytes and returns 0, or a negative errno. */
struct randd_byte_source {
    int (*fill)(void *ctx, void *buf, size_t n);
    void *ctx;
};

/* r prepared once for any number of samples. r is borrowed, not copied. */
struct randd_rngbc_range {
    const uint8_t *r;     /* big-endian, len bytes, possibly with leading zeros */
    size_t len;
    size_t top;           /* index of r's most significant non-zero byte */
    uint8_t top_mask;     /* keeps only the bits of that byte up to r's bit length */
};

/* Returns 0, -EINVAL for r = 0 or len = 0, -E2BIG for len > RANDD_RNGBC_MAX_BYTES. */
int randd_rngbc_prepare(struct randd_rngbc_range *range, const uint8_t *r, size_t len);

/* Writes one value uniform in [0, r) to out (range->len bytes, big-endian, zero-padded).
 * Adds the number of random bytes drawn to *consumed when consumed is not NULL.
 * Returns 0, or the source's error with out wiped. */
int randd_rngbc8(const struct randd_rngbc_range *range, uint8_t *out,
                 const struct randd_byte_source *src, uint64_t *consumed);

#endif
