/* For tests/integration/test_provider.sh: OpenSSL's own DRBG (HASH-DRBG or CTR-DRBG, argv[1])
 * on randd.so's seed source, loaded through OPENSSL_CONF, generating with prediction
 * resistance and then without. Prints randd's counts of prediction-resistant and ordinary
 * SEED requests (STATUS requests.seed_pr and requests.seed) made by each phase, so the test
 * sees that each prediction-resistant generate took one prediction-resistant seed, and the
 * daemon one noise-source reseed for it (STATUS noise.noise_reseeds), and the ordinary ones
 * none. Exit 0 when every step worked; 1 with OpenSSL's error otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "randd.h"

#define GENERATES 3

/* A count in the object named section of randd's STATUS ("requests": "seed", "seed_pr";
 * "noise": "noise_reseeds"), or -1. */
static long count_of(const char *section, const char *key)
{
    char *json = NULL, pattern[32], object[32];
    randd_handle *h;
    const char *at;
    long n = -1;

    snprintf(pattern, sizeof(pattern), "\"%s\":", key);
    snprintf(object, sizeof(object), "\"%s\":{", section);
    if (randd_open(&h, NULL) < 0)
        return -1;
    if (randd_status(h, &json) > 0 && (at = strstr(json, object)) &&
        (at = strstr(at, pattern)))
        n = strtol(at + strlen(pattern), NULL, 10);
    free(json);
    randd_close(h);
    return n;
}

static int failed(const char *what)
{
    char why[512];

    ERR_error_string_n(ERR_peek_last_error(), why, sizeof(why));
    fprintf(stderr, "provider-pr: %s: %s\n", what, why);
    ERR_print_errors_fp(stderr);
    return 1;
}

/* GENERATES generates with prediction_resistance = pr; prints the phase's counts. */
static int phase(EVP_RAND_CTX *drbg, int pr, const char *name)
{
    long pr0 = count_of("requests", "seed_pr"), plain0 = count_of("requests", "seed");
    long reseeds0 = count_of("noise", "noise_reseeds");
    unsigned char out[64];

    for (int i = 0; i < GENERATES; i++)
        if (EVP_RAND_generate(drbg, out, sizeof(out), 256, pr, NULL, 0) != 1)
            return failed(pr ? "generate with prediction resistance" : "generate");
    printf("%s: %d generates, seed_pr +%ld, seed +%ld, noise reseeds +%ld\n", name, GENERATES,
           count_of("requests", "seed_pr") - pr0, count_of("requests", "seed") - plain0,
           count_of("noise", "noise_reseeds") - reseeds0);
    return 0;
}

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "HASH-DRBG";
    int ctr = !strcmp(kind, "CTR-DRBG");
    OSSL_PARAM params[] = {
        ctr ? OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, (char *)"AES-256-CTR", 0)
            : OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_END,
    };
    EVP_RAND *source = EVP_RAND_fetch(NULL, "RANDD", "provider=randd");
    EVP_RAND *child = EVP_RAND_fetch(NULL, kind, NULL);
    EVP_RAND_CTX *seed = NULL, *drbg = NULL;
    int rc = 1;

    if (!source || !child) {
        rc = failed(!source ? "RANDD (is OPENSSL_CONF loading randd.so?)" : kind);
        goto out;
    }
    seed = EVP_RAND_CTX_new(source, NULL);
    if (!seed || EVP_RAND_instantiate(seed, 256, 0, NULL, 0, NULL) != 1) {
        rc = failed("the seed source");
        goto out;
    }
    drbg = EVP_RAND_CTX_new(child, seed);
    if (!drbg || EVP_RAND_instantiate(drbg, 256, 0, NULL, 0, params) != 1) {
        rc = failed(kind);
        goto out;
    }
    if ((rc = phase(drbg, 1, "prediction-resistant")) == 0)
        rc = phase(drbg, 0, "ordinary");
out:
    EVP_RAND_CTX_free(drbg);
    EVP_RAND_CTX_free(seed);
    EVP_RAND_free(child);
    EVP_RAND_free(source);
    return rc;
}
