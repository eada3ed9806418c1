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

float k_dot_mxfp4_q8_0_neon_dot(int64_t n, const void *w, const void *a) { return mxfp4_dot(n, w, a); }

static const mm_kernel mm_mxfp4_piece = {.piece = mxfp4_piece,
                                         .shapes = MM_R4 | MM_T4 | MM_BATCH_1X1,
                                         .tprep = mxfp4_tprep,
                                         .tprep_bytes = mxfp4_tprep_bytes};
void k_mm_mxfp4_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_mxfp4_piece, K_MM_TILE_ARGS); }

K_DOTPROD_END
