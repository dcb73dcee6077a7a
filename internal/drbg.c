/* SP 800-90A DRBGs on OpenSSL 3's EVP_RAND, fed exactly the caller's bytes (internal/drbg.h).
 *
 * Layout: the seed source (a provider of our own, loaded into a private library context),
 * then the DRBG wrapper: create, instantiate, reseed, generate, uninstantiate, limits.
 *
 * Why a seed source of our own: an EVP_RAND DRBG takes its entropy input and nonce from its
 * parent, never as arguments to instantiate. OpenSSL's TEST-RAND parent would take our bytes,
 * but frees them unwiped and hands them out again on request. Ours holds one entropy input
 * and one nonce in fixed buffers, hands each out once (the DRBG's clear_seed call wipes it),
 * and is wiped again by the wrapper after every operation, whatever happened. A DRBG that
 * wants entropy nobody gave it (OpenSSL's own reseed-on-fork, say) fails loudly instead of
 * reusing old input. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "drbg.h"
#include "drbg_internal.h"

/* ---- names --------------------------------------------------------------------------- */

static const char *const drbg_names[RANDD_DRBG_TYPES] = {
    [RANDD_DRBG_CTR_AES256] = "CTR_DRBG AES-256 (df)",
    [RANDD_DRBG_HASH_SHA512] = "Hash_DRBG SHA-512",
    [RANDD_DRBG_HMAC_SHA512] = "HMAC_DRBG SHA-512",
};

static const char *const status_names[RANDD_DRBG_STATUSES] = {
    [RANDD_DRBG_OK] = "ok",
    [RANDD_DRBG_E_ARGUMENT] = "invalid argument",
    [RANDD_DRBG_E_ENTROPY_LENGTH] = "entropy input length out of range",
    [RANDD_DRBG_E_NONCE_LENGTH] = "nonce length out of range",
    [RANDD_DRBG_E_INPUT_LENGTH] = "personalisation string or additional input too long",
    [RANDD_DRBG_E_REQUEST_LENGTH] = "request longer than max_request",
    [RANDD_DRBG_E_NOT_INSTANTIATED] = "DRBG not instantiated",
    [RANDD_DRBG_E_ALREADY_INSTANTIATED] = "DRBG already instantiated",
    [RANDD_DRBG_E_RESEED_REQUIRED] = "reseed required: reseed interval used up",
    [RANDD_DRBG_E_ERROR_STATE] = "DRBG in error state after a failure: uninstantiate it",
    [RANDD_DRBG_E_SELFTEST_FAILED] = "DRBG known-answer self-test failed: output halted",
    [RANDD_DRBG_E_OPENSSL] = "OpenSSL refused the operation",
    [RANDD_DRBG_E_NO_MEMORY] = "out of memory",
};

const char *randd_drbg_name(enum randd_drbg_type type)
{
    return (unsigned)type < RANDD_DRBG_TYPES ? drbg_names[type] : "unknown DRBG";
}

const char *randd_drbg_strerror(int status)
{
    return status >= 0 && status < RANDD_DRBG_STATUSES ? status_names[status]
                                                       : "unknown DRBG status";
}

/* ---- the seed source ------------------------------------------------------------------
 * A RAND algorithm with get_seed/clear_seed and nonce, nothing else worth the name: it
 * generates no bytes of its own. */

#define SEED_MAX_ENTROPY 512
#define SEED_MAX_NONCE   256
#define SEED_PARAM_ENTROPY "randd-entropy"
#define SEED_PARAM_NONCE   "randd-nonce"
#define SEED_PARAM_EMPTY   "randd-empty"
#define SEED_PROVIDER      "randd-drbg-seed"
#define SEED_ALGORITHM     "RANDD-SEED"

struct seed_source {
    unsigned char entropy[SEED_MAX_ENTROPY];
    size_t entropy_len;
    unsigned char nonce[SEED_MAX_NONCE];
    size_t nonce_len;
    int state;
};

static void seed_wipe(struct seed_source *s)
{
    OPENSSL_cleanse(s->entropy, sizeof(s->entropy));
    OPENSSL_cleanse(s->nonce, sizeof(s->nonce));
    s->entropy_len = s->nonce_len = 0;
}

static void *seed_new(void *provctx, void *parent, const OSSL_DISPATCH *parent_calls)
{
    (void)provctx;
    (void)parent_calls;
    if (parent != NULL)
        return NULL;        /* the root of its chain, by design */
    return OPENSSL_zalloc(sizeof(struct seed_source));
}

static void seed_free(void *vs)
{
    if (vs != NULL) {
        seed_wipe(vs);
        OPENSSL_free(vs);
    }
}

static int seed_instantiate(void *vs, unsigned int strength, int prediction_resistance,
                            const unsigned char *pstr, size_t pstr_len, const OSSL_PARAM params[])
{
    (void)strength, (void)prediction_resistance, (void)pstr, (void)pstr_len, (void)params;
    ((struct seed_source *)vs)->state = EVP_RAND_STATE_READY;
    return 1;
}

static int seed_uninstantiate(void *vs)
{
    seed_wipe(vs);
    ((struct seed_source *)vs)->state = EVP_RAND_STATE_UNINITIALISED;
    return 1;
}

/* Random bytes are the DRBG's business, not the seed source's. */
static int seed_generate(void *vs, unsigned char *out, size_t outlen, unsigned int strength,
                         int prediction_resistance, const unsigned char *adin, size_t adin_len)
{
    (void)vs, (void)strength, (void)prediction_resistance, (void)adin, (void)adin_len;
    OPENSSL_cleanse(out, outlen);
    return 0;
}

static size_t seed_get_seed(void *vs, unsigned char **buffer, int entropy, size_t min_len,
                            size_t max_len, int prediction_resistance,
                            const unsigned char *adin, size_t adin_len)
{
    struct seed_source *s = vs;

    (void)entropy, (void)prediction_resistance, (void)adin, (void)adin_len;
    if (s->entropy_len == 0 || s->entropy_len < min_len || s->entropy_len > max_len)
        return 0;
    *buffer = s->entropy;
    return s->entropy_len;
}

/* Called by the DRBG as soon as it has absorbed the seed: it is never handed out twice. */
static void seed_clear_seed(void *vs, unsigned char *buffer, size_t len)
{
    struct seed_source *s = vs;

    (void)buffer, (void)len;
    OPENSSL_cleanse(s->entropy, sizeof(s->entropy));
    s->entropy_len = 0;
}

static size_t seed_nonce(void *vs, unsigned char *out, unsigned int strength,
                         size_t min_noncelen, size_t max_noncelen)
{
    struct seed_source *s = vs;

    (void)strength;
    if (s->nonce_len == 0 || s->nonce_len < min_noncelen || s->nonce_len > max_noncelen)
        return 0;
    if (out != NULL) {
        memcpy(out, s->nonce, s->nonce_len);
        OPENSSL_cleanse(s->nonce, sizeof(s->nonce));
        size_t n = s->nonce_len;
        s->nonce_len = 0;
        return n;
    }
    return s->nonce_len;
}

static int seed_get_ctx_params(void *vs, OSSL_PARAM params[])
{
    struct seed_source *s = vs;
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STATE)) != NULL
        && !OSSL_PARAM_set_int(p, s->state))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STRENGTH)) != NULL
        && !OSSL_PARAM_set_uint(p, 256))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_MAX_REQUEST)) != NULL
        && !OSSL_PARAM_set_size_t(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, SEED_PARAM_EMPTY)) != NULL) {
        unsigned char any = 0;

        for (size_t i = 0; i < sizeof(s->entropy); i++)
            any |= s->entropy[i];
        for (size_t i = 0; i < sizeof(s->nonce); i++)
            any |= s->nonce[i];
        if (!OSSL_PARAM_set_int(p, any == 0 && s->entropy_len == 0 && s->nonce_len == 0))
            return 0;
    }
    return 1;
}

static const OSSL_PARAM *seed_gettable_ctx_params(void *vs, void *provctx)
{
    static const OSSL_PARAM known[] = {
        OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, NULL),
        OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, NULL),
        OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
        OSSL_PARAM_int(SEED_PARAM_EMPTY, NULL),
        OSSL_PARAM_END
    };

    (void)vs, (void)provctx;
    return known;
}

/* Setting either buffer first wipes it: an empty value is how the wrapper forgets. */
static int seed_set_ctx_params(void *vs, const OSSL_PARAM params[])
{
    struct seed_source *s = vs;
    const OSSL_PARAM *p;
    const void *ptr;
    size_t len;

    if ((p = OSSL_PARAM_locate_const(params, SEED_PARAM_ENTROPY)) != NULL) {
        OPENSSL_cleanse(s->entropy, sizeof(s->entropy));
        s->entropy_len = 0;
        if (!OSSL_PARAM_get_octet_string_ptr(p, &ptr, &len) || len > sizeof(s->entropy))
            return 0;
        if (len > 0)
            memcpy(s->entropy, ptr, len);
        s->entropy_len = len;
    }
    if ((p = OSSL_PARAM_locate_const(params, SEED_PARAM_NONCE)) != NULL) {
        OPENSSL_cleanse(s->nonce, sizeof(s->nonce));
        s->nonce_len = 0;
        if (!OSSL_PARAM_get_octet_string_ptr(p, &ptr, &len) || len > sizeof(s->nonce))
            return 0;
        if (len > 0)
            memcpy(s->nonce, ptr, len);
        s->nonce_len = len;
    }
    return 1;
}

static const OSSL_PARAM *seed_settable_ctx_params(void *vs, void *provctx)
{
    static const OSSL_PARAM known[] = {
        OSSL_PARAM_octet_string(SEED_PARAM_ENTROPY, NULL, 0),
        OSSL_PARAM_octet_string(SEED_PARAM_NONCE, NULL, 0),
        OSSL_PARAM_END
    };

    (void)vs, (void)provctx;
    return known;
}

static int seed_verify_zeroization(void *vs)
{
    const struct seed_source *s = vs;
    unsigned char any = 0;

    for (size_t i = 0; i < sizeof(s->entropy); i++)
        any |= s->entropy[i];
    for (size_t i = 0; i < sizeof(s->nonce); i++)
        any |= s->nonce[i];
    return any == 0;
}

typedef void (*seed_fn)(void);
static const OSSL_DISPATCH seed_functions[] = {
    { OSSL_FUNC_RAND_NEWCTX, (seed_fn)seed_new },
    { OSSL_FUNC_RAND_FREECTX, (seed_fn)seed_free },
    { OSSL_FUNC_RAND_INSTANTIATE, (seed_fn)seed_instantiate },
    { OSSL_FUNC_RAND_UNINSTANTIATE, (seed_fn)seed_uninstantiate },
    { OSSL_FUNC_RAND_GENERATE, (seed_fn)seed_generate },
    { OSSL_FUNC_RAND_NONCE, (seed_fn)seed_nonce },
    { OSSL_FUNC_RAND_GET_SEED, (seed_fn)seed_get_seed },
    { OSSL_FUNC_RAND_CLEAR_SEED, (seed_fn)seed_clear_seed },
    { OSSL_FUNC_RAND_GET_CTX_PARAMS, (seed_fn)seed_get_ctx_params },
    { OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS, (seed_fn)seed_gettable_ctx_params },
    { OSSL_FUNC_RAND_SET_CTX_PARAMS, (seed_fn)seed_set_ctx_params },
    { OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS, (seed_fn)seed_settable_ctx_params },
    { OSSL_FUNC_RAND_VERIFY_ZEROIZATION, (seed_fn)seed_verify_zeroization },
    { 0, NULL }
};

static const OSSL_ALGORITHM seed_algorithms[] = {
    { SEED_ALGORITHM, "provider=" SEED_PROVIDER, seed_functions,
      "randd: entropy input and nonce handed over by the caller, once" },
    { NULL, NULL, NULL, NULL }
};

static const OSSL_ALGORITHM *seed_query(void *provctx, int operation_id, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    return operation_id == OSSL_OP_RAND ? seed_algorithms : NULL;
}

static const OSSL_DISPATCH seed_provider_functions[] = {
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (seed_fn)seed_query },
    { 0, NULL }
};

static int seed_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                              const OSSL_DISPATCH **out, void **provctx)
{
    (void)in;
    *out = seed_provider_functions;
    *provctx = (void *)handle;
    return 1;
}

/* One private library context for the process: the DRBGs' algorithms come from OpenSSL's
 * default provider and our seed source, whatever the application's own configuration
 * loads into the default context. Never freed: DRBGs may live until exit. */
static OSSL_LIB_CTX *drbg_libctx;
static pthread_once_t drbg_libctx_once = PTHREAD_ONCE_INIT;

static void drbg_libctx_create(void)
{
    OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();

    if (ctx == NULL)
        return;
    if (!OSSL_PROVIDER_add_builtin(ctx, SEED_PROVIDER, seed_provider_init)
        || OSSL_PROVIDER_load(ctx, SEED_PROVIDER) == NULL
        || OSSL_PROVIDER_load(ctx, "default") == NULL) {
        OSSL_LIB_CTX_free(ctx);
        return;
    }
    drbg_libctx = ctx;
}

/* ---- the DRBG wrapper ----------------------------------------------------------------- */

static atomic_bool drbg_error_state;

struct randd_drbg {
    enum randd_drbg_type type;
    EVP_RAND_CTX *seed;         /* our seed source: the DRBG's parent */
    EVP_RAND_CTX *rand;         /* OpenSSL's DRBG */
    struct randd_drbg_limits limits;
    uint64_t requests;          /* generates since the last (re)seed */
    bool instantiated;
    bool broken;                /* OpenSSL failed: only uninstantiate may follow */
    bool exempt;                /* the self-test's own: runs in the error state */
    char detail[200];
};

/* Keep OpenSSL's reason for the caller, and leave its queue empty for the next call. */
static int openssl_failed(struct randd_drbg *d, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char reason[160] = "no reason queued";

    if (e != 0)
        ERR_error_string_n(e, reason, sizeof(reason));
    snprintf(d->detail, sizeof(d->detail), "%s: %s", what, reason);
    ERR_clear_error();
    return RANDD_DRBG_E_OPENSSL;
}

/* Hand the seed source its next entropy input (and nonce), or wipe both with NULL. */
static int seed_feed(struct randd_drbg *d, const void *entropy, size_t entropy_len,
                     const void *nonce, size_t nonce_len)
{
    OSSL_PARAM params[3] = {
        OSSL_PARAM_construct_octet_string(SEED_PARAM_ENTROPY,
                                          (void *)(entropy ? entropy : ""), entropy_len),
        OSSL_PARAM_construct_octet_string(SEED_PARAM_NONCE,
                                          (void *)(nonce ? nonce : ""), nonce_len),
        OSSL_PARAM_END
    };

    return EVP_RAND_CTX_set_params(d->seed, params) ? RANDD_DRBG_OK
                                                     : openssl_failed(d, "seed source");
}

static void seed_forget(struct randd_drbg *d)
{
    (void)seed_feed(d, NULL, 0, NULL, 0);
}

static int configure(struct randd_drbg *d)
{
    OSSL_PARAM params[5], *p = params;
    int use_df = 1;
    unsigned int no_count_reseed = 0;
    time_t no_time_reseed = 0;

    switch (d->type) {
    case RANDD_DRBG_CTR_AES256:
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, "AES-256-CTR", 0);
        *p++ = OSSL_PARAM_construct_int(OSSL_DRBG_PARAM_USE_DF, &use_df);
        break;
    case RANDD_DRBG_HASH_SHA512:
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, "SHA512", 0);
        break;
    case RANDD_DRBG_HMAC_SHA512:
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_MAC, "HMAC", 0);
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, "SHA512", 0);
        break;
    default:
        return RANDD_DRBG_E_ARGUMENT;
    }
    *p = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(d->rand, params))
        return openssl_failed(d, "configure DRBG");

    /* OpenSSL's own reseed triggers would ask the seed source for entropy nobody gave it:
     * the reseed interval is counted here instead (randd_drbg_generate), and time plays no
     * part in SP 800-90A. */
    params[0] = OSSL_PARAM_construct_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, &no_count_reseed);
    params[1] = OSSL_PARAM_construct_time_t(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, &no_time_reseed);
    params[2] = OSSL_PARAM_construct_end();
    if (!EVP_RAND_CTX_set_params(d->rand, params))
        return openssl_failed(d, "disable OpenSSL's reseed triggers");
    return RANDD_DRBG_OK;
}

static int read_limits(struct randd_drbg *d)
{
    struct randd_drbg_limits *l = &d->limits;
    size_t max_pers = 0, max_adin = 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_size_t(OSSL_RAND_PARAM_MAX_REQUEST, &l->max_request),
        OSSL_PARAM_construct_size_t(OSSL_DRBG_PARAM_MIN_ENTROPYLEN, &l->min_entropy),
        OSSL_PARAM_construct_size_t(OSSL_DRBG_PARAM_MAX_ENTROPYLEN, &l->max_entropy),
        OSSL_PARAM_construct_size_t(OSSL_DRBG_PARAM_MIN_NONCELEN, &l->min_nonce),
        OSSL_PARAM_construct_size_t(OSSL_DRBG_PARAM_MAX_NONCELEN, &l->max_nonce),
        OSSL_PARAM_construct_size_t(OSSL_DRBG_PARAM_MAX_PERSLEN, &max_pers),
        OSSL_PARAM_construct_size_t(OSSL_DRBG_PARAM_MAX_ADINLEN, &max_adin),
        OSSL_PARAM_END
    };

    if (!EVP_RAND_CTX_get_params(d->rand, params))
        return openssl_failed(d, "read DRBG limits");
    l->strength = EVP_RAND_get_strength(d->rand);
    l->reseed_interval = RANDD_DRBG_MAX_RESEED_INTERVAL;
    /* The seed source's buffers bound what it can hand over; 90A's bounds are far above. */
    if (l->max_entropy > SEED_MAX_ENTROPY)
        l->max_entropy = SEED_MAX_ENTROPY;
    if (l->max_nonce > SEED_MAX_NONCE)
        l->max_nonce = SEED_MAX_NONCE;
    l->max_input = max_pers < max_adin ? max_pers : max_adin;
    if (l->strength < 256 || l->max_request == 0 || l->min_entropy == 0 || l->min_nonce == 0) {
        snprintf(d->detail, sizeof(d->detail),
                 "%s: strength %u, max_request %zu, min entropy %zu, min nonce %zu",
                 drbg_names[d->type], l->strength, l->max_request, l->min_entropy, l->min_nonce);
        return RANDD_DRBG_E_OPENSSL;
    }
    return RANDD_DRBG_OK;
}

static int drbg_create(enum randd_drbg_type type, bool exempt, struct randd_drbg **out)
{
    static const char *const algorithm[RANDD_DRBG_TYPES] = {
        [RANDD_DRBG_CTR_AES256] = "CTR-DRBG",
        [RANDD_DRBG_HASH_SHA512] = "HASH-DRBG",
        [RANDD_DRBG_HMAC_SHA512] = "HMAC-DRBG",
    };
    struct randd_drbg *d;
    EVP_RAND *seed_alg, *rand_alg;
    int rc;

    if (out == NULL || (unsigned)type >= RANDD_DRBG_TYPES)
        return RANDD_DRBG_E_ARGUMENT;
    *out = NULL;
    pthread_once(&drbg_libctx_once, drbg_libctx_create);
    if (drbg_libctx == NULL)
        return RANDD_DRBG_E_OPENSSL;
    if ((d = calloc(1, sizeof(*d))) == NULL)
        return RANDD_DRBG_E_NO_MEMORY;
    d->type = type;
    d->exempt = exempt;

    seed_alg = EVP_RAND_fetch(drbg_libctx, SEED_ALGORITHM, NULL);
    rand_alg = EVP_RAND_fetch(drbg_libctx, algorithm[type], "provider=default");
    if (seed_alg == NULL || rand_alg == NULL) {
        rc = openssl_failed(d, "fetch DRBG algorithms");
        goto fail;
    }
    d->seed = EVP_RAND_CTX_new(seed_alg, NULL);
    if (d->seed == NULL || !EVP_RAND_instantiate(d->seed, 256, 0, NULL, 0, NULL)) {
        rc = openssl_failed(d, "create seed source");
        goto fail;
    }
    d->rand = EVP_RAND_CTX_new(rand_alg, d->seed);
    if (d->rand == NULL) {
        rc = openssl_failed(d, "create DRBG");
        goto fail;
    }
    if ((rc = configure(d)) != RANDD_DRBG_OK || (rc = read_limits(d)) != RANDD_DRBG_OK)
        goto fail;
    EVP_RAND_free(seed_alg);
    EVP_RAND_free(rand_alg);
    *out = d;
    return RANDD_DRBG_OK;

fail:
    EVP_RAND_free(seed_alg);
    EVP_RAND_free(rand_alg);
    EVP_RAND_CTX_free(d->rand);
    EVP_RAND_CTX_free(d->seed);
    free(d);
    return rc;
}

int randd_drbg_new(enum randd_drbg_type type, struct randd_drbg **out)
{
    return drbg_create(type, false, out);
}

int randd_drbg_new_for_selftest(enum randd_drbg_type type, struct randd_drbg **out)
{
    return drbg_create(type, true, out);
}

/* What every operation but uninstantiate checks first. */
static int usable(const struct randd_drbg *d, bool want_instantiated)
{
    if (d == NULL)
        return RANDD_DRBG_E_ARGUMENT;
    if (atomic_load(&drbg_error_state) && !d->exempt)
        return RANDD_DRBG_E_SELFTEST_FAILED;
    if (d->broken)
        return RANDD_DRBG_E_ERROR_STATE;
    if (want_instantiated && !d->instantiated)
        return RANDD_DRBG_E_NOT_INSTANTIATED;
    if (!want_instantiated && d->instantiated)
        return RANDD_DRBG_E_ALREADY_INSTANTIATED;
    return RANDD_DRBG_OK;
}

static int check_entropy(const struct randd_drbg *d, const void *entropy, size_t len)
{
    if (entropy == NULL)
        return RANDD_DRBG_E_ARGUMENT;
    if (len < d->limits.min_entropy || len > d->limits.max_entropy)
        return RANDD_DRBG_E_ENTROPY_LENGTH;
    return RANDD_DRBG_OK;
}

static int check_input(const struct randd_drbg *d, const void *input, size_t len)
{
    if (input == NULL && len != 0)
        return RANDD_DRBG_E_ARGUMENT;
    if (len > d->limits.max_input)
        return RANDD_DRBG_E_INPUT_LENGTH;
    return RANDD_DRBG_OK;
}

int randd_drbg_instantiate(struct randd_drbg *d, const void *entropy, size_t entropy_len,
                           const void *nonce, size_t nonce_len,
                           const void *pers, size_t pers_len)
{
    int rc;

    if ((rc = usable(d, false)) != RANDD_DRBG_OK
        || (rc = check_entropy(d, entropy, entropy_len)) != RANDD_DRBG_OK
        || (rc = check_input(d, pers, pers_len)) != RANDD_DRBG_OK)
        return rc;
    if (nonce == NULL)
        return RANDD_DRBG_E_ARGUMENT;
    if (nonce_len < d->limits.min_nonce || nonce_len > d->limits.max_nonce)
        return RANDD_DRBG_E_NONCE_LENGTH;

    if ((rc = seed_feed(d, entropy, entropy_len, nonce, nonce_len)) == RANDD_DRBG_OK) {
        if (EVP_RAND_instantiate(d->rand, d->limits.strength, 0, pers, pers_len, NULL)) {
            d->instantiated = true;
            d->requests = 0;
        } else {
            rc = openssl_failed(d, "instantiate");
            EVP_RAND_uninstantiate(d->rand);
        }
    }
    seed_forget(d);
    return rc;
}

int randd_drbg_reseed(struct randd_drbg *d, const void *entropy, size_t entropy_len,
                      const void *addl, size_t addl_len)
{
    int rc;

    if ((rc = usable(d, true)) != RANDD_DRBG_OK
        || (rc = check_entropy(d, entropy, entropy_len)) != RANDD_DRBG_OK
        || (rc = check_input(d, addl, addl_len)) != RANDD_DRBG_OK)
        return rc;
    if ((rc = seed_feed(d, entropy, entropy_len, NULL, 0)) == RANDD_DRBG_OK) {
        if (EVP_RAND_reseed(d->rand, 0, NULL, 0, addl, addl_len)) {
            d->requests = 0;
        } else {
            rc = openssl_failed(d, "reseed");
            d->broken = true;
        }
    }
    seed_forget(d);
    return rc;
}

int randd_drbg_generate(struct randd_drbg *d, void *out, size_t n,
                        const void *addl, size_t addl_len,
                        bool prediction_resistance, const void *pr_entropy, size_t pr_len)
{
    int rc;

    if (out == NULL && n != 0)
        return RANDD_DRBG_E_ARGUMENT;
    if ((rc = usable(d, true)) != RANDD_DRBG_OK
        || (rc = check_input(d, addl, addl_len)) != RANDD_DRBG_OK)
        goto refused;
    if (n > d->limits.max_request) {
        rc = RANDD_DRBG_E_REQUEST_LENGTH;
        goto refused;
    }
    if (prediction_resistance) {
        if ((rc = check_entropy(d, pr_entropy, pr_len)) != RANDD_DRBG_OK)
            goto refused;
        if ((rc = seed_feed(d, pr_entropy, pr_len, NULL, 0)) != RANDD_DRBG_OK)
            goto refused;
    } else if (pr_entropy != NULL || pr_len != 0) {
        rc = RANDD_DRBG_E_ARGUMENT;
        goto refused;
    } else if (d->requests >= d->limits.reseed_interval) {
        rc = RANDD_DRBG_E_RESEED_REQUIRED;
        goto refused;
    }

    if (EVP_RAND_generate(d->rand, out, n, d->limits.strength, prediction_resistance,
                          addl, addl_len)) {
        d->requests = prediction_resistance ? 1 : d->requests + 1;
    } else {
        rc = openssl_failed(d, "generate");
        d->broken = true;
        OPENSSL_cleanse(out, n);
    }
    seed_forget(d);
    return rc;

refused:
    if (out != NULL)
        OPENSSL_cleanse(out, n);
    return rc;
}

int randd_drbg_uninstantiate(struct randd_drbg *d)
{
    if (d == NULL)
        return RANDD_DRBG_E_ARGUMENT;
    seed_forget(d);
    d->instantiated = d->broken = false;
    d->requests = 0;
    if (!EVP_RAND_uninstantiate(d->rand))
        return openssl_failed(d, "uninstantiate");
    return RANDD_DRBG_OK;
}

void randd_drbg_free(struct randd_drbg *d)
{
    if (d == NULL)
        return;
    (void)randd_drbg_uninstantiate(d);
    EVP_RAND_CTX_free(d->rand);
    EVP_RAND_CTX_free(d->seed);
    OPENSSL_cleanse(d, sizeof(*d));
    free(d);
}

int randd_drbg_limits(const struct randd_drbg *d, struct randd_drbg_limits *limits)
{
    if (d == NULL || limits == NULL)
        return RANDD_DRBG_E_ARGUMENT;
    *limits = d->limits;
    return RANDD_DRBG_OK;
}

int randd_drbg_set_reseed_interval(struct randd_drbg *d, uint64_t interval)
{
    if (d == NULL || interval == 0 || interval > RANDD_DRBG_MAX_RESEED_INTERVAL)
        return RANDD_DRBG_E_ARGUMENT;
    d->limits.reseed_interval = interval;
    return RANDD_DRBG_OK;
}

uint64_t randd_drbg_requests_since_seed(const struct randd_drbg *d)
{
    return d != NULL ? d->requests : 0;
}

const char *randd_drbg_detail(const struct randd_drbg *d)
{
    return d != NULL ? d->detail : "";
}

bool randd_drbg_is_zeroized(const struct randd_drbg *d)
{
    int seed_empty = 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_int(SEED_PARAM_EMPTY, &seed_empty),
        OSSL_PARAM_END
    };

    if (d == NULL || d->instantiated)
        return false;
    if (!EVP_RAND_CTX_get_params(d->seed, params)) {
        ERR_clear_error();
        return false;
    }
    return seed_empty && EVP_RAND_verify_zeroization(d->rand) == 1;
}

void randd_drbg_set_error_state(bool failed)
{
    atomic_store(&drbg_error_state, failed);
}

bool randd_drbg_in_error_state(void)
{
    return atomic_load(&drbg_error_state);
}
