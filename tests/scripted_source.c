/* The scripted source behind tests/scripted_source.h. */
#include "scripted_source.h"

#include <string.h>

uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next_word(struct scripted *s)
{
    static const uint64_t cycle[3] = { 0x0123456789abcdefull, 0xfedcba9876543210ull,
                                       0x5555aaaa5555aaaaull };

    switch (s->pattern) {
    case SCRIPT_STUCK_ZERO: return 0;
    case SCRIPT_STUCK_ONES: return ~0ull;
    case SCRIPT_CYCLE3: return cycle[s->state++ % 3];
    default: return splitmix64(&s->state);
    }
}

static ssize_t scripted_read(struct source *src, uint8_t *buf, size_t n)
{
    struct scripted *s = (struct scripted *)src;
    size_t done = 0;

    if (s->pattern == SCRIPT_EMPTY)
        return 0;
    for (; done + 8 <= n; done += 8) {
        uint64_t w = next_word(s);

        memcpy(buf + done, &w, 8);
    }
    return (ssize_t)done;
}

static const struct source_ops scripted_ops = { .read = scripted_read };

void scripted_init(struct scripted *s, const char *name, enum script_pattern pattern,
                   uint64_t seed, bool kernel_creditable)
{
    source_init(&s->source, name, &scripted_ops, 4.0, 8, kernel_creditable);
    s->pattern = pattern;
    s->state = seed;
}
