/* randctl status: the daemon's STATUS, as JSON (--json) or one "path: value" line per field,
 * and (text only) whether this client maps the VM generation word beside the socket. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generation.h"
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

/* Not the daemon's word but this client's view of it: mapped as librandd's generators map it
 * (lib/generation.c, with the same checks), or why not. */
static void show_generation_word(void)
{
    char path[PATH_MAX], why[PATH_MAX + 160];
    const uint64_t *word;

    if (randd_generation_path(daemon_socket(), path, sizeof(path)) < 0)
        return;
    word = randd_generation_map(path, why, sizeof(why));
    if (word)
        printf("librandd.vm_generation_word: mapped %s (generation %llu)\n", path,
               (unsigned long long)randd_generation_load(word));
    else
        printf("librandd.vm_generation_word: unavailable: %s\n", why);
    randd_generation_unmap(word);
}

static int run_status(int argc, char **argv)
{
    int json = argc == 2 && !strcmp(argv[1], "--json");
    int keys = argc == 2 && !strcmp(argv[1], "--keys");
    char *text;
    int rc;

    if (argc > 2 || (argc == 2 && !json && !keys))
        return usage_error(&cmd_status, "bad argument: %s", argv[argc - 1]);
    if ((rc = fetch_status("status", &text)) != EXIT_OK)
        return rc;
    if (json)
        fputs(text, stdout);
    else if ((rc = summarise(text)) == EXIT_OK)
        show_generation_word();
    free(text);
    return rc;
}

const struct command cmd_status = {
    "status", "status [--json]                  how the daemon is doing", run_status,
};
