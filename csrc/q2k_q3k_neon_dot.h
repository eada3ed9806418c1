/*
 * q2k_q3k_neon_dot.h — the names q2k_q3k_neon_dot_arm64.c uses for the
 * Q2_K, Q3_K and Q8_K blocks (kernels.h's) and the prototypes of the
 * kernels it exports to dispatch_arm64.c and q2k_q3k_neon_arm64.c.
 */
#ifndef WOOLLY_DOTPROD_Q2K_Q3K_H
#define WOOLLY_DOTPROD_Q2K_Q3K_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* the block layouts are kernels.h's (k_block_*: sizes pinned there) */
typedef k_block_q2_k dp_block_q2_k;
typedef k_block_q3_k dp_block_q3_k;
typedef k_block_q8_k dp_block_q8_k;

/* one weight row x one token (k_dot_fn) */
k_dot_kernel k_dot_q2_k_q8_k_neon_dot, k_dot_q3_k_q8_k_neon_dot;
/* one weight row x 4 tokens a_row_bytes apart: out[t] = dot(w, token t), the same bits */
void k_dot4_q2_k_q8_k_neon_dot(int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[4]);
void k_dot4_q3_k_q8_k_neon_dot(int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[4]);

#endif
