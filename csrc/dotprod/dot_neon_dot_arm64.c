/*
 * dot_neon_dot_arm64.c — the quantized dot products with the dotprod
 * extension (SDOT, vdotq_s32). This package is compiled with
 * -march=armv8.2-a+dotprod; dispatch_arm64.c hands these kernels out only
 * when the CPU reports dotprod (impl "neon-dotprod").
 */
#include <arm_neon.h>

#define K_DOT16(acc, a, b) vdotq_s32((acc), (a), (b))
#define K_NAME(f) f##_neon_dot
#include "dot_body_arm64.h"
