/* mxfp4_neon_arm64.c — MXFP4 dequantization, dot and tile for every arm64
 * CPU (plain Advanced SIMD; the dotprod twin is mxfp4_neon_dot_arm64.c).
 * The int8 dot of 16 values with 16 activations is built from widening
 * multiplies (vmull_s8) and pairwise adds, lane l = elements 4l..4l+3, the
 * lanes SDOT would give; the tile itself is mxfp4_neon_tile.h. */
#include <arm_neon.h>
#include <math.h>
#include "kernels_neon_arm64.h"

/* |q| <= 12 and |a| <= 127: the int16 products are exact */
static inline __attribute__((always_inline)) int32x4_t mx_dot16_neon(int8x16_t q, int8x16_t a) {
    const int32x4_t p0 = vpaddlq_s16(vmull_s8(vget_low_s8(q), vget_low_s8(a)));
    const int32x4_t p1 = vpaddlq_s16(vmull_high_s8(q, a));
    return vpaddq_s32(p0, p1);
}

#define MX_DOT16(q, a) mx_dot16_neon(q, a)
#define MX_TARGET
#include "mxfp4_neon_tile.h"
#include "mm_driver.h"

/* dst = e8m0_half(e) * value, one f32 multiply per element (ref's bits) */
void k_dequant_mxfp4_neon(const void *src, float *dst, int64_t n) {
    const k_block_mxfp4 *x = (const k_block_mxfp4 *)src;
    const int8x16_t table = vld1q_s8(k_mxfp4_values);
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const struct mx_lv q = mx_levels(table, &x[i]);
        const float32x4_t d = vdupq_n_f32(k_e8m0_half(x[i].e));
        const int8x16_t half[2] = {q.lo, q.hi};
        for (int h = 0; h < 2; h++) {
            const int16x8_t w0 = vmovl_s8(vget_low_s8(half[h])), w1 = vmovl_s8(vget_high_s8(half[h]));
            vst1q_f32(dst + 16 * h, vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_low_s16(w0)))));
            vst1q_f32(dst + 16 * h + 4, vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_high_s16(w0)))));
            vst1q_f32(dst + 16 * h + 8, vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_low_s16(w1)))));
            vst1q_f32(dst + 16 * h + 12, vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_high_s16(w1)))));
        }
    }
}

MX_SET(k_dot_mxfp4_q8_0_neon, k_mm_mxfp4_neon)
