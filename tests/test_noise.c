/* The noise reservoir and its queue (daemon/noise.c): N credited bits let out at most
 * N/8 bytes less the margin, a block is handed out once, cancelled blocks go to the next
 * request and no one else, a failure wipes what was not handed out, and blocks go
 * round-robin between uids so one uid's 4 KiB requests delay another's 64 bytes by at most
 * a block of theirs per block of its own, and the reserve takes its turn in that line for
 * the NONBLOCK requests of uids with nothing waiting. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "noise.h"
#include "protocol.h"
#include "runner.h"

static struct noise noise;
static uint8_t raw[1 << 16];

static void setup(void)
{
    ck_assert_int_eq(noise_init(&noise), 0);
    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (uint8_t)(i * 131 + (i >> 8));
}

static void teardown(void)
{
    noise_fini(&noise);
}

static struct noise_ticket *submit_as(uid_t uid, unsigned blocks, bool nonblock)
{
    struct noise_ticket *t = NULL;

    ck_assert_int_eq(noise_submit(&noise, uid, NOISE_FULL_ENTROPY, blocks, nonblock, &t), 0);
    return t;
}

/* A request that may wait. */
static struct noise_ticket *submit(uid_t uid, unsigned blocks)
{
    return submit_as(uid, blocks, false);
}

/* A NONBLOCK request, after noise_ready_now said yes (as the server asks). */
static struct noise_ticket *submit_nonblock(uid_t uid, unsigned blocks)
{
    return submit_as(uid, blocks, true);
}

/* Makes exactly one more block: feeds bytes one at a time until blocks_made moves. */
static void make_one_block(size_t *at, double bits_per_byte)
{
    uint64_t before = noise.stats.blocks_made;

    while (noise.stats.blocks_made == before) {
        ck_assert_uint_lt(*at, sizeof(raw));
        ck_assert_uint_eq(noise_absorb(&noise, raw + *at, 1, bits_per_byte), 1);
        (*at)++;
    }
}

START_TEST(n_credited_bits_let_out_at_most_n_over_8_bytes_less_the_margin)
{
    static const double rates[] = { 0.25, 1.0, 3.0, 4.0, 8.0 };
    static const size_t lengths[] = { 1, 39, 40, 41, 400, 4000, 5119 };

    for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++)
        for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
            struct noise_ticket *t;
            size_t taken;
            double credited;
            unsigned granted;

            noise_fini(&noise);
            ck_assert_int_eq(noise_init(&noise), 0);
            t = submit(0, NOISE_MAX_BLOCKS);
            taken = noise_absorb(&noise, raw, lengths[l], rates[r]);
            credited = (double)taken * rates[r];
            granted = (unsigned)noise.stats.blocks_made;
            ck_assert_uint_le(taken, lengths[l]);
            ck_assert_msg(8.0 * NOISE_BLOCK_BYTES * granted <=
                              credited - (double)NOISE_MARGIN_BITS * granted,
                          "%.0f credited bits (%zu bytes at %.2f) let out %u blocks of 32 "
                          "bytes: more than N/8 bytes less 64 bits a block", credited, taken,
                          rates[r], granted);
            ck_assert_msg(granted == (unsigned)(credited / NOISE_BLOCK_CREDIT),
                          "%.0f credited bits made %u blocks, not %u", credited, granted,
                          (unsigned)(credited / NOISE_BLOCK_CREDIT));
            noise_cancel(&noise, t);
        }
}
END_TEST

START_TEST(a_request_no_one_wants_takes_no_bytes)
{
    ck_assert_uint_eq(noise_wanted_blocks(&noise), 0);
    ck_assert_uint_eq(noise_absorb(&noise, raw, 4096, 8.0), 0);
    ck_assert_uint_eq(noise.stats.blocks_made, 0);
}
END_TEST

START_TEST(spent_blocks_are_gone)
{
    uint8_t first[2 * NOISE_BLOCK_BYTES], second[2 * NOISE_BLOCK_BYTES];
    struct noise_ticket *t = submit(0, 2), *u;
    size_t at = 0;

    make_one_block(&at, 4.0);
    make_one_block(&at, 4.0);
    ck_assert(noise_ticket_ready(t));
    noise_take(&noise, t, first, sizeof(first));
    ck_assert_uint_eq(noise.stats.consumed_bits[NOISE_FULL_ENTROPY], 2 * NOISE_BLOCK_CREDIT);
    /* The reserve (asked for now) is what is left: never the blocks just taken. */
    u = submit(7, 2);
    ck_assert_msg(!noise_ticket_ready(u), "a second request was served with no new blocks");
    make_one_block(&at, 4.0);
    make_one_block(&at, 4.0);
    ck_assert(noise_ticket_ready(u));
    noise_take(&noise, u, second, sizeof(second));
    ck_assert_msg(memcmp(first, second, NOISE_BLOCK_BYTES) != 0 &&
                  memcmp(first + NOISE_BLOCK_BYTES, second + NOISE_BLOCK_BYTES,
                         NOISE_BLOCK_BYTES) != 0, "a block was handed out twice");
    ck_assert_uint_eq(noise.stats.consumed_bits[NOISE_FULL_ENTROPY], 4 * NOISE_BLOCK_CREDIT);
}
END_TEST

/* Whether the heap ([heap] in /proc/self/maps) holds the len bytes at pattern anywhere. */
static bool heap_holds(const uint8_t *pattern, size_t len)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;

    ck_assert_ptr_nonnull(maps);
    while (!found && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;

        if (strstr(line, "[heap]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            found = memmem((const void *)lo, hi - lo, pattern, len) != NULL;
    }
    fclose(maps);
    return found;
}

/* A block once made is nowhere in the SHA-256 state that made it: after Final, SHA-256's state
 * words are the digest itself (each word in host order), and they stayed in OpenSSL's heap
 * until the next block began, which can be long after (a full reserve, a slow source). */
START_TEST(a_finished_block_leaves_nothing_in_the_digest_state)
{
    static const uint8_t marker[] = "randd test_noise: a marker only the heap holds";
    uint8_t block[NOISE_BLOCK_BYTES], words[NOISE_BLOCK_BYTES];
    struct noise_ticket *t;
    size_t at = 0;
    char *probe = malloc(sizeof(marker));

    /* Positive control: a small malloc must land in [heap], as OpenSSL's do in a plain
     * build. Under ASan or valgrind it does not, and the scan would prove nothing. */
    ck_assert_ptr_nonnull(probe);
    memcpy(probe, marker, sizeof(marker));
    probe[0] ^= 0x20;               /* so the constant itself is no match */
    {
        uint8_t want[sizeof(marker)];

        memcpy(want, marker, sizeof(marker));
        want[0] ^= 0x20;
        if (!heap_holds(want, sizeof(want))) {
            free(probe);
            fprintf(stderr, "SKIP: a_finished_block_leaves_nothing_in_the_digest_state: "
                    "malloc does not use [heap] here (ASan, valgrind)\n");
            return;
        }
    }
    explicit_bzero(probe, sizeof(marker));
    free(probe);
    t = submit(0, 1);

    make_one_block(&at, 4.0);
    ck_assert(noise_ticket_ready(t));
    noise_take(&noise, t, block, sizeof(block));
    for (size_t i = 0; i < sizeof(block); i++)      /* h[i / 4] as the CPU keeps it */
        words[i] = block[(i & ~(size_t)3) + (3 - (i & 3))];
    ck_assert_msg(!heap_holds(words, sizeof(words)) && !heap_holds(block, sizeof(block)),
                  "the block is still in the heap after it was handed out");
    explicit_bzero(block, sizeof(block));
}
END_TEST

START_TEST(a_cancelled_requests_blocks_go_to_the_next_and_are_spent_once)
{
    uint8_t out[NOISE_BLOCK_BYTES];
    struct noise_ticket *gone = submit(1, 3), *next;
    size_t at = 0;

    make_one_block(&at, 8.0);
    ck_assert_uint_eq(noise.stats.blocks_made, 1);
    noise_cancel(&noise, gone);          /* its block, never handed out, back to the reserve */
    next = submit(2, 1);
    ck_assert(noise_ticket_ready(next));
    noise_take(&noise, next, out, sizeof(out));
    ck_assert_uint_eq(noise.stats.consumed_bits[NOISE_FULL_ENTROPY], NOISE_BLOCK_CREDIT);
    ck_assert_msg(noise_available_bits(&noise) < NOISE_BLOCK_CREDIT,
                  "the block was spent, yet %.0f bits are ready",
                  noise_available_bits(&noise));
}
END_TEST

START_TEST(a_drop_wipes_every_block_not_handed_out)
{
    struct noise_ticket *t = submit(1, 4);
    size_t at = 0;

    make_one_block(&at, 8.0);
    make_one_block(&at, 8.0);
    ck_assert_uint_eq(noise_absorb(&noise, raw + at, 10, 8.0), 10);   /* a partial block */
    noise_drop(&noise);
    ck_assert(!noise_ticket_ready(t));
    ck_assert_msg(noise_available_bits(&noise) == 0, "%.0f bits survived a drop",
                  noise_available_bits(&noise));
    ck_assert_uint_eq(noise.stats.dropped_bits, 2 * NOISE_BLOCK_CREDIT + 80);
    ck_assert_uint_eq(noise_wanted_blocks(&noise), 4 + NOISE_RESERVE);
    noise_cancel(&noise, t);
}
END_TEST

/* Past the 64, a uid with one waiting is BUSY; one with none still gets its place (else 16
 * uids with 4 each would lock all others out). */
START_TEST(a_uid_over_its_share_is_busy_and_the_queue_is_bounded)
{
    struct noise_ticket *t;

    for (int i = 0; i < NOISE_PER_UID; i++)
        submit(5, 1);
    ck_assert_int_eq(noise_submit(&noise, 5, NOISE_PREDICTION_RESISTANT, 1, false, &t), -EBUSY);
    for (uid_t uid = 100; noise.nwaiting < NOISE_MAX_WAITING; uid++)
        submit(uid, 1);
    ck_assert_int_eq(noise_submit(&noise, 100, NOISE_PREDICTION_RESISTANT, 1, false, &t),
                     -EAGAIN);
    submit(9999, 1);
    ck_assert_uint_eq(noise.nwaiting, NOISE_MAX_WAITING + 1);
    ck_assert_int_eq(noise_submit(&noise, 9999, NOISE_PREDICTION_RESISTANT, 1, false, &t),
                     -EAGAIN);
}
END_TEST

/* Root keeps its 4 requests of 4 KiB waiting; nobody (65534) asks 64 bytes (2 blocks) after
 * root has had blocks. Nobody's request is complete within 4 blocks made: it queues behind
 * root once, then the two alternate. */
START_TEST(blocks_go_round_robin_so_a_small_request_waits_its_fair_share)
{
    struct noise_ticket *root[NOISE_PER_UID], *small;
    unsigned made_for_small = 0;
    size_t at = 0;

    for (int i = 0; i < NOISE_PER_UID; i++)
        root[i] = submit(0, NOISE_MAX_BLOCKS);
    for (int i = 0; i < 10; i++)
        make_one_block(&at, 8.0);
    small = submit(65534, 2);
    while (!noise_ticket_ready(small)) {
        make_one_block(&at, 8.0);
        made_for_small++;
    }
    ck_assert_msg(made_for_small <= 4, "64 bytes took %u blocks with one other uid waiting",
                  made_for_small);
    ck_assert_msg(noise.stats.wait_ratio_max <= 1.0, "wait_ratio_max %.3f",
                  noise.stats.wait_ratio_max);
    for (int i = 0; i < NOISE_PER_UID; i++)
        ck_assert(!noise_ticket_ready(root[i]));
}
END_TEST

/* A uid's second request waits behind its own first too: only what others got while it was
 * its uid's oldest counts, so wait_ratio_max stays within U - 1 = 1 here (2 before). */
START_TEST(wait_ratio_counts_others_grants_only_while_the_oldest_of_its_uid)
{
    struct noise_ticket *first = submit(1, 4), *second = submit(1, 4);
    size_t at = 0;

    submit(2, NOISE_MAX_BLOCKS);
    while (!noise_ticket_ready(second))
        make_one_block(&at, 8.0);
    ck_assert(noise_ticket_ready(first));
    ck_assert_msg(noise.stats.wait_ratio_max <= 1.0, "wait_ratio_max %.3f with 2 uids "
                  "waiting (at most 1)", noise.stats.wait_ratio_max);
}
END_TEST

/* 20 blocks granted to a request whose client left go to the one still waiting, not to the
 * 16-block reserve and the bin. */
START_TEST(a_leavers_blocks_go_to_those_waiting_before_the_reserve)
{
    struct noise_ticket *gone = submit(1, NOISE_MAX_BLOCKS), *stays;
    size_t at = 0;

    for (int i = 0; i < 20; i++)
        make_one_block(&at, 8.0);
    stays = submit(2, NOISE_MAX_BLOCKS);
    noise_cancel(&noise, gone);
    ck_assert_uint_eq(noise_ticket_granted(stays), 20);
    ck_assert_uint_eq(noise.stats.dropped_bits, 0);
}
END_TEST

/* One uid keeps a 4 KiB request waiting (the reserve emptied into it). A NONBLOCK request of
 * a uid with nothing waiting finds nothing ready; from then on the reserve takes its turn in
 * line: one block in two while the one uid waits, and the waiter's uid still gets nothing
 * from it, NONBLOCK or not. The other uid's next NONBLOCK request is answered at once. */
START_TEST(a_nonblock_request_of_a_uid_with_nothing_waiting_gets_the_reserves_turn)
{
    struct noise_ticket *hog = submit(1, NOISE_MAX_BLOCKS), *pr, *hog2;
    uint8_t out[NOISE_BLOCK_BYTES];
    size_t at = 0;

    ck_assert(!noise_ready_now(&noise, 2, 1));
    ck_assert(noise.reserve_owed);
    for (int i = 0; i < 8; i++)
        make_one_block(&at, 8.0);
    ck_assert_uint_eq(noise_ticket_granted(hog), 4);
    ck_assert_uint_eq(noise.free_blocks, 4);
    ck_assert_msg(!noise_ready_now(&noise, 1, 1), "a uid with a request waiting drew on the "
                  "reserve kept for uids with nothing waiting");
    hog2 = submit(1, 1);                         /* in line, not from the reserve */
    ck_assert_uint_eq(noise_ticket_granted(hog2), 0);
    ck_assert_uint_eq(noise.free_blocks, 4);
    ck_assert(noise_ready_now(&noise, 2, 1));
    pr = submit_nonblock(2, 1);
    ck_assert(noise_ticket_ready(pr));
    ck_assert_uint_eq(noise.free_blocks, 3);
    noise_take(&noise, pr, out, sizeof(out));
    /* The waiter is counted as delayed by the reserve's turns: at most U = 2 with it. */
    ck_assert_msg(noise.stats.wait_ratio_max <= 2.0, "wait_ratio_max %.3f",
                  noise.stats.wait_ratio_max);
    noise_cancel(&noise, hog2);
    noise_cancel(&noise, hog);
}
END_TEST

/* Without a NONBLOCK request from another uid the reserve takes no turn: a uid alone, or uids
 * that only wait, get every block made, as before the reserve's share. */
START_TEST(without_nonblock_requests_the_reserve_takes_no_turn)
{
    struct noise_ticket *a = submit(1, NOISE_MAX_BLOCKS), *b = submit(2, NOISE_MAX_BLOCKS);
    size_t at = 0;

    ck_assert(!noise_ready_now(&noise, 1, 1));   /* the waiter's own NONBLOCK: no turn owed */
    for (int i = 0; i < 10; i++)
        make_one_block(&at, 8.0);
    ck_assert(!noise.reserve_owed);
    ck_assert_uint_eq(noise.free_blocks, 0);
    ck_assert_uint_eq(noise_ticket_granted(a) + noise_ticket_granted(b), 10);
}
END_TEST

/* Once the reserve is owed, a request that may wait from a uid with nothing waiting (a third
 * uid's, or the next of a uid sending one-block requests one at a time) comes in line and
 * leaves the reserve to NONBLOCK requests: before, it took the blocks of the reserve's turns
 * first, and another uid's NONBLOCK requests found it empty. */
START_TEST(once_owed_the_reserve_serves_nonblock_requests_only)
{
    struct noise_ticket *hog = submit(1, NOISE_MAX_BLOCKS), *patient, *pr;
    uint8_t out[2 * NOISE_BLOCK_BYTES];
    size_t at = 0;

    ck_assert(!noise_ready_now(&noise, 2, 1));   /* the reserve owed from here */
    for (int i = 0; i < 4; i++)
        make_one_block(&at, 8.0);
    ck_assert_uint_eq(noise.free_blocks, 2);
    patient = submit(3, 1);
    ck_assert_msg(noise_ticket_granted(patient) == 0 && noise.free_blocks == 2,
                  "a request that may wait took %u of the reserve's blocks",
                  2 - noise.free_blocks);
    ck_assert(noise_ready_now(&noise, 2, 2));
    pr = submit_nonblock(2, 2);
    ck_assert(noise_ticket_ready(pr));
    ck_assert_uint_eq(noise.free_blocks, 0);
    noise_take(&noise, pr, out, sizeof(out));
    for (int i = 0; i < 4 && !noise_ticket_ready(patient); i++)
        make_one_block(&at, 8.0);
    ck_assert_msg(noise_ticket_ready(patient), "the waiting request was not served in line");
    noise_cancel(&noise, patient);
    noise_cancel(&noise, hog);
}
END_TEST

/* Many uids, one small request each (a peer's subordinate uids can do this, as the first
 * request of a uid is always admitted): each is served once, in the order they came, and
 * the queue's bookkeeping stays linear in them (quadratic choosing took minutes here). */
START_TEST(three_thousand_uids_are_served_once_each_in_turn)
{
    enum { UIDS = 3000 };
    static struct noise_ticket *t[UIDS];
    uint8_t out[NOISE_BLOCK_BYTES];
    size_t at = 0;

    for (unsigned i = 0; i < UIDS; i++)
        t[i] = submit(10000 + i, 1);
    for (unsigned i = 0; i < UIDS; i++) {
        make_one_block(&at, 8.0);
        if (at > sizeof(raw) - 64)
            at = 0;
        ck_assert_msg(noise_ticket_ready(t[i]), "uid %u's request not served %u-th", i, i);
        if (i + 1 < UIDS)
            ck_assert(!noise_ticket_ready(t[i + 1]));
        noise_take(&noise, t[i], out, sizeof(out));
    }
    ck_assert_uint_eq(noise.nwaiting, 0);
    ck_assert_msg(noise.stats.wait_ratio_max <= UIDS - 1, "wait_ratio_max %.3f",
                  noise.stats.wait_ratio_max);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("noise");
    TCase *tc = tcase_create("reservoir and queue");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, n_credited_bits_let_out_at_most_n_over_8_bytes_less_the_margin);
    tcase_add_test(tc, a_request_no_one_wants_takes_no_bytes);
    tcase_add_test(tc, spent_blocks_are_gone);
    tcase_add_test(tc, a_finished_block_leaves_nothing_in_the_digest_state);
    tcase_add_test(tc, a_cancelled_requests_blocks_go_to_the_next_and_are_spent_once);
    tcase_add_test(tc, a_drop_wipes_every_block_not_handed_out);
    tcase_add_test(tc, a_uid_over_its_share_is_busy_and_the_queue_is_bounded);
    tcase_add_test(tc, blocks_go_round_robin_so_a_small_request_waits_its_fair_share);
    tcase_add_test(tc, wait_ratio_counts_others_grants_only_while_the_oldest_of_its_uid);
    tcase_add_test(tc, a_leavers_blocks_go_to_those_waiting_before_the_reserve);
    tcase_add_test(tc, a_nonblock_request_of_a_uid_with_nothing_waiting_gets_the_reserves_turn);
    tcase_add_test(tc, without_nonblock_requests_the_reserve_takes_no_turn);
    tcase_add_test(tc, once_owed_the_reserve_serves_nonblock_requests_only);
    suite_add_tcase(s, tc);
    /* Its own deadline: linear bookkeeping takes a second on a loaded machine, quadratic
     * takes minutes. */
    tc = tcase_create("many uids");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, three_thousand_uids_are_served_once_each_in_turn);
    suite_add_tcase(s, tc);
    return s;
}
