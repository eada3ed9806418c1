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
#define K_NAME(f) f##_neon
#include "dot_body_arm64.h"

/* The float dots follow the reference build's ggml_vec_dot_f16 / _f32 order
 * (as k_dot_{f16_f16,f32_f32}_avx2 does): np = n & ~63 elements in 4
 * accumulators x 16 lanes (element i + 16j of each 64-step in accumulator j,
 * lane i; here 16 float32x4, q[4j + i/4]), x0 += x2, x1 += x3, x0 += x1, the
 * 16 lanes reduced (l + l+8, l + l+4, l + l+2, l + l+1), then the remaining
 * n - np products (rounded to f32) added in double. */
#define K_VECDOT(name, T, LOAD4)                                                            \
    float name(int64_t n, const void *w, const void *a) {                                   \
        const T *x = (const T *)w, *y = (const T *)a;                                       \
        const int64_t np = n & ~(int64_t)63;                                                \
        double sum = 0;                                                                     \
        if (np > 0) {                                                                       \
            float32x4_t q[16];                                                              \
            for (int k = 0; k < 16; k++) q[k] = vdupq_n_f32(0);                             \
            for (int64_t i = 0; i < np; i += 64)                                            \
                for (int k = 0; k < 16; k++)                                                \
                    q[k] = vfmaq_f32(q[k], LOAD4(x + i + 4 * k), LOAD4(y + i + 4 * k));     \
            for (int k = 0; k < 8; k++) q[k] = vaddq_f32(q[k], q[k + 8]); /* x0+=x2, x1+=x3 */ \
            for (int k = 0; k < 4; k++) q[k] = vaddq_f32(q[k], q[k + 4]); /* x0 += x1 */    \
            /* lanes 0..15 of x0 are q[0..3]: l + l+8, then the 8-lane tree */              \
            sum = (double)k_hsum8(vaddq_f32(q[0], q[2]), vaddq_f32(q[1], q[3]));            \
        }                                                                                   \
        for (int64_t i = np; i < n; i++) {                                                  \
            const float p = K_SCALAR(x[i]) * K_SCALAR(y[i]); /* own statement: no FMA */    \
            sum += (double)p;                                                               \
        }                                                                                   \
        return (float)sum;                                                                  \
    }

#define K_LOAD4_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))

#define K_SCALAR(v) k_h2f(v)
K_VECDOT(k_dot_f16_f16_neon, uint16_t, K_LOAD4_F16)
#undef K_SCALAR
#define K_SCALAR(v) (v)
K_VECDOT(k_dot_f32_f32_neon, float, vld1q_f32)
#undef K_SCALAR
