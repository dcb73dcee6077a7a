/* The Randen generator (internal/randen.c): google/randen's golden outputs, the pi round keys,
 * seeding, cutting the stream into calls, wiping of served bytes. Vector files are read
 * from tests/vectors/, relative to the repository root the tests run from. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randen.h"
#include "runner.h"

#define GOLDEN_FILE "tests/vectors/randen-golden.txt"
#define PI_FILE     "tests/vectors/pi-hex-digits.txt"
#define GOLDEN_N    127

static struct randd_randen g;

static void teardown(void)
{
    randd_randen_wipe(&g);
}

static FILE *open_vector(const char *path)
{
    FILE *f = fopen(path, "r");

    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root): %s", path,
                  strerror(errno));
    return f;
}

/* Reads up to cap lines of `per_line` 0x-prefixed 64-bit hex numbers, skipping '#' comments
 * and blank lines; returns the number of lines read. */
static size_t read_words(const char *path, uint64_t *words, size_t per_line, size_t cap)
{
    FILE *f = open_vector(path);
    char line[256];
    size_t lines = 0, lineno = 0;

    while (fgets(line, sizeof(line), f)) {
        char *p = line, *end;

        lineno++;
        p += strspn(p, " \t");
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        ck_assert_msg(lines < cap, "%s: more than %zu entries", path, cap);
        for (size_t i = 0; i < per_line; i++) {
            errno = 0;
            words[lines * per_line + i] = strtoull(p, &end, 16);
            ck_assert_msg(end != p && errno == 0 && strncmp(p + strspn(p, " \t"), "0x", 2) == 0,
                          "%s:%zu: expected %zu 0x-prefixed hex words", path, lineno, per_line);
            p = end;
        }
        lines++;
    }
    fclose(f);
    return lines;
}

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void init_zero(struct randd_randen *r)
{
    ck_assert_int_eq(randd_randen_init(r), 0);
}

static void seeded(struct randd_randen *r, const void *material, size_t len)
{
    init_zero(r);
    ck_assert_int_eq(randd_randen_seed(r, material, len), 0);
}

/* google/randen's Randen<uint64_t> from its all-zero state returns the little-endian 64-bit
 * words of the rate (state bytes 16..255) after each permutation: 30 per permutation, so the
 * 127 golden words span five. Read one word at a time (the refill path) and all at once (the
 * whole-rate path), the stream must be those words, in order. */
START_TEST(reproduces_google_randen_golden_outputs)
{
    uint64_t golden[GOLDEN_N + 1];
    uint8_t word[8], all[GOLDEN_N * 8];

    ck_assert_uint_eq(read_words(GOLDEN_FILE, golden, 1, GOLDEN_N + 1), GOLDEN_N);
    init_zero(&g);
    for (int i = 0; i < GOLDEN_N; i++) {
        ck_assert_int_eq(randd_randen_generate(&g, word, sizeof(word)), 0);
        ck_assert_msg(le64(word) == golden[i], "word-by-word output %d: expected 0x%016" PRIx64
                      ", got 0x%016" PRIx64, i, golden[i], le64(word));
    }
    init_zero(&g);
    ck_assert_int_eq(randd_randen_generate(&g, all, sizeof(all)), 0);
    for (int i = 0; i < GOLDEN_N; i++)
        ck_assert_msg(le64(all + 8 * i) == golden[i], "single-call output %d: expected 0x%016"
                      PRIx64 ", got 0x%016" PRIx64, i, golden[i], le64(all + 8 * i));
}
END_TEST

/* The embedded key table must be the pi digits of the vector file, key by key, lane by lane. */
START_TEST(round_keys_are_the_pi_digits_from_the_vector_file)
{
    static uint64_t pi[RANDD_RANDEN_KEYS + 1][2];

    ck_assert_uint_eq(read_words(PI_FILE, &pi[0][0], 2, RANDD_RANDEN_KEYS + 1),
                      RANDD_RANDEN_KEYS);
    /* 3.243F6A8885A308D3 13198A2E03707344...: the file does start with pi. */
    ck_assert_msg(pi[0][0] == 0x243F6A8885A308D3ull && pi[0][1] == 0x13198A2E03707344ull,
                  "%s does not start with the digits of pi", PI_FILE);
    for (int k = 0; k < RANDD_RANDEN_KEYS; k++)
        for (int lane = 0; lane < 2; lane++)
            ck_assert_msg(randd_randen_round_keys[k][lane] == pi[k][lane],
                          "round key %d lane %d: expected 0x%016" PRIX64 ", got 0x%016" PRIX64,
                          k, lane, pi[k][lane], randd_randen_round_keys[k][lane]);
}
END_TEST

START_TEST(seeding_changes_the_output)
{
    struct randd_randen plain;
    uint8_t a[64], b[64];

    init_zero(&plain);
    seeded(&g, "seed material", 13);
    ck_assert_int_eq(randd_randen_generate(&plain, a, sizeof(a)), 0);
    ck_assert_int_eq(randd_randen_generate(&g, b, sizeof(b)), 0);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "output after seeding equals unseeded output");
    randd_randen_wipe(&plain);
}
END_TEST

START_TEST(different_seeds_give_different_outputs)
{
    struct randd_randen other;
    uint8_t a[512], b[512];

    seeded(&g, "seed one", 8);
    seeded(&other, "seed two", 8);
    ck_assert_int_eq(randd_randen_generate(&g, a, sizeof(a)), 0);
    ck_assert_int_eq(randd_randen_generate(&other, b, sizeof(b)), 0);
    for (size_t i = 0; i + 8 <= sizeof(a); i += 8)
        ck_assert_msg(memcmp(a + i, b + i, 8) != 0, "seeds one and two agree at bytes %zu..%zu",
                      i, i + 7);
    randd_randen_wipe(&other);
}
END_TEST

/* Material longer than the rate is absorbed chunk by chunk: a change in the last byte of the
 * third chunk alone must change the output, and so must reseeding mid-buffer. */
START_TEST(every_chunk_of_long_material_reaches_the_output)
{
    struct randd_randen other;
    uint8_t material[3 * RANDD_RANDEN_RATE], a[64], b[64];

    for (size_t i = 0; i < sizeof(material); i++)
        material[i] = (uint8_t)i;
    seeded(&g, material, sizeof(material));
    material[sizeof(material) - 1] ^= 1;
    seeded(&other, material, sizeof(material));
    ck_assert_int_eq(randd_randen_generate(&g, a, sizeof(a)), 0);
    ck_assert_int_eq(randd_randen_generate(&other, b, sizeof(b)), 0);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "last chunk of the material was ignored");

    /* Same state, same partial read; then only one of the two is reseeded. */
    seeded(&g, "x", 1);
    seeded(&other, "x", 1);
    ck_assert_int_eq(randd_randen_generate(&g, a, 10), 0);
    ck_assert_int_eq(randd_randen_generate(&other, b, 10), 0);
    ck_assert_int_eq(randd_randen_seed(&other, "y", 1), 0);
    ck_assert_int_eq(randd_randen_generate(&g, a, sizeof(a)), 0);
    ck_assert_int_eq(randd_randen_generate(&other, b, sizeof(b)), 0);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "reseeding mid-buffer did not change output");
    for (size_t i = 0; i + 8 <= sizeof(b); i++)
        ck_assert_msg(memcmp(b + i, "\0\0\0\0\0\0\0\0", 8) != 0, "output after reseeding "
                      "mid-buffer holds 8 zero bytes at %zu (wiped leftovers served?)", i);
    randd_randen_wipe(&other);
}
END_TEST

/* Odd sizes crossing every path: inside one rate, to its end, whole rates, tails. */
START_TEST(output_in_odd_pieces_equals_one_call)
{
    static const size_t pieces[] = { 1, 7, 13, 219, 240, 241, 3, 480, 479, 1, 1000, 239, 2,
                                     720, 17, 0, 5 };
    static uint8_t whole[8192], parts[8192];
    struct randd_randen twin;
    size_t total = 0;

    seeded(&g, "pieces", 6);
    seeded(&twin, "pieces", 6);
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        ck_assert_int_eq(randd_randen_generate(&g, parts + total, pieces[i]), 0);
        total += pieces[i];
    }
    ck_assert_int_eq(randd_randen_generate(&twin, whole, total), 0);
    for (size_t i = 0; i < total; i++)
        ck_assert_msg(parts[i] == whole[i], "byte %zu of %zu: expected 0x%02x (one call), got "
                      "0x%02x (pieces)", i, total, whole[i], parts[i]);
    ck_assert_uint_eq(g.next, twin.next);
    ck_assert_mem_eq(g.state, twin.state, RANDD_RANDEN_STATE);
    randd_randen_wipe(&twin);
}
END_TEST

/* After every call no 16-byte window of what was handed out is anywhere in the struct, and
 * the served part of the output buffer is zero. */
START_TEST(served_bytes_are_wiped_from_the_generator)
{
    static const size_t sizes[] = { 16, 100, 124, 1, 300, 960, 17, 239 };
    uint8_t out[1024];

    seeded(&g, "wipe", 4);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        ck_assert_int_eq(randd_randen_generate(&g, out, sizes[s]), 0);
        for (size_t i = 0; i < g.next; i++)
            ck_assert_msg(g.out[i] == 0, "call %zu: served byte %zu of the buffer is 0x%02x, "
                          "expected 0", s, i, g.out[i]);
        for (size_t at = 0; at + 16 <= sizes[s]; at++)
            ck_assert_msg(!memmem(&g, sizeof(g), out + at, 16), "call %zu: output bytes "
                          "%zu..%zu are still in the generator", s, at, at + 15);
    }
}
END_TEST

START_TEST(wipe_zeroes_everything_and_output_is_refused_until_init)
{
    static const struct randd_randen zero;
    uint8_t out[32];

    seeded(&g, "w", 1);
    ck_assert_int_eq(randd_randen_generate(&g, out, sizeof(out)), 0);
    randd_randen_wipe(&g);
    ck_assert_msg(memcmp(&g, &zero, sizeof(g)) == 0, "wiped generator is not all zero");
    ck_assert_int_eq(randd_randen_generate(&g, out, sizeof(out)), -EINVAL);
    ck_assert_int_eq(randd_randen_seed(&g, "w", 1), -EINVAL);
    init_zero(&g);
    ck_assert_int_eq(randd_randen_generate(&g, out, sizeof(out)), 0);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
    uint8_t out[8];

    init_zero(&g);
    ck_assert_int_eq(randd_randen_seed(&g, "x", 0), -EINVAL);
    ck_assert_int_eq(randd_randen_seed(&g, NULL, 1), -EINVAL);
    ck_assert_int_eq(randd_randen_generate(&g, NULL, 1), -EINVAL);
    ck_assert_int_eq(randd_randen_generate(&g, NULL, 0), 0);
    ck_assert_int_eq(randd_randen_init(NULL), -EINVAL);
    ck_assert_int_eq(randd_randen_generate(NULL, out, sizeof(out)), -EINVAL);
}
END_TEST

/* Without an AES round (a CPU that lacks it, or one hidden for the test: every machine runs
 * this) the engine says so instead of running, and generates nothing. */
START_TEST(init_reports_enotsup_without_an_aes_round)
{
    uint8_t out[8];

    randd_randen_hide_cpu_aes(true);
    ck_assert_msg(!randd_randen_available(), "available with the CPU's AES hidden");
    ck_assert_int_eq(randd_randen_init(&g), -ENOTSUP);
    ck_assert_int_eq(randd_randen_generate(&g, out, sizeof(out)), -EINVAL);
    randd_randen_hide_cpu_aes(false);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("randen");
    TCase *tc = tcase_create("generator");

    tcase_add_checked_fixture(tc, NULL, teardown);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, init_reports_enotsup_without_an_aes_round);
    if (!randd_randen_available()) {
        printf("test_randen: SKIPPED the Randen tests: this CPU has no AES round instructions "
               "(AES-NI, ARMv8 AES)\n");
        return s;
    }
    tcase_add_test(tc, reproduces_google_randen_golden_outputs);
    tcase_add_test(tc, round_keys_are_the_pi_digits_from_the_vector_file);
    tcase_add_test(tc, seeding_changes_the_output);
    tcase_add_test(tc, different_seeds_give_different_outputs);
    tcase_add_test(tc, every_chunk_of_long_material_reaches_the_output);
    tcase_add_test(tc, output_in_odd_pieces_equals_one_call);
    tcase_add_test(tc, served_bytes_are_wiped_from_the_generator);
    tcase_add_test(tc, wipe_zeroes_everything_and_output_is_refused_until_init);
    tcase_add_test(tc, bad_arguments_are_refused);
    return s;
}
