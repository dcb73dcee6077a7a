/* randctl status's view for people: the daemon's STATUS (flattened by json.c) laid out to
 * fit a terminal's width. Owns the layout only; status.c fetches, refreshes and picks it. */
#ifndef RANDCTL_STATUS_VIEW_H
#define RANDCTL_STATUS_VIEW_H

#include <stdio.h>

#include "json.h"

struct status_view {
    int width;                       /* columns; no line written is wider */
    int colour;                      /* ANSI colours (a terminal, no NO_COLOR) */
    const struct json_flat *prev;    /* the STATUS before (--watch), for rates, or NULL */
    double seconds;                  /* between prev and now */
    const char *generation;          /* this client's view of the VM generation word */
};

void status_view_print(FILE *out, const struct json_flat *now, const struct status_view *v);

#endif
