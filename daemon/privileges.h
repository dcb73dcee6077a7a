/* Dropping privileges, once, after everything privileged is open: capabilities down to
 * CAP_SYS_ADMIN (none without the kernel feed) in every set including the bounding set,
 * an optional switch to an unprivileged user, no new privileges, not dumpable. */
#ifndef RANDD_PRIVILEGES_H
#define RANDD_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>

/* keep_sys_admin: the kernel feed is on. user: "" to keep the uid. Returns 0, or -1 with
 * why (the daemon must not go on half-dropped). */
int privileges_drop(bool keep_sys_admin, const char *user, char *why, size_t whylen);

#endif
