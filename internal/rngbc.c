/* RNG-BC-8, the bytewise variant of the optimized simple discard method, with the top byte
 * masked to r's bit length (the paper leaves non-byte-aligned r as future work).
 * Why it is uniform: a decision at byte i looks only at bytes top..i, and those are exactly
 * the bytes drawn again on rejection, so the unexamined lower bytes stay independent and
 * uniform; an accepted value is a uniform draw conditioned on being below r. */
#include "rngbc.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>

int randd_rngbc_prepare(struct randd_rngbc_range *range, const uint8_t *r, size_t len)
{
    size_t top = 0;
    uint8_t mask;

    if (len == 0)
        return -EINVAL;
    if (len > RANDD_RNGBC_MAX_BYTES)
        return -E2BIG;
    while (top < len && r[top] == 0)
        top++;
    if (top == len)
        return -EINVAL;
    for (mask = r[top]; mask & (mask + 1); )   /* smear the top bit down: 0x05 -> 0x07 */
        mask |= mask >> 1;
    range->r = r;
    range->len = len;
    range->top = top;
    range->top_mask = mask;
    return 0;
}

/* Draws bytes top..last (inclusive) afresh. */
static int redraw(const struct randd_rngbc_range *range, uint8_t *out, size_t last,
                  const struct randd_byte_source *src, uint64_t *consumed)
{
    size_t n = last - range->top + 1;
    int rc = src->fill(src->ctx, out + range->top, n);

    if (rc < 0)
        return rc;
    out[range->top] &= range->top_mask;
    if (consumed)
        *consumed += n;
    return 0;
}

int randd_rngbc8(const struct randd_rngbc_range *range, uint8_t *out,
                 const struct randd_byte_source *src, uint64_t *consumed)
{
    const uint8_t *r = range->r;
    size_t last = range->len - 1;
    int rc;

    memset(out, 0, range->top);
    rc = redraw(range, out, last, src, consumed);
    while (rc == 0) {
        size_t i = range->top;

        while (i <= last && out[i] == r[i])
            i++;
        if (i <= last && out[i] < r[i])
            return 0;
        /* Larger at byte i: draw again from the top down to i. All equal: draw everything. */
        rc = redraw(range, out, i <= last ? i : last, src, consumed);
    }
    OPENSSL_cleanse(out, range->len);
    return rc;
}
