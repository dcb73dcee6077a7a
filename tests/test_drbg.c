/* The SP 800-90A DRBGs (internal/drbg.c): NIST's CAVP known answers from tests/vectors/drbg
 * (read relative to the repository root the tests run from), a changed byte caught, the
 * wrapper against OpenSSL's EVP_RAND driven directly and against an independent Hash_DRBG
 * written here from SP 800-90A 10.1.1, the limits, the named errors, the wipe, and the
 * known-answer self-test with its error state. */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "drbg.h"
#include "runner.h"

#define VECTORS "tests/vectors/drbg/"
#define MAX_FIELD 512
#define MAX_VECTORS 64

/* ---- the CAVP vectors ------------------------------------------------------------------ */

struct field {
    uint8_t b[MAX_FIELD];
    size_t n;
};

struct vector {
    char where[96];             /* file:line of the stanza, for messages */
    enum randd_drbg_type type;
    bool pr;
    struct field entropy, nonce, pers, reseed_entropy, reseed_addl;
    struct field addl_a, pr_a, addl_b, pr_b, output;
    bool has_reseed;
};

static const char *const vector_files[] = {
    VECTORS "ctr-aes256-df.txt", VECTORS "hash-sha512.txt", VECTORS "hmac-sha512.txt",
};

static enum randd_drbg_type type_named(const char *name, const char *where)
{
    if (strcmp(name, "ctr-aes256") == 0)
        return RANDD_DRBG_CTR_AES256;
    if (strcmp(name, "hash-sha512") == 0)
        return RANDD_DRBG_HASH_SHA512;
    if (strcmp(name, "hmac-sha512") == 0)
        return RANDD_DRBG_HMAC_SHA512;
    ck_abort_msg("%s: unknown drbg \"%s\"", where, name);
    return RANDD_DRBG_TYPES;
}

static struct field *field_named(struct vector *v, const char *key, const char *where)
{
    static const struct { const char *key; size_t off; } keys[] = {
        { "entropy", offsetof(struct vector, entropy) },
        { "nonce", offsetof(struct vector, nonce) },
        { "pers", offsetof(struct vector, pers) },
        { "reseed_entropy", offsetof(struct vector, reseed_entropy) },
        { "reseed_addl", offsetof(struct vector, reseed_addl) },
        { "addl_a", offsetof(struct vector, addl_a) },
        { "pr_entropy_a", offsetof(struct vector, pr_a) },
        { "addl_b", offsetof(struct vector, addl_b) },
        { "pr_entropy_b", offsetof(struct vector, pr_b) },
        { "output", offsetof(struct vector, output) },
    };

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcmp(key, keys[i].key) == 0)
            return (struct field *)((char *)v + keys[i].off);
    ck_abort_msg("%s: unknown key \"%s\"", where, key);
    return NULL;
}

/* Reads every stanza of path into vs; returns how many. */
static size_t read_vectors(const char *path, struct vector *vs, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    size_t count = 0, lineno = 0;
    struct vector *v = NULL;

    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root): %s", path,
                  strerror(errno));
    while (fgets(line, sizeof(line), f)) {
        char key[32], value[1600], where[96];

        lineno++;
        snprintf(where, sizeof(where), "%s:%zu", path, lineno);
        if (line[0] == '#')
            continue;
        if (strspn(line, " \t\r\n") == strlen(line)) {
            v = NULL;               /* a blank line ends the stanza */
            continue;
        }
        ck_assert_msg(sscanf(line, " %31[a-z_] = %1599s", key, value) == 2,
                      "%s: expected \"key = value\"", where);
        if (v == NULL) {
            ck_assert_msg(count < cap, "%s: more than %zu vectors", path, cap);
            v = &vs[count++];
            memset(v, 0, sizeof(*v));
            snprintf(v->where, sizeof(v->where), "%s", where);
        }
        if (strcmp(key, "drbg") == 0) {
            v->type = type_named(value, where);
        } else if (strcmp(key, "pr") == 0) {
            v->pr = strcmp(value, "1") == 0;
        } else {
            struct field *fl = field_named(v, key, where);

            fl->n = unhex(value, fl->b, sizeof(fl->b));
            if (fl == &v->reseed_entropy)
                v->has_reseed = true;
        }
    }
    fclose(f);
    return count;
}

/* CAVP's procedure; false with the failed step in why. */
static bool run_vector(const struct vector *v, char *why, size_t whylen)
{
    struct randd_drbg *d = NULL;
    uint8_t got[MAX_FIELD];
    int rc;
    const char *step = NULL;

    if ((rc = randd_drbg_new(v->type, &d)) != RANDD_DRBG_OK)
        step = "new";
    else if ((rc = randd_drbg_instantiate(d, v->entropy.b, v->entropy.n, v->nonce.b, v->nonce.n,
                                          v->pers.b, v->pers.n)) != RANDD_DRBG_OK)
        step = "instantiate";
    else if (v->has_reseed
             && (rc = randd_drbg_reseed(d, v->reseed_entropy.b, v->reseed_entropy.n,
                                        v->reseed_addl.b, v->reseed_addl.n)) != RANDD_DRBG_OK)
        step = "reseed";
    else if ((rc = randd_drbg_generate(d, got, v->output.n, v->addl_a.b, v->addl_a.n, v->pr,
                                       v->pr ? v->pr_a.b : NULL, v->pr_a.n)) != RANDD_DRBG_OK)
        step = "first generate";
    else if ((rc = randd_drbg_generate(d, got, v->output.n, v->addl_b.b, v->addl_b.n, v->pr,
                                       v->pr ? v->pr_b.b : NULL, v->pr_b.n)) != RANDD_DRBG_OK)
        step = "second generate";
    if (step != NULL) {
        snprintf(why, whylen, "%s: %s: %s (%s)", v->where, step, randd_drbg_strerror(rc),
                 randd_drbg_detail(d));
        randd_drbg_free(d);
        return false;
    }
    randd_drbg_free(d);
    for (size_t i = 0; i < v->output.n; i++)
        if (got[i] != v->output.b[i]) {
            snprintf(why, whylen, "%s: output byte %zu is %02x, NIST's is %02x", v->where, i,
                     got[i], v->output.b[i]);
            return false;
        }
    return true;
}

static struct vector vs[MAX_VECTORS];

START_TEST(cavp_vectors_pass_for_every_drbg)
{
    size_t per_type[RANDD_DRBG_TYPES] = { 0 }, total = 0, with_pr = 0, with_reseed = 0;
    char why[300];
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t f = 0; f < sizeof(vector_files) / sizeof(vector_files[0]); f++) {
        size_t n = read_vectors(vector_files[f], vs, MAX_VECTORS);

        ck_assert_msg(n > 0, "%s holds no vectors", vector_files[f]);
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(run_vector(&vs[i], why, sizeof(why)), "%s", why);
            per_type[vs[i].type]++;
            with_pr += vs[i].pr;
            with_reseed += vs[i].has_reseed;
            total++;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int t = 0; t < RANDD_DRBG_TYPES; t++)
        ck_assert_msg(per_type[t] > 0, "no CAVP vector for %s", randd_drbg_name(t));
    ck_assert_msg(with_pr > 0 && with_reseed > 0, "no prediction-resistance or reseed vector");
    printf("test_drbg: %zu CAVP vectors passed (%zu CTR_DRBG, %zu Hash_DRBG, %zu HMAC_DRBG; "
           "%zu with prediction resistance, %zu with a reseed) in %.1f ms\n", total,
           per_type[RANDD_DRBG_CTR_AES256], per_type[RANDD_DRBG_HASH_SHA512],
           per_type[RANDD_DRBG_HMAC_SHA512], with_pr, with_reseed,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}
END_TEST

/* The comparison is real: one changed byte anywhere the vector feeds or expects fails it. */
START_TEST(a_changed_byte_fails_a_vector)
{
    char why[300];

    for (size_t f = 0; f < sizeof(vector_files) / sizeof(vector_files[0]); f++) {
        size_t n = read_vectors(vector_files[f], vs, MAX_VECTORS);

        for (size_t i = 0; i < n; i++) {
            struct vector v = vs[i];
            struct field *inputs[] = { &v.output, &v.entropy, &v.nonce, &v.pers, &v.addl_b,
                                       &v.reseed_entropy, &v.pr_b };

            for (size_t k = 0; k < sizeof(inputs) / sizeof(inputs[0]); k++) {
                if (inputs[k]->n == 0)
                    continue;
                inputs[k]->b[inputs[k]->n / 2] ^= 0x20;
                ck_assert_msg(!run_vector(&v, why, sizeof(why)),
                              "%s still passes with field %zu changed", v.where, k);
                inputs[k]->b[inputs[k]->n / 2] ^= 0x20;
            }
            ck_assert_msg(run_vector(&v, why, sizeof(why)), "%s", why);
        }
    }
}
END_TEST

/* ---- against OpenSSL's EVP_RAND driven directly ----------------------------------------
 * The same DRBG with OpenSSL's TEST-RAND parent in the default library context, as OpenSSL's
 * own evp_test feeds it: it shows our seed source and wrapper hand over exactly the bytes
 * given, and ask nothing different of the mechanism. */

struct direct {
    EVP_RAND_CTX *parent, *rand;
};

static void direct_new(struct direct *x, enum randd_drbg_type type)
{
    unsigned int strength = 256;
    int use_df = 1;
    OSSL_PARAM params[4], *p = params;
    EVP_RAND *alg;

    alg = EVP_RAND_fetch(NULL, "TEST-RAND", NULL);
    ck_assert_msg(alg != NULL, "OpenSSL has no TEST-RAND");
    x->parent = EVP_RAND_CTX_new(alg, NULL);
    EVP_RAND_free(alg);
    params[0] = OSSL_PARAM_construct_uint(OSSL_RAND_PARAM_STRENGTH, &strength);
    params[1] = OSSL_PARAM_construct_end();
    ck_assert(EVP_RAND_CTX_set_params(x->parent, params));

    alg = EVP_RAND_fetch(NULL, type == RANDD_DRBG_CTR_AES256 ? "CTR-DRBG"
                               : type == RANDD_DRBG_HASH_SHA512 ? "HASH-DRBG" : "HMAC-DRBG", NULL);
    ck_assert(alg != NULL);
    x->rand = EVP_RAND_CTX_new(alg, x->parent);
    EVP_RAND_free(alg);
    ck_assert(x->rand != NULL);
    if (type == RANDD_DRBG_CTR_AES256) {
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, "AES-256-CTR", 0);
        *p++ = OSSL_PARAM_construct_int(OSSL_DRBG_PARAM_USE_DF, &use_df);
    } else {
        if (type == RANDD_DRBG_HMAC_SHA512)
            *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_MAC, "HMAC", 0);
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_DIGEST, "SHA512", 0);
    }
    *p = OSSL_PARAM_construct_end();
    ck_assert(EVP_RAND_CTX_set_params(x->rand, params));
}

static void direct_entropy(struct direct *x, const uint8_t *e, size_t n)
{
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)e, n),
        OSSL_PARAM_END
    };

    ck_assert(EVP_RAND_CTX_set_params(x->parent, params));
}

static void direct_instantiate(struct direct *x, const uint8_t *e, size_t en, const uint8_t *nonce,
                               size_t nn, const uint8_t *pers, size_t pn)
{
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_ENTROPY, (void *)e, en),
        OSSL_PARAM_construct_octet_string(OSSL_RAND_PARAM_TEST_NONCE, (void *)nonce, nn),
        OSSL_PARAM_END
    };

    ck_assert(EVP_RAND_instantiate(x->parent, 256, 0, NULL, 0, params));
    ck_assert(EVP_RAND_instantiate(x->rand, 256, 0, pers, pn, NULL));
}

static void direct_free(struct direct *x)
{
    EVP_RAND_CTX_free(x->rand);
    EVP_RAND_CTX_free(x->parent);
}

/* Deterministic inputs: the test must say the same thing every run. */
static uint64_t prng_state;

static uint64_t prng(void)
{
    prng_state = prng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return prng_state >> 17;
}

static void fill(uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)prng();
}

static size_t between(size_t lo, size_t hi)
{
    return lo + (size_t)(prng() % (hi - lo + 1));
}

START_TEST(wrapper_matches_evp_rand_driven_directly)
{
    static uint8_t a[65536], b[65536];
    uint8_t e[96], nonce[48], pers[80], addl[80];

    prng_state = 0x90a0 + (uint64_t)_i;
    for (int t = 0; t < RANDD_DRBG_TYPES; t++) {
        struct randd_drbg *d;
        struct direct x;
        size_t en = between(32, 96), nn = between(16, 48), pn = between(0, 80);

        fill(e, en), fill(nonce, nn), fill(pers, pn);
        ck_assert_int_eq(randd_drbg_new(t, &d), RANDD_DRBG_OK);
        direct_new(&x, t);
        ck_assert_int_eq(randd_drbg_instantiate(d, e, en, nonce, nn, pers, pn), RANDD_DRBG_OK);
        direct_instantiate(&x, e, en, nonce, nn, pers, pn);

        for (int step = 0; step < 24; step++) {
            size_t an = between(0, 80), n = step == 23 ? sizeof(a) : between(1, 3000);
            unsigned kind = (unsigned)(prng() % 4);   /* 0-1 generate, 2 reseed, 3 PR generate */

            fill(addl, an);
            if (kind == 2) {
                en = between(32, 96);
                fill(e, en);
                ck_assert_int_eq(randd_drbg_reseed(d, e, en, addl, an), RANDD_DRBG_OK);
                direct_entropy(&x, e, en);
                ck_assert(EVP_RAND_reseed(x.rand, 0, NULL, 0, addl, an));
                continue;
            }
            if (kind == 3) {
                en = between(32, 96);
                fill(e, en);
                direct_entropy(&x, e, en);
            }
            ck_assert_int_eq(randd_drbg_generate(d, a, n, addl, an, kind == 3,
                                                 kind == 3 ? e : NULL, kind == 3 ? en : 0),
                             RANDD_DRBG_OK);
            ck_assert(EVP_RAND_generate(x.rand, b, n, 256, kind == 3, addl, an));
            ck_assert_msg(memcmp(a, b, n) == 0, "%s, step %d (%s, %zu bytes): output differs "
                          "from EVP_RAND's", randd_drbg_name(t), step,
                          kind == 3 ? "prediction-resistant generate" : "generate", n);
        }
        randd_drbg_free(d);
        direct_free(&x);
    }
}
END_TEST

/* The differential comparison is real: EVP_RAND given the same inputs but one byte (of the
 * entropy input, the nonce, the personalisation, a reseed's entropy or a generate's
 * additional input) answers otherwise, so a wrapper that dropped or altered any of them would
 * fail wrapper_matches_evp_rand_driven_directly. */
START_TEST(the_differential_test_fails_with_one_input_byte_changed)
{
    enum { E = 48, N = 24, P = 16, A = 16, OUT = 64 };
    static const char *const fields[] = { "entropy input", "nonce", "personalisation",
                                          "reseed entropy", "additional input" };

    for (int t = 0; t < RANDD_DRBG_TYPES; t++) {
        /* changed == 5: nothing changed, the control: then they agree */
        for (size_t changed = 0; changed <= sizeof(fields) / sizeof(fields[0]); changed++) {
            uint8_t in[5][E], theirs[5][E], a[OUT], b[OUT];
            const size_t len[5] = { E, N, P, E, A };
            struct randd_drbg *d;
            struct direct x;

            prng_state = 0x1b7e + (uint64_t)changed;
            for (size_t k = 0; k < 5; k++)
                fill(in[k], len[k]);
            memcpy(theirs, in, sizeof(in));
            if (changed < 5)
                theirs[changed][len[changed] / 2] ^= 0x01;
            ck_assert_int_eq(randd_drbg_new(t, &d), RANDD_DRBG_OK);
            direct_new(&x, t);
            ck_assert_int_eq(randd_drbg_instantiate(d, in[0], E, in[1], N, in[2], P),
                             RANDD_DRBG_OK);
            direct_instantiate(&x, theirs[0], E, theirs[1], N, theirs[2], P);
            ck_assert_int_eq(randd_drbg_reseed(d, in[3], E, NULL, 0), RANDD_DRBG_OK);
            direct_entropy(&x, theirs[3], E);
            ck_assert(EVP_RAND_reseed(x.rand, 0, NULL, 0, NULL, 0));
            ck_assert_int_eq(randd_drbg_generate(d, a, OUT, in[4], A, false, NULL, 0),
                             RANDD_DRBG_OK);
            ck_assert(EVP_RAND_generate(x.rand, b, OUT, 256, 0, theirs[4], A));
            if (changed == 5)
                ck_assert_msg(memcmp(a, b, OUT) == 0, "%s: the same inputs, and EVP_RAND's output "
                              "differs", randd_drbg_name(t));
            else
                ck_assert_msg(memcmp(a, b, OUT) != 0, "%s: one byte of the %s changed on "
                              "EVP_RAND's side, and the outputs still agree",
                              randd_drbg_name(t), fields[changed]);
            randd_drbg_free(d);
            direct_free(&x);
        }
    }
}
END_TEST

/* ---- against Hash_DRBG written here from SP 800-90A 10.1.1 -----------------------------
 * Only SHA-512 itself comes from OpenSSL; the mechanism (Hash_df, the V and C updates, the
 * counter) is written from the standard, so agreement is evidence, not a tautology. */

#define SEEDLEN 111     /* seedlen for SHA-512: 888 bits (SP 800-90A table 2) */
#define OUTLEN 64

struct ref_hash_drbg {
    uint8_t v[SEEDLEN], c[SEEDLEN];
    uint64_t reseed_counter;
};

static void sha512_parts(uint8_t out[OUTLEN], const uint8_t *const *parts, const size_t *lens,
                         int count)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int n;

    ck_assert(md != NULL && EVP_DigestInit_ex(md, EVP_sha512(), NULL));
    for (int i = 0; i < count; i++)
        ck_assert(EVP_DigestUpdate(md, parts[i], lens[i]));
    ck_assert(EVP_DigestFinal_ex(md, out, &n) && n == OUTLEN);
    EVP_MD_CTX_free(md);
}

/* Hash_df (10.3.1) of the concatenated parts, to SEEDLEN bytes. */
static void hash_df(uint8_t out[SEEDLEN], const uint8_t *const *parts, const size_t *lens, int count)
{
    uint8_t head[5] = { 1, 0, 0, (SEEDLEN * 8) >> 8, (SEEDLEN * 8) & 0xff };
    const uint8_t *all[8];
    size_t all_lens[8];
    uint8_t block[OUTLEN];

    all[0] = head, all_lens[0] = sizeof(head);
    for (int i = 0; i < count; i++)
        all[i + 1] = parts[i], all_lens[i + 1] = lens[i];
    for (size_t done = 0; done < SEEDLEN; done += OUTLEN, head[0]++) {
        sha512_parts(block, all, all_lens, count + 1);
        memcpy(out + done, block, SEEDLEN - done < OUTLEN ? SEEDLEN - done : OUTLEN);
    }
}

/* acc = (acc + x) mod 2^(8*SEEDLEN), x right-aligned (big-endian, xn <= SEEDLEN bytes). */
static void add_into(uint8_t acc[SEEDLEN], const uint8_t *x, size_t xn)
{
    unsigned carry = 0;

    for (size_t i = 0; i < SEEDLEN; i++) {
        unsigned sum = acc[SEEDLEN - 1 - i] + carry + (i < xn ? x[xn - 1 - i] : 0);

        acc[SEEDLEN - 1 - i] = (uint8_t)sum;
        carry = sum >> 8;
    }
}

static void ref_derive_c(struct ref_hash_drbg *r)
{
    static const uint8_t zero = 0x00;
    const uint8_t *parts[] = { &zero, r->v };
    size_t lens[] = { 1, SEEDLEN };

    hash_df(r->c, parts, lens, 2);
    r->reseed_counter = 1;
}

static void ref_instantiate(struct ref_hash_drbg *r, const uint8_t *e, size_t en,
                            const uint8_t *nonce, size_t nn, const uint8_t *pers, size_t pn)
{
    const uint8_t *parts[] = { e, nonce, pers };
    size_t lens[] = { en, nn, pn };

    hash_df(r->v, parts, lens, 3);          /* 10.1.1.2 */
    ref_derive_c(r);
}

static void ref_reseed(struct ref_hash_drbg *r, const uint8_t *e, size_t en,
                       const uint8_t *addl, size_t an)
{
    static const uint8_t one = 0x01;
    uint8_t old_v[SEEDLEN];
    const uint8_t *parts[] = { &one, old_v, e, addl };
    size_t lens[] = { 1, SEEDLEN, en, an };

    memcpy(old_v, r->v, SEEDLEN);
    hash_df(r->v, parts, lens, 4);          /* 10.1.1.3 */
    ref_derive_c(r);
}

static void ref_generate(struct ref_hash_drbg *r, uint8_t *out, size_t n,
                         const uint8_t *addl, size_t an)
{
    static const uint8_t two = 0x02, three = 0x03;
    uint8_t w[OUTLEN], data[SEEDLEN], counter[8];

    if (an > 0) {                           /* 10.1.1.4 step 2 */
        const uint8_t *parts[] = { &two, r->v, addl };
        size_t lens[] = { 1, SEEDLEN, an };

        sha512_parts(w, parts, lens, 3);
        add_into(r->v, w, OUTLEN);
    }
    memcpy(data, r->v, SEEDLEN);            /* Hashgen, 10.1.1.4 */
    for (size_t done = 0; done < n; done += OUTLEN) {
        const uint8_t *parts[] = { data };
        size_t lens[] = { SEEDLEN };
        static const uint8_t one = 1;

        sha512_parts(w, parts, lens, 1);
        memcpy(out + done, w, n - done < OUTLEN ? n - done : OUTLEN);
        add_into(data, &one, 1);
    }
    {                                       /* steps 4-6: V = V + H + C + reseed_counter */
        const uint8_t *parts[] = { &three, r->v };
        size_t lens[] = { 1, SEEDLEN };

        sha512_parts(w, parts, lens, 2);
        add_into(r->v, w, OUTLEN);
        add_into(r->v, r->c, SEEDLEN);
        for (int i = 0; i < 8; i++)
            counter[i] = (uint8_t)(r->reseed_counter >> (56 - 8 * i));
        add_into(r->v, counter, 8);
        r->reseed_counter++;
    }
}

/* The reference itself first reproduces a NIST answer: otherwise agreement could be two
 * copies of one misreading. */
START_TEST(independent_hash_drbg_reproduces_a_cavp_answer)
{
    size_t n = read_vectors(VECTORS "hash-sha512.txt", vs, MAX_VECTORS), checked = 0;

    for (size_t i = 0; i < n; i++) {
        const struct vector *v = &vs[i];
        struct ref_hash_drbg r;
        uint8_t got[MAX_FIELD];

        if (v->pr || v->has_reseed)
            continue;
        ref_instantiate(&r, v->entropy.b, v->entropy.n, v->nonce.b, v->nonce.n, v->pers.b,
                        v->pers.n);
        ref_generate(&r, got, v->output.n, v->addl_a.b, v->addl_a.n);
        ref_generate(&r, got, v->output.n, v->addl_b.b, v->addl_b.n);
        ck_assert_msg(memcmp(got, v->output.b, v->output.n) == 0,
                      "%s: the reference Hash_DRBG disagrees with NIST", v->where);
        checked++;
    }
    ck_assert_msg(checked > 0, "no plain Hash_DRBG vector to check the reference against");
}
END_TEST

START_TEST(hash_drbg_matches_one_written_from_sp800_90a)
{
    static uint8_t a[65536], b[65536];
    uint8_t e[96], nonce[48], pers[80], addl[80];
    struct ref_hash_drbg r;
    struct randd_drbg *d;
    size_t en, nn, pn;

    prng_state = 0x10101 + (uint64_t)_i;
    en = between(32, 96), nn = between(16, 48), pn = between(0, 80);
    fill(e, en), fill(nonce, nn), fill(pers, pn);
    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_HASH_SHA512, &d), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, en, nonce, nn, pers, pn), RANDD_DRBG_OK);
    ref_instantiate(&r, e, en, nonce, nn, pers, pn);

    for (int step = 0; step < 40; step++) {
        size_t an = between(0, 80), n = step == 39 ? sizeof(a) : between(1, 2000);
        unsigned kind = (unsigned)(prng() % 4);

        fill(addl, an);
        if (kind == 2) {
            en = between(32, 96);
            fill(e, en);
            ck_assert_int_eq(randd_drbg_reseed(d, e, en, addl, an), RANDD_DRBG_OK);
            ref_reseed(&r, e, en, addl, an);
            continue;
        }
        if (kind == 3) {                    /* 9.3.1: reseed with the additional input */
            en = between(32, 96);
            fill(e, en);
            ck_assert_int_eq(randd_drbg_generate(d, a, n, addl, an, true, e, en), RANDD_DRBG_OK);
            ref_reseed(&r, e, en, addl, an);
            ref_generate(&r, b, n, NULL, 0);
        } else {
            ck_assert_int_eq(randd_drbg_generate(d, a, n, addl, an, false, NULL, 0),
                             RANDD_DRBG_OK);
            ref_generate(&r, b, n, addl, an);
        }
        ck_assert_msg(memcmp(a, b, n) == 0, "step %d (%s, %zu bytes, %zu of additional input): "
                      "differs from the SP 800-90A reference", step,
                      kind == 3 ? "prediction-resistant" : "plain", n, an);
    }
    randd_drbg_free(d);
}
END_TEST

/* ---- limits, errors, wiping -------------------------------------------------------------- */

START_TEST(limits_are_those_of_sp800_90a)
{
    for (int t = 0; t < RANDD_DRBG_TYPES; t++) {
        struct randd_drbg *d;
        struct randd_drbg_limits l;

        ck_assert_int_eq(randd_drbg_new(t, &d), RANDD_DRBG_OK);
        ck_assert_int_eq(randd_drbg_limits(d, &l), RANDD_DRBG_OK);
        ck_assert_msg(l.strength == 256, "%s: strength %u", randd_drbg_name(t), l.strength);
        /* 2^19 bits a request (tables 2 and 3), 2^48 requests between reseeds */
        ck_assert_msg(l.max_request == 65536, "%s: max_request %zu", randd_drbg_name(t),
                      l.max_request);
        ck_assert(l.reseed_interval == RANDD_DRBG_MAX_RESEED_INTERVAL);
        ck_assert_msg(l.min_entropy == 32 && l.min_nonce == 16, "%s: min entropy %zu, nonce %zu",
                      randd_drbg_name(t), l.min_entropy, l.min_nonce);
        ck_assert(l.max_entropy >= 64 && l.max_nonce >= 32 && l.max_input >= 4096);
        randd_drbg_free(d);
    }
}
END_TEST

START_TEST(errors_are_named_and_refuse_output)
{
    static const uint8_t e[64] = { 1 }, nonce[32] = { 2 };
    static uint8_t big[65537];
    uint8_t out[64];
    struct randd_drbg *d;

    for (int s = 0; s < RANDD_DRBG_STATUSES; s++)
        for (int u = s + 1; u < RANDD_DRBG_STATUSES; u++)
            ck_assert_str_ne(randd_drbg_strerror(s), randd_drbg_strerror(u));
    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_TYPES, &d), RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_CTR_AES256, &d), RANDD_DRBG_OK);

    memset(out, 0xa5, sizeof(out));
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_E_NOT_INSTANTIATED);
    for (size_t i = 0; i < sizeof(out); i++)
        ck_assert_msg(out[i] == 0, "refused generate left byte %zu unwiped", i);
    ck_assert_int_eq(randd_drbg_reseed(d, e, 32, NULL, 0), RANDD_DRBG_E_NOT_INSTANTIATED);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 31, nonce, 16, NULL, 0),
                     RANDD_DRBG_E_ENTROPY_LENGTH);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 15, NULL, 0),
                     RANDD_DRBG_E_NONCE_LENGTH);
    ck_assert_int_eq(randd_drbg_instantiate(d, NULL, 32, nonce, 16, NULL, 0),
                     RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 5), RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0),
                     RANDD_DRBG_E_ALREADY_INSTANTIATED);
    ck_assert_int_eq(randd_drbg_generate(d, big, sizeof(big), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_E_REQUEST_LENGTH);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, true, NULL, 0),
                     RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, true, e, 16),
                     RANDD_DRBG_E_ENTROPY_LENGTH);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, e, 32),
                     RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_reseed(d, e, 600, NULL, 0), RANDD_DRBG_E_ENTROPY_LENGTH);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    randd_drbg_free(d);
}
END_TEST

START_TEST(reseed_interval_is_enforced)
{
    static const uint8_t e[32] = { 3 }, nonce[16] = { 4 };
    uint8_t out[16];
    struct randd_drbg *d;

    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_HASH_SHA512, &d), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_set_reseed_interval(d, 0), RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_set_reseed_interval(d, RANDD_DRBG_MAX_RESEED_INTERVAL + 1),
                     RANDD_DRBG_E_ARGUMENT);
    ck_assert_int_eq(randd_drbg_set_reseed_interval(d, 3), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                         RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_requests_since_seed(d), 3);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_E_RESEED_REQUIRED);
    /* prediction resistance reseeds, so it may run; then plain output again */
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, true, e, 32),
                     RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_requests_since_seed(d), 1);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_E_RESEED_REQUIRED);
    ck_assert_int_eq(randd_drbg_reseed(d, e, 32, NULL, 0), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    randd_drbg_free(d);
}
END_TEST

START_TEST(uninstantiate_wipes_the_state)
{
    static const uint8_t e[32] = { 5 }, nonce[16] = { 6 };
    uint8_t out[32], again[32];
    struct randd_drbg *d;

    for (int t = 0; t < RANDD_DRBG_TYPES; t++) {
        ck_assert_int_eq(randd_drbg_new(t, &d), RANDD_DRBG_OK);
        ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);
        ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                         RANDD_DRBG_OK);
        ck_assert(!randd_drbg_is_zeroized(d));
        ck_assert_int_eq(randd_drbg_uninstantiate(d), RANDD_DRBG_OK);
        ck_assert_msg(randd_drbg_is_zeroized(d), "%s: state not zero after uninstantiate",
                      randd_drbg_name(t));
        ck_assert_int_eq(randd_drbg_generate(d, again, sizeof(again), NULL, 0, false, NULL, 0),
                         RANDD_DRBG_E_NOT_INSTANTIATED);
        /* instantiated again with the same input, it starts the same stream again */
        ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);
        ck_assert_int_eq(randd_drbg_generate(d, again, sizeof(again), NULL, 0, false, NULL, 0),
                         RANDD_DRBG_OK);
        ck_assert(memcmp(out, again, sizeof(out)) == 0);
        randd_drbg_free(d);
    }
}
END_TEST

/* A forked child holds a copy of the parent's state: it must not continue the parent's
 * stream. OpenSSL then asks for a reseed the seed source cannot give (nobody handed it
 * entropy), so the copy refuses, and serves again only once instantiated afresh. */
START_TEST(a_forked_copy_refuses_output_until_instantiated_afresh)
{
    static const uint8_t e[32] = { 9 }, nonce[16] = { 10 }, fresh[32] = { 11 };
    uint8_t out[16];
    int status[3], fds[2];
    struct randd_drbg *d;
    pid_t pid;

    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_CTR_AES256, &d), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        status[0] = randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0);
        randd_drbg_uninstantiate(d);
        status[1] = randd_drbg_instantiate(d, fresh, 32, nonce, 16, NULL, 0);
        status[2] = randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0);
        _exit(write(fds[1], status, sizeof(status)) == sizeof(status) ? 0 : 1);
    }
    close(fds[1]);
    ck_assert_int_eq(read(fds[0], status, sizeof(status)), sizeof(status));
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    ck_assert_msg(status[0] == RANDD_DRBG_E_OPENSSL, "the forked copy generated: %s",
                  randd_drbg_strerror(status[0]));
    ck_assert_int_eq(status[1], RANDD_DRBG_OK);
    ck_assert_int_eq(status[2], RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    randd_drbg_free(d);
}
END_TEST

/* ---- the self-test ------------------------------------------------------------------------ */

static void teardown(void)
{
    randd_drbg_selftest_inject_fault(false);
}

START_TEST(selftest_passes)
{
    char why[300] = "unset";
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_msg(randd_drbg_selftest(why, sizeof(why)) == 0, "self-test failed: %s", why);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_str_eq(why, "");
    ck_assert(!randd_drbg_in_error_state());
    printf("test_drbg: the DRBG self-test (4 known answers) took %.2f ms\n",
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}
END_TEST

/* SP 800-90A 11.3: a failed health test stops every DRBG until the test passes again. */
START_TEST(a_failed_selftest_halts_output_until_a_clean_retest)
{
    static const uint8_t e[32] = { 7 }, nonce[16] = { 8 };
    uint8_t out[32];
    char why[300];
    struct randd_drbg *d, *later;

    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_CTR_AES256, &d), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(d, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);

    randd_drbg_selftest_inject_fault(true);
    ck_assert_int_eq(randd_drbg_selftest(why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "CTR_DRBG") && strstr(why, "known answer"),
                  "the failure does not name the DRBG and the step: \"%s\"", why);
    ck_assert(randd_drbg_in_error_state());
    memset(out, 0xa5, sizeof(out));
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_E_SELFTEST_FAILED);
    for (size_t i = 0; i < sizeof(out); i++)
        ck_assert_msg(out[i] == 0, "halted generate left byte %zu unwiped", i);
    ck_assert_int_eq(randd_drbg_reseed(d, e, 32, NULL, 0), RANDD_DRBG_E_SELFTEST_FAILED);
    ck_assert_int_eq(randd_drbg_new(RANDD_DRBG_HASH_SHA512, &later), RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(later, e, 32, nonce, 16, NULL, 0),
                     RANDD_DRBG_E_SELFTEST_FAILED);

    /* still failing: still halted */
    ck_assert_int_eq(randd_drbg_selftest(why, sizeof(why)), -1);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_E_SELFTEST_FAILED);

    randd_drbg_selftest_inject_fault(false);
    ck_assert_msg(randd_drbg_selftest(why, sizeof(why)) == 0, "clean re-test failed: %s", why);
    ck_assert_int_eq(randd_drbg_generate(d, out, sizeof(out), NULL, 0, false, NULL, 0),
                     RANDD_DRBG_OK);
    ck_assert_int_eq(randd_drbg_instantiate(later, e, 32, nonce, 16, NULL, 0), RANDD_DRBG_OK);
    randd_drbg_free(later);
    randd_drbg_free(d);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("drbg");
    TCase *tc = tcase_create("drbg");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, cavp_vectors_pass_for_every_drbg);
    tcase_add_test(tc, a_changed_byte_fails_a_vector);
    tcase_add_loop_test(tc, wrapper_matches_evp_rand_driven_directly, 0, runner_count(4));
    tcase_add_test(tc, the_differential_test_fails_with_one_input_byte_changed);
    tcase_add_test(tc, independent_hash_drbg_reproduces_a_cavp_answer);
    tcase_add_loop_test(tc, hash_drbg_matches_one_written_from_sp800_90a, 0, runner_count(4));
    tcase_add_test(tc, limits_are_those_of_sp800_90a);
    tcase_add_test(tc, errors_are_named_and_refuse_output);
    tcase_add_test(tc, reseed_interval_is_enforced);
    tcase_add_test(tc, uninstantiate_wipes_the_state);
    tcase_add_test(tc, a_forked_copy_refuses_output_until_instantiated_afresh);
    tcase_add_test(tc, selftest_passes);
    tcase_add_test(tc, a_failed_selftest_halts_output_until_a_clean_retest);
    return s;
}
