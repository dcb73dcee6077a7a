/* The Entropy Gathering Daemon protocol, for clients that already speak it (GnuPG, QEMU's
 * rng-egd, ekeyd-egd-linux): an optional Unix and a loopback TCP socket in the same event
 * loop, accepted by a listener (listener.c) like the main server's, sharing its max_clients.
 * Idle clients have their own rule (egd_idle_timeout, off by default: QEMU keeps one
 * connection for a VM's life). Owns the EGD commands and each connection's buffers. */
#ifndef RANDD_EGD_H
#define RANDD_EGD_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "listener.h"
#include "loop.h"
#include "pool.h"
#include "unix_socket.h"

/* The level reported by command 0x00 once ready: randd's generator does not run dry, so
 * this is a constant that lets level-polling clients proceed (0 while not ready). */
#define EGD_READY_LEVEL_BITS 4096

struct egd_stats {
    uint64_t clients_accepted;
    uint64_t commands[5];            /* by command byte 0x00..0x04 */
    uint64_t unknown_commands;       /* each closed its connection */
    uint64_t bytes_served;
    uint64_t entropy_bytes_added;    /* 0x03 from privileged Unix peers */
    uint64_t entropy_bytes_dropped;  /* 0x03 from anyone else */
    uint64_t full_entropy_bytes;     /* of bytes_served, 0x02 with egd_full_entropy */
};

struct egd {
    struct loop *loop;
    struct pool *pool;
    const struct config *config;
    struct listener listener;        /* the Unix and TCP sockets, when configured */
    struct unix_socket bound;        /* the egd_socket file we bound: unlinked on exit */
    struct egd_stats stats;
    void (*noise_wanted)(void *ctx);   /* a blocking read waits for noise: harvest */
    void *noise_ctx;
};

/* Listens as configured, or on descriptors systemd passed with FileDescriptorName=egd
 * (activated[0..nactivated)): each must be a listening Unix or loopback TCP socket, as
 * egd_listen must be loopback. Returns 0, or -1 with why naming what is wrong. egd_close is
 * safe on an egd never opened. */
int egd_open(struct egd *e, const struct config *config, const int *activated,
             int nactivated, char *why, size_t whylen);
/* Starts accepting on the loop, its connections counted in clients (with the server's). */
int egd_start(struct egd *e, struct loop *loop, struct pool *pool,
              struct listener_clients *clients);
/* After a reload: an egd_idle_timeout that changed applies from now on. */
void egd_reload(struct egd *e);
/* egd_full_entropy's blocking reads that wait for noise blocks call wanted(ctx). */
void egd_set_noise_wanted(struct egd *e, void (*wanted)(void *ctx), void *ctx);
/* The pool became ready, or noise blocks were granted: blocking reads waiting are served. */
void egd_pool_ready(struct egd *e);
void egd_close(struct egd *e);

#endif
