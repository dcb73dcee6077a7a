/* The OpenSSL primitives randd builds on: keyed and unkeyed BLAKE2b-512 and the ChaCha20
 * keystream, through EVP with algorithms fetched and contexts created once per owner.
 * Owns no secrets of its own: callers pass keys in and wipe their own buffers. */
#ifndef RANDD_CRYPTO_H
#define RANDD_CRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define RANDD_BLAKE2B_BYTES 64   /* BLAKE2b-512 digest, also the largest key (RFC 7693) */
#define RANDD_CHACHA20_KEY  32
#define RANDD_CHACHA20_IV   16   /* OpenSSL layout: 32-bit LE counter || 96-bit nonce */

struct randd_crypto;

/* Fetches BLAKE2b, BLAKE2BMAC and ChaCha20 and creates one context for each.
 * Returns NULL when OpenSSL cannot provide them (out of memory, provider missing). */
struct randd_crypto *randd_crypto_new(void);
void randd_crypto_free(struct randd_crypto *c);

/* out = BLAKE2b-512 over the concatenated parts (empty parts allowed). out may overlap
 * the parts: they are absorbed before the digest is written. Returns 0 or -EIO. */
int randd_blake2b512(struct randd_crypto *c, uint8_t out[RANDD_BLAKE2B_BYTES],
                     const struct iovec *parts, size_t nparts);

/* out = BLAKE2b-512 keyed with key (1..64 bytes), over data. Returns 0, -EINVAL or -EIO.
 * The MAC context is rekeyed with zeros afterwards, so it keeps no copy of the key. */
int randd_blake2b512_keyed(struct randd_crypto *c, uint8_t out[RANDD_BLAKE2B_BYTES],
                           const void *key, size_t keylen, const void *data, size_t len);

/* out = in XOR ChaCha20 keystream (in == NULL: the keystream itself); in may equal out.
 * Afterwards the cipher context holds a zero key, not this one. Returns 0 or -EIO. */
int randd_chacha20(struct randd_crypto *c, const uint8_t key[RANDD_CHACHA20_KEY],
                   const uint8_t iv[RANDD_CHACHA20_IV], const void *in, void *out, size_t n);

/* One ChaCha20 keystream under key and iv, laid end to end across outs: outs[0] gets its
 * first bytes, outs[1] the next, and so on. key may lie in outs[0]: it is absorbed before any
 * byte is written, which is how a generator replaces its key with its own keystream.
 * Afterwards the cipher context holds a zero key, not this one. Returns 0 or -EIO. */
int randd_chacha20_stream(struct randd_crypto *c, const uint8_t key[RANDD_CHACHA20_KEY],
                          const uint8_t iv[RANDD_CHACHA20_IV], const struct iovec *outs,
                          size_t nouts);

#endif
