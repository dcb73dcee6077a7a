/* Dropping privileges, once, after everything privileged is open: capabilities down to
 * CAP_SYS_ADMIN (none without the kernel feed) in every set including the bounding set,
 * an optional switch to an unprivileged user, no new privileges, not dumpable; then
 * CAP_SYS_ADMIN left to the kernel feed's thread alone. */
#ifndef RANDD_PRIVILEGES_H
#define RANDD_PRIVILEGES_H

#include <pthread.h>
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
 * (privileges_start_thread reads it). */
void privileges_plan(bool switch_user);

/* Starts every thread randd runs beside its loops and the kernel feed (sources' workers,
 * PRIME searches, serving loops), named for top -H, with every signal blocked (main reads
 * its own from a signalfd, and a thread that took a SIGHUP would end the daemon by its
 * default action). Capabilities, the bounding set and no-new-privileges belong to each
 * thread, so the new thread gives them up before fn runs, and this returns only once it
 * has: a thread started before privileges_drop would otherwise keep all of root's, and one
 * still starting when privileges_drop switches the user would lose CAP_SETPCAP to the
 * switch and keep a full bounding set (seen under AddressSanitizer, where a thread starts
 * slowly). None of these threads needs a capability. Only when a switch to a user is
 * planned does the new thread keep CAP_SETUID and CAP_SETGID, which glibc needs to apply
 * that switch to every thread and which the switch then clears. A failure to drop is
 * logged, naming the thread: it cannot happen short of a kernel that refuses to take
 * capabilities away, and the thread runs only randd's own code. Returns 0 or an errno
 * value, as pthread_create. */
int privileges_start_thread(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg);

#endif
