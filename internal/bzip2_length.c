/* The bzip2 length of a buffer, counted (bzip2_length.h). Laid out in bzip2's order: the
 * run-length step that fills blocks, the rotation sort and its last column, move-to-front,
 * the choice of coding tables, and the sum of the bits. The numbers that must match libbz2's
 * (100000 * level - 19 bytes a block, runs of 4 to 255, groups of 50 symbols, 2 to 6 tables
 * chosen by the symbol count, 4 refinement passes, code lengths of at most 17 bits) are the
 * bzip2 1.0 format's and bzip2 1.0.8's documented behaviour. */
#include "bzip2_length.h"

#include <endian.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* libbz2 exports its Huffman code-length builder (bzlib_private.h declares it): calling it
 * rather than rewriting it keeps the tables' lengths libbz2's by construction. */
void BZ2_hbMakeCodeLengths(unsigned char *len, int *freq, int alpha_size, int max_len);

#define BLOCK_SLACK   20        /* a run flushed into a full block adds up to 5 bytes */
#define GROUP_SIZE    50        /* symbols coded with one table */
#define MAX_TABLES    6
#define ITERATIONS    4
#define MAX_CODE_LEN  17
#define MAX_ALPHA     258       /* 256 byte values, RUNA/RUNB in place of one, and EOB */
#define DELIMITER     ' '       /* words end in this byte */
#define MAX_WORD      8         /* a word packs into a uint64 key */
#define MAX_TYPES     4096      /* distinct words; more, and the block is sorted bytewise */
#define SHORT_WORD    4         /* "255 ": the statistic's longest word, but for one a block */
#define HASH_SLOTS    (2 * MAX_TYPES)
#define GROUPS(n)     ((n) / GROUP_SIZE + 2)    /* groups of n + 1 symbols, EOB included */
#define PLACE_BITS    20        /* a rotation's place: blocks are under 900,000 + 20 bytes */
#define KEY_BITS      36        /* the first sort's key: the first words, packed */

struct randd_bzlen {
    int level;
    uint32_t block_max;         /* bzip2's nblockMAX */
    size_t cap;                 /* block_max + BLOCK_SLACK */
    uint8_t *block;             /* the block after the run-length step */
    uint8_t *last;              /* its rotations' last column, in rotation order */
    uint8_t *sym;               /* the move-to-front symbols, when they fit a byte */
    uint32_t *word;             /* each word's type, as its rank among the block's types */
    uint32_t *sa, *group;       /* word rotations in order; each one's group number */
    uint64_t *pair, *pair2;     /* sort scratch: key << 32 | rotation, or << PLACE_BITS */
    uint32_t *todo, *next;      /* unsorted groups as (start, length) */
    uint8_t *hist;              /* per group of 50 symbols, each symbol's count */
    uint8_t *choice;            /* per group, its table */

    /* the block's word types */
    uint64_t type_key[MAX_TYPES];       /* the word, first byte highest, zero padded */
    uint64_t type_seq[MAX_TYPES];       /* the same, each byte as its rank among those used */
    uint8_t type_len[MAX_TYPES];
    uint32_t type_freq[MAX_TYPES];
    uint32_t type_rank[MAX_TYPES];
    uint64_t hash_key[HASH_SLOTS];
    uint32_t hash_type[HASH_SLOTS];
    uint64_t tail_key[MAX_TYPES * MAX_WORD];
    uint32_t tail_id[MAX_TYPES * MAX_WORD];     /* by rank * MAX_WORD + offset */
    uint32_t tail_pos[MAX_TYPES * MAX_WORD + 1];  /* and one past the ends of short words */
};

/* --- work arrays -------------------------------------------------------------------------- */

struct randd_bzlen *randd_bzlen_new(int level)
{
    struct randd_bzlen *z;

    if (level < 1 || level > 9 || !(z = calloc(1, sizeof(*z))))
        return NULL;
    z->level = level;
    z->block_max = 100000u * (uint32_t)level - 19;
    z->cap = z->block_max + BLOCK_SLACK;
    z->block = malloc(z->cap);
    z->last = malloc(z->cap);
    z->sym = malloc(z->cap);
    z->word = malloc(z->cap * sizeof(*z->word));
    z->sa = malloc(z->cap * sizeof(*z->sa));
    z->group = malloc(z->cap * sizeof(*z->group));
    z->pair = malloc(z->cap * sizeof(*z->pair));
    z->pair2 = malloc(z->cap * sizeof(*z->pair2));
    z->todo = malloc(z->cap * sizeof(*z->todo));
    z->next = malloc(z->cap * sizeof(*z->next));
    z->hist = malloc(GROUPS(z->cap) * MAX_ALPHA);
    z->choice = malloc(GROUPS(z->cap));
    if (!z->block || !z->last || !z->sym || !z->word || !z->sa || !z->group || !z->pair ||
        !z->pair2 || !z->todo || !z->next || !z->hist || !z->choice) {
        randd_bzlen_free(z);
        return NULL;
    }
    return z;
}

static void release(void *p, size_t len)
{
    if (p) {
        OPENSSL_cleanse(p, len);
        free(p);
    }
}

void randd_bzlen_free(struct randd_bzlen *z)
{
    if (!z)
        return;
    release(z->block, z->cap);
    release(z->last, z->cap);
    release(z->sym, z->cap);
    release(z->word, z->cap * sizeof(*z->word));
    release(z->sa, z->cap * sizeof(*z->sa));
    release(z->group, z->cap * sizeof(*z->group));
    release(z->pair, z->cap * sizeof(*z->pair));
    release(z->pair2, z->cap * sizeof(*z->pair2));
    release(z->todo, z->cap * sizeof(*z->todo));
    release(z->next, z->cap * sizeof(*z->next));
    release(z->hist, GROUPS(z->cap) * MAX_ALPHA);
    release(z->choice, GROUPS(z->cap));
    OPENSSL_cleanse(z, sizeof(*z));
    free(z);
}

/* --- the run-length step: bzip2 fills a block --------------------------------------------- */

/* A run of 4 to 255 equal bytes becomes 4 of them and a count byte; the run being read when
 * a block fills carries over to the next block, as in libbz2. */
struct runs {
    const uint8_t *in;
    size_t n, at;
    unsigned ch, len;           /* the run being read; ch 256: none yet */
};

static void put_run(uint8_t *block, uint32_t *nb, unsigned ch, unsigned len)
{
    for (unsigned i = 0; i < len && i < 4; i++)
        block[(*nb)++] = (uint8_t)ch;
    if (len >= 4)
        block[(*nb)++] = (uint8_t)(len - 4);
}

/* Whether p[0..len) holds 4 equal bytes in a row: 8 bytes at a time, three zero bytes in a
 * row in p[i..i+8) ^ p[i+1..i+9). */
static bool has_run_of_four(const uint8_t *p, size_t len)
{
    const uint64_t low = 0x7f7f7f7f7f7f7f7full;
    size_t i = 0;

    for (; i + 9 <= len; i += 6) {
        uint64_t x, y, e, zero;

        memcpy(&x, p + i, 8);
        memcpy(&y, p + i + 1, 8);
        e = x ^ y;
        zero = ~(((e & low) + low) | e | low);
        if (zero & zero >> 8 & zero >> 16)
            return true;
    }
    for (; i + 4 <= len; i++)
        if (p[i] == p[i + 1] && p[i] == p[i + 2] && p[i] == p[i + 3])
            return true;
    return false;
}

/* Without runs of four, the step copies the bytes and a block ends where the first run to
 * start at block_max bytes or later begins: the block is the input itself. */
static bool plain_block(struct randd_bzlen *z, struct runs *r, const uint8_t **block,
                        uint32_t *nb)
{
    size_t a = r->at - r->len, span = r->n - a, s;

    if (r->len > 1)
        return false;
    if (span > (size_t)z->block_max + 8)
        span = (size_t)z->block_max + 8;
    if (has_run_of_four(r->in + a, span))
        return false;
    *block = r->in + a;
    if (r->n - a <= z->block_max) {
        *nb = (uint32_t)(r->n - a);
        r->at = r->n;
        r->ch = 256;
        r->len = 0;
        return true;
    }
    for (s = a + z->block_max; s < r->n && r->in[s] == r->in[s - 1]; s++)
        ;
    if (s + 1 >= r->n) {        /* the input ran out first: the last block takes the rest */
        *nb = (uint32_t)(r->n - a);
        r->at = r->n;
        r->ch = 256;
        r->len = 0;
        return true;
    }
    *nb = (uint32_t)(s - a);
    r->at = s + 1;
    r->ch = r->in[s];
    r->len = 1;
    return true;
}

/* Fills a block; true when it is the last one. */
static bool fill_block(struct randd_bzlen *z, struct runs *r, const uint8_t **block_out,
                       uint32_t *nb)
{
    uint8_t *block = z->block;
    uint32_t n = 0;
    unsigned ch = r->ch, len = r->len;
    size_t at = r->at;

    if (plain_block(z, r, block_out, nb))
        return r->at == r->n && r->ch == 256;
    while (n < z->block_max && at < r->n) {
        unsigned c = r->in[at++];

        if (c != ch && len == 1) {
            block[n++] = (uint8_t)ch;
            ch = c;
        } else if (c != ch || len == 255) {
            if (ch < 256)
                put_run(block, &n, ch, len);
            ch = c;
            len = 1;
        } else {
            len++;
        }
    }
    *block_out = block;
    r->at = at;
    if (at < r->n) {
        r->ch = ch;
        r->len = len;
        *nb = n;
        return false;
    }
    if (ch < 256)
        put_run(block, &n, ch, len);
    r->ch = 256;
    r->len = 0;
    *nb = n;
    return true;
}

/* --- the rotation sort -------------------------------------------------------------------- */

static uint32_t hash_slot(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 51) & (HASH_SLOTS - 1);
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The word w (len bytes, first highest) as the type it is, a new one if need be; -1 when
 * there are too many. */
static int type_of(struct randd_bzlen *z, uint64_t key, uint32_t len, uint32_t *types)
{
    for (uint32_t h = hash_slot(key);; h = (h + 1) & (HASH_SLOTS - 1)) {
        if (z->hash_key[h] == key) {
            z->type_freq[z->hash_type[h]]++;
            return (int)z->hash_type[h];
        }
        if (z->hash_key[h] == 0) {
            if (*types == MAX_TYPES)
                return -1;
            z->hash_key[h] = key;
            z->hash_type[h] = *types;
            z->type_key[*types] = key;
            z->type_len[*types] = (uint8_t)len;
            z->type_freq[*types] = 1;
            return (int)(*types)++;
        }
    }
}

/* The block as a cyclic sequence of prefix-free words, each the rank of its type in byte
 * order: words ending in DELIMITER, read from just after the first one, when every word fits
 * MAX_WORD and there are at most MAX_TYPES kinds. A word holds the delimiter: its key is
 * never 0, the empty slot. */
static bool words_of(struct randd_bzlen *z, const uint8_t *b, uint32_t nb, uint32_t *m_out,
                     uint32_t *types_out)
{
    const uint8_t *d = memchr(b, DELIMITER, nb);
    uint32_t start, m = 0, types = 0, len = 0;
    uint64_t key = 0;
    uint64_t sorted[MAX_TYPES];

    if (!d)
        return false;
    start = (uint32_t)(d - b) + 1;
    memset(z->hash_key, 0, sizeof(z->hash_key));
    {   /* 8 bytes at a time while a word's 8 bytes can be read whole */
        const uint64_t low = 0x7f7f7f7f7f7f7f7full;
        const uint64_t delimiters = DELIMITER * 0x0101010101010101ull;
        const uint8_t *p = b + start, *word = p;

        for (; p + 16 <= b + nb; p += 8) {
            uint64_t x, e, hit;

            memcpy(&x, p, 8);
            x = le64toh(x);     /* p[0] lowest, so ctz finds the first delimiter on any CPU */
            e = x ^ delimiters;
            hit = ~(((e & low) + low) | e | low);      /* 0x80 where a delimiter is */
            for (; hit; hit &= hit - 1) {
                const uint8_t *at = p + __builtin_ctzll(hit) / 8;
                uint32_t n = (uint32_t)(at - word) + 1;
                uint64_t y;
                int t;

                if (n > MAX_WORD)
                    return false;
                memcpy(&y, word, 8);
                y = be64toh(y) & ~(uint64_t)0 << 8 * (MAX_WORD - n);
                if ((t = type_of(z, y, n, &types)) < 0)
                    return false;
                z->word[m++] = (uint32_t)t;
                word = at + 1;
            }
        }
        for (; word < p; word++) {      /* the word under way, byte by byte from here */
            key = key << 8 | *word;
            len++;
        }
        if (len > MAX_WORD)
            return false;
        start = (uint32_t)(p - b);      /* where the bytewise reading goes on */
    }
    for (uint32_t part = 0; part < 2; part++) {
        const uint8_t *p = part ? b : b + start, *end = part ? b + (d - b) + 1 : b + nb;

        for (; p < end; p++) {
            int t;

            key = key << 8 | *p;
            if (++len > MAX_WORD)
                return false;
            if (*p != DELIMITER)
                continue;
            if ((t = type_of(z, key << 8 * (MAX_WORD - len), len, &types)) < 0)
                return false;
            z->word[m++] = (uint32_t)t;
            key = 0;
            len = 0;
        }
    }
    /* types numbered as first seen; the sort needs them ranked in byte order */
    memcpy(sorted, z->type_key, types * sizeof(*sorted));
    qsort(sorted, types, sizeof(*sorted), by_key);
    for (uint32_t t = 0; t < types; t++) {
        uint32_t h = hash_slot(sorted[t]);

        while (z->hash_key[h] != sorted[t])
            h = (h + 1) & (HASH_SLOTS - 1);
        z->type_rank[z->hash_type[h]] = t;
    }
    {
        uint8_t len_by_rank[MAX_TYPES];
        uint32_t freq_by_rank[MAX_TYPES];

        for (uint32_t t = 0; t < types; t++) {
            len_by_rank[z->type_rank[t]] = z->type_len[t];
            freq_by_rank[z->type_rank[t]] = z->type_freq[t];
        }
        memcpy(z->type_key, sorted, types * sizeof(*sorted));
        memcpy(z->type_len, len_by_rank, types);
        memcpy(z->type_freq, freq_by_rank, types * sizeof(*freq_by_rank));
    }
    for (uint32_t i = 0; i < m; i++)
        z->word[i] = z->type_rank[z->word[i]];
    *m_out = m;
    *types_out = types;
    return true;
}

/* Otherwise each byte is a word. */
static void bytes_of(struct randd_bzlen *z, const uint8_t *b, uint32_t nb, uint32_t *m_out,
                     uint32_t *types_out)
{
    uint32_t rank[256], types = 0;
    uint32_t freq[256] = { 0 };

    for (uint32_t i = 0; i < nb; i++)
        freq[b[i]]++;
    for (unsigned c = 0; c < 256; c++)
        if (freq[c]) {
            rank[c] = types;
            z->type_key[types] = (uint64_t)c << 56;
            z->type_len[types] = 1;
            z->type_freq[types++] = freq[c];
        }
    for (uint32_t i = 0; i < nb; i++)
        z->word[i] = rank[b[i]];
    *m_out = nb;
    *types_out = types;
}

static void insertion_sort(uint64_t *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        uint64_t x = a[i];
        uint32_t j = i;

        for (; j > 0 && a[j - 1] > x; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

/* Sorts the m cyclic rotations of z->word (ranks below sigma) into z->sa, by prefix doubling
 * (Larsson and Sadakane's: only unsorted groups are refined, by the group number h words on,
 * which may already be finer than h words, and so is still in order). Rotations still in one
 * group once h reaches m are equal. */
static void sort_rotations(struct randd_bzlen *z, uint32_t m, uint32_t sigma)
{
    const uint32_t *w = z->word;
    uint32_t *sa = z->sa, *g = z->group, *todo = z->todo, *next = z->next;
    uint64_t *from = z->pair, *to = z->pair2, key = 0, mask;
    uint32_t k, b = 1, groups = 0;

    /* first by the first k words, packed into at most KEY_BITS above the rotation's place
     * and sorted 12 bits at a time from the lowest */
    while ((1u << b) < sigma)
        b++;
    k = KEY_BITS / b < m ? KEY_BITS / b : m;
    mask = ((uint64_t)1 << k * b) - 1;
    for (uint32_t j = 0; j < k; j++)
        key = key << b | w[j];
    for (uint32_t i = 0, ahead = k; i < m; i++, ahead++) {
        if (ahead == m)
            ahead = 0;
        from[i] = key << PLACE_BITS | i;
        key = (key << b | w[ahead]) & mask;
    }
    for (uint32_t shift = PLACE_BITS; shift < PLACE_BITS + k * b; shift += 12) {
        uint32_t count[4096] = { 0 }, at = 0;

        for (uint32_t i = 0; i < m; i++)
            count[from[i] >> shift & 4095]++;
        for (uint32_t d = 0; d < 4096; d++) {
            uint32_t c = count[d];

            count[d] = at;
            at += c;
        }
        for (uint32_t i = 0; i < m; i++)
            to[count[from[i] >> shift & 4095]++] = from[i];
        {
            uint64_t *t = from;

            from = to;
            to = t;
        }
    }
    for (uint32_t i = 0; i < m; i++)
        sa[i] = (uint32_t)(from[i] & ((1u << PLACE_BITS) - 1));
    for (uint32_t end = m; end > 0;) {
        uint32_t start = end - 1;
        uint64_t kk = from[end - 1] >> PLACE_BITS;

        while (start > 0 && from[start - 1] >> PLACE_BITS == kk)
            start--;
        for (uint32_t x = start; x < end; x++)
            g[sa[x]] = end - 1;
        if (end - start > 1) {
            todo[2 * groups] = start;
            todo[2 * groups + 1] = end - start;
            groups++;
        }
        end = start;
    }

    for (uint64_t h = k; groups > 0 && h < m; h *= 2) {
        uint32_t kept = 0;

        for (uint32_t q = 0; q < groups; q++) {
            uint32_t start = todo[2 * q], len = todo[2 * q + 1];
            uint64_t *p = z->pair + start;
            bool same = true;

            for (uint32_t x = 0; x < len; x++) {
                uint32_t r = sa[start + x], ahead = (uint32_t)(r + h < m ? r + h : r + h - m);

                p[x] = (uint64_t)g[ahead] << 32 | r;
                same &= p[x] >> 32 == p[0] >> 32;
            }
            if (same) {                     /* nothing to split at this depth */
                next[2 * kept] = start;
                next[2 * kept + 1] = len;
                kept++;
                continue;
            }
            if (len <= 16)
                insertion_sort(p, len);
            else
                qsort(p, len, sizeof(*p), by_key);
            for (uint32_t x = 0; x < len; x++)
                sa[start + x] = (uint32_t)p[x];
            for (uint32_t end = len; end > 0;) {
                uint32_t first = end - 1;

                while (first > 0 && p[first - 1] >> 32 == p[end - 1] >> 32)
                    first--;
                for (uint32_t x = first; x < end; x++)
                    g[sa[start + x]] = start + end - 1;
                if (end - first > 1) {
                    next[2 * kept] = start + first;
                    next[2 * kept + 1] = end - first;
                    kept++;
                }
                end = first;
            }
        }
        {
            uint32_t *t = todo;

            todo = next;
            next = t;
        }
        groups = kept;
    }
}

/* The last column, each byte as its rank among those used (seq). A rotation starting at
 * offset o of word p is the rest of p (a tail, itself prefix-free) followed by the word
 * rotation at p + 1: the rotations sort by tail, then by that word rotation's place. So
 * walking the word rotations in order and dropping each preceding word's tails into their
 * buckets fills every bucket in order. */
static void last_column(struct randd_bzlen *z, uint32_t m, uint32_t types, const uint8_t *seq)
{
    uint32_t tails = 0, distinct = 0, at = 0;
    uint8_t final[MAX_TYPES];   /* each type's last byte, as seq */

    for (uint32_t t = 0; t < types; t++) {
        z->type_seq[t] = 0;
        for (uint32_t o = 0; o < z->type_len[t]; o++)
            z->type_seq[t] |= (uint64_t)seq[(uint8_t)(z->type_key[t] >> (56 - 8 * o))] <<
                              (56 - 8 * o);
        final[t] = (uint8_t)(z->type_seq[t] >> 8 * (MAX_WORD - z->type_len[t]));
        for (uint32_t o = 0; o < z->type_len[t]; o++)
            z->tail_key[tails++] = z->type_key[t] << 8 * o;
    }
    qsort(z->tail_key, tails, sizeof(*z->tail_key), by_key);
    for (uint32_t i = 0; i < tails; i++)
        if (i == 0 || z->tail_key[i] != z->tail_key[distinct - 1])
            z->tail_key[distinct++] = z->tail_key[i];
    memset(z->tail_pos, 0, distinct * sizeof(*z->tail_pos));
    for (uint32_t t = 0; t < types; t++)
        for (uint32_t o = 0; o < z->type_len[t]; o++) {
            uint64_t key = z->type_key[t] << 8 * o;
            uint32_t lo = 0, hi = distinct - 1;

            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;

                if (z->tail_key[mid] < key)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            z->tail_id[t * MAX_WORD + o] = lo;
            z->tail_pos[lo] += z->type_freq[t];
        }
    for (uint32_t i = 0; i < distinct; i++) {
        uint32_t c = z->tail_pos[i];

        z->tail_pos[i] = at;
        at += c;
    }
    /* Words of up to SHORT_WORD bytes take SHORT_WORD steps, the ones past their end into a
     * bucket that stays at z->last[nb] (the column has room): no branch on a word's length,
     * which would be mispredicted about once a word. */
    z->tail_pos[distinct] = at;
    for (uint32_t t = 0; t < types; t++)
        for (uint32_t o = z->type_len[t]; o < SHORT_WORD; o++)
            z->tail_id[t * MAX_WORD + o] = distinct;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t s = z->sa[i], p = s ? s - 1 : m - 1, q = p ? p - 1 : m - 1;
        uint32_t t = z->word[p], len = z->type_len[t];
        uint64_t key = z->type_seq[t];
        const uint32_t *id = &z->tail_id[t * MAX_WORD];

        z->last[z->tail_pos[id[0]]++] = final[z->word[q]];
        for (uint32_t o = 1; o < SHORT_WORD; o++) {
            uint32_t pos = z->tail_pos[id[o]];

            z->last[pos] = (uint8_t)(key >> (64 - 8 * o));
            z->tail_pos[id[o]] = pos + (o < len);
        }
        for (uint32_t o = SHORT_WORD; o < len; o++)
            z->last[z->tail_pos[id[o]]++] = (uint8_t)(key >> (64 - 8 * o));
    }
}

/* --- move-to-front and the coding tables -------------------------------------------------- */

/* The move-to-front symbols go straight into their group's counts: only the counts of each
 * group of 50 matter to the table choice and the bits. */
struct symbols {
    uint8_t *row;               /* the current group's counts */
    unsigned left;              /* symbols the current group still takes */
    unsigned alpha;
    uint32_t count;             /* nMTF */
};

static inline void put(struct symbols *s, unsigned v)
{
    s->row[v]++;
    s->count++;
    if (--s->left == 0) {
        s->row += s->alpha;
        s->left = GROUP_SIZE;
    }
}

/* put() over symbols v[0..end), kept in locals for the reason CHAIN_STEP gives */
static void put_all(struct symbols *s, const uint8_t *v, const uint8_t *end)
{
    uint8_t *row = s->row;
    unsigned left = s->left;

    s->count += (uint32_t)(end - v);
    for (; v < end; v++) {
        row[*v]++;
        if (--left == 0) {
            row += s->alpha;
            left = GROUP_SIZE;
        }
    }
    s->row = row;
    s->left = left;
}

/* Zero runs in bijective base 2, RUNA (0) for 1 and RUNB (1) for 2, least significant first. */
static void put_zeros(struct symbols *s, uint32_t zeros)
{
    zeros--;
    for (;;) {
        put(s, zeros & 1);
        if (zeros < 2)
            return;
        zeros = (zeros - 2) / 2;
    }
}

/* Up to 16 bytes in use, a move-to-front list fits the nibbles of one word, first place
 * lowest. A chain runs it over part of the last column and writes its symbols as bytes. */
#define CHAINS 4

struct chain {
    uint64_t list;
    uint32_t zeros;             /* the zero run being read */
    uint8_t *out;
};

static uint8_t *zeros_out(uint8_t *out, uint32_t zeros)
{
    zeros--;
    for (;;) {
        *out++ = zeros & 1;
        if (zeros < 2)
            return out;
        zeros = (zeros - 2) / 2;
    }
}

/* One step of a chain held in locals (byte stores through out may alias any memory, so a
 * chain kept in a struct would be reloaded at every step). */
#define CHAIN_STEP(list, zeros, out, byte)                                                   \
    do {                                                                                     \
        const uint64_t ones_ = 0x1111111111111111ull, low_ = 0x7777777777777777ull;          \
        uint8_t c_ = (byte);                                                                 \
        uint64_t x_ = (list) ^ c_ * ones_, zero_ = ~(((x_ & low_) + low_) | x_ | low_);      \
        unsigned j_ = (unsigned)__builtin_ctzll(zero_) / 4;    /* c's place */              \
                                                                                             \
        if (j_ == 0) {                                                                       \
            (zeros)++;                                                                       \
            break;                                                                           \
        }                                                                                    \
        if (zeros) {                                                                         \
            (out) = zeros_out((out), (zeros));                                               \
            (zeros) = 0;                                                                     \
        }                                                                                    \
        (list) = ((list) & ~(((uint64_t)2 << (4 * j_ + 3)) - 1)) |                           \
                 ((list) & (((uint64_t)1 << 4 * j_) - 1)) << 4 | c_;                         \
        *(out)++ = (uint8_t)(j_ + 1);                                                        \
    } while (0)

static void chain_run(struct chain *ch, const uint8_t *l, uint32_t from, uint32_t to)
{
    uint64_t list = ch->list;
    uint32_t zeros = ch->zeros;
    uint8_t *out = ch->out;

    for (uint32_t i = from; i < to; i++)
        CHAIN_STEP(list, zeros, out, l[i]);
    ch->list = list;
    ch->zeros = zeros;
    ch->out = out;
}

/* The list as it stands before l[at]: the bytes seen, most recent first, then the others in
 * their first order. */
static uint64_t list_before(const uint8_t *l, uint32_t at, unsigned in_use)
{
    uint64_t list = 0;
    unsigned seen = 0, place = 0;

    for (uint32_t i = at; i > 0 && place < in_use; i--)
        if (!(seen >> l[i - 1] & 1)) {
            seen |= 1u << l[i - 1];
            list |= (uint64_t)l[i - 1] << 4 * place++;
        }
    for (unsigned c = 0; c < in_use; c++)
        if (!(seen >> c & 1))
            list |= (uint64_t)c << 4 * place++;
    return list;
}

/* The move-to-front of one step depends on the step before: CHAINS chains, each over a
 * part of the column starting at a byte unlike the one before it (so that no zero run
 * crosses a part's start), with the list as it stands there, run side by side. */
static void move_to_front_chains(struct randd_bzlen *z, uint32_t nb, unsigned in_use,
                                 struct symbols *s)
{
    const uint8_t *l = z->last;
    uint32_t start[CHAINS + 1], shortest = nb;
    struct chain ch[CHAINS];

    start[0] = 0;
    start[CHAINS] = nb;
    for (unsigned k = 1; k < CHAINS; k++) {
        uint32_t at = (uint32_t)((uint64_t)nb * k / CHAINS);

        if (at < start[k - 1])
            at = start[k - 1];
        while (at > 0 && at < nb && l[at] == l[at - 1])
            at++;
        start[k] = at;
    }
    for (unsigned k = 0; k < CHAINS; k++) {
        ch[k].list = list_before(l, start[k], in_use);
        ch[k].zeros = 0;
        ch[k].out = z->sym + start[k];     /* a part writes no more symbols than it reads */
        if (start[k + 1] - start[k] < shortest)
            shortest = start[k + 1] - start[k];
    }
    {
        uint64_t list0 = ch[0].list, list1 = ch[1].list, list2 = ch[2].list, list3 = ch[3].list;
        uint32_t zeros0 = 0, zeros1 = 0, zeros2 = 0, zeros3 = 0;
        uint8_t *out0 = ch[0].out, *out1 = ch[1].out, *out2 = ch[2].out, *out3 = ch[3].out;
        const uint8_t *l0 = l + start[0], *l1 = l + start[1], *l2 = l + start[2],
                      *l3 = l + start[3];

        for (uint32_t i = 0; i < shortest; i++) {
            CHAIN_STEP(list0, zeros0, out0, l0[i]);
            CHAIN_STEP(list1, zeros1, out1, l1[i]);
            CHAIN_STEP(list2, zeros2, out2, l2[i]);
            CHAIN_STEP(list3, zeros3, out3, l3[i]);
        }
        ch[0] = (struct chain){ list0, zeros0, out0 };
        ch[1] = (struct chain){ list1, zeros1, out1 };
        ch[2] = (struct chain){ list2, zeros2, out2 };
        ch[3] = (struct chain){ list3, zeros3, out3 };
    }
    for (unsigned k = 0; k < CHAINS; k++) {
        chain_run(&ch[k], l, start[k] + shortest, start[k + 1]);
        if (ch[k].zeros)
            ch[k].out = zeros_out(ch[k].out, ch[k].zeros);
        put_all(s, z->sym + start[k], ch[k].out);
    }
}

/* bzip2's move-to-front over the last column: symbol j + 1 for a byte at place j > 0 of the
 * list, zero runs as above, EOB (in_use + 1) last. Returns nMTF. */
static uint32_t move_to_front(struct randd_bzlen *z, uint32_t nb, unsigned in_use)
{
    const uint8_t *l = z->last;
    struct symbols s = { z->hist, GROUP_SIZE, in_use + 2, 0 };
    uint32_t zeros = 0;

    memset(z->hist, 0, (size_t)GROUPS(nb) * s.alpha);
    if (in_use <= 16) {
        move_to_front_chains(z, nb, in_use, &s);
    } else {
        uint8_t list[256];

        for (unsigned i = 0; i < in_use; i++)
            list[i] = (uint8_t)i;
        for (uint32_t i = 0; i < nb; i++) {
            uint8_t c = l[i], prev;
            unsigned j;

            if (list[0] == c) {
                zeros++;
                continue;
            }
            if (zeros) {
                put_zeros(&s, zeros);
                zeros = 0;
            }
            prev = list[0];
            for (j = 1; list[j] != c; j++) {
                uint8_t t = list[j];

                list[j] = prev;
                prev = t;
            }
            list[j] = prev;
            list[0] = c;
            put(&s, j + 1);
        }
        if (zeros)
            put_zeros(&s, zeros);
    }
    put(&s, in_use + 1);
    return s.count;
}

/* bzip2's table choice and the bits it spends on the selectors, tables and symbols, from
 * each group's symbol counts. */
static uint64_t coded_bits(struct randd_bzlen *z, uint32_t count, unsigned alpha)
{
    unsigned tables = count < 200 ? 2 : count < 600 ? 3 : count < 1200 ? 4 :
                      count < 2400 ? 5 : 6;
    uint32_t groups = (count + GROUP_SIZE - 1) / GROUP_SIZE;
    unsigned char len[MAX_TABLES][MAX_ALPHA];
    int rfreq[MAX_TABLES][MAX_ALPHA], freq[MAX_ALPHA] = { 0 };
    uint64_t bits = 3 + 15;
    int remaining = (int)count, gs = 0;

    for (uint32_t g = 0; g < groups; g++)
        for (unsigned v = 0; v < alpha; v++)
            freq[v] += z->hist[(size_t)g * alpha + v];
    /* the initial partition: tables cover consecutive symbol ranges of about equal weight */
    for (int part = (int)tables; part > 0; part--) {
        int target = remaining / part, ge = gs - 1, got = 0;

        while (got < target && ge < (int)alpha - 1)
            got += freq[++ge];
        if (ge > gs && part != (int)tables && part != 1 && ((int)tables - part) % 2 == 1)
            got -= freq[ge--];
        for (int v = 0; v < (int)alpha; v++)
            len[part - 1][v] = v >= gs && v <= ge ? 0 : 15;
        gs = ge + 1;
        remaining -= got;
    }
    for (int iter = 0; iter < ITERATIONS; iter++) {
        uint64_t pack[MAX_ALPHA];   /* every table's length in 10 bits: 50 x 17 < 1024 */

        memset(rfreq, 0, sizeof(rfreq));
        for (unsigned v = 0; v < alpha; v++) {
            pack[v] = 0;
            for (unsigned t = 0; t < tables; t++)
                pack[v] |= (uint64_t)len[t][v] << 10 * t;
        }
        for (uint32_t g = 0; g < groups; g++) {
            const uint8_t *h = z->hist + (size_t)g * alpha;
            uint64_t cost = 0;
            unsigned best = 0, best_cost = 1u << 30;

            for (unsigned v = 0; v < alpha; v++)
                cost += h[v] * pack[v];
            for (unsigned t = 0; t < tables; t++) {
                unsigned c = (unsigned)(cost >> 10 * t) & 1023;

                if (c < best_cost) {        /* the first of equal costs, as bzip2 */
                    best_cost = c;
                    best = t;
                }
            }
            z->choice[g] = (uint8_t)best;
            for (unsigned v = 0; v < alpha; v++)
                rfreq[best][v] += h[v];
        }
        for (unsigned t = 0; t < tables; t++)
            BZ2_hbMakeCodeLengths(len[t], rfreq[t], (int)alpha, MAX_CODE_LEN);
    }
    {   /* the selectors, move-to-front coded in unary */
        uint8_t order[MAX_TABLES];

        for (unsigned t = 0; t < tables; t++)
            order[t] = (uint8_t)t;
        for (uint32_t g = 0; g < groups; g++) {
            unsigned j = 0;
            uint8_t prev = order[0];

            while (prev != z->choice[g]) {
                uint8_t t = order[++j];

                order[j] = prev;
                prev = t;
            }
            order[0] = prev;
            bits += j + 1;
        }
    }
    for (unsigned t = 0; t < tables; t++) {     /* the lengths, delta coded */
        int curr = len[t][0];

        bits += 5;
        for (unsigned v = 0; v < alpha; v++) {
            bits += 2 * (unsigned)abs(len[t][v] - curr) + 1;
            curr = len[t][v];
        }
        for (unsigned v = 0; v < alpha; v++)    /* the symbols coded with this table */
            bits += (uint64_t)rfreq[t][v] * len[t][v];
    }
    return bits;
}

/* The bits of one block of nb > 0 bytes. */
static uint64_t block_bits(struct randd_bzlen *z, const uint8_t *block, uint32_t nb)
{
    bool used[256] = { false };
    uint8_t seq[256];
    unsigned in_use = 0, used16 = 0;
    uint32_t m, types;

    if (!words_of(z, block, nb, &m, &types))
        bytes_of(z, block, nb, &m, &types);
    for (uint32_t t = 0; t < types; t++)        /* the bytes used are the words' */
        for (uint32_t o = 0; o < z->type_len[t]; o++)
            used[(uint8_t)(z->type_key[t] >> (56 - 8 * o))] = true;
    for (unsigned c = 0; c < 256; c++)
        if (used[c])
            seq[c] = (uint8_t)in_use++;
    for (unsigned i = 0; i < 16; i++) {
        bool any = false;

        for (unsigned j = 0; j < 16; j++)
            any |= used[16 * i + j];
        used16 += any;
    }
    sort_rotations(z, m, types);
    last_column(z, m, types, seq);
    /* block magic 48, CRC 32, randomised 1, origPtr 24; the symbol map; the rest */
    return 48 + 32 + 1 + 24 + 16 + 16 * used16 +
           coded_bits(z, move_to_front(z, nb, in_use), in_use + 2);
}

uint64_t randd_bzlen_count(struct randd_bzlen *z, const uint8_t *in, size_t n)
{
    struct runs r = { in, n, 0, 256, 0 };
    uint64_t bits = 32;         /* "BZh" and the level */
    bool last = false;

    if (n > UINT32_MAX)
        return 0;
    while (!last) {
        const uint8_t *block;
        uint32_t nb;

        last = fill_block(z, &r, &block, &nb);
        if (nb > 0)             /* 0 only when there is no input at all */
            bits += block_bits(z, block, nb);
    }
    bits += 48 + 32;            /* end-of-stream magic, combined CRC */
    return (bits + 7) / 8;
}
