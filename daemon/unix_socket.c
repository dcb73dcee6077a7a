/* Binds a listening Unix socket path safely, for the client and the EGD listeners; knows
 * nothing of the protocols behind them.
 *
 * A path is someone else's unless proven stale: bind first (it fails on anything already
 * there), and only then look at what is there with lstat, never following a symlink. A
 * socket that refuses a connection has no listener left (a killed randd) and is replaced;
 * anything else (a file, a directory, a symlink, a socket someone answers on) is refused
 * and left as it was. The identity of the socket file we bound is kept, so that on exit we
 * remove it and never a socket another daemon bound at the same path since.
 *
 * The directory is checked first: whoever may write it may rename the socket, put a symlink
 * or a file of their own in its place (the generation word beside it too), between any two
 * of our steps. So it, and every directory above it, must belong to root or to the uid randd
 * runs as (now, or as `user`), and only sticky ones above it (/tmp) may be writable by
 * others. The mode is set by the umask at bind() and the group with lchown, so nothing here
 * follows a symlink that may have been put at the path since. */
#include "unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

enum probe { PROBE_STALE, PROBE_LIVE, PROBE_NOT_OURS };

/* --- the directory ----------------------------------------------------------------------- */

/* Whether uid could only be randd itself: root, the uid it runs as, or `user`'s. */
static bool randds_uid(uid_t uid, uid_t user_uid)
{
    return uid == 0 || uid == geteuid() || uid == user_uid;
}

/* One directory on the way up: 0, or -1 with why. top: the socket's own directory, where no
 * one else may add an entry, sticky or not. A symlink (as /var/run) is judged by its owner;
 * where it leads is checked in the pass over the real path. */
static int check_one_dir(const char *what, const char *path, const char *at, bool top,
                         bool follow, uid_t user_uid, char *why, size_t whylen)
{
    struct stat st;
    bool link;

    if ((follow ? stat(at, &st) : lstat(at, &st)) < 0)
        return snprintf(why, whylen, "%s %s: its directory %s: %s", what, path, at,
                        strerror(errno)), -1;
    link = S_ISLNK(st.st_mode);
    if (!randds_uid(st.st_uid, user_uid))
        return snprintf(why, whylen, "%s %s: %s belongs to uid %u, not to root or the user "
                                     "randd runs as, who could replace the socket; refusing "
                                     "to listen there", what, path, at, (unsigned)st.st_uid),
               -1;
    if (!link && (st.st_mode & (S_IWGRP | S_IWOTH)) && (top || !(st.st_mode & S_ISVTX)))
        return snprintf(why, whylen, "%s %s: %s is writable by %s (mode %04o), who could "
                                     "replace the socket; refusing to listen there", what,
                        path, at, st.st_mode & S_IWOTH ? "others" : "its group",
                        (unsigned)(st.st_mode & 07777)), -1;
    return 0;
}

/* Every directory of dir, from dir up to "/": 0, or -1 with why. */
static int check_dirs_up(const char *what, const char *path, char *dir, bool follow,
                         uid_t user_uid, char *why, size_t whylen)
{
    char *cut;

    for (bool top = true;; top = false) {
        if (check_one_dir(what, path, dir[0] ? dir : "/", top, follow, user_uid, why,
                          whylen) < 0)
            return -1;
        if (!dir[0] || !(cut = strrchr(dir, '/')))
            return 0;
        *cut = '\0';
    }
}

/* The socket's directory and those above it, as written and as resolved. */
static int check_directory(const char *what, const char *path, const char *user, char *why,
                           size_t whylen)
{
    const struct passwd *pw = user && user[0] ? getpwnam(user) : NULL;
    uid_t user_uid = pw ? pw->pw_uid : 0;
    char dir[PATH_MAX], *slash, *real;
    int rc;

    snprintf(dir, sizeof(dir), "%s", path);
    if (!(slash = strrchr(dir, '/')))
        snprintf(dir, sizeof(dir), ".");
    else
        *slash = '\0';
    if (!(real = realpath(dir[0] ? dir : "/", NULL)))
        return snprintf(why, whylen, "%s %s: its directory: %s", what, path, strerror(errno)),
               -1;
    rc = check_dirs_up(what, path, dir, false, user_uid, why, whylen);
    if (rc == 0 && strcmp(real, "/"))
        rc = check_dirs_up(what, path, real, true, user_uid, why, whylen);
    free(real);
    return rc;
}

/* --- binding ----------------------------------------------------------------------------- */

static int bind_path(int fd, const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    return bind(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/* Knocks on the socket at path. Non-blocking, so a live daemon with a full backlog answers
 * EAGAIN rather than holding up our start. Sets errno for PROBE_NOT_OURS. */
static enum probe probe_socket(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc, err;

    if (fd < 0)
        return PROBE_NOT_OURS;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    err = errno;
    close(fd);
    errno = err;
    if (rc == 0 || errno == EAGAIN)
        return PROBE_LIVE;
    return errno == ECONNREFUSED ? PROBE_STALE : PROBE_NOT_OURS;
}

/* bind found something at path. Removes it if it is a stale socket (0); otherwise -1 with
 * why, the thing left alone. */
static int remove_if_stale(const char *what, const char *path, char *why, size_t whylen)
{
    struct stat found, now;
    enum probe probe;

    if (lstat(path, &found) < 0)
        return errno == ENOENT ? 0 : (snprintf(why, whylen, "%s %s: %s", what, path,
                                               strerror(errno)), -1);
    if (S_ISLNK(found.st_mode))
        return snprintf(why, whylen, "%s %s: is a symbolic link, not a socket; refusing to "
                                     "replace it", what, path), -1;
    if (!S_ISSOCK(found.st_mode))
        return snprintf(why, whylen, "%s %s: exists and is not a socket; refusing to replace "
                                     "it", what, path), -1;
    probe = probe_socket(path);
    if (probe == PROBE_LIVE)
        return snprintf(why, whylen, "%s %s: another randd is already listening there", what,
                        path), -1;
    if (probe == PROBE_NOT_OURS)
        return snprintf(why, whylen, "%s %s: not a stale stream socket (connect: %s); "
                                     "refusing to replace it", what, path, strerror(errno)), -1;
    /* Remove only the socket that was probed, not one bound there meanwhile. */
    if (lstat(path, &now) < 0 || now.st_dev != found.st_dev || now.st_ino != found.st_ino)
        return snprintf(why, whylen, "%s %s: changed while it was checked; refusing to "
                                     "replace it", what, path), -1;
    log_notice("%s %s: replacing a stale socket (nothing listens on it)", what, path);
    if (unlink(path) < 0 && errno != ENOENT)
        return snprintf(why, whylen, "%s %s: removing the stale socket: %s", what, path,
                        strerror(errno)), -1;
    return 0;
}

/* Binds fd to path, over a stale socket if there is one. Returns 0, or -1 with why. */
static int bind_safely(int fd, const char *what, const char *path, char *why, size_t whylen)
{
    if (bind_path(fd, path) == 0)
        return 0;
    if (errno != EADDRINUSE)
        return snprintf(why, whylen, "%s %s: %s", what, path, strerror(errno)), -1;
    if (remove_if_stale(what, path, why, whylen) < 0)
        return -1;
    if (bind_path(fd, path) < 0)     /* EADDRINUSE again: someone else was quicker */
        return snprintf(why, whylen, "%s %s: %s", what, path, strerror(errno)), -1;
    return 0;
}

/* Records what we bound; then its group and listen. Returns 0, or -1 with errno. */
static int finish_listening(struct unix_socket *us, int fd, gid_t group)
{
    struct stat st;

    if (lstat(us->path, &st) < 0)
        return -1;
    if (!S_ISSOCK(st.st_mode))
        return errno = EEXIST, -1;    /* not what we bound: someone replaced it */
    us->dev = st.st_dev;
    us->ino = st.st_ino;
    us->bound = true;
    if (group != (gid_t)-1 &&
        fchownat(AT_FDCWD, us->path, (uid_t)-1, group, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    return listen(fd, SOMAXCONN);
}

int unix_socket_listen(struct unix_socket *us, const char *what, const char *path,
                       unsigned mode, gid_t group, const char *user, char *why, size_t whylen)
{
    mode_t umask_was;
    int fd, rc;

    memset(us, 0, sizeof(*us));
    if (strlen(path) >= sizeof(us->path))
        return snprintf(why, whylen, "%s %s: path too long for a Unix socket", what, path), -1;
    strcpy(us->path, path);
    if (check_directory(what, path, user, why, whylen) < 0)
        return -1;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return snprintf(why, whylen, "%s %s: socket: %s", what, path, strerror(errno)), -1;
    /* The file is made with its mode: the umask is the process's, and randd opens its
     * sockets before it starts any thread, so no other file is made meanwhile. */
    umask_was = umask(~mode & 0777);
    rc = bind_safely(fd, what, path, why, whylen);
    umask(umask_was);
    if (rc < 0) {
        close(fd);
        return -1;
    }
    if (finish_listening(us, fd, group) < 0) {
        snprintf(why, whylen, "%s %s: %s", what, path, strerror(errno));
        unix_socket_unlink(us);
        close(fd);
        return -1;
    }
    return fd;
}

void unix_socket_unlink(struct unix_socket *us)
{
    struct stat st;

    /* Run as `user`, randd may no longer write the directory it bound in: say so, as the
     * file stays. It is harmless: nothing listens on it, and the next randd replaces it. */
    if (us->bound && lstat(us->path, &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_dev == us->dev && st.st_ino == us->ino && unlink(us->path) < 0)
        log_notice("%s: socket left in place: %s (the next randd replaces it as stale)",
                   us->path, strerror(errno));
    us->bound = false;
}
