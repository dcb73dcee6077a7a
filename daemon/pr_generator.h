/* A prediction-resistant reply's own generator (SP 800-90C RBG2(P)): seeded from the serving
 * loop's generator, then reseeded with one block of fresh noise (noise.h: 256 bits of full
 * entropy) before its first byte, and used for that reply alone. Owns which generator that
 * is: Cymric with the default engines, or with a DRBG engine (engine = ctr_drbg | hash_drbg,
 * and so mode = approved) an SP 800-90A DRBG of the same mechanism, instantiated from the
 * loop's DRBG and reseeded (90A 9.2) with the block, as 90A's prediction-resistance request
 * reseeds before it generates (9.3.1 step 7). Where the block comes from, and when a reply
 * must stop, are the server's. The loop's thread only. */
#ifndef RANDD_PR_GENERATOR_H
#define RANDD_PR_GENERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "branch.h"
#include "noise.h"                  /* NOISE_BLOCK_BYTES */

struct pr_generator;

/* A generator for one reply, from the loop's output and block (which the caller wipes): in
 * locked memory, except a DRBG's working state, which OpenSSL keeps in its own heap and
 * wipes when the generator is freed. Returns 0 with *out, -EAGAIN (the loop's generator is not ready), -ENOMEM
 * or -EIO; *out is NULL on failure. */
int pr_generator_new(struct branch *b, const uint8_t block[NOISE_BLOCK_BYTES],
                     struct pr_generator **out);
/* n bytes of the reply. 0, or a negative errno (the generator refused: stop the reply). */
int pr_generator_read(struct pr_generator *g, void *out, size_t n);
/* Its mechanism, for tests and logs: "Cymric", "CTR_DRBG AES-256 (df)", "Hash_DRBG SHA-512". */
const char *pr_generator_mechanism(const struct pr_generator *g);
/* Wipes and frees; NULL is ignored. */
void pr_generator_free(struct pr_generator *g);

#endif
