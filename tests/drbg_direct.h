/* For the daemon's DRBG engine tests (test_pool.c, test_branch.c): OpenSSL's EVP_RAND DRBG
 * driven directly, with its TEST-RAND parent handing over exactly the entropy input and
 * nonce given, as OpenSSL's own evp_test does: the reference the engine must match byte for
 * byte. Asserts (Check) on any OpenSSL failure. */
#ifndef RANDD_TEST_DRBG_DIRECT_H
#define RANDD_TEST_DRBG_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

struct drbg_direct {
    EVP_RAND_CTX *parent, *rand;
};

/* ctr: CTR_DRBG AES-256 with df; else Hash_DRBG SHA-512. Then instantiated at strength 256. */
void drbg_direct_instantiate(struct drbg_direct *x, bool ctr, const uint8_t *entropy,
                             size_t entropy_len, const uint8_t *nonce, size_t nonce_len,
                             const char *pers);
/* SP 800-90A reseed with this entropy input, no additional input. */
void drbg_direct_reseed(struct drbg_direct *x, const uint8_t *entropy, size_t len);
/* n bytes in one EVP_RAND_generate: OpenSSL splits it at max_request itself. */
void drbg_direct_generate(struct drbg_direct *x, uint8_t *out, size_t n);
void drbg_direct_free(struct drbg_direct *x);

#endif
