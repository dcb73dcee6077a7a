/* Between internal/drbg.c and its self-test (internal/drbg_selftest.c): the process-wide
 * error state of SP 800-90A 11.3, and DRBGs the self-test may run while that state is set. */
#ifndef RANDD_DRBG_INTERNAL_H
#define RANDD_DRBG_INTERNAL_H

#include <stdbool.h>

#include "drbg.h"

/* A DRBG that runs even in the error state: the self-test's own, which must be able to
 * prove the mechanisms sound again. */
int randd_drbg_new_for_selftest(enum randd_drbg_type type, struct randd_drbg **out);

void randd_drbg_set_error_state(bool failed);

#endif
