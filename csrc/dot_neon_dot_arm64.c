/*
 * dot_neon_dot_arm64.c — the quantized dot products with the dotprod
 * extension (SDOT through k_sdot, sdot_arm64.h); dispatch_arm64.c hands
 * these kernels out only when the CPU reports dotprod (impl "neon-dotprod").
 * The bodies are dot_body_arm64.h's static inline helpers, shared with
 * dot_neon_arm64.c; ARM_DOT_SET writes out the kernels named here.
 */
#include "sdot_arm64.h"

K_DOTPROD_BEGIN
#define K_DOT16(acc, a, b) k_sdot((acc), (a), (b))
#include "dot_body_arm64.h"

ARM_DOT_SET(k_dot_q4_k_q8_k_neon_dot, k_dot_q5_k_q8_k_neon_dot, k_dot_q6_k_q8_k_neon_dot,
            k_dot_q4_0_q8_0_neon_dot, k_dot_q5_0_q8_0_neon_dot, k_dot_q8_0_q8_0_neon_dot, k_mm_q4_k_neon_dot,
            k_mm_q5_k_neon_dot, k_mm_q6_k_neon_dot, k_mm_q4_0_neon_dot, k_mm_q5_0_neon_dot, k_mm_q8_0_neon_dot)
K_DOTPROD_END
