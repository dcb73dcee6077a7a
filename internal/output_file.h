/* How randd and randctl create or replace a file a user names on the command line (assess
 * --report, --capture --output, metrics --output, the benchmark's scratch files): never
 * through a symlink or a hard link someone else put at the path or on the way to it. Owns the
 * checks and the temporary-file-and-rename; what goes into the file is the caller's. */
#ifndef RANDD_OUTPUT_FILE_H
#define RANDD_OUTPUT_FILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* What may be at the path already. NEW: nothing (an existing entry is refused, -EEXIST).
 * REPLACE: nothing, or a regular file of ours (the effective uid's) with one link, which the
 * new file replaces by rename; a symlink, anything not a regular file, another uid's file or
 * one with more than one link is refused (-EPERM) as under NEW. */
enum randd_output_rule { RANDD_OUTPUT_NEW, RANDD_OUTPUT_REPLACE };

struct randd_output {
    bool live;                      /* opened and not yet committed or aborted; a zeroed
                                     * struct is not, and abort leaves it alone */
    int fd;                         /* the temporary file, open for writing; -1: none */
    FILE *stream;                   /* randd_output_stream()'s, over fd; NULL: none */
    int dirfd;                      /* O_PATH: the directory the file goes in */
    enum randd_output_rule rule;
    char name[NAME_MAX + 1];        /* the file's name in it */
    char tmp[NAME_MAX + 1];         /* the temporary file's */
    char path[PATH_MAX];            /* as given, for messages */
};

/* Checks path as rule says and creates, in its directory, a temporary file of mode (whatever
 * the umask) with O_EXCL and O_NOFOLLOW and a random name, for the caller to write through
 * o->fd or randd_output_stream(). Nothing is at path yet. A symlink on the way to the
 * directory is followed only when root or the effective uid owns it. Returns 0, or a negative
 * errno with why naming the path and the problem (-EEXIST: something is there and rule is
 * NEW; -EPERM: something there that is never replaced, or another user's symlink on the way;
 * -ENOENT: no such directory; -ENAMETOOLONG: PATH_MAX or more; ...). */
int randd_output_open(struct randd_output *o, const char *path, mode_t mode,
                      enum randd_output_rule rule, char *why, size_t len);

/* A stdio stream over the temporary file (NULL with errno set); randd_output_commit closes
 * it. */
FILE *randd_output_stream(struct randd_output *o);

/* Flushes and syncs the temporary file and puts it at the path: under NEW never over anything
 * (a file that appeared meanwhile stays, -EEXIST), under REPLACE over what the rule allows,
 * checked again now. The temporary file is removed on failure. Returns 0 or a negative errno
 * with why. Either way o is finished with. */
int randd_output_commit(struct randd_output *o, char *why, size_t len);

/* Removes the temporary file and closes everything: nothing is left at the path. Safe on an
 * o that failed to open or was committed already. */
void randd_output_abort(struct randd_output *o);

/* For a file in a directory of the caller's own making (mkdtemp): open(O_CREAT | O_EXCL |
 * O_NOFOLLOW) of mode, with no temporary file. Returns the fd or a negative errno. */
int randd_output_create_new(const char *path, int flags, mode_t mode);

#endif
