/* Wire protocol v1 (lib/PROTOCOL.md): constants, header encoding, and request validation.
 * Shared by the daemon and the client library; pure functions, no I/O. */
#ifndef RANDD_PROTOCOL_H
#define RANDD_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define RANDD_PROTOCOL_VERSION   1
#define RANDD_HEADER_BYTES       8
#define RANDD_MAX_REQUEST_BODY   (64u << 10)   /* larger: framing untrusted, reply and close */
#define RANDD_MAX_BYTES          (16u << 20)   /* one BYTES request */
#define RANDD_MAX_RANGE_LEN      1024          /* bytes of r: 8192 bits */
#define RANDD_MAX_RANGE_REPLY    (1u << 20)    /* count * len */
#define RANDD_MAX_SEED           4096          /* one SEED request: a seed, not a stream */
#define RANDD_FLAG_NONBLOCK      0x0001

enum randd_op {
    RANDD_OP_BYTES = 0x01,
    RANDD_OP_RANGE = 0x02,
    RANDD_OP_STATUS = 0x03,
    RANDD_OP_ADD_ENTROPY = 0x04,
    RANDD_OP_PRIME = 0x05,
    RANDD_OP_SEED = 0x06,          /* BYTES to seed another generator, counted apart */
};
#define RANDD_OP_LAST            RANDD_OP_SEED
#define RANDD_PRIME_MIN_BITS     16
#define RANDD_PRIME_MAX_BITS     4096
#define RANDD_PRIME_PER_UID      4      /* PRIMEs queued or running per peer uid; more: BUSY */

enum randd_status {
    RANDD_OK = 0,
    RANDD_BAD_VERSION = 1,
    RANDD_UNKNOWN_OP = 2,
    RANDD_MALFORMED = 3,
    RANDD_TOO_LARGE = 4,
    RANDD_INVALID_ARGUMENT = 5,
    RANDD_NOT_PERMITTED = 6,
    RANDD_NOT_READY = 7,
    RANDD_BUSY = 8,
    RANDD_INTERNAL = 9,
};
#define RANDD_STATUS_COUNT 10

/* Request: version, op, flags. Reply: version, status, reserved (0). Both: body length. */
struct randd_header {
    uint8_t version;
    uint8_t code;          /* op in a request, status in a reply */
    uint16_t flags;
    uint32_t length;
};

void randd_header_encode(uint8_t out[RANDD_HEADER_BYTES], const struct randd_header *h);
void randd_header_decode(const uint8_t in[RANDD_HEADER_BYTES], struct randd_header *h);

/* A request that passed validation, with its arguments decoded. */
struct randd_request {
    uint8_t op;
    uint16_t flags;
    uint32_t n;                     /* BYTES, SEED */
    uint16_t count, len;            /* RANGE */
    const uint8_t *r;               /* RANGE: points into the body */
    uint32_t entropy_bits;          /* ADD_ENTROPY */
    uint16_t bits;                  /* PRIME */
    const uint8_t *data;            /* ADD_ENTROPY: points into the body */
    size_t data_len;
};

/* Checks the header alone (before the body is read). Returns RANDD_OK, or the status to
 * reply with and a message in why. BAD_VERSION and an oversized body mean the connection
 * must be closed after the reply: see randd_status_closes(). */
int randd_check_header(const struct randd_header *h, char *why, size_t whylen);

/* Validates a complete request and decodes it into req. Returns a status as above. */
int randd_parse_request(const struct randd_header *h, const uint8_t *body,
                        struct randd_request *req, char *why, size_t whylen);

/* Whether the framing can no longer be trusted after this header's error. */
int randd_header_closes(const struct randd_header *h);

const char *randd_status_name(int status);
/* "bytes", "range", ... for STATUS and metrics; "unknown" for 0 and any op not in the enum. */
const char *randd_op_name(int op);

#endif
