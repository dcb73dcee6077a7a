/* Primality tests and uniform random primes. Up to 64 bits: deterministic Miller-Rabin; 65 to
 * 128 bits: Baillie-PSW; above: OpenSSL's BN_check_prime for a number handed in, and for a
 * random candidate a base-2 test, then the random-base rounds of prime_rounds.c. The small
 * sizes run on internal/montgomery.c. Owns no randomness: candidates and bases come from a
 * caller's byte source. */
#ifndef RANDD_PRIME_H
#define RANDD_PRIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "montgomery.h"
#include "rngbc.h"

#define RANDD_PRIME_BITS_MIN 16
#define RANDD_PRIME_BITS_MAX 4096

bool randd_is_prime_u64(uint64_t n);
bool randd_is_prime_u128(randd_u128 n);

/* 1 prime, 0 composite, -ENOMEM; n big-endian in len bytes, any size. */
int randd_is_prime_bytes(const uint8_t *n, size_t len);

/* The parts of BPSW, for tests: a strong probable-prime test to base a (n odd > 2, a < n)
 * and the strong Lucas test with Selfridge's parameters (n odd, not a square). */
bool randd_strong_probable_prime_u128(randd_u128 n, randd_u128 a);
bool randd_strong_lucas_u128(randd_u128 n);

/* A prime of exactly bits bits (top bit set), uniform over those primes, big-endian in
 * (bits + 7) / 8 bytes of out. Returns 0, -EINVAL (bits < 16), -E2BIG (bits > 4096),
 * -ENOMEM, or the source's error with out wiped. */
int randd_prime_generate(unsigned bits, uint8_t *out, const struct randd_byte_source *src);

/* Random-base Miller-Rabin rounds after which a prime from randd_prime_generate of this
 * size is composite with probability below 2^-error_log2 (average case over uniform
 * candidates; prime_rounds.c). randd_prime_rounds keeps OpenSSL 3's bound: 2^-128 up to
 * 2048 bits, 2^-256 above. */
unsigned randd_prime_rounds_for(unsigned bits, unsigned error_log2);
unsigned randd_prime_rounds(unsigned bits);

#endif
