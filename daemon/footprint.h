/* What stays resident once randd has started: the start-up code pages handed back. */
#ifndef RANDD_FOOTPRINT_H
#define RANDD_FOOTPRINT_H

#include <stdbool.h>
#include <stddef.h>

/* Drops from this process's resident set every page of a read-only file mapping that holds
 * nothing but the file's own bytes (library and program code, read-only data never
 * relocated); they fault back in from the page cache when next used. Returns the bytes of
 * address space advised (not all of it was resident). Never fails: a mapping it cannot judge
 * is left alone. */
size_t footprint_release_code(void);

#endif
