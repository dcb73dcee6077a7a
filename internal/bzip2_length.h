/* The length in bytes of what libbz2's BZ2_bzBuffToBuffCompress(dest, &len, in, n, level, 0,
 * 0) would write, counted without writing it: the compression statistic of SP 800-90B 5.1.19
 * as ea_iid computes it, for every shuffle of the permutation tests. Owns the count only;
 * entropy_iid.c owns the text it is asked about and checks this count against libbz2's on
 * the data before trusting it with the shuffles.
 *
 * How (bzip2 1.0.8's format and choices, reproduced; its source is not copied): the run-length
 * step and the blocks as bzip2 fills them; the Burrows-Wheeler last column from any correct
 * sort of the block's cyclic rotations (equal rotations end in equal bytes, so their order
 * cannot change it); bzip2's move-to-front and zero-run coding; its choice of coding tables
 * (group count, initial partition, four refinement passes with BZ2_hbMakeCodeLengths, libbz2's
 * own code-length function, called); and the bits of every field summed rather than written.
 * The block CRC and origPtr are fixed-width fields whose values cannot change a length.
 *
 * The rotation sort is where the time goes. Text made of words that end in one delimiter
 * byte (the statistic's decimal values, each followed by a space) is sorted word by word:
 * words are prefix-free, so the rotations at word starts sort as sequences of words, and a
 * rotation starting inside a word sorts by the rest of that word, then by the rotation at the
 * next word. Any other block is sorted byte by byte, by the same code. */
#ifndef RANDD_BZIP2_LENGTH_H
#define RANDD_BZIP2_LENGTH_H

#include <stddef.h>
#include <stdint.h>

struct randd_bzlen;

/* Work arrays for blocks of bzip2 level `level` (1..9): about 45 bytes per block byte, kept
 * between counts. NULL on a bad level or no memory. */
struct randd_bzlen *randd_bzlen_new(int level);
/* Wipes the work arrays (they held the text) and frees them. NULL is accepted. */
void randd_bzlen_free(struct randd_bzlen *z);

/* The bytes BZ2_bzBuffToBuffCompress gives for in[0..n) at the level given to
 * randd_bzlen_new, work factor 0 (its default); 0 only when n exceeds 2^32 - 1, which libbz2
 * cannot take in one call either. */
uint64_t randd_bzlen_count(struct randd_bzlen *z, const uint8_t *in, size_t n);

#endif
