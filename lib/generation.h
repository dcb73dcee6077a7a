/* The VM generation counter randd publishes beside its socket (SOCKET.generation): one
 * 64-bit word that randd increments each time the kernel announces a new VM generation (a
 * snapshot restored or cloned). Clients map it read-only and compare it with the value they
 * saw when they last seeded: one load per call, and a clone is noticed before the next byte.
 * The daemon writes it, librandd's in-process generator reads it; neither owns the other. */
#ifndef RANDD_GENERATION_H
#define RANDD_GENERATION_H

#include <stddef.h>
#include <stdint.h>

/* SOCKET.generation for socket (NULL: $RANDD_SOCKET, else the default socket). Returns 0, or
 * -ENAMETOOLONG. */
int randd_generation_path(const char *socket, char *out, size_t len);

/* Daemon side: opens (keeping an existing file's inode and count, so clients that mapped it
 * before a restart still see changes) or creates path, mode 0644, and maps its word
 * read-write. Returns the word or NULL (errno set). */
uint64_t *randd_generation_publish(const char *path);
/* Counts one more generation: clients reseed before their next output. */
void randd_generation_bump(uint64_t *word);

/* Client side: maps path's word read-only, or NULL when there is none (no daemon, an older
 * daemon, no permission): the caller then learns nothing of clones through randd. */
const uint64_t *randd_generation_map(const char *path);
void randd_generation_unmap(const uint64_t *word);
uint64_t randd_generation_load(const uint64_t *word);

#endif
