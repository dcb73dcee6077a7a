/* Recursive descent over JSON text, building dotted paths as it goes. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 16

struct reader {
    const char *p;
    struct json_flat *out;
};

static void skip_space(struct reader *r)
{
    while (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')
        r->p++;
}

static int add_pair(struct reader *r, const char *path, const char *value)
{
    struct json_flat *f = r->out;

    if (f->count == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        struct json_pair *bigger = realloc(f->pairs, cap * sizeof(*bigger));

        if (!bigger)
            return -1;
        f->pairs = bigger;
        f->cap = cap;
    }
    snprintf(f->pairs[f->count].path, sizeof(f->pairs[0].path), "%s", path);
    snprintf(f->pairs[f->count].value, sizeof(f->pairs[0].value), "%s", value);
    f->count++;
    return 0;
}

/* Reads a string into out (truncated to cap); escapes \uXXXX become '?' unless ASCII. */
static int read_string(struct reader *r, char *out, size_t cap)
{
    size_t n = 0;

    if (*r->p++ != '"')
        return -1;
    for (; *r->p && *r->p != '"'; r->p++) {
        char c = *r->p;

        if (c == '\\') {
            c = *++r->p;
            if (c == 'u') {
                unsigned code;

                if (sscanf(r->p + 1, "%4x", &code) != 1)
                    return -1;
                c = code < 0x80 ? (char)code : '?';
                r->p += 4;
            } else if (c == 'n') {
                c = '\n';
            } else if (c == 't') {
                c = '\t';
            } else if (!strchr("\"\\/bfr", c)) {
                return -1;
            }
        }
        if (n + 1 < cap)
            out[n++] = c;
    }
    if (*r->p != '"')
        return -1;
    r->p++;
    out[n] = '\0';
    return 0;
}

static int read_value(struct reader *r, const char *path, int depth);

static int read_container(struct reader *r, const char *path, int depth)
{
    char close = *r->p == '{' ? '}' : ']', child[96], key[64];
    int object = *r->p == '{';

    if (depth >= MAX_DEPTH)
        return -1;
    r->p++;
    skip_space(r);
    for (size_t i = 0; *r->p != close; i++) {
        if (i > 0) {
            if (*r->p++ != ',')
                return -1;
            skip_space(r);
        }
        if (object) {
            if (read_string(r, key, sizeof(key)) < 0)
                return -1;
            skip_space(r);
            if (*r->p++ != ':')
                return -1;
            snprintf(child, sizeof(child), "%s%s%s", path, *path ? "." : "", key);
        } else {
            snprintf(child, sizeof(child), "%s[%zu]", path, i);
        }
        skip_space(r);
        if (read_value(r, child, depth + 1) < 0)
            return -1;
        skip_space(r);
    }
    r->p++;
    return 0;
}

static int read_value(struct reader *r, const char *path, int depth)
{
    char value[256];
    size_t n = 0;

    if (*r->p == '{' || *r->p == '[')
        return read_container(r, path, depth);
    if (*r->p == '"') {
        if (read_string(r, value, sizeof(value)) < 0)
            return -1;
        return add_pair(r, path, value);
    }
    while (*r->p && !strchr(",}] \n\t\r", *r->p) && n + 1 < sizeof(value))
        value[n++] = *r->p++;
    value[n] = '\0';
    if (n == 0)
        return -1;
    return add_pair(r, path, value);
}

int json_flatten(const char *text, struct json_flat *out)
{
    struct reader r = { text, out };

    memset(out, 0, sizeof(*out));
    skip_space(&r);
    if (*r.p != '{' || read_value(&r, "", 0) < 0)
        goto bad;
    skip_space(&r);
    if (*r.p == '\0')
        return 0;
bad:
    json_flat_free(out);
    return -1;
}

void json_flat_free(struct json_flat *f)
{
    free(f->pairs);
    memset(f, 0, sizeof(*f));
}

const char *json_get(const struct json_flat *f, const char *path)
{
    for (size_t i = 0; i < f->count; i++)
        if (!strcmp(f->pairs[i].path, path))
            return f->pairs[i].value;
    return NULL;
}
