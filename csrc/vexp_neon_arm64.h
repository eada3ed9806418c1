/* vexp_neon_arm64.h — ggml's vectorised exp on 4 NEON lanes, shared by the
 * exact attention and SwiGLU kernels (private to csrc). */
#ifndef WOOLLY_VEXP_NEON_ARM64_H
#define WOOLLY_VEXP_NEON_ARM64_H

#include <arm_neon.h>
#include "attn_common.h"

/* ggml_v_expf on 4 lanes, as k_attn_vexpf (scalar for lanes with |n| > 126). */
static inline float32x4_t vexpf4(float32x4_t x) {
    const float32x4_t r = vdupq_n_f32(0x1.8p23f);
    const float32x4_t z = vfmaq_f32(r, x, vdupq_n_f32(0x1.715476p+0f));
    const float32x4_t n = vsubq_f32(z, r);
    const float32x4_t b = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(0x1.62e4p-1f)), n, vdupq_n_f32(0x1.7f7d1cp-20f));
    const float32x4_t u = vmulq_f32(b, b);
    const float32x4_t p1 = vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b);
    const float32x4_t p2 = vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b);
    const float32x4_t p3 = vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(0x1.ffffecp-1f), b);
    const float32x4_t j = vfmaq_f32(p3, vfmaq_f32(p2, p1, u), u);
    const uint32x4_t ok = vandq_u32(vcgeq_f32(n, vdupq_n_f32(-126.0f)), vcleq_f32(n, vdupq_n_f32(127.0f)));
    if (vminvq_u32(ok) == 0) {
        float xs[4], ys[4];
        vst1q_f32(xs, x);
        for (int l = 0; l < 4; l++) ys[l] = k_attn_vexpf(xs[l]);
        return vld1q_f32(ys);
    }
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(j, vreinterpretq_f32_s32(e));
}

#endif
