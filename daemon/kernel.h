/* The kernel feed: RNDADDENTROPY with conditioned material from non-kernel sources, hard
 * until the kernel's generator is initialised, then periodic top-ups made effective with
 * RNDRESEEDCRNG. On kernels 5.18+ the credit counts only before initialisation; after it
 * the data is still mixed in and used at the reseed we ask for. Both ioctls need
 * CAP_SYS_ADMIN, which only the feed's own thread holds (kernel_start_thread). */
#ifndef RANDD_KERNEL_H
#define RANDD_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "pool.h"

struct kernel_thread;

struct kernel {
    int fd;                          /* /dev/random: ioctls, and POLLIN once initialised */
    bool enabled;                    /* configured on and not refused by the kernel */
    char off_reason[192];            /* why it is off, for status */
    bool initialised;
    bool (*is_initialised)(void);    /* readiness probe; tests replace it */
    struct kernel_thread *thread;    /* makes the ioctls; NULL: the caller does */
    uint64_t start_ns;
    uint64_t init_after_ns;          /* from our start to initialisation, when we saw it */
    bool init_seen;
    /* status */
    uint64_t topups;
    uint64_t reseeds;
    uint64_t bits_offered;
    char last_error[192];
};

/* Opens /dev/random when enabled. Never fails the daemon: problems switch the feed off
 * with a reason. probe tells whether the kernel is initialised (NULL: the real one). */
void kernel_init(struct kernel *k, bool enabled, bool (*probe)(void), uint64_t now_ns);
/* Stops the feed's thread, if started, and closes /dev/random. */
void kernel_fini(struct kernel *k);

/* Starts the thread that alone makes the ioctls from now on, with the capabilities the
 * calling thread holds now (a new thread inherits them), so that the caller can then drop
 * its own. A feed that is off needs none: nothing is started. A thread that cannot be
 * started switches the feed off, with the reason. Returns 0 or a negative errno. */
int kernel_start_thread(struct kernel *k);

/* Mixes fresh material in (crediting its estimate), and, once the kernel is initialised,
 * asks it to reseed now. Returns 0 or a negative errno (also kept in last_error);
 * -EINPROGRESS (not an error) while an on-demand source produces the material: call again
 * once pool_kernel_material_ready(). */
int kernel_feed(struct kernel *k, struct pool *p, uint64_t now_ns);

/* Re-reads the probe; returns true on the transition to initialised. */
bool kernel_became_initialised(struct kernel *k, uint64_t now_ns);

/* The feed is on: configured, /dev/random open, and not switched off since (EPERM, no
 * thread). */
bool kernel_enabled(const struct kernel *k);
/* The kernel's generator was initialised at the last look. */
bool kernel_initialised(const struct kernel *k);
/* /dev/random, readable once the kernel's generator is initialised (then call
 * kernel_became_initialised); -1 when there is nothing to wait on: not open, or initialised
 * already. */
int kernel_initialised_fd(const struct kernel *k);

/* getrandom(GRND_NONBLOCK) fails with EAGAIN until the kernel is initialised. */
bool kernel_probe_initialised(void);

#endif
