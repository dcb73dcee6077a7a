/* Known answers for the primitives, through the exact EVP call paths the generator uses
 * (lib/crypto.c): RFC 7693 for BLAKE2b, FIPS 180-4's example for SHA-512, RFC 8439 2.4.2 for
 * ChaCha20. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "aes_ctr.h"
#include "crypto.h"
#include "runner.h"

static struct randd_crypto *c;

static void setup(void)
{
    c = randd_crypto_new();
    ck_assert_ptr_nonnull(c);
}

static void teardown(void)
{
    randd_crypto_free(c);
}

START_TEST(blake2b512_matches_rfc7693_appendix_a)
{
    uint8_t want[64], got[64];
    struct iovec abc = { "abc", 3 };

    unhex("ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
          "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923", want, 64);
    ck_assert_int_eq(randd_blake2b512(c, got, &abc, 1), 0);
    ck_assert_mem_eq(got, want, 64);
}
END_TEST

START_TEST(blake2b512_concatenates_parts)
{
    uint8_t whole[64], split[64];
    struct iovec one = { "abc", 3 };
    struct iovec three[3] = { { "a", 1 }, { "", 0 }, { "bc", 2 } };

    ck_assert_int_eq(randd_blake2b512(c, whole, &one, 1), 0);
    ck_assert_int_eq(randd_blake2b512(c, split, three, 3), 0);
    ck_assert_mem_eq(split, whole, 64);
}
END_TEST

/* FIPS 180-4's one-block example (NIST's SHA512.pdf, "abc"), twice: the context is freed
 * after each call, so the second must find it fresh. */
START_TEST(sha512_matches_fips180_abc_each_call)
{
    uint8_t want[64], got[64];
    struct iovec abc = { "abc", 3 };

    unhex("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
          "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f", want, 64);
    for (int call = 0; call < 2; call++) {
        memset(got, 0, sizeof(got));
        ck_assert_int_eq(randd_sha512(c, got, &abc, 1), 0);
        ck_assert_mem_eq(got, want, 64);
    }
}
END_TEST

/* Parts are concatenated, empty ones skipped, and out may be one of them (the pool's
 * accumulator is hashed into itself). */
START_TEST(sha512_concatenates_parts_and_may_overwrite_one)
{
    uint8_t whole[64], acc[64];
    uint8_t joined[64 + 3];
    struct iovec one = { joined, sizeof(joined) };
    struct iovec parts[3] = { { acc, sizeof(acc) }, { "", 0 }, { "abc", 3 } };

    for (int i = 0; i < 64; i++)
        acc[i] = (uint8_t)(i * 7);
    memcpy(joined, acc, 64);
    memcpy(joined + 64, "abc", 3);
    ck_assert_int_eq(randd_sha512(c, whole, &one, 1), 0);
    ck_assert_int_eq(randd_sha512(c, acc, parts, 3), 0);
    ck_assert_mem_eq(acc, whole, 64);
}
END_TEST

/* The reference blake2b-kat.txt keyed entry for the empty message, key 00..3f. */
START_TEST(blake2b512_keyed_matches_reference_kat)
{
    uint8_t key[64], want[64], got[64];

    for (int i = 0; i < 64; i++)
        key[i] = (uint8_t)i;
    unhex("10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786"
          "b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568", want, 64);
    ck_assert_int_eq(randd_blake2b512_keyed(c, got, key, sizeof(key), NULL, 0), 0);
    ck_assert_mem_eq(got, want, 64);
    /* Context reuse must not carry the previous key into the next call. */
    ck_assert_int_eq(randd_blake2b512_keyed(c, got, key, sizeof(key), NULL, 0), 0);
    ck_assert_mem_eq(got, want, 64);
}
END_TEST

START_TEST(blake2b512_keyed_refuses_bad_key_length)
{
    uint8_t key[65] = { 0 }, out[64];

    ck_assert_int_eq(randd_blake2b512_keyed(c, out, key, 0, "x", 1), -EINVAL);
    ck_assert_int_eq(randd_blake2b512_keyed(c, out, key, 65, "x", 1), -EINVAL);
}
END_TEST

static const char sunscreen[] = "Ladies and Gentlemen of the class of '99: If I could offer "
                                "you only one tip for the future, sunscreen would be it.";

static void rfc8439_key_iv(uint8_t key[32], uint8_t iv[16])
{
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    /* OpenSSL's IV: initial block counter 1 (little-endian), then the 96-bit nonce. */
    unhex("01000000 000000000000004a00000000", iv, 16);
}

START_TEST(chacha20_matches_rfc8439_2_4_2)
{
    uint8_t key[32], iv[16], want[114], got[114];
    size_t n = strlen(sunscreen);

    ck_assert_uint_eq(n, sizeof(want));
    rfc8439_key_iv(key, iv);
    unhex("6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
          "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
          "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
          "5af90bbf74a35be6b40b8eedf2785e42874d", want, sizeof(want));
    ck_assert_int_eq(randd_chacha20(c, key, iv, sunscreen, got, n), 0);
    ck_assert_mem_eq(got, want, n);
    /* In place, as the generator runs it, gives the same bytes. */
    memcpy(got, sunscreen, n);
    ck_assert_int_eq(randd_chacha20(c, key, iv, got, got, n), 0);
    ck_assert_mem_eq(got, want, n);
}
END_TEST

START_TEST(chacha20_keystream_is_prefix_consistent)
{
    uint8_t key[32], iv[16], xored[114], stream[200], longer[256];
    size_t n = strlen(sunscreen);

    rfc8439_key_iv(key, iv);
    /* Keystream mode (no input) XORed with the plaintext must equal the encryption. */
    ck_assert_int_eq(randd_chacha20(c, key, iv, sunscreen, xored, n), 0);
    ck_assert_int_eq(randd_chacha20(c, key, iv, NULL, stream, n), 0);
    for (size_t i = 0; i < n; i++)
        stream[i] ^= (uint8_t)sunscreen[i];
    ck_assert_mem_eq(stream, xored, n);
    /* A length that ends mid-block is the prefix of a longer one. */
    ck_assert_int_eq(randd_chacha20(c, key, iv, NULL, stream, 200), 0);
    ck_assert_int_eq(randd_chacha20(c, key, iv, NULL, longer, 256), 0);
    ck_assert_mem_eq(stream, longer, 200);
}
END_TEST

/* Parts laid end to end get one stream, whatever the splits (mid-block ones included), and
 * a key among the outputs is read before it is overwritten. */
START_TEST(chacha20_stream_lays_one_keystream_across_parts)
{
    uint8_t key[32], iv[16], whole[300], split[300], rekeyed[32 + 200];
    struct iovec parts[] = { { split, 5 }, { split + 5, 0 }, { split + 5, 64 },
                             { split + 69, 131 }, { split + 200, 100 } };

    rfc8439_key_iv(key, iv);
    ck_assert_int_eq(randd_chacha20(c, key, iv, NULL, whole, sizeof(whole)), 0);
    ck_assert_int_eq(randd_chacha20_stream(c, key, iv, parts, 5), 0);
    ck_assert_mem_eq(split, whole, sizeof(whole));

    struct iovec over_key[] = { { key, 32 }, { rekeyed + 32, 200 } };

    ck_assert_int_eq(randd_chacha20_stream(c, key, iv, over_key, 2), 0);
    memcpy(rekeyed, key, 32);
    ck_assert_mem_eq(rekeyed, whole, sizeof(rekeyed));
}
END_TEST

/* --- the AES-256-CTR keystream: computed apart with `openssl enc -aes-256-ctr -K 0001..1f
 * -iv 0` over zeros (and checked with Python's cryptography package) --------------------- */

static void counting_key(uint8_t key[32])
{
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
}

START_TEST(aes256ctr_stream_matches_openssl_enc)
{
    uint8_t key[32], want_head[32], want_tail[16], got[4128];
    struct iovec all = { got, sizeof(got) };

    if (!randd_crypto_has_hardware_aes()) {
        ck_assert_int_eq(randd_crypto_use_stream(c, RANDD_STREAM_AES256CTR), -ENOTSUP);
        return;                       /* no AES here: refusing it is the behaviour to prove */
    }
    counting_key(key);
    unhex("f29000b62a499fd0a9f39a6add2e7780f05d76ae4ab99fe5a6f69b3148c2363d", want_head, 32);
    unhex("21cc98e5d32dd49c9ec1f278e2c7b86f", want_tail, 16);
    ck_assert_int_eq(randd_crypto_use_stream(c, RANDD_STREAM_AES256CTR), 0);
    ck_assert_int_eq(randd_crypto_stream(c), RANDD_STREAM_AES256CTR);
    ck_assert_int_eq(randd_stream(c, key, &all, 1), 0);
    ck_assert_mem_eq(got, want_head, 32);
    ck_assert_mem_eq(got + sizeof(got) - 16, want_tail, 16);
}
END_TEST

/* The direct paths (aes_ctr.c: AES-NI, and VAES where the CPU has it) against OpenSSL's own
 * AES-256-CTR: random keys, IVs whose low 64 bits are about to carry into the high half (in
 * the first batch, and inside a later sixteen-block one) and the whole 128 bits about to
 * wrap, lengths around the 8- and 16-block strides, and the stream cut at odd places. */
static void evp_aes256ctr(const uint8_t key[32], const uint8_t iv[16], uint8_t *out, int n)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    uint8_t *zeros = calloc(1, (size_t)n + 1);
    int done = 0;

    ck_assert_ptr_nonnull(ctx);
    ck_assert_ptr_nonnull(zeros);
    ck_assert_int_eq(EVP_EncryptInit_ex2(ctx, EVP_aes_256_ctr(), key, iv, NULL), 1);
    ck_assert_int_eq(EVP_EncryptUpdate(ctx, out, &done, zeros, n), 1);
    ck_assert_int_eq(done, n);
    EVP_CIPHER_CTX_free(ctx);
    free(zeros);
}

START_TEST(direct_aes256ctr_matches_evp)
{
    static const size_t lengths[] = { 1, 15, 16, 17, 127, 128, 129, 143, 255, 256, 257, 271,
                                      528, 4032, 4096, 5000 };
    uint8_t key[32], iv[16], want[5000], got[5000];

    if (!randd_aes256ctr_available() || !randd_crypto_has_hardware_aes()) {
        printf("SKIP direct_aes256ctr_matches_evp: no direct AES path on this CPU or build\n");
        return;
    }
    if (!randd_aes256ctr_wide_available())
        printf("SKIP direct_aes256ctr_matches_evp on VAES: this CPU has none\n");
    for (int wide = 0; wide <= randd_aes256ctr_wide_available(); wide++)
        for (int round = 0; round < 4; round++) {
            ck_assert_int_eq(RAND_bytes(key, sizeof(key)), 1);
            ck_assert_int_eq(RAND_bytes(iv, sizeof(iv)), 1);
            if (round == 1)
                memset(iv + 8, 0xff, 7), iv[15] = 0xf9;     /* low half carries after 7 blocks */
            if (round == 2)
                memset(iv, 0xff, 15), iv[15] = 0xfd;        /* all 128 bits wrap after 3 */
            if (round == 3)
                memset(iv + 8, 0xff, 7), iv[15] = 0xeb;     /* carries in the second 16 */
            for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
                size_t n = lengths[i], cut = n / 3, cut2 = n - n / 5;
                struct iovec whole = { got, n };
                struct iovec parts[] = { { got, cut }, { got + cut, cut2 - cut },
                                         { got + cut2, n - cut2 } };

                evp_aes256ctr(key, iv, want, (int)n);
                memset(got, 0, sizeof(got));
                randd_aes256ctr_stream_on(wide, key, iv, &whole, 1);
                ck_assert_msg(memcmp(got, want, n) == 0, "%s, round %d, %zu bytes whole",
                              wide ? "VAES" : "AES-NI", round, n);
                memset(got, 0, sizeof(got));
                randd_aes256ctr_stream_on(wide, key, iv, parts, 3);
                ck_assert_msg(memcmp(got, want, n) == 0, "%s, round %d, %zu bytes in 3 parts",
                              wide ? "VAES" : "AES-NI", round, n);
            }
        }
}
END_TEST

/* A generator's step keys the stream with bytes that lie where the stream goes. */
START_TEST(direct_aes256ctr_reads_key_before_writing)
{
    static const uint8_t zero_iv[16];
    uint8_t key[32], want[96], buf[96];
    struct iovec all = { buf, sizeof(buf) };

    if (!randd_aes256ctr_available() || !randd_crypto_has_hardware_aes()) {
        printf("SKIP direct_aes256ctr_reads_key_before_writing: no direct AES path here\n");
        return;
    }
    counting_key(key);
    evp_aes256ctr(key, zero_iv, want, sizeof(want));
    memcpy(buf, key, sizeof(key));
    randd_aes256ctr_stream(buf, zero_iv, &all, 1);
    ck_assert_mem_eq(buf, want, sizeof(want));
}
END_TEST

/* The same key under each cipher: ChaCha20's stream is randd_chacha20's with IV 0, AES's is
 * another, and parts split mid-block still make one stream. */
START_TEST(each_cipher_gives_its_own_stream)
{
    static const uint8_t zero_iv[16];
    uint8_t key[32], chacha[300], chacha_split[300], aes[300], aes_split[300];
    struct iovec all = { chacha_split, sizeof(chacha_split) };
    struct iovec parts[] = { { aes_split, 5 }, { aes_split + 5, 131 }, { aes_split + 136, 164 } };

    counting_key(key);
    ck_assert_int_eq(randd_chacha20(c, key, zero_iv, NULL, chacha, sizeof(chacha)), 0);
    ck_assert_int_eq(randd_stream(c, key, &all, 1), 0);
    ck_assert_mem_eq(chacha_split, chacha, sizeof(chacha));
    if (!randd_crypto_has_hardware_aes())
        return;
    ck_assert_int_eq(randd_crypto_use_stream(c, RANDD_STREAM_AES256CTR), 0);
    all.iov_base = aes;
    ck_assert_int_eq(randd_stream(c, key, &all, 1), 0);
    ck_assert_int_eq(randd_stream(c, key, parts, 3), 0);
    ck_assert_mem_eq(aes_split, aes, sizeof(aes));
    ck_assert_msg(memcmp(aes, chacha, sizeof(aes)) != 0, "AES-256-CTR gave ChaCha20's stream");
    /* Bound to AES, the ChaCha20 calls refuse rather than run the wrong cipher. */
    ck_assert_int_eq(randd_chacha20(c, key, zero_iv, NULL, chacha, 64), -EINVAL);
    ck_assert_int_eq(randd_chacha20_stream(c, key, zero_iv, &all, 1), -EINVAL);
    ck_assert_int_eq(randd_crypto_use_stream(c, RANDD_STREAM_CHACHA20), 0);
    all.iov_base = chacha_split;
    ck_assert_int_eq(randd_stream(c, key, &all, 1), 0);
    ck_assert_mem_eq(chacha_split, chacha, sizeof(chacha));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("crypto");
    TCase *tc = tcase_create("known answers");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, blake2b512_matches_rfc7693_appendix_a);
    tcase_add_test(tc, blake2b512_concatenates_parts);
    tcase_add_test(tc, blake2b512_keyed_matches_reference_kat);
    tcase_add_test(tc, blake2b512_keyed_refuses_bad_key_length);
    tcase_add_test(tc, sha512_matches_fips180_abc_each_call);
    tcase_add_test(tc, sha512_concatenates_parts_and_may_overwrite_one);
    tcase_add_test(tc, chacha20_matches_rfc8439_2_4_2);
    tcase_add_test(tc, chacha20_keystream_is_prefix_consistent);
    tcase_add_test(tc, chacha20_stream_lays_one_keystream_across_parts);
    tcase_add_test(tc, aes256ctr_stream_matches_openssl_enc);
    tcase_add_test(tc, direct_aes256ctr_matches_evp);
    tcase_add_test(tc, direct_aes256ctr_reads_key_before_writing);
    tcase_add_test(tc, each_cipher_gives_its_own_stream);
    suite_add_tcase(s, tc);
    return s;
}
