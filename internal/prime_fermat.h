/* The base-2 Fermat test on eight candidates at once, one per 64-bit lane of AVX-512 IFMA
 * registers: the filter that turns away nearly every composite a sieve leaves, before any
 * candidate costs a Miller-Rabin round (prime.c); and those rounds, eight bases at once.
 * Owns that arithmetic and nothing else: no randomness, no verdicts of primality (a prime
 * always passes; a composite that passes is judged by the Miller-Rabin rounds that follow). */
#ifndef RANDD_PRIME_FERMAT_H
#define RANDD_PRIME_FERMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RANDD_FERMAT_LANES 8
#define RANDD_FERMAT_BITS_MIN 129
#define RANDD_FERMAT_BITS_MAX 4096

/* Whether the environment hides IFMA: RANDD_NO_IFMA=1, so that any machine takes the path of
 * a CPU without it (to measure and test that path). */
bool randd_fermat8_hidden(void);

/* Whether this CPU has AVX-512 F and IFMA and they are not hidden (above); when false,
 * randd_fermat8 and randd_strong8 must not be called. */
bool randd_fermat8_available(void);

/* pass[i] = (2^(n_i - 1) mod n_i == 1) for count (1 to 8) odd candidates of exactly bits bits
 * (129 to 4096), each big-endian in (bits + 7) / 8 bytes at n[i]. 0 or -ENOMEM. Not
 * constant-time; leaves no copy of a candidate behind (what it used is wiped). */
int randd_fermat8(const uint8_t *const n[], size_t count, unsigned bits, bool pass[]);

/* Miller-Rabin on one odd n of exactly bits bits (129 to 4096) to count (1 to 8) bases at
 * once: pass[i] = n is a strong probable prime to base[i]. n and each base (in [2, n - 2])
 * big-endian in (bits + 7) / 8 bytes. 0 or -ENOMEM. Not constant-time; wipes what it used. */
int randd_strong8(const uint8_t *n, unsigned bits, const uint8_t *const base[], size_t count,
                  bool pass[]);

#endif
