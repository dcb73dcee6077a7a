/* randctl status: the daemon's STATUS, as JSON (--json) or one "path: value" line per field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "randctl.h"

/* One "path: value" line per field ("sources[0].state: healthy"): readable, and easy to
 * grep in scripts. */
static int summarise(const char *json)
{
    struct json_flat flat;

    if (json_flatten(json, &flat) < 0) {
        fprintf(stderr, "randctl: status: the daemon's STATUS is not valid JSON\n");
        return EXIT_FAILED;
    }
    for (size_t i = 0; i < flat.count; i++)
        printf("%s: %s\n", flat.pairs[i].path, flat.pairs[i].value);
    json_flat_free(&flat);
    return EXIT_OK;
}

static int run_status(int argc, char **argv)
{
    int json = argc == 2 && !strcmp(argv[1], "--json");
    char *text;
    int rc;

    if (argc > 2 || (argc == 2 && !json))
        return usage_error(&cmd_status, "bad argument: %s", argv[argc - 1]);
    if ((rc = fetch_status("status", &text)) != EXIT_OK)
        return rc;
    if (json)
        fputs(text, stdout);
    else
        rc = summarise(text);
    free(text);
    return rc;
}

const struct command cmd_status = {
    "status", "status [--json]                  how the daemon is doing", run_status,
};
