/* vexp_neon_arm64.h — ggml's vectorised exp on 4 NEON lanes (vexpf4, the
 * body of vexp_body.h), shared by the exact attention and SwiGLU kernels
 * (private to csrc). */
#ifndef WOOLLY_VEXP_NEON_ARM64_H
#define WOOLLY_VEXP_NEON_ARM64_H

#include <arm_neon.h>

#include "attn_common.h"

#define VX_FN
#define VX_NAME vexpf4
#define VX_F float32x4_t
#define VX_LANES 4
#define VX_DUP(c) vdupq_n_f32(c)
#define VX_SUB(a, b) vsubq_f32((a), (b))
#define VX_MUL(a, b) vmulq_f32((a), (b))
#define VX_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#define VX_FNMA(a, b, c) vfmsq_f32((c), (a), (b))
#define VX_IN_RANGE(n) \
    (vminvq_u32(vandq_u32(vcgeq_f32((n), vdupq_n_f32(-126.0f)), vcleq_f32((n), vdupq_n_f32(127.0f)))) != 0)
#define VX_POW2(n) vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23))
#define VX_LD(p) vld1q_f32(p)
#define VX_ST(p, v) vst1q_f32((p), (v))
#include "vexp_body.h"

#endif
