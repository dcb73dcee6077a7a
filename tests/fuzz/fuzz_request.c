/* libFuzzer: the daemon's request decoder over a stream of pipelined frames, cut at the
 * points the server reads (8-byte header, then the body), checking what the decoder
 * promises: headers that re-encode to the same bytes, statuses in range with a reason,
 * decoded arguments consistent with the frame, and an error for any header the server
 * answers from alone and then closes on. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_request(const struct randd_header *h, const uint8_t *body)
{
    struct randd_request req;
    char why[160];
    int status = randd_parse_request(h, body, &req, why, sizeof(why));

    if (status < 0 || status >= RANDD_STATUS_COUNT || (status != RANDD_OK && !why[0]))
        abort();
    if (status != RANDD_OK)
        return;
    switch (req.op) {
    case RANDD_OP_BYTES:
        if (req.n == 0 || req.n > RANDD_MAX_BYTES)
            abort();
        break;
    case RANDD_OP_SEED:
        if (req.n == 0 || req.n > RANDD_MAX_SEED || h->length != 4)
            abort();
        break;
    case RANDD_OP_BYTES_MEMFD:
        if (req.n == 0 || req.n > RANDD_MEMFD_SLOT_BYTES || h->length != 4)
            abort();
        break;
    case RANDD_OP_RANGE:
        if (!req.count || !req.len || req.len > RANDD_MAX_RANGE_LEN ||
            (uint32_t)req.count * req.len > RANDD_MAX_RANGE_REPLY || req.r != body + 4 ||
            h->length != 4u + req.len)
            abort();
        break;
    case RANDD_OP_ADD_ENTROPY:
        if (req.data_len + 4 != h->length || req.entropy_bits > 8 * req.data_len)
            abort();
        break;
    case RANDD_OP_STATUS:
    case RANDD_OP_SELFTEST:
        if (h->length)
            abort();
        break;
    case RANDD_OP_INJECT_FAILURE:
        if (req.data_len + 1 != h->length || !req.data_len ||
            req.data_len > RANDD_MAX_SOURCE_NAME || req.test >= RANDD_HEALTH_TEST_COUNT ||
            req.data != body + 1)
            abort();
        for (size_t i = 0; i < req.data_len; i++)
            if (req.data[i] <= ' ' || req.data[i] > '~')
                abort();
        break;
    case RANDD_OP_PRIME:
        if (h->length != 2 || req.bits < RANDD_PRIME_MIN_BITS || req.bits > RANDD_PRIME_MAX_BITS)
            abort();
        break;
    default:
        abort();
    }
}

/* What the server sends before it closes: an error, never OK, with its reason. */
static void check_closing_header(const struct randd_header *h)
{
    char why[160] = "";
    int status = randd_check_header(h, why, sizeof(why));

    if (status <= RANDD_OK || status >= RANDD_STATUS_COUNT || !why[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    while (size >= RANDD_HEADER_BYTES) {
        struct randd_header h;
        uint8_t again[RANDD_HEADER_BYTES], *body;

        randd_header_decode(data, &h);
        randd_header_encode(again, &h);
        if (memcmp(again, data, sizeof(again)) != 0)
            abort();
        data += RANDD_HEADER_BYTES;
        size -= RANDD_HEADER_BYTES;
        if (randd_header_closes(&h)) {
            check_closing_header(&h);
            return 0;                 /* the server replies and closes here */
        }
        if (h.length > size)
            return 0;                 /* the rest has not arrived */
        body = malloc(h.length ? h.length : 1);   /* exact size: ASan sees overreads */
        memcpy(body, data, h.length);
        check_request(&h, body);
        free(body);
        data += h.length;
        size -= h.length;
    }
    return 0;
}
