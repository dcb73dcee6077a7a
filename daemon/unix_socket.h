/* Binds a listening Unix socket path safely, for the client and the EGD listeners: what is
 * at the path is replaced only if it is a stale socket, and on exit the path is removed only
 * while it is still the socket we bound. Owns the path, not the descriptor it returns. */
#ifndef RANDD_UNIX_SOCKET_H
#define RANDD_UNIX_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The socket file we bound, by identity: a path can be removed and bound again by another
 * daemon while we run, and that socket is not ours to remove. */
struct unix_socket {
    char path[108];                  /* sun_path size */
    dev_t dev;
    ino_t ino;
    bool bound;                      /* false: nothing of ours at path */
};

/* Binds path with its mode (and its group, unless group is (gid_t)-1) and listens; returns
 * the non-blocking listening descriptor. The path's directory, and each above it, must belong
 * to root or the uid randd runs as (now, or as user, "" for none) and be writable by no one
 * else (those above it may be sticky, as /tmp). Not thread-safe: it sets the umask. Something already at path is refused unless it is
 * a socket nobody answers on (its daemon was killed): a file, a directory or a symlink is
 * never ours, and a live socket is another daemon's. Returns -1 with why, which starts with
 * what (the config key) and the path. */
int unix_socket_listen(struct unix_socket *us, const char *what, const char *path,
                       unsigned mode, gid_t group, const char *user, char *why,
                       size_t whylen);

/* Removes the socket file, if the path still names the one we bound; then forgets it. */
void unix_socket_unlink(struct unix_socket *us);

#endif
