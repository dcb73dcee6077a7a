/* The generation word's file: naming, publishing (daemon) and mapping (clients). A page of a
 * tmpfs file mapped shared by both: the daemon's atomic store is what every client loads.
 * This file owns the trust rules of that page (generation.h); what a clone means to the
 * generators is theirs (lib/rng.c, lib/client.c, daemon/pool.c). */
#include "generation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path_check.h"
#include "randd.h"

/* The page's words. RETIRED turns nonzero when randd withdraws the file or a new randd
 * replaces it: a client still mapping it then maps the path again. */
enum { WORD_GENERATION = 0, WORD_RETIRED = 1 };

#define PAGE RANDD_GENERATION_FILE_SIZE

int randd_generation_path(const char *socket, char *out, size_t len)
{
    /* As randd_open resolves it: never from the environment of a setuid program. */
    if (!socket)
        socket = secure_getenv("RANDD_SOCKET");
    if (!socket || !*socket)
        socket = RANDD_DEFAULT_SOCKET;
    return (size_t)snprintf(out, len, "%s.generation", socket) < len ? 0 : -ENAMETOOLONG;
}

static int say(char *why, size_t len, int rc, const char *fmt, ...)
{
    va_list ap;

    if (why && len) {
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* --- publishing (the daemon) ------------------------------------------------------------
 * A file at the path may have been put there by anyone who can write the directory (/tmp, a
 * path given in RANDD_SOCKET): adopting it would let them truncate the page under a root
 * client (SIGBUS) or rewrite the counter, and a hard link would have randd change another
 * file. So randd writes only a file it has just created, and replaces only what it can tell
 * is its own leftover (a crash, SIGKILL, the watchdog); anything else is left as found. */

static bool left_by_randd(const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_size == PAGE && st->st_nlink == 1 &&
           (st->st_mode & 07777) == 0644 && (st->st_uid == geteuid() || st->st_uid == 0);
}

/* Clients of the leftover's word move to the new file: retired, and bumped, so a generator
 * seeded under it reseeds (and maps the new word) before its next output. */
static void retire_leftover(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    uint64_t *word = MAP_FAILED;

    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && left_by_randd(&st))
        word = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (word == MAP_FAILED)
        return;
    __atomic_store_n(&word[WORD_RETIRED], 1, __ATOMIC_RELEASE);
    randd_generation_bump(word);
    munmap(word, PAGE);
}

/* Links the new file at path: never over anything (RENAME_NOREPLACE, or link() where the
 * file system lacks it), or over the leftover already judged randd's own. */
static int put_in_place(const char *tmp, const char *path, bool replace)
{
    if (replace)
        return rename(tmp, path);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(tmp, path) < 0)
        return -1;
    unlink(tmp);
    return 0;
}

int randd_generation_publish(struct randd_generation *g, const char *path, char *why,
                             size_t len)
{
    char tmp[PATH_MAX];
    struct stat st;
    bool replace = false;
    void *map = MAP_FAILED;
    int fd, rc;

    memset(g, 0, sizeof(*g));
    if ((size_t)snprintf(g->path, sizeof(g->path), "%s", path) >= sizeof(g->path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
        return say(why, len, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
    if (lstat(path, &st) == 0) {
        if (!left_by_randd(&st))
            return say(why, len, -EEXIST,
                       "%s exists and is not one randd left (%s, %lld bytes, mode %04o, "
                       "%lu link%s, uid %u); not replacing it", path,
                       S_ISREG(st.st_mode) ? "a regular file" : "not a regular file",
                       (long long)st.st_size, (unsigned)(st.st_mode & 07777),
                       (unsigned long)st.st_nlink, st.st_nlink == 1 ? "" : "s",
                       (unsigned)st.st_uid);
        replace = true;
    } else if (errno != ENOENT) {
        return say(why, len, -errno, "%s: %s", path, strerror(errno));
    }
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
        return say(why, len, -errno, "%s: %s", tmp, strerror(errno));
    /* 0644 whatever the umask: every client reads it. */
    if (fchmod(fd, 0644) < 0 || ftruncate(fd, PAGE) < 0 || fstat(fd, &st) < 0 ||
        (map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        rc = -errno;
        close(fd);
        unlink(tmp);
        return say(why, len, rc, "%s: %s", tmp, strerror(-rc));
    }
    close(fd);
    if (replace)
        retire_leftover(path);
    if (put_in_place(tmp, path, replace) < 0) {
        rc = -errno;
        unlink(tmp);
        munmap(map, PAGE);
        return say(why, len, rc, rc == -EEXIST ? "%s: created by someone else meanwhile; "
                                                 "not replacing it" : "%s: %s",
                   path, strerror(-rc));
    }
    g->word = map;
    g->dev = st.st_dev;
    g->ino = st.st_ino;
    return 0;
}

int randd_generation_withdraw(struct randd_generation *g)
{
    struct stat st;
    int rc = 0;

    if (!g->word)
        return 0;
    __atomic_store_n(&g->word[WORD_RETIRED], 1, __ATOMIC_RELEASE);
    randd_generation_bump(g->word);
    /* Only the file randd made: another may have been put at the path since. */
    if (lstat(g->path, &st) == 0 && st.st_dev == g->dev && st.st_ino == g->ino &&
        unlink(g->path) < 0)
        rc = -errno;
    munmap(g->word, PAGE);
    g->word = NULL;
    return rc;
}

void randd_generation_bump(uint64_t *word)
{
    __atomic_add_fetch(&word[WORD_GENERATION], 1, __ATOMIC_RELEASE);
}

/* --- mapping (clients) --------------------------------------------------------------------
 * OpenSSH's StrictModes for one page: a client, root included, maps only a file that no one
 * but root or randd (the owner of the directory that holds it: under systemd, randd's
 * dynamic user) could have written or replaced, and that cannot shrink under it. The whole
 * path is walked (lib/path_check.c), symlinks followed, so a directory above that another
 * user may change, or a symlink of theirs on the way, cannot swap in a file of theirs. The
 * file is then opened in the very directory the walk checked. */

static int check_word_file(const char *path, const struct randd_path_end *end, char *why,
                           size_t len)
{
    struct stat st;
    /* O_NONBLOCK: a FIFO put there must not hang the caller. O_NOFOLLOW: the file is
     * randd's own, never a link to one. */
    int fd = openat(end->dirfd, end->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

    if (fd < 0)
        return say(why, len, -errno, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) < 0) {
        int rc = -errno;

        close(fd);
        return say(why, len, rc, "%s: %s", path, strerror(-rc));
    }
    if (!S_ISREG(st.st_mode))
        say(why, len, -EPERM, "%s: not a regular file", path);
    else if (st.st_size != PAGE)
        say(why, len, -EPERM, "%s: %lld bytes, not one page (%d)", path,
            (long long)st.st_size, PAGE);
    else if (st.st_nlink != 1)
        say(why, len, -EPERM, "%s: %lu links, not one", path, (unsigned long)st.st_nlink);
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        say(why, len, -EPERM, "%s: writable by others (mode %04o)", path,
            (unsigned)(st.st_mode & 07777));
    else if (st.st_uid != 0 && st.st_uid != end->owner)
        say(why, len, -EPERM, "%s: owned by uid %u, neither root nor its directory's owner "
                              "(uid %u)", path, (unsigned)st.st_uid, (unsigned)end->owner);
    else
        return fd;
    close(fd);
    return -EPERM;
}

const uint64_t *randd_generation_map(const char *path, char *why, size_t len)
{
    struct randd_path_end end;
    char walk_why[512];
    void *map;
    int fd;

    if (randd_path_check(path, RANDD_PATH_FINAL_OWNER, 0, &end, walk_why,
                         sizeof(walk_why)) < 0) {
        say(why, len, 0, "%s: %s", path, walk_why);
        return NULL;
    }
    fd = check_word_file(path, &end, why, len);
    close(end.dirfd);
    if (fd < 0)
        return NULL;
    map = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        say(why, len, 0, "%s: mmap: %s", path, strerror(errno));
    close(fd);
    return map == MAP_FAILED ? NULL : map;
}

void randd_generation_unmap(const uint64_t *word)
{
    if (word)
        munmap((void *)word, PAGE);
}

uint64_t randd_generation_load(const uint64_t *word)
{
    return __atomic_load_n(&word[WORD_GENERATION], __ATOMIC_ACQUIRE);
}

bool randd_generation_retired(const uint64_t *word)
{
    return __atomic_load_n(&word[WORD_RETIRED], __ATOMIC_ACQUIRE) != 0;
}
