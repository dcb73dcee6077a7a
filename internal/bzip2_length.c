/* The bzip2 length of a buffer, counted (bzip2_length.h). Laid out in bzip2's order: the
 * run-length step that fills blocks, the rotation sort and its last column, move-to-front,
 * the choice of coding tables, and the sum of the bits. The numbers that must match libbz2's
 * (100000 * level - 19 bytes a block, runs of 4 to 255, groups of 50 symbols, 2 to 6 tables
 * chosen by the symbol count, 4 refinement passes, code lengths of at most 17 bits) are the
 * bzip2 1.0 format's and bzip2 1.0.8's documented behaviour. */
#include "bzip2_length.h"

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
#define HASH_SLOTS    (2 * MAX_TYPES)

struct randd_bzlen {
    int level;
    uint32_t block_max;         /* bzip2's nblockMAX */
    size_t cap;                 /* block_max + BLOCK_SLACK */
    uint8_t *block;             /* the block after the run-length step */
    uint8_t *last;              /* its rotations' last column, in rotation order */
    uint32_t *word;             /* each word's type, as its rank among the block's types */
    uint32_t *sa, *group;       /* word rotations in order; each one's group number */
    uint64_t *pair;             /* sort scratch: key << 32 | rotation */
    uint32_t *todo, *next;      /* unsorted groups as (start, length) */
    uint32_t *count;            /* counting sort, cap + MAX_TYPES + 1 */
    uint32_t *mtf;              /* per group of 50: (symbol << 8 | count) pairs */
    uint32_t *group_end;        /* where each group's pairs end */

    /* the block's word types */
    uint64_t type_key[MAX_TYPES];       /* the word, first byte highest, zero padded */
    uint8_t type_len[MAX_TYPES];
    uint32_t type_freq[MAX_TYPES];
    uint32_t type_rank[MAX_TYPES];
    uint64_t hash_key[HASH_SLOTS];
    uint32_t hash_type[HASH_SLOTS];
    uint64_t tail_key[MAX_TYPES * MAX_WORD];
    uint32_t tail_id[MAX_TYPES * MAX_WORD];     /* by rank * MAX_WORD + offset */
    uint32_t tail_pos[MAX_TYPES * MAX_WORD];
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
    z->word = malloc(z->cap * sizeof(*z->word));
    z->sa = malloc(z->cap * sizeof(*z->sa));
    z->group = malloc(z->cap * sizeof(*z->group));
    z->pair = malloc(z->cap * sizeof(*z->pair));
    z->todo = malloc(z->cap * sizeof(*z->todo));
    z->next = malloc(z->cap * sizeof(*z->next));
    z->count = malloc((z->cap + MAX_TYPES + 1) * sizeof(*z->count));
    z->mtf = malloc((z->cap + 1) * sizeof(*z->mtf));
    z->group_end = malloc((z->cap / GROUP_SIZE + 2) * sizeof(*z->group_end));
    if (!z->block || !z->last || !z->word || !z->sa || !z->group || !z->pair || !z->todo ||
        !z->next || !z->count || !z->mtf || !z->group_end) {
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
    release(z->word, z->cap * sizeof(*z->word));
    release(z->sa, z->cap * sizeof(*z->sa));
    release(z->group, z->cap * sizeof(*z->group));
    release(z->pair, z->cap * sizeof(*z->pair));
    release(z->todo, z->cap * sizeof(*z->todo));
    release(z->next, z->cap * sizeof(*z->next));
    release(z->count, (z->cap + MAX_TYPES + 1) * sizeof(*z->count));
    release(z->mtf, (z->cap + 1) * sizeof(*z->mtf));
    release(z->group_end, (z->cap / GROUP_SIZE + 2) * sizeof(*z->group_end));
    OPENSSL_cleanse(z, sizeof(*z));
    free(z);
}

/* --- the run-length step: bzip2 fills a block ------------------------------------------- */

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

/* Fills z->block; true when this is the last block. */
static bool fill_block(struct randd_bzlen *z, struct runs *r, uint32_t *nb)
{
    uint8_t *block = z->block;
    uint32_t n = 0;

    while (n < z->block_max && r->at < r->n) {
        unsigned c = r->in[r->at++];

        if (c != r->ch && r->len == 1) {
            block[n++] = (uint8_t)r->ch;
            r->ch = c;
        } else if (c != r->ch || r->len == 255) {
            if (r->ch < 256)
                put_run(block, &n, r->ch, r->len);
            r->ch = c;
            r->len = 1;
        } else {
            r->len++;
        }
    }
    *nb = n;
    if (r->at < r->n)
        return false;
    if (r->ch < 256)
        put_run(block, nb, r->ch, r->len);
    r->ch = 256;
    r->len = 0;
    return true;
}

/* --- the rotation sort ---------------------------------------------------------------------- */

/* The block as a cyclic sequence of prefix-free words, each its type's rank in byte order:
 * words ending in DELIMITER when every one fits MAX_WORD and there are at most MAX_TYPES
 * kinds, else single bytes. Returns the word count m and sets *types. */
static uint32_t hash_slot(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 51) & (HASH_SLOTS - 1);
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static bool words_of(struct randd_bzlen *z, uint32_t nb, uint32_t *m_out, uint32_t *types_out)
{
    const uint8_t *b = z->block;
    uint8_t *d = memchr(b, DELIMITER, nb);
    uint32_t start, m = 0, types = 0, len = 0;
    uint64_t key = 0;
    uint64_t sorted[MAX_TYPES];

    if (!d)
        return false;
    start = (uint32_t)(d - b) + 1;
    memset(z->hash_key, 0, sizeof(z->hash_key));
    for (uint32_t i = 0; i < nb; i++) {
        uint32_t at = start + i < nb ? start + i : start + i - nb;
        uint8_t c = b[at];

        key = key << 8 | c;
        if (++len > MAX_WORD)
            return false;
        if (c != DELIMITER)
            continue;
        key <<= 8 * (MAX_WORD - len);   /* a word holds the delimiter: never 0 */
        for (uint32_t h = hash_slot(key);; h = (h + 1) & (HASH_SLOTS - 1)) {
            if (z->hash_key[h] == key) {
                z->word[m++] = z->hash_type[h];
                z->type_freq[z->hash_type[h]]++;
                break;
            }
            if (z->hash_key[h] == 0) {
                if (types == MAX_TYPES)
                    return false;
                z->hash_key[h] = key;
                z->hash_type[h] = types;
                z->type_key[types] = key;
                z->type_len[types] = (uint8_t)len;
                z->type_freq[types] = 1;
                z->word[m++] = types++;
                break;
            }
        }
        key = 0;
        len = 0;
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
    {   /* reorder the per-type tables by rank */
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

static void bytes_of(struct randd_bzlen *z, uint32_t nb, uint32_t *m_out, uint32_t *types_out)
{
    uint32_t rank[256], types = 0;
    uint32_t freq[256] = { 0 };

    for (uint32_t i = 0; i < nb; i++)
        freq[z->block[i]]++;
    for (unsigned c = 0; c < 256; c++)
        if (freq[c]) {
            rank[c] = types;
            z->type_key[types] = (uint64_t)c << 56;
            z->type_len[types] = 1;
            z->type_freq[types++] = freq[c];
        }
    for (uint32_t i = 0; i < nb; i++)
        z->word[i] = rank[z->block[i]];
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
 * (Larsson and Sadakane's refinement of unsorted groups only). Rotations left in one group
 * once h reaches m are equal. */
static void sort_rotations(struct randd_bzlen *z, uint32_t m, uint32_t sigma)
{
    const uint32_t *w = z->word;
    uint32_t *sa = z->sa, *g = z->group, *count = z->count, *todo = z->todo, *next = z->next;
    uint64_t limit = m > MAX_TYPES ? m : MAX_TYPES, span = sigma, top = 1, key = 0;
    uint32_t k = 1, groups = 0;

    /* first by the first k words, k as many as keep sigma^k within the counting array */
    while (k < m && span * sigma <= limit) {
        span *= sigma;
        k++;
    }
    for (uint32_t j = 1; j < k; j++)
        top *= sigma;
    memset(count, 0, (span + 1) * sizeof(*count));
    for (uint32_t j = 0; j < k; j++)
        key = key * sigma + w[j % m];
    for (uint32_t i = 0; i < m; i++) {
        z->pair[i] = key;
        count[key + 1]++;
        key = (key - w[i] * top) * sigma + w[(i + k) % m];
    }
    for (uint64_t c = 1; c <= span; c++)
        count[c] += count[c - 1];
    for (uint32_t i = 0; i < m; i++)
        sa[count[z->pair[i]]++] = i;
    for (uint32_t end = m; end > 0;) {
        uint32_t start = end - 1;
        uint64_t kk = z->pair[sa[end - 1]];

        while (start > 0 && z->pair[sa[start - 1]] == kk)
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

/* The last column: a rotation starting at offset o of word p is the rest of p (a tail, itself
 * prefix-free) followed by the word rotation at p + 1. So the rotations sort by tail, then
 * by that word rotation's place: walking the word rotations in order and dropping each
 * preceding word's tails into their buckets gives every bucket in order. */
static void last_column(struct randd_bzlen *z, uint32_t m, uint32_t types)
{
    uint32_t tails = 0, distinct = 0, at = 0;

    for (uint32_t t = 0; t < types; t++)
        for (uint32_t o = 0; o < z->type_len[t]; o++)
            z->tail_key[tails++] = z->type_key[t] << 8 * o;
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
    for (uint32_t i = 0; i < m; i++) {
        uint32_t s = z->sa[i], p = s ? s - 1 : m - 1, q = p ? p - 1 : m - 1;
        uint32_t t = z->word[p], tq = z->word[q];
        uint64_t key = z->type_key[t];
        const uint32_t *id = &z->tail_id[t * MAX_WORD];
        uint8_t before = (uint8_t)(z->type_key[tq] >> 8 * (MAX_WORD - z->type_len[tq]));

        z->last[z->tail_pos[id[0]]++] = before;
        for (uint32_t o = 1; o < z->type_len[t]; o++)
            z->last[z->tail_pos[id[o]]++] = (uint8_t)(key >> (64 - 8 * o));
    }
}

/* --- move-to-front and the coding tables ------------------------------------------------ */

struct symbols {
    uint32_t count;             /* nMTF */
    uint32_t freq[MAX_ALPHA];
    uint32_t groups, pairs, in_group, group_start;
    uint8_t seen[MAX_ALPHA];    /* in the current group, at pair index + 1 (0: not yet) */
    uint32_t pair_at[MAX_ALPHA];
};

static void emit(struct randd_bzlen *z, struct symbols *s, unsigned v)
{
    s->count++;
    s->freq[v]++;
    if (s->seen[v])
        z->mtf[s->pair_at[v]]++;
    else {
        s->seen[v] = 1;
        s->pair_at[v] = s->pairs;
        z->mtf[s->pairs++] = (uint32_t)v << 8 | 1;
    }
    if (++s->in_group == GROUP_SIZE) {
        for (uint32_t i = s->group_start; i < s->pairs; i++)
            s->seen[z->mtf[i] >> 8] = 0;
        z->group_end[s->groups++] = s->pairs;
        s->group_start = s->pairs;
        s->in_group = 0;
    }
}

static void emit_zeros(struct randd_bzlen *z, struct symbols *s, uint32_t zeros)
{
    /* bijective base 2, RUNA (0) for 1 and RUNB (1) for 2, least significant first */
    zeros--;
    for (;;) {
        emit(z, s, zeros & 1);
        if (zeros < 2)
            break;
        zeros = (zeros - 2) / 2;
    }
}

static void move_to_front(struct randd_bzlen *z, uint32_t nb, const uint8_t *seq,
                          unsigned in_use, struct symbols *s)
{
    uint8_t list[256];
    uint32_t zeros = 0;

    for (unsigned i = 0; i < in_use; i++)
        list[i] = (uint8_t)i;
    for (uint32_t i = 0; i < nb; i++) {
        uint8_t c = seq[z->last[i]], prev;
        unsigned j;

        if (list[0] == c) {
            zeros++;
            continue;
        }
        if (zeros) {
            emit_zeros(z, s, zeros);
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
        emit(z, s, j + 1);
    }
    if (zeros)
        emit_zeros(z, s, zeros);
    emit(z, s, in_use + 1);
    if (s->in_group)
        z->group_end[s->groups++] = s->pairs;
}

/* bzip2's table choice and the bits it spends on the tables, selectors and symbols. */
static uint64_t coded_bits(const struct randd_bzlen *z, const struct symbols *s,
                           unsigned alpha)
{
    unsigned tables = s->count < 200 ? 2 : s->count < 600 ? 3 : s->count < 1200 ? 4 :
                      s->count < 2400 ? 5 : 6;
    unsigned char len[MAX_TABLES][MAX_ALPHA];
    int rfreq[MAX_TABLES][MAX_ALPHA];
    uint8_t *choice = malloc(s->groups ? s->groups : 1);
    uint64_t bits = 3 + 15;
    int remaining = (int)s->count, gs = 0;

    if (!choice)
        return 0;
    /* the initial partition: tables cover consecutive symbol ranges of about equal weight */
    for (int part = (int)tables; part > 0; part--) {
        int target = remaining / part, ge = gs - 1, got = 0;

        while (got < target && ge < (int)alpha - 1)
            got += (int)s->freq[++ge];
        if (ge > gs && part != (int)tables && part != 1 && ((int)tables - part) % 2 == 1)
            got -= (int)s->freq[ge--];
        for (int v = 0; v < (int)alpha; v++)
            len[part - 1][v] = v >= gs && v <= ge ? 0 : 15;
        gs = ge + 1;
        remaining -= got;
    }
    for (int iter = 0; iter < ITERATIONS; iter++) {
        uint64_t pack[MAX_ALPHA];   /* every table's length in 10 bits: 50 x 17 < 1024 */
        uint32_t from = 0;

        memset(rfreq, 0, sizeof(rfreq));
        for (unsigned v = 0; v < alpha; v++) {
            pack[v] = 0;
            for (unsigned t = 0; t < tables; t++)
                pack[v] |= (uint64_t)len[t][v] << 10 * t;
        }
        for (uint32_t g = 0; g < s->groups; g++) {
            uint64_t cost = 0;
            unsigned best = 0, best_cost = 1u << 30;

            for (uint32_t i = from; i < z->group_end[g]; i++)
                cost += (z->mtf[i] & 0xff) * pack[z->mtf[i] >> 8];
            for (unsigned t = 0; t < tables; t++) {
                unsigned c = (unsigned)(cost >> 10 * t) & 1023;

                if (c < best_cost) {        /* the first of equal costs, as bzip2 */
                    best_cost = c;
                    best = t;
                }
            }
            choice[g] = (uint8_t)best;
            for (uint32_t i = from; i < z->group_end[g]; i++)
                rfreq[best][z->mtf[i] >> 8] += (int)(z->mtf[i] & 0xff);
            from = z->group_end[g];
        }
        for (unsigned t = 0; t < tables; t++)
            BZ2_hbMakeCodeLengths(len[t], rfreq[t], (int)alpha, MAX_CODE_LEN);
    }
    {   /* the selectors, move-to-front coded in unary */
        uint8_t order[MAX_TABLES];

        for (unsigned t = 0; t < tables; t++)
            order[t] = (uint8_t)t;
        for (uint32_t g = 0; g < s->groups; g++) {
            unsigned j = 0;
            uint8_t prev = order[0];

            while (prev != choice[g]) {
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
    OPENSSL_cleanse(choice, s->groups ? s->groups : 1);
    free(choice);
    return bits;
}

/* The bits of one block of nb > 0 bytes in z->block. */
static uint64_t block_bits(struct randd_bzlen *z, uint32_t nb)
{
    bool used[256] = { false };
    uint8_t seq[256];
    unsigned in_use = 0, used16 = 0;
    uint32_t m, types;
    struct symbols *s = calloc(1, sizeof(*s));
    uint64_t bits, tables;

    if (!s)
        return 0;
    for (uint32_t i = 0; i < nb; i++)
        used[z->block[i]] = true;
    for (unsigned c = 0; c < 256; c++)
        if (used[c])
            seq[c] = (uint8_t)in_use++;
    for (unsigned i = 0; i < 16; i++) {
        bool any = false;

        for (unsigned j = 0; j < 16; j++)
            any |= used[16 * i + j];
        used16 += any;
    }
    if (!words_of(z, nb, &m, &types))
        bytes_of(z, nb, &m, &types);
    sort_rotations(z, m, types);
    last_column(z, m, types);
    move_to_front(z, nb, seq, in_use, s);
    tables = coded_bits(z, s, in_use + 2);
    /* block magic 48, CRC 32, randomised 1, origPtr 24; the symbol map */
    bits = tables ? 48 + 32 + 1 + 24 + 16 + 16 * used16 + tables : 0;
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
    return bits;
}

uint64_t randd_bzlen_count(struct randd_bzlen *z, const uint8_t *in, size_t n)
{
    struct runs r = { in, n, 0, 256, 0 };
    uint64_t bits = 32;         /* "BZh" and the level */
    bool last = false;

    if (n > UINT32_MAX)
        return 0;
    while (!last) {
        uint32_t nb;
        uint64_t b;

        last = fill_block(z, &r, &nb);
        if (nb == 0)
            continue;           /* only when there is no input at all */
        if ((b = block_bits(z, nb)) == 0)
            return 0;
        bits += b;
    }
    bits += 48 + 32;            /* end-of-stream magic, combined CRC */
    return (bits + 7) / 8;
}
