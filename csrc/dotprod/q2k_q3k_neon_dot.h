/*
 * q2k_q3k_neon_dot.h — what q2k_q3k_neon_dot_arm64.c needs to know, kept in
 * this package (it may not include csrc's headers): the block layouts of
 * Q2_K, Q3_K and Q8_K (facts of the GGUF format, the same as csrc/kernels.h's
 * k_block_*; the sizes are checked here) and the prototypes of the kernels it
 * exports to csrc/dispatch_arm64.c and csrc/q2k_q3k_neon_arm64.c (which
 * declares them again in kernels_neon_arm64.h).
 */
#ifndef WOOLLY_DOTPROD_Q2K_Q3K_H
#define WOOLLY_DOTPROD_Q2K_Q3K_H

#include <stddef.h>
#include <stdint.h>

typedef uint16_t dp_half; /* IEEE binary16 bits */

/* 256 elements in 16 groups of 16; scales[g]: low nibble scale, high nibble min */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; dp_half d; dp_half dmin; } dp_block_q2_k;
/* two low bits in qs, the third in hmask, 16 6-bit scales (minus 32) packed in scales[12] */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; dp_half d; } dp_block_q3_k;
/* activations: d, 256 int8 quants, the sums of each 16 of them */
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } dp_block_q8_k;

_Static_assert(sizeof(dp_block_q2_k) == 84, "q2_K block is 84 bytes");
_Static_assert(sizeof(dp_block_q3_k) == 110, "q3_K block is 110 bytes");
_Static_assert(sizeof(dp_block_q8_k) == 292, "q8_K block is 292 bytes");

/* one weight row x one token (k_dot_fn) */
float k_dot_q2_k_q8_k_neon_dot(int64_t n, const void *w, const void *a);
float k_dot_q3_k_q8_k_neon_dot(int64_t n, const void *w, const void *a);
/* one weight row x 4 tokens a_row_bytes apart: out[t] = dot(w, token t), the same bits */
void k_dot4_q2_k_q8_k_neon_dot(int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[4]);
void k_dot4_q3_k_q8_k_neon_dot(int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[4]);

#endif
