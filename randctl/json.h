/* A small JSON reader for randd's STATUS: flattens a document into (path, value) pairs such
 * as "pool.reseeds" = "5" or "sources[1].state" = "healthy". Strings are unescaped; other
 * scalars are kept as written. Enough for what randd writes, strict about syntax. */
#ifndef RANDCTL_JSON_H
#define RANDCTL_JSON_H

#include <stddef.h>

struct json_pair {
    char path[96];
    char value[256];
};

struct json_flat {
    struct json_pair *pairs;
    size_t count, cap;
};

/* Returns 0, or -1 when text is not valid JSON (or nests too deep). */
int json_flatten(const char *text, struct json_flat *out);
void json_flat_free(struct json_flat *f);

/* The value at path, or NULL. */
const char *json_get(const struct json_flat *f, const char *path);

#endif
