/* The client server: the listening socket (bound, or passed by systemd), one event-loop
 * callback set per connection, protocol v1 requests in order, replies generated chunk by
 * chunk as the socket drains. Owns connections and their buffers, not the generator. */
#ifndef RANDD_SERVER_H
#define RANDD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "loop.h"
#include "pool.h"
#include "protocol.h"
#include "unix_socket.h"

struct server_stats {
    uint64_t clients_accepted;
    uint64_t clients_busy;             /* turned away with BUSY */
    unsigned clients_now;
    uint64_t requests[RANDD_OP_LAST + 1];   /* by op; [0]: unknown op */
    uint64_t errors[RANDD_STATUS_COUNT];           /* replies by status */
    uint64_t bytes_served;             /* reply bodies of BYTES, RANGE and SEED */
};

struct client;

struct server {
    struct loop *loop;
    struct pool *pool;
    const struct config *config;       /* the live config: reloads apply to limits */
    int listen_fd;
    bool activated;                    /* the socket came from systemd */
    struct unix_socket bound;          /* the socket file we bound: unlinked on exit */
    char path[108];
    int resume_timer;                  /* accept paused after EMFILE */
    int sweep_timer;
    struct client *clients;
    struct primes *primes;             /* PRIME searches, off the loop thread */
    struct drain *drain;               /* connections closing after a framing error */
    struct server_stats stats;
    /* STATUS replies come from the caller, which sees every module. */
    char *(*status_json)(void *ctx, size_t *len);
    void *status_ctx;
};

/* Takes activated_fd (a socket systemd passed; -1: none), or binds config->socket: a stale
 * socket file is replaced; a live one (another randd), or anything that is not a socket, is
 * refused. Returns 0, or -1 with why. */
int server_open(struct server *s, const struct config *config, int activated_fd, char *why,
                size_t whylen);

/* Starts accepting on the loop. */
int server_start(struct server *s, struct loop *loop, struct pool *pool);

/* The pool became ready: requests waiting for it are served now. */
void server_pool_ready(struct server *s);

/* Closes every connection and the socket, and removes the socket file we made (if it is
 * still ours: not one another daemon bound at the path since). */
void server_close(struct server *s);

#endif
