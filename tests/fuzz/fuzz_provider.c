/* libFuzzer: randd.so's provider (provider/randd_provider.c, linked in) started through
 * OSSL_provider_init under a core the harness plays, as libcrypto starts it, and its seed
 * source driven through the dispatch tables with arbitrary sequences, sizes and strengths,
 * against a fake daemon on a Unix socket that answers what the input says. Holds each call to
 * the contract of <openssl/core_dispatch.h> and provider-rand(7ssl): 0 or 1 returned, an
 * error raised with every failed seed, generate never writing past outlen and leaving a
 * failed buffer untouched or wiped, get_seed within [min_len, max_len], lock and unlock
 * balanced, no call waiting past the timeout (a leaked lock hangs: the watchdog aborts),
 * and nothing leaked once everything is freed (LeakSanitizer).
 *
 * Input: 4 bytes choosing the settings, 2 bytes (little-endian) of the daemon's script's
 * length, the script, then the calls. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SCRIPT   4096
#define MAX_CALLS    64
#define MAX_CONTEXTS 4
#define MAX_OUT      (3 * RANDD_MAX_SEED + 100)   /* several SEED requests, pipelined */
#define WATCHDOG_S   20       /* far past any timeout below: only a hang reaches it */

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* --- the fake daemon ---------------------------------------------------------------------
 * One thread, one connection at a time (the provider keeps one for ordinary seeds and one
 * for prediction-resistant ones: while one is served, the other's requests time out, which
 * the contract allows: the timeout bounds them). Each request it reads takes
 * the script's next action byte: answer OK with the bytes asked, an error status, raw bytes,
 * close, or hang (answer nothing until the client gives up). With the script spent it
 * closes every connection. */

enum action { OK_REPLY, ERROR_REPLY = 4, RAW_BYTES, CLOSE, HANG, ACTIONS };

static struct {
    char dir[64], path[108], absent[128];
    int listen_fd, wake[2];
    pthread_mutex_t mu;
    pthread_cond_t idle_cv;
    bool busy;                        /* serving a connection */
    uint8_t script[MAX_SCRIPT];
    size_t script_len, script_at;
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER, .idle_cv = PTHREAD_COND_INITIALIZER };

/* The script's next byte, or -1 when it is spent. */
static int script_next(void)
{
    int b = -1;

    pthread_mutex_lock(&fake.mu);
    if (fake.script_at < fake.script_len)
        b = fake.script[fake.script_at++];
    pthread_mutex_unlock(&fake.mu);
    return b;
}

static bool read_exact(int fd, void *buf, size_t n)
{
    for (uint8_t *p = buf; n > 0;) {
        ssize_t got = read(fd, p, n);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n)
{
    for (const uint8_t *p = buf; n > 0;) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static bool reply(int fd, int status, uint8_t fill, size_t len)
{
    static uint8_t frame[RANDD_HEADER_BYTES + RANDD_MAX_SEED];
    struct randd_header h = { RANDD_PROTOCOL_VERSION, (uint8_t)status, 0, (uint32_t)len };

    randd_header_encode(frame, &h);
    memset(frame + RANDD_HEADER_BYTES, fill, len);
    return write_all(fd, frame, RANDD_HEADER_BYTES + len);
}

/* One request read and answered as the script says. False: close the connection. */
static bool serve_one(int fd)
{
    uint8_t head[RANDD_HEADER_BYTES], body[64], raw[256];
    struct randd_header h;
    struct randd_request req = { 0 };
    char why[160];
    int action, a, b;

    if (!read_exact(fd, head, sizeof(head)))
        return false;
    randd_header_decode(head, &h);
    if (h.length > sizeof(body) || !read_exact(fd, body, h.length))
        return false;
    if (randd_parse_request(&h, body, &req, why, sizeof(why)) != RANDD_OK ||
        req.op != RANDD_OP_SEED)
        abort();                      /* the provider sends valid SEED requests only */
    if ((action = script_next()) < 0)
        return false;
    switch (action % ACTIONS) {
    case ERROR_REPLY:
        a = script_next(), b = script_next();
        return reply(fd, a < 0 ? RANDD_NOT_READY : a, 'm', b < 0 ? 0 : (size_t)b % 80);
    case RAW_BYTES:
        a = script_next();
        for (b = 0; a > 0 && b < a; b++) {
            int c = script_next();

            if (c < 0)
                break;
            raw[b] = (uint8_t)c;
        }
        return write_all(fd, raw, (size_t)b);
    case CLOSE:
        return false;
    case HANG:
        while (read(fd, raw, sizeof(raw)) > 0)
            ;                         /* until the client times out and closes */
        return false;
    default:                          /* OK_REPLY, most actions: seeds get through */
        /* Bytes never 0 nor 0xa5, so that the harness tells them from its own. */
        return reply(fd, RANDD_OK, (uint8_t)(0x80 | action), req.n);
    }
}

static void *fake_daemon(void *arg)
{
    struct pollfd fds[2] = { { fake.wake[0], POLLIN, 0 }, { fake.listen_fd, POLLIN, 0 } };

    (void)arg;
    while (poll(fds, 2, -1) >= 0 && !fds[0].revents) {
        int fd;

        if (!fds[1].revents)
            continue;
        /* Taken under the lock with busy set, so the harness never sees a connection
         * neither pending nor served. */
        pthread_mutex_lock(&fake.mu);
        fd = accept4(fake.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        fake.busy = fd >= 0;
        pthread_mutex_unlock(&fake.mu);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFL, 0);        /* blocking reads: the client writes or closes */
        while (serve_one(fd))
            ;
        close(fd);
        pthread_mutex_lock(&fake.mu);
        fake.busy = false;
        pthread_cond_broadcast(&fake.idle_cv);
        pthread_mutex_unlock(&fake.mu);
    }
    return NULL;
}

/* After the provider closed its connection: the daemon idle, nothing left for it to accept,
 * so the next input's script is not read for this one's requests. */
static void fake_wait_idle(void)
{
    uint64_t deadline = now_ms() + WATCHDOG_S * 1000u;

    pthread_mutex_lock(&fake.mu);
    for (;;) {
        struct pollfd p = { fake.listen_fd, POLLIN, 0 };

        if (!fake.busy && poll(&p, 1, 0) == 0)
            break;
        if (now_ms() > deadline) {
            fprintf(stderr, "fuzz_provider: the fake daemon still serves a connection the "
                    "provider should have closed\n");
            abort();
        }
        pthread_mutex_unlock(&fake.mu);
        usleep(200);
        pthread_mutex_lock(&fake.mu);
    }
    pthread_mutex_unlock(&fake.mu);
}

static void fake_start(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    pthread_t thread;

    strcpy(fake.dir, "/tmp/fuzz-provider-XXXXXX");
    if (!mkdtemp(fake.dir))
        abort();
    snprintf(fake.path, sizeof(fake.path), "%s/randd.sock", fake.dir);
    snprintf(fake.absent, sizeof(fake.absent), "%s/absent.sock", fake.dir);
    strcpy(sa.sun_path, fake.path);
    fake.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fake.listen_fd < 0 || bind(fake.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fake.listen_fd, 16) < 0 || pipe2(fake.wake, O_CLOEXEC) < 0 ||
        pthread_create(&thread, NULL, fake_daemon, NULL) != 0)
        abort();
    pthread_detach(thread);
}

/* --- the watchdog: no call may hang -------------------------------------------------------
 * Every timeout below is at most 10 ms, so a call that takes WATCHDOG_S seconds is blocked
 * on a lock that a failed call leaked (or a wait without a deadline). */

static _Atomic uint64_t call_deadline_ms;      /* 0: no call in progress */
static _Atomic(const char *) call_name;

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        uint64_t d = atomic_load(&call_deadline_ms);

        if (d && now_ms() > d) {
            fprintf(stderr, "fuzz_provider: %s has not returned after %d s: a leaked lock?\n",
                    atomic_load(&call_name), WATCHDOG_S);
            abort();
        }
        usleep(100000);
    }
    return NULL;
}

static void call_begin(const char *name)
{
    atomic_store(&call_name, name);
    atomic_store(&call_deadline_ms, now_ms() + WATCHDOG_S * 1000u);
}

static void call_end(void)
{
    atomic_store(&call_deadline_ms, 0);
}

/* --- the core the provider is started under ---------------------------------------------- */

static const char *setting_socket, *setting_timeout, *setting_fallback, *setting_log;
static int errors_raised;
static char last_error[512];

static int core_get_params(const OSSL_CORE_HANDLE *core, OSSL_PARAM params[])
{
    (void)core;
    for (OSSL_PARAM *p = params; p->key; p++) {
        const char *v = !strcmp(p->key, "socket") ? setting_socket :
                        !strcmp(p->key, "timeout") ? setting_timeout :
                        !strcmp(p->key, "fallback") ? setting_fallback :
                        !strcmp(p->key, "log") ? setting_log : NULL;

        if (v && !OSSL_PARAM_set_utf8_ptr(p, v))
            return 0;
    }
    return 1;
}

static void core_new_error(const OSSL_CORE_HANDLE *core)
{
    (void)core;
    errors_raised++;
}

static void core_set_error_debug(const OSSL_CORE_HANDLE *core, const char *file, int line,
                                 const char *func)
{
    (void)core;
    if (!file || !func || line <= 0)
        abort();
}

/* Formats the message as OpenSSL's core would: a bad format or argument shows here. */
static void core_vset_error(const OSSL_CORE_HANDLE *core, uint32_t reason, const char *fmt,
                            va_list args)
{
    (void)core;
    if (reason == 0 || !fmt)
        abort();
    vsnprintf(last_error, sizeof(last_error), fmt, args);
}

static const OSSL_DISPATCH core_functions[] = {
    { OSSL_FUNC_CORE_GET_PARAMS, (void (*)(void))core_get_params },
    { OSSL_FUNC_CORE_NEW_ERROR, (void (*)(void))core_new_error },
    { OSSL_FUNC_CORE_SET_ERROR_DEBUG, (void (*)(void))core_set_error_debug },
    { OSSL_FUNC_CORE_VSET_ERROR, (void (*)(void))core_vset_error },
    { 0, NULL },
};

/* The settings: most inputs get a working provider on the fake daemon; the rest a socket
 * that is not there or too long, and values that are wrong. Timeouts are short so that a
 * hang costs little. */
static void choose_settings(const uint8_t c[4])
{
    static char overlong[200];
    static const char *const timeouts[] = { NULL, "1", "2", "5", "10", "0", "60001", "5ms",
                                            "-1", "" };
    static const char *const fallbacks[] = { NULL, "kernel", "none", "kernal", "" };
    static const char *const logs[] = { "none", "none", "none", NULL, "stderr", "journal" };

    memset(overlong, 'x', sizeof(overlong) - 1);
    switch (c[0] % 8) {
    case 5: setting_socket = NULL; break;              /* $RANDD_SOCKET: absent */
    case 6: setting_socket = fake.absent; break;
    case 7: setting_socket = c[0] & 0x80 ? overlong : ""; break;
    default: setting_socket = fake.path; break;
    }
    /* Never the default (1 s): a hang would make the input slow. */
    setting_timeout = timeouts[c[1] % (sizeof(timeouts) / sizeof(timeouts[0]))];
    if (!setting_timeout)
        setting_timeout = "3";
    setting_fallback = fallbacks[c[2] % (sizeof(fallbacks) / sizeof(fallbacks[0]))];
    setting_log = logs[c[3] % (sizeof(logs) / sizeof(logs[0]))];
}

/* Whether a working provider must give a seed whatever the daemon does. */
static bool seeds_always(void)
{
    bool ok_timeout = !setting_timeout ||
                      (*setting_timeout && strspn(setting_timeout, "0123456789") ==
                       strlen(setting_timeout) && atoi(setting_timeout) >= 1 &&
                       atoi(setting_timeout) <= 60000);

    return ok_timeout && (!setting_fallback || !strcmp(setting_fallback, "kernel")) &&
           (!setting_log || !strcmp(setting_log, "none") || !strcmp(setting_log, "stderr")) &&
           (!setting_socket || strlen(setting_socket) < 108);
}

/* --- the provider, through its dispatch tables ------------------------------------------ */

static struct {
    void *provctx;
    OSSL_FUNC_provider_teardown_fn *teardown;
    OSSL_FUNC_provider_gettable_params_fn *gettable_params;
    OSSL_FUNC_provider_get_params_fn *get_params;
    OSSL_FUNC_provider_query_operation_fn *query_operation;
    OSSL_FUNC_provider_get_reason_strings_fn *reason_strings;
    OSSL_FUNC_rand_newctx_fn *newctx;
    OSSL_FUNC_rand_freectx_fn *freectx;
    OSSL_FUNC_rand_instantiate_fn *instantiate;
    OSSL_FUNC_rand_uninstantiate_fn *uninstantiate;
    OSSL_FUNC_rand_generate_fn *generate;
    OSSL_FUNC_rand_reseed_fn *reseed;
    OSSL_FUNC_rand_get_seed_fn *get_seed;
    OSSL_FUNC_rand_clear_seed_fn *clear_seed;
    OSSL_FUNC_rand_enable_locking_fn *enable_locking;
    OSSL_FUNC_rand_lock_fn *lock;
    OSSL_FUNC_rand_unlock_fn *unlock;
    OSSL_FUNC_rand_gettable_ctx_params_fn *gettable_ctx_params;
    OSSL_FUNC_rand_get_ctx_params_fn *get_ctx_params;
    OSSL_FUNC_rand_verify_zeroization_fn *verify_zeroization;
} prov;

static bool start_provider(void)
{
    const OSSL_DISPATCH *out = NULL, *d;
    const OSSL_ALGORITHM *alg;
    int no_cache = -1;

    memset(&prov, 0, sizeof(prov));
    if (OSSL_provider_init((const OSSL_CORE_HANDLE *)&prov, core_functions, &out,
                           &prov.provctx) != 1)
        return false;                 /* out of memory: nothing to hold it to */
    for (d = out; d->function_id; d++)
        switch (d->function_id) {
        case OSSL_FUNC_PROVIDER_TEARDOWN: prov.teardown = OSSL_FUNC_provider_teardown(d); break;
        case OSSL_FUNC_PROVIDER_GETTABLE_PARAMS:
            prov.gettable_params = OSSL_FUNC_provider_gettable_params(d);
            break;
        case OSSL_FUNC_PROVIDER_GET_PARAMS:
            prov.get_params = OSSL_FUNC_provider_get_params(d);
            break;
        case OSSL_FUNC_PROVIDER_QUERY_OPERATION:
            prov.query_operation = OSSL_FUNC_provider_query_operation(d);
            break;
        case OSSL_FUNC_PROVIDER_GET_REASON_STRINGS:
            prov.reason_strings = OSSL_FUNC_provider_get_reason_strings(d);
            break;
        }
    if (!prov.teardown || !prov.query_operation ||
        !(alg = prov.query_operation(prov.provctx, OSSL_OP_RAND, &no_cache)) ||
        no_cache != 0 || !alg->algorithm_names || alg[1].algorithm_names)
        abort();
    for (d = alg->implementation; d->function_id; d++)
        switch (d->function_id) {
        case OSSL_FUNC_RAND_NEWCTX: prov.newctx = OSSL_FUNC_rand_newctx(d); break;
        case OSSL_FUNC_RAND_FREECTX: prov.freectx = OSSL_FUNC_rand_freectx(d); break;
        case OSSL_FUNC_RAND_INSTANTIATE:
            prov.instantiate = OSSL_FUNC_rand_instantiate(d);
            break;
        case OSSL_FUNC_RAND_UNINSTANTIATE:
            prov.uninstantiate = OSSL_FUNC_rand_uninstantiate(d);
            break;
        case OSSL_FUNC_RAND_GENERATE: prov.generate = OSSL_FUNC_rand_generate(d); break;
        case OSSL_FUNC_RAND_RESEED: prov.reseed = OSSL_FUNC_rand_reseed(d); break;
        case OSSL_FUNC_RAND_GET_SEED: prov.get_seed = OSSL_FUNC_rand_get_seed(d); break;
        case OSSL_FUNC_RAND_CLEAR_SEED: prov.clear_seed = OSSL_FUNC_rand_clear_seed(d); break;
        case OSSL_FUNC_RAND_ENABLE_LOCKING:
            prov.enable_locking = OSSL_FUNC_rand_enable_locking(d);
            break;
        case OSSL_FUNC_RAND_LOCK: prov.lock = OSSL_FUNC_rand_lock(d); break;
        case OSSL_FUNC_RAND_UNLOCK: prov.unlock = OSSL_FUNC_rand_unlock(d); break;
        case OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS:
            prov.gettable_ctx_params = OSSL_FUNC_rand_gettable_ctx_params(d);
            break;
        case OSSL_FUNC_RAND_GET_CTX_PARAMS:
            prov.get_ctx_params = OSSL_FUNC_rand_get_ctx_params(d);
            break;
        case OSSL_FUNC_RAND_VERIFY_ZEROIZATION:
            prov.verify_zeroization = OSSL_FUNC_rand_verify_zeroization(d);
            break;
        }
    /* A seed source must have these (provider-rand(7ssl)), and the pairs go together. */
    if (!prov.newctx || !prov.freectx || !prov.instantiate || !prov.generate ||
        !prov.get_seed != !prov.clear_seed || !prov.lock != !prov.unlock ||
        (prov.lock && !prov.enable_locking) || !prov.get_ctx_params)
        abort();
    return true;
}

/* --- the calls ---------------------------------------------------------------------------- */

struct input {
    const uint8_t *p;
    size_t left;
};

static uint8_t take8(struct input *in)
{
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static uint32_t take32(struct input *in)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++)
        v = v << 8 | take8(in);
    return v;
}

/* Sizes and strengths as a caller might pass them: mostly near the limits, sometimes any. */
static size_t take_size(struct input *in)
{
    static const size_t special[] = { 0, 1, 16, 31, 32, 33, 47, 48, 64, 4095, 4096, 4097,
                                      8192, MAX_OUT, SIZE_MAX, SIZE_MAX / 2 };
    uint8_t how = take8(in);
    size_t v;

    if (how < 128)
        return special[how % (sizeof(special) / sizeof(special[0]))];
    v = how < 192 ? take8(in) : take32(in);
    return v << (how < 192 ? 8 : 24) | take8(in);
}

static unsigned take_strength(struct input *in)
{
    static const unsigned special[] = { 0, 1, 112, 128, 192, 255, 256, 257, 384, 512,
                                        UINT32_MAX, 1u << 31 };
    uint8_t how = take8(in);

    return how < 200 ? special[how % (sizeof(special) / sizeof(special[0]))] : take32(in);
}

struct context {
    void *ctx;
    bool locked;                      /* by us, through the lock function */
    bool ready;                       /* instantiated with a strength it offers */
    unsigned char *seed;              /* from get_seed, not yet given to clear_seed */
    size_t seed_len;
    bool pr_pending;                  /* a reseed asked for prediction resistance: the next
                                       * request is in that mode, which never falls back */
};

static struct context contexts[MAX_CONTEXTS];

static void check_01(int rc, const char *what)
{
    if (rc != 0 && rc != 1) {
        fprintf(stderr, "fuzz_provider: %s returned %d, not 0 or 1\n", what, rc);
        abort();
    }
}

/* A failed seeding call says why: OpenSSL shows the error queue to the program. */
static void check_raised(int before, const char *what)
{
    if (errors_raised == before) {
        fprintf(stderr, "fuzz_provider: %s failed without raising an error\n", what);
        abort();
    }
}

static void clear_seed(struct context *c)
{
    if (!c->seed)
        return;
    call_begin("clear_seed");
    prov.clear_seed(c->ctx, c->seed, c->seed_len);
    call_end();
    c->seed = NULL;
}

static void do_generate(struct context *c, struct input *in)
{
    size_t outlen = take_size(in) % (MAX_OUT + 1), adin_len = take8(in) % 64;
    unsigned strength = take_strength(in);
    int pr = take8(in) & 1, before = errors_raised, rc;
    unsigned char adin[64] = { 0 };
    unsigned char *out = malloc(outlen ? outlen : 1);    /* exactly outlen: ASan guards it */

    if (!out)
        abort();
    memset(out, 0xa5, outlen);
    call_begin("generate");
    rc = prov.generate(c->ctx, out, outlen, strength, pr, adin, adin_len);
    call_end();
    check_01(rc, "generate");
    pr |= c->pr_pending;              /* the mode the provider asked in */
    if (rc == 1 && pr)
        c->pr_pending = false;
    if (rc == 0) {
        check_raised(before, "generate");
        /* Untouched (refused before any byte came) or wiped: never part of a seed. */
        bool untouched = true, wiped = true;

        for (size_t i = 0; i < outlen; i++)
            untouched &= out[i] == 0xa5, wiped &= out[i] == 0;
        if (!untouched && !wiped) {
            fprintf(stderr, "fuzz_provider: a failed generate left bytes in the buffer\n");
            abort();
        }
    } else if (!c->ready || strength > 256) {
        fprintf(stderr, "fuzz_provider: generate gave bytes (ready %d, strength %u)\n",
                c->ready, strength);
        abort();
    }
    /* Prediction resistance never falls back: the kernel is not a noise source. */
    if (rc == 0 && c->ready && strength <= 256 && !pr && seeds_always()) {
        fprintf(stderr, "fuzz_provider: generate failed with fallback = kernel: %s\n",
                last_error);
        abort();
    }
    free(out);
}

static void do_get_seed(struct context *c, struct input *in)
{
    int entropy = (int)take_strength(in), pr = take8(in) & 1, before = errors_raised;
    size_t min_len = take_size(in), max_len = take_size(in), n, need;
    unsigned char *seed = (unsigned char *)&prov, adin[sizeof(void *)] = { 0 };

    clear_seed(c);
    call_begin("get_seed");
    n = prov.get_seed(c->ctx, &seed, entropy, min_len, max_len, pr, adin, sizeof(adin));
    call_end();
    pr |= c->pr_pending;
    if (n > 0 && pr)
        c->pr_pending = false;
    need = entropy > 0 ? ((size_t)entropy + 7) / 8 : 0;
    if (need < min_len)
        need = min_len;
    if (n == 0) {
        check_raised(before, "get_seed");
        if (seed != (unsigned char *)&prov)
            abort();                  /* *pout is the caller's until there is a seed */
        if (c->ready && entropy <= 384 && need > 0 && need <= max_len &&
            need <= RANDD_MAX_SEED && !pr && seeds_always()) {
            fprintf(stderr, "fuzz_provider: get_seed failed with fallback = kernel: %s\n",
                    last_error);
            abort();
        }
        return;
    }
    if (!c->ready || !seed || n < need || n > max_len || n > RANDD_MAX_SEED ||
        entropy > 384) {      /* 1.5 x the strength: entropy and nonce */
        fprintf(stderr, "fuzz_provider: get_seed gave %zu bytes (entropy %d, min %zu, max "
                "%zu, ready %d)\n", n, entropy, min_len, max_len, c->ready);
        abort();
    }
    memset(seed, 0, n);               /* all of it is ours to use: ASan checks */
    c->seed = seed;
    c->seed_len = n;
}

static void do_get_ctx_params(struct context *c, struct input *in)
{
    static const char *const keys[] = { OSSL_RAND_PARAM_STATE, OSSL_RAND_PARAM_STRENGTH,
                                        OSSL_RAND_PARAM_MAX_REQUEST, "unknown" };
    static const unsigned types[] = { OSSL_PARAM_INTEGER, OSSL_PARAM_UNSIGNED_INTEGER,
                                      OSSL_PARAM_UTF8_STRING, OSSL_PARAM_OCTET_STRING,
                                      OSSL_PARAM_UTF8_PTR, OSSL_PARAM_REAL };
    static const size_t sizes[] = { 0, 1, 2, 4, 8, 16 };
    uint64_t storage[4][2];
    OSSL_PARAM params[5];
    size_t n = take8(in) % 5;
    int rc;

    memset(storage, 0, sizeof(storage));
    for (size_t i = 0; i < n; i++) {
        uint8_t k = take8(in), t = take8(in);

        params[i] = (OSSL_PARAM){ keys[k % 4], types[t % 6], storage[i],
                                  sizes[(t >> 3) % 6], OSSL_PARAM_UNMODIFIED };
        if (types[t % 6] == OSSL_PARAM_UTF8_PTR)
            params[i].data_size = 0;
    }
    params[n] = (OSSL_PARAM)OSSL_PARAM_END;
    call_begin("get_ctx_params");
    rc = prov.get_ctx_params(c->ctx, take8(in) == 255 ? NULL : params);
    call_end();
    check_01(rc, "get_ctx_params");
    for (size_t i = 0; i < n && rc == 1; i++)
        if (params[i].return_size != OSSL_PARAM_UNMODIFIED &&
            params[i].return_size > sizeof(storage[i]))
            abort();
}

static void do_provider_calls(struct input *in)
{
    const char *name = NULL, *version = NULL, *buildinfo = NULL;
    int status = -1, no_cache;
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, (char **)&name, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, (char **)&version, 0),
        OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, (char **)&buildinfo, 0),
        OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, &status),
        OSSL_PARAM_END,
    };
    const OSSL_ITEM *reasons;
    int op = (int)take32(in);

    if (prov.query_operation(prov.provctx, op, &no_cache) && op != OSSL_OP_RAND)
        abort();
    if (prov.gettable_params && !prov.gettable_params(prov.provctx))
        abort();
    if (prov.get_params && (prov.get_params(prov.provctx, params) != 1 || !name ||
                            !version || !buildinfo || status != 1))
        abort();
    if (prov.reason_strings && (reasons = prov.reason_strings(prov.provctx)))
        for (; reasons->id; reasons++)
            if (!reasons->ptr || !*(const char *)reasons->ptr)
                abort();
}

/* One call, chosen by the input, made only as OpenSSL would make it: a context is locked by
 * us at most once, unlocked only when locked, freed only when unlocked and its seed cleared. */
static void one_call(struct input *in)
{
    uint8_t op = take8(in);
    struct context *c = &contexts[take8(in) % MAX_CONTEXTS];
    int rc, pr, before = errors_raised;

    if (!c->ctx && op % 16 != 15) {
        call_begin("newctx");
        c->ctx = prov.newctx(prov.provctx, NULL, NULL);
        call_end();
        if (!c->ctx)
            abort();
        c->ready = false;
        c->pr_pending = false;
        return;
    }
    switch (op % 16) {
    case 0: {                         /* a seed source takes no parent */
        void *bad;

        call_begin("newctx");
        bad = prov.newctx(prov.provctx, c->ctx ? c->ctx : &prov, NULL);
        call_end();
        if (bad)
            abort();
        check_raised(before, "newctx with a parent");
        break;
    }
    case 1:
        if (c->locked)
            break;
        clear_seed(c);
        call_begin("freectx");
        prov.freectx(c->ctx);
        call_end();
        c->ctx = NULL;
        break;
    case 2: {
        unsigned strength = take_strength(in);
        unsigned char pstr[32] = { 0 };

        call_begin("instantiate");
        rc = prov.instantiate(c->ctx, strength, take8(in) & 1, pstr, take8(in) % 33, NULL);
        call_end();
        check_01(rc, "instantiate");
        if (rc != (strength <= 256))
            abort();
        if (rc)
            c->ready = true;
        else
            check_raised(before, "instantiate");
        break;
    }
    case 3:
        if (!prov.uninstantiate)
            break;
        call_begin("uninstantiate");
        rc = prov.uninstantiate(c->ctx);
        call_end();
        check_01(rc, "uninstantiate");
        if (rc)
            c->ready = false;
        break;
    case 4: case 5: case 6:
        do_generate(c, in);
        break;
    case 7:
        if (!prov.reseed)
            break;
        pr = take8(in) & 1;
        call_begin("reseed");
        rc = prov.reseed(c->ctx, pr, NULL, 0, NULL, 0);
        call_end();
        check_01(rc, "reseed");
        if (rc == 0)
            check_raised(before, "reseed");
        else if (pr)
            c->pr_pending = true;
        break;
    case 8: case 9:
        do_get_seed(c, in);
        break;
    case 10:
        clear_seed(c);
        break;
    case 11:
        if (!prov.enable_locking)
            break;
        call_begin("enable_locking");
        rc = prov.enable_locking(c->ctx);
        call_end();
        check_01(rc, "enable_locking");
        break;
    case 12:
        if (!prov.lock)
            break;
        call_begin(c->locked ? "unlock" : "lock");
        if (c->locked) {
            prov.unlock(c->ctx);
            c->locked = false;
        } else {
            rc = prov.lock(c->ctx);
            check_01(rc, "lock");
            c->locked = rc == 1;
        }
        call_end();
        break;
    case 13:
        do_get_ctx_params(c, in);
        break;
    case 14:
        if (prov.gettable_ctx_params) {
            const OSSL_PARAM *g = prov.gettable_ctx_params(c->ctx, prov.provctx);

            for (size_t i = 0; g && g[i].key; i++)
                if (!*g[i].key)
                    abort();
        }
        if (prov.verify_zeroization)
            check_01(prov.verify_zeroization(c->ctx), "verify_zeroization");
        break;
    default:
        do_provider_calls(in);
        break;
    }
}

/* Everything given back: each context unlocked, its seed cleared, freed; then the provider.
 * Before that, a seed on a fresh context and every enabled lock taken once: a lock a failed
 * call leaked would hang here (the watchdog). */
static void finish(void)
{
    void *ctx;
    unsigned char out[32];

    for (size_t i = 0; i < MAX_CONTEXTS; i++) {
        struct context *c = &contexts[i];

        if (!c->ctx)
            continue;
        if (c->locked)
            prov.unlock(c->ctx);
        call_begin("lock at the end");
        if (prov.lock && prov.lock(c->ctx) == 1)
            prov.unlock(c->ctx);
        call_end();
        clear_seed(c);
        prov.freectx(c->ctx);
        memset(c, 0, sizeof(*c));
    }
    call_begin("a last generate");
    if ((ctx = prov.newctx(prov.provctx, NULL, NULL))) {
        if (prov.instantiate(ctx, 256, 0, NULL, 0, NULL) == 1 &&
            prov.generate(ctx, out, sizeof(out), 256, 0, NULL, 0) != 1 && seeds_always()) {
            fprintf(stderr, "fuzz_provider: the last generate failed: %s\n", last_error);
            abort();
        }
        prov.freectx(ctx);
    }
    call_end();
    call_begin("teardown");
    prov.teardown(prov.provctx);
    call_end();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool started;
    struct input in;
    size_t script_len;

    if (!started) {
        pthread_t thread;

        signal(SIGPIPE, SIG_IGN);
        fake_start();
        setenv("RANDD_SOCKET", fake.absent, 1);
        if (pthread_create(&thread, NULL, watchdog, NULL) != 0)
            abort();
        pthread_detach(thread);
        started = true;
    }
    if (size < 6)
        return 0;
    choose_settings(data);
    script_len = (size_t)data[4] | (size_t)data[5] << 8;
    in = (struct input){ data + 6, size - 6 };
    if (script_len > in.left)
        script_len = in.left;
    if (script_len > MAX_SCRIPT)
        script_len = MAX_SCRIPT;
    pthread_mutex_lock(&fake.mu);
    memcpy(fake.script, in.p, script_len);
    fake.script_len = script_len;
    fake.script_at = 0;
    pthread_mutex_unlock(&fake.mu);
    in.p += script_len;
    in.left -= script_len;

    errors_raised = 0;
    if (!start_provider())
        return 0;
    for (int i = 0; i < MAX_CALLS && in.left > 0; i++)
        one_call(&in);
    finish();
    fake_wait_idle();
    return 0;
}
