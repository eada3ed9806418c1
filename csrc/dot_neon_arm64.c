/*
 * dot_neon_arm64.c — dot products for every arm64 CPU (plain Advanced SIMD).
 *
 * The quantized kernels are the shared bodies of dotprod/dot_body_arm64.h with
 * the int8 dot built from widening multiplies (vmull_s8) and pairwise
 * accumulates (vpadalq_s16); the dotprod package instantiates the same bodies
 * with vdotq_s32. The float kernels (f16 x f16, f32 x f32) live here only.
 */
#include <arm_neon.h>

static inline int32x4_t k_dot16_mull(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

#define K_DOT16(acc, a, b) k_dot16_mull((acc), (a), (b))
#define K_NAME(f) f##_neon
#include "dotprod/dot_body_arm64.h"

/* f16 weights x f16 activations, products accumulated in f32. */
float k_dot_f16_f16_neon(int64_t n, const void *w, const void *a) {
    const uint16_t *x = (const uint16_t *)w, *y = (const uint16_t *)a;
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        float16x8_t x0 = vreinterpretq_f16_u16(vld1q_u16(x + i));
        float16x8_t x1 = vreinterpretq_f16_u16(vld1q_u16(x + i + 8));
        float16x8_t y0 = vreinterpretq_f16_u16(vld1q_u16(y + i));
        float16x8_t y1 = vreinterpretq_f16_u16(vld1q_u16(y + i + 8));
        s0 = vfmaq_f32(s0, vcvt_f32_f16(vget_low_f16(x0)), vcvt_f32_f16(vget_low_f16(y0)));
        s1 = vfmaq_f32(s1, vcvt_high_f32_f16(x0), vcvt_high_f32_f16(y0));
        s2 = vfmaq_f32(s2, vcvt_f32_f16(vget_low_f16(x1)), vcvt_f32_f16(vget_low_f16(y1)));
        s3 = vfmaq_f32(s3, vcvt_high_f32_f16(x1), vcvt_high_f32_f16(y1));
    }
    for (; i + 4 <= n; i += 4) {
        float16x4_t x0 = vreinterpret_f16_u16(vld1_u16(x + i));
        float16x4_t y0 = vreinterpret_f16_u16(vld1_u16(y + i));
        s0 = vfmaq_f32(s0, vcvt_f32_f16(x0), vcvt_f32_f16(y0));
    }
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++) sum += k_h2f(x[i]) * k_h2f(y[i]);
    return sum;
}

float k_dot_f32_f32_neon(int64_t n, const void *w, const void *a) {
    const float *x = (const float *)w, *y = (const float *)a;
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(x + i), vld1q_f32(y + i));
        s1 = vfmaq_f32(s1, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(x + i + 8), vld1q_f32(y + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(x + i + 12), vld1q_f32(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(x + i), vld1q_f32(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++) sum += x[i] * y[i];
    return sum;
}
