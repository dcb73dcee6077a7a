/* The noise modes' requests, from admission to the answer: protocol v1's FULL_ENTROPY and
 * PREDICTION_RESISTANT (server.c) and egd_full_entropy (egd.c) come in, are refused, wait,
 * or are served through these functions alone, and each step counts itself, so no caller
 * keeps the reservoir's books or touches its queue. Part of the pool (declared in pool.h,
 * called under the pool's lock); the blocks and the fair queue are noise.c's, whether a
 * noise source can give any is pool.c's.
 *
 * Sections: admission, refusals and clients gone, the answers. */
#include "pool.h"

#include <errno.h>
#include <stdio.h>

/* --- admission -------------------------------------------------------------------------- */

/* nonblock and the blocks are not ready: NOT_READY, counting the bits ready before any were
 * granted to this request. Past the reserve kept ready, a NONBLOCK request can never be
 * answered at once: the message says so rather than invite retries. */
static int not_ready_now(const struct pool *p, unsigned need, char *why, size_t whylen)
{
    int len = snprintf(why, whylen, "not enough noise-source entropy: %u bits needed, %.0f "
                       "ready; asking the noise sources for more", need * NOISE_BLOCK_CREDIT,
                       noise_available_bits(&p->noise));

    if (need > NOISE_RESERVE && len > 0 && (size_t)len < whylen)
        snprintf(why + len, whylen - (size_t)len, " (with NONBLOCK, at most %d bytes of full "
                 "entropy: the %d blocks kept ready; ask without NONBLOCK)",
                 NOISE_RESERVE * NOISE_BLOCK_BYTES, NOISE_RESERVE);
    return RANDD_NOT_READY;
}

/* noise_submit's refusal as a status and why. */
static int queue_refusal(int rc, uid_t uid, char *why, size_t whylen)
{
    if (rc == -EBUSY)
        snprintf(why, whylen, "uid %u has %d full-entropy or prediction-resistant requests "
                 "waiting already; try again when one is answered", (unsigned)uid,
                 NOISE_PER_UID);
    else if (rc == -EAGAIN)
        snprintf(why, whylen, "%d full-entropy or prediction-resistant requests wait "
                 "already, and this uid has one of them; try again", NOISE_MAX_WAITING);
    else
        snprintf(why, whylen, "out of memory for a noise request");
    return rc == -EBUSY || rc == -EAGAIN ? RANDD_BUSY : RANDD_INTERNAL;
}

int pool_noise_submit(struct pool *p, const struct pool_noise_request *rq,
                      struct noise_ticket **ticket, char *why, size_t whylen)
{
    unsigned need = noise_blocks_for(rq->mode, rq->bytes);
    int rc;

    *ticket = NULL;
    pool_noise_recheck(p);
    if (!pool_noise_able(p)) {
        pool_noise_unable_reason(p, why, whylen);
        return RANDD_NO_NOISE_SOURCE;
    }
    if (rq->nonblock && !noise_ready_now(&p->noise, rq->uid, need))
        return not_ready_now(p, need, why, whylen);
    if ((rc = noise_submit(&p->noise, rq->uid, rq->mode, need, rq->nonblock, ticket)) < 0) {
        *ticket = NULL;
        return queue_refusal(rc, rq->uid, why, whylen);
    }
    if (rq->nonblock && !noise_ticket_ready(*ticket)) {     /* not met: ready was checked */
        noise_cancel(&p->noise, *ticket);
        *ticket = NULL;
        return not_ready_now(p, need, why, whylen);
    }
    return RANDD_OK;
}

int pool_noise_wait_status(struct pool *p, const struct noise_ticket *ticket, char *why,
                           size_t whylen)
{
    pool_noise_recheck(p);
    if (noise_ticket_ready(ticket) || pool_noise_able(p))
        return RANDD_OK;
    pool_noise_unable_reason(p, why, whylen);                /* the last one failed */
    return RANDD_NO_NOISE_SOURCE;
}

/* --- refusals and clients gone -------------------------------------------------------- */

/* Its blocks, never handed out, to those waiting (noise_cancel). */
static void give_up(struct pool *p, struct noise_ticket **ticket)
{
    if (*ticket)
        noise_cancel(&p->noise, *ticket);
    *ticket = NULL;
}

void pool_noise_refuse(struct pool *p, struct noise_ticket **ticket, int status)
{
    give_up(p, ticket);
    noise_note_refusal(&p->noise, status);
}

void pool_noise_cancel(struct pool *p, struct noise_ticket **ticket)
{
    if (*ticket)
        p->noise.stats.cancelled++;
    give_up(p, ticket);
}

/* --- the answers ---------------------------------------------------------------------- */

int pool_noise_take_block(struct pool *p, struct noise_ticket **ticket,
                          uint8_t out[NOISE_BLOCK_BYTES], uint64_t served)
{
    pool_noise_recheck(p);           /* a failure induced on another loop since it was seen */
    if (!noise_ticket_ready(*ticket))
        return -EAGAIN;
    noise_take(&p->noise, *ticket, out, served);
    *ticket = NULL;
    return 0;
}

int pool_full_entropy_xor(struct pool *p, struct noise_ticket **ticket, uint8_t *out, size_t n)
{
    int rc;

    pool_noise_recheck(p);           /* a failure induced on another loop since it was seen */
    if (!noise_ticket_ready(*ticket))
        return -EAGAIN;
    if ((rc = noise_take_xor(&p->noise, *ticket, out, n)) < 0)
        return rc;
    *ticket = NULL;
    return 0;
}
