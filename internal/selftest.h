/* Known-answer self-tests run before anything is served: BLAKE2b (RFC 7693), ChaCha20
 * (RFC 8439 2.4.2) and the reference Cymric outputs, through the production code paths. */
#ifndef RANDD_SELFTEST_H
#define RANDD_SELFTEST_H

#include <stddef.h>

/* Returns 0, or -1 with the failed test named in why. */
int randd_selftest(char *why, size_t whylen);

#endif
