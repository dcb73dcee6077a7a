/* The VM generation counter randd publishes beside its socket (SOCKET.generation): one
 * 64-bit word that randd increments each time the kernel announces a new VM generation (a
 * snapshot restored or cloned). Clients map it read-only and compare it with the value they
 * saw when they last seeded: one load per call, and a clone is noticed before the next byte.
 * The daemon writes it, librandd's in-process generator reads it; neither owns the other.
 *
 * Trust: the file is randd's own. randd creates it afresh (O_EXCL under a temporary name,
 * then rename) and never adopts a file it finds; a client maps it only when no one but root
 * or the owner of its directory could have written or replaced it, through any directory
 * on its path (symlinks followed). */
#ifndef RANDD_GENERATION_H
#define RANDD_GENERATION_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RANDD_GENERATION_FILE_SIZE 4096   /* one page: the words below, the rest zero */

/* SOCKET.generation for socket (NULL: $RANDD_SOCKET, else the default socket). Returns 0, or
 * -ENAMETOOLONG. */
int randd_generation_path(const char *socket, char *out, size_t len);

/* --- the daemon's side -------------------------------------------------------------------- */

struct randd_generation {
    uint64_t *word;                 /* mapped read-write; NULL: nothing published */
    dev_t dev;                      /* the file randd created, removed on withdraw only */
    ino_t ino;                      /* while path still names it */
    char path[PATH_MAX];
};

/* Creates path afresh: a new file (mode 0644, one page) under a temporary name beside it,
 * mapped, then renamed onto path. A file already at path is replaced only when it is provably
 * one randd left (a regular file of one page, mode 0644, one link, owned by this uid or root):
 * it is marked retired first, so clients still mapping it move to the new one. Anything else
 * at path is not randd's to destroy: returns -EEXIST with why naming it, and leaves it alone.
 * Other failures: a negative errno, why saying what failed. */
int randd_generation_publish(struct randd_generation *g, const char *path, char *why,
                             size_t len);
/* On a clean exit: marks the word retired and removes path if it is still the file publish
 * created. Returns 0 or a negative errno (the file could not be removed). */
int randd_generation_withdraw(struct randd_generation *g);
/* Counts one more generation: clients reseed before their next output. */
void randd_generation_bump(uint64_t *word);

/* --- the clients' side -------------------------------------------------------------------- */

/* Maps path's word read-only when it is a regular file (not a symlink) of exactly one page,
 * with one link, writable by no group or other, owned by root or by its directory's owner,
 * and every directory on its path as written (symlinks followed) belongs to root or to that
 * owner and may be written by no group or other (randd_path_check's rule, /tmp's exception
 * included). Else NULL, and why (when len > 0) says what was wrong:
 * the caller then learns nothing of clones through randd. */
const uint64_t *randd_generation_map(const char *path, char *why, size_t len);
void randd_generation_unmap(const uint64_t *word);
uint64_t randd_generation_load(const uint64_t *word);
/* Whether randd has retired this word (it exited, or a new randd replaced the file): the
 * caller unmaps it and maps path again. One load. */
bool randd_generation_retired(const uint64_t *word);

#endif
