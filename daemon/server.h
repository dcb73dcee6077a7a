/* The protocol v1 server: its socket (bound, or passed by systemd), requests in order on
 * each connection, replies generated chunk by chunk as the socket drains. Owns what each
 * connection asked and is owed, not the accepting (listener.c) nor the generator. */
#ifndef RANDD_SERVER_H
#define RANDD_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "listener.h"
#include "loop.h"
#include "branch.h"
#include "pool.h"
#include "primes.h"
#include "protocol.h"
#include "unix_socket.h"

/* Written by the server's loop thread alone (SERVER_STAT_ADD), read by any (STATUS sums
 * every loop's): atomics, so a reader never sees a torn count, at the cost of none. */
struct server_stats {
    _Atomic uint64_t clients_accepted;
    _Atomic uint64_t clients_busy;     /* turned away with BUSY */
    _Atomic uint64_t connected;        /* this loop's connections now */
    _Atomic uint64_t requests[RANDD_OP_LAST + 1];   /* by op; [0]: unknown op */
    _Atomic uint64_t replies[RANDD_STATUS_COUNT];   /* replies sent, by status */
    _Atomic uint64_t bytes_served;     /* reply bodies of BYTES, RANGE and SEED */
    /* BYTES and SEED asked with a mode, counted here and not in requests[] (protocol.h:
     * randd_mode_request_index) */
    _Atomic uint64_t mode_requests[RANDD_MODE_REQUEST_COUNT];
};

/* STATUS's JSON: from the caller, which sees every module. */
typedef char *server_status_fn(void *ctx, size_t *len);

/* SELFTEST and INJECT_FAILURE, asked by root: carried out by the caller, which owns the
 * sources and the pool. Returns a protocol status, with the reply's text in msg. */
typedef int server_admin_fn(void *ctx, const struct randd_request *req, char *msg,
                            size_t msglen);

struct server {
    struct loop *loop;
    struct branch *branch;             /* this loop's generator: the pool, or seeded from it */
    const struct config *config;       /* the live config: reloads apply to limits */
    struct listener listener;          /* accept, max_clients, idle_timeout, peers */
    bool activated;                    /* the socket came from systemd */
    struct unix_socket bound;          /* the socket file we bound: unlinked on exit */
    char path[108];
    struct primes_port *primes;        /* PRIME searches, off the loop thread */
    struct server_stats stats;
    server_status_fn *status_json;
    void *status_ctx;
    server_admin_fn *admin;            /* NULL: SELFTEST and INJECT_FAILURE are refused */
    void *admin_ctx;
    void (*noise_wanted)(void *ctx);   /* a request waits for noise: harvest (any thread) */
    void *noise_ctx;
};

/* Takes activated_fd (a socket systemd passed; -1: none), or binds config->socket: a stale
 * socket file is replaced; a live one (another randd), or anything that is not a socket, is
 * refused. Returns 0, or -1 with why. server_close is safe on a server never opened. */
int server_open(struct server *s, const struct config *config, int activated_fd, char *why,
                size_t whylen);

/* Another loop's server on the same socket (workers > 1): a descriptor of its own for
 * first's socket; the file stays first's to remove. Both accept with EPOLLEXCLUSIVE. Returns
 * 0, or -1 with why. */
int server_open_beside(struct server *s, const struct config *config, struct server *first,
                       char *why, size_t whylen);

/* Starts accepting on the loop, its connections counted in clients (with EGD's and other
 * loops'), output from branch, PRIME searches on primes; STATUS requests are answered with
 * status(status_ctx). Returns 0 or a negative errno. */
int server_start(struct server *s, struct loop *loop, struct branch *branch,
                 struct primes *primes, struct listener_clients *clients,
                 server_status_fn *status, void *status_ctx);

/* Root's SELFTEST and INJECT_FAILURE requests go to admin(admin_ctx), on this loop. */
void server_set_admin(struct server *s, server_admin_fn *admin, void *admin_ctx);

/* Requests waiting for noise-source entropy call wanted(ctx) from this loop's thread, so that
 * the pool's owner harvests; it answers with server_pool_ready when blocks were granted. */
void server_set_noise_wanted(struct server *s, void (*wanted)(void *ctx), void *ctx);

/* After a reload: idle_timeout's new value applies (max_clients and trusted_group are read
 * live). */
void server_reload(struct server *s);

/* The pool became ready, or noise blocks were granted (or no noise source is left): requests
 * waiting for either are served now. */
void server_pool_ready(struct server *s);

/* Closes every connection and the socket, and removes the socket file we made (if it is
 * still ours: not one another daemon bound at the path since). */
void server_close(struct server *s);

#endif
