/* Protocol v1 in one place for the daemon, the clients, the tests and the fuzzers: framing,
 * the one request encoder, request validation (every rejection says what was wrong in a
 * short message), and the tables of names STATUS speaks.
 *
 * Sections: framing, requests: encoding (and replies' headers, as clients read them),
 * requests: validation, names. */
#include "protocol.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* --- framing ----------------------------------------------------------------------------- */

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

void randd_header_encode(uint8_t out[RANDD_HEADER_BYTES], const struct randd_header *h)
{
    out[0] = h->version;
    out[1] = h->code;
    put16(out + 2, h->flags);
    put32(out + 4, h->length);
}

void randd_header_decode(const uint8_t in[RANDD_HEADER_BYTES], struct randd_header *h)
{
    h->version = in[0];
    h->code = in[1];
    h->flags = be16(in + 2);
    h->length = be32(in + 4);
}

/* --- requests: encoding ---------------------------------------------------------------- */

/* The body's length for req; false for an op this codec does not know. */
static bool body_length(const struct randd_request *req, size_t *len)
{
    switch (req->op) {
    case RANDD_OP_BYTES:
    case RANDD_OP_SEED:
    case RANDD_OP_BYTES_MEMFD: *len = 4; return true;
    case RANDD_OP_RANGE: *len = 4u + req->len; return true;
    case RANDD_OP_STATUS: *len = 0; return true;
    case RANDD_OP_ADD_ENTROPY: *len = 4 + req->data_len; return req->data_len < UINT32_MAX - 4;
    case RANDD_OP_PRIME: *len = 2; return true;
    case RANDD_OP_SELFTEST: *len = 0; return true;
    case RANDD_OP_INJECT_FAILURE: *len = 1 + req->data_len; return req->data_len < 256;
    default: return false;
    }
}

size_t randd_request_encode(uint8_t *out, size_t cap, const struct randd_request *req)
{
    uint8_t *b = out + RANDD_HEADER_BYTES;
    struct randd_header h;
    size_t body;

    if (!body_length(req, &body) || cap < RANDD_HEADER_BYTES || body > cap - RANDD_HEADER_BYTES)
        return 0;
    h = (struct randd_header){ RANDD_PROTOCOL_VERSION, req->op, req->flags, (uint32_t)body };
    randd_header_encode(out, &h);
    switch (req->op) {
    case RANDD_OP_BYTES:
    case RANDD_OP_SEED:
    case RANDD_OP_BYTES_MEMFD:
        put32(b, req->n);
        break;
    case RANDD_OP_RANGE:
        put16(b, req->count);
        put16(b + 2, req->len);
        if (req->len)
            memcpy(b + 4, req->r, req->len);
        break;
    case RANDD_OP_ADD_ENTROPY:
        put32(b, req->entropy_bits);
        if (req->data_len)
            memcpy(b + 4, req->data, req->data_len);
        break;
    case RANDD_OP_PRIME:
        put16(b, req->bits);
        break;
    case RANDD_OP_INJECT_FAILURE:
        b[0] = req->test;
        if (req->data_len)
            memcpy(b + 1, req->data, req->data_len);
        break;
    }
    return RANDD_HEADER_BYTES + body;
}

int randd_reply_decode(const uint8_t head[RANDD_HEADER_BYTES], size_t want, uint32_t *length)
{
    struct randd_header h;

    randd_header_decode(head, &h);
    *length = h.length;
    if (h.version != RANDD_PROTOCOL_VERSION)
        return -EPROTO;
    if (h.code != RANDD_OK)
        return RANDD_ERR(h.code);
    return want == SIZE_MAX || h.length == want ? 0 : -EPROTO;
}

int randd_memfd_reply_decode(const uint8_t body[RANDD_MEMFD_REPLY_BODY], uint32_t want,
                             uint64_t arena_bytes, uint32_t *offset)
{
    *offset = be32(body);
    if (be32(body + 4) != want || *offset > arena_bytes || want > arena_bytes - *offset)
        return -EPROTO;
    return 0;
}

void randd_memfd_reply_encode(uint8_t out[RANDD_MEMFD_REPLY_BODY], uint32_t offset,
                              uint32_t n)
{
    put32(out, offset);
    put32(out + 4, n);
}

/* --- requests: validation -------------------------------------------------------------- */

static int reject(int status, char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int reject(int status, char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return status;
}

int randd_header_closes(const struct randd_header *h)
{
    return h->version != RANDD_PROTOCOL_VERSION || h->length > RANDD_MAX_REQUEST_BODY;
}

int randd_check_header(const struct randd_header *h, char *why, size_t whylen)
{
    /* The modes mean something only where bytes are drawn for the caller alone. */
    uint16_t allowed = RANDD_FLAG_NONBLOCK |
                       (h->code == RANDD_OP_BYTES || h->code == RANDD_OP_SEED ? RANDD_FLAG_MODES
                                                                               : 0);

    if (h->version != RANDD_PROTOCOL_VERSION)
        return reject(RANDD_BAD_VERSION, why, whylen, "protocol version %u not supported "
                      "(this daemon speaks %u)", h->version, RANDD_PROTOCOL_VERSION);
    if (h->length > RANDD_MAX_REQUEST_BODY)
        return reject(RANDD_TOO_LARGE, why, whylen, "request body of %u bytes (at most %u)",
                      h->length, RANDD_MAX_REQUEST_BODY);
    if (h->flags & ~allowed)
        return reject(RANDD_MALFORMED, why, whylen, "unknown flags 0x%04x",
                      h->flags & ~allowed);
    if (h->code < RANDD_OP_BYTES || h->code > RANDD_OP_LAST)
        return reject(RANDD_UNKNOWN_OP, why, whylen, "unknown op 0x%02x", h->code);
    return RANDD_OK;
}

/* BYTES, SEED and BYTES_MEMFD: one u32 n, 1 <= n <= max. */
static int parse_count(const struct randd_header *h, const uint8_t *body,
                       struct randd_request *req, uint32_t max, char *why, size_t whylen)
{
    const char *name = randd_op_wire_name(h->code);

    if (h->length != 4)
        return reject(RANDD_MALFORMED, why, whylen, "%s body is %u bytes, not 4", name,
                      h->length);
    req->n = be32(body);
    if (req->n == 0)
        return reject(RANDD_INVALID_ARGUMENT, why, whylen, "%s n = 0", name);
    if (req->n > max)
        return reject(RANDD_TOO_LARGE, why, whylen, "%s n = %u (at most %u)", name, req->n,
                      max);
    return RANDD_OK;
}

static int parse_range(const struct randd_header *h, const uint8_t *body,
                       struct randd_request *req, char *why, size_t whylen)
{
    size_t i;

    if (h->length < 4)
        return reject(RANDD_MALFORMED, why, whylen, "RANGE body is %u bytes, under 4", h->length);
    req->count = be16(body);
    req->len = be16(body + 2);
    req->r = body + 4;
    if (h->length != 4u + req->len)
        return reject(RANDD_MALFORMED, why, whylen, "RANGE body is %u bytes, len says %u",
                      h->length, 4u + req->len);
    if (req->count == 0 || req->len == 0)
        return reject(RANDD_INVALID_ARGUMENT, why, whylen, "RANGE count = %u, len = %u",
                      req->count, req->len);
    if (req->len > RANDD_MAX_RANGE_LEN)
        return reject(RANDD_TOO_LARGE, why, whylen, "RANGE len = %u bytes (at most %u)",
                      req->len, RANDD_MAX_RANGE_LEN);
    if ((uint32_t)req->count * req->len > RANDD_MAX_RANGE_REPLY)
        return reject(RANDD_TOO_LARGE, why, whylen, "RANGE count * len = %u (at most %u)",
                      (unsigned)req->count * req->len, RANDD_MAX_RANGE_REPLY);
    for (i = 0; i < req->len && req->r[i] == 0; i++)
        ;
    if (i == req->len)
        return reject(RANDD_INVALID_ARGUMENT, why, whylen, "RANGE r = 0");
    return RANDD_OK;
}

static int parse_add_entropy(const struct randd_header *h, const uint8_t *body,
                             struct randd_request *req, char *why, size_t whylen)
{
    if (h->length < 5)
        return reject(RANDD_MALFORMED, why, whylen, "ADD_ENTROPY body is %u bytes, under 5",
                      h->length);
    req->entropy_bits = be32(body);
    req->data = body + 4;
    req->data_len = h->length - 4;
    if (req->entropy_bits > 8 * req->data_len)
        return reject(RANDD_INVALID_ARGUMENT, why, whylen,
                      "ADD_ENTROPY claims %u bits for %zu bytes", req->entropy_bits,
                      req->data_len);
    return RANDD_OK;
}

static int parse_prime(const struct randd_header *h, const uint8_t *body,
                       struct randd_request *req, char *why, size_t whylen)
{
    if (h->length != 2)
        return reject(RANDD_MALFORMED, why, whylen, "PRIME body is %u bytes, not 2", h->length);
    req->bits = (uint16_t)(body[0] << 8 | body[1]);
    if (req->bits < RANDD_PRIME_MIN_BITS)
        return reject(RANDD_INVALID_ARGUMENT, why, whylen, "PRIME bits = %u (at least %u)",
                      req->bits, RANDD_PRIME_MIN_BITS);
    if (req->bits > RANDD_PRIME_MAX_BITS)
        return reject(RANDD_TOO_LARGE, why, whylen, "PRIME bits = %u (at most %u)",
                      req->bits, RANDD_PRIME_MAX_BITS);
    return RANDD_OK;
}

/* A test's number, then the source's name: printable, as STATUS's sources[].name. */
static int parse_inject_failure(const struct randd_header *h, const uint8_t *body,
                                struct randd_request *req, char *why, size_t whylen)
{
    if (h->length < 2 || h->length > 1 + RANDD_MAX_SOURCE_NAME)
        return reject(RANDD_MALFORMED, why, whylen, "INJECT_FAILURE body is %u bytes, not "
                      "2 to %u", h->length, 1 + RANDD_MAX_SOURCE_NAME);
    req->test = body[0];
    req->data = body + 1;
    req->data_len = h->length - 1;
    if (req->test >= RANDD_HEALTH_TEST_COUNT)
        return reject(RANDD_INVALID_ARGUMENT, why, whylen, "INJECT_FAILURE test = %u (at "
                      "most %u)", req->test, RANDD_HEALTH_TEST_COUNT - 1);
    for (size_t i = 0; i < req->data_len; i++)
        if (req->data[i] <= ' ' || req->data[i] > '~')
            return reject(RANDD_INVALID_ARGUMENT, why, whylen, "INJECT_FAILURE source name "
                          "holds byte 0x%02x", req->data[i]);
    return RANDD_OK;
}

int randd_parse_request(const struct randd_header *h, const uint8_t *body,
                        struct randd_request *req, char *why, size_t whylen)
{
    int status = randd_check_header(h, why, whylen);

    memset(req, 0, sizeof(*req));
    if (status != RANDD_OK)
        return status;
    req->op = h->code;
    req->flags = h->flags;
    switch (h->code) {
    case RANDD_OP_BYTES:
    case RANDD_OP_SEED:
        return parse_count(h, body, req, h->flags & RANDD_FLAG_FULL_ENTROPY
                           ? RANDD_MAX_FULL_ENTROPY
                           : h->code == RANDD_OP_SEED ? RANDD_MAX_SEED : RANDD_MAX_BYTES,
                           why, whylen);
    case RANDD_OP_BYTES_MEMFD:
        return parse_count(h, body, req, RANDD_MEMFD_SLOT_BYTES, why, whylen);
    case RANDD_OP_RANGE: return parse_range(h, body, req, why, whylen);
    case RANDD_OP_ADD_ENTROPY: return parse_add_entropy(h, body, req, why, whylen);
    case RANDD_OP_PRIME: return parse_prime(h, body, req, why, whylen);
    case RANDD_OP_INJECT_FAILURE: return parse_inject_failure(h, body, req, why, whylen);
    default:
        if (h->length != 0)
            return reject(RANDD_MALFORMED, why, whylen, "%s body is %u bytes, not 0",
                          randd_op_wire_name(h->code), h->length);
        return RANDD_OK;
    }
}

/* --- names ---------------------------------------------------------------------------------
 * One table per set, indexed by the enum it names: a value added to an enum without its row
 * fails to compile (the static asserts), so no list of names can drift from another. */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    const char *key, *wire;     /* STATUS's key; the op as lib/PROTOCOL.md and messages say it */
} op_names[] = {
    [0] = { "unknown", "UNKNOWN_OP" },
    [RANDD_OP_BYTES] = { "bytes", "BYTES" },
    [RANDD_OP_RANGE] = { "range", "RANGE" },
    [RANDD_OP_STATUS] = { "status", "STATUS" },
    [RANDD_OP_ADD_ENTROPY] = { "add_entropy", "ADD_ENTROPY" },
    [RANDD_OP_PRIME] = { "prime", "PRIME" },
    [RANDD_OP_SEED] = { "seed", "SEED" },
    [RANDD_OP_BYTES_MEMFD] = { "bytes_memfd", "BYTES_MEMFD" },
    [RANDD_OP_SELFTEST] = { "selftest", "SELFTEST" },
    [RANDD_OP_INJECT_FAILURE] = { "inject_failure", "INJECT_FAILURE" },
};
_Static_assert(COUNT(op_names) == RANDD_OP_LAST + 1, "an op without a name");

static const char *const mode_requests[] = { "bytes_pr", "bytes_full", "seed_pr", "seed_full" };
_Static_assert(COUNT(mode_requests) == RANDD_MODE_REQUEST_COUNT, "a mode without a name");

static const struct {
    const char *name, *text;
} statuses[] = {
    [RANDD_OK] = { "OK", "success" },
    [RANDD_BAD_VERSION] = { "BAD_VERSION", "protocol version not supported by the daemon" },
    [RANDD_UNKNOWN_OP] = { "UNKNOWN_OP", "operation unknown to the daemon" },
    [RANDD_MALFORMED] = { "MALFORMED", "malformed request" },
    [RANDD_TOO_LARGE] = { "TOO_LARGE", "request too large" },
    [RANDD_INVALID_ARGUMENT] = { "INVALID_ARGUMENT", "invalid argument" },
    [RANDD_NOT_PERMITTED] = { "NOT_PERMITTED", "not permitted" },
    [RANDD_NOT_READY] = { "NOT_READY",
                          "daemon not ready (not seeded, or no healthy entropy source)" },
    [RANDD_BUSY] = { "BUSY", "daemon busy (too many clients, or too many PRIME requests under "
                             "way); try again later" },
    [RANDD_INTERNAL] = { "INTERNAL", "internal error in the daemon" },
    [RANDD_NO_NOISE_SOURCE] = { "NO_NOISE_SOURCE",
                                "no healthy noise source can serve this mode" },
};
_Static_assert(COUNT(statuses) == RANDD_STATUS_COUNT, "a status without a name");

static const char *const source_states[] = {
    [RANDD_SOURCE_STARTUP] = "startup",
    [RANDD_SOURCE_HEALTHY] = "healthy",
    [RANDD_SOURCE_QUARANTINED] = "quarantined",
};
_Static_assert(COUNT(source_states) == RANDD_SOURCE_STATE_COUNT, "a state without a name");

static const char *const health_tests[] = {
    [RANDD_TEST_RCT] = "rct",
    [RANDD_TEST_APT] = "apt",
    [RANDD_TEST_LAG] = "lag",
    [RANDD_TEST_STUCK] = "stuck",
};
_Static_assert(COUNT(health_tests) == RANDD_HEALTH_TEST_COUNT, "a test without a name");

static const char *const engines[] = {
    [RANDD_ENGINE_CYMRIC] = "cymric",
    [RANDD_ENGINE_RANDEN] = "randen",
    [RANDD_ENGINE_CTR_DRBG] = "ctr_drbg",
    [RANDD_ENGINE_HASH_DRBG] = "hash_drbg",
};
_Static_assert(COUNT(engines) == RANDD_ENGINE_COUNT, "an engine without a name");

const char *randd_op_name(int op)
{
    return op_names[op > 0 && op <= RANDD_OP_LAST ? op : 0].key;
}

const char *randd_op_wire_name(int op)
{
    return op_names[op > 0 && op <= RANDD_OP_LAST ? op : 0].wire;
}

int randd_mode_request_index(uint8_t op, uint16_t flags)
{
    return (op == RANDD_OP_SEED) * 2 + !!(flags & RANDD_FLAG_FULL_ENTROPY);
}

const char *randd_mode_request_name(int i)
{
    return i >= 0 && i < RANDD_MODE_REQUEST_COUNT ? mode_requests[i] : "unknown";
}

const char *randd_status_name(int status)
{
    return status >= 0 && status < RANDD_STATUS_COUNT ? statuses[status].name
                                                       : "UNKNOWN_STATUS";
}

const char *randd_status_text(int status)
{
    return status >= 0 && status < RANDD_STATUS_COUNT ? statuses[status].text
                                                       : "unknown status from the daemon";
}

const char *randd_source_state_name(int state)
{
    return state >= 0 && state < RANDD_SOURCE_STATE_COUNT ? source_states[state] : "unknown";
}

const char *randd_engine_name(int engine)
{
    return engine >= 0 && engine < RANDD_ENGINE_COUNT ? engines[engine] : "unknown";
}

int randd_engine_from_name(const char *name)
{
    for (int i = 0; i < RANDD_ENGINE_COUNT; i++)
        if (!strcmp(name, engines[i]))
            return i;
    return -1;
}

const char *randd_health_test_name(int test)
{
    return test >= 0 && test < RANDD_HEALTH_TEST_COUNT ? health_tests[test] : "unknown";
}

int randd_health_test_from_name(const char *name)
{
    for (int i = 0; i < RANDD_HEALTH_TEST_COUNT; i++)
        if (!strcmp(name, health_tests[i]))
            return i;
    return -1;
}
