/* Output files a user names (assess --report, --capture --output, metrics --output): the one
 * place randd and randctl create or replace them. Run as root in a directory others can
 * write (/tmp), a plain fopen(path, "w") follows a symlink someone planted there and
 * truncates whatever it points at, and writes through a planted hard link into the file it
 * shares. So nothing here opens the path itself:
 *   - the directory is opened once (O_PATH), walked to name by name, and every step after
 *     is relative to it;
 *   - the file is written as a temporary of our own, created with O_EXCL | O_NOFOLLOW under a
 *     random name beside it, and only then renamed to the name: a rename replaces a directory
 *     entry, never writes through it;
 *   - what is at the name is checked before any work and again at the rename (output_rule).
 * A symlink on the way to the directory is followed only when root or we own it
 * (open_directory). What the file holds is the caller's business. */
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_TRIES 16            /* random names tried before giving up (EEXIST each time) */
#define TMP_RANDOM 8            /* random characters in a temporary file's name */

static int say(char *why, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

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

/* --- what may be at the name ------------------------------------------------------------
 * A symlink is never followed or replaced: it is what an attacker plants, and it is not what
 * the user asked us to write. Under REPLACE a file of ours with one link may go (a metrics
 * textfile rewritten every minute, --force); another uid's file or one with a second name
 * may be someone's trap or someone's data, and stays. */

static int output_rule(const struct randd_output *o, char *why, size_t len)
{
    struct stat st;
    char target[PATH_MAX];
    ssize_t n;

    if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : say(why, len, -errno, "%s: %s", o->path, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        n = readlinkat(o->dirfd, o->name, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        return say(why, len, -EPERM, "%s: a symbolic link (to %s, uid %u's): not written "
                   "through, not replaced", o->path, n > 0 ? target : "?", (unsigned)st.st_uid);
    }
    if (o->rule == RANDD_OUTPUT_NEW)
        return say(why, len, -EEXIST, "%s: already exists; not replaced", o->path);
    if (!S_ISREG(st.st_mode))
        return say(why, len, -EPERM, "%s: exists and is not a regular file; not replaced",
                   o->path);
    if (st.st_nlink > 1)
        return say(why, len, -EPERM, "%s: a file with %lu hard links (another name shares "
                   "what it holds); not replaced", o->path, (unsigned long)st.st_nlink);
    if (st.st_uid != geteuid())
        return say(why, len, -EPERM, "%s: belongs to uid %u, not to uid %u; not replaced",
                   o->path, (unsigned)st.st_uid, (unsigned)geteuid());
    return 0;
}

/* --- the way to the directory ------------------------------------------------------------
 * The directory is reached one name at a time from / (or the working directory), each opened
 * O_PATH | O_NOFOLLOW in the one before, so a symlink on the way is seen for what it is. One
 * is followed only when root or the effective uid owns it: what the kernel's
 * fs.protected_symlinks does in sticky directories, here wherever the link is and whatever the
 * sysctl says. Otherwise nobody's /tmp/d -> /etc would have root's --output /tmp/d/x write
 * the x of nobody's choosing in /etc. */

#define MAX_LINKS 40            /* symlinks followed on the way before ELOOP, as the kernel's */

/* The symlink at link_fd (O_PATH, not followed), met as walked + comp: if root or we own it,
 * rest becomes its target followed by left (what was left to walk), and o->dirfd moves to /
 * when the target is absolute (returns 1 then, else 0). */
static int follow_symlink(struct randd_output *o, int link_fd, const struct stat *st,
                          const char *walked, const char *comp, const char *left, char *rest,
                          int *links, char *why, size_t len)
{
    char target[PATH_MAX], spliced[PATH_MAX];
    ssize_t n = readlinkat(link_fd, "", target, sizeof(target) - 1);
    int root;

    if (n <= 0)
        return say(why, len, n < 0 ? -errno : -ENOENT, "%s: the symbolic link %s%s: %s",
                   o->path, walked, comp, n < 0 ? strerror(errno) : "empty");
    target[n] = '\0';
    if (st->st_uid != 0 && st->st_uid != geteuid())
        return say(why, len, -EPERM, "%s: %s%s is a symbolic link (to %s) of uid %u's; one on "
                   "the way is followed only when root's%s", o->path, walked, comp, target,
                   (unsigned)st->st_uid, geteuid() ? " or yours" : "");
    if (++*links > MAX_LINKS)
        return say(why, len, -ELOOP, "%s: more than %d symbolic links on the way", o->path,
                   MAX_LINKS);
    if ((size_t)snprintf(spliced, sizeof(spliced), "%s/%s", target, left) >= sizeof(spliced))
        return say(why, len, -ENAMETOOLONG, "%s: the symbolic link %s%s makes the path longer "
                   "than %d bytes", o->path, walked, comp, PATH_MAX - 1);
    memcpy(rest, spliced, sizeof(spliced));
    if (target[0] != '/')
        return 0;
    if ((root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return say(why, len, -errno, "%s: /: %s", o->path, strerror(errno));
    close(o->dirfd);
    o->dirfd = root;
    return 1;                   /* walked starts again at / */
}

/* Splits path into its directory (opened, O_PATH, in o->dirfd) and its last entry's name. */
static int open_directory(struct randd_output *o, const char *path, char *why, size_t len)
{
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    char rest[PATH_MAX], walked[PATH_MAX];      /* to walk yet; walked so far, for messages */
    int links = 0;

    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return say(why, len, -EISDIR, "%s: names a directory, not a file", path);
    if (strlen(name) > NAME_MAX)
        return say(why, len, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
    snprintf(o->name, sizeof(o->name), "%s", name);
    snprintf(rest, sizeof(rest), "%.*s", slash ? (int)(slash - path) : 0, path);
    snprintf(walked, sizeof(walked), "%s", path[0] == '/' ? "/" : "");
    if ((o->dirfd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return say(why, len, -errno, "%s: %s: %s", path, path[0] == '/' ? "/" : ".",
                   strerror(errno));
    for (char *next = rest; *next;) {
        size_t n = strcspn(next, "/"), w = strlen(walked);
        char comp[NAME_MAX + 1];
        struct stat st;
        int fd, rc;

        if (n > NAME_MAX)
            return say(why, len, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
        memcpy(comp, next, n);
        comp[n] = '\0';
        next += n + strspn(next + n, "/");
        if (!n)
            continue;
        /* O_DIRECTORY first: like the open(dir) it replaces, it mounts an automount point
         * (autofs: /home, /boot) on the way. A symlink or a file fails it with ENOTDIR and
         * is opened as it is. */
        fd = openat(o->dirfd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 && errno == ENOTDIR)
            fd = openat(o->dirfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return say(why, len, -errno, "%s: %s%s: %s", path, walked, comp,
                       errno == ENOENT ? "does not exist" : strerror(errno));
        if (fstat(fd, &st) < 0) {
            rc = -errno;
            close(fd);
            return say(why, len, rc, "%s: %s%s: %s", path, walked, comp, strerror(-rc));
        }
        if (S_ISLNK(st.st_mode)) {
            rc = follow_symlink(o, fd, &st, walked, comp, next, rest, &links, why, len);
            close(fd);
            if (rc < 0)
                return rc;
            if (rc == 1)
                snprintf(walked, sizeof(walked), "/");
            next = rest;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            close(fd);
            return say(why, len, -ENOTDIR, "%s: %s%s: not a directory", path, walked, comp);
        }
        close(o->dirfd);
        o->dirfd = fd;
        snprintf(walked + w, sizeof(walked) - w, "%s/", comp);     /* a message's: may cut */
    }
    return 0;
}

/* --- the temporary file ------------------------------------------------------------------- */

/* ".NAME.XXXXXXXX": hidden, and never matching the name's own pattern (a collector reading
 * *.prom does not read a half-written one). */
static int create_temporary(struct randd_output *o, mode_t mode, char *why, size_t len)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    int keep = NAME_MAX - 2 - TMP_RANDOM;

    for (int tries = 0; tries < TMP_TRIES; tries++) {
        unsigned char r[TMP_RANDOM];
        char suffix[TMP_RANDOM + 1], tmp[NAME_MAX + 1];
        int fd;

        if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
            return say(why, len, -errno, "%s: getrandom: %s", o->path, strerror(errno));
        for (int i = 0; i < TMP_RANDOM; i++)
            suffix[i] = alphabet[r[i] % (sizeof(alphabet) - 1)];
        suffix[TMP_RANDOM] = '\0';
        snprintf(tmp, sizeof(tmp), ".%.*s.%s", keep, o->name, suffix);
        fd = openat(o->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0) {          /* ours from here: abort removes it */
            o->fd = fd;
            memcpy(o->tmp, tmp, sizeof(tmp));
            break;
        }
        if (errno != EEXIST)
            return say(why, len, -errno, "%s: cannot create a file beside it: %s", o->path,
                       strerror(errno));
    }
    if (o->fd < 0)
        return say(why, len, -EEXIST, "%s: no free temporary name after %d tries", o->path,
                   TMP_TRIES);
    if (fchmod(o->fd, mode) < 0) {      /* the mode asked for, whatever the umask */
        int rc = -errno;

        randd_output_abort(o);
        return say(why, len, rc, "%s: %s", o->path, strerror(-rc));
    }
    return 0;
}

int randd_output_open(struct randd_output *o, const char *path, mode_t mode,
                      enum randd_output_rule rule, char *why, size_t len)
{
    int rc;

    memset(o, 0, sizeof(*o));
    o->live = true;
    o->fd = o->dirfd = -1;
    o->rule = rule;
    if (strlen(path) >= sizeof(o->path)) {
        randd_output_abort(o);
        return say(why, len, -ENAMETOOLONG, "%.64s...: a path longer than %d bytes", path,
                   PATH_MAX - 1);
    }
    snprintf(o->path, sizeof(o->path), "%s", path);
    if ((rc = open_directory(o, path, why, len)) < 0 || (rc = output_rule(o, why, len)) < 0 ||
        (rc = create_temporary(o, mode, why, len)) < 0) {
        randd_output_abort(o);
        return rc;
    }
    return 0;
}

FILE *randd_output_stream(struct randd_output *o)
{
    if (o->live && !o->stream && o->fd >= 0)
        o->stream = fdopen(o->fd, "w");
    return o->stream;
}

/* --- putting it in place ----------------------------------------------------------------- */

static int close_temporary(struct randd_output *o)
{
    int err = 0;

    if (o->stream) {
        if (fflush(o->stream) != 0)
            err = errno;
        else if (ferror(o->stream))
            err = EIO;          /* an earlier write failed; its errno is gone by now */
        if (!err && fsync(fileno(o->stream)) < 0)
            err = errno;
        if (fclose(o->stream) != 0 && !err)
            err = errno;
    } else if (o->fd >= 0) {
        if (fsync(o->fd) < 0)
            err = errno;
        if (close(o->fd) < 0 && !err)
            err = errno;
    }
    o->stream = NULL;
    o->fd = -1;
    return -err;
}

/* Never over anything: RENAME_NOREPLACE, or link() where the filesystem lacks it. */
static int rename_noreplace(const struct randd_output *o)
{
    if (renameat2(o->dirfd, o->tmp, o->dirfd, o->name, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (linkat(o->dirfd, o->tmp, o->dirfd, o->name, 0) < 0)
        return -errno;
    unlinkat(o->dirfd, o->tmp, 0);
    return 0;
}

int randd_output_commit(struct randd_output *o, char *why, size_t len)
{
    int rc;

    if ((rc = close_temporary(o)) < 0)
        say(why, len, rc, "%s: writing: %s", o->path, strerror(-rc));
    else if (o->rule == RANDD_OUTPUT_NEW && (rc = rename_noreplace(o)) < 0)
        say(why, len, rc, rc == -EEXIST ? "%s: created by someone else while it was written; "
            "not replaced" : "%s: %s", o->path, strerror(-rc));
    else if (o->rule == RANDD_OUTPUT_REPLACE && (rc = output_rule(o, why, len)) == 0 &&
             renameat(o->dirfd, o->tmp, o->dirfd, o->name) < 0)
        rc = say(why, len, -errno, "%s: %s", o->path, strerror(errno));
    if (rc == 0)
        o->tmp[0] = '\0';       /* in place: nothing for abort to remove */
    randd_output_abort(o);
    return rc;
}

void randd_output_abort(struct randd_output *o)
{
    if (!o->live)
        return;
    o->live = false;
    if (o->stream)
        fclose(o->stream);
    else if (o->fd >= 0)
        close(o->fd);
    o->stream = NULL;
    o->fd = -1;
    if (o->dirfd >= 0) {
        if (o->tmp[0])
            unlinkat(o->dirfd, o->tmp, 0);
        close(o->dirfd);
    }
    o->dirfd = -1;
    o->tmp[0] = '\0';
}

int randd_output_create_new(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

    return fd >= 0 ? fd : -errno;
}
