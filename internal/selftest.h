/* Known-answer self-tests run before anything is served, and again periodically: BLAKE2b
 * (RFC 7693), ChaCha20 (RFC 8439 2.4.2), SHA-512 and SHA-256 (FIPS 180-4; the vetted
 * conditioning functions), the reference Cymric outputs (with ChaCha20, and
 * with AES-256-CTR where the CPU does AES), Randen's golden output (with AES-NI) and
 * RNG-BC-8, through the production code paths. */
#ifndef RANDD_SELFTEST_H
#define RANDD_SELFTEST_H

#include <stddef.h>

/* Returns 0, or -1 with the failed test named in why. */
int randd_selftest(char *why, size_t whylen);

#endif
