/* The status report: everything an operator asks about, as STATUS's JSON object or as log
 * lines (SIGUSR1). Reads the other modules' status fields; changes nothing. */
#ifndef RANDD_STATUS_H
#define RANDD_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "kernel.h"
#include "pool.h"

struct listener_clients;
struct server_stats;
struct egd_stats;
struct selfcheck;
struct vmgenid;

struct status_view {
    const char *version;
    uint64_t started_ns;
    const struct config *config;       /* in effect */
    const struct config *reread;       /* as last read: restart-only keys may differ */
    const struct pool *pool;
    const struct kernel *kernel;
    const struct listener_clients *clients;   /* connected now, protocol v1 and EGD */
    const struct server_stats *const *loops;  /* each serving loop's (workers) */
    size_t nloops;
    const struct egd_stats *egd;
    const struct selfcheck *selfcheck; /* NULL: not reported */
    const struct vmgenid *vmgenid;     /* NULL: not reported */
    /* The CPU's noise source by its name on this machine, and why it is not among the
     * sources ("" when it is): absent from the CPU, or off in the config. */
    const char *cpu_source_name;
    const char *cpu_source_absent;
};

/* Returns a malloc'd JSON text (its length in *len), or NULL when out of memory. */
char *status_json(const struct status_view *v, uint64_t now_ns, size_t *len);

/* The same report in a few log lines (SIGUSR1, and once at start): readiness, each source,
 * the pool and the kernel feed. */
void status_log(const struct status_view *v, uint64_t now_ns);

#endif
