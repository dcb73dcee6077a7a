/* mmap-backed secret memory: mlock, MADV_DONTDUMP and MADV_WIPEONFORK (Linux 4.14+),
 * so the pages never reach swap or a core file, and a child of fork() sees zeros.
 *
 * Small secrets share pages. Each secret in a page of its own would lock a page per secret:
 * a prediction-resistant reply's generator (about 2 KiB) would pin 64 KiB on arm64 and
 * ppc64el kernels built with 64 KiB pages, where 1024 such replies would ask for 64 MiB
 * against systemd's default RLIMIT_MEMLOCK of 8 MiB, and the rest would go unlocked. So a
 * secret up to half a page takes 64-byte slots in a shared region of one page, locked and
 * advised as a whole; the region is unmapped when its last secret is freed. Larger secrets
 * keep a mapping of their own. Locked memory is then what is allocated, rounded up to a
 * page per region in use, whatever the page size. */
#include "secmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>

#define SLOT 64                      /* bytes: a cache line, and every secret's alignment */

struct region {
    struct region *next;
    uint8_t *base;                   /* one page */
    size_t slots, used;
    int lock_errno;                  /* mlock's outcome for the page, given to each secret */
    uint64_t in_use[];               /* one bit a slot */
};

static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *regions;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A child forked while another thread held the lock would find it held forever. */
static void lock_regions(void) { pthread_mutex_lock(&regions_lock); }
static void unlock_regions(void) { pthread_mutex_unlock(&regions_lock); }
static void register_atfork(void) { pthread_atfork(lock_regions, unlock_regions, unlock_regions); }

static size_t page_size(void)
{
    long n = sysconf(_SC_PAGESIZE);

    return n > 0 ? (size_t)n : 4096;
}

/* A mapping of its own: locked (best effort), left out of core dumps, wiped in a child. */
static void *map_secret(size_t len, int *lock_errno)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    *lock_errno = mlock(p, len) == 0 ? 0 : errno;
    (void)madvise(p, len, MADV_DONTDUMP);
    (void)madvise(p, len, MADV_WIPEONFORK);
    return p;
}

static void unmap_secret(void *p, size_t len)
{
    OPENSSL_cleanse(p, len);
    munlock(p, len);
    munmap(p, len);
}

static bool slot_used(const struct region *r, size_t i)
{
    return r->in_use[i / 64] >> (i % 64) & 1;
}

static void mark_slots(struct region *r, size_t first, size_t n, bool used)
{
    for (size_t i = first; i < first + n; i++) {
        if (used)
            r->in_use[i / 64] |= (uint64_t)1 << (i % 64);
        else
            r->in_use[i / 64] &= ~((uint64_t)1 << (i % 64));
    }
    r->used = used ? r->used + n : r->used - n;
}

/* The first run of n free slots, or r->slots when there is none. */
static size_t free_run(const struct region *r, size_t n)
{
    size_t run = 0;

    if (r->slots - r->used < n)
        return r->slots;
    for (size_t i = 0; i < r->slots; i++) {
        run = slot_used(r, i) ? 0 : run + 1;
        if (run == n)
            return i + 1 - n;
    }
    return r->slots;
}

static struct region *new_region(size_t page)
{
    size_t slots = page / SLOT;
    struct region *r = calloc(1, sizeof(*r) + (slots + 63) / 64 * sizeof(uint64_t));

    if (!r)
        return NULL;
    if (!(r->base = map_secret(page, &r->lock_errno))) {
        free(r);
        return NULL;
    }
    r->slots = slots;
    r->next = regions;
    regions = r;
    return r;
}

static void *shared_alloc(size_t n, size_t page, int *lock_errno)
{
    struct region *r;
    size_t at = 0;
    void *p = NULL;

    pthread_once(&atfork_once, register_atfork);
    lock_regions();
    for (r = regions; r; r = r->next)
        if ((at = free_run(r, n)) < r->slots)
            break;
    if (!r) {
        r = new_region(page);
        at = 0;
    }
    if (r) {
        mark_slots(r, at, n, true);
        *lock_errno = r->lock_errno;
        p = r->base + at * SLOT;
    }
    unlock_regions();
    return p;
}

/* True when p was a shared region's: wiped, its slots freed, the region unmapped if empty. */
static bool shared_free(void *p, size_t len, size_t page)
{
    struct region **link, *r;
    bool found = false;

    lock_regions();
    for (link = &regions; (r = *link); link = &r->next) {
        uint8_t *q = p;

        if (q < r->base || q >= r->base + page)
            continue;
        found = true;
        OPENSSL_cleanse(p, len);
        mark_slots(r, (size_t)(q - r->base) / SLOT, (len + SLOT - 1) / SLOT, false);
        if (r->used == 0) {
            *link = r->next;
            unmap_secret(r->base, page);
            free(r);
        }
        break;
    }
    unlock_regions();
    return found;
}

void *randd_secure_alloc(size_t len, int *lock_errno)
{
    size_t page = page_size(), slots = (len + SLOT - 1) / SLOT;

    if (len == 0) {
        errno = EINVAL;
        return NULL;
    }
    if (slots * SLOT <= page / 2)
        return shared_alloc(slots, page, lock_errno);
    return map_secret(len, lock_errno);
}

void randd_secure_free(void *p, size_t len)
{
    size_t page = page_size();

    if (!p)
        return;
    if ((len + SLOT - 1) / SLOT * SLOT <= page / 2 && shared_free(p, len, page))
        return;
    unmap_secret(p, len);
}
