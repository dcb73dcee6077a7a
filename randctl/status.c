/* randctl status: the daemon's STATUS, as JSON (--json) or as an indented summary written
 * straight from the JSON text (keys and values, one per line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randctl.h"

/* A small recursive printer over the JSON randd itself writes: objects become indented
 * "key: value" lines, array items "- value" lines. Returns where it stopped. */
static const char *print_value(const char *p, int depth);

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static const char *print_scalar(const char *p)
{
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
            putchar(*p == '\\' && p[1] ? *++p : *p);
        return *p ? p + 1 : p;
    }
    for (; *p && !strchr(",}]", *p); p++)
        putchar(*p);
    return p;
}

/* Prints a container's members or items on their own lines at depth. */
static const char *print_container(const char *p, int depth)
{
    char close = *p == '{' ? '}' : ']';
    int object = *p == '{';

    for (p = skip_space(p + 1); *p && *p != close; p = skip_space(p)) {
        printf("%*s", 2 * depth, "");
        if (object) {
            p = print_scalar(p);                 /* the key */
            p = skip_space(p);
            p += *p == ':';
            printf(":");
        } else {
            printf("-");
        }
        p = print_value(skip_space(p), depth + 1);
        p = skip_space(p);
        p += *p == ',';
    }
    return *p ? p + 1 : p;
}

static const char *print_value(const char *p, int depth)
{
    if (*p == '{' || *p == '[') {
        if (p[1] == (*p == '{' ? '}' : ']')) {
            printf(" (none)\n");
            return p + 2;
        }
        putchar('\n');
        return print_container(p, depth);
    }
    putchar(' ');
    p = print_scalar(p);
    putchar('\n');
    return p;
}

static void summarise(const char *json)
{
    const char *p = skip_space(json);

    if (*p == '{')
        print_container(p, 0);
}

static int run_status(int argc, char **argv)
{
    int json = argc == 2 && !strcmp(argv[1], "--json");
    randd_handle *h;
    char *text = NULL;
    int rc;

    if (argc > 2 || (argc == 2 && !json))
        return usage_error(&cmd_status, "bad argument: %s", argv[argc - 1]);
    if ((rc = open_daemon(&h)) != EXIT_OK)
        return rc;
    rc = randd_status(h, &text);
    randd_close(h);
    if (rc < 0)
        return fail("status", rc);
    if (json)
        fputs(text, stdout);
    else
        summarise(text);
    free(text);
    return EXIT_OK;
}

const struct command cmd_status = {
    "status", "status [--json]                  how the daemon is doing", run_status,
};
