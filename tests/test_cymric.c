/* The Cymric generator (internal/cymric.c): the reference known answers (ChaCha20, and
 * AES-256-CTR against the openssl command), fast key erasure, seeding, the batched reader and
 * wiping. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cymric.h"
#include "runner.h"

/* Reference Cymric known answers, deterministic form (tests/vectors/cymric-kat.txt):
 * all-zero state, seed(00 01 .. 1f), then generate 32, 32, 64 and 100 bytes. */
static const char kat_state_after_seed[] =
    "5c5210031f3ed5fe1359a226c06e373cfef176b2eb54198ff1bd41df78c9954c"
    "6e7441dab848f4922d78b38c77f035ffaaf47d051e20bf665e063edbf3e90559";
static const struct { size_t n; const char *hex; } kat_out[] = {
    { 32, "6744fa3dd2f9a07aa8a1b71ae4426765e153250113384ceb6599550913952b14" },
    { 32, "920d7f257be28228193c6701e2942fe32c7df5cd7faeb94f7b9747ceb132fc40" },
    { 64, "ce96cf064e5f768347c3976fb9b66b49abf7b87a2dc9eb03ca8e830e851ce693"
          "3f595556a56c770089286a4a30f8e43cfca95a5ffdfb632a5fbc4bfcbc9b9e88" },
    { 100, "fad24987752c6020d17073b8b2d8fd4fe2ed4bdc48e4567da553c7013c11867e"
           "c01799618f712332b71c3d92749fb1bb0370a0cfb4b25f98012c17c492d2b0bb"
           "fd93a90c933cd27d4091dd8bd56f2c593779f987f9b73ea80dca455586da2323"
           "6480af3f" },
};
static const char kat_final_state[] =
    "dd9450af919ba04f9fa25e4945a62558504f79cca3c3b3fbca4ce6f1569c10fb"
    "549b4bdca153e984f3895cd0107a178892f24a50e1c65ff17f759d205e25dd2d";

/* The same sequence with AES-256-CTR bound (cymric-kat.txt, aes section; internal/selftest.c
 * holds the first two). The states are the ChaCha20 sequence's: the rekey does not change. */
static const struct { size_t n; const char *hex; } kat_aes_out[] = {
    { 32, "5cb083d0a1f3958b610e261fb00c0d8b9f51c32142b0c757576671762c63cbe1" },
    { 32, "3f2a137af7ee0473f1a3b2d8b9753cc7878a23bc914df910a28ac1d3b8bd3782" },
    { 64, "60101e632e60ee1501a927379a9f116aad21a2c00e66d2eb28d5513af0c0ab89"
          "97e430daddd56b65770ba36b2724c4c131927e64f84301204f7a7b35a9cda8d9" },
    { 100, "91057da3c4904141baba6a6edaceddbf6d138bfa770eef3343b9b6ffda480557"
           "d9b2fe11b6dde72645b3a84bb31368353c5e6d781e470be2a543764a3caf1ef0"
           "ee87708a966cc965348f310653c63c1329cfdd6f2053023cc9565ca4b7e94bd3"
           "fa8df6bd" },
};

static struct randd_cymric g;

static void seed_with_counting_bytes(struct randd_cymric *gen, unsigned flags)
{
    uint8_t material[32];

    for (int i = 0; i < 32; i++)
        material[i] = (uint8_t)i;
    ck_assert_int_eq(randd_cymric_init(gen, flags), 0);
    ck_assert_int_eq(randd_cymric_seed(gen, material, sizeof(material)), 0);
}

/* seed(00 01 .. 1f) into a generator already created (and bound to a keystream). */
static void seed_with_counting_bytes_bound(struct randd_cymric *gen)
{
    uint8_t material[32];

    for (int i = 0; i < 32; i++)
        material[i] = (uint8_t)i;
    ck_assert_int_eq(randd_cymric_seed(gen, material, sizeof(material)), 0);
}

static void teardown(void)
{
    randd_cymric_fini(&g);
}

START_TEST(reproduces_reference_cymric_outputs)
{
    uint8_t want[100], got[100];

    seed_with_counting_bytes(&g, RANDD_CYMRIC_DETERMINISTIC);
    unhex(kat_state_after_seed, want, 64);
    ck_assert_mem_eq(g.state, want, 64);
    for (size_t i = 0; i < sizeof(kat_out) / sizeof(kat_out[0]); i++) {
        ck_assert_uint_eq(unhex(kat_out[i].hex, want, sizeof(want)), kat_out[i].n);
        ck_assert_int_eq(randd_cymric_generate(&g, got, kat_out[i].n, NULL, 0), 0);
        ck_assert_mem_eq(got, want, kat_out[i].n);
    }
    unhex(kat_final_state, want, 64);
    ck_assert_mem_eq(g.state, want, 64);
}
END_TEST

/* The first n bytes of AES-256-CTR under key with counter block iv, as the openssl command
 * computes them apart from librandd's EVP calls; false where the command cannot run. */
static bool openssl_enc_aes256ctr(const uint8_t key[32], const uint8_t iv[16], uint8_t *out,
                                  size_t n)
{
    char cmd[256], *p;
    FILE *f;
    size_t got;

    p = cmd + snprintf(cmd, sizeof(cmd), "head -c %zu /dev/zero | openssl enc -aes-256-ctr -K ",
                       n);
    for (int i = 0; i < 32; i++)
        p += sprintf(p, "%02x", key[i]);
    p += sprintf(p, " -iv ");
    for (int i = 0; i < 16; i++)
        p += sprintf(p, "%02x", iv[i]);
    sprintf(p, " 2>/dev/null");
    if (!(f = popen(cmd, "r")))
        return false;
    got = fread(out, 1, n, f);
    return pclose(f) == 0 && got == n;
}

START_TEST(aes256ctr_outputs_match_openssl_enc_and_the_reference)
{
    uint8_t want[100], got[100], iv[16] = { 0 };

    if (!randd_crypto_has_hardware_aes()) {
        ck_assert_int_eq(randd_cymric_init(&g, RANDD_CYMRIC_DETERMINISTIC), 0);
        ck_assert_int_eq(randd_cymric_use_stream(&g, RANDD_STREAM_AES256CTR), -ENOTSUP);
        return;                       /* no AES here: refusing it is the behaviour to prove */
    }
    ck_assert_int_eq(randd_cymric_init(&g, RANDD_CYMRIC_DETERMINISTIC), 0);
    ck_assert_int_eq(randd_cymric_use_stream(&g, RANDD_STREAM_AES256CTR), 0);
    ck_assert_int_eq(randd_cymric_stream(&g), RANDD_STREAM_AES256CTR);
    seed_with_counting_bytes_bound(&g);
    for (size_t i = 0; i < sizeof(kat_aes_out) / sizeof(kat_aes_out[0]); i++) {
        size_t n = kat_aes_out[i].n;

        /* Key state[0..31]; counter block: the nonce state[32..39] on top, 0 below. */
        memcpy(iv, g.state + 32, 8);
        if (!openssl_enc_aes256ctr(g.state, iv, want, n)) {
            fprintf(stderr, "SKIP: %s: the openssl command did not run\n", __func__);
            return;
        }
        ck_assert_int_eq(randd_cymric_generate(&g, got, n, NULL, 0), 0);
        ck_assert_msg(memcmp(got, want, n) == 0, "output %zu differs from openssl enc's", i);
        ck_assert_uint_eq(unhex(kat_aes_out[i].hex, want, sizeof(want)), n);
        ck_assert_msg(memcmp(got, want, n) == 0, "output %zu differs from the reference", i);
    }
    unhex(kat_final_state, want, 64);
    ck_assert_mem_eq(g.state, want, 64);
}
END_TEST

/* Rebinding to ChaCha20 gives the reference ChaCha20 outputs again, and a batch read under
 * the old cipher is not served under the new one. */
START_TEST(rebinding_the_stream_switches_the_output_and_drops_the_batch)
{
    uint8_t want[32], got[32];

    if (!randd_crypto_has_hardware_aes())
        return;
    ck_assert_int_eq(randd_cymric_init(&g, RANDD_CYMRIC_DETERMINISTIC), 0);
    ck_assert_int_eq(randd_cymric_use_stream(&g, RANDD_STREAM_AES256CTR), 0);
    seed_with_counting_bytes_bound(&g);
    ck_assert_int_eq(randd_cymric_read(&g, got, 1), 0);
    ck_assert_uint_eq(g.batch_left, RANDD_CYMRIC_BATCH - 1);
    ck_assert_int_eq(randd_cymric_use_stream(&g, RANDD_STREAM_CHACHA20), 0);
    ck_assert_uint_eq(g.batch_left, 0);
    ck_assert_int_eq(randd_cymric_stream(&g), RANDD_STREAM_CHACHA20);
    randd_cymric_wipe(&g);
    seed_with_counting_bytes_bound(&g);
    ck_assert_int_eq(randd_cymric_generate(&g, got, 32, NULL, 0), 0);
    unhex(kat_out[0].hex, want, sizeof(want));
    ck_assert_mem_eq(got, want, 32);
}
END_TEST

START_TEST(refuses_output_before_seeding)
{
    uint8_t out[32];

    ck_assert_int_eq(randd_cymric_init(&g, 0), 0);
    ck_assert_int_eq(randd_cymric_generate(&g, out, sizeof(out), NULL, 0), -EAGAIN);
    ck_assert_int_eq(randd_cymric_read(&g, out, sizeof(out)), -EAGAIN);
    ck_assert_int_eq(randd_cymric_seed(&g, "", 0), -EINVAL);
    ck_assert(!g.seeded);
}
END_TEST

START_TEST(state_changes_after_every_output)
{
    uint8_t before[64], out[100];

    seed_with_counting_bytes(&g, 0);
    for (int i = 0; i < 100; i++) {
        memcpy(before, g.state, 64);
        ck_assert_int_eq(randd_cymric_generate(&g, out, 1 + (size_t)i, NULL, 0), 0);
        ck_assert_msg(memcmp(before, g.state, 64) != 0, "state unchanged after output %d", i);
    }
}
END_TEST

/* No 8-byte window of the state that keyed an output, or of the state after it, appears in
 * that output (chance of a false alarm: about 2^-50 over the whole test). */
START_TEST(output_never_contains_state_bytes)
{
    static uint8_t out[4096];
    uint8_t before[64];

    seed_with_counting_bytes(&g, 0);
    for (int round = 0; round < 16; round++) {
        memcpy(before, g.state, 64);
        ck_assert_int_eq(randd_cymric_generate(&g, out, sizeof(out), NULL, 0), 0);
        for (int at = 0; at + 8 <= 64; at++) {
            ck_assert_msg(!memmem(out, sizeof(out), before + at, 8),
                          "output %d holds bytes %d..%d of its keying state", round, at, at + 7);
            ck_assert_msg(!memmem(out, sizeof(out), g.state + at, 8),
                          "output %d holds bytes %d..%d of the next state", round, at, at + 7);
        }
    }
}
END_TEST

START_TEST(production_rekey_mixes_counter_and_time)
{
    struct randd_cymric ref;
    uint8_t a[32], b[32];

    seed_with_counting_bytes(&ref, RANDD_CYMRIC_DETERMINISTIC);
    seed_with_counting_bytes(&g, 0);
    /* Same seed, so the first output agrees; the rekey that follows must not. */
    ck_assert_int_eq(randd_cymric_generate(&ref, a, 32, NULL, 0), 0);
    ck_assert_int_eq(randd_cymric_generate(&g, b, 32, NULL, 0), 0);
    ck_assert_mem_eq(a, b, 32);
    ck_assert_msg(memcmp(ref.state, g.state, 64) != 0, "counter and timestamp not mixed in");
    randd_cymric_fini(&ref);
}
END_TEST

START_TEST(caller_input_changes_the_next_output)
{
    struct randd_cymric other;
    uint8_t a[32], b[32];

    seed_with_counting_bytes(&g, RANDD_CYMRIC_DETERMINISTIC);
    seed_with_counting_bytes(&other, RANDD_CYMRIC_DETERMINISTIC);
    ck_assert_int_eq(randd_cymric_generate(&g, a, 32, NULL, 0), 0);
    ck_assert_int_eq(randd_cymric_generate(&other, b, 32, "salt", 4), 0);
    ck_assert_int_eq(randd_cymric_generate(&g, a, 32, NULL, 0), 0);
    ck_assert_int_eq(randd_cymric_generate(&other, b, 32, NULL, 0), 0);
    ck_assert_msg(memcmp(a, b, 32) != 0, "caller input did not reach the state");
    randd_cymric_fini(&other);
}
END_TEST

START_TEST(reseeding_changes_the_output)
{
    struct randd_cymric twin;
    uint8_t a[64], b[64];

    seed_with_counting_bytes(&g, RANDD_CYMRIC_DETERMINISTIC);
    seed_with_counting_bytes(&twin, RANDD_CYMRIC_DETERMINISTIC);
    ck_assert_int_eq(randd_cymric_read(&g, a, 10), 0);   /* leaves batch keystream behind */
    ck_assert_int_eq(randd_cymric_read(&twin, b, 10), 0);
    ck_assert_int_eq(randd_cymric_seed(&twin, "fresh material", 14), 0);
    ck_assert_int_eq(randd_cymric_read(&g, a, 64), 0);
    ck_assert_int_eq(randd_cymric_read(&twin, b, 64), 0);
    ck_assert_msg(memcmp(a, b, 64) != 0, "output after reseed equals output without it");
    randd_cymric_fini(&twin);
}
END_TEST

START_TEST(reader_serves_the_generate_stream_and_wipes_what_it_served)
{
    struct randd_cymric twin;
    static uint8_t whole[RANDD_CYMRIC_BATCH];
    uint8_t parts[100];

    seed_with_counting_bytes(&g, RANDD_CYMRIC_DETERMINISTIC);
    seed_with_counting_bytes(&twin, RANDD_CYMRIC_DETERMINISTIC);
    ck_assert_int_eq(randd_cymric_generate(&twin, whole, sizeof(whole), NULL, 0), 0);
    ck_assert_int_eq(randd_cymric_read(&g, parts, 1), 0);
    ck_assert_int_eq(randd_cymric_read(&g, parts + 1, 99), 0);
    ck_assert_mem_eq(parts, whole, 100);
    for (size_t i = 0; i < 100; i++)
        ck_assert_msg(g.batch[i] == 0, "served byte %zu still in the batch", i);
    ck_assert_uint_eq(g.batch_left, RANDD_CYMRIC_BATCH - 100);
    randd_cymric_fini(&twin);
}
END_TEST

/* A read that the batch starts and a failed generate ends leaves none of the batch's bytes in
 * the caller's buffer: the daemon frees such a buffer wiped only up to what it served. The
 * failure here is the generator's own refusal (unseeded), which the reader meets exactly as an
 * OpenSSL error. */
START_TEST(a_failed_read_leaves_nothing_in_the_output)
{
    static uint8_t out[3 * RANDD_CYMRIC_BATCH];

    seed_with_counting_bytes(&g, RANDD_CYMRIC_DETERMINISTIC);
    ck_assert_int_eq(randd_cymric_read(&g, out, 100), 0);        /* a batch, 100 served */
    g.seeded = false;                                             /* the next generate fails */
    memset(out, 0xa5, sizeof(out));
    ck_assert_int_eq(randd_cymric_read(&g, out, sizeof(out)), -EAGAIN);
    for (size_t i = 0; i < sizeof(out); i++)
        ck_assert_msg(out[i] == 0, "byte %zu of a failed read left as %02x", i, out[i]);
    memset(out, 0xa5, sizeof(out));
    ck_assert_int_eq(randd_cymric_read(&g, out, 10), -EAGAIN);   /* from an empty batch */
    for (size_t i = 0; i < 10; i++)
        ck_assert_msg(out[i] == 0, "byte %zu of a failed small read left as %02x", i, out[i]);
}
END_TEST

/* Generators on one shared set of contexts, their calls interleaved, give what generators of
 * their own give (the contexts carry no key from one call to the next), under each cipher;
 * and finishing one leaves the contexts to the others and to their owner. */
START_TEST(generators_sharing_contexts_match_generators_of_their_own)
{
    static const enum randd_stream_cipher ciphers[] = { RANDD_STREAM_CHACHA20,
                                                        RANDD_STREAM_AES256CTR };
    uint8_t material_a[32], material_b[32], own[2][3][300], shared[2][3][300];

    for (int i = 0; i < 32; i++)
        material_a[i] = (uint8_t)i, material_b[i] = (uint8_t)(100 + i);
    for (size_t c = 0; c < sizeof(ciphers) / sizeof(ciphers[0]); c++) {
        struct randd_cymric a, b, sa, sb;
        struct randd_crypto *crypto = randd_crypto_new();

        ck_assert_ptr_nonnull(crypto);
        if (randd_crypto_use_stream(crypto, ciphers[c]) == -ENOTSUP) {
            printf("SKIP generators_sharing_contexts (%s): no hardware AES\n",
                   randd_stream_cipher_name(ciphers[c]));
            randd_crypto_free(crypto);
            continue;
        }
        ck_assert_int_eq(randd_cymric_init(&a, RANDD_CYMRIC_DETERMINISTIC), 0);
        ck_assert_int_eq(randd_cymric_init(&b, RANDD_CYMRIC_DETERMINISTIC), 0);
        ck_assert_int_eq(randd_cymric_use_stream(&a, ciphers[c]), 0);
        ck_assert_int_eq(randd_cymric_use_stream(&b, ciphers[c]), 0);
        ck_assert_int_eq(randd_cymric_init_shared(&sa, RANDD_CYMRIC_DETERMINISTIC, crypto), 0);
        ck_assert_int_eq(randd_cymric_init_shared(&sb, RANDD_CYMRIC_DETERMINISTIC, crypto), 0);
        ck_assert_int_eq(randd_cymric_seed(&a, material_a, 32), 0);
        ck_assert_int_eq(randd_cymric_seed(&b, material_b, 32), 0);
        ck_assert_int_eq(randd_cymric_seed(&sa, material_a, 32), 0);
        ck_assert_int_eq(randd_cymric_seed(&sb, material_b, 32), 0);
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(randd_cymric_read(&a, own[0][i], sizeof(own[0][i])), 0);
            ck_assert_int_eq(randd_cymric_read(&sa, shared[0][i], sizeof(shared[0][i])), 0);
            ck_assert_int_eq(randd_cymric_read(&b, own[1][i], sizeof(own[1][i])), 0);
            ck_assert_int_eq(randd_cymric_read(&sb, shared[1][i], sizeof(shared[1][i])), 0);
        }
        ck_assert_mem_eq(shared, own, sizeof(own));
        ck_assert_msg(memcmp(own[0], own[1], sizeof(own[0])) != 0, "two seeds, one stream");
        randd_cymric_fini(&sa);                       /* the contexts stay for sb */
        ck_assert_int_eq(randd_cymric_generate(&sb, shared[1][0], 64, NULL, 0), 0);
        ck_assert_int_eq(randd_cymric_generate(&b, own[1][0], 64, NULL, 0), 0);
        ck_assert_mem_eq(shared[1][0], own[1][0], 64);
        randd_cymric_fini(&sb);
        randd_cymric_fini(&a);
        randd_cymric_fini(&b);
        randd_crypto_free(crypto);
    }
}
END_TEST

START_TEST(wipe_leaves_zeros_and_an_unseeded_generator)
{
    static const uint8_t zeros[RANDD_CYMRIC_BATCH];
    uint8_t out[16];

    seed_with_counting_bytes(&g, 0);
    ck_assert_int_eq(randd_cymric_read(&g, out, sizeof(out)), 0);
    randd_cymric_wipe(&g);
    ck_assert_mem_eq(g.state, zeros, RANDD_CYMRIC_STATE);
    ck_assert_mem_eq(g.batch, zeros, RANDD_CYMRIC_BATCH);
    ck_assert_uint_eq(g.batch_left, 0);
    ck_assert(!g.seeded);
    ck_assert_int_eq(randd_cymric_generate(&g, out, sizeof(out), NULL, 0), -EAGAIN);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("cymric");
    TCase *tc = tcase_create("generator");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, reproduces_reference_cymric_outputs);
    tcase_add_test(tc, generators_sharing_contexts_match_generators_of_their_own);
    tcase_add_test(tc, aes256ctr_outputs_match_openssl_enc_and_the_reference);
    tcase_add_test(tc, rebinding_the_stream_switches_the_output_and_drops_the_batch);
    tcase_add_test(tc, refuses_output_before_seeding);
    tcase_add_test(tc, state_changes_after_every_output);
    tcase_add_test(tc, output_never_contains_state_bytes);
    tcase_add_test(tc, production_rekey_mixes_counter_and_time);
    tcase_add_test(tc, caller_input_changes_the_next_output);
    tcase_add_test(tc, reseeding_changes_the_output);
    tcase_add_test(tc, reader_serves_the_generate_stream_and_wipes_what_it_served);
    tcase_add_test(tc, a_failed_read_leaves_nothing_in_the_output);
    tcase_add_test(tc, wipe_leaves_zeros_and_an_unseeded_generator);
    suite_add_tcase(s, tc);
    return s;
}
