/* Dropping privileges, once, after everything privileged is open: capabilities down to
 * CAP_SYS_ADMIN (none without the kernel feed) in every set including the bounding set,
 * an optional switch to an unprivileged user, no new privileges, not dumpable; then
 * CAP_SYS_ADMIN left to the kernel feed's thread alone. */
#ifndef RANDD_PRIVILEGES_H
#define RANDD_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>

/* keep_sys_admin: the kernel feed is on. user: "" to keep the uid. Returns 0, or -1 with
 * why (the daemon must not go on half-dropped). */
int privileges_drop(bool keep_sys_admin, const char *user, char *why, size_t whylen);

/* The main thread, once the kernel feed's thread has started after privileges_drop (and so
 * holds CAP_SYS_ADMIN as the main thread did): the main thread keeps no capability, so that
 * the kernel's limits apply to it as it serves clients. Returns 0, or -1 with why. */
int privileges_leave_to_kernel_thread(char *why, size_t whylen);

/* Whether privileges_drop will switch to a user: said once, before randd starts any thread
 * (privileges_drop_thread reads it). */
void privileges_plan(bool switch_user);

/* Called first by every thread randd starts (sources' workers, PRIME searches, serving
 * loops): capabilities, the bounding set and no-new-privileges belong to each thread, so a
 * thread started before privileges_drop would keep all of root's. None of them needs one
 * (the kernel feed has its own thread). Only when a switch to a user is planned does the
 * calling thread keep CAP_SETUID and CAP_SETGID, which glibc needs to apply that switch to
 * every thread and which the switch then clears; otherwise it keeps nothing. A failure is
 * logged, naming the thread: it cannot happen short of a kernel that refuses to take
 * capabilities away, and the thread runs only randd's own code. */
void privileges_drop_thread(const char *thread);

#endif
