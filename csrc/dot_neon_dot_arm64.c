/*
 * dot_neon_dot_arm64.c — the quantized dot products with the dotprod
 * extension (SDOT through k_sdot, sdot_arm64.h); dispatch_arm64.c hands
 * these kernels out only when the CPU reports dotprod (impl "neon-dotprod").
 * The bodies are dot_body_arm64.h's, shared with dot_neon_arm64.c.
 */
#include "sdot_arm64.h"

K_DOTPROD_BEGIN
#define K_DOT16(acc, a, b) k_sdot((acc), (a), (b))
#define K_NAME(f) f##_neon_dot
#include "dot_body_arm64.h"
K_DOTPROD_END
