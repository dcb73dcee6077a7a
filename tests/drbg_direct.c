/* OpenSSL's EVP_RAND DRBGs driven directly (drbg_direct.h). */
#include "drbg_direct.h"

#include <string.h>

#include <check.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

static void set_test_entropy(struct drbg_direct *x, const uint8_t *entropy, size_t len)
{
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)entropy, len),
        OSSL_PARAM_END
    };

    ck_assert(EVP_RAND_CTX_set_params(x->parent, params));
}

void drbg_direct_instantiate(struct drbg_direct *x, bool ctr, const uint8_t *entropy,
                             size_t entropy_len, const uint8_t *nonce, size_t nonce_len,
                             const char *pers)
{
    unsigned int strength = 256;
    int use_df = 1;
    OSSL_PARAM params[4], *p = params;
    OSSL_PARAM seed[] = {
        OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)entropy,
                                          entropy_len),
        OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_NONCE, (void *)nonce, nonce_len),
        OSSL_PARAM_END
    };
    EVP_RAND *alg = EVP_RAND_fetch(NULL, "TEST-RAND", NULL);

    ck_assert_msg(alg != NULL, "OpenSSL has no TEST-RAND");
    x->parent = EVP_RAND_CTX_new(alg, NULL);
    EVP_RAND_free(alg);
    ck_assert(x->parent != NULL);
    params[0] = OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &strength);
    params[1] = OSSL_PARAM_construct_end();
    ck_assert(EVP_RAND_CTX_set_params(x->parent, params));

    alg = EVP_RAND_fetch(NULL, ctr ? "CTR-DRBG" : "HASH-DRBG", NULL);
    ck_assert(alg != NULL);
    x->rand = EVP_RAND_CTX_new(alg, x->parent);
    EVP_RAND_free(alg);
    ck_assert(x->rand != NULL);
    if (ctr) {
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, "AES-256-CTR", 0);
        *p++ = OSSL_PARAM_construct_int(OSSL_DRBG_PARAM_USE_DF, &use_df);
    } else {
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, "SHA512", 0);
    }
    *p = OSSL_PARAM_construct_end();
    ck_assert(EVP_RAND_CTX_set_params(x->rand, params));
    ck_assert(EVP_RAND_instantiate(x->parent, 256, 0, NULL, 0, seed));
    ck_assert(EVP_RAND_instantiate(x->rand, 256, 0, (const unsigned char *)pers, strlen(pers),
                                   NULL));
}

void drbg_direct_reseed(struct drbg_direct *x, const uint8_t *entropy, size_t len)
{
    set_test_entropy(x, entropy, len);
    ck_assert(EVP_RAND_reseed(x->rand, 0, NULL, 0, NULL, 0));
}

void drbg_direct_generate(struct drbg_direct *x, uint8_t *out, size_t n)
{
    ck_assert(EVP_RAND_generate(x->rand, out, n, 256, 0, NULL, 0));
}

void drbg_direct_free(struct drbg_direct *x)
{
    EVP_RAND_CTX_free(x->rand);
    EVP_RAND_CTX_free(x->parent);
    memset(x, 0, sizeof(*x));
}
