/* The daemon's resident footprint after start-up. Starting touches far more library code
 * than serving does (OpenSSL's provider set-up and self-tests, the estimators' libm and
 * libbz2, config parsing), and the kernel maps each fault's neighbours too (fault-around,
 * 64 KiB): about 6 MiB of read-only file pages that an idle randd never runs again. Once
 * ready, and after each assessment, randd hands those pages back (MADV_DONTNEED); the few it
 * still runs come back from the page cache on their next use, a minor fault each.
 *
 * Only mappings that cannot hold a byte of randd's own are touched: backed by a file, not
 * writable, and with no anonymous (copy-on-write) page in them, resident or swapped out
 * (smaps counts the two apart: Anonymous and Swap). Writable data, relocated read-only data
 * (RELRO: anonymous once relocated), the heap, stacks and locked secrets are left alone, so
 * nothing changes but where the code is read from. */
#include "footprint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct mapping {
    unsigned long start, end;
    char perms[5];
    bool file;
    long anonymous_kb;
    long swap_kb;                       /* anonymous pages swapped out: no longer counted
                                         * in Anonymous, still randd's own */
    long locked_kb;
};

/* Whether the pages of m are copies of its file and nothing else. */
static bool clean_file_pages(const struct mapping *m)
{
    return m->file && m->perms[1] != 'w' && m->anonymous_kb == 0 && m->swap_kb == 0 &&
           m->locked_kb == 0 &&
           m->end > m->start;
}

static size_t release(const struct mapping *m)
{
    if (!clean_file_pages(m))
        return 0;
    return madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) == 0
               ? m->end - m->start : 0;
}

/* A mapping's header line in /proc/self/smaps into m; false for its field lines. */
static bool parse_header(const char *line, struct mapping *m)
{
    char path[8];
    unsigned long inode;
    int n = 0;

    if (sscanf(line, "%lx-%lx %4s %*x %*x:%*x %lu %n", &m->start, &m->end, m->perms, &inode,
               &n) != 4)
        return false;
    /* A file has an inode and a path; "[vdso]", "[stack]" and the like have neither. */
    m->file = inode != 0 && sscanf(line + n, "%7s", path) == 1 && path[0] == '/';
    m->anonymous_kb = -1;               /* unknown until its line is read: not released */
    m->swap_kb = -1;
    m->locked_kb = -1;
    return true;
}

static void parse_field(const char *line, struct mapping *m)
{
    if (!strncmp(line, "Anonymous:", 10))
        m->anonymous_kb = strtol(line + 10, NULL, 10);
    else if (!strncmp(line, "Swap:", 5))
        m->swap_kb = strtol(line + 5, NULL, 10);
    else if (!strncmp(line, "Locked:", 7))
        m->locked_kb = strtol(line + 7, NULL, 10);
}

size_t footprint_release_code(void)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    struct mapping m, header;
    char line[512];
    size_t released = 0;
    bool have = false, line_start = true;

    if (!f)
        return 0;                       /* no /proc: the pages stay, nothing else changes */
    /* A mapping is judged once its fields are read, when the next header comes. A line
     * longer than the buffer (a long path) comes in pieces: only a line's first piece is
     * read as a header or field, never the rest of a path that looks like one. */
    while (fgets(line, sizeof(line), f)) {
        bool at_start = line_start;

        line_start = strchr(line, '\n') != NULL;
        if (!at_start)
            continue;
        if (parse_header(line, &header)) {
            if (have)
                released += release(&m);
            m = header;
            have = true;
        } else if (have) {
            parse_field(line, &m);
        }
    }
    if (have)
        released += release(&m);
    fclose(f);
    return released;
}
