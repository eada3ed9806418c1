/* vexp_neon_arm64.h — ggml's vectorised exp on 4 NEON lanes (vexpf4, the
 * steps of vexp_body.h), shared by the exact attention and SwiGLU kernels
 * (private to csrc). */
#ifndef WOOLLY_VEXP_NEON_ARM64_H
#define WOOLLY_VEXP_NEON_ARM64_H

#include <arm_neon.h>

#define VX_T float32x4_t
#define VX_LANES 4
#define VX_NAME vexpf4
#define VX_ATTR
#define VX_SET1(c) vdupq_n_f32(c)
#define VX_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define VX_FNMA(a, b, c) vfmsq_f32((c), (a), (b))
#define VX_SUB(a, b) vsubq_f32((a), (b))
#define VX_MUL(a, b) vmulq_f32((a), (b))
#define VX_NORMAL(n) \
    (vminvq_u32(vandq_u32(vcgeq_f32((n), vdupq_n_f32(-126.0f)), vcleq_f32((n), vdupq_n_f32(127.0f)))) != 0)
#define VX_LOAD(p) vld1q_f32(p)
#define VX_STORE(p, v) vst1q_f32((p), (v))
#define VX_SCALE2N(j, n) \
    vmulq_f32((j), vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)))
#include "vexp_body.h"
#undef VX_T
#undef VX_LANES
#undef VX_NAME
#undef VX_ATTR
#undef VX_SET1
#undef VX_FMA
#undef VX_FNMA
#undef VX_SUB
#undef VX_MUL
#undef VX_NORMAL
#undef VX_LOAD
#undef VX_STORE
#undef VX_SCALE2N

#endif
