/* The path walk behind librandd's trust rules (path_check.h): which directories a path
 * passes through, symlinks and ".." included, and whether anyone but root and one uid could
 * change any of them. It owns no policy about sockets or generation words; its callers do. */
#include "path_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LINKS 40                 /* as the kernel's own path walk (MAXSYMLINKS) */

struct walk {
    uid_t uid;                       /* allowed besides root, or RANDD_PATH_FINAL_OWNER */
    uid_t seen;                      /* FINAL_OWNER: the one non-root owner met so far */
    char seen_at[PATH_MAX];          /* and where */
    char at[PATH_MAX];               /* the directory the walk is in, as reached */
    char *why;
    size_t len;
};

static int say(struct walk *w, int rc, const char *fmt, ...)
{
    va_list ap;

    if (w->why && w->len) {
        va_start(ap, fmt);
        vsnprintf(w->why, w->len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* The directory the walk is in (st), left for entry (NULL: it holds the last entry). */
static int check_directory(struct walk *w, const struct stat *st, const struct stat *entry)
{
    bool writable = st->st_mode & (S_IWGRP | S_IWOTH);
    /* Sticky and root's, to an entry of root's: no one else can rename or remove it. */
    bool pinned = entry && (st->st_mode & S_ISVTX) && st->st_uid == 0 && entry->st_uid == 0;

    if (writable && !pinned)
        return say(w, -EPERM, "%s is writable by %s (mode %04o)", w->at,
                   st->st_mode & S_IWOTH ? "others" : "its group",
                   (unsigned)(st->st_mode & 07777));
    if (st->st_uid == 0)
        return 0;
    if (w->uid != RANDD_PATH_FINAL_OWNER) {
        if (st->st_uid != w->uid)
            return say(w, -EPERM, "%s belongs to uid %u", w->at, (unsigned)st->st_uid);
        return 0;
    }
    if (w->seen == RANDD_PATH_FINAL_OWNER) {
        w->seen = st->st_uid;
        snprintf(w->seen_at, sizeof(w->seen_at), "%s", w->at);
    } else if (st->st_uid != w->seen) {
        return say(w, -EPERM, "%s belongs to uid %u and %s to uid %u", w->seen_at,
                   (unsigned)w->seen, w->at, (unsigned)st->st_uid);
    }
    return 0;
}

static int enter(struct walk *w, const char *name)
{
    size_t n = strlen(w->at);

    if (snprintf(w->at + n, sizeof(w->at) - n, "%s%s", n && w->at[n - 1] == '/' ? "" : "/",
                 name) >= (int)(sizeof(w->at) - n))
        return say(w, -ENAMETOOLONG, "%s/%s: %s", w->at, name, strerror(ENAMETOOLONG));
    return 0;
}

static int open_root(struct walk *w, int *dirfd, struct stat *st)
{
    strcpy(w->at, "/");
    *dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*dirfd < 0 || fstat(*dirfd, st) < 0)
        return say(w, -errno, "/: %s", strerror(errno));
    return 0;
}

/* rest := head "/" rest, in place. */
static int prepend(struct walk *w, char *rest, size_t size, const char *head)
{
    size_t h = strlen(head), r = strlen(rest);

    if (h + 1 + r + 1 > size)
        return say(w, -ENAMETOOLONG, "%s: a symlink's target makes the path too long", w->at);
    memmove(rest + h + 1, rest, r + 1);
    memcpy(rest, head, h);
    rest[h] = '/';
    return 0;
}

/* A symlink met on the way (fd, the entry name of dir): its target replaces it at the head of
 * rest, ahead of what followed it (next). *absolute says the walk goes on from the root. */
static int follow_link(struct walk *w, int fd, const struct stat *dir, const struct stat *st,
                       const char *name, const char *next, char *rest, size_t size,
                       int *links, bool *absolute)
{
    char target[PATH_MAX];
    ssize_t n;
    int rc;

    /* The link is an entry of this directory: whoever may change it, redirects. */
    if ((rc = check_directory(w, dir, st)) < 0)
        return rc;
    if (++*links > MAX_LINKS)
        return say(w, -ELOOP, "%s: more than %d symlinks", w->at, MAX_LINKS);
    if ((n = readlinkat(fd, "", target, sizeof(target) - 1)) < 0)
        return say(w, -errno, "%s/%s: %s", w->at, name, strerror(errno));
    target[n] = '\0';
    memmove(rest, next, strlen(next) + 1);
    if ((rc = prepend(w, rest, size, target)) < 0)
        return rc;
    *absolute = target[0] == '/';
    return 0;
}

/* The last component, name in dir (dirfd): a file, in a directory no one else may change,
 * under the owners the walk allows. end takes dirfd on success. */
static int finish_at(struct walk *w, int dirfd, const struct stat *dir, const struct stat *st,
                     const char *name, struct randd_path_end *end)
{
    int rc;

    if (S_ISDIR(st->st_mode))
        return say(w, -EISDIR, "%s/%s: a directory, not a file", w->at, name);
    if ((rc = check_directory(w, dir, NULL)) < 0)
        return rc;
    if (w->uid == RANDD_PATH_FINAL_OWNER && w->seen != RANDD_PATH_FINAL_OWNER &&
        w->seen != dir->st_uid)
        return say(w, -EPERM, "%s belongs to uid %u, neither root nor the owner of %s "
                   "(uid %u)", w->seen_at, (unsigned)w->seen, w->at, (unsigned)dir->st_uid);
    end->dirfd = dirfd;
    end->owner = dir->st_uid;
    snprintf(end->name, sizeof(end->name), "%s", name);
    snprintf(end->dir, sizeof(end->dir), "%s", w->at);
    return 0;
}

/* A component on the way: a directory, entered only if dir may hold it safely. */
static int descend(struct walk *w, const struct stat *dir, const struct stat *st,
                   const char *name)
{
    int rc;

    if (!S_ISDIR(st->st_mode))
        return say(w, -ENOTDIR, "%s/%s: %s", w->at, name, strerror(ENOTDIR));
    if ((rc = check_directory(w, dir, st)) < 0)
        return rc;
    return enter(w, name);
}

/* One component at a time from the root, every entry opened O_PATH | O_NOFOLLOW under the
 * directory already checked: no name is looked up twice. */
static int walk(struct walk *w, char *rest, size_t size, int flags, struct randd_path_end *end)
{
    struct stat dir, st;
    int dirfd, fd = -1, rc, links = 0;

    if ((rc = open_root(w, &dirfd, &dir)) < 0)
        return rc;
    for (;;) {
        char *name = rest + strspn(rest, "/"), *next = name + strcspn(name, "/");
        bool last, absolute = false;

        if (!*name) {
            rc = say(w, -EISDIR, "%s: a directory, not a file", w->at);
            break;
        }
        if (*next)
            *next++ = '\0';
        last = !next[strspn(next, "/")];
        fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
            rc = say(w, -errno, "%s%s%s: %s", w->at, strcmp(w->at, "/") ? "/" : "", name,
                     strerror(errno));
            break;
        }
        if (S_ISLNK(st.st_mode) && (!last || flags & RANDD_PATH_FOLLOW_LAST)) {
            rc = follow_link(w, fd, &dir, &st, name, next, rest, size, &links, &absolute);
            if (rc < 0)
                break;
            close(fd);
            fd = -1;
            if (absolute) {
                close(dirfd);
                if ((rc = open_root(w, &dirfd, &dir)) < 0)
                    return rc;
            }
            continue;
        }
        if (last) {
            if ((rc = finish_at(w, dirfd, &dir, &st, name, end)) < 0)
                break;
            close(fd);
            return 0;
        }
        if ((rc = descend(w, &dir, &st, name)) < 0)
            break;
        close(dirfd);
        dirfd = fd, fd = -1;
        dir = st;
        memmove(rest, next, strlen(next) + 1);
    }
    if (fd >= 0)
        close(fd);
    close(dirfd);
    return rc;
}

int randd_path_check(const char *path, uid_t uid, int flags, struct randd_path_end *end,
                     char *why, size_t len)
{
    struct walk w = { .uid = uid, .seen = RANDD_PATH_FINAL_OWNER, .why = why, .len = len };
    char rest[2 * PATH_MAX];

    if (path[0] == '/')
        rest[0] = '\0';
    else if (!getcwd(rest, PATH_MAX))
        return say(&w, -errno, "the current directory: %s", strerror(errno));
    if (strlen(rest) + 1 + strlen(path) + 1 > sizeof(rest))
        return say(&w, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
    if (rest[0])
        strcat(rest, "/");
    strcat(rest, path);
    return walk(&w, rest, sizeof(rest), flags, end);
}
