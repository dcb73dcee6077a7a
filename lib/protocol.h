/* Wire protocol v1 (lib/PROTOCOL.md): constants, header encoding, request validation, and
 * the names STATUS speaks (ops, statuses, source states, engines), each set one enum and one
 * table in protocol.c that the daemon's STATUS, randctl and the library all read. Shared by
 * the daemon and the client library; pure functions, no I/O. */
#ifndef RANDD_PROTOCOL_H
#define RANDD_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "randd.h"                 /* enum randd_status */

#define RANDD_PROTOCOL_VERSION   1
#define RANDD_HEADER_BYTES       8
#define RANDD_MAX_REQUEST_BODY   (64u << 10)   /* larger: framing untrusted, reply and close */
#define RANDD_MAX_BYTES          (16u << 20)   /* one BYTES request */
#define RANDD_MAX_RANGE_LEN      1024          /* bytes of r: 8192 bits */
#define RANDD_MAX_RANGE_REPLY    (1u << 20)    /* count * len */
#define RANDD_MAX_SEED           4096          /* one SEED request: a seed, not a stream */
#define RANDD_MEMFD_SLOT_BYTES   (1u << 20)    /* one BYTES_MEMFD request: a slot */
#define RANDD_MEMFD_SLOTS        2             /* written in turn: one filled, one being read */
#define RANDD_MEMFD_ARENA_BYTES  (RANDD_MEMFD_SLOTS * RANDD_MEMFD_SLOT_BYTES)
#define RANDD_MEMFD_REPLY_BODY   8             /* u32 offset, u32 n */
#define RANDD_FLAG_NONBLOCK      0x0001
/* Request modes (issue 28), on BYTES and SEED only; lib/PROTOCOL.md, "Noise-source modes".
 * Both set: full entropy, which implies prediction resistance. */
#define RANDD_FLAG_PREDICTION_RESISTANT 0x0002   /* a noise-source reseed before generating */
#define RANDD_FLAG_FULL_ENTROPY  0x0004   /* every output bit backed by fresh noise entropy */
#define RANDD_FLAG_MODES         (RANDD_FLAG_PREDICTION_RESISTANT | RANDD_FLAG_FULL_ENTROPY)
#define RANDD_MAX_FULL_ENTROPY   4096     /* one FULL_ENTROPY request, in bytes */
/* One PREDICTION_RESISTANT request that mode = approved serves: what one SP 800-90A generate
 * (65536 bytes at most) puts in the reply's first piece, after the header, so the whole reply
 * follows one reseed. librandd splits every prediction-resistant call so. */
#define RANDD_MAX_PREDICTION_RESISTANT (65536 - RANDD_HEADER_BYTES)

enum randd_op {
    RANDD_OP_BYTES = 0x01,
    RANDD_OP_RANGE = 0x02,
    RANDD_OP_STATUS = 0x03,
    RANDD_OP_ADD_ENTROPY = 0x04,
    RANDD_OP_PRIME = 0x05,
    RANDD_OP_SEED = 0x06,          /* BYTES to seed another generator, counted apart */
    RANDD_OP_BYTES_MEMFD = 0x07,   /* BYTES written into a memfd shared with the client */
    RANDD_OP_SELFTEST = 0x08,      /* root: run the self-tests now */
    RANDD_OP_INJECT_FAILURE = 0x09,    /* root: make a source's health test fail */
};
#define RANDD_OP_LAST            RANDD_OP_INJECT_FAILURE
#define RANDD_MAX_SOURCE_NAME    31     /* INJECT_FAILURE: a source's name, in bytes */
#define RANDD_PRIME_MIN_BITS     16
#define RANDD_PRIME_MAX_BITS     4096
#define RANDD_PRIME_PER_UID      4      /* PRIMEs queued or running per peer uid; more: BUSY */

#define RANDD_STATUS_COUNT       (RANDD_NO_NOISE_SOURCE + 1)   /* enum randd_status, randd.h */

/* Request: version, op, flags. Reply: version, status, reserved (0). Both: body length. */
struct randd_header {
    uint8_t version;
    uint8_t code;          /* op in a request, status in a reply */
    uint16_t flags;
    uint32_t length;
};

void randd_header_encode(uint8_t out[RANDD_HEADER_BYTES], const struct randd_header *h);
void randd_header_decode(const uint8_t in[RANDD_HEADER_BYTES], struct randd_header *h);

/* A request's op, flags and arguments: what randd_parse_request decodes from a valid frame,
 * and what randd_request_encode turns into one. */
struct randd_request {
    uint8_t op;
    uint16_t flags;
    uint32_t n;                     /* BYTES, SEED, BYTES_MEMFD */
    uint16_t count, len;            /* RANGE */
    const uint8_t *r;               /* RANGE: points into the body */
    uint32_t entropy_bits;          /* ADD_ENTROPY */
    uint16_t bits;                  /* PRIME */
    uint8_t test;                   /* INJECT_FAILURE: enum randd_health_test */
    const uint8_t *data;            /* ADD_ENTROPY, INJECT_FAILURE (the source's name): points
                                     * into the body */
    size_t data_len;
};

/* The one request encoder, for every client (librandd, randctl's benchmark, the soak, the
 * tests): req's op with its arguments as one whole frame (header and body) in out, which has
 * room for cap bytes. Returns the frame's length, or 0 when it does not fit or req->op is not
 * an op. The arguments are encoded as they are, not judged: that is the daemon's part (a test
 * may ask for n = 0 on purpose). */
size_t randd_request_encode(uint8_t *out, size_t cap, const struct randd_request *req);

/* A reply's header as a client judges it: 0 for an OK reply whose body is want bytes (want
 * SIZE_MAX: any length), RANDD_ERR(status) for an error reply (the body is its message), or
 * -EPROTO for what no randd sends. *length is the body's length in every case. */
int randd_reply_decode(const uint8_t head[RANDD_HEADER_BYTES], size_t want, uint32_t *length);

/* A BYTES_MEMFD reply's OK body as a client judges it: 0 when it places want bytes inside an
 * arena of arena_bytes (the memfd's size), with their offset in *offset; -EPROTO otherwise. */
int randd_memfd_reply_decode(const uint8_t body[RANDD_MEMFD_REPLY_BODY], uint32_t want,
                             uint64_t arena_bytes, uint32_t *offset);

/* The OK body of a BYTES_MEMFD reply: the n bytes are at offset in the connection's arena. */
void randd_memfd_reply_encode(uint8_t out[RANDD_MEMFD_REPLY_BODY], uint32_t offset,
                              uint32_t n);

/* Checks the header alone (before the body is read). Returns RANDD_OK, or the status to
 * reply with and a message in why. BAD_VERSION and an oversized body mean the connection
 * must be closed after the reply: see randd_status_closes(). */
int randd_check_header(const struct randd_header *h, char *why, size_t whylen);

/* Validates a complete request and decodes it into req. Returns a status as above. */
int randd_parse_request(const struct randd_header *h, const uint8_t *body,
                        struct randd_request *req, char *why, size_t whylen);

/* Whether the framing can no longer be trusted after this header's error. */
int randd_header_closes(const struct randd_header *h);

/* --- names -------------------------------------------------------------------------------
 * Each returns its set's name for a value, or a placeholder for a value outside the set. */

/* STATUS's key for requests of op ("bytes", ...), as counted by op; op 0 stands for the
 * unknown ops (RANDD_OP_LAST + 1 keys in all). */
const char *randd_op_name(int op);
/* The op as the protocol names it in messages ("BYTES_MEMFD"); "UNKNOWN_OP" outside the set. */
const char *randd_op_wire_name(int op);

/* BYTES and SEED asked with a mode, counted apart from requests.bytes and requests.seed:
 * index (op == SEED) * 2 + (FULL_ENTROPY set): "bytes_pr", "bytes_full", "seed_pr",
 * "seed_full" (STATUS's requests keys, randd_requests_total's op labels). */
#define RANDD_MODE_REQUEST_COUNT 4
int randd_mode_request_index(uint8_t op, uint16_t flags);
const char *randd_mode_request_name(int i);

/* "OK", "BAD_VERSION", ...: STATUS's key for replies of that status. */
const char *randd_status_name(int status);
/* What a status means, for people: randd_strerror's text. */
const char *randd_status_text(int status);

/* A source's state as STATUS gives it (sources[].state); daemon/health.c's state machine. */
enum randd_source_state {
    RANDD_SOURCE_STARTUP,             /* the start-up test (SP 800-90B 4.3) is running */
    RANDD_SOURCE_HEALTHY,
    RANDD_SOURCE_QUARANTINED,         /* failed a test; retried after a back-off */
};
#define RANDD_SOURCE_STATE_COUNT (RANDD_SOURCE_QUARANTINED + 1)
const char *randd_source_state_name(int state);

/* The health tests a source may run (daemon/health.c), as INJECT_FAILURE names them. */
enum randd_health_test {
    RANDD_TEST_RCT,                   /* repetition count, SP 800-90B 4.4.1 */
    RANDD_TEST_APT,                   /* adaptive proportion, SP 800-90B 4.4.2 */
    RANDD_TEST_LAG,                   /* randd's lag test: short cycles (jitter) */
    RANDD_TEST_STUCK,                 /* the source's own stuck test (jitter) */
};
#define RANDD_HEALTH_TEST_COUNT (RANDD_TEST_STUCK + 1)
const char *randd_health_test_name(int test);
/* The test called name ("rct", "apt", "lag", "stuck"), or -1. */
int randd_health_test_from_name(const char *name);

/* The generators the daemon serves from (the engine key, STATUS's pool.engine). */
enum randd_engine {
    RANDD_ENGINE_CYMRIC,              /* the default */
    RANDD_ENGINE_RANDEN,              /* AES-NI only */
    RANDD_ENGINE_CTR_DRBG,            /* SP 800-90A CTR_DRBG, AES-256, df (hardware AES only) */
    RANDD_ENGINE_HASH_DRBG,           /* SP 800-90A Hash_DRBG, SHA-512 */
};
#define RANDD_ENGINE_COUNT (RANDD_ENGINE_HASH_DRBG + 1)
/* The engines that are SP 800-90A DRBGs (daemon/drbg_engine.c). */
#define RANDD_ENGINE_IS_DRBG(e) ((e) == RANDD_ENGINE_CTR_DRBG || (e) == RANDD_ENGINE_HASH_DRBG)
const char *randd_engine_name(int engine);
/* The engine called name, or -1. */
int randd_engine_from_name(const char *name);

#endif
