/* The DRBGs' known-answer self-test, SP 800-90A 11.3: for each mechanism, NIST CAVP answers
 * (drbgtestvectors.zip, as OpenSSL's evprand.txt carries them) run through the production
 * wrapper (internal/drbg.c) from instantiate to uninstantiate, then the state must read as
 * zero. Between them the answers cover instantiate (11.3.2), generate with and without
 * prediction resistance (11.3.3), reseed (11.3.5, directly for CTR_DRBG, through prediction
 * resistance for Hash_DRBG) and uninstantiate (11.3.4). A failure halts every DRBG of the
 * process until a self-test passes again. */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "drbg.h"
#include "drbg_internal.h"

struct drbg_kat {
    enum randd_drbg_type type;
    const char *what;
    bool pr;
    const char *entropy, *nonce, *pers;
    const char *reseed_entropy, *reseed_addl;
    const char *addl_a, *pr_entropy_a, *addl_b, *pr_entropy_b;
    const char *output;
};

static const struct drbg_kat kats[] = {
    { RANDD_DRBG_CTR_AES256, "instantiate, reseed, generate (CAVP pr_false, AES-256 use_df)",
      false,
      "174b46250051a9e3d80c56ae7163dafe7e54481a56cafd3b8625f99bbb29c442",
      "98ffd99c466e0e94a45da7e0e82dbc6b",
      "7095268e99938b3e042734b9176c9aa051f00a5f8d2a89ada214b89beef18ebf",
      "e88be1967c5503f65d23867bbc891bd679db03b4878663f6c877592df25f0d9a",
      "cdf6ad549e45b6aa5cd67d024931c33cd133d52d5ae500c3015020beb30da063",
      "c7228e90c62f896a09e11684530102f926ec90a3255f6c21b857883c75800143", NULL,
      "76a94f224178fe4cbf9e2b8acc53c9dc3e50bb613aac8936601453cda3293b17", NULL,
      "1a6d8dbd642076d13916e5e23038b60b26061f13dd4e006277e0268698ffb2c8"
      "7e453bae1251631ac90c701a9849d933995e8b0221fe9aca1985c546c2079027" },
    { RANDD_DRBG_HASH_SHA512, "instantiate, generate (CAVP no_reseed, SHA-512)",
      false,
      "31e8d6fbdc9026b0708405c20b558fcc0a107f3fdc836fe056f020df30d9dc57",
      "2b8bbab9b486abb659c4ae8ff5978e22",
      "949eb753762869aa5ea0ce725523595f9bc9b219735113e71feab228d0872c38",
      NULL, NULL,
      "88f1180d4ef564315280a9692f107ed9c0639d79bb7040dfc3b7d58bf24ef8f5", NULL,
      "f4fc8a26e0ad181838f1399fe5b8a4b86670e92ab92b2c4daf3913470724d3f2", NULL,
      "10509641332a4d72a3c5936512c37cb9ab9874693902ee4c76e963675627ef86"
      "aa2e7d7029a152b800072fc53eeb6b41d12f481cde99b467dac3486836f6e146"
      "e9a79d3fb90d9b26f213ddbfac590ca083ed83fde4924395d25b645b96a6983e"
      "65fd662cae66112ebfa990f09b86b01270b7f0ef35f183eb01ffcbd7d5ec6adc"
      "4839cf3814dac858e013c6d79528ef273dd83724ccdc82b73dc63698fcf8ef09"
      "24f27b6a49d6d38f0ce261aa5a0a88779e47a413c29e1d7d20e4ab914bbabd5e"
      "6e0241cf53263a8efa321b4a632eb062b255c0ce5a0833114161dd073dd03796"
      "7a1f03daf2dd7e927b801b40e62f26c0872ea100132807650232126aa8f29d70" },
    { RANDD_DRBG_HASH_SHA512, "prediction-resistant reseed and generate (CAVP pr_true, SHA-512)",
      true,
      "7ba8431c16fb16d1121509f225abd5b37a25b0c5c069b7454c2266269cf26e1b",
      "7f04482b3a14d8fc7a29816a27ca66a2",
      NULL, NULL, NULL,
      "64653b875359f3ab5d96aa494d44669022b48ca5c1c1f76a1814b7655199dbf3",
      "d05201365d2bccf9a65804b23bba82bfb65596d42fc51cc52922081d6e5074a2",
      "1e5004c4c2f850fa6be2e01710a4df0e576300ff4fc4de40e9c91358f26fd408",
      "59185a07b20dec5857b79ddab28d46a52e4b0aad9df9cdb776133854aac0db3e",
      "16232b5284ea1a8aadca65677908ba74c970ab6c346be4e6789625c5dc10e5ac"
      "a1e6b853fe174bc116a0582ba7e07b20f698eabfb91c89ce5b87232636bef16e"
      "5a966d0073d4e92a89735c397dbbdf80bcf9c310a5aec98ad077643ade1d8737"
      "d408b788d90c6b538d10da0391d9ea87e74a7f8d0527b1d0edf760c69acfacca"
      "dd29bc69b274cf08fd2a506d8d588b4deefc67a31aeb43831c096e3ca7066b43"
      "45b26916d3c5f83182406b448cea0fb0d1c620d875a107a6d8d0d3b12eabb404"
      "e80c8608e714ac43d6e962c97ef22e88c9ac662d484d24e2a8cf0398e09185e3"
      "3680b12595e977623714b3f709b6fddc1861c53c4afdb3fdedf7dc4dcf5bb0e2" },
    { RANDD_DRBG_HMAC_SHA512, "instantiate, generate (CAVP no_reseed, SHA-512)",
      false,
      "b8986abc6b50516023dec0e7781e93b4b03848dde5e52228d294554df1c2bb00",
      "f33c24a6daeac094c1ccd55cf361977e",
      NULL, NULL, NULL, NULL, NULL, NULL, NULL,
      "95b7f29293e4a8f8482708020c7ecd95dcf05cdb3df4a4483b686419c74582b9"
      "e98edebf5ddc6bbf9814f17f6d46eaa90cf3c13ee1747377a882483729b3adc9"
      "cfb3f7d4c0271347521aba7396f100bfd57083718effdc69930a6ab962afea02"
      "75c667c7152f088f2019c44b416eab94ff01c243b158676068e4fe44168073e3"
      "0167a57a4ff8cf8010cb3bff991f4e93e70db1e37f40a7a82d4faccc3be32b91"
      "35d027d95ac543b632a310620a02e3b470a254e9dc98c4e99e0136a104312639"
      "809fe0dd94ab03a2eeeaa43ad232e3793b4aa7b0b78767d11c85d2f87f7849ee"
      "2d7189f1e4e5b8b08bac8464454350f1e06e7b7a5570071521a7b7b3b722b8a2" },
};

#define KAT_MAX_FIELD 256

static bool fault_injected;

void randd_drbg_selftest_inject_fault(bool on)
{
    fault_injected = on;
}

/* The tables above are ours and well formed; a NULL field is an empty input. */
static size_t kat_bytes(const char *hex, unsigned char *out)
{
    size_t n = 0;

    for (; hex != NULL && hex[0] && hex[1] && n < KAT_MAX_FIELD; hex += 2) {
        unsigned hi, lo;

        sscanf(hex, "%1x%1x", &hi, &lo);
        out[n++] = (unsigned char)(hi << 4 | lo);
    }
    return n;
}

struct kat_buffers {
    unsigned char entropy[KAT_MAX_FIELD], nonce[KAT_MAX_FIELD], pers[KAT_MAX_FIELD];
    unsigned char reseed_entropy[KAT_MAX_FIELD], reseed_addl[KAT_MAX_FIELD];
    unsigned char addl_a[KAT_MAX_FIELD], pr_a[KAT_MAX_FIELD];
    unsigned char addl_b[KAT_MAX_FIELD], pr_b[KAT_MAX_FIELD];
    unsigned char expected[KAT_MAX_FIELD], got[KAT_MAX_FIELD];
};

/* One known answer; returns the failed step, or NULL. */
static const char *run_kat(const struct drbg_kat *k, struct kat_buffers *b, int *status)
{
    struct randd_drbg *d = NULL;
    size_t entropy_len = kat_bytes(k->entropy, b->entropy);
    size_t nonce_len = kat_bytes(k->nonce, b->nonce);
    size_t pers_len = kat_bytes(k->pers, b->pers);
    size_t reseed_len = kat_bytes(k->reseed_entropy, b->reseed_entropy);
    size_t reseed_addl_len = kat_bytes(k->reseed_addl, b->reseed_addl);
    size_t addl_a_len = kat_bytes(k->addl_a, b->addl_a);
    size_t pr_a_len = kat_bytes(k->pr_entropy_a, b->pr_a);
    size_t addl_b_len = kat_bytes(k->addl_b, b->addl_b);
    size_t pr_b_len = kat_bytes(k->pr_entropy_b, b->pr_b);
    size_t n = kat_bytes(k->output, b->expected);
    const char *failed = NULL;

    if (fault_injected)
        b->expected[0] ^= 0x01;
    if ((*status = randd_drbg_new_for_selftest(k->type, &d)) != RANDD_DRBG_OK)
        failed = "create";
    else if ((*status = randd_drbg_instantiate(d, b->entropy, entropy_len, b->nonce, nonce_len,
                                          b->pers, pers_len)) != RANDD_DRBG_OK)
        failed = "instantiate";
    else if (reseed_len > 0
             && (*status = randd_drbg_reseed(d, b->reseed_entropy, reseed_len,
                                             b->reseed_addl, reseed_addl_len)) != RANDD_DRBG_OK)
        failed = "reseed";
    else if ((*status = randd_drbg_generate(d, b->got, n, b->addl_a, addl_a_len, k->pr,
                                            k->pr ? b->pr_a : NULL, pr_a_len)) != RANDD_DRBG_OK)
        failed = "first generate";
    else if ((*status = randd_drbg_generate(d, b->got, n, b->addl_b, addl_b_len, k->pr,
                                            k->pr ? b->pr_b : NULL, pr_b_len)) != RANDD_DRBG_OK)
        failed = "second generate";
    else if (CRYPTO_memcmp(b->got, b->expected, n) != 0)
        failed = "known answer (output differs from NIST's)";
    else if ((*status = randd_drbg_uninstantiate(d)) != RANDD_DRBG_OK)
        failed = "uninstantiate";
    else if (!randd_drbg_is_zeroized(d))
        failed = "uninstantiate (state not zeroized)";
    randd_drbg_free(d);
    OPENSSL_cleanse(b, sizeof(*b));
    return failed;
}

int randd_drbg_selftest(char *why, size_t whylen)
{
    struct kat_buffers b;

    for (size_t i = 0; i < sizeof(kats) / sizeof(kats[0]); i++) {
        int status = RANDD_DRBG_OK;
        const char *failed = run_kat(&kats[i], &b, &status);

        if (failed != NULL) {
            randd_drbg_set_error_state(true);
            if (why != NULL && whylen > 0)
                snprintf(why, whylen, "%s self-test, %s: %s failed%s%s",
                         randd_drbg_name(kats[i].type), kats[i].what, failed,
                         status != RANDD_DRBG_OK ? ": " : "",
                         status != RANDD_DRBG_OK ? randd_drbg_strerror(status) : "");
            return -1;
        }
    }
    randd_drbg_set_error_state(false);
    if (why != NULL && whylen > 0)
        why[0] = '\0';
    return 0;
}
