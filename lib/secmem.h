/* Memory for secrets: locked against swap where allowed, left out of core dumps, wiped when
 * freed and in a forked child. Secrets up to half a page share locked pages, so locked
 * memory follows what is allocated, not the page size. Owns only the memory, not what is
 * kept in it. Thread-safe. */
#ifndef RANDD_SECMEM_H
#define RANDD_SECMEM_H

#include <stddef.h>

/* Returns zeroed memory, 64-byte aligned, or NULL (errno set). Locking is best effort:
 * *lock_errno is 0 when its pages are locked, else the mlock error (EPERM, ENOMEM under a low
 * RLIMIT_MEMLOCK). A child of fork() finds the whole page of a shared secret zeroed. */
void *randd_secure_alloc(size_t len, int *lock_errno);

/* Wipes it, and unmaps its pages once no secret is left in them. len is what was asked. */
void randd_secure_free(void *p, size_t len);

#endif
