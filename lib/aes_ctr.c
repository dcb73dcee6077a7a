/* AES-256-CTR keystream straight on the CPU's AES instructions (x86-64 AES-NI, and VAES where
 * the CPU has it), for the generators' hot path. Through EVP every generate paid two cipher
 * inits (the key, then a zero key to forget it), each mostly OpenSSL's parameter plumbing:
 * about 3,100 of a 4 KiB request's 24,000 instructions (callgrind). Here the key schedule
 * lives in this call's frame and is wiped before it returns, so nothing is set up or torn
 * down per request. Eight registers of blocks are in flight at once, as AESENC's latency
 * asks: eight blocks on AES-NI, sixteen on VAES.
 * Only where randd_crypto_has_hardware_aes() says yes: never table AES. */
#include "aes_ctr.h"

#include <string.h>

#include <openssl/crypto.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#define AES256_ROUNDS 14
#define LANES 8

struct aes256_schedule {
    __m128i rk[AES256_ROUNDS + 1];
};

/* One step of the key expansion (FIPS 197 5.2, four words at once): prev ^ (prev << 32) ^ (prev << 64) ^ (prev << 96) ^ mixed,
 * mixed being one word of AESKEYGENASSIST's output broadcast. */
__attribute__((target("aes,sse4.1"))) static inline __m128i expand_step(__m128i prev,
                                                                         __m128i mixed)
{
    prev = _mm_xor_si128(prev, _mm_slli_si128(prev, 4));
    prev = _mm_xor_si128(prev, _mm_slli_si128(prev, 4));
    prev = _mm_xor_si128(prev, _mm_slli_si128(prev, 4));
    return _mm_xor_si128(prev, mixed);
}

/* AESKEYGENASSIST wants its round constant as an immediate, hence the macro. Even round keys
 * take RotWord(SubWord()) with the constant (word 3), odd ones SubWord() alone (word 2). */
#define EXPAND_PAIR(s, i, rcon)                                                               \
    do {                                                                                      \
        (s)->rk[i] = expand_step((s)->rk[(i) - 2],                                            \
            _mm_shuffle_epi32(_mm_aeskeygenassist_si128((s)->rk[(i) - 1], rcon), 0xff));      \
        (s)->rk[(i) + 1] = expand_step((s)->rk[(i) - 1],                                      \
            _mm_shuffle_epi32(_mm_aeskeygenassist_si128((s)->rk[i], 0), 0xaa));               \
    } while (0)

__attribute__((target("aes,sse4.1"))) static void expand_key(struct aes256_schedule *s,
                                                              const uint8_t key[32])
{
    s->rk[0] = _mm_loadu_si128((const __m128i *)key);
    s->rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
    EXPAND_PAIR(s, 2, 0x01);
    EXPAND_PAIR(s, 4, 0x02);
    EXPAND_PAIR(s, 6, 0x04);
    EXPAND_PAIR(s, 8, 0x08);
    EXPAND_PAIR(s, 10, 0x10);
    EXPAND_PAIR(s, 12, 0x20);
    s->rk[14] = expand_step(s->rk[12],
                            _mm_shuffle_epi32(_mm_aeskeygenassist_si128(s->rk[13], 0x40), 0xff));
}

/* The 128-bit big-endian counter block, kept as two host words. */
struct counter {
    uint64_t hi, lo;
};

__attribute__((target("aes,sse4.1"))) static inline __m128i counter_block(struct counter *c)
{
    __m128i b = _mm_set_epi64x((long long)__builtin_bswap64(c->lo),
                               (long long)__builtin_bswap64(c->hi));

    if (++c->lo == 0)
        c->hi++;
    return b;
}

/* blocks whole 16-byte blocks of keystream into out. The loops are unrolled by
 * pragma so the eight lanes stay in registers (GCC's -O2 keeps them in a stack array and
 * spends four times the instructions). */
__attribute__((target("aes,sse4.1"))) static void ctr_blocks(const struct aes256_schedule *s,
                                                              struct counter *c, uint8_t *out,
                                                              size_t blocks)
{
    /* The counter as one little-endian 128-bit lane: a byte shuffle makes each block, an add
     * steps it, so no block goes through the integer registers. The low half's carry into
     * the high half takes the block-at-a-time path below, in the one batch it falls in. */
    const __m128i to_big_endian = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                               14, 15);
    const __m128i one = _mm_set_epi64x(0, 1);

    for (; blocks >= LANES && c->lo <= UINT64_MAX - LANES; blocks -= LANES, out += LANES * 16) {
        __m128i ctr = _mm_set_epi64x((long long)c->hi, (long long)c->lo), b[LANES];

#pragma GCC unroll 8
        for (int j = 0; j < LANES; j++) {
            b[j] = _mm_xor_si128(_mm_shuffle_epi8(ctr, to_big_endian), s->rk[0]);
            ctr = _mm_add_epi64(ctr, one);
        }
        c->lo += LANES;
#pragma GCC unroll 13
        for (int r = 1; r < AES256_ROUNDS; r++) {
            __m128i k = s->rk[r];

#pragma GCC unroll 8
            for (int j = 0; j < LANES; j++)
                b[j] = _mm_aesenc_si128(b[j], k);
        }
#pragma GCC unroll 8
        for (int j = 0; j < LANES; j++)
            _mm_storeu_si128((__m128i *)(out + 16 * j),
                             _mm_aesenclast_si128(b[j], s->rk[AES256_ROUNDS]));
    }
    for (; blocks > 0; blocks--, out += 16) {
        __m128i b = _mm_xor_si128(counter_block(c), s->rk[0]);

#pragma GCC unroll 13
        for (int r = 1; r < AES256_ROUNDS; r++)
            b = _mm_aesenc_si128(b, s->rk[r]);
        _mm_storeu_si128((__m128i *)out, _mm_aesenclast_si128(b, s->rk[AES256_ROUNDS]));
        if (blocks > LANES && c->lo <= UINT64_MAX - LANES)
            return ctr_blocks(s, c, out + 16, blocks - 1);    /* past the carry: 8 again */
    }
}

/* The same keystream sixteen blocks at a time on VAES (x86-64 CPUs since Ice Lake and Zen 3):
 * each 256-bit AESENC does two blocks, so a core with two AES units makes about twice what
 * the path above makes. Each round key is broadcast to both halves from the schedule as it is
 * used, never kept in a copy of this frame's (the stores to out keep the compiler from
 * hoisting those loads, and so from spilling them); the tail and any batch the low half's
 * carry falls in take the path above. */
#define WIDE_LANES 8             /* 256-bit registers in flight, two blocks each */
#define WIDE_BLOCKS (2 * WIDE_LANES)

__attribute__((target("vaes,avx2,aes,sse4.1"))) static void ctr_blocks_wide(
    const struct aes256_schedule *s, struct counter *c, uint8_t *out, size_t blocks)
{
    const __m256i to_big_endian = _mm256_broadcastsi128_si256(
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m256i two = _mm256_set_epi64x(0, 2, 0, 2);

    for (; blocks >= WIDE_BLOCKS && c->lo <= UINT64_MAX - WIDE_BLOCKS;
         blocks -= WIDE_BLOCKS, out += WIDE_BLOCKS * 16) {
        /* Each half one little-endian 128-bit counter: the low half block i, the high i + 1. */
        __m256i ctr = _mm256_set_epi64x((long long)c->hi, (long long)(c->lo + 1),
                                        (long long)c->hi, (long long)c->lo), b[WIDE_LANES];
        __m256i k = _mm256_broadcastsi128_si256(s->rk[0]);

#pragma GCC unroll 8
        for (int j = 0; j < WIDE_LANES; j++) {
            b[j] = _mm256_xor_si256(_mm256_shuffle_epi8(ctr, to_big_endian), k);
            ctr = _mm256_add_epi64(ctr, two);
        }
        c->lo += WIDE_BLOCKS;
#pragma GCC unroll 13
        for (int r = 1; r < AES256_ROUNDS; r++) {
            k = _mm256_broadcastsi128_si256(s->rk[r]);
#pragma GCC unroll 8
            for (int j = 0; j < WIDE_LANES; j++)
                b[j] = _mm256_aesenc_epi128(b[j], k);
        }
        k = _mm256_broadcastsi128_si256(s->rk[AES256_ROUNDS]);
#pragma GCC unroll 8
        for (int j = 0; j < WIDE_LANES; j++)
            _mm256_storeu_si256((__m256i *)(out + 32 * j), _mm256_aesenclast_epi128(b[j], k));
    }
    if (blocks > 0)
        ctr_blocks(s, c, out, blocks);
}

/* VZEROALL: the 256-bit registers' upper halves too, which the SSE clear below leaves. */
__attribute__((target("avx"))) static void clear_wide_registers(void)
{
    __asm__ volatile("vzeroall" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                     "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                     "xmm15");
}

/* Round keys and keystream pass through the vector registers: leave none of them there. */
static void clear_vector_registers(void)
{
    __asm__ volatile("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
                     "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
                     "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\tpxor %%xmm8, %%xmm8\n\t"
                     "pxor %%xmm9, %%xmm9\n\tpxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
                     "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\t"
                     "pxor %%xmm14, %%xmm14\n\tpxor %%xmm15, %%xmm15"
                     ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                         "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                         "xmm15");
}

bool randd_aes256ctr_available(void)
{
    /* The caller has checked randd_crypto_has_hardware_aes(); the code here also takes
     * SSSE3's byte shuffle and may take SSE4.1, which every AES-NI CPU has, but an emulated
     * one (qemu64,+aes) need not. */
    return __builtin_cpu_supports("sse4.1");
}

/* VAES (CPUID 7.0 ECX bit 9) and AVX2 (EBX bit 5), with the kernel saving the 256-bit
 * registers (XCR0's SSE and AVX bits): asked of CPUID once, which a VM may trap, and kept.
 * (Clang's __builtin_cpu_supports does not know "vaes".) */
static bool cpu_has_vaes(void)
{
    static int known;                 /* 0: not asked yet; 1: no; 2: yes */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

    if (k == 0) {
        unsigned a, b, c, d;
        bool yes = false;

        if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE)) {
            unsigned xcr0_lo, xcr0_hi;

            __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
            yes = (xcr0_lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
                  (b & bit_AVX2) && (c & (1u << 9));
        }
        k = yes ? 2 : 1;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 2;
}

bool randd_aes256ctr_wide_available(void)
{
    return randd_aes256ctr_available() && cpu_has_vaes();
}

void randd_aes256ctr_stream(const uint8_t key[32], const uint8_t iv[16],
                            const struct iovec *outs, size_t nouts)
{
    randd_aes256ctr_stream_on(randd_aes256ctr_wide_available(), key, iv, outs, nouts);
}

void randd_aes256ctr_stream_on(bool wide, const uint8_t key[32], const uint8_t iv[16],
                               const struct iovec *outs, size_t nouts)
{
    struct aes256_schedule s;
    struct counter c;
    uint8_t block[16];
    size_t spare = 0;                 /* keystream at the end of block not yet given out */

    wide = wide && randd_aes256ctr_wide_available();   /* never VAES on a CPU without */
    /* The key may lie in outs[0]: it is in the schedule before any byte is written. */
    expand_key(&s, key);
    memcpy(&c.hi, iv, 8);
    memcpy(&c.lo, iv + 8, 8);
    c.hi = __builtin_bswap64(c.hi);
    c.lo = __builtin_bswap64(c.lo);
    for (size_t i = 0; i < nouts; i++) {
        uint8_t *dst = outs[i].iov_base;
        size_t n = outs[i].iov_len, early = n < spare ? n : spare, whole;

        memcpy(dst, block + sizeof(block) - spare, early);
        spare -= early;
        dst += early;
        n -= early;
        whole = n & ~(size_t)15;
        if (wide)
            ctr_blocks_wide(&s, &c, dst, whole / 16);
        else
            ctr_blocks(&s, &c, dst, whole / 16);
        if (n > whole) {
            ctr_blocks(&s, &c, block, 1);
            memcpy(dst + whole, block, n - whole);
            spare = sizeof(block) - (n - whole);
        }
    }
    OPENSSL_cleanse(block, sizeof(block));
    OPENSSL_cleanse(&s, sizeof(s));
    OPENSSL_cleanse(&c, sizeof(c));   /* a caller's IV may be its secret nonce */
    if (wide)
        clear_wide_registers();
    clear_vector_registers();
}

#else

bool randd_aes256ctr_available(void)
{
    return false;
}

bool randd_aes256ctr_wide_available(void)
{
    return false;
}

void randd_aes256ctr_stream(const uint8_t key[32], const uint8_t iv[16],
                            const struct iovec *outs, size_t nouts)
{
    (void)key, (void)iv, (void)outs, (void)nouts;
    __builtin_trap();           /* callers ask randd_aes256ctr_available() first */
}

void randd_aes256ctr_stream_on(bool wide, const uint8_t key[32], const uint8_t iv[16],
                               const struct iovec *outs, size_t nouts)
{
    (void)wide, (void)key, (void)iv, (void)outs, (void)nouts;
    __builtin_trap();
}

#endif
