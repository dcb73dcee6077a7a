/* The pool: conditions healthy sources' raw bytes with BLAKE2b-512 or SHA-512 (chosen before
 * the first seed), seeds and reseeds the generator from them, and is the only way to get
 * output, so nothing is served from an unseeded or unhealthy generator. Keeps separate
 * material for the kernel feed. */
#ifndef RANDD_POOL_H
#define RANDD_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"                 /* enum randd_stream_cipher */
#include "noise.h"
#include "protocol.h"               /* enum randd_engine */
#include "source.h"

struct randd_cymric;

#define POOL_SEED_BITS     256     /* credited bits before the first output and each reseed
                                    * (a plain number: messages quote it, pool.c) */
/* SP 800-90C: an RBG2's DRBG is instantiated from 3s/2 = 384 bits of entropy (s = 256, its
 * security strength), reseeded from s. With pool_instantiate_at_three_halves, a seed that
 * instantiates the pool's DRBG waits for this many credited bits (mode = approved): 384 and a
 * margin of 64, because SP 800-90B 3.1.5.1.2 gives SHA-512's 512-bit output of exactly 384
 * credited bits 383.x bits, and the 48-byte entropy input 383 (randctl assess --conditioning
 * --vetted); from 448 both hold 384. */
#define POOL_INSTANTIATE_BITS 448
#define POOL_MAX_SOURCES   8
#define POOL_KERNEL_BYTES  64      /* conditioned bytes per kernel top-up */

/* The function every hash of the pool runs (the generator's and the kernel feed's
 * accumulators, the step after a seed, the rekey after lost kernel log records): BLAKE2b-512
 * unless pool_use_conditioning chose SHA-512. Both give 64 bytes, so nothing else changes. */
enum pool_conditioning_function {
    POOL_CONDITIONING_BLAKE2B512 = 0,   /* the default: fast, not vetted by SP 800-90B */
    POOL_CONDITIONING_SHA512,           /* vetted (SP 800-90B 3.1.5.1.1): mode = approved */
};

#define POOL_ACCUMULATOR_BYTES 64          /* either function's digest and chaining value */

/* SP 800-90B 3.1.5 for randd's own conditioning, with either function. The chain of absorbs
 * between two seeds is one function of all it absorbed and the accumulator it started from:
 * n_in is those bits, h_in the bits credited for them, n_out the 512-bit seed, nw the
 * function's 512-bit chaining value (BLAKE2b-512's h, SHA-512's H).
 * - SHA-512 is vetted (3.1.5.1.1 lists HMAC, CMAC, CBC-MAC, Hash_df, Block_cipher_df, SHA-2
 *   and SHA-3), so a seed's entropy is h_out = Output_Entropy(n_in, n_out, nw, h_in)
 *   (3.1.5.1.2), with no other cap: 256 bits when 256 are credited, and the whole 512 (full
 *   entropy by SP 800-90C's condition, h_in >= n_out + 64) from 576 credited bits on.
 * - BLAKE2b-512 is not, so it is the non-vetted h_out = min(Output_Entropy(n_in, n_out, nw,
 *   h_in), 0.999 n_out, h' n_out) (3.1.5.2). h' is the min-entropy per bit SP 800-90B's
 *   non-IID estimators measured on 1,000,000 bytes of randd's conditioned output, jitter
 *   samples absorbed as the pool absorbs them (docs/assessment.md: "What a seed is worth"):
 *   a property of the function, measured once, as 3.1.5.2 asks of a lab. It caps a seed at
 *   476.7 bits however much was credited.
 * Either way the pool seeds once POOL_SEED_BITS are credited, and claims no more than that
 * for a seed (drbg_engine.c: why the DRBG's entropy input is 48 of the 64 bytes). */
#define POOL_CONDITIONED_BITS  512
#define POOL_CONDITIONING_NW   512
#define POOL_CONDITIONING_H_PRIME 0.931   /* BLAKE2b-512's: 0.93149 measured (docs/assessment.md) */

/* The conditioning behind the last seed, for STATUS: n_in 0 before the first. */
struct pool_conditioning {
    uint64_t n_in;
    double h_in, h_out;
};

struct pool_secrets;

struct pool {
    struct source *sources[POOL_MAX_SOURCES];
    size_t nsources;
    struct pool_secrets *secret;     /* generator and accumulators, in locked memory */
    struct randd_crypto *crypto;     /* contexts for conditioning (no secrets kept) */
    enum pool_conditioning_function conditioning;   /* every hash the pool runs */
    double credit;                   /* bits credited into the seed accumulator */
    double noise_credit;             /* of those, credited by noise sources (cpu, hwrng,
                                      * jitter): what the seed holds beyond the kernel's word */
    bool require_noise_source;       /* require_noise_source: only noise_credit seeds, and
                                      * no output while no noise source is credited */
    bool seed_noise_credited;        /* the seed in use took POOL_SEED_BITS of noise_credit */
    bool instantiate_at_three_halves; /* a seed that instantiates the DRBG waits for
                                       * POOL_INSTANTIATE_BITS (mode = approved) */
    double kernel_credit;            /* bits credited into the kernel accumulator */
    double kernel_wanted;            /* bits the kernel feed asked for */
    bool seeded;
    bool must_reseed;                /* clock jump: no output until reseeded */
    bool fresh_reseed_due;           /* a possible VM fork: reseed from fresh input as soon
                                      * as it is credited, serving meanwhile */
    const char *reseed_why;          /* why must_reseed was set: not_ready_reason says it */
    char halted[192];                /* a self-test failed: why; "": not halted */
    int64_t boot_offset_ns;          /* CLOCK_BOOTTIME - CLOCK_MONOTONIC at the last check */
    unsigned reseed_interval;        /* seconds */
    uint64_t reseed_bytes;
    /* status */
    uint64_t reseeds;
    uint64_t conditioned_in_bits;    /* n_in of the seed being gathered */
    struct pool_conditioning last_seed;
    uint64_t last_reseed_ns;
    uint64_t bytes_since_reseed;
    uint64_t bytes_served;
    uint64_t vm_generations;         /* new VM generations (clones, restores) announced */
    uint64_t vm_rekeys;              /* of them, possible ones (kernel log records lost)
                                      * answered by rekeying from getrandom, with no stop */
    int lock_errno;                  /* 0 when the secrets are locked in memory */
    /* Moves whenever what the pool gives changes: a reseed, or readiness gained or lost (a
     * VM clone, a clock jump, no healthy source). Serving loops' generators reseed when it
     * moves (branch.c): read by them without a lock, written under their owner's. */
    _Atomic uint64_t epoch;
    uint64_t times_unready;          /* the epoch moved to not ready: requests may wait */
    bool published_ready;
    uint64_t published_reseeds;
    uint64_t published_rekeys;
    /* Noise sources' entropy for the prediction-resistant and full-entropy modes: their bytes
     * go here, and nowhere else, while it wants blocks (after the kernel feed and a due reseed
     * of the generator have theirs). */
    struct noise noise;
    uint64_t noise_failures_seen;    /* noise sources' source_distrusts, summed, last look */
    double noise_bits[POOL_MAX_SOURCES];   /* of sources[i]'s credited bits, those that went
                                            * to the noise reservoir */
};

/* require_noise_source (randd.conf): from now on, a seed counts only noise sources' credit,
 * and output stops while no noise source is credited. Turned on over a seed that did not
 * take that much, output waits for a reseed that does. */
void pool_require_noise_source(struct pool *p, bool require);

/* From now on a seed that instantiates the pool's DRBG (the first, and the first after the DRBG
 * was wiped: a VM clone, a halt) waits for POOL_INSTANTIATE_BITS credited bits, SP 800-90C's
 * 3s/2, rather than POOL_SEED_BITS; reseeds still take POOL_SEED_BITS. No effect with an
 * engine that is not a DRBG. */
void pool_instantiate_at_three_halves(struct pool *p, bool on);
/* Credited bits the next seed waits for: POOL_SEED_BITS, or POOL_INSTANTIATE_BITS (above). */
unsigned pool_seed_bits_needed(const struct pool *p);

/* Returns 0 or a negative errno. Sources are added afterwards with pool_add_source. */
int pool_init(struct pool *p, unsigned reseed_interval, uint64_t reseed_bytes);
/* 0 when the secrets are locked in memory, else mlock's errno: they may reach swap. */
int pool_lock_errno(const struct pool *p);
/* The reseed policy from now on (a reload): every reseed_interval seconds, or after
 * reseed_bytes of output, whichever comes first. */
void pool_set_reseed(struct pool *p, unsigned reseed_interval, uint64_t reseed_bytes);
void pool_add_source(struct pool *p, struct source *s);
/* Chooses the engine before the first seed. Returns 0, -EBUSY once seeded, -ENOTSUP for
 * Randen on a CPU without AES-NI, or -EIO when OpenSSL will not make the DRBG. */
int pool_use_engine(struct pool *p, enum randd_engine engine);
/* Cymric (BLAKE2b + ChaCha20, the default) until chosen, Randen, or an SP 800-90A DRBG. */
enum randd_engine pool_engine(const struct pool *p);
const char *pool_engine_name(const struct pool *p);
/* With a DRBG engine: its mechanism ("CTR_DRBG AES-256 (df)") and the generates since it was
 * last seeded; NULL and 0 with another engine. */
const char *pool_engine_mechanism(const struct pool *p);
uint64_t pool_engine_requests(const struct pool *p);
/* For tests: the pool's DRBG's reseed interval, lowered (drbg_engine_set_reseed_interval). */
int pool_drbg_set_reseed_interval(struct pool *p, uint64_t interval);
/* Chooses the function the pool conditions with (every hash it runs: pool.c) before the first
 * seed; credit gathered through the other one is forgotten. Returns 0, -EBUSY once seeded,
 * -EINVAL for no such function, or -EIO when OpenSSL will not hash with it. */
int pool_use_conditioning(struct pool *p, enum pool_conditioning_function f);
/* "BLAKE2b-512" (the default) or "SHA-512", for STATUS and the log. */
const char *pool_conditioning_name(const struct pool *p);
/* Whether SP 800-90B 3.1.5.1.1 lists it as vetted (SHA-512), so a seed's h_out is 3.1.5.1.2's
 * Output_Entropy without 3.1.5.2's caps. */
bool pool_conditioning_vetted(const struct pool *p);
/* Chooses the keystream of the pool's Cymric generator, and of every Cymric that
 * pool_cymric_init creates after it, before the first seed. Returns 0, -EBUSY once seeded,
 * or -ENOTSUP for AES-256-CTR on a CPU without hardware AES. */
int pool_use_cipher(struct pool *p, enum randd_stream_cipher which);
/* Every Cymric's keystream: ChaCha20 until chosen. */
enum randd_stream_cipher pool_cipher(const struct pool *p);
const char *pool_cipher_name(const struct pool *p);
/* Creates a Cymric generator (randd_cymric_init) running the pool's keystream: the loops'
 * generators, the prediction-resistant ones and the prime finder's all follow the config.
 * Returns 0, -ENOMEM or -EIO; on failure g needs no fini. */
int pool_cymric_init(const struct pool *p, struct randd_cymric *g);
/* Wipes every secret and closes the sources. */
void pool_fini(struct pool *p);

/* Reads a bounded batch from every source (start-up tests included), conditions what is
 * healthy, and seeds or reseeds the generator when enough is credited and a reseed is due. */
void pool_harvest(struct pool *p, uint64_t now_ns);

/* A self-test failed (daemon/selfcheck.c): no output of any kind, generator or kernel feed,
 * until pool_resume; why is the not-ready reason. What was credited before is forgotten, and
 * output resumes only after a reseed from material conditioned after the clean re-test. */
void pool_halt(struct pool *p, const char *why);
void pool_resume(struct pool *p);
bool pool_halted(const struct pool *p);

/* Seeded, not halted, not waiting for a forced reseed, and at least one source healthy. */
bool pool_ready(const struct pool *p);
/* Why not ready, for logs and status; NULL when ready. */
const char *pool_not_ready_reason(const struct pool *p);
/* Times the pool stopped being ready. It can stop and be ready again between two looks (a
 * clock jump seen while serving, reseeded at once): requests that waited meanwhile are
 * released when it moves. */
uint64_t pool_times_unready(const struct pool *p);
/* A mark that moves whenever the generator's continuity breaks: the pool stopped being ready
 * (a halt, a failed self-test, a VM clone, a clock jump, which it checks for first) or it
 * rekeyed for a possible clone. A prediction-resistant reply's own generator goes on only
 * while the mark stays as it was when the reply began. */
uint64_t pool_continuity(struct pool *p);
bool pool_any_healthy(const struct pool *p);
/* Only the kernel's word: a source that is not noise (getrandom) is credited now and no noise
 * source is (none configured, or each absent, quarantined, disabled, in its start-up test, or
 * crediting 0 bits a byte until assessed). Then the generator's seeds, and so all ordinary
 * output, are exactly as unpredictable as the kernel's generator. With why (whylen > 0), says
 * each noise source's state and reason, or that none is configured. */
bool pool_kernel_only(const struct pool *p, char *why, size_t whylen);
/* A noise source may soon be credited: in its start-up test, or healthy and waiting for its
 * first assessment to give it a credit (jitter). The start-up log waits for them. */
bool pool_noise_credit_pending(const struct pool *p);
/* When the soonest quarantined source's back-off ends (its retry is due at a harvest), in
 * loop_now_ns() time; UINT64_MAX: none is waiting for one. */
uint64_t pool_next_retry_ns(const struct pool *p);
/* Some source is still in its start-up test (a slow device gives a few bytes a read). */
bool pool_any_starting(const struct pool *p);

/* n bytes of output, or -EAGAIN when not ready. Reseeds first when due by volume, or after
 * a suspend or snapshot restore (CLOCK_BOOTTIME ran ahead of CLOCK_MONOTONIC). */
int pool_generate(struct pool *p, void *out, size_t n, uint64_t now_ns);
/* Copies the seed accumulator as it is now, as one who reads the process's memory would find
 * it: for the test that it cannot give back a seed already used (backtracking). */
void pool_copy_accumulator(const struct pool *p, uint8_t out[POOL_ACCUMULATOR_BYTES]);

/* The kernel announced a new VM generation (vmgenid): this state may now run in several
 * clones. Credit gathered before is forgotten (every clone has the same), sources drop what
 * they produced before, and no output is given until a reseed from fresh input, which a
 * harvest attempts at once. */
void pool_vm_cloned(struct pool *p, uint64_t now_ns);
/* A VM generation that may have changed and may not (kernel log records lost unread: the
 * fork line may have been one of them). A ready pool rekeys its generator at once from its
 * own output and getrandom (each clone's own by then) and goes on serving: no byte comes from
 * the state before. The noise reservoir, the credit and the kernel feed's material are
 * dropped as on a clone, and a reseed from fresh input is due. A pool that is not ready, that
 * cannot rekey, or that requires noise sources (require_noise_source, mode = approved: the
 * kernel's word may not key it) takes the strict path, pool_vm_cloned. */
void pool_vm_maybe_cloned(struct pool *p, uint64_t now_ns);

/* Output a serving loop's own generator gave (branch.c) since it last said: counts toward
 * reseed_bytes and the bytes served, as if the pool's generator had given it. */
void pool_note_output(struct pool *p, uint64_t n);

/* A byte source (internal/rngbc.h) over the generator, for a reply already cleared by
 * pool_ready(): per-call checks would cost more than RNG-BC-8's one-byte redraws. */
int pool_fill(void *pool, void *buf, size_t n);

/* Mixes caller-supplied data (ADD_ENTROPY) into the seed accumulator, crediting at most
 * bits (the caller checked bits <= 8 * len). */
int pool_add_entropy(struct pool *p, const void *data, size_t len, unsigned bits,
                     uint64_t now_ns);

/* Conditioned material from kernel-creditable sources only. Harvests if needed; returns the
 * bits that may be credited (0: none available) and fills out[POOL_KERNEL_BYTES]. When an
 * on-demand source (jitter) is producing what is missing, returns 0 and the request stands:
 * pool_kernel_pending() is then true until pool_kernel_material_ready() says to come back. */
unsigned pool_take_kernel_material(struct pool *p, uint8_t out[POOL_KERNEL_BYTES],
                                   uint64_t now_ns);
bool pool_kernel_pending(const struct pool *p);
bool pool_kernel_material_ready(const struct pool *p);

/* --- the noise reservoir (noise.h), under the pool's lock like the rest ------------------- */

/* Room for why below to name every noise source (the CPU's, hwrng, jitter), its state and
 * its whole reason (struct health's, 160 bytes at most): they fit, with room to spare, and
 * the NO_NOISE_SOURCE reply built of it fits the 1023 bytes librandd keeps of a message. */
#define POOL_NOISE_WHY_BYTES 960

/* Wipes the reservoir if a noise source failed a health test since the last look (one
 * induced since the last harvest too). Before pool_noise_able, wherever noise is served. */
void pool_noise_recheck(struct pool *p);
/* Whether a noise source is healthy, or in its start-up test and about to be. */
bool pool_noise_able(const struct pool *p);
/* Requests waiting for noise blocks now, and how many requests have had all their blocks
 * granted so far: when it moves, waiting ones can be answered. */
unsigned pool_noise_waiting(const struct pool *p);
uint64_t pool_noise_completed(const struct pool *p);
/* Why not: each noise source's state and reason (or that none is configured). A why too
 * small for them all ends in "…" where it was cut. */
void pool_noise_unable_reason(const struct pool *p, char *why, size_t whylen);
/* Blocks for requests are wanted, or the reserve is short: harvest soon. */
bool pool_noise_wanted(const struct pool *p);

/* --- the noise modes' requests (pool_noise.c), under the pool's lock too ------------------ */

/* A full-entropy or prediction-resistant request, as the reservoir sees it. */
struct pool_noise_request {
    uid_t uid;
    enum noise_mode mode;
    size_t bytes;                    /* asked for: full entropy takes a block per 32 */
    bool nonblock;                   /* NOT_READY now rather than a wait */
};

/* Admits a request to the reservoir's fair queue, after the failures since the last look
 * (pool_noise_recheck). RANDD_OK with *ticket, its blocks granted at once or to come in turn
 * (noise_ticket_ready); or a refusal with why and *ticket NULL: NO_NOISE_SOURCE, NOT_READY
 * (nonblock, and not ready now), BUSY (its uid's share of the queue, or the whole queue, is
 * taken) or INTERNAL (out of memory); why may be NULL with whylen 0. A refusal is not counted
 * here: a caller that answers with it says so with pool_noise_refuse; EGD, which has no error
 * to send, waits instead. */
int pool_noise_submit(struct pool *p, const struct pool_noise_request *rq,
                      struct noise_ticket **ticket, char *why, size_t whylen);
/* A request waiting in the queue, looked at again: RANDD_OK while its blocks may still come
 * (granted all, or some to come); NO_NOISE_SOURCE with why once no noise source can give
 * them. The ticket stays: refused, it is given up with pool_noise_refuse. */
int pool_noise_wait_status(struct pool *p, const struct noise_ticket *ticket, char *why,
                           size_t whylen);
/* A request answered with status rather than served: counted by it (NOT_READY, BUSY,
 * NO_NOISE_SOURCE), and its ticket, if any, given up (its blocks go to the others waiting,
 * never spent). *ticket is NULL after. */
void pool_noise_refuse(struct pool *p, struct noise_ticket **ticket, int status);
/* The client went away while it had a ticket: given up as above, counted cancelled. */
void pool_noise_cancel(struct pool *p, struct noise_ticket **ticket);

/* The answers take the blocks under the lock they are checked under: a serving loop that saw
 * them all granted, then let go of the pool's lock to generate, may find them dropped since
 * (noise_drop: a noise source failed). Then -EAGAIN, nothing taken: the request waits on. */

/* A prediction-resistant ticket's one block into out, counted spent, with served bytes of
 * output; *ticket is NULL after. The caller wipes out. 0 or -EAGAIN. */
int pool_noise_take_block(struct pool *p, struct noise_ticket **ticket,
                          uint8_t out[NOISE_BLOCK_BYTES], uint64_t served);
/* SP 800-90C RBG3(XOR): out holds n bytes of generator output; each is XORed with a byte of
 * the full-entropy ticket's blocks, so the n bytes are full entropy if the noise is, and no
 * worse than the generator if not. The blocks are counted spent and wiped; no copy of them
 * is left anywhere. *ticket is NULL after. 0, or -EAGAIN with out untouched, or -EINVAL
 * (nothing taken) for more bytes than the ticket was for. */
int pool_full_entropy_xor(struct pool *p, struct noise_ticket **ticket, uint8_t *out,
                          size_t n);

#endif
