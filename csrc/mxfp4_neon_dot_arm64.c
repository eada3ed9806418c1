/* mxfp4_neon_dot_arm64.c — MXFP4 dot and tile with the dotprod extension:
 * SDOT (k_sdot, sdot_arm64.h) gives lane l = the products of elements
 * 4l..4l+3 directly, the int32 lanes of every other MXFP4 kernel, so the
 * tile of mxfp4_neon_tile.h gives their bits. Handed out only when the CPU
 * has dotprod (csrc/dispatch_arm64.c). */
#include "sdot_arm64.h"
#include "kernels_neon_arm64.h"
#include <math.h>
#include <stddef.h>
#include <stdint.h>

K_DOTPROD_BEGIN

#define MX_DOT16(q, a) k_sdot(vdupq_n_s32(0), q, a)
#define MX_TARGET
#include "mxfp4_neon_tile.h"
#include "mm_driver.h"

MX_SET(k_dot_mxfp4_q8_0_neon_dot, k_mm_mxfp4_neon_dot)
K_DOTPROD_END
