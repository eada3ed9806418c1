/* ops_neon_arm64.c — the per-token f32 ops with NEON, each with the bits of
 * the x86 sets' kernel (ops_avx2_amd64.c), so that arm64 and x86-64 print the
 * same logits:
 *   k_swiglu_neon   k_swiglu_ref's bits, ggml_v_expf on 4 lanes (vexp_neon_arm64.h)
 *   k_rmsnorm_neon  k_rmsnorm_avx2's order of the double sum of squares
 *   k_rope_neon     k_rope_ref's roundings (k_rope_pair) on 4 pairs
 *   k_add_neon      element-wise, exact in any order
 * The other f32 ops run the portable C. */
#include <arm_neon.h>
#include "attn_common.h"
#include "kernels_neon_arm64.h"
#include "vexp_neon_arm64.h"

/* The sum of the float squares in double in k_rmsnorm_avx2's order: eight
 * lanes (element i of each 8-element chunk in lane i % 8; here a01 holds
 * lanes 0-1, a23 2-3, a45 4-5, a67 6-7), then lane k plus lane k + 4, then
 * (0 + 1) + (2 + 3), then the tail in order. Double sums round, so this order
 * is what makes the bits equal to x86's; the scaling is one multiply per
 * element (two with w), as there. */
void k_rmsnorm_neon(float *out, const float *x, const float *w, int64_t n, float eps) {
    float64x2_t a01 = vdupq_n_f64(0.0), a23 = a01, a45 = a01, a67 = a01;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float32x4_t lo = vld1q_f32(x + i), hi = vld1q_f32(x + i + 4);
        const float32x4_t qlo = vmulq_f32(lo, lo), qhi = vmulq_f32(hi, hi);
        a01 = vaddq_f64(a01, vcvt_f64_f32(vget_low_f32(qlo)));
        a23 = vaddq_f64(a23, vcvt_high_f64_f32(qlo));
        a45 = vaddq_f64(a45, vcvt_f64_f32(vget_low_f32(qhi)));
        a67 = vaddq_f64(a67, vcvt_high_f64_f32(qhi));
    }
    const float64x2_t b01 = vaddq_f64(a01, a45), b23 = vaddq_f64(a23, a67);
    double sum = (vgetq_lane_f64(b01, 0) + vgetq_lane_f64(b01, 1)) + (vgetq_lane_f64(b23, 0) + vgetq_lane_f64(b23, 1));
    for (; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = n > 0 ? (float)(sum / (double)n) : 0.0f;
    const float s = 1.0f / sqrtf(mean + eps);
    const float32x4_t vs = vdupq_n_f32(s);
    i = 0;
    if (w) {
        for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vmulq_f32(vld1q_f32(x + i), vs), vld1q_f32(w + i)));
    } else {
        for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vld1q_f32(x + i), vs));
    }
    for (; i < n; i++) {
        float t = x[i] * s;
        out[i] = w ? t * w[i] : t;
    }
}

void k_add_neon(float *out, const float *a, const float *b, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    for (; i < n; i++) out[i] = a[i] + b[i];
}

/* k_rope_pair on 4 pairs at a time: x0' = fma(x0, c, -(x1 * s)) and
 * x1' = fma(x0, s, x1 * c), the products rounded on their own (vmulq) and
 * the FMAs fused (vfmaq). Pairs (2i, 2i+1) come apart and back with
 * vld2q / vst2q, pairs (i, i + half) are two plain loads. */
void k_rope_neon(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float *cos_t, const float *sin_t,
                 int neox) {
    const int64_t half = n_rot / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * head_dim;
        int64_t i = 0;
        if (neox) {
            for (; i + 4 <= half; i += 4) {
                const float32x4_t x0 = vld1q_f32(xh + i), x1 = vld1q_f32(xh + i + half);
                const float32x4_t c = vld1q_f32(cos_t + i), s = vld1q_f32(sin_t + i);
                vst1q_f32(xh + i, vfmaq_f32(vnegq_f32(vmulq_f32(x1, s)), x0, c));
                vst1q_f32(xh + i + half, vfmaq_f32(vmulq_f32(x1, c), x0, s));
            }
        } else {
            for (; i + 4 <= half; i += 4) {
                float32x4x2_t v = vld2q_f32(xh + 2 * i);
                const float32x4_t x0 = v.val[0], x1 = v.val[1];
                const float32x4_t c = vld1q_f32(cos_t + i), s = vld1q_f32(sin_t + i);
                v.val[0] = vfmaq_f32(vnegq_f32(vmulq_f32(x1, s)), x0, c);
                v.val[1] = vfmaq_f32(vmulq_f32(x1, c), x0, s);
                vst2q_f32(xh + 2 * i, v);
            }
        }
        for (; i < half; i++) {
            const int64_t i0 = neox ? i : 2 * i;
            const int64_t i1 = neox ? i + half : 2 * i + 1;
            k_rope_pair(xh, i0, i1, cos_t[i], sin_t[i]);
        }
    }
}

void k_swiglu_neon(float *out, const float *gate, const float *up, int64_t n, int64_t i0, int64_t i1) {
    const int64_t nv = n & ~(int64_t)15, v1 = i1 < nv ? i1 : nv;
    const float32x4_t one = vdupq_n_f32(1.0f);
    int64_t i = i0;
    for (; i + 4 <= v1; i += 4) {
        const float32x4_t g = vld1q_f32(gate + i);
        const float32x4_t e = vexpf4(vnegq_f32(g));
        vst1q_f32(out + i, vmulq_f32(vdivq_f32(g, vaddq_f32(one, e)), vld1q_f32(up + i)));
    }
    for (; i < i1; i++) {
        out[i] = k_swiglu1(i, nv, gate[i], up[i]);
    }
}
