/* Self-tests of the running daemon (selfcheck.h): the known answers run again, and what a
 * failure does to the output. FIPS 140-3 9.2 and 10.3: an error state in which no output
 * leaves the module, left only by a self-test that passes again, or by a restart. */
#include "selfcheck.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "drbg.h"
#include "health.h"
#include "log.h"
#include "loop.h"
#include "selftest.h"

/* The crypto known answers (BLAKE2b, ChaCha20, Cymric, Randen, RNG-BC-8), with a DRBG engine
 * the SP 800-90A 11.3 known answers of the DRBGs (whose failure also puts every DRBG in its
 * error state: internal/drbg.h), then the health tests' own (their cutoffs at a known claim,
 * each tripped by its pattern). */
static int run_all(const struct pool *p, char *why, size_t whylen)
{
    if (randd_selftest(why, whylen) < 0)
        return -1;
    if (RANDD_ENGINE_IS_DRBG(pool_engine(p)) && randd_drbg_selftest(why, whylen) < 0)
        return -1;
    return health_selftest(why, whylen);
}

/* A run's time as a reader wants it: "380 us", "12.4 ms", "1.25 s" (never "0.000 s"). */
static const char *duration_text(double seconds, char *buf, size_t len)
{
    if (seconds < 1e-3)
        snprintf(buf, len, "%.0f us", seconds * 1e6);
    else if (seconds < 1.0)
        snprintf(buf, len, "%.1f ms", seconds * 1e3);
    else
        snprintf(buf, len, "%.2f s", seconds);
    return buf;
}

int selfcheck_run(struct selfcheck *sc, struct pool *p, const char *trigger)
{
    uint64_t began = loop_now_ns();
    char why[sizeof(sc->failed)] = "", halt[sizeof(p->halted)];
    bool was_halted = p->halted[0] != '\0';
    int rc = run_all(p, why, sizeof(why));

    sc->runs++;
    sc->last_time = time(NULL);
    sc->last_seconds = (double)(loop_now_ns() - began) / 1e9;
    sc->last_trigger = trigger;
    sc->last_passed = rc == 0;
    snprintf(sc->failed, sizeof(sc->failed), "%s", rc == 0 ? "" : why);
    if (rc < 0) {
        sc->failures++;
        snprintf(halt, sizeof(halt), "self-test failed: %s", why);
        pool_halt(p, halt);
        if (!strcmp(trigger, "start"))
            log_err("self-test failed: %s; refusing to serve", why);
        else
            log_err("self-test (%s) failed: %s; all output stopped until a self-test passes "
                    "(randctl selftest) or randd restarts", trigger, why);
        return -1;
    }
    if (was_halted) {
        pool_resume(p);
        log_notice("self-test (%s) passed: output resumes once the generator has reseeded "
                   "from fresh input", trigger);
    } else {
        char took[32];

        log_info("self-test (%s) passed in %s", trigger,
                 duration_text(sc->last_seconds, took, sizeof(took)));
    }
    return 0;
}

/* --- root's requests -------------------------------------------------------------------- */

static struct source *source_named(struct pool *p, const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < p->nsources; i++)
        if (strlen(p->sources[i]->name) == len && !memcmp(p->sources[i]->name, name, len))
            return p->sources[i];
    return NULL;
}

static int inject(struct pool *p, const struct randd_request *req, uint64_t now_ns, char *msg,
                  size_t msglen)
{
    struct source *s = source_named(p, req->data, req->data_len);
    size_t at;
    int rc;

    if (!s) {
        at = (size_t)snprintf(msg, msglen, "no source named %.*s; sources:",
                              (int)req->data_len, (const char *)req->data);
        for (size_t i = 0; i < p->nsources && at < msglen; i++)
            at += (size_t)snprintf(msg + at, msglen - at, " %s", p->sources[i]->name);
        return RANDD_INVALID_ARGUMENT;
    }
    rc = source_inject_failure(s, req->test, now_ns, msg, msglen);
    if (rc == -ENOTSUP || rc == -EALREADY)
        return RANDD_INVALID_ARGUMENT;
    return rc < 0 ? RANDD_INTERNAL : RANDD_OK;
}

int selfcheck_admin(struct selfcheck *sc, struct pool *p, const struct randd_request *req,
                    uint64_t now_ns, char *msg, size_t msglen)
{
    bool was_halted = p->halted[0] != '\0';

    if (req->op == RANDD_OP_INJECT_FAILURE)
        return inject(p, req, now_ns, msg, msglen);
    if (selfcheck_run(sc, p, "request") < 0) {
        snprintf(msg, msglen, "self-test failed: %s; all output stopped", sc->failed);
        return RANDD_INTERNAL;
    }
    char took[32];

    snprintf(msg, msglen, "self-tests passed in %s%s",
             duration_text(sc->last_seconds, took, sizeof(took)),
             was_halted ? "; output resumes once the generator has reseeded" : "");
    return RANDD_OK;
}
