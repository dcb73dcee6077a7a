/* The OpenSSL primitives randd builds on: keyed and unkeyed BLAKE2b-512, SHA-512 and a
 * keystream (ChaCha20, or AES-256-CTR where the CPU does AES in hardware), through EVP with
 * algorithms fetched and contexts created once per owner.
 * Owns no secrets of its own: callers pass keys in and wipe their own buffers. */
#ifndef RANDD_CRYPTO_H
#define RANDD_CRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define RANDD_BLAKE2B_BYTES 64   /* BLAKE2b-512 digest, also the largest key (RFC 7693) */
#define RANDD_SHA512_BYTES  64   /* SHA-512 digest (FIPS 180-4) */
#define RANDD_CHACHA20_KEY  32
#define RANDD_CHACHA20_IV   16   /* OpenSSL layout: 32-bit LE counter || 96-bit nonce */
#define RANDD_STREAM_KEY    32   /* either keystream's key: ChaCha20's, AES-256's */
#define RANDD_STREAM_IV     16   /* either's IV: RANDD_CHACHA20_IV, AES-CTR's counter block */

/* The keystream a context runs: ChaCha20 unless randd_crypto_use_stream says otherwise. */
enum randd_stream_cipher {
    RANDD_STREAM_CHACHA20 = 1,
    RANDD_STREAM_AES256CTR = 2,     /* only where the CPU does AES itself: never table AES */
};

/* "chacha20", "aes256ctr" (as RANDD_RNG_CIPHER, randd.conf's cipher key and STATUS spell
 * them), or "unknown"; and back: the cipher called name, or -1. */
const char *randd_stream_cipher_name(int which);
int randd_stream_cipher_from_name(const char *name);

struct randd_crypto;

/* Fetches BLAKE2b, BLAKE2BMAC and ChaCha20 and creates one context for each.
 * Returns NULL when OpenSSL cannot provide them (out of memory, provider missing). */
struct randd_crypto *randd_crypto_new(void);
void randd_crypto_free(struct randd_crypto *c);

/* out = BLAKE2b-512 over the concatenated parts (empty parts allowed). out may overlap
 * the parts: they are absorbed before the digest is written. Returns 0 or -EIO. */
int randd_blake2b512(struct randd_crypto *c, uint8_t out[RANDD_BLAKE2B_BYTES],
                     const struct iovec *parts, size_t nparts);

/* out = SHA-512 over the concatenated parts (empty parts allowed), the same contract as
 * randd_blake2b512: out may overlap the parts. SHA-512 is fetched at the first call (most
 * owners never hash with it). OpenSSL's SHA-512 final leaves its last chaining value (the
 * digest) and the message's last block in its context, so the context is freed, wiped, after
 * every call. Returns 0 or -EIO. */
int randd_sha512(struct randd_crypto *c, uint8_t out[RANDD_SHA512_BYTES],
                 const struct iovec *parts, size_t nparts);

/* out = BLAKE2b-512 keyed with key (1..64 bytes), over data. Returns 0, -EINVAL or -EIO.
 * The MAC context is rekeyed with zeros afterwards, so it keeps no copy of the key. */
int randd_blake2b512_keyed(struct randd_crypto *c, uint8_t out[RANDD_BLAKE2B_BYTES],
                           const void *key, size_t keylen, const void *data, size_t len);

/* out = in XOR ChaCha20 keystream (in == NULL: the keystream itself); in may equal out.
 * Afterwards the cipher context holds a zero key, not this one. Returns 0 or -EIO. */
int randd_chacha20(struct randd_crypto *c, const uint8_t key[RANDD_CHACHA20_KEY],
                   const uint8_t iv[RANDD_CHACHA20_IV], const void *in, void *out, size_t n);

/* OpenSSL's BLAKE2b, SHA-512 and keystream code leave key-dependent words in their own stack
 * frames (BLAKE2b copies each message block, here a generator's old state, into a local
 * array; SHA-512 keeps its message schedule there; the vector ChaCha20 code spills its
 * state), and nothing wipes them. Called right after them,
 * this wipes the stack region they used (as libsodium's sodium_stackzero does). */
void randd_crypto_wipe_stack(void);

/* Whether this CPU has AES instructions a process may use (x86 AES-NI by CPUID, ARMv8 AES
 * by HWCAP_AES, POWER8 vcipher by HWCAP2): the one probe, asked once (CPUID can trap to the
 * hypervisor). For code that runs the instructions itself (Randen). */
int randd_crypto_cpu_has_aes(void);

/* Whether OpenSSL's AES runs on those instructions, so it is constant-time: the CPU has
 * them, and randd_crypto_aes_mask_variable() is not set in the environment (it may have
 * masked them from OpenSSL). */
int randd_crypto_has_hardware_aes(void);

/* The variable with which this architecture's OpenSSL can be told to ignore CPU features
 * ("OPENSSL_ia32cap", "OPENSSL_armcap", "OPENSSL_ppccap"), or NULL where randd uses no AES. */
const char *randd_crypto_aes_mask_variable(void);

/* Binds the context's cipher to which (fetched here once). Afterwards randd_chacha20 and
 * randd_chacha20_stream work only while it is ChaCha20; randd_stream follows it.
 * Returns 0, -ENOTSUP (AES-256-CTR without hardware AES) or -EIO. */
int randd_crypto_use_stream(struct randd_crypto *c, enum randd_stream_cipher which);
enum randd_stream_cipher randd_crypto_stream(const struct randd_crypto *c);

/* One ChaCha20 keystream under key and iv, laid end to end across outs: outs[0] gets its
 * first bytes, outs[1] the next, and so on. key may lie in outs[0]: it is absorbed before any
 * byte is written, which is how a generator replaces its key with its own keystream.
 * Afterwards the cipher context holds a zero key, not this one. Returns 0 or -EIO. */
int randd_chacha20_stream(struct randd_crypto *c, const uint8_t key[RANDD_CHACHA20_KEY],
                          const uint8_t iv[RANDD_CHACHA20_IV], const struct iovec *outs,
                          size_t nouts);

/* As randd_chacha20_stream, with the bound keystream (ChaCha20 or AES-256-CTR), IV zero:
 * ChaCha20 counter 0 and nonce 0, or AES-CTR's 128-bit counter block from 0. A key is never
 * used twice, so one stream of it is safe. Returns 0 or -EIO. */
int randd_stream(struct randd_crypto *c, const uint8_t key[RANDD_STREAM_KEY],
                 const struct iovec *outs, size_t nouts);

/* As randd_stream, from the caller's IV: ChaCha20's in OpenSSL's layout (RANDD_CHACHA20_IV),
 * or AES-CTR's 128-bit big-endian counter block. The IV may be secret (a generator's nonce):
 * the context forgets it with the key. Returns 0 or -EIO. */
int randd_stream_iv(struct randd_crypto *c, const uint8_t key[RANDD_STREAM_KEY],
                    const uint8_t iv[RANDD_STREAM_IV], const struct iovec *outs, size_t nouts);

#endif
