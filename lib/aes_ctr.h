/* AES-256-CTR keystream on the CPU's own AES instructions (x86-64 AES-NI or VAES), with no cipher
 * context: the key schedule is made in the call and wiped before it returns. For crypto.c's
 * hot path; it chooses when (hardware AES only, as OpenSSL's own AES would need). */
#ifndef RANDD_AES_CTR_H
#define RANDD_AES_CTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Whether this build has the direct path (x86-64) and the CPU the SSE4.1 it takes beside
 * AES-NI. The CPU's AES is the caller's check. */
bool randd_aes256ctr_available(void);

/* The AES-256-CTR keystream under key from the 128-bit big-endian counter block iv
 * (incremented over all 128 bits, as OpenSSL's AES-256-CTR does), laid end to end across
 * outs. key and iv may lie in outs[0]: both are read before any byte is written. Leaves no
 * round key, counter or unread keystream in its frame or in the vector registers. */
void randd_aes256ctr_stream(const uint8_t key[32], const uint8_t iv[16],
                            const struct iovec *outs, size_t nouts);

/* Whether the CPU has VAES and AVX2, which randd_aes256ctr_stream then uses: sixteen blocks
 * at a time, about twice the keystream of AES-NI's one block an instruction. */
bool randd_aes256ctr_wide_available(void);

/* randd_aes256ctr_stream on the path named: wide (VAES; only where available) or AES-NI's,
 * so that tests hold each to OpenSSL's answer on a CPU that would take the other. */
void randd_aes256ctr_stream_on(bool wide, const uint8_t key[32], const uint8_t iv[16],
                               const struct iovec *outs, size_t nouts);

#endif
