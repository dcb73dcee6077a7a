/* BYTES_MEMFD's shared pages: one sealed memfd per connection that asks for it, mapped by the
 * daemon, handed to the client once over SCM_RIGHTS, its slots filled by the generator in
 * turn. Owns the memfd, its mapping, the fd passing, the wipe at close, and the count of
 * arenas (and so of descriptors in flight) per uid; not what goes in the slots (server.c)
 * nor the wire format (lib/protocol.c). */
#ifndef RANDD_MEMFD_ARENA_H
#define RANDD_MEMFD_ARENA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Arenas alive at once over all connections: each may hold RANDD_MEMFD_ARENA_BYTES of pages
 * charged to randd's memory cgroup, so at most 32 MiB. More: BUSY, and clients use BYTES. */
#define MEMFD_ARENA_MAX 16
/* And at most this many for one uid, so that one local user holding connections open cannot
 * push every other user back to BYTES. An arena counts until its memfd cannot be in flight
 * any more (memfd_arena_close): so these also bound the descriptors randd has in flight. */
#define MEMFD_ARENA_PER_UID 4

struct memfd_arena;

/* A new arena for a client of uid: memfd created, sized, sealed (no shrinking, no growing, no
 * more seals) and mapped. Returns 0, -EBUSY when MEMFD_ARENA_MAX are alive, -EDQUOT when uid
 * has its MEMFD_ARENA_PER_UID, or a negative errno (-ENOSYS: a kernel without memfd_create). */
int memfd_arena_open(struct memfd_arena **arena, uid_t uid);

/* The slot the next reply's bytes go in (RANDD_MEMFD_SLOT_BYTES long), and its offset. Slots
 * are taken in turn, so the one before stays as the client may still be copying it. */
uint8_t *memfd_arena_next_slot(struct memfd_arena *a, uint32_t *offset);

/* Whether the client still has to be given the memfd (with the next reply). */
bool memfd_arena_unsent(const struct memfd_arena *a);

/* send() of buf on sock with the memfd attached; once it went, the daemon closes its
 * descriptor and keeps only the mapping, and a duplicate of sock (see memfd_arena_close).
 * Returns what send() returns: -1 with errno EAGAIN or EINTR (try again), EPIPE or
 * ECONNRESET (the peer is gone), or anything else (ETOOMANYREFS, EMFILE, ENOMEM...): the
 * memfd cannot be passed, and nothing was sent. */
ssize_t memfd_arena_send(struct memfd_arena *a, int sock, const void *buf, size_t n);

/* Frees the pages (the client's copy of the fd then reads zeros: nothing of the output stays
 * behind in memory the client keeps) and unmaps them. If the client may not have received the
 * memfd yet (what was sent on the socket is not all read), the arena keeps its place in the
 * count, the socket shut for sending but open, until a later memfd_arena_open finds it read
 * or the peer gone; otherwise it is forgotten at once. NULL: nothing. */
void memfd_arena_close(struct memfd_arena *a);

/* Forgets every arena that memfd_arena_close kept, closing their sockets: at exit. */
void memfd_arena_fini(void);

#endif
