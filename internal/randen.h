/* The Randen generator (Google, arXiv:1810.02227): a Reverie sponge over a 2048-bit
 * Feistel permutation built from AES rounds (x86 AES-NI or ARMv8 AESE/AESMC, never table
 * AES). Owns the state, its permutation, round keys and wiping; seeding policy and locking
 * belong to the caller. Not thread-safe. */
#ifndef RANDD_RANDEN_H
#define RANDD_RANDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RANDD_RANDEN_STATE    256   /* sponge state: 16 Feistel branches of 16 bytes */
#define RANDD_RANDEN_CAPACITY 16    /* branch 0: never output, fed forward after each permutation */
#define RANDD_RANDEN_RATE     240   /* bytes 16..255: output after a permutation, seed XORed in */
#define RANDD_RANDEN_ROUNDS   17
#define RANDD_RANDEN_KEYS     (RANDD_RANDEN_ROUNDS * 8)   /* one 128-bit key per F function */

/* The round keys: pairs {low, high} of 64-bit lanes of each 128-bit key as loaded into an
 * XMM register, round by round, function by function (google/randen's table, see randen.c). */
extern const uint64_t randd_randen_round_keys[RANDD_RANDEN_KEYS][2];

/* The fields are visible so the owner can place the generator in locked memory; they are
 * private to randen.c all the same.
 *
 * Randen hands out the rate of each permutation output. So that no byte once handed out
 * stays in this struct, the state is kept one permutation ahead of the output: `out` holds
 * the rate being handed out (served bytes are zeroed) and `state` already holds the next
 * permutation output, computed from the whole previous state. The output stream is the
 * reference engine's (google/randen Randen<T>, from the same all-zero start), byte for byte. */
struct randd_randen {
    uint8_t state[RANDD_RANDEN_STATE] __attribute__((aligned(16)));  /* next to serve */
    uint8_t out[RANDD_RANDEN_RATE] __attribute__((aligned(16)));     /* being served */
    size_t next;                    /* first unserved byte of out; RANDD_RANDEN_RATE: empty */
    bool ready;                     /* set by init, cleared by wipe */
};

/* True when the CPU has an AES round: AES-NI (CPUID leaf 1, ECX bit 25) on x86, the ARMv8
 * Crypto Extensions' AES (the kernel's HWCAP_AES) on arm64, nothing elsewhere. Checked once,
 * then cached. */
bool randd_randen_available(void);

/* For tests: with hide set, randd_randen_available() says no whatever the CPU has, so the
 * refusal path runs where AES exists (every CPU model qemu-aarch64 7.2 offers has it). */
void randd_randen_hide_cpu_aes(bool hide);

/* The reference engine's start: the all-zero sponge state, nothing seeded. (Its first
 * permutation is run here, because the state is kept one ahead.) Returns 0, or -ENOTSUP
 * (state wiped) without an AES round (randd_randen_available). */
int randd_randen_init(struct randd_randen *r);

/* Absorbs material (len >= 1): XORed into the rate 240 bytes at a time, a permutation after
 * each chunk. Unserved output is discarded, so every later byte comes from a permutation run
 * after the last chunk went in. Returns 0, or -EINVAL (not initialised, or len 0). */
int randd_randen_seed(struct randd_randen *r, const void *material, size_t len);

/* out = the next n bytes of the stream; any cut of the stream into calls yields the same
 * bytes. Returns 0, or -EINVAL (not initialised, or NULL out with n > 0). */
int randd_randen_generate(struct randd_randen *r, void *out, size_t n);

/* All zero and not ready: seed and generate refuse until randd_randen_init runs again. */
void randd_randen_wipe(struct randd_randen *r);

#endif
