/* ops_neon_arm64.c — k_swiglu with NEON: k_swiglu_ref's bits, ggml_v_expf on
 * 4 lanes (vexp_neon_arm64.h). The other f32 ops run the portable C. */
#include <arm_neon.h>
#include "kernels_neon_arm64.h"
#include "vexp_neon_arm64.h"

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
