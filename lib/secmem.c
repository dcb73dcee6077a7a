/* mmap-backed secret memory: mlock, MADV_DONTDUMP and MADV_WIPEONFORK (Linux 4.14+),
 * so the pages never reach swap or a core file, and a child of fork() sees zeros. */
#include "secmem.h"

#include <errno.h>
#include <sys/mman.h>

#include <openssl/crypto.h>

void *randd_secure_alloc(size_t len, int *lock_errno)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    *lock_errno = mlock(p, len) == 0 ? 0 : errno;
    (void)madvise(p, len, MADV_DONTDUMP);
    (void)madvise(p, len, MADV_WIPEONFORK);
    return p;
}

void randd_secure_free(void *p, size_t len)
{
    if (!p)
        return;
    OPENSSL_cleanse(p, len);
    munlock(p, len);
    munmap(p, len);
}
