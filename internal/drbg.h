/* SP 800-90A DRBGs through OpenSSL 3's EVP_RAND: CTR_DRBG (AES-256, derivation function),
 * Hash_DRBG (SHA-512) and HMAC_DRBG (SHA-512), each fed exactly the entropy input, nonce and
 * personalisation string its caller hands over, by a seed source of our own (a small in-process
 * OpenSSL provider) that holds them once and wipes them after use. Owns the DRBG states, their
 * limits (SP 800-90A 10.1, tables 2 and 3), the error state of section 11.3 and its
 * known-answer self-test. Where entropy comes from, and when to reseed, belong to the caller.
 * Not thread-safe: one DRBG per thread, or the caller's lock around each call. */
#ifndef RANDD_DRBG_H
#define RANDD_DRBG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum randd_drbg_type {
    RANDD_DRBG_CTR_AES256,      /* CTR_DRBG, AES-256, with the derivation function (10.2.1) */
    RANDD_DRBG_HASH_SHA512,     /* Hash_DRBG, SHA-512 (10.1.1) */
    RANDD_DRBG_HMAC_SHA512,     /* HMAC_DRBG, SHA-512 (10.1.2) */
    RANDD_DRBG_TYPES
};

/* Every failure has a name (randd_drbg_strerror); none is silent. */
enum randd_drbg_status {
    RANDD_DRBG_OK = 0,
    RANDD_DRBG_E_ARGUMENT,          /* NULL with a length, unknown type, PR without entropy */
    RANDD_DRBG_E_ENTROPY_LENGTH,    /* entropy input outside [min_entropy, max_entropy] */
    RANDD_DRBG_E_NONCE_LENGTH,      /* nonce outside [min_nonce, max_nonce] */
    RANDD_DRBG_E_INPUT_LENGTH,      /* personalisation or additional input over max_input */
    RANDD_DRBG_E_REQUEST_LENGTH,    /* more than max_request bytes asked of one generate */
    RANDD_DRBG_E_NOT_INSTANTIATED,  /* generate or reseed before instantiate (or after wipe) */
    RANDD_DRBG_E_ALREADY_INSTANTIATED,
    RANDD_DRBG_E_RESEED_REQUIRED,   /* reseed_interval generates since the last (re)seed */
    RANDD_DRBG_E_ERROR_STATE,       /* an earlier OpenSSL failure left this DRBG unusable */
    RANDD_DRBG_E_SELFTEST_FAILED,   /* the known-answer self-test failed: no DRBG may run */
    RANDD_DRBG_E_OPENSSL,           /* OpenSSL refused; randd_drbg_detail says why */
    RANDD_DRBG_E_NO_MEMORY,
    RANDD_DRBG_STATUSES
};

/* SP 800-90A's own ceiling on reseed_interval for all three mechanisms (tables 2 and 3). */
#define RANDD_DRBG_MAX_RESEED_INTERVAL (UINT64_C(1) << 48)

/* What one DRBG takes and gives, as OpenSSL reports it for the instantiated mechanism. */
struct randd_drbg_limits {
    unsigned strength;          /* security strength, bits */
    uint64_t reseed_interval;   /* generates allowed between (re)seeds; refused after */
    size_t max_request;         /* bytes one generate may return */
    size_t min_entropy, max_entropy;
    size_t min_nonce, max_nonce;
    size_t max_input;           /* personalisation string or additional input, bytes */
};

struct randd_drbg;

const char *randd_drbg_name(enum randd_drbg_type type);      /* "CTR_DRBG AES-256 (df)", ... */
const char *randd_drbg_strerror(int status);

/* A new DRBG of the given type, not yet instantiated. */
int randd_drbg_new(enum randd_drbg_type type, struct randd_drbg **out);

/* SP 800-90A 9.1 at the mechanism's full strength (256 bits). entropy and nonce are taken as
 * given; pers may be NULL with pers_len 0. */
int randd_drbg_instantiate(struct randd_drbg *d, const void *entropy, size_t entropy_len,
                           const void *nonce, size_t nonce_len,
                           const void *pers, size_t pers_len);

/* SP 800-90A 9.2 with the caller's fresh entropy and optional additional input. */
int randd_drbg_reseed(struct randd_drbg *d, const void *entropy, size_t entropy_len,
                      const void *addl, size_t addl_len);

/* SP 800-90A 9.3.1: n bytes (n <= max_request), with optional additional input. With
 * prediction_resistance the DRBG first reseeds with pr_entropy (and the additional input, as
 * 9.3.1 step 7 says), which must then be given; without it pr_entropy must be NULL. On any
 * failure out is zeroed. In a forked child the copied DRBG refuses (RANDD_DRBG_E_OPENSSL:
 * OpenSSL wants a reseed only fresh entropy could give) until it is uninstantiated and
 * instantiated afresh, or generates with prediction resistance. */
int randd_drbg_generate(struct randd_drbg *d, void *out, size_t n,
                        const void *addl, size_t addl_len,
                        bool prediction_resistance, const void *pr_entropy, size_t pr_len);

/* SP 800-90A 9.4: the state is wiped; the DRBG may be instantiated again. */
int randd_drbg_uninstantiate(struct randd_drbg *d);

/* Uninstantiate and free; NULL is ignored. */
void randd_drbg_free(struct randd_drbg *d);

int randd_drbg_limits(const struct randd_drbg *d, struct randd_drbg_limits *limits);

/* Lower the reseed interval (1 .. RANDD_DRBG_MAX_RESEED_INTERVAL): a policy may reseed sooner
 * than 90A requires. */
int randd_drbg_set_reseed_interval(struct randd_drbg *d, uint64_t interval);

/* Generates since the last instantiate or reseed. */
uint64_t randd_drbg_requests_since_seed(const struct randd_drbg *d);

/* OpenSSL's own words for the last RANDD_DRBG_E_OPENSSL on this DRBG ("" if none). */
const char *randd_drbg_detail(const struct randd_drbg *d);

/* True when the internal state holds no secret: OpenSSL's zeroisation check (11.3.4's
 * uninstantiate test) and our seed source's buffers. */
bool randd_drbg_is_zeroized(const struct randd_drbg *d);

/* --- health tests, SP 800-90A 11.3 -------------------------------------------------------
 * Known answers from NIST's CAVP vectors for each mechanism: instantiate, reseed, generate
 * (with and without prediction resistance) and uninstantiate (the state must read as zero).
 * Run it before the first instantiate and periodically after. A failure puts every DRBG of
 * this process in the error state: instantiate, reseed and generate are refused
 * (RANDD_DRBG_E_SELFTEST_FAILED) until a later self-test passes. Returns 0, or -1 with the
 * failed mechanism and step named in why. */
int randd_drbg_selftest(char *why, size_t whylen);

/* True while the last self-test failed. */
bool randd_drbg_in_error_state(void);

/* For tests: make every self-test answer wrong (one bit of each expected output flipped),
 * so the failure path can be exercised. */
void randd_drbg_selftest_inject_fault(bool on);

#endif
