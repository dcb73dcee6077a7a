/* stderr logging; under systemd the journal reads the "<N>" prefix as the priority. */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static bool to_journal;

/* JOURNAL_STREAM is "device:inode" of the journal's stream; it only counts if stderr is
 * still that stream (a child of a service may have had stderr redirected). */
void log_init(void)
{
    const char *stream = getenv("JOURNAL_STREAM");
    unsigned long dev, ino;
    struct stat st;

    to_journal = stream && sscanf(stream, "%lu:%lu", &dev, &ino) == 2 &&
                 fstat(2, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

void log_msg(int priority, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (to_journal)
        fprintf(stderr, "<%d>%s\n", priority, line);
    else
        fprintf(stderr, "randd: %s\n", line);
}
