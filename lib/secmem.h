/* Memory for secrets: page-aligned, locked against swap where allowed, left out of core
 * dumps, and wiped in a forked child. Owns only the mapping, not what is kept in it. */
#ifndef RANDD_SECMEM_H
#define RANDD_SECMEM_H

#include <stddef.h>

/* Returns zeroed memory or NULL (errno set). Locking is best effort: *lock_errno is 0 when
 * the pages are locked, else the mlock error (EPERM, ENOMEM under a low RLIMIT_MEMLOCK). */
void *randd_secure_alloc(size_t len, int *lock_errno);

/* Wipes and unmaps. */
void randd_secure_free(void *p, size_t len);

#endif
