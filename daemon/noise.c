/* The noise reservoir and its fair queue (noise.h). Raw noise-source bytes are hashed with
 * SHA-256 a block at a time until the block's credit reaches NOISE_BLOCK_CREDIT; the block is
 * then granted to the request whose uid's turn came longest ago, a block at a time, so a uid
 * that asks for 4 KiB again and again delays another's 64 bytes by at most one block per
 * waiting uid per block it needs (docs/full-entropy.md: the bound, measured).
 *
 * The reserve's share. The NOISE_RESERVE blocks kept ready serve requests at once, NONBLOCK
 * ones above all. Refilled only once nothing waits, a uid that always has requests waiting,
 * or whose every new request takes what the reserve holds, keeps it empty for the others. So
 * once a NONBLOCK request of a uid with nothing waiting finds others waiting, the reserve is
 * owed, from then on: whenever it is short and requests wait, it takes its turn in line like
 * one more uid, standing for every uid with nothing waiting, a block a round. Its blocks go
 * only to NONBLOCK requests of a uid with nothing waiting, at once, first come first served;
 * any other request comes in line. So U uids that keep requests waiting get at most U of
 * every U + 1 blocks made while the reserve is short, and the reserve at least one; but no
 * one uid's NONBLOCK requests are promised any of it: a uid polling in a loop can take it
 * first (lib/PROTOCOL.md, the reserve's share). Until such a request, nothing changes: one uid
 * alone, or uids that only wait, share the blocks exactly as before. Once owed, the
 * reserve's turns cost those waiting at most NOISE_RESERVE blocks each time it is emptied,
 * blocks they would have waited for anyway while it refilled between their requests.
 *
 * Sections: blocks, the queue. */
#include "noise.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "log.h"
#include "protocol.h"
#include "secmem.h"

struct noise_secrets {
    uint8_t blocks[NOISE_RESERVE][NOISE_BLOCK_BYTES];   /* made, not granted */
    uint8_t made[NOISE_BLOCK_BYTES];                    /* the one just made, until placed */
};

struct noise_ticket {
    struct noise_ticket *next;
    uid_t uid;
    enum noise_mode mode;
    unsigned need, granted;
    uint64_t last_turn;             /* grants so far when this one last got a block, or when
                                     * it came: a newcomer queues behind every uid waiting */
    uint64_t uid_turn;              /* the latest last_turn of its uid's tickets, kept on each
                                     * so that choosing the next is one pass, not n passes */
    bool oldest;                    /* its uid's earliest incomplete ticket: the one owed
                                     * the fair share (wait_ratio_max counts for it alone) */
    unsigned others_granted;        /* blocks granted to other uids while this one waited */
    uint64_t seq;
    uint8_t *blocks;                /* need blocks, in locked memory */
    size_t blocks_len;
};

static void sync_uid_turn(struct noise *n, uid_t uid);
static void mark_oldest_all(struct noise *n);
static void place_block(struct noise *n, uint8_t *block);
static bool grant_block(struct noise *n, struct noise_ticket *t, uint8_t *block, bool in_line);

int noise_init(struct noise *n)
{
    int lock_errno;

    memset(n, 0, sizeof(*n));
    n->secret = randd_secure_alloc(sizeof(*n->secret), &lock_errno);
    n->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    n->md_ctx = EVP_MD_CTX_new();
    if (!n->secret || !n->md || !n->md_ctx) {
        noise_fini(n);
        return -ENOMEM;
    }
    return 0;
}

static void free_ticket(struct noise_ticket *t)
{
    randd_secure_free(t->blocks, t->blocks_len);
    free(t);
}

void noise_fini(struct noise *n)
{
    while (n->waiting) {
        struct noise_ticket *t = n->waiting;

        n->waiting = t->next;
        free_ticket(t);
    }
    if (n->secret)
        randd_secure_free(n->secret, sizeof(*n->secret));
    EVP_MD_CTX_free(n->md_ctx);     /* EVP_MD_CTX_free cleanses the digest state */
    EVP_MD_free(n->md);
    memset(n, 0, sizeof(*n));
}

/* --- blocks ---------------------------------------------------------------------------- */

static unsigned waiting_need(const struct noise *n)
{
    unsigned need = 0;

    for (const struct noise_ticket *t = n->waiting; t; t = t->next)
        need += t->need - t->granted;
    return need;
}

unsigned noise_wanted_blocks(const struct noise *n)
{
    unsigned need = waiting_need(n);

    if (n->asked && n->free_blocks < NOISE_RESERVE)
        need += NOISE_RESERVE - n->free_blocks;
    return need;
}

double noise_available_bits(const struct noise *n)
{
    return (double)n->free_blocks * NOISE_BLOCK_CREDIT + n->partial_credit;
}

/* Ends the block being gathered: its digest goes to whoever's turn it is, or the reserve. */
static void finish_block(struct noise *n)
{
    uint8_t *out = n->secret->made;
    unsigned len = NOISE_BLOCK_BYTES;

    if (EVP_DigestFinal_ex(n->md_ctx, out, &len) != 1) {
        log_err("noise reservoir: SHA-256 failed; the block is dropped");
        OPENSSL_cleanse(out, NOISE_BLOCK_BYTES);
    } else {
        n->stats.blocks_made++;
        place_block(n, out);
    }
    /* SHA-256's state after Final is the block itself (its h[] words): wiped now, not when
     * the next block starts, which may be long after (a full reserve, a slow source). */
    EVP_MD_CTX_reset(n->md_ctx);
    n->partial_credit = 0;
    n->partial_started = false;
}

size_t noise_absorb(struct noise *n, const uint8_t *raw, size_t len, double bits_per_byte)
{
    size_t taken = 0;

    if (bits_per_byte <= 0)
        return 0;
    while (taken < len && noise_wanted_blocks(n) > 0) {
        double missing = NOISE_BLOCK_CREDIT - n->partial_credit;
        size_t k = (size_t)(missing / bits_per_byte);

        if ((double)k * bits_per_byte < missing)
            k++;                    /* whole bytes: the block's credit never falls short */
        if (k > len - taken)
            k = len - taken;
        if (!n->partial_started) {
            if (EVP_DigestInit_ex(n->md_ctx, n->md, NULL) != 1)
                break;
            n->partial_started = true;
        }
        if (EVP_DigestUpdate(n->md_ctx, raw + taken, k) != 1)
            break;
        taken += k;
        n->partial_credit += (double)k * bits_per_byte;
        if (n->partial_credit >= NOISE_BLOCK_CREDIT)
            finish_block(n);
    }
    return taken;
}

void noise_drop(struct noise *n)
{
    double bits = noise_available_bits(n);

    for (struct noise_ticket *t = n->waiting; t; t = t->next) {
        bits += (double)t->granted * NOISE_BLOCK_CREDIT;
        OPENSSL_cleanse(t->blocks, t->blocks_len);
        t->granted = 0;
    }
    mark_oldest_all(n);
    OPENSSL_cleanse(n->secret, sizeof(*n->secret));
    if (n->partial_started) {
        uint8_t sink[NOISE_BLOCK_BYTES];
        unsigned len = sizeof(sink);

        EVP_DigestFinal_ex(n->md_ctx, sink, &len);
        OPENSSL_cleanse(sink, sizeof(sink));
        EVP_MD_CTX_reset(n->md_ctx);                   /* Final leaves the digest in it */
    }
    n->partial_started = false;
    n->partial_credit = 0;
    n->free_blocks = 0;
    n->stats.dropped_bits += (uint64_t)bits;
}

/* --- the queue ------------------------------------------------------------------------ */

bool noise_ticket_ready(const struct noise_ticket *t)
{
    return t->granted == t->need;
}

unsigned noise_ticket_granted(const struct noise_ticket *t)
{
    return t->granted;
}

/* uid's requests not yet complete. */
static unsigned uid_waiting(const struct noise *n, uid_t uid)
{
    unsigned mine = 0;

    for (const struct noise_ticket *t = n->waiting; t; t = t->next)
        mine += t->uid == uid && !noise_ticket_ready(t);
    return mine;
}

static bool anyone_waits(const struct noise *n)
{
    for (const struct noise_ticket *t = n->waiting; t; t = t->next)
        if (!noise_ticket_ready(t))
            return true;
    return false;
}

bool noise_ready_now(struct noise *n, uid_t uid, unsigned blocks)
{
    n->asked = true;
    if (uid_waiting(n, uid) > 0)
        return false;                 /* the reserve is for uids with nothing waiting */
    if (anyone_waits(n) && !n->reserve_owed) {
        n->reserve_owed = true;       /* in line behind each uid waiting, once: a newcomer */
        n->reserve_turn = n->turn;
    }
    return n->free_blocks >= blocks;
}

int noise_submit(struct noise *n, uid_t uid, enum noise_mode mode, unsigned blocks,
                 bool nonblock, struct noise_ticket **ticket)
{
    struct noise_ticket *t, **tail;
    unsigned mine = uid_waiting(n, uid);
    int lock_errno;

    n->asked = true;
    if (mine >= NOISE_PER_UID)
        return -EBUSY;
    /* The cap holds only a uid's second and later requests: its first always gets a place,
     * or uids enough to fill the cap (16 of a user's subordinate uids) would lock out every
     * other uid, root too. The first ones are bounded by the connections a peer may hold
     * (max_clients and its uid's share of them), each at most NOISE_MAX_BLOCKS blocks. */
    if (mine > 0 && n->nwaiting >= NOISE_MAX_WAITING)
        return -EAGAIN;
    if (!(t = calloc(1, sizeof(*t))))
        return -ENOMEM;
    t->blocks_len = (size_t)blocks * NOISE_BLOCK_BYTES;
    if (!(t->blocks = randd_secure_alloc(t->blocks_len, &lock_errno))) {
        free(t);
        return -ENOMEM;
    }
    t->uid = uid;
    t->mode = mode;
    t->need = blocks;
    t->seq = ++n->seq;
    /* Not 0: a uid whose requests were all answered must not jump the line with a new one. */
    t->last_turn = n->turn;
    t->oldest = mine == 0;
    for (tail = &n->waiting; *tail; tail = &(*tail)->next)
        ;
    *tail = t;
    n->nwaiting++;
    sync_uid_turn(n, uid);
    /* The reserve serves a uid with nothing waiting at once, as far as it goes; the rest
     * comes in line. One with a request waiting already gets nothing from it; once it is
     * owed, neither does a request that may wait (the next of a uid sending them one at a
     * time would take each block of the reserve's turns first): it is for NONBLOCK ones. */
    while (mine == 0 && (nonblock || !n->reserve_owed) && n->free_blocks > 0 &&
           !noise_ticket_ready(t))
        grant_block(n, t, n->secret->blocks[--n->free_blocks], false);
    noise_grant(n);
    *ticket = t;
    return 0;
}

/* Every ticket of uid gets the uid's place in line: its latest grant or arrival, the earliest
 * going first. One pass: choosing the next block's owner must stay linear in the number
 * waiting, which a peer's many uids (subordinate ones) can make large. */
static void sync_uid_turn(struct noise *n, uid_t uid)
{
    uint64_t last = 0;

    for (const struct noise_ticket *t = n->waiting; t; t = t->next)
        if (t->uid == uid && t->last_turn > last)
            last = t->last_turn;
    for (struct noise_ticket *t = n->waiting; t; t = t->next)
        if (t->uid == uid)
            t->uid_turn = last;
}

/* The oldest incomplete ticket of the uid whose turn came longest ago. */
static struct noise_ticket *next_in_line(const struct noise *n)
{
    struct noise_ticket *best = NULL;

    for (struct noise_ticket *t = n->waiting; t; t = t->next)
        if (!noise_ticket_ready(t) && (!best || t->uid_turn < best->uid_turn))
            best = t;                      /* ties: the earlier ticket, met first */
    return best;
}

/* The fair share is owed to a uid's oldest incomplete request: its later ones wait behind
 * its own first as well, which is not another's doing. Marks uid's, after its oldest
 * completed or left. */
static void mark_oldest(struct noise *n, uid_t uid)
{
    bool found = false;

    for (struct noise_ticket *t = n->waiting; t; t = t->next)
        if (t->uid == uid) {
            t->oldest = !found && !noise_ticket_ready(t);
            found |= t->oldest;
        }
}

/* After noise_drop made every ticket incomplete again. Quadratic, but only a noise source's
 * failure gets here, never a peer. */
static void mark_oldest_all(struct noise *n)
{
    for (struct noise_ticket *t = n->waiting; t; t = t->next)
        t->oldest = false;
    for (struct noise_ticket *t = n->waiting; t; t = t->next)
        mark_oldest(n, t->uid);
}

/* A block went to to's uid (NULL: to the reserve): one more for every other uid's oldest
 * request waiting. */
static void count_others_granted(struct noise *n, const struct noise_ticket *to)
{
    for (struct noise_ticket *o = n->waiting; o; o = o->next)
        o->others_granted += (!to || o->uid != to->uid) && o->oldest;
}

/* One block to t, its turn taken; block is wiped. True if that completed t. in_line: the
 * block was t's turn (counted against the others waiting), not the reserve's, whose turns
 * were counted as it took them. */
static bool grant_block(struct noise *n, struct noise_ticket *t, uint8_t *block, bool in_line)
{
    memcpy(t->blocks + (size_t)t->granted * NOISE_BLOCK_BYTES, block, NOISE_BLOCK_BYTES);
    OPENSSL_cleanse(block, NOISE_BLOCK_BYTES);
    if (in_line)
        count_others_granted(n, t);
    t->granted++;
    t->last_turn = ++n->turn;
    sync_uid_turn(n, t->uid);
    if (!noise_ticket_ready(t))
        return false;
    mark_oldest(n, t->uid);
    if ((double)t->others_granted / t->need > n->stats.wait_ratio_max)
        n->stats.wait_ratio_max = (double)t->others_granted / t->need;
    n->stats.completed++;
    return true;
}

unsigned noise_grant(struct noise *n)
{
    unsigned completed = 0;
    struct noise_ticket *t;

    while (n->free_blocks > 0 && !n->reserve_owed && (t = next_in_line(n)))
        completed += grant_block(n, t, n->secret->blocks[--n->free_blocks], true);
    return completed;
}

/* A block made, or given back by a request that left: to the request whose uid's turn came
 * longest ago, or to the reserve when its turn came longer ago still (owed, and not full),
 * or when nothing waits; a block neither wants is wiped and counted dropped. block is
 * wiped. */
static void place_block(struct noise *n, uint8_t *block)
{
    struct noise_ticket *t = next_in_line(n);
    bool reserve_room = n->free_blocks < NOISE_RESERVE;

    if (t && !(n->reserve_owed && reserve_room && n->reserve_turn < t->uid_turn)) {
        grant_block(n, t, block, true);
    } else if (reserve_room) {
        memcpy(n->secret->blocks[n->free_blocks++], block, NOISE_BLOCK_BYTES);
        OPENSSL_cleanse(block, NOISE_BLOCK_BYTES);
        if (t) {                      /* the reserve's turn, taken from those waiting */
            count_others_granted(n, NULL);
            n->reserve_turn = ++n->turn;
        }
    } else {
        OPENSSL_cleanse(block, NOISE_BLOCK_BYTES);
        n->stats.dropped_bits += NOISE_BLOCK_CREDIT;
    }
    noise_grant(n);
}

static void unlink_ticket(struct noise *n, const struct noise_ticket *t)
{
    for (struct noise_ticket **p = &n->waiting; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            n->nwaiting--;
            sync_uid_turn(n, t->uid);
            if (t->oldest)
                mark_oldest(n, t->uid);
            return;
        }
}

/* A complete ticket leaves the queue, its blocks counted as spent by its mode. */
static void spend_ticket(struct noise *n, const struct noise_ticket *t, uint64_t served)
{
    unlink_ticket(n, t);
    n->stats.consumed_bits[t->mode] += (uint64_t)t->need * NOISE_BLOCK_CREDIT;
    n->stats.served_bytes[t->mode] += served;
    n->stats.requests[t->mode]++;
    if (t->mode == NOISE_PREDICTION_RESISTANT)
        n->stats.reseeds++;
}

void noise_take(struct noise *n, struct noise_ticket *t, uint8_t *out, uint64_t served)
{
    spend_ticket(n, t, served);
    memcpy(out, t->blocks, t->blocks_len);
    free_ticket(t);
}

int noise_take_xor(struct noise *n, struct noise_ticket *t, uint8_t *out, size_t len)
{
    if (len > t->blocks_len)
        return -EINVAL;
    spend_ticket(n, t, len);
    for (size_t i = 0; i < len; i++)
        out[i] ^= t->blocks[i];
    free_ticket(t);                  /* wipes the blocks: each is handed out once */
    return 0;
}

void noise_note_refusal(struct noise *n, int status)
{
    if (status == RANDD_NOT_READY)
        n->stats.not_ready++;
    else if (status == RANDD_BUSY)
        n->stats.busy++;
    else if (status == RANDD_NO_NOISE_SOURCE)
        n->stats.no_source++;
}

void noise_cancel(struct noise *n, struct noise_ticket *t)
{
    unlink_ticket(n, t);
    /* Never handed out: to whoever waits, in turn (the reserve's too, when owed), then to
     * the reserve as far as it has room; the rest is wiped and counted dropped (gone, never
     * spent twice). */
    for (unsigned i = 0; i < t->granted; i++)
        place_block(n, t->blocks + (size_t)i * NOISE_BLOCK_BYTES);
    free_ticket(t);
    noise_grant(n);
}
