/* randd.conf: `key = value` lines, `#` comments. Parsing, validation with file:line errors,
 * and defaults. A failed parse never touches the caller's
 * config, so a bad reload keeps the running one. */
#ifndef RANDD_CONFIG_H
#define RANDD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "crypto.h"                    /* enum randd_stream_cipher and its names */
#include "protocol.h"                  /* enum randd_engine and its names */

/* jitter = auto: on when nothing else can be credited to the kernel, or nothing else at all. */
enum config_jitter { JITTER_AUTO, JITTER_YES, JITTER_NO };

/* mode = approved: everything on the output path SP 800-90A/B/C approved (issue 40,
 * docs/approved-mode.md). The parser settles what it implies: a DRBG engine, and
 * require_noise_source; the daemon conditions with SHA-512 in it. */
enum config_mode { CONFIG_MODE_DEFAULT, CONFIG_MODE_APPROVED };

struct config {
    char socket[108];                  /* sun_path size */
    enum config_mode mode;             /* default, or approved */
    enum randd_engine engine;          /* the generator that serves output */
    enum randd_stream_cipher cipher;   /* every Cymric generator's keystream; CONFIG_AUTO */
    bool cpu_source;                   /* the CPU's noise instruction (source_cpu.c) */
    const char *cpu_source_key;        /* as the file named it: cpu_source, or rdseed */
    bool getrandom;
    bool hwrng;
    char hwrng_device[PATH_MAX];
    enum config_jitter jitter;
    bool require_noise_source;         /* no output while getrandom alone is credited */
    bool noise_required_by_mode;       /* set by mode = approved, not by the file's key */
    unsigned jitter_oversampling;      /* raw jitter samples per credited bit */
    unsigned reseed_interval;          /* seconds */
    uint64_t reseed_bytes;
    bool kernel_topup;
    unsigned kernel_topup_interval;    /* seconds, 0 = no periodic top-up */
    unsigned selftest_interval;        /* seconds between self-tests; 0 = start and asked */
    unsigned socket_mode;              /* permission bits of the socket file */
    char socket_group[64];             /* group of the socket file; empty: unchanged */
    unsigned max_clients;
    unsigned max_clients_per_uid;      /* a cap per uid; CONFIG_AUTO: none, fairness only */
    unsigned idle_timeout;             /* seconds without progress; 0 = never */
    char trusted_group[64];            /* may ADD_ENTROPY besides root; empty: root only */
    gid_t trusted_gid;                 /* trusted_group's id, looked up once as the file is
                                          read; (gid_t)-1: none */
    char user[64];                     /* started as root: run as this user; empty: stay */
    char egd_socket[108];              /* EGD on a Unix socket; empty: off */
    char egd_listen[64];               /* EGD on loopback TCP, "127.0.0.1:8888"; empty: off */
    unsigned egd_idle_timeout;         /* idle_timeout for EGD clients; 0 = never (QEMU) */
    bool egd_full_entropy;             /* EGD blocking reads (0x02) served with full entropy */
    unsigned workers;                  /* serving loops; CONFIG_WORKERS_AUTO: one per CPU */
};

#define CONFIG_AUTO         0         /* workers, max_clients_per_uid, cipher: "auto" */
#define CONFIG_WORKERS_AUTO CONFIG_AUTO
#define CONFIG_WORKERS_MAX  64         /* a thread, a loop and a generator each */

void config_defaults(struct config *c);

/* Parses f (named name in messages) over the defaults into *out. Returns 0, or -1 with
 * "name:line: key: problem" in err; *out is untouched on failure. */
/* Whether the config leaves any source on (config_parse refuses one that leaves none), and
 * any noise source: without one, full-entropy and prediction-resistant requests are always
 * refused (NO_NOISE_SOURCE), which --check-config and start-up say. */
bool config_any_source(const struct config *c);
bool config_any_noise_source(const struct config *c);
int config_parse(struct config *out, const char *name, FILE *f, char *err, size_t errlen);

/* Opens and parses path; a missing file gives the defaults when missing_ok. */
int config_load(struct config *out, const char *path, bool missing_ok, char *err,
                size_t errlen);

/* Parses "127.0.0.1:8888" or "[::1]:8888"; 0 only for a loopback address. */
struct sockaddr_storage;
int config_parse_loopback(const char *text, struct sockaddr_storage *out);

/* Whether an AF_INET or AF_INET6 address is loopback (127/8, ::1, ::ffff:127/104): EGD,
 * which has no authentication, listens on nothing else. */
struct sockaddr;
bool config_is_loopback(const struct sockaddr *sa);

struct config_key_info {
    const char *name;
    const char *default_text;          /* as randd.conf writes it */
    bool at_restart;                   /* a reload reads it; it applies at the next start */
    bool quoted;                       /* a string in JSON; else a number, true or false */
};

/* The i-th key; false past the last key. */
bool config_key(size_t i, struct config_key_info *out);

/* The i-th key's value in c as randd.conf accepts it (booleans as true/false, sizes in
 * bytes, modes in octal) into buf; returns buf. */
const char *config_value_text(const struct config *c, size_t i, char *buf, size_t len);

/* Whether a reload that read reread leaves the i-th key waiting for a restart: it applies
 * at restart only, and reread's value differs from the one in effect. */
bool config_pending_restart(const struct config *in_effect, const struct config *reread,
                            size_t i);

/* workers as configured, with auto resolved to the CPUs this process may run on (its
 * affinity mask), at most CONFIG_WORKERS_MAX. */
unsigned config_workers(const struct config *c);

/* cipher as configured, with auto resolved: AES-256-CTR where the CPU does AES in hardware,
 * else ChaCha20. (aes256ctr itself never parses on a CPU without it.) */
enum randd_stream_cipher config_cipher(const struct config *c);

/* The places of max_clients kept for root: an eighth, rounded up, but never all of them.
 * Peers of every other uid (and TCP peers) together hold at most the rest, so that no user,
 * however many uids it has (subordinate uids are 65536 a user), can shut root's tools out. */
unsigned config_clients_for_root(const struct config *c);

/* The most connections one peer uid may hold (of max_clients, over every listener), its
 * fair share aside: max_clients_per_uid, with auto resolved to max_clients (no cap; the
 * fair share is the listener's, listener_fair_share). */
unsigned config_clients_per_uid(const struct config *c);

/* Takes the keys a reload applies at once from reread; the others keep their values. */
void config_apply_live(struct config *in_effect, const struct config *reread);

#endif
