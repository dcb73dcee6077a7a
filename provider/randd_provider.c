/* randd.so: an OpenSSL 3 provider whose one algorithm, RANDD, is a seed source. Chosen in
 * openssl.cnf ([random] seed = RANDD), it seeds every OpenSSL DRBG of a process from randd's
 * health-tested generator, with SEED requests over librandd, instead of from the kernel.
 * Owns the provider's configuration, its one connection to the daemon and what happens
 * when the daemon cannot serve; the DRBGs, their reseeding and their locks are OpenSSL's.
 *
 * Sections: configuration, seeding (daemon, kernel, logging), the seed source's RAND
 * functions, fork, the provider's own functions and OSSL_provider_init. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "client_internal.h"
#include "protocol.h"
#include "randd.h"

#ifndef RANDD_VERSION
#define RANDD_VERSION "0.1.0"
#endif

/* randd's generator (Cymric or Randen) runs under a 256-bit key reseeded from 256 credited
 * bits: it can seed a DRBG of up to 256 bits of security strength, which OpenSSL's default
 * (CTR-DRBG with AES-256) is. */
#define SEED_STRENGTH      256
#define DEFAULT_TIMEOUT_MS 1000
#define MAX_TIMEOUT_MS     60000
/* After a timeout randd is left alone this long: a hung daemon costs one timeout, not one
 * per forked child (a server forking a process per connection would pay it every time).
 * systemd's watchdog restarts a hung randd within 30 s. */
#define HUNG_BACKOFF_NS    (10ull * 1000000000u)
/* fork() waits for a seed in flight (section fork): its timeout and this margin at most, then
 * this grace for OpenSSL to release its DRBG's locks. Natively that takes microseconds, and
 * 1 ms held even pinned to one core beside six CPU hogs (12 runs of 12). In a VM whose vCPUs
 * outnumber the host's cores the thread releasing them may not run for milliseconds: the
 * arm64 guest (make check-arm64, 2 vCPUs on a busy 2-core host) saw a child hang on
 * OpenSSL's lock after a 1 ms grace. Paid only by a fork that found a seed busy. */
#define FORK_WAIT_MARGIN_MS 1000
#ifndef FORK_GRACE_NS
#define FORK_GRACE_NS      20000000
#endif

/* Reason codes for OpenSSL's error queue; the texts are in reason_strings below. */
enum {
    R_DAEMON_UNAVAILABLE = 1,
    R_KERNEL_FAILED,
    R_NOT_INSTANTIATED,
    R_STRENGTH_TOO_HIGH,
    R_SEED_LENGTH,
    R_HAS_PARENT,
    R_BAD_CONFIG,
    R_OUT_OF_MEMORY,
    R_NO_PREDICTION_RESISTANCE,
};

/* --- configuration --------------------------------------------------------------------
 * The keys of the provider's section in openssl.cnf, all optional:
 *   socket   = PATH             the daemon's socket (else $RANDD_SOCKET, else the default)
 *   timeout  = MILLISECONDS     bounds each exchange with the daemon (1000; 1 to 60000)
 *   fallback = kernel | none    what a seed comes from when randd cannot serve (kernel)
 *   log      = stderr | syslog | none   where the first fallback is reported (stderr) */

enum fallback { FALLBACK_KERNEL, FALLBACK_NONE };
enum log_to { LOG_TO_STDERR, LOG_TO_SYSLOG, LOG_TO_NONE };

struct settings {
    char socket[108];              /* sun_path's size */
    int timeout_ms;
    enum fallback fallback;
    enum log_to log_to;
};

/* One connection to the daemon, shared by every seed source context behind its own lock. */
struct daemon_conn {
    pthread_mutex_t lock;          /* daemon, in_exchange and every exchange */
    bool in_exchange;              /* daemon is mid-exchange */
    randd_handle *daemon;          /* NULL until the first seed, or while randd_open fails */
};

/* One per loaded provider, which in practice is one per process. Ordinary seeds and mode
 * (prediction-resistant) seeds each have their own connection: a mode seed waits for noise
 * entropy for up to the timeout, and ordinary seeds in other threads must not wait behind
 * it (they are answered at once or fall back). */
struct seed_source;

struct provider {
    struct provider *next;         /* in the fork registry (section fork) */
    struct seed_source *sources;   /* its seed source contexts, for the fork registry */
    const OSSL_CORE_HANDLE *core;
    OSSL_FUNC_core_new_error_fn *new_error;
    OSSL_FUNC_core_set_error_debug_fn *set_error_debug;
    OSSL_FUNC_core_vset_error_fn *vset_error;
    struct settings settings;
    char bad_setting[256];         /* a key with a bad value: seeding fails, saying so */
    struct daemon_conn ordinary;   /* every seed without prediction resistance */
    struct daemon_conn modes;      /* prediction-resistant seeds, one at a time */
    _Atomic uint64_t hung_until_ns;    /* after an ordinary timeout: randd is not asked
                                        * before this */
    atomic_bool fallback_logged;
};

static void raise_error_at(const struct provider *p, int line, const char *func, int reason,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Puts an error on OpenSSL's queue through the core, as the provider's own library, with
 * where it was raised. */
static void raise_error_at(const struct provider *p, int line, const char *func, int reason,
                           const char *fmt, ...)
{
    va_list ap;

    if (!p->new_error || !p->set_error_debug || !p->vset_error)
        return;
    p->new_error(p->core);
    p->set_error_debug(p->core, __FILE__, line, func);
    va_start(ap, fmt);
    p->vset_error(p->core, (uint32_t)reason, fmt, ap);
    va_end(ap);
}
#define raise_error(p, reason, ...) raise_error_at(p, __LINE__, __func__, reason, __VA_ARGS__)

static bool parse_timeout(const char *text, int *ms)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < 1 || v > MAX_TIMEOUT_MS)
        return false;
    *ms = (int)v;
    return true;
}

static bool bad_setting(struct provider *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool bad_setting(struct provider *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->bad_setting, sizeof(p->bad_setting), fmt, ap);
    va_end(ap);
    return false;
}

/* Reads the provider's section through the core. A key with a bad value is kept in
 * bad_setting, and every seed then fails, naming it. Failing earlier would hide it: OpenSSL
 * 3.0 ignores a config file whose provider fails to start, and a seed source that fails to
 * instantiate, without a word, and seeds from the kernel; a typo would silently change
 * where seeds come from. */
static bool read_settings(struct provider *p, const OSSL_DISPATCH *in)
{
    OSSL_FUNC_core_get_params_fn *get_params = NULL;
    const char *path = NULL, *timeout = NULL, *fallback = NULL, *log_to = NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_ptr("socket", (char **)&path, 0),
        OSSL_PARAM_utf8_ptr("timeout", (char **)&timeout, 0),
        OSSL_PARAM_utf8_ptr("fallback", (char **)&fallback, 0),
        OSSL_PARAM_utf8_ptr("log", (char **)&log_to, 0),
        OSSL_PARAM_END,
    };
    struct settings *s = &p->settings;

    for (; in && in->function_id; in++)
        if (in->function_id == OSSL_FUNC_CORE_GET_PARAMS)
            get_params = OSSL_FUNC_core_get_params(in);
    if (get_params && !get_params(p->core, params))
        return bad_setting(p, "the provider's section could not be read");
    /* secure_getenv: a setuid program must not be pointed at another "daemon". */
    if (!path || !*path)
        path = secure_getenv("RANDD_SOCKET");
    if (!path || !*path)
        path = RANDD_DEFAULT_SOCKET;
    if (strlen(path) >= sizeof(s->socket))
        return bad_setting(p, "socket: longer than %zu bytes: \"%s\"", sizeof(s->socket) - 1,
                           path);
    strcpy(s->socket, path);
    s->timeout_ms = DEFAULT_TIMEOUT_MS;
    if (timeout && !parse_timeout(timeout, &s->timeout_ms))
        return bad_setting(p, "timeout: not milliseconds from 1 to %d: \"%s\"", MAX_TIMEOUT_MS,
                           timeout);
    if (!fallback || !strcmp(fallback, "kernel"))
        s->fallback = FALLBACK_KERNEL;
    else if (!strcmp(fallback, "none"))
        s->fallback = FALLBACK_NONE;
    else
        return bad_setting(p, "fallback: not kernel or none: \"%s\"", fallback);
    if (!log_to || !strcmp(log_to, "stderr"))
        s->log_to = LOG_TO_STDERR;
    else if (!strcmp(log_to, "syslog"))
        s->log_to = LOG_TO_SYSLOG;
    else if (!strcmp(log_to, "none"))
        s->log_to = LOG_TO_NONE;
    else
        return bad_setting(p, "log: not stderr, syslog or none: \"%s\"", log_to);
    return true;
}

/* --- seeding ---------------------------------------------------------------------------
 * Every seed is asked of the daemon first, with NONBLOCK: an unseeded randd (or one without
 * a healthy source) answers NOT_READY at once rather than holding the process, and the
 * timeout bounds a daemon that hangs. When randd cannot serve, the seed comes from the
 * kernel (fallback = kernel) or the seeding fails (fallback = none); never from anything
 * weaker. The next seed asks the daemon again, so a restarted randd is used at once.
 *
 * A seed with prediction resistance (SP 800-90A 9.3.1: the DRBG asked its source for fresh
 * entropy) is a SEED in randd's PREDICTION_RESISTANT mode: the daemon reseeds from 256 bits
 * of fresh noise-source entropy before it makes the seed. Noise entropy comes at the
 * sources' pace, so such a seed waits for it (without NONBLOCK), for the timeout at most, and
 * a timeout there says nothing about a hung daemon. It never falls back: the kernel's
 * output is not fresh noise-source entropy, and a DRBG that asked for prediction resistance
 * must fail rather than get less (SP 800-90A 9.3.3). The ordinary path is unchanged. */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* n bytes in mode from the daemon over the provider's connection for it: the ordinary one,
 * or the modes' one (librandd reconnects after a restart or a fork, and drops a connection
 * that timed out). Returns 0 or a librandd error, with the daemon's own words in why. */
static int seed_from_daemon(struct provider *p, unsigned char *out, size_t n,
                            enum randd_mode mode, char *why, size_t whylen)
{
    bool ordinary = mode == RANDD_MODE_DEFAULT;
    struct daemon_conn *c = ordinary ? &p->ordinary : &p->modes;
    int rc = 0;

    pthread_mutex_lock(&c->lock);
    c->in_exchange = true;
    if (now_ns() < atomic_load(&p->hung_until_ns))
        rc = -ETIMEDOUT;
    else if (!c->daemon && (rc = randd_open(&c->daemon, p->settings.socket)) < 0)
        c->daemon = NULL;
    if (rc == 0) {
        randd_set_timeout(c->daemon, p->settings.timeout_ms);
        randd_set_nonblock(c->daemon, ordinary);
        if ((rc = randd_seed(c->daemon, out, n, mode)) == -ETIMEDOUT && ordinary)
            atomic_store(&p->hung_until_ns, now_ns() + HUNG_BACKOFF_NS);
        snprintf(why, whylen, "%s", randd_message(c->daemon));
    }
    c->in_exchange = false;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* getrandom() without GRND_NONBLOCK: it waits until the kernel's generator is initialised,
 * so even the fallback never hands out weak bytes. Returns 0 or -errno. */
static int seed_from_kernel(unsigned char *out, size_t n)
{
    while (n > 0) {
        ssize_t got = getrandom(out, n, 0);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? -errno : -EIO;
        out += got;
        n -= (size_t)got;
    }
    return 0;
}

/* One line, once per process: a fallback repeated at every reseed would flood the log, and
 * the first says all an operator needs (randctl status shows when randd serves again). */
static void log_fallback_once(struct provider *p, int err)
{
    char line[512];
    int len;

    if (p->settings.log_to == LOG_TO_NONE || atomic_exchange(&p->fallback_logged, true))
        return;
    len = snprintf(line, sizeof(line), "randd.so: %s: %s; OpenSSL seeds from the kernel "
                   "instead (said once per process)", p->settings.socket, randd_strerror(err));
    if (p->settings.log_to == LOG_TO_SYSLOG) {
        syslog(LOG_USER | LOG_WARNING, "%s", line);
        return;
    }
    if (len > (int)sizeof(line) - 2)
        len = (int)sizeof(line) - 2;
    line[len++] = '\n';
    (void)!write(STDERR_FILENO, line, (size_t)len);    /* one write: not interleaved */
}

/* A seed is busy from the start of generate or get_seed until generate returns or the seed
 * comes back through clear_seed: that is when OpenSSL has finished the (re)seeding that took
 * it, and a fork may go ahead (section fork). Counted for the whole process, under a lock of
 * its own that fork waits on: a seed must never wait for fork while inside OpenSSL's locks. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t done;           /* signalled when count falls to 0 */
    unsigned count;
    uint64_t until_ns;             /* by when every busy seed should be done */
} busy = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void seed_begins(struct provider *p)
{
    uint64_t until = now_ns() + (uint64_t)(p->settings.timeout_ms + FORK_WAIT_MARGIN_MS) *
                     1000000u;

    pthread_mutex_lock(&busy.lock);
    busy.count++;
    if (until > busy.until_ns)
        busy.until_ns = until;
    pthread_mutex_unlock(&busy.lock);
}

static void seed_ends(void)
{
    pthread_mutex_lock(&busy.lock);
    if (busy.count > 0 && --busy.count == 0)
        pthread_cond_broadcast(&busy.done);
    pthread_mutex_unlock(&busy.lock);
}

/* n bytes of seed into out, from the daemon or as the fallback says (never, with prediction
 * resistance). Returns 1 or 0 (with an error on OpenSSL's queue and out wiped), as the RAND
 * functions do. */
static int fill_seed(struct provider *p, unsigned char *out, size_t n, bool pr)
{
    char why[256] = "";
    int rc;

    if (p->bad_setting[0]) {
        raise_error(p, R_BAD_CONFIG, "%s", p->bad_setting);
        return 0;
    }
    rc = seed_from_daemon(p, out, n, pr ? RANDD_MODE_PREDICTION_RESISTANT : RANDD_MODE_DEFAULT,
                          why, sizeof(why));
    if (rc == 0)
        return 1;
    OPENSSL_cleanse(out, n);        /* no daemon bytes in a buffer said to hold nothing */
    if (pr) {
        raise_error(p, R_NO_PREDICTION_RESISTANCE, "%s: %s%s%s", p->settings.socket,
                    randd_strerror(rc), why[0] ? ": " : "", why);
        return 0;
    }
    if (p->settings.fallback == FALLBACK_NONE) {
        raise_error(p, R_DAEMON_UNAVAILABLE, "%s: %s (fallback = none)",
                    p->settings.socket, randd_strerror(rc));
        return 0;
    }
    log_fallback_once(p, rc);
    if ((rc = seed_from_kernel(out, n)) < 0) {
        OPENSSL_cleanse(out, n);
        raise_error(p, R_KERNEL_FAILED, "getrandom: %s", strerror(-rc));
        return 0;
    }
    return 1;
}

/* --- the seed source ---------------------------------------------------------------------
 * A context holds no secret: every request goes to the daemon for fresh bytes. Its lock
 * exists because OpenSSL locks a DRBG's parent around each seed (and enables that lock
 * when the primary DRBG is shared between threads); the connection has a lock of its own. */

struct seed_source {
    struct provider *provider;
    struct seed_source *next;      /* in provider->sources */
    int state;                     /* EVP_RAND_STATE_* */
    atomic_bool pr_pending;        /* a reseed asked for prediction resistance: the next
                                    * request is made in that mode */
    pthread_mutex_t *lock;         /* NULL until enable_locking */
};

static void registry_add_source(struct seed_source *s);
static void registry_remove_source(struct seed_source *s);
static void registry_set_lock(struct seed_source *s, pthread_mutex_t *lock);

static OSSL_FUNC_rand_newctx_fn source_new;
static OSSL_FUNC_rand_freectx_fn source_free;
static OSSL_FUNC_rand_instantiate_fn source_instantiate;
static OSSL_FUNC_rand_uninstantiate_fn source_uninstantiate;
static OSSL_FUNC_rand_generate_fn source_generate;
static OSSL_FUNC_rand_reseed_fn source_reseed;
static OSSL_FUNC_rand_get_seed_fn source_get_seed;
static OSSL_FUNC_rand_clear_seed_fn source_clear_seed;
static OSSL_FUNC_rand_enable_locking_fn source_enable_locking;
static OSSL_FUNC_rand_lock_fn source_lock;
static OSSL_FUNC_rand_unlock_fn source_unlock;
static OSSL_FUNC_rand_gettable_ctx_params_fn source_gettable_ctx_params;
static OSSL_FUNC_rand_get_ctx_params_fn source_get_ctx_params;
static OSSL_FUNC_rand_verify_zeroization_fn source_verify_zeroization;

/* A seed source is the root of a DRBG chain: it takes no parent. */
static void *source_new(void *provctx, void *parent, const OSSL_DISPATCH *parent_calls)
{
    struct provider *p = provctx;
    struct seed_source *s;

    (void)parent_calls;
    if (parent) {
        raise_error(p, R_HAS_PARENT, "a seed source has no parent");
        return NULL;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        raise_error(p, R_OUT_OF_MEMORY, "a seed source context");
        return NULL;
    }
    s->provider = p;
    s->state = EVP_RAND_STATE_UNINITIALISED;
    registry_add_source(s);
    return s;
}

static void source_free(void *ctx)
{
    struct seed_source *s = ctx;

    if (!s)
        return;
    registry_remove_source(s);
    if (s->lock) {
        pthread_mutex_destroy(s->lock);
        free(s->lock);
    }
    free(s);
}

static bool strength_ok(const struct seed_source *s, unsigned strength)
{
    if (strength <= SEED_STRENGTH)
        return true;
    raise_error(s->provider, R_STRENGTH_TOO_HIGH, "%u bits asked, %d offered", strength,
                SEED_STRENGTH);
    return false;
}

/* A seed may carry half as much again as the strength: SP 800-90A section 8.6.7 lets a DRBG
 * take its nonce with its entropy input, and OpenSSL 3.5 does at instantiate when the parent
 * has no nonce of its own (384 bits for a 256-bit DRBG). OpenSSL 3.0 asks the nonce apart. */
static bool seed_entropy_ok(const struct seed_source *s, unsigned entropy)
{
    if (entropy <= SEED_STRENGTH + SEED_STRENGTH / 2)
        return true;
    raise_error(s->provider, R_STRENGTH_TOO_HIGH, "%u bits of seed asked, at most %d (a "
                "strength of %d and its nonce) offered", entropy,
                SEED_STRENGTH + SEED_STRENGTH / 2, SEED_STRENGTH);
    return false;
}

static bool ready(const struct seed_source *s)
{
    if (s->state == EVP_RAND_STATE_READY)
        return true;
    raise_error(s->provider, R_NOT_INSTANTIATED, "instantiate the seed source first");
    return false;
}

/* Nothing to seed: the daemon is asked at each request. The daemon is not contacted here,
 * so a process that loads the provider but never needs a seed never connects. */
static int source_instantiate(void *ctx, unsigned strength, int prediction_resistance,
                              const unsigned char *pstr, size_t pstr_len,
                              const OSSL_PARAM params[])
{
    struct seed_source *s = ctx;

    (void)prediction_resistance, (void)pstr, (void)pstr_len, (void)params;
    if (!strength_ok(s, strength))
        return 0;
    s->state = EVP_RAND_STATE_READY;
    return 1;
}

static int source_uninstantiate(void *ctx)
{
    struct seed_source *s = ctx;

    s->state = EVP_RAND_STATE_UNINITIALISED;
    return 1;
}

/* Whether this request is to be prediction resistant: asked now, or by a reseed since the
 * last one that was (section seeding). */
static bool wants_prediction_resistance(struct seed_source *s, int prediction_resistance)
{
    return prediction_resistance || atomic_load(&s->pr_pending);
}

static void served(struct seed_source *s, bool pr)
{
    if (pr)
        atomic_store(&s->pr_pending, false);
}

/* Every call is fresh from the daemon (or the fallback); with prediction resistance, from a
 * daemon freshly reseeded from its noise sources. Additional input has nothing to go into. */
static int source_generate(void *ctx, unsigned char *out, size_t outlen, unsigned strength,
                           int prediction_resistance, const unsigned char *adin,
                           size_t adin_len)
{
    struct seed_source *s = ctx;
    bool pr;
    int ok;

    (void)adin, (void)adin_len;
    if (!ready(s) || !strength_ok(s, strength))
        return 0;
    pr = wants_prediction_resistance(s, prediction_resistance);
    seed_begins(s->provider);
    if ((ok = fill_seed(s->provider, out, outlen, pr)))
        served(s, pr);
    seed_ends();
    return ok;
}

/* The source has no state to reseed: each request is fresh from the daemon. A reseed with
 * prediction resistance is kept, so that the next request, whatever it asks, is made after
 * a noise-source reseed in the daemon: that is what the reseed promised its caller. Spending
 * noise entropy here, on bytes nobody takes, would buy nothing. */
static int source_reseed(void *ctx, int prediction_resistance, const unsigned char *ent,
                         size_t ent_len, const unsigned char *adin, size_t adin_len)
{
    struct seed_source *s = ctx;

    (void)ent, (void)ent_len, (void)adin, (void)adin_len;
    if (!ready(s))
        return 0;
    if (prediction_resistance)
        atomic_store(&s->pr_pending, true);
    return 1;
}

/* What a DRBG calls on its parent: a buffer of full-entropy bytes, one byte per 8 bits
 * asked (at least min_len), in OpenSSL's secure heap until clear_seed wipes it. The DRBG's
 * own address comes as adin to make seeds differ between DRBGs; each request to randd
 * gets fresh bytes anyway. */
static size_t source_get_seed(void *ctx, unsigned char **out, int entropy, size_t min_len,
                              size_t max_len, int prediction_resistance,
                              const unsigned char *adin, size_t adin_len)
{
    struct seed_source *s = ctx;
    size_t n = entropy > 0 ? ((size_t)entropy + 7) / 8 : 0;
    unsigned char *buf;
    bool pr;

    (void)adin, (void)adin_len;
    if (!ready(s) || !seed_entropy_ok(s, entropy > 0 ? (unsigned)entropy : 0))
        return 0;
    if (n < min_len)
        n = min_len;
    if (n == 0) {
        raise_error(s->provider, R_SEED_LENGTH, "a seed of no bytes asked for");
        return 0;
    }
    if (n > max_len || n > RANDD_MAX_SEED) {
        raise_error(s->provider, R_SEED_LENGTH, "%zu bytes of seed, at most %zu "
                    "taken", n, max_len < RANDD_MAX_SEED ? max_len : (size_t)RANDD_MAX_SEED);
        return 0;
    }
    if (!(buf = OPENSSL_secure_malloc(n))) {
        raise_error(s->provider, R_OUT_OF_MEMORY, "%zu bytes of seed", n);
        return 0;
    }
    pr = wants_prediction_resistance(s, prediction_resistance);
    seed_begins(s->provider);
    if (!fill_seed(s->provider, buf, n, pr)) {
        OPENSSL_secure_clear_free(buf, n);
        seed_ends();
        return 0;
    }
    served(s, pr);
    *out = buf;
    return n;
}

static void source_clear_seed(void *ctx, unsigned char *buf, size_t len)
{
    (void)ctx;
    OPENSSL_secure_clear_free(buf, len);
    if (buf)
        seed_ends();
}

static int source_enable_locking(void *ctx)
{
    struct seed_source *s = ctx;
    pthread_mutex_t *lock;

    if (s->lock)
        return 1;
    if (!(lock = malloc(sizeof(*lock))) || pthread_mutex_init(lock, NULL) != 0) {
        free(lock);
        raise_error(s->provider, R_OUT_OF_MEMORY, "a lock");
        return 0;
    }
    registry_set_lock(s, lock);
    return 1;
}

static int source_lock(void *ctx)
{
    struct seed_source *s = ctx;

    return !s->lock || pthread_mutex_lock(s->lock) == 0;
}

static void source_unlock(void *ctx)
{
    struct seed_source *s = ctx;

    if (s->lock)
        pthread_mutex_unlock(s->lock);
}

static const OSSL_PARAM *source_gettable_ctx_params(void *ctx, void *provctx)
{
    static const OSSL_PARAM gettable[] = {
        OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, NULL),
        OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, NULL),
        OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
        OSSL_PARAM_END,
    };

    (void)ctx, (void)provctx;
    return gettable;
}

/* max_request: OpenSSL splits larger generate calls into pieces of this size, one SEED
 * request each. */
static int source_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    struct seed_source *s = ctx;
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STATE)) && !OSSL_PARAM_set_int(p, s->state))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STRENGTH)) &&
        !OSSL_PARAM_set_uint(p, SEED_STRENGTH))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_MAX_REQUEST)) &&
        !OSSL_PARAM_set_size_t(p, RANDD_MAX_SEED))
        return 0;
    return 1;
}

/* No secret state to be zero. */
static int source_verify_zeroization(void *ctx)
{
    (void)ctx;
    return 1;
}

static const OSSL_DISPATCH seed_source_functions[] = {
    { OSSL_FUNC_RAND_NEWCTX, (void (*)(void))source_new },
    { OSSL_FUNC_RAND_FREECTX, (void (*)(void))source_free },
    { OSSL_FUNC_RAND_INSTANTIATE, (void (*)(void))source_instantiate },
    { OSSL_FUNC_RAND_UNINSTANTIATE, (void (*)(void))source_uninstantiate },
    { OSSL_FUNC_RAND_GENERATE, (void (*)(void))source_generate },
    { OSSL_FUNC_RAND_RESEED, (void (*)(void))source_reseed },
    { OSSL_FUNC_RAND_GET_SEED, (void (*)(void))source_get_seed },
    { OSSL_FUNC_RAND_CLEAR_SEED, (void (*)(void))source_clear_seed },
    { OSSL_FUNC_RAND_ENABLE_LOCKING, (void (*)(void))source_enable_locking },
    { OSSL_FUNC_RAND_LOCK, (void (*)(void))source_lock },
    { OSSL_FUNC_RAND_UNLOCK, (void (*)(void))source_unlock },
    { OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS, (void (*)(void))source_gettable_ctx_params },
    { OSSL_FUNC_RAND_GET_CTX_PARAMS, (void (*)(void))source_get_ctx_params },
    { OSSL_FUNC_RAND_VERIFY_ZEROIZATION, (void (*)(void))source_verify_zeroization },
    { 0, NULL },
};

/* --- fork ------------------------------------------------------------------------------
 * A seed holds locks for up to the timeout: the seed source's, which OpenSSL takes around
 * get_seed and clear_seed; the connection's; and, above them, OpenSSL's own DRBG locks. A
 * thread that forks meanwhile gave its child copies of them all, held by a thread the child
 * does not have: the child's next seed (OpenSSL reseeds after a fork) blocked for ever.
 * So fork() first waits, holding nothing, until no seed is busy: none being made and none
 * handed out and not yet cleared, for at most the timeout (after a timeout randd is not
 * asked for HUNG_BACKOFF_NS, so a hung randd costs one wait). OpenSSL clears a seed as soon
 * as its DRBG has taken it, so by then OpenSSL is about to release its locks too. The child
 * then makes every lock of the provider afresh, and drops a connection that was caught
 * mid-exchange; librandd replaces the parent's connection with the child's own.
 * Holding a lock of ours across the fork, as glibc's malloc does, would be worse: a seed
 * starting meanwhile would wait for it inside OpenSSL's locks, and the child would inherit
 * those held. Nor is a trylock falling back to the kernel enough: the child would block on
 * OpenSSL's locks instead. What is left is OpenSSL's own window (a thread inside RAND_bytes
 * when another forks), which exists with or without randd. Single-threaded programs never
 * wait: no seed can be busy when they fork. The registry lists every provider and its seed
 * source contexts, for the child. */

/* busy.done waits on CLOCK_MONOTONIC, which a change of the clock cannot stretch. */
static int init_busy_done(void)
{
    pthread_condattr_t attr;
    int err;

    if ((err = pthread_condattr_init(&attr)) != 0)
        return err;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    err = pthread_cond_init(&busy.done, &attr);
    pthread_condattr_destroy(&attr);
    return err;
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct provider *registry;          /* every provider loaded, newest first */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_err;

static void registry_add_source(struct seed_source *s)
{
    pthread_mutex_lock(&registry_lock);
    s->next = s->provider->sources;
    s->provider->sources = s;
    pthread_mutex_unlock(&registry_lock);
}

static void registry_remove_source(struct seed_source *s)
{
    pthread_mutex_lock(&registry_lock);
    for (struct seed_source **at = &s->provider->sources; *at; at = &(*at)->next)
        if (*at == s) {
            *at = s->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

/* Under the registry's lock, so that a fork in another thread sees the lock or no lock,
 * never a lock it would take and then not release. */
static void registry_set_lock(struct seed_source *s, pthread_mutex_t *lock)
{
    pthread_mutex_lock(&registry_lock);
    s->lock = lock;
    pthread_mutex_unlock(&registry_lock);
}

static void registry_add_provider(struct provider *p)
{
    pthread_mutex_lock(&registry_lock);
    p->next = registry;
    registry = p;
    pthread_mutex_unlock(&registry_lock);
}

static void registry_remove_provider(struct provider *p)
{
    pthread_mutex_lock(&registry_lock);
    for (struct provider **at = &registry; *at; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

/* Waits until no seed is busy, and then a little longer: the thread that cleared the last
 * seed is still inside OpenSSL's DRBG, about to release its locks. At most until the busy
 * seeds' timeouts and FORK_WAIT_MARGIN_MS have passed: a seed never given back (a caller's
 * bug) must not stop fork for ever. Holds no lock but busy's, which no seed holds long. */
static void fork_prepare(void)
{
    struct timespec until, grace = { 0, FORK_GRACE_NS };
    bool was_busy;

    pthread_mutex_lock(&busy.lock);
    until.tv_sec = (time_t)(busy.until_ns / 1000000000u);
    until.tv_nsec = (long)(busy.until_ns % 1000000000u);
    was_busy = busy.count > 0;
    while (busy.count > 0 && pthread_cond_timedwait(&busy.done, &busy.lock, &until) == 0)
        ;
    pthread_mutex_unlock(&busy.lock);
    if (was_busy)
        nanosleep(&grace, NULL);
}

static void conn_after_fork(struct daemon_conn *c)
{
    pthread_mutex_init(&c->lock, NULL);
    if (c->in_exchange) {
        randd_close(c->daemon);
        c->daemon = NULL;
        c->in_exchange = false;
    }
}

/* The child's one thread: every lock made afresh, whoever held it in the parent. A
 * connection caught mid-exchange may be half-updated, and a reply may be on its way to it:
 * dropped (librandd leaves the parent's socket open in the parent). */
static void fork_child(void)
{
    pthread_mutex_init(&busy.lock, NULL);
    init_busy_done();
    busy.count = 0;
    pthread_mutex_init(&registry_lock, NULL);
    for (struct provider *p = registry; p; p = p->next) {
        conn_after_fork(&p->ordinary);
        conn_after_fork(&p->modes);
        for (struct seed_source *s = p->sources; s; s = s->next)
            if (s->lock)
                pthread_mutex_init(s->lock, NULL);
    }
}

/* Once per process (per load of randd.so: glibc drops the handlers when it is unloaded). */
static void register_atfork(void)
{
    if ((atfork_err = init_busy_done()) == 0)
        atfork_err = pthread_atfork(fork_prepare, NULL, fork_child);
}

/* --- the provider ------------------------------------------------------------------------ */

static const OSSL_ALGORITHM rands[] = {
    { "RANDD", "provider=randd", seed_source_functions,
      "randd's health-tested entropy as OpenSSL's seed source" },
    { NULL, NULL, NULL, NULL },
};

static const OSSL_ITEM reason_strings[] = {
    { R_DAEMON_UNAVAILABLE, "randd could not give a seed" },
    { R_KERNEL_FAILED, "the kernel could not give a seed" },
    { R_NOT_INSTANTIATED, "seed source not instantiated" },
    { R_STRENGTH_TOO_HIGH, "strength above what randd offers" },
    { R_SEED_LENGTH, "seed length out of range" },
    { R_HAS_PARENT, "seed source given a parent" },
    { R_BAD_CONFIG, "bad randd provider configuration" },
    { R_OUT_OF_MEMORY, "out of memory" },
    { R_NO_PREDICTION_RESISTANCE, "randd could not give a prediction-resistant seed" },
    { 0, NULL },
};

static OSSL_FUNC_provider_teardown_fn provider_teardown;
static OSSL_FUNC_provider_gettable_params_fn provider_gettable_params;
static OSSL_FUNC_provider_get_params_fn provider_get_params;
static OSSL_FUNC_provider_query_operation_fn provider_query_operation;
static OSSL_FUNC_provider_get_reason_strings_fn provider_reason_strings;

static void provider_teardown(void *provctx)
{
    struct provider *p = provctx;

    registry_remove_provider(p);
    randd_close(p->ordinary.daemon);
    randd_close(p->modes.daemon);
    pthread_mutex_destroy(&p->ordinary.lock);
    pthread_mutex_destroy(&p->modes.lock);
    free(p);
}

static const OSSL_PARAM *provider_gettable_params(void *provctx)
{
    static const OSSL_PARAM gettable[] = {
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, NULL, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, NULL, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, NULL, 0),
        OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, NULL),
        OSSL_PARAM_END,
    };

    (void)provctx;
    return gettable;
}

/* What `openssl list -providers -verbose` shows. */
static int provider_get_params(void *provctx, OSSL_PARAM params[])
{
    OSSL_PARAM *p;

    (void)provctx;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME)) &&
        !OSSL_PARAM_set_utf8_ptr(p, "randd seed source"))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION)) &&
        !OSSL_PARAM_set_utf8_ptr(p, RANDD_VERSION))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO)) &&
        !OSSL_PARAM_set_utf8_ptr(p, "randd " RANDD_VERSION ", " OPENSSL_VERSION_TEXT))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS)) && !OSSL_PARAM_set_int(p, 1))
        return 0;
    return 1;
}

static const OSSL_ALGORITHM *provider_query_operation(void *provctx, int operation_id,
                                                      int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    return operation_id == OSSL_OP_RAND ? rands : NULL;
}

static const OSSL_ITEM *provider_reason_strings(void *provctx)
{
    (void)provctx;
    return reason_strings;
}

static const OSSL_DISPATCH provider_functions[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))provider_teardown },
    { OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))provider_gettable_params },
    { OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))provider_get_params },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))provider_query_operation },
    { OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, (void (*)(void))provider_reason_strings },
    { 0, NULL },
};

static void take_error_functions(struct provider *p, const OSSL_DISPATCH *in)
{
    for (; in && in->function_id; in++) {
        if (in->function_id == OSSL_FUNC_CORE_NEW_ERROR)
            p->new_error = OSSL_FUNC_core_new_error(in);
        else if (in->function_id == OSSL_FUNC_CORE_SET_ERROR_DEBUG)
            p->set_error_debug = OSSL_FUNC_core_set_error_debug(in);
        else if (in->function_id == OSSL_FUNC_CORE_VSET_ERROR)
            p->vset_error = OSSL_FUNC_core_vset_error(in);
    }
}

/* The only symbol randd.so exports (provider/randd.map; the rest is built hidden). Reads
 * the configuration; does not connect: that waits for the first seed. */
__attribute__((visibility("default")))
int OSSL_provider_init(const OSSL_CORE_HANDLE *core, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    struct provider *p = calloc(1, sizeof(*p));

    if (!p)
        return 0;
    p->core = core;
    take_error_functions(p, in);
    read_settings(p, in);
    /* Without the fork handlers a threaded program's child could hang: no provider. */
    if (pthread_once(&atfork_once, register_atfork) != 0 || atfork_err ||
        pthread_mutex_init(&p->ordinary.lock, NULL) != 0) {
        free(p);
        return 0;
    }
    if (pthread_mutex_init(&p->modes.lock, NULL) != 0) {
        pthread_mutex_destroy(&p->ordinary.lock);
        free(p);
        return 0;
    }
    atomic_init(&p->fallback_logged, false);
    atomic_init(&p->hung_until_ns, 0);
    registry_add_provider(p);
    *out = provider_functions;
    *provctx = p;
    return 1;
}
