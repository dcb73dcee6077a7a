/* The running daemon's self-tests, FIPS 140-3 style: the known answers of internal/selftest.c
 * and of the health tests, at start, every selftest_interval and when root asks (randctl
 * selftest). Owns when they ran, how, and what a failure does: the pool is halted (no output
 * at all) until a clean re-test. The tests themselves are internal/selftest.c's and
 * health.c's. */
#ifndef RANDD_SELFCHECK_H
#define RANDD_SELFCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pool.h"
#include "protocol.h"

struct selfcheck {
    uint64_t runs, failures;
    time_t last_time;               /* wall clock of the last run; 0: none yet */
    double last_seconds;            /* how long it took */
    bool last_passed;
    const char *last_trigger;       /* "start", "periodic", "request" */
    char failed[160];               /* the test that failed last run; "": it passed */
};

/* Runs every self-test now. A failure halts p (pool_halt) and is logged; a pass after a
 * failure resumes it. Returns 0 on a pass, -1 on a failure (sc->failed says which). */
int selfcheck_run(struct selfcheck *sc, struct pool *p, const char *trigger);

/* Root's SELFTEST (a run now, "request") or INJECT_FAILURE (on the pool's source of that
 * name): returns the reply's protocol status, and its text in msg. */
int selfcheck_admin(struct selfcheck *sc, struct pool *p, const struct randd_request *req,
                    uint64_t now_ns, char *msg, size_t msglen);

#endif
