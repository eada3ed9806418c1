/*
 * dot_neon_arm64.c — dot products for every arm64 CPU (plain Advanced SIMD).
 *
 * The quantized kernels are the shared bodies of dot_body_arm64.h with
 * the int8 dot built from widening multiplies (vmull_s8) and pairwise
 * adds (vpaddlq_s16, vpaddq_s32); dot_neon_dot_arm64.c instantiates the same
 * bodies with SDOT (k_sdot). The float kernels (f16 x f16, f32 x f32) live here only.
 */
#include <arm_neon.h>

/* lane l = a[4l]*b[4l] + ... + a[4l+3]*b[4l+3], as SDOT gives it: widening
 * products (int16), pairwise sums to int32, pairwise again across the two. */
static inline int32x4_t k_dot16_mull(int32x4_t acc, int8x16_t a, int8x16_t b) {
    int32x4_t p0 = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    int32x4_t p1 = vpaddlq_s16(vmull_high_s8(a, b));
    return vaddq_s32(acc, vpaddq_s32(p0, p1));
}

#define K_DOT16(acc, a, b) k_dot16_mull((acc), (a), (b))
#include "dot_body_arm64.h"

ARM_DOT_SET(k_dot_q4_k_q8_k_neon, k_dot_q5_k_q8_k_neon, k_dot_q6_k_q8_k_neon, k_dot_q4_0_q8_0_neon,
            k_dot_q5_0_q8_0_neon, k_dot_q8_0_q8_0_neon, k_mm_q4_k_neon, k_mm_q5_k_neon, k_mm_q6_k_neon,
            k_mm_q4_0_neon, k_mm_q5_0_neon, k_mm_q8_0_neon)

/* The float dots follow the reference build's ggml_vec_dot_f16 / _f32 order
 * (as k_dot_{f16_f16,f32_f32}_avx2 does): np = n & ~63 elements in 4
 * accumulators x 16 lanes (element i + 16j of each 64-step in accumulator j,
 * lane i; here 16 float32x4, q[4j + i/4]), x0 += x2, x1 += x3, x0 += x1, the
 * 16 lanes reduced (l + l+8, l + l+4, l + l+2, l + l+1), then the remaining
 * n - np products (rounded to f32) added in double. */
static inline float32x4_t k_ldh4(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

static inline __attribute__((always_inline)) float vecdot(int f16, int64_t n, const void *w, const void *a) {
    const uint16_t *xh = (const uint16_t *)w, *yh = (const uint16_t *)a;
    const float *xf = (const float *)w, *yf = (const float *)a;
    const int64_t np = n & ~(int64_t)63;
    double sum = 0;
    if (np > 0) {
        float32x4_t q[16];
        for (int k = 0; k < 16; k++) q[k] = vdupq_n_f32(0);
        for (int64_t i = 0; i < np; i += 64)
            for (int k = 0; k < 16; k++)
                q[k] = f16 ? vfmaq_f32(q[k], k_ldh4(xh + i + 4 * k), k_ldh4(yh + i + 4 * k))
                           : vfmaq_f32(q[k], vld1q_f32(xf + i + 4 * k), vld1q_f32(yf + i + 4 * k));
        for (int k = 0; k < 8; k++) q[k] = vaddq_f32(q[k], q[k + 8]); /* x0 += x2, x1 += x3 */
        for (int k = 0; k < 4; k++) q[k] = vaddq_f32(q[k], q[k + 4]); /* x0 += x1 */
        /* lanes 0..15 of x0 are q[0..3]: l + l+8, then the 8-lane tree */
        sum = (double)k_hsum8(vaddq_f32(q[0], q[2]), vaddq_f32(q[1], q[3]));
    }
    for (int64_t i = np; i < n; i++) {
        const float p = f16 ? k_h2f(xh[i]) * k_h2f(yh[i]) : xf[i] * yf[i]; /* own statement: no FMA */
        sum += (double)p;
    }
    return (float)sum;
}

float k_dot_f16_f16_neon(int64_t n, const void *w, const void *a) { return vecdot(1, n, w, a); }
float k_dot_f32_f32_neon(int64_t n, const void *w, const void *a) { return vecdot(0, n, w, a); }
