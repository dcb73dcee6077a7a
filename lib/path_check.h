/* Who could have put the thing a path names there: a walk of the path as written, from "/",
 * that checks every directory it passes through, symlinks followed by hand. Used before
 * librandd believes a daemon at a socket (client.c) or maps a generation word
 * (generation.c); what the entry at the end is, is for the caller to check. */
#ifndef RANDD_PATH_CHECK_H
#define RANDD_PATH_CHECK_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* uid for randd_path_check: "whoever owns the directory that holds the last entry". */
#define RANDD_PATH_FINAL_OWNER ((uid_t)-1)
/* flags: a symlink as the last component is followed (else it is the entry returned). */
#define RANDD_PATH_FOLLOW_LAST 1

struct randd_path_end {
    int dirfd;                      /* O_PATH: the directory that holds the last entry */
    uid_t owner;                    /* its owner */
    char name[NAME_MAX + 1];        /* the last entry's name in it */
    char dir[PATH_MAX];             /* the directory as the walk reached it, for messages */
};

/* Walks path (a relative one from getcwd()) component by component with openat(O_NOFOLLOW),
 * following each symlink by hand (at most 40; an absolute target restarts from "/", ".."
 * goes to the parent of where the walk is). Every directory it passes through, and the one
 * that holds the last entry, must belong to root or to uid (RANDD_PATH_FINAL_OWNER: the
 * last directory's owner) and be writable by no group or others. One exception: a sticky
 * directory of root's (/tmp) may be passed through to an entry of root's, which no one else
 * can rename or remove there (unlink(2), rename(2): EPERM). It does not hold the last entry.
 * Returns 0 with end filled in (the caller closes end->dirfd), or -EPERM (a directory
 * someone else could change), -ELOOP, or another negative errno, with why saying which
 * directory and what is wrong. The last entry itself is not checked. */
int randd_path_check(const char *path, uid_t uid, int flags, struct randd_path_end *end,
                     char *why, size_t len);

#endif
