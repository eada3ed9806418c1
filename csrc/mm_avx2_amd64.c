/* mm_avx2_amd64.c — k_matmul_q tile kernels, AVX2 (instruction choices:
 * simd_avx2_amd64.h). Each kernel is mm_tile over the pieces of mm_simd.h
 * and the single-token dot. */
#include "simd_avx2_amd64.h"
#include "mm_simd.h"

void k_mm_q4_k_avx2(K_MM_TILE_PARAMS) { mm_tile(&q4k_group4, dot4_q4_k, rows4_q4_k, k_dot_q4_k_q8_k_avx2, K_MM_TILE_ARGS); }
void k_mm_q5_k_avx2(K_MM_TILE_PARAMS) { mm_tile(NULL, dot4_q5_k, NULL, k_dot_q5_k_q8_k_avx2, K_MM_TILE_ARGS); }
void k_mm_q6_k_avx2(K_MM_TILE_PARAMS) { mm_tile(&q6k_group4, dot4_q6_k, rows4_q6_k, k_dot_q6_k_q8_k_avx2, K_MM_TILE_ARGS); }
void k_mm_q8_0_avx2(K_MM_TILE_PARAMS) { mm_tile(NULL, dot4_q8_0, rows4_q8_0, k_dot_q8_0_q8_0_avx2, K_MM_TILE_ARGS); }
void k_mm_q4_0_avx2(K_MM_TILE_PARAMS) { mm_tile(NULL, dot4_q4_0, rows4_q4_0, k_dot_q4_0_q8_0_avx2, K_MM_TILE_ARGS); }
void k_mm_q5_0_avx2(K_MM_TILE_PARAMS) { mm_tile(NULL, dot4_q5_0, rows4_q5_0, k_dot_q5_0_q8_0_avx2, K_MM_TILE_ARGS); }
