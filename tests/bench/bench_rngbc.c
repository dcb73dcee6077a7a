/* bench-rngbc: reproduces the table of the optimized simple discard paper (release
 * candidate 2, 2020-03-23): random bits consumed and time per sample for RNG-BC-8, RNG-BC-1,
 * simple discard and the simple modular method over one Cymric generator, and OpenSSL's
 * BN_rand_range as the baseline. Ranges and figures: tests/vectors/rngbc-paper-table.txt.
 * Exits non-zero when a bits figure is off the paper by more than 0.5% or RNG-BC-8 is not
 * faster than BN_rand_range. Usage: bench-rngbc [--samples N]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>

#include "cymric.h"
#include "rngbc.h"

#define MAX_BYTES 512

struct paper_range {
    const char *name;
    const char *hex;
    double sd, mod, bc1, bc8;      /* the paper's bits per sample */
};

static const struct paper_range ranges[] = {
    { "Minimum 256 bit", "80000000000000000000000000000000000000000000000000000000000000"
      "00", 511.960064, 384.0, 258.999684, 264.065944 },
    { "Minimum 256 bit + 1", "800000000000000000000000000000000000000000000000000000000000"
      "0001", 512.193792, 384.0, 258.995740, 264.043960 },
    { "Mid 256 bit - 1", "BFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
      "FF", 341.273088, 384.0, 256.662856, 258.667016 },
    { "Mid 256", "C000000000000000000000000000000000000000000000000000000000000000",
      341.479424, 384.0, 257.330163, 258.712184 },
    { "Mid 256 + 1", "C000000000000000000000000000000000000000000000000000000000000001",
      341.316096, 384.0, 257.335282, 258.712392 },
    { "Max 256 - 1", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
      256.0, 384.0, 256.0, 256.0 },
    { "Brainpool P512r1 Q", "AADD9DB8DBE9C48B3FD4E6AE33C9FC07CB308DB3B3C9D20ED6639CCA70330870"
      "553E5C414CA92619418661197FAC10471DB1D381085DDADDB58796829CA90069",
      767.051264, 640.0, 513.315474, 515.997576 },
    { "Random modulus 4096",
      "99A9312FD775C94D804827B6011C9FCC8180AD142ADEC24C772C24709DB89EB6FF4A7C8C876837920F8C49CF"
      "23FF8C9DA0D8E7FBB722E0D3E6671D39DEBD95079D56C57C0D9DB9D2CAD074BC57E22F8811BA163ECB3342F2"
      "4CE97DF551BD3D9353796EFA7F5F9C9ED5EF98A7A0FF30D1E805FAA8EA8747A6AE3734CFD8046E56278D36AD"
      "2666C612270298FA87356DEDFFF13EAC082AB7D406510D367C6CA034DDB92C297B65A233B74BAAE3CA2165E3"
      "FE699DBCBE82B48831C52222F10FDBD29ACA5608616F09AD6FDD2BFE90ECB135F4976E93660714B2FCC0CD0A"
      "713723FF835229628480444E0DC75D3FD44AEE9465AC719C0A605E4F5917A91E09C0EBE23B08E467766D6329"
      "BB83443A17EAB39A310AAB8B59628F90F4B40B50F2AF6FF49C3307441FEAB0F0978177798123207B21AE8FD7"
      "A6CC5D307155843161EE4C54E3685BA402F5A2F155A52C4521B76ECA6E2B9D5362341E37B8CB4DCBF7BC9CAA"
      "FFBD31A62CE3240F5161F43598D0F8AE5FE418F4784F8DDD444BD314E73F8C870895BDE24388BB905E42AE80"
      "DE34885C6D64EDBAB2E852053B737BF85471D5DFED98BA878E806DE82AA762791DACEF47895D66378B6F9425"
      "6A0D3E7E77026AAB58540246EB9952C8C54777FAA879026498C169835DF5866FE867734D21E9E921D6A6FCF6"
      "4260D8B98F195D0585D445D611607008F7D15407FCC32C1A55F1F9A5",
      6824.448, 4224.0, 4097.730171, 4101.351224 },
};
#define NRANGES (sizeof(ranges) / sizeof(ranges[0]))

/* --- what every method shares --------------------------------------------------------- */

struct bench {
    struct randd_cymric gen;
    struct randd_byte_source src;
    struct randd_rngbc_range range;      /* r, its top byte and mask, as RNG-BC-8 sees it */
    unsigned bits;                       /* bit length of r */
    BIGNUM *r_bn, *x_bn;
    BN_CTX *ctx;
    uint64_t bits_used;
    uint8_t r[MAX_BYTES];
    uint8_t scratch[MAX_BYTES + 32];
};

static int generator_fill(void *g, void *buf, size_t n)
{
    return randd_cymric_read(g, buf, n);
}

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "bench-rngbc: %s failed\n", what);
        exit(2);
    }
}

static void draw(struct bench *b, uint8_t *buf, size_t n)
{
    must(b->src.fill(b->src.ctx, buf, n) == 0, "generator");
}

/* --- the methods: each writes one value below r into out (b->range.len bytes) ---------- */

static void method_bc8(struct bench *b, uint8_t *out)
{
    uint64_t bytes = 0;

    must(randd_rngbc8(&b->range, out, &b->src, &bytes) == 0, "randd_rngbc8");
    b->bits_used += 8 * bytes;
}

/* RNG-BC-1 compares bit by bit. Bits come from a 64-bit reservoir so that a redraw of the
 * top k bits consumes exactly k bits, as in the paper's accounting. */
static uint64_t reservoir;
static unsigned reservoir_bits;

static unsigned next_bit(struct bench *b)
{
    unsigned bit;

    if (reservoir_bits == 0) {
        draw(b, (uint8_t *)&reservoir, sizeof(reservoir));
        reservoir_bits = 64;
    }
    bit = reservoir & 1;
    reservoir >>= 1;
    reservoir_bits--;
    return bit;
}

/* Bit i counted from the top of an m-bit number stored big-endian in len bytes. */
static unsigned bit_at(const uint8_t *v, size_t len, unsigned m, unsigned i)
{
    unsigned from_bottom = m - 1 - i;

    return v[len - 1 - from_bottom / 8] >> (from_bottom % 8) & 1;
}

static void set_bit(uint8_t *v, size_t len, unsigned m, unsigned i, unsigned bit)
{
    unsigned from_bottom = m - 1 - i;
    uint8_t *byte = &v[len - 1 - from_bottom / 8], mask = (uint8_t)(1u << (from_bottom % 8));

    *byte = bit ? *byte | mask : *byte & (uint8_t)~mask;
}

static void method_bc1(struct bench *b, uint8_t *out)
{
    size_t len = b->range.len, top = b->range.top;
    unsigned m = b->bits;

    memset(out, 0, top);
    draw(b, out + top, len - top);          /* m fresh bits: the masked top bits are unused */
    out[top] &= b->range.top_mask;
    b->bits_used += m;
    for (;;) {
        unsigned i = 0, c = 0, rb = 0;

        for (; i < m; i++) {
            c = bit_at(out, len, m, i);
            rb = bit_at(b->r, len, m, i);
            if (c != rb)
                break;
        }
        if (i < m && c < rb)
            return;
        if (i == m)
            i = m - 1;                      /* equal to r: redraw everything */
        for (unsigned j = 0; j <= i; j++)
            set_bit(out, len, m, j, next_bit(b));
        b->bits_used += i + 1;
    }
}

static void method_discard(struct bench *b, uint8_t *out)
{
    size_t len = b->range.len, top = b->range.top;

    memset(out, 0, top);
    do {
        draw(b, out + top, len - top);
        out[top] &= b->range.top_mask;
        b->bits_used += 8 * (len - top);
    } while (memcmp(out, b->r, len) >= 0);
}

/* m + 128 random bits reduced mod r: bias below 2^-128. */
static void method_modular(struct bench *b, uint8_t *out)
{
    size_t n = (b->bits + 128 + 7) / 8;

    draw(b, b->scratch, n);
    b->bits_used += 8 * n;
    must(BN_bin2bn(b->scratch, (int)n, b->x_bn) && BN_mod(b->x_bn, b->x_bn, b->r_bn, b->ctx) &&
         BN_bn2binpad(b->x_bn, out, (int)b->range.len) >= 0, "BN_mod");
}

static void method_bn_rand_range(struct bench *b, uint8_t *out)
{
    must(BN_rand_range(b->x_bn, b->r_bn) && BN_bn2binpad(b->x_bn, out, (int)b->range.len) >= 0,
         "BN_rand_range");
}

struct method {
    const char *name;
    void (*sample)(struct bench *b, uint8_t *out);
    size_t paper_offset;             /* of its figure in struct paper_range; 0: none */
};

static const struct method methods[] = {
    { "RNG-BC-8", method_bc8, offsetof(struct paper_range, bc8) },
    { "RNG-BC-1", method_bc1, offsetof(struct paper_range, bc1) },
    { "simple discard", method_discard, offsetof(struct paper_range, sd) },
    { "simple modular", method_modular, offsetof(struct paper_range, mod) },
    { "BN_rand_range", method_bn_rand_range, 0 },
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

/* --- running and reporting ------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void prepare_range(struct bench *b, const struct paper_range *pr)
{
    size_t len = strlen(pr->hex) / 2;

    for (size_t i = 0; i < len; i++)
        must(sscanf(pr->hex + 2 * i, "%2hhx", &b->r[i]) == 1, "range hex");
    must(randd_rngbc_prepare(&b->range, b->r, len) == 0, "randd_rngbc_prepare");
    must(BN_bin2bn(b->r, (int)len, b->r_bn) != NULL, "BN_bin2bn");
    b->bits = (unsigned)BN_num_bits(b->r_bn);
}

/* Runs one method over n samples; returns ns per sample and sets *bits per sample. */
static double run(struct bench *b, const struct method *m, long n, double *bits)
{
    uint8_t out[MAX_BYTES];
    double start;

    b->bits_used = 0;
    start = now_s();
    for (long i = 0; i < n; i++) {
        m->sample(b, out);
        if (memcmp(out, b->r, b->range.len) >= 0) {
            fprintf(stderr, "bench-rngbc: %s gave a value not below r\n", m->name);
            exit(2);
        }
    }
    *bits = (double)b->bits_used / (double)n;
    OPENSSL_cleanse(out, sizeof(out));
    return (now_s() - start) * 1e9 / (double)n;
}

/* The generator's own cost: one generate call rekeys, so this is the per-request floor. */
static void report_generator(struct bench *b, long n)
{
    uint8_t out[32];
    double start = now_s();

    for (long i = 0; i < n; i++)
        must(randd_cymric_generate(&b->gen, out, sizeof(out), NULL, 0) == 0, "generate");
    printf("Cymric generate, 32 bytes (ChaCha20 + BLAKE2b rekey): %.1f ns/call\n",
           (now_s() - start) * 1e9 / (double)n);
    start = now_s();
    for (long i = 0; i < n; i++)
        must(randd_cymric_read(&b->gen, out, sizeof(out)) == 0, "read");
    printf("Cymric read, 32 bytes (batched):                      %.1f ns/call\n\n",
           (now_s() - start) * 1e9 / (double)n);
    OPENSSL_cleanse(out, sizeof(out));
}

int main(int argc, char **argv)
{
    static struct bench b;
    long samples = 1000000;
    int failures = 0;
    uint8_t seed[64];

    if (argc == 3 && !strcmp(argv[1], "--samples"))
        samples = atol(argv[2]);
    else if (argc != 1) {
        fprintf(stderr, "usage: bench-rngbc [--samples N]\n");
        return 2;
    }
    must(samples > 0, "--samples");
    must(randd_cymric_init(&b.gen, 0) == 0, "randd_cymric_init");
    must(getrandom(seed, sizeof(seed), 0) == sizeof(seed), "getrandom");
    must(randd_cymric_seed(&b.gen, seed, sizeof(seed)) == 0, "randd_cymric_seed");
    OPENSSL_cleanse(seed, sizeof(seed));
    b.src = (struct randd_byte_source){ generator_fill, &b.gen };
    b.r_bn = BN_new();
    b.x_bn = BN_new();
    b.ctx = BN_CTX_new();
    must(b.r_bn && b.x_bn && b.ctx, "BN_new");

    prepare_range(&b, &ranges[0]);        /* warm caches and the generator's first batch */
    for (size_t j = 0; j < NMETHODS; j++) {
        double bits;

        run(&b, &methods[j], samples / 100 + 1, &bits);
    }
    report_generator(&b, samples);
    printf("bench-rngbc: %ld samples per method and range; bits = random bits consumed\n\n",
           samples);
    printf("%-20s %-15s %10s %10s %7s %10s\n", "range", "method", "bits", "paper", "diff%",
           "ns/sample");
    for (size_t i = 0; i < NRANGES; i++) {
        double bc8_ns = 0, baseline_ns = 0;

        prepare_range(&b, &ranges[i]);
        for (size_t j = 0; j < NMETHODS; j++) {
            const struct method *m = &methods[j];
            double bits, ns = run(&b, m, samples, &bits);

            if (m->paper_offset) {
                double paper = *(const double *)((const char *)&ranges[i] + m->paper_offset);
                double diff = 100.0 * (bits - paper) / paper;
                bool off = fabs(diff) > 0.5 && samples >= 100000;

                printf("%-20s %-15s %10.2f %10.2f %+7.3f %10.1f%s\n", ranges[i].name, m->name,
                       bits, paper, diff, ns, off ? "  <- off the paper" : "");
                failures += off;
            } else {
                printf("%-20s %-15s %10s %10s %7s %10.1f\n", ranges[i].name, m->name, "n/a",
                       "", "", ns);
            }
            if (m->sample == method_bc8)
                bc8_ns = ns;
            if (m->sample == method_bn_rand_range)
                baseline_ns = ns;
        }
        printf("%-20s RNG-BC-8 takes %.2fx the time of BN_rand_range%s\n\n", "", bc8_ns / baseline_ns,
               bc8_ns < baseline_ns ? "" : "  <- not faster");
        failures += bc8_ns >= baseline_ns;
    }
    BN_free(b.r_bn);
    BN_free(b.x_bn);
    BN_CTX_free(b.ctx);
    randd_cymric_fini(&b.gen);
    printf("bench-rngbc: %s\n", failures ? "FAILED" : "every figure within 0.5% of the paper, "
                                                     "RNG-BC-8 faster than BN_rand_range");
    return failures ? 1 : 0;
}
