/*
 * dot_neon_dot_arm64.c — the quantized dot products with the dotprod
 * extension (SDOT through k_sdot, sdot_arm64.h); dispatch_arm64.c hands
 * these kernels out only when the CPU reports dotprod (impl "neon-dotprod").
 * The bodies are dot_body_arm64.h's static inline helpers, shared with
 * dot_neon_arm64.c.
 */
#include "sdot_arm64.h"

K_DOTPROD_BEGIN
#define K_DOT16(acc, a, b) k_sdot((acc), (a), (b))
#include "dot_body_arm64.h"

float k_dot_q4_k_q8_k_neon_dot(int64_t n, const void *w, const void *a) { return dot_q4_k_q8_k(n, w, a); }
float k_dot_q5_k_q8_k_neon_dot(int64_t n, const void *w, const void *a) { return dot_q5_k_q8_k(n, w, a); }
float k_dot_q6_k_q8_k_neon_dot(int64_t n, const void *w, const void *a) { return dot_q6_k_q8_k(n, w, a); }
float k_dot_q4_0_q8_0_neon_dot(int64_t n, const void *w, const void *a) { return dot_q32(K_Q4_0, n, w, a); }
float k_dot_q5_0_q8_0_neon_dot(int64_t n, const void *w, const void *a) { return dot_q32(K_Q5_0, n, w, a); }
float k_dot_q8_0_q8_0_neon_dot(int64_t n, const void *w, const void *a) { return dot_q32(K_Q8_0, n, w, a); }

void k_mm_q4_k_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_k, K_MM_TILE_ARGS); }
void k_mm_q5_k_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_k, K_MM_TILE_ARGS); }
void k_mm_q6_k_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q6_k, K_MM_TILE_ARGS); }
void k_mm_q4_0_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_0, K_MM_TILE_ARGS); }
void k_mm_q5_0_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_0, K_MM_TILE_ARGS); }
void k_mm_q8_0_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q8_0, K_MM_TILE_ARGS); }
K_DOTPROD_END
