/* SP 800-90B 6.3.7-6.3.10, the predictors: MultiMCW, Lag, MultiMMC and LZ78Y. Each walks
 * the samples once, predicting each from those before it, and counts the correct
 * predictions and their longest run; randd_ea_prediction_bound() turns the counts into
 * min-entropy. Owns the predictors' state (windows, scoreboards, dictionaries).
 *
 * Every tie is broken as NIST's ea_non_iid breaks it, and the dictionaries are capped as it
 * caps them, since both change the counts: a window's most common value is the one seen
 * most recently among the tied; a dictionary's prediction the largest tied value; the
 * scoreboards go to the later (longer) predictor on a tie. */
#include "entropy_assess_internal.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TICK_EVERY 65536            /* samples between progress reports */

/* A predictor's tally. */
struct tally {
    uint64_t correct, run, longest_run;
};

static void tally(struct tally *t, bool correct)
{
    if (!correct) {
        t->run = 0;
        return;
    }
    t->correct++;
    if (++t->run > t->longest_run)
        t->longest_run = t->run;
}

/* --- 6.3.7 MultiMCW ------------------------------------------------------------------------- */

#define MCW_WINDOWS 4
static const uint32_t mcw_window[MCW_WINDOWS] = { 63, 255, 1023, 4095 };

/* The most common value in the last w samples, kept as the window slides. */
struct mcw_window {
    uint32_t w, count[256], most_count;
    size_t last_seen[256];
    uint8_t most;
};

static void mcw_add(struct mcw_window *m, uint8_t v, size_t i)
{
    m->last_seen[v] = i;
    if (++m->count[v] >= m->most_count) {  /* a tie goes to the latest seen: v */
        m->most_count = m->count[v];
        m->most = v;
    }
}

/* Slides the window over sample i: s[i - w] leaves, s[i] enters. */
static void mcw_slide(struct mcw_window *m, const uint8_t *s, size_t i, unsigned k)
{
    uint8_t out = s[i - m->w];

    m->count[out]--;
    if (out != m->most) {
        mcw_add(m, s[i], i);
        return;
    }
    m->count[s[i]]++;
    m->last_seen[s[i]] = i;
    m->most_count = 0;                      /* the leader left: find the new one */
    for (unsigned v = 0; v < k; v++)
        if (m->count[v] > m->most_count ||
            (m->count[v] == m->most_count && m->count[v] && m->last_seen[v] > m->last_seen[m->most])) {
            m->most_count = m->count[v];
            m->most = (uint8_t)v;
        }
}

int randd_ea_multi_mcw(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p)
{
    const uint32_t widest = mcw_window[MCW_WINDOWS - 1];
    struct mcw_window *win;
    uint64_t score[MCW_WINDOWS] = { 0 };
    struct tally t = { 0, 0, 0 };
    unsigned winner = 0;

    *h = NAN;
    if (n <= widest)                        /* ea_non_iid: at least the widest window + 1 */
        return 0;
    if (!(win = calloc(MCW_WINDOWS, sizeof(*win))))
        return -ENOMEM;
    for (unsigned j = 0; j < MCW_WINDOWS; j++)
        win[j].w = mcw_window[j];
    for (size_t i = 0; i < widest; i++)
        for (unsigned j = 0; j < MCW_WINDOWS; j++)
            if (i < win[j].w)
                mcw_add(&win[j], s[i], i);
    for (size_t i = mcw_window[0]; i < n; i++) {
        tally(&t, win[winner].most == s[i]);
        for (unsigned j = 0; j < MCW_WINDOWS; j++)
            if (i >= win[j].w && win[j].most == s[i] && ++score[j] >= score[winner])
                winner = j;
        for (unsigned j = 0; j < MCW_WINDOWS; j++)
            if (i >= win[j].w)
                mcw_slide(&win[j], s, i, k);
        if (i % TICK_EVERY == 0)
            randd_ea_tick(p, i, n);
    }
    randd_ea_release(win, MCW_WINDOWS * sizeof(*win));
    *h = randd_ea_prediction_bound(t.correct, n - mcw_window[0], t.longest_run, k);
    return 0;
}

/* --- 6.3.8 Lag ------------------------------------------------------------------------------ */

#define LAG_D 128

/* Where each value was last seen, up to LAG_D times: only the lags that would have
 * predicted s[i] are touched, rather than all LAG_D of them. */
struct lag_ring {
    uint32_t pos[LAG_D];
    unsigned next, len;
};

int randd_ea_lag(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p)
{
    struct lag_ring *rings;
    uint64_t score[LAG_D] = { 0 };
    struct tally t = { 0, 0, 0 };
    unsigned winner = 0;                    /* the best lag, less 1 */

    *h = NAN;
    if (n < 3)
        return 0;
    if (!(rings = calloc(k, sizeof(*rings))))
        return -ENOMEM;
    rings[s[0]].pos[0] = 0;
    rings[s[0]].next = rings[s[0]].len = 1;
    for (size_t i = 1; i < n; i++) {
        struct lag_ring *r = &rings[s[i]];

        tally(&t, s[i - winner - 1] == s[i]);   /* a lag scores only once it reaches s[0] */
        for (unsigned m = 0; m < r->len; m++) {             /* newest first: lag ascending */
            size_t lag = i - r->pos[(r->next - 1 - m) % LAG_D];

            if (lag > LAG_D)
                break;
            if (++score[lag - 1] >= score[winner])
                winner = (unsigned)lag - 1;
        }
        r->pos[r->next++ % LAG_D] = (uint32_t)i;
        r->next %= LAG_D;
        if (r->len < LAG_D)
            r->len++;
        if (i % TICK_EVERY == 0)
            randd_ea_tick(p, i, n);
    }
    randd_ea_release(rings, k * sizeof(*rings));
    *h = randd_ea_prediction_bound(t.correct, n - 1, t.longest_run, k);
    return 0;
}

/* --- dictionaries of contexts --------------------------------------------------------------- */

/* MultiMMC and LZ78Y count, for contexts x of 1..16 samples, how often each value y followed
 * x; a context is in a dictionary once some (x, y) was counted. Binary data index flat
 * tables by the context's bits. Other data go through two hash tables: contexts (the first
 * place a context occurs in s stands for its symbols) and (context, y) counts. A context's
 * prediction is its most frequent y; a tie goes to the largest y. */
#define CTX_MAX 16

struct ctx_record {
    uint32_t pos, count;        /* first occurrence s[pos..pos+len-1]; the prediction's count */
    uint8_t len, y;             /* y: the prediction */
    bool paired;                /* its counts are in the pair table; else y alone followed it */
};

struct ctx_dict {
    const uint8_t *s;
    bool binary;
    uint32_t *flat[CTX_MAX + 1];    /* binary: flat[len][2 * bits + y] */
    struct ctx_record *rec;         /* otherwise: contexts, */
    uint32_t *rec_hash;
    uint32_t nrec, rec_cap;
    uint32_t *ctx_slot;             /* their hash table (record + 1; 0 empty), */
    uint64_t ctx_mask;
    uint32_t *pair_key;             /* and (context, y) counts: key (record << 8 | y) + 1; */
                                    /* the caps keep records below 2^24 (MMC 16 x 100,000) */
    uint32_t *pair_count;
    uint64_t npair, pair_mask;
};

/* A context in a dictionary: binary, its length above bit 40 and its flat index below;
 * otherwise its record. */
typedef int64_t ctx_ref;
#define CTX_NONE (-1)
#define FLAT_LEN_SHIFT 40

/* The keys of the contexts that end just before sample i: key[len] for s[i-len..i-1].
 * Binary: the context's bits, s[i-1] lowest. Otherwise an FNV-1a hash of its symbols, newest
 * first, and of its length. */
struct ctx_keys {
    uint64_t key[CTX_MAX + 1];
};

static void ctx_keys(const struct ctx_dict *d, size_t i, unsigned maxlen, struct ctx_keys *k)
{
    uint64_t h = 0xcbf29ce484222325ull;

    k->key[0] = 0;
    for (unsigned len = 1; len <= maxlen; len++) {
        uint8_t v = d->s[i - len];

        if (d->binary) {
            k->key[len] = k->key[len - 1] | (uint64_t)v << (len - 1);
        } else {
            h = (h ^ v) * 0x100000001b3ull;
            k->key[len] = h ^ len;
        }
    }
}

static uint64_t mix64(uint64_t x)      /* MurmurHash3's finalizer */
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* The smallest power of two >= want, within [floor, ceiling]. */
static uint64_t table_size(uint64_t want, uint64_t floor, uint64_t ceiling)
{
    uint64_t size = floor;

    while (size < want && size < ceiling)
        size *= 2;
    return size;
}

/* Sized for the contexts and (context, y) pairs the caller may add at most, up to
 * CTX_PRESIZE_MAX of each: tables that fit them never grow, and growing holds the old table
 * and the new one at once (randd's peak when a source assessed 8192 samples of its own).
 * Larger inputs start there and grow as they need. */
#define CTX_PRESIZE_MAX (1u << 17)

static int ctx_init(struct ctx_dict *d, const uint8_t *s, unsigned k, uint64_t max_contexts,
                    uint64_t max_pairs)
{
    memset(d, 0, sizeof(*d));
    d->s = s;
    d->binary = k == 2;
    if (d->binary) {
        for (unsigned len = 1; len <= CTX_MAX; len++)
            if (!(d->flat[len] = calloc((size_t)2 << len, sizeof(uint32_t))))
                return -ENOMEM;
        return 0;
    }
    d->rec_cap = (uint32_t)table_size(max_contexts, 1024, CTX_PRESIZE_MAX);
    d->ctx_mask = 2 * (uint64_t)d->rec_cap - 1;
    d->pair_mask = table_size(2 * (max_pairs + 1), 4096, 2 * (uint64_t)CTX_PRESIZE_MAX) - 1;
    d->rec = malloc(d->rec_cap * sizeof(*d->rec));
    d->rec_hash = malloc(d->rec_cap * sizeof(*d->rec_hash));
    d->ctx_slot = calloc(d->ctx_mask + 1, sizeof(*d->ctx_slot));
    d->pair_key = calloc(d->pair_mask + 1, sizeof(*d->pair_key));
    d->pair_count = calloc(d->pair_mask + 1, sizeof(*d->pair_count));
    return d->rec && d->rec_hash && d->ctx_slot && d->pair_key && d->pair_count ? 0 : -ENOMEM;
}

static void ctx_fini(struct ctx_dict *d)
{
    for (unsigned len = 1; len <= CTX_MAX; len++)
        randd_ea_release(d->flat[len], d->flat[len] ? ((size_t)2 << len) * sizeof(uint32_t) : 0);
    randd_ea_release(d->rec, d->rec ? d->rec_cap * sizeof(*d->rec) : 0);
    randd_ea_release(d->rec_hash, d->rec_hash ? d->rec_cap * sizeof(*d->rec_hash) : 0);
    randd_ea_release(d->ctx_slot, d->ctx_slot ? (d->ctx_mask + 1) * sizeof(*d->ctx_slot) : 0);
    randd_ea_release(d->pair_key, d->pair_key ? (d->pair_mask + 1) * sizeof(*d->pair_key) : 0);
    randd_ea_release(d->pair_count,
                     d->pair_count ? (d->pair_mask + 1) * sizeof(*d->pair_count) : 0);
}

static uint32_t *flat_entry(const struct ctx_dict *d, ctx_ref c)
{
    return d->flat[c >> FLAT_LEN_SHIFT] + (c & ((1ll << FLAT_LEN_SHIFT) - 1));
}

/* The context s[i-len..i-1] with this key, or CTX_NONE. */
static ctx_ref ctx_find(const struct ctx_dict *d, size_t i, unsigned len, uint64_t key)
{
    if (d->binary) {
        ctx_ref c = (ctx_ref)len << FLAT_LEN_SHIFT | (ctx_ref)(2 * key);
        const uint32_t *e = flat_entry(d, c);

        return e[0] || e[1] ? c : CTX_NONE;
    }
    uint32_t hash = (uint32_t)mix64(key);

    for (uint64_t at = hash & d->ctx_mask;; at = (at + 1) & d->ctx_mask) {
        uint32_t r = d->ctx_slot[at];

        if (r == 0)
            return CTX_NONE;
        if (d->rec_hash[r - 1] == hash && d->rec[r - 1].len == len &&
            memcmp(d->s + d->rec[r - 1].pos, d->s + i - len, len) == 0)
            return r - 1;
    }
}

/* The prediction after context c, and how often it followed c. */
static uint8_t ctx_predict(const struct ctx_dict *d, ctx_ref c, uint32_t *count)
{
    if (d->binary) {
        const uint32_t *e = flat_entry(d, c);

        *count = e[0] > e[1] ? e[0] : e[1];
        return e[0] > e[1] ? 0 : 1;
    }
    *count = d->rec[c].count;
    return d->rec[c].y;
}

/* Copies into a new table of twice the size; the old one is wiped and freed. */
static int grow_contexts(struct ctx_dict *d)
{
    uint64_t mask = d->ctx_mask * 2 + 1;
    uint32_t cap = d->rec_cap * 2, *slot = calloc(mask + 1, sizeof(*slot));
    struct ctx_record *rec = malloc(cap * sizeof(*rec));
    uint32_t *hash = malloc(cap * sizeof(*hash));

    if (!slot || !rec || !hash) {
        free(slot), free(rec), free(hash);
        return -ENOMEM;
    }
    memcpy(rec, d->rec, d->nrec * sizeof(*rec));
    memcpy(hash, d->rec_hash, d->nrec * sizeof(*hash));
    for (uint32_t r = 0; r < d->nrec; r++) {
        uint64_t at = hash[r] & mask;

        while (slot[at])
            at = (at + 1) & mask;
        slot[at] = r + 1;
    }
    randd_ea_release(d->rec, d->rec_cap * sizeof(*d->rec));
    randd_ea_release(d->rec_hash, d->rec_cap * sizeof(*d->rec_hash));
    randd_ea_release(d->ctx_slot, (d->ctx_mask + 1) * sizeof(*d->ctx_slot));
    d->rec = rec, d->rec_hash = hash, d->ctx_slot = slot;
    d->rec_cap = cap, d->ctx_mask = mask;
    return 0;
}

/* The slot of key in the pair table: where it is, or the empty slot where it would go. */
static uint64_t pair_slot(const struct ctx_dict *d, uint32_t key)
{
    uint64_t at = mix64(key) & d->pair_mask;

    while (d->pair_key[at] && d->pair_key[at] != key)
        at = (at + 1) & d->pair_mask;
    return at;
}

static int grow_pairs(struct ctx_dict *d)
{
    struct ctx_dict old = *d;

    d->pair_mask = old.pair_mask * 2 + 1;
    d->pair_key = calloc(d->pair_mask + 1, sizeof(*d->pair_key));
    d->pair_count = calloc(d->pair_mask + 1, sizeof(*d->pair_count));
    if (!d->pair_key || !d->pair_count) {
        free(d->pair_key), free(d->pair_count);
        d->pair_key = old.pair_key, d->pair_count = old.pair_count, d->pair_mask = old.pair_mask;
        return -ENOMEM;
    }
    for (uint64_t at = 0; at <= old.pair_mask; at++) {
        if (old.pair_key[at]) {
            uint64_t to = pair_slot(d, old.pair_key[at]);

            d->pair_key[to] = old.pair_key[at];
            d->pair_count[to] = old.pair_count[at];
        }
    }
    randd_ea_release(old.pair_key, (old.pair_mask + 1) * sizeof(*old.pair_key));
    randd_ea_release(old.pair_count, (old.pair_mask + 1) * sizeof(*old.pair_count));
    return 0;
}

/* Adds (c, y) with count to the pair table. Returns 0 or -ENOMEM. */
static int pair_add(struct ctx_dict *d, ctx_ref c, uint8_t y, uint32_t count)
{
    uint32_t key = ((uint32_t)c << 8 | y) + 1;
    uint64_t at;

    if (2 * (d->npair + 1) > d->pair_mask + 1 && grow_pairs(d) < 0)
        return -ENOMEM;
    at = pair_slot(d, key);
    d->pair_key[at] = key;
    d->pair_count[at] = count;
    d->npair++;
    return 0;
}

/* Counts y after context c. may_add: whether a (c, y) never counted may be added. Returns 1
 * when it was added, 0 when counted again, -1 when refused, or -ENOMEM.
 * Most contexts, the long ones above all, are only ever followed by one sample value: its
 * count is the record's own (the prediction's), and the pair table holds only the contexts
 * followed by two values or more, from the second on (a third of the memory at randd's 8192
 * samples). */
static int ctx_count(struct ctx_dict *d, ctx_ref c, uint8_t y, bool may_add)
{
    struct ctx_record *r;
    uint32_t key;
    uint64_t at;
    int added = 0;

    if (d->binary) {
        uint32_t *e = flat_entry(d, c);

        if (!e[y] && !may_add)
            return -1;
        return e[y]++ == 0;
    }
    r = &d->rec[c];
    if (!r->paired) {
        if (r->count == 0 || r->y == y) {            /* its first value, or that value again */
            if (r->count == 0 && !may_add)
                return -1;
            r->y = y;
            return r->count++ == 0;
        }
        if (!may_add)
            return -1;
        if (pair_add(d, c, r->y, r->count) < 0)      /* a second value: both in the table */
            return -ENOMEM;
        r->paired = true;
    }
    key = ((uint32_t)c << 8 | y) + 1;
    at = pair_slot(d, key);
    if (!d->pair_key[at]) {
        if (!may_add)
            return -1;
        if (pair_add(d, c, y, 0) < 0)
            return -ENOMEM;
        at = pair_slot(d, key);
        added = 1;
    }
    if (++d->pair_count[at] > r->count || (d->pair_count[at] == r->count && y > r->y)) {
        r->count = d->pair_count[at];
        r->y = y;
    }
    return added;
}

/* Counts y after the context s[i-len..i-1], adding the context if it is new. Returns 1 when
 * (x, y) is new, 0 when counted again, or -ENOMEM. */
static int ctx_add(struct ctx_dict *d, size_t i, unsigned len, uint64_t key, uint8_t y)
{
    ctx_ref c = ctx_find(d, i, len, key);

    if (c == CTX_NONE && d->binary) {
        c = (ctx_ref)len << FLAT_LEN_SHIFT | (ctx_ref)(2 * key);
    } else if (c == CTX_NONE) {
        uint64_t at;

        if (d->nrec == d->rec_cap && grow_contexts(d) < 0)
            return -ENOMEM;
        c = d->nrec++;
        d->rec[c] = (struct ctx_record){ (uint32_t)(i - len), 0, (uint8_t)len, 0, false };
        d->rec_hash[c] = (uint32_t)mix64(key);
        for (at = d->rec_hash[c] & d->ctx_mask; d->ctx_slot[at]; at = (at + 1) & d->ctx_mask)
            ;
        d->ctx_slot[at] = (uint32_t)c + 1;
    }
    return ctx_count(d, c, y, true);
}

/* --- 6.3.9 MultiMMC ------------------------------------------------------------------------- */

#define MMC_D 16
#define MMC_MAX_ENTRIES 100000      /* ea_non_iid's cap on each order's (x, y) pairs */

/* Predictors of order 1..16, each predicting from the last len samples; the one with the
 * most correct predictions so far is the one whose predictions count.
 *
 * The orders keep apart dictionaries and never read each other's, so they run one after
 * another, each over the whole input, with one order's contexts in memory at a time: a
 * sixteenth of the memory of running them side by side (8192 samples: 0.3 MiB at most, not
 * 6.9 MiB, which was randd's peak when a source assessed itself). Each pass leaves two bits a
 * sample, whether the order predicted and whether rightly, and the winner and the tally are
 * then replayed from them in the order the side-by-side loop took them. One coupling between
 * orders is kept: a context not seen at one length is not looked up at the next (not seen at
 * any longer one, up to the entry caps), so each pass hands the next which samples' contexts
 * it found. */

/* Bit i of a bitmap of n. */
static bool bit_get(const uint64_t *b, size_t i)
{
    return b[i / 64] >> (i % 64) & 1;
}

static void bit_put(uint64_t *b, size_t i, bool v)
{
    b[i / 64] = (b[i / 64] & ~(1ull << (i % 64))) | (uint64_t)v << (i % 64);
}

/* One order's pass: predicted[i] and right[i] for each sample i it saw; found[i] on entry
 * says whether the order below found the context before sample i (unused for len 1), on
 * return whether this one did. Returns 0 or -ENOMEM. */
static int mmc_order(const uint8_t *s, size_t n, unsigned k, unsigned len, uint64_t *found,
                     uint64_t *predicted, uint64_t *right, const struct ea_progress *p)
{
    uint32_t entries = 0;
    struct ctx_keys keys;
    struct ctx_dict d;
    int rc;

    if ((rc = ctx_init(&d, s, k, n, n)) < 0)       /* one context, one pair a sample */
        goto out;
    /* The order's first context, s[0..len-1], with the sample after it. */
    if (len + 1 < n) {
        ctx_keys(&d, len, len, &keys);
        if ((rc = ctx_add(&d, len, len, keys.key[len], s[len])) < 0)
            goto out;
        entries = 1;
    }
    for (size_t i = len + 1; i < n; i++) {
        ctx_ref c = CTX_NONE;

        ctx_keys(&d, i, len, &keys);
        if (len == 1 || bit_get(found, i))
            c = ctx_find(&d, i, len, keys.key[len]);
        bit_put(found, i, c != CTX_NONE);
        if (c != CTX_NONE) {
            uint32_t count;

            bit_put(predicted, i, true);
            bit_put(right, i, ctx_predict(&d, c, &count) == s[i]);
            rc = ctx_count(&d, c, s[i], entries < MMC_MAX_ENTRIES);
        } else if (entries < MMC_MAX_ENTRIES) {
            rc = ctx_add(&d, i, len, keys.key[len], s[i]);
        } else {
            rc = 0;
        }
        if (rc < -1)
            goto out;
        if (rc == 1)
            entries++;
        if (i % TICK_EVERY == 0)
            randd_ea_tick(p, ((len - 1) * n + i) / MMC_D, n);
    }
    rc = 0;
out:
    ctx_fini(&d);
    return rc;
}

int randd_ea_multi_mmc(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p)
{
    uint64_t score[MMC_D] = { 0 };
    struct tally t = { 0, 0, 0 };
    size_t words = (n + 63) / 64;
    uint64_t *found, *predicted, *right;
    unsigned winner = 0;
    int rc = 0;

    *h = NAN;
    if (n < 3)
        return 0;
    found = calloc(words, sizeof(*found));
    predicted = calloc(words * MMC_D, sizeof(*predicted));
    right = calloc(words * MMC_D, sizeof(*right));
    if (!found || !predicted || !right)
        rc = -ENOMEM;
    for (unsigned len = 1; len <= MMC_D && rc == 0; len++)
        rc = mmc_order(s, n, k, len, found, predicted + (len - 1) * words,
                       right + (len - 1) * words, p);
    if (rc < 0)
        goto out;
    for (size_t i = 2; i < n; i++) {
        unsigned maxlen = i - 1 < MMC_D ? (unsigned)i - 1 : MMC_D, first = winner;

        for (unsigned o = 0; o < maxlen; o++) {
            bool was_right;

            if (!bit_get(predicted + o * words, i))
                continue;
            was_right = bit_get(right + o * words, i);
            if (was_right && ++score[o] >= score[winner])
                winner = o;
            if (o == first)             /* no prediction at all: no tally either */
                tally(&t, was_right);
        }
    }
    *h = randd_ea_prediction_bound(t.correct, n - 2, t.longest_run, k);
out:
    /* What was predicted and whether rightly says something of the samples: wiped. */
    randd_ea_release(found, found ? words * sizeof(*found) : 0);
    randd_ea_release(predicted, predicted ? words * MMC_D * sizeof(*predicted) : 0);
    randd_ea_release(right, right ? words * MMC_D * sizeof(*right) : 0);
    return rc;
}

/* --- 6.3.10 LZ78Y --------------------------------------------------------------------------- */

#define LZ_B 16
#define LZ_MAX_CONTEXTS 65536       /* ea_non_iid's cap on the dictionary's contexts */

/* One dictionary of contexts of 1..16 samples; the prediction is that of the context whose
 * prediction has the highest count (a tie: the longer context). */
int randd_ea_lz78y(const uint8_t *s, size_t n, unsigned k, double *h, const struct ea_progress *p)
{
    struct tally t = { 0, 0, 0 };
    struct ctx_keys keys;
    struct ctx_dict d;
    uint32_t contexts = LZ_B;
    int rc;

    *h = NAN;
    if (n < LZ_B + 2)
        return 0;
    /* A context per length a sample, up to the cap. The pair table, holding only contexts
     * followed by more than one value, grows as it needs: how many there are depends on the
     * samples, and sizing it for the worst case would cost the most there is. */
    if ((rc = ctx_init(&d, s, k, LZ_MAX_CONTEXTS < LZ_B * n ? LZ_MAX_CONTEXTS : LZ_B * n,
                       0)) < 0)
        goto out;
    ctx_keys(&d, LZ_B, LZ_B, &keys);       /* s[16-len..15], each followed by s[16] */
    for (unsigned len = 1; len <= LZ_B; len++)
        if ((rc = ctx_add(&d, LZ_B, len, keys.key[len], s[LZ_B])) < 0)
            goto out;
    for (size_t i = LZ_B + 1; i < n; i++) {
        uint32_t best = 0;
        uint8_t prediction = 0;

        ctx_keys(&d, i, LZ_B, &keys);
        for (unsigned len = LZ_B; len >= 1; len--) {
            ctx_ref c = ctx_find(&d, i, len, keys.key[len]);

            if (c != CTX_NONE) {
                uint32_t count;
                uint8_t y = ctx_predict(&d, c, &count);

                if (count > best)
                    best = count, prediction = y;
                rc = ctx_count(&d, c, s[i], true);
            } else if (contexts < LZ_MAX_CONTEXTS) {
                contexts++;
                rc = ctx_add(&d, i, len, keys.key[len], s[i]);
            }
            if (rc < -1)
                goto out;
        }
        tally(&t, best > 0 && prediction == s[i]);
        if (i % TICK_EVERY == 0)
            randd_ea_tick(p, i, n);
    }
    rc = 0;
    *h = randd_ea_prediction_bound(t.correct, n - LZ_B - 1, t.longest_run, k);
out:
    ctx_fini(&d);
    return rc;
}
