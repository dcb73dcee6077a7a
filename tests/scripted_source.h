/* A scripted entropy source for tests: 64-bit words from a pattern (good pseudo-random,
 * stuck, short cycle, nothing at all), switchable at run time to model recovery. */
#ifndef RANDD_TEST_SCRIPTED_SOURCE_H
#define RANDD_TEST_SCRIPTED_SOURCE_H

#include <stdint.h>

#include "source.h"

enum script_pattern {
    SCRIPT_RANDOM,      /* splitmix64 from a seed: passes the health tests */
    SCRIPT_STUCK_ZERO,
    SCRIPT_STUCK_ONES,
    SCRIPT_CYCLE3,      /* A, B, C, A, B, C, ... */
    SCRIPT_EMPTY,       /* like RDSEED with carry clear: no data at all */
};

struct scripted {
    struct source source;       /* first, so the source pointer is the script */
    enum script_pattern pattern;
    uint64_t state;
};

/* The test suites' deterministic pseudo-random words (splitmix64). */
uint64_t splitmix64(uint64_t *state);

/* A source named name, 8-byte samples, 4 bits a byte credited like RDSEED. */
void scripted_init(struct scripted *s, const char *name, enum script_pattern pattern,
                   uint64_t seed, bool kernel_creditable);

#endif
