/* The config parser: one table of keys with their type, limits, default and whether a reload
 * applies them, and a small line parser in front of it. Messages follow
 * `file:line: key: what is wrong`. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <arpa/inet.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "randen.h"

#define MAX_LINE 1024

enum key_type { KEY_BOOL, KEY_UINT, KEY_SIZE, KEY_PATH, KEY_MODE, KEY_GROUP, KEY_USER,
                KEY_LOOPBACK, KEY_ENGINE, KEY_CIPHER, KEY_JITTER, KEY_WORKERS, KEY_SHARE,
                KEY_SERVICE_MODE };

/* What a reload does with a key: apply it at once, or leave it for the next start (it named a
 * socket, a source or a user the daemon already opened or became). */
enum key_applies { LIVE, AT_RESTART };

struct key {
    const char *name;
    enum key_applies applies;
    enum key_type type;
    size_t offset;
    size_t size;                    /* of the field: strings' capacity */
    uint64_t min, max;
    const char *default_text;       /* parsed at start, so defaults obey the same rules */
};

#define FIELD(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)

static const struct key keys[] = {
    { "socket", AT_RESTART, KEY_PATH, FIELD(socket), 0, 0, "/run/randd/randd.sock" },
    { "mode", AT_RESTART, KEY_SERVICE_MODE, FIELD(mode), 0, 0, "default" },
    { "engine", AT_RESTART, KEY_ENGINE, FIELD(engine), 0, 0, "cymric" },
    { "cipher", AT_RESTART, KEY_CIPHER, FIELD(cipher), 0, 0, "auto" },
    { "cpu_source", AT_RESTART, KEY_BOOL, FIELD(cpu_source), 0, 0, "yes" },
    { "getrandom", AT_RESTART, KEY_BOOL, FIELD(getrandom), 0, 0, "yes" },
    { "hwrng", AT_RESTART, KEY_BOOL, FIELD(hwrng), 0, 0, "yes" },
    { "hwrng_device", AT_RESTART, KEY_PATH, FIELD(hwrng_device), 0, 0, "/dev/hwrng" },
    { "jitter", AT_RESTART, KEY_JITTER, FIELD(jitter), 0, 0, "auto" },
    { "jitter_oversampling", AT_RESTART, KEY_UINT, FIELD(jitter_oversampling), 1, 64, "4" },
    { "require_noise_source", LIVE, KEY_BOOL, FIELD(require_noise_source), 0, 0, "no" },
    { "reseed_interval", LIVE, KEY_UINT, FIELD(reseed_interval), 1, 86400, "60" },
    { "reseed_bytes", LIVE, KEY_SIZE, FIELD(reseed_bytes), 1ull << 20, 64ull << 30, "1G" },
    { "kernel_topup", AT_RESTART, KEY_BOOL, FIELD(kernel_topup), 0, 0, "yes" },
    { "kernel_topup_interval", LIVE, KEY_UINT, FIELD(kernel_topup_interval), 0, 86400, "300" },
    { "selftest_interval", LIVE, KEY_UINT, FIELD(selftest_interval), 0, 86400, "600" },
    { "socket_mode", AT_RESTART, KEY_MODE, FIELD(socket_mode), 0, 0777, "0666" },
    { "socket_group", AT_RESTART, KEY_GROUP, FIELD(socket_group), 0, 0, "" },
    { "max_clients", LIVE, KEY_UINT, FIELD(max_clients), 1, 65536, "1024" },
    { "max_clients_per_uid", LIVE, KEY_SHARE, FIELD(max_clients_per_uid), 1, 65536, "auto" },
    { "idle_timeout", LIVE, KEY_UINT, FIELD(idle_timeout), 0, 86400, "300" },
    { "trusted_group", LIVE, KEY_GROUP, FIELD(trusted_group), 0, 0, "" },
    { "user", AT_RESTART, KEY_USER, FIELD(user), 0, 0, "" },
    { "egd_socket", AT_RESTART, KEY_PATH, FIELD(egd_socket), 0, 0, "" },
    { "egd_listen", AT_RESTART, KEY_LOOPBACK, FIELD(egd_listen), 0, 0, "" },
    { "egd_idle_timeout", LIVE, KEY_UINT, FIELD(egd_idle_timeout), 0, 86400, "0" },
    { "egd_full_entropy", LIVE, KEY_BOOL, FIELD(egd_full_entropy), 0, 0, "no" },
    { "workers", AT_RESTART, KEY_WORKERS, FIELD(workers), 1, CONFIG_WORKERS_MAX, "1" },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* Older names a file may still use, each for the key it became. Set under both names, a key
 * is a duplicate like any other. */
static const struct { const char *old, *key; } old_names[] = {
    { "rdseed", "cpu_source" },     /* before the CPU source had one name on every CPU */
};

/* The old name of a key that has one (for messages), or its own. */
static const char *old_name_of(const struct key *k)
{
    for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
        if (!strcmp(old_names[i].key, k->name))
            return old_names[i].old;
    return k->name;
}

/* The key a name in a file stands for, or NULL. */
static const struct key *key_named(const char *name)
{
    for (size_t i = 0; i < sizeof(old_names) / sizeof(old_names[0]); i++)
        if (!strcmp(old_names[i].old, name))
            name = old_names[i].key;
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i].name, name))
            return &keys[i];
    return NULL;
}

/* Indexed by enum config_jitter. */
static const char *const jitter_names[] = { "auto", "yes", "no" };

/* Indexed by enum config_mode. */
static const char *const mode_names[] = { "default", "approved" };

static bool is_string(enum key_type type)
{
    return type == KEY_PATH || type == KEY_GROUP || type == KEY_USER || type == KEY_LOOPBACK;
}

bool config_key(size_t i, struct config_key_info *out)
{
    if (i >= NKEYS)
        return false;
    out->name = keys[i].name;
    out->default_text = keys[i].default_text;
    out->at_restart = keys[i].applies == AT_RESTART;
    out->quoted = is_string(keys[i].type) || keys[i].type == KEY_MODE ||
                  keys[i].type == KEY_ENGINE || keys[i].type == KEY_CIPHER ||
                  keys[i].type == KEY_JITTER || keys[i].type == KEY_SERVICE_MODE ||
                  keys[i].type == KEY_WORKERS || keys[i].type == KEY_SHARE;
    return true;
}

const char *config_value_text(const struct config *c, size_t i, char *buf, size_t len)
{
    const struct key *k = &keys[i];
    const char *field = (const char *)c + k->offset;

    switch (k->type) {
    case KEY_BOOL: snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false"); break;
    case KEY_UINT: snprintf(buf, len, "%u", *(const unsigned *)field); break;
    case KEY_WORKERS:
    case KEY_SHARE:
        if (*(const unsigned *)field == CONFIG_AUTO)
            snprintf(buf, len, "auto");
        else
            snprintf(buf, len, "%u", *(const unsigned *)field);
        break;
    case KEY_SIZE: snprintf(buf, len, "%" PRIu64, *(const uint64_t *)field); break;
    case KEY_MODE: snprintf(buf, len, "%04o", *(const unsigned *)field); break;
    case KEY_ENGINE:
        snprintf(buf, len, "%s", randd_engine_name(*(const enum randd_engine *)field));
        break;
    case KEY_CIPHER:
        if (*(const enum randd_stream_cipher *)field == CONFIG_AUTO)
            snprintf(buf, len, "auto");
        else
            snprintf(buf, len, "%s",
                     randd_stream_cipher_name(*(const enum randd_stream_cipher *)field));
        break;
    case KEY_JITTER:
        snprintf(buf, len, "%s", jitter_names[*(const enum config_jitter *)field]);
        break;
    case KEY_SERVICE_MODE:
        snprintf(buf, len, "%s", mode_names[*(const enum config_mode *)field]);
        break;
    case KEY_PATH:
    case KEY_GROUP:
    case KEY_USER:
    case KEY_LOOPBACK: snprintf(buf, len, "%.*s", (int)k->size, field); break;
    }
    return buf;
}

/* Strings compare up to their end: the bytes after it are whatever an earlier value left. */
static bool values_differ(const struct key *k, const struct config *a, const struct config *b)
{
    const char *fa = (const char *)a + k->offset, *fb = (const char *)b + k->offset;

    /* auto and the cipher it chose here are the same keystream: no restart would change it. */
    if (k->type == KEY_CIPHER)
        return config_cipher(a) != config_cipher(b);
    return is_string(k->type) ? strncmp(fa, fb, k->size) != 0 : memcmp(fa, fb, k->size) != 0;
}

bool config_pending_restart(const struct config *in_effect, const struct config *reread,
                            size_t i)
{
    return i < NKEYS && keys[i].applies == AT_RESTART &&
           values_differ(&keys[i], in_effect, reread);
}

unsigned config_workers(const struct config *c)
{
    cpu_set_t cpus;
    int n;

    if (c->workers != CONFIG_WORKERS_AUTO)
        return c->workers;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) < 0 || (n = CPU_COUNT(&cpus)) < 1)
        return 1;
    return n > CONFIG_WORKERS_MAX ? CONFIG_WORKERS_MAX : (unsigned)n;
}

enum randd_stream_cipher config_cipher(const struct config *c)
{
    if (c->cipher != CONFIG_AUTO)
        return c->cipher;
    return randd_crypto_has_hardware_aes() ? RANDD_STREAM_AES256CTR : RANDD_STREAM_CHACHA20;
}

unsigned config_clients_for_root(const struct config *c)
{
    unsigned eighth = c->max_clients / 8 + (c->max_clients % 8 != 0);

    return eighth < c->max_clients ? eighth : c->max_clients - 1;
}

unsigned config_clients_per_uid(const struct config *c)
{
    if (c->max_clients_per_uid != CONFIG_AUTO)
        return c->max_clients_per_uid;
    return c->max_clients;          /* no cap: max-min fairness alone (listener.c) */
}

void config_apply_live(struct config *in_effect, const struct config *reread)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (keys[i].applies == LIVE)
            memcpy((char *)in_effect + keys[i].offset, (const char *)reread + keys[i].offset,
                   keys[i].size);
    in_effect->trusted_gid = reread->trusted_gid;      /* trusted_group's, a live key */
    /* What mode = approved implies follows the mode in effect, which changes only at a
     * restart: an approved daemon keeps require_noise_source whatever a reload says, and a
     * reload that asks for the mode does not impose what it implies before the restart. */
    if (in_effect->mode == CONFIG_MODE_APPROVED)
        in_effect->require_noise_source = true;
    else if (reread->noise_required_by_mode)
        in_effect->require_noise_source = false;
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = { "yes", "true", "on", "1" }, *const no[] = { "no", "false", "off", "0" };

    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(v, yes[i]))
            return *out = true, 0;
        if (!strcmp(v, no[i]))
            return *out = false, 0;
    }
    return -1;
}

/* Decimal, optional K/M/G (powers of 1024) when suffixes are allowed. */
static const char *parse_number(const char *v, bool suffixes, uint64_t *out)
{
    uint64_t n = 0, scale = 1;
    const char *p = v;

    if (*p < '0' || *p > '9')
        return "not a number";
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return "number too large";
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (suffixes && *p && !p[1] && strchr("KMG", *p))
        scale = *p == 'K' ? 1ull << 10 : *p == 'M' ? 1ull << 20 : 1ull << 30, p++;
    if (*p)
        return suffixes ? "not a size (a number with an optional K, M or G)" : "not a number";
    if (n > UINT64_MAX / scale)
        return "number too large";
    *out = n * scale;
    return NULL;
}

/* Stores value into the field; returns NULL or what is wrong with it. */
static const char *set_value(const struct key *k, struct config *c, const char *v,
                             char *why, size_t whylen)
{
    char *field = (char *)c + k->offset;
    const char *problem;
    uint64_t n;
    char *end;
    int engine, cipher;

    switch (k->type) {
    case KEY_BOOL:
        return parse_bool(v, (bool *)field) ? "not yes or no" : NULL;
    case KEY_ENGINE:
        if ((engine = randd_engine_from_name(v)) < 0)
            return "not cymric, randen, ctr_drbg or hash_drbg";
        /* Refused here, with the file and line, rather than only when the daemon starts: so
         * --check-config and a reload say it too. Randen never runs table AES. */
        if (engine == RANDD_ENGINE_RANDEN && !randd_randen_available())
            return "this CPU has no AES round instructions (x86 AES-NI, ARMv8 AES), which "
                   "Randen needs; use cymric";
        /* CTR_DRBG's AES, like every AES randd runs, is the hardware's, never table AES. */
        if (engine == RANDD_ENGINE_CTR_DRBG && !randd_crypto_has_hardware_aes())
            return "this CPU does not do AES in hardware, which CTR_DRBG needs here (randd "
                   "never runs table AES); use hash_drbg";
        *(enum randd_engine *)field = (enum randd_engine)engine;
        return NULL;
    case KEY_CIPHER:
        if (!strcmp(v, "auto"))
            return *(enum randd_stream_cipher *)field = CONFIG_AUTO, NULL;
        if ((cipher = randd_stream_cipher_from_name(v)) < 0)
            return "not auto, chacha20 or aes256ctr";
        /* Asked for by name, AES must be the hardware's: never table AES, never a quiet
         * ChaCha20 in its place. */
        if (cipher == RANDD_STREAM_AES256CTR && !randd_crypto_has_hardware_aes()) {
            const char *mask = randd_crypto_aes_mask_variable();

            if (mask && getenv(mask))
                snprintf(why, whylen, "%s is set, which may hide the CPU's AES instructions "
                         "from OpenSSL; use auto or chacha20", mask);
            else
                snprintf(why, whylen, "this CPU does not do AES in hardware; use auto or "
                         "chacha20");
            return why;
        }
        *(enum randd_stream_cipher *)field = (enum randd_stream_cipher)cipher;
        return NULL;
    case KEY_JITTER:
        for (size_t i = 0; i < sizeof(jitter_names) / sizeof(jitter_names[0]); i++)
            if (!strcmp(v, jitter_names[i]))
                return *(enum config_jitter *)field = (enum config_jitter)i, NULL;
        return "not auto, yes or no";
    case KEY_SERVICE_MODE:
        for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
            if (!strcmp(v, mode_names[i]))
                return *(enum config_mode *)field = (enum config_mode)i, NULL;
        return "not default or approved";
    case KEY_LOOPBACK:
        if (*v && config_parse_loopback(v, NULL) < 0)
            return "not a loopback address:port (EGD has no authentication)";
        if (strlen(v) >= k->size)
            return "address too long";
        strcpy(field, v);
        return NULL;
    case KEY_PATH:
        if (!*v)
            return memset(field, 0, k->size), NULL;   /* only defaults are empty */
        if (v[0] != '/')
            return "not an absolute path";
        if (strlen(v) >= k->size) {
            snprintf(why, whylen, "path longer than %zu bytes", k->size - 1);
            return why;
        }
        strcpy(field, v);
        return NULL;
    case KEY_MODE:
        n = strtoul(v, &end, 8);
        if (*v < '0' || *v > '7' || *end || n > k->max)
            return "not an octal mode (0000 to 0777)";
        *(unsigned *)field = (unsigned)n;
        return NULL;
    case KEY_GROUP:
    case KEY_USER:
        if (*v && (k->type == KEY_GROUP ? !getgrnam(v) : !getpwnam(v)))
            return k->type == KEY_GROUP ? "no such group" : "no such user";
        if (strlen(v) >= k->size)
            return "group name too long";
        strcpy(field, v);
        return NULL;
    case KEY_WORKERS:
    case KEY_SHARE:
        if (!strcmp(v, "auto"))
            return *(unsigned *)field = CONFIG_AUTO, NULL;
        if (parse_number(v, false, &n) || n < k->min || n > k->max) {
            snprintf(why, whylen, "not auto or a number of %s (%" PRIu64 " to %" PRIu64 ")",
                     k->type == KEY_WORKERS ? "serving loops" : "connections", k->min, k->max);
            return why;
        }
        *(unsigned *)field = (unsigned)n;
        return NULL;
    case KEY_UINT:
    case KEY_SIZE:
        if ((problem = parse_number(v, k->type == KEY_SIZE, &n)))
            return problem;
        if (n < k->min || n > k->max) {
            snprintf(why, whylen, "out of range (%" PRIu64 " to %" PRIu64 ")", k->min, k->max);
            return why;
        }
        if (k->type == KEY_UINT)
            *(unsigned *)field = (unsigned)n;
        else
            *(uint64_t *)field = n;
        return NULL;
    }
    return "unknown type";
}

bool config_is_loopback(const struct sockaddr *sa)
{
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

    if (sa->sa_family == AF_INET)
        return ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24 ==
               127;
    if (sa->sa_family != AF_INET6)
        return false;
    /* ::ffff:127.x.y.z is IPv4's loopback, as an IPv6 socket sees it. */
    return IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
}

int config_parse_loopback(const char *text, struct sockaddr_storage *out)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                              .ai_socktype = SOCK_STREAM }, *ai;
    char *end;
    long port;
    bool loopback;
    size_t hlen;

    if (!colon || colon == text)
        return -1;
    port = strtol(colon + 1, &end, 10);
    hlen = (size_t)(colon - text);
    if (*end || colon[1] == '\0' || port < 1 || port > 65535 || hlen >= sizeof(host))
        return -1;
    if (text[0] == '[' && colon[-1] == ']')          /* [::1]:port */
        text++, hlen -= 2;
    memcpy(host, text, hlen);
    host[hlen] = '\0';
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
        return -1;
    loopback = config_is_loopback(ai->ai_addr);
    if (loopback && out) {
        memset(out, 0, sizeof(*out));
        memcpy(out, ai->ai_addr, ai->ai_addrlen);
    }
    freeaddrinfo(ai);
    return loopback ? 0 : -1;
}

void config_defaults(struct config *c)
{
    char why[64];

    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++)
        set_value(&keys[i], c, keys[i].default_text, why, sizeof(why));
    c->trusted_gid = (gid_t)-1;
    c->cpu_source_key = "cpu_source";
}

/* trusted_group's id, once per file read: a lookup for every connection would let clients
 * drive NSS (perhaps a directory server over the network) from the serving loops, and the
 * group could mean another id from one connection to the next. */
static bool resolve_trusted_group(struct config *c)
{
    const struct group *g;

    c->trusted_gid = (gid_t)-1;
    if (!c->trusted_group[0])
        return true;
    if (!(g = getgrnam(c->trusted_group)))
        return false;
    c->trusted_gid = g->gr_gid;
    return true;
}

static char *trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t')
        s++;
    end = s + strlen(s);
    while (end > s && strchr(" \t\r\n", end[-1]))
        *--end = '\0';
    return s;
}

static int error_at(char *err, size_t errlen, const char *name, unsigned line, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));

static int error_at(char *err, size_t errlen, const char *name, unsigned line, const char *fmt,
                    ...)
{
    va_list ap;
    size_t used = strnlen(err, errlen);
    int n;

    /* Every problem the file has, one a line: a fix-and-retry loop per error is tedious. */
    if (used + 1 >= errlen)
        return -1;
    err += used;
    errlen -= used;
    if (used) {
        *err++ = '\n';
        errlen--;
    }
    n = snprintf(err, errlen, "%s:%u: ", name, line);
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

bool config_any_source(const struct config *c)
{
    return c->cpu_source || c->getrandom || c->hwrng || config_any_noise_source(c);
}

bool config_any_noise_source(const struct config *c)
{
    return c->cpu_source || c->hwrng || c->jitter != JITTER_NO;
}

/* mode = approved (docs/approved-mode.md): the generator an SP 800-90A DRBG, ctr_drbg where
 * the CPU does AES in hardware, else hash_drbg, unless the file chose one; and only noise
 * sources' credit seeds it: the kernel's generator is not an approved entropy source, so
 * getrandom's bytes are absorbed but never counted. A file that asks for otherwise is refused
 * at the line that does, naming the line that set the mode. */
static int settle_approved_mode(struct config *c, const char *name, const unsigned *first_line,
                                char *err, size_t errlen)
{
    size_t mode = (size_t)(key_named("mode") - keys);
    size_t engine = (size_t)(key_named("engine") - keys);
    size_t require = (size_t)(key_named("require_noise_source") - keys);

    if (!first_line[engine])
        c->engine = randd_crypto_has_hardware_aes() ? RANDD_ENGINE_CTR_DRBG
                                                    : RANDD_ENGINE_HASH_DRBG;
    else if (!RANDD_ENGINE_IS_DRBG(c->engine))
        return error_at(err, errlen, name, first_line[engine], "engine = %s: mode = approved "
                        "(line %u) needs an SP 800-90A DRBG: use ctr_drbg or hash_drbg, or "
                        "leave engine out", randd_engine_name(c->engine), first_line[mode]);
    if (first_line[require] && !c->require_noise_source)
        return error_at(err, errlen, name, first_line[require], "require_noise_source = no: "
                        "mode = approved (line %u) seeds only from noise sources, whose "
                        "entropy randd measures; the kernel's word is not an approved source",
                        first_line[mode]);
    c->noise_required_by_mode = !c->require_noise_source;
    c->require_noise_source = true;
    if (!config_any_noise_source(c))
        return error_at(err, errlen, name, first_line[mode], "mode = approved, but no noise "
                        "source is on (cpu_source, hwrng and jitter = no): randd could never "
                        "serve");
    return 0;
}

int config_parse(struct config *out, const char *name, FILE *f, char *err, size_t errlen)
{
    struct config c;
    unsigned first_line[NKEYS] = { 0 }, lineno = 0;
    bool first_as_old_name[NKEYS] = { false };   /* set first under a name it had before */
    char buf[MAX_LINE + 2], why[128];
    int rc = 0;

    if (errlen)
        err[0] = '\0';
    config_defaults(&c);
    while (fgets(buf, sizeof(buf), f)) {
        char *line, *eq, *key, *value, *hash;
        const struct key *k = NULL;
        const char *problem;
        size_t i;

        lineno++;
        if (!strchr(buf, '\n') && !feof(f)) {
            rc = error_at(err, errlen, name, lineno, "line longer than %d bytes", MAX_LINE);
            while (fgets(buf, sizeof(buf), f) && !strchr(buf, '\n'))
                ;                                   /* the rest of that line */
            continue;
        }
        for (hash = buf; (hash = strchr(hash, '#')); hash++)   /* comment: line start or after blank */
            if (hash == buf || hash[-1] == ' ' || hash[-1] == '\t') {
                *hash = '\0';
                break;
            }
        line = trim(buf);
        if (!*line)
            continue;
        if (!(eq = strchr(line, '='))) {
            rc = error_at(err, errlen, name, lineno, "%s: expected 'key = value'", line);
            continue;
        }
        *eq = '\0';
        key = trim(line);
        value = trim(eq + 1);
        if (!(k = key_named(key))) {
            rc = error_at(err, errlen, name, lineno, "%s: unknown key", *key ? key : "(empty)");
            continue;
        }
        i = (size_t)(k - keys);
        if (first_line[i]) {
            const char *first = first_as_old_name[i] ? old_name_of(k) : k->name;
            bool renamed = strcmp(first, key) != 0;

            rc = error_at(err, errlen, name, lineno,
                          "%s: duplicate key (first set at line %u%s%s)", key, first_line[i], renamed ? " as " : "", renamed ? first : "");
            continue;
        }
        first_line[i] = lineno;
        first_as_old_name[i] = strcmp(key, k->name) != 0;
        if (!strcmp(k->name, "cpu_source"))       /* messages name the key as written */
            c.cpu_source_key = first_as_old_name[i] ? old_name_of(k) : k->name;
        if (!*value) {
            rc = error_at(err, errlen, name, lineno, "%s: empty value", key);
            continue;
        }
        if ((problem = set_value(k, &c, value, why, sizeof(why)))) {
            rc = error_at(err, errlen, name, lineno, "%s: %s: \"%s\"", key, problem, value);
            continue;
        }
    }
    if (ferror(f))
        rc = error_at(err, errlen, name, lineno, "read error: %s", strerror(errno));
    if (rc == 0 && !config_any_source(&c)) {
        unsigned last = 0;          /* the line that turned the last of them off */

        for (size_t i = 0; i < NKEYS; i++)
            if (!strcmp(keys[i].name, "cpu_source") || !strcmp(keys[i].name, "getrandom") ||
                !strcmp(keys[i].name, "hwrng") || !strcmp(keys[i].name, "jitter"))
                last = first_line[i] > last ? first_line[i] : last;
        rc = error_at(err, errlen, name, last, "every source is off (cpu_source, getrandom, "
                      "hwrng and jitter): randd could never seed its generator, and would "
                      "serve nothing");
    }
    if (rc == 0 && c.require_noise_source && !config_any_noise_source(&c)) {
        size_t i = (size_t)(key_named("require_noise_source") - keys);

        rc = error_at(err, errlen, name, first_line[i], "require_noise_source = yes, but no "
                      "noise source is on (cpu_source, hwrng and jitter = no): randd could "
                      "never serve");
    }
    if (rc == 0 && c.mode == CONFIG_MODE_APPROVED)
        rc = settle_approved_mode(&c, name, first_line, err, errlen);
    if (rc == 0 && !resolve_trusted_group(&c))
        rc = error_at(err, errlen, name, lineno, "trusted_group: no such group: \"%s\"",
                      c.trusted_group);
    if (rc == 0)
        *out = c;
    return rc;
}

int config_load(struct config *out, const char *path, bool missing_ok, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    int rc;

    if (!f) {
        if (errno == ENOENT && missing_ok) {
            config_defaults(out);
            return 0;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    rc = config_parse(out, path, f, err, errlen);
    fclose(f);
    return rc;
}
