/* The bzip2 length count (internal/bzip2_length.c) against libbz2 itself: on every input
 * here, BZ2_bzBuffToBuffCompress's byte count and the count must be equal. The inputs are
 * the statistic's decimal text of 1-, 4- and 8-bit samples, runs for bzip2's run-length step,
 * inputs that end at and around the block-size limit, tiny, periodic and all-equal inputs,
 * text the word sort must refuse, and shuffles of every reference file; then the IID track
 * gives the same counts with the count as with libbz2. Run from the repository root. */
#include <bzlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bzip2_length.h"
#include "entropy_iid.h"
#include "runner.h"

#define VECTORS "tests/vectors/sp800-90b/"

static struct randd_bzlen *counter[10];     /* by level */
static unsigned compared;

/* xorshift64: the inputs are the same on every run */
static uint64_t state = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static unsigned below(unsigned bound)
{
    return (unsigned)(next() % bound);
}

/* Each test runs in a process of its own: what it compared. */
static void report(const char *what)
{
    printf("test_bzip2_length: %s: %u inputs, each counted as libbz2 wrote it\n", what,
           compared);
}

static void agree(const uint8_t *in, size_t n, int level, const char *what)
{
    unsigned len = (unsigned)(n + n / 50 + 1000);
    char *out = malloc(len);
    uint64_t counted;
    int rc;

    ck_assert_ptr_nonnull(out);
    rc = BZ2_bzBuffToBuffCompress(out, &len, (char *)(uintptr_t)in, (unsigned)n, level, 0, 0);
    ck_assert_msg(rc == BZ_OK, "%s: libbz2 failed (%d)", what, rc);
    free(out);
    if (!counter[level])
        ck_assert_ptr_nonnull(counter[level] = randd_bzlen_new(level));
    counted = randd_bzlen_count(counter[level], in, n);
    ck_assert_msg(counted == len, "%s (%zu bytes, level %d): libbz2 wrote %u bytes, the count "
                  "says %llu", what, n, level, len, (unsigned long long)counted);
    compared++;
}

/* Values in decimal, separated by single spaces, as the compression statistic writes them.
 * Returns the text's length; text holds 4 * n bytes. */
static size_t decimal(char *text, const uint8_t *v, size_t n)
{
    char *t = text;

    for (size_t i = 0; i < n; i++)
        t += sprintf(t, "%u ", v[i]);
    return (size_t)(t - text) - (n > 0);
}

static void random_samples(uint8_t *v, size_t n, unsigned bits)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (uint8_t)(next() & ((1u << bits) - 1));
}

static void agree_on_samples(const uint8_t *v, size_t n, int level, const char *what)
{
    char *text = malloc(4 * n + 1);

    ck_assert_ptr_nonnull(text);
    agree((const uint8_t *)text, decimal(text, v, n), level, what);
    free(text);
}

START_TEST(decimal_text_of_random_samples_counts_as_libbz2)
{
    static const unsigned widths[] = { 1, 4, 8 };
    uint8_t *v = malloc(300000);

    ck_assert_ptr_nonnull(v);
    for (unsigned w = 0; w < 3; w++) {
        char what[64];

        for (unsigned i = 0; i < 540; i++) {    /* many short texts, one or two blocks */
            size_t n = 1 + below(i < 500 ? 2000 : 60000);

            random_samples(v, n, widths[w]);
            snprintf(what, sizeof(what), "%u-bit samples, %zu of them", widths[w], n);
            agree_on_samples(v, n, 1 + (int)below(3), what);
        }
        random_samples(v, 300000, widths[w]);  /* several blocks at ea_iid's level */
        snprintf(what, sizeof(what), "300000 %u-bit samples", widths[w]);
        agree_on_samples(v, 300000, 5, what);
    }
    free(v);
    report("decimal text");
}
END_TEST

/* Runs of 4 to 300 equal bytes, which bzip2's first step shortens, in bytes and in text. */
START_TEST(runs_of_equal_bytes_count_as_libbz2)
{
    uint8_t *in = malloc(400000);

    ck_assert_ptr_nonnull(in);
    for (unsigned i = 0; i < 400; i++) {
        size_t n = 1 + below(i < 390 ? 5000 : 200000), at = 0;
        unsigned alphabet = 1 + below(i % 2 ? 4 : 256);

        while (at < n) {
            size_t run = below(4) ? 1 + below(3) : 4 + below(297);
            uint8_t c = (uint8_t)(i % 3 ? below(alphabet)
                                        : (unsigned char)" 0123456789"[below(11)]);

            for (size_t j = 0; j < run && at < n; j++)
                in[at++] = c;
        }
        agree(in, n, 1 + (int)below(5), "runs of equal bytes");
    }
    free(in);
    report("runs");
}
END_TEST

/* A block holds 100000 * level - 19 bytes after the run-length step, a little more when a
 * run is flushed into it, and the run being read carries over: inputs that end at, just
 * before and just after the limit, with and without runs across it. */
START_TEST(inputs_at_the_block_limit_count_as_libbz2)
{
    const size_t limit = 100000 - 19;       /* level 1 */
    static const char *const across[] = { "11", "111", "1111", " 1", "1 ", "0000000" };
    size_t cap = 2 * limit + 400;
    uint8_t *v = malloc(cap), *text = malloc(4 * cap), *in = malloc(cap);

    ck_assert(v && text && in);
    random_samples(v, cap, 8);
    decimal((char *)text, v, cap);
    for (int d = -3; d <= 8; d++) {
        agree(text, limit + (size_t)d, 1, "decimal text ending near the limit");
        agree(text, 2 * limit + (size_t)d, 1, "decimal text ending near twice the limit");
    }
    for (unsigned a = 0; a < sizeof(across) / sizeof(*across); a++)
        for (int d = -4; d <= 2; d++) {
            size_t len = strlen(across[a]);

            memcpy(in, text, cap);
            memcpy(in + limit + d, across[a], len);
            agree(in, limit + 40, 1, across[a]);
            agree(in, limit + (size_t)d + len, 1, across[a]);
        }
    for (size_t i = 0; i < cap; i++)
        in[i] = (uint8_t)below(256);
    for (size_t run = 4; run <= 300; run += run < 8 ? 1 : 62)      /* runs shorten the block */
        for (int d = -6; d <= 6; d += 6) {
            memcpy(v, in, cap);
            memset(v + limit - run / 2 + d, 'x', run);
            agree(v, limit + run + 30, 1, "a run across the limit");
            agree(v, limit + (size_t)d + run / 2, 1, "a run at the end");
        }
    free(v);
    free(text);
    free(in);
    report("the block limit");
}
END_TEST

START_TEST(tiny_inputs_count_as_libbz2)
{
    static const char *const fixed[] = { "", " ", "  ", "a", "0", "0 ", " 0", "0 0", "255",
                                         "1 1 1 1", "\xff", "\0\0\0\0\0" };
    uint8_t in[80];

    for (unsigned i = 0; i < sizeof(fixed) / sizeof(*fixed); i++)
        agree((const uint8_t *)fixed[i], i == 11 ? 5 : strlen(fixed[i]), 5, "a fixed input");
    for (size_t n = 0; n <= 64; n++)
        for (unsigned k = 0; k < 8; k++) {
            for (size_t i = 0; i < n; i++)
                in[i] = (uint8_t)(k < 4 ? below(256) : (unsigned char)" 0123456789"[below(11)]);
            agree(in, n, 1 + (int)(k % 9), "a tiny input");
        }
    report("tiny inputs");
}
END_TEST

/* Rotations that are equal: the sort leaves them in one group, and their order is free. */
START_TEST(periodic_and_all_equal_inputs_count_as_libbz2)
{
    static const char *const units[] = { "0 ", "1 0 ", "12 ", "255 0 ", "a", "ab", " ",
                                         "0 1 2 3 4 5 6 7 8 9 " };
    static const size_t lengths[] = { 1, 2, 3, 7, 100, 4099, 99981, 99982, 250000 };
    uint8_t *in = malloc(250000), unit[24];

    ck_assert_ptr_nonnull(in);
    for (unsigned u = 0; u < sizeof(units) / sizeof(*units); u++)
        for (unsigned l = 0; l < sizeof(lengths) / sizeof(*lengths); l++) {
            size_t len = strlen(units[u]);

            for (size_t i = 0; i < lengths[l]; i++)
                in[i] = (uint8_t)units[u][i % len];
            agree(in, lengths[l], 1, units[u]);
        }
    for (size_t period = 1; period <= 20; period++) {
        for (size_t i = 0; i < period; i++)
            unit[i] = (uint8_t)(period % 2 ? below(256)
                                           : (unsigned char)"0123456789 "[below(11)]);
        for (size_t i = 0; i < 150000; i++)
            in[i] = unit[i % period];
        agree(in, 150000, 1, "a random period");
    }
    free(in);
    report("periodic inputs");
}
END_TEST

/* Text the word sort cannot take (words over 8 bytes, more than 4096 kinds, more than 16
 * bytes in use) is sorted byte by byte or moved to front the long way. */
START_TEST(other_text_counts_as_libbz2)
{
    uint8_t *in = malloc(200000);

    ck_assert_ptr_nonnull(in);
    for (unsigned k = 0; k < 40; k++) {
        size_t n = 1000 + below(199000), at = 0;
        unsigned longest = 1 + below(k < 20 ? 7 : 14), letters = 2 + below(30);

        while (at < n) {
            size_t len = 1 + below(longest);

            for (size_t j = 0; j < len && at < n; j++)
                in[at++] = (uint8_t)('a' + below(letters));
            if (at < n)
                in[at++] = ' ';
        }
        agree(in, n, 1 + (int)below(2), "words of letters");
    }
    for (unsigned k = 0; k < 10; k++) {     /* random bytes: all 256 in use */
        size_t n = 1 + below(200000);

        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)below(256);
        agree(in, n, 2, "random bytes");
    }
    free(in);
    report("other text");
}
END_TEST

/* The edges where bzip2 changes what it does, each met exactly: runs of 3, 4, 254 to 256,
 * 259 and 510 bytes that end the input; 16 and 17 bytes in use (the move-to-front list in
 * one word or not); words of 8 and 9 bytes and 4096 and 4097 kinds of word (the word sort
 * or the byte sort); symbol counts across 200, 600, 1200 and 2400, where bzip2 takes
 * another number of tables; and every level's block limit. */
START_TEST(bzip2s_edges_count_as_libbz2)
{
    static const size_t runs[] = { 3, 4, 5, 254, 255, 256, 259, 260, 510, 511 };
    size_t cap = 900000 + 4096;
    uint8_t *in = malloc(cap);
    char word[16];

    ck_assert_ptr_nonnull(in);
    for (unsigned r = 0; r < sizeof(runs) / sizeof(*runs); r++)
        for (size_t before = 0; before <= 3; before++) {
            for (size_t i = 0; i < before; i++)
                in[i] = (uint8_t)('a' + i);
            memset(in + before, 'z', runs[r]);
            agree(in, before + runs[r], 1 + (int)(r % 9), "a run that ends the input");
        }
    for (unsigned used = 15; used <= 18; used++) {
        for (size_t i = 0; i < 5000; i++)
            in[i] = (uint8_t)(40 + below(used));
        for (unsigned c = 0; c < used; c++)     /* every one of them in use */
            in[c] = (uint8_t)(40 + c);
        agree(in, 5000, 1, "15 to 18 bytes in use");
    }
    for (unsigned len = 7; len <= 10; len++) {  /* words of up to len bytes, space included */
        size_t at = 0;

        while (at + len < 20000) {
            size_t l = len - 1 - (below(3) ? 0 : below(len - 1));

            for (size_t j = 0; j < l; j++)
                in[at++] = (uint8_t)('0' + below(10));
            in[at++] = ' ';
        }
        agree(in, at, 1, "words of up to 7 to 10 bytes");
    }
    for (unsigned kinds = 4094; kinds <= 4098; kinds++) {  /* each kind once, then random */
        size_t at = 0;

        for (unsigned k = 0; k < kinds + 3000; k++)
            at += (size_t)sprintf((char *)in + at, "%u ", k < kinds ? k : below(kinds));
        agree(in, at, 1, "4094 to 4098 kinds of word");
    }
    for (size_t n = 150; n <= 2450; n++) {      /* about n + 1 symbols: no byte repeats soon */
        static const size_t edges[] = { 200, 600, 1200, 2400 };
        bool near = false;

        for (unsigned e = 0; e < 4; e++)
            near |= n + 12 >= edges[e] && n <= edges[e] + 12;
        if (!near)
            continue;
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)below(256);
        agree(in, n, 1, "symbol counts across a change of table count");
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)('0' + below(10));
        agree(in, n, 1, "digits, symbol counts across a change of table count");
    }
    for (int level = 1; level <= 9; level++) {
        size_t limit = 100000 * (size_t)level - 19;

        for (size_t i = 0; i < limit + 300; i++)
            in[i] = (uint8_t)below(256);
        agree(in, limit, level, "a block of exactly the limit");
        memset(in + limit - 2, 'q', 260);
        agree(in, limit + 258, level, "a run of 260 across the limit");
        snprintf(word, sizeof(word), "level %d", level);
        agree(in, limit + 300, level, word);
    }
    free(in);
    report("bzip2's edges");
}
END_TEST

static uint8_t *read_vector(const char *name, size_t *n)
{
    char path[256];
    FILE *f;
    uint8_t *v = malloc(1 << 21);

    snprintf(path, sizeof(path), VECTORS "%s", name);
    ck_assert_msg((f = fopen(path, "rb")) != NULL, "%s: cannot open", path);
    ck_assert_ptr_nonnull(v);
    *n = fread(v, 1, 1 << 21, f);
    fclose(f);
    return v;
}

static void shuffle(uint8_t *v, size_t n)
{
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(next() % (i + 1));
        uint8_t t = v[i];

        v[i] = v[j];
        v[j] = t;
    }
}

START_TEST(shuffles_of_every_reference_file_count_as_libbz2)
{
    static const char *const files[] = { "rand1_short.bin", "rand4_short.bin",
                                         "rand8_short.bin", "ringOsc-nist.bin" };

    for (unsigned f = 0; f < 4; f++) {
        size_t n;
        uint8_t *v = read_vector(files[f], &n);

        agree_on_samples(v, n, 5, files[f]);
        for (unsigned k = 0; k < (f < 3 ? 20u : 1u); k++) {
            shuffle(v, n);
            agree_on_samples(v, n, 5, files[f]);
        }
        free(v);
    }
    report("shuffles of the reference files");
}
END_TEST

/* The IID track with the count and with libbz2 on every shuffle: the same counts. */
START_TEST(the_iid_track_counts_alike_by_count_or_by_libbz2)
{
    static const uint8_t seed[RANDD_IID_SEED_BYTES] = { 29 };
    struct randd_iid_options o = { 0, seed, 2 };
    struct randd_iid_result counted, compressed;
    size_t n;
    uint8_t *v = read_vector("rand8_short.bin", &n);

    ck_assert_int_eq(randd_iid_assess_with(v, n, 0, &o, &counted, NULL, NULL), 0);
    o.flags = RANDD_IID_LIBBZ2;
    ck_assert_int_eq(randd_iid_assess_with(v, n, 0, &o, &compressed, NULL, NULL), 0);
    ck_assert_msg(counted.compression_counted,
                  "the count disagreed with libbz2 on the data or on shuffle 0");
    ck_assert(!compressed.compression_counted);
    ck_assert_uint_eq(counted.shuffles, compressed.shuffles);
    ck_assert_msg(memcmp(counted.counts, compressed.counts, sizeof(counted.counts)) == 0,
                  "the counts differ: compression %u %u %u counted, %u %u %u by libbz2",
                  counted.counts[18][0], counted.counts[18][1], counted.counts[18][2],
                  compressed.counts[18][0], compressed.counts[18][1],
                  compressed.counts[18][2]);
    ck_assert(counted.statistics[18] == compressed.statistics[18]);
    free(v);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("bzip2_length");
    TCase *tc = tcase_create("bzip2_length");

    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tcase_add_test(tc, decimal_text_of_random_samples_counts_as_libbz2);
    tcase_add_test(tc, runs_of_equal_bytes_count_as_libbz2);
    tcase_add_test(tc, inputs_at_the_block_limit_count_as_libbz2);
    tcase_add_test(tc, tiny_inputs_count_as_libbz2);
    tcase_add_test(tc, periodic_and_all_equal_inputs_count_as_libbz2);
    tcase_add_test(tc, other_text_counts_as_libbz2);
    tcase_add_test(tc, bzip2s_edges_count_as_libbz2);
    tcase_add_test(tc, shuffles_of_every_reference_file_count_as_libbz2);
    tcase_add_test(tc, the_iid_track_counts_alike_by_count_or_by_libbz2);
    return s;
}
