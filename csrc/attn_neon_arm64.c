/*
 * attn_neon_arm64.c — k_attention_f16acc_neon and k_attention_tiled_neon:
 * the drivers of attn_driver.h over NEON primitives; the same bits as
 * k_attention_f16acc_ref / k_attention_tiled_ref (attn_f16_ref.c,
 * attn_tiled_ref.c), and as the x86 kernels (attn_x86.h) with
 * 4-lane vectors: vfmaq is the fused step, vcvt_f16_f32 rounds to nearest
 * even (default FPCR), and the 16-lane reduction trees are spelled out lane
 * for lane.
 */
#include <arm_neon.h>
#include "attn_common.h"
#include "kernels_neon_arm64.h"
#include "vexp_neon_arm64.h"

#define AI __attribute__((always_inline))

static inline float32x4_t ldh4(const k_half *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
static inline float32x4_t f16r4(float32x4_t x) { return vcvt_f32_f16(vcvt_f16_f32(x)); }
static inline AI float attn_f16r1(float x) { return vgetq_lane_f32(f16r4(vdupq_n_f32(x)), 0); }
static inline AI float attn_h2f(k_half h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

/* lanes (0..3) + (4..7) of the 16-lane tree after the w = 8 step: w = 4, 2, 1 */
static inline float tree8(float32x4_t lo, float32x4_t hi) {
    const float32x4_t v4 = vaddq_f32(lo, hi);
    const float32x2_t v2 = vadd_f32(vget_low_f32(v4), vget_high_f32(v4));
    return vget_lane_f32(v2, 0) + vget_lane_f32(v2, 1);
}

/* ---- k_attention_f16acc ---- */

/* the vector part of dot_f16 (attn_driver.h): a[j][4c..4c+3] = accumulator j, lanes 4c.. */
static inline AI float attn_dot64(const float *x, const k_half *y, int64_t np) {
    float32x4_t a[4][4];
    for (int j = 0; j < 4; j++)
        for (int c = 0; c < 4; c++) a[j][c] = vdupq_n_f32(0);
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int c = 0; c < 4; c++)
                a[j][c] = vfmaq_f32(a[j][c], vld1q_f32(x + i + 16 * j + 4 * c), ldh4(y + i + 16 * j + 4 * c));
    float32x4_t v[4];
    for (int c = 0; c < 4; c++) v[c] = vaddq_f32(vaddq_f32(a[0][c], a[2][c]), vaddq_f32(a[1][c], a[3][c]));
    return tree8(vaddq_f32(v[0], v[2]), vaddq_f32(v[1], v[3])); /* w = 8, then 4, 2, 1 */
}

#pragma GCC push_options
#pragma GCC optimize("unroll-loops")
/* V accumulation of one chunk for nv vectors of 4 head lanes (see the AVX2 vblock) */
static inline AI void vblock(const int nv, float *acc, const k_half *v, int64_t kv_stride, int64_t cn,
                             const float *ms, const float *vs) {
    float32x4_t a[16];
    for (int r = 0; r < nv; r++) a[r] = vld1q_f32(acc + 4 * r);
    for (int64_t j = 0; j < cn; j++) {
        const k_half *vp = v + j * kv_stride;
        if (ms[j] != 1.0f)
            for (int r = 0; r < nv; r++) a[r] = f16r4(vmulq_n_f32(a[r], ms[j]));
        for (int r = 0; r < nv; r++) a[r] = f16r4(vfmaq_n_f32(a[r], ldh4(vp + 4 * r), vs[j]));
    }
    for (int r = 0; r < nv; r++) vst1q_f32(acc + 4 * r, a[r]);
}
#define VBLOCK_PARAMS float *acc, const k_half *v, int64_t kvs, int64_t cn, const float *ms, const float *vs
static void vblock64(VBLOCK_PARAMS) { vblock(16, acc, v, kvs, cn, ms, vs); }
static void vblock32(VBLOCK_PARAMS) { vblock(8, acc, v, kvs, cn, ms, vs); }
static void vblock16(VBLOCK_PARAMS) { vblock(4, acc, v, kvs, cn, ms, vs); }
static void vblock8(VBLOCK_PARAMS) { vblock(2, acc, v, kvs, cn, ms, vs); }
static void vblock4(VBLOCK_PARAMS) { vblock(1, acc, v, kvs, cn, ms, vs); }

/* vblock for two heads over the same V rows (see the AVX2 vblock2) */
static inline AI void vblock2(const int nv, float *acc0, float *acc1, const k_half *v, int64_t kv_stride, int64_t cn,
                              const float *ms0, const float *vs0, const float *ms1, const float *vs1) {
    float32x4_t a[8], b[8];
    for (int r = 0; r < nv; r++) a[r] = vld1q_f32(acc0 + 4 * r), b[r] = vld1q_f32(acc1 + 4 * r);
    for (int64_t j = 0; j < cn; j++) {
        const k_half *vp = v + j * kv_stride;
        if (ms0[j] != 1.0f)
            for (int r = 0; r < nv; r++) a[r] = f16r4(vmulq_n_f32(a[r], ms0[j]));
        if (ms1[j] != 1.0f)
            for (int r = 0; r < nv; r++) b[r] = f16r4(vmulq_n_f32(b[r], ms1[j]));
        for (int r = 0; r < nv; r++) {
            const float32x4_t x = ldh4(vp + 4 * r);
            a[r] = f16r4(vfmaq_n_f32(a[r], x, vs0[j]));
            b[r] = f16r4(vfmaq_n_f32(b[r], x, vs1[j]));
        }
    }
    for (int r = 0; r < nv; r++) vst1q_f32(acc0 + 4 * r, a[r]), vst1q_f32(acc1 + 4 * r, b[r]);
}
/* 64 lanes of two heads as two passes of 32 (16 accumulators of the 32 registers) */
static void vblock64x2(float *acc0, float *acc1, const k_half *v, int64_t kvs, int64_t cn, const float *ms0,
                       const float *vs0, const float *ms1, const float *vs1) {
    vblock2(8, acc0, acc1, v, kvs, cn, ms0, vs0, ms1, vs1);
    vblock2(8, acc0 + 32, acc1 + 32, v + 32, kvs, cn, ms0, vs0, ms1, vs1);
}

/* acc[0..4*nv) = fmaf(kq[j], vf[j*hd + ...], acc) for j < n, in registers. */
static inline AI void vacc(const int nv, float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) {
    float32x4_t a[16];
    for (int r = 0; r < nv; r++) a[r] = vld1q_f32(acc + 4 * r);
    for (int64_t j = 0; j < n; j++) {
        const float w = kq[j];
        for (int r = 0; r < nv; r++) a[r] = vfmaq_n_f32(a[r], vld1q_f32(vf + j * hd + 4 * r), w);
    }
    for (int r = 0; r < nv; r++) vst1q_f32(acc + 4 * r, a[r]);
}
static void vacc64(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(16, acc, vf, hd, kq, n); }
static void vacc32(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(8, acc, vf, hd, kq, n); }
static void vacc16(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(4, acc, vf, hd, kq, n); }
static void vacc8(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(2, acc, vf, hd, kq, n); }
static void vacc4(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(1, acc, vf, hd, kq, n); }
#pragma GCC pop_options

/* ---- k_attention_tiled ---- */

/* the tile's lanes [n0, n): K transposed by 4x4 blocks (other lanes 0), V as is */
static inline AI void attn_widen_tile(float *kt, float *vf, const k_half *kh, const k_half *vh, int64_t kv_stride,
                                      int64_t ic, int64_t n0, int64_t n, int64_t hd) {
    enum { TILE = K_ATTN_TILE };
    for (int64_t j0 = 0; j0 < TILE; j0 += 4) {
        for (int64_t d0 = 0; d0 < hd; d0 += 4) {
            float32x4_t b[4];
            for (int jj = 0; jj < 4; jj++)
                b[jj] = j0 + jj >= n0 && j0 + jj < n ? ldh4(kh + (ic + j0 + jj) * kv_stride + d0) : vdupq_n_f32(0);
            const float32x4x2_t t01 = vtrnq_f32(b[0], b[1]), t23 = vtrnq_f32(b[2], b[3]);
            vst1q_f32(kt + (d0 + 0) * TILE + j0, vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])));
            vst1q_f32(kt + (d0 + 1) * TILE + j0, vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])));
            vst1q_f32(kt + (d0 + 2) * TILE + j0, vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])));
            vst1q_f32(kt + (d0 + 3) * TILE + j0, vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1])));
        }
    }
    for (int64_t j = n0; j < n; j++)
        for (int64_t d = 0; d < hd; d += 4) vst1q_f32(vf + j * hd + d, ldh4(vh + (ic + j) * kv_stride + d));
}

/* scores: lane j of vector c is position 4c + j */
static inline AI void attn_scores(float *kq, const float *kt, const float *qh, int64_t hd, float sc) {
    float32x4_t s[16];
    for (int c = 0; c < 16; c++) s[c] = vdupq_n_f32(0);
    for (int64_t d = 0; d < hd; d++) {
        const float qd = qh[d];
        const float *kd = kt + d * K_ATTN_TILE;
        for (int c = 0; c < 16; c++) s[c] = vfmaq_n_f32(s[c], vld1q_f32(kd + 4 * c), qd);
    }
    for (int c = 0; c < 16; c++) vst1q_f32(kq + 4 * c, vmulq_n_f32(s[c], sc));
}

static inline AI void attn_rescale(float *acc, int64_t hd, float ms) {
    for (int64_t d = 0; d < hd; d += 4) vst1q_f32(acc + d, vmulq_n_f32(vld1q_f32(acc + d), ms));
}

static inline AI double attn_exp_sum(float *kq, int64_t jlo, int64_t jhi, float M) {
    const uint32x4_t lane = {0, 1, 2, 3};
    const float32x4_t vM = vdupq_n_f32(M);
    double sum = 0;
    for (int64_t b = jlo - jlo % 16; b < jhi; b += 16) {
        float32x4_t e[4];
        for (int c = 0; c < 4; c++) {
            /* lane l + b + 4c in [jlo, jhi): (l + b + 4c - jlo) unsigned < jhi - jlo */
            const uint32x4_t m = vcltq_u32(vaddq_u32(lane, vdupq_n_u32((uint32_t)(b + 4 * c - jlo))),
                                           vdupq_n_u32((uint32_t)(jhi - jlo)));
            e[c] = vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(vexpf4(vsubq_f32(vld1q_f32(kq + b + 4 * c), vM)))));
            vst1q_f32(kq + b + 4 * c, e[c]);
        }
        sum += (double)tree8(vaddq_f32(e[0], e[2]), vaddq_f32(e[1], e[3]));
    }
    return sum;
}

static inline AI void attn_vacc(float *acc, const float *vfj, int64_t hd, const float *kqj, int64_t nj) {
    int64_t d = 0;
    for (; d + 64 <= hd; d += 64) vacc64(acc + d, vfj + d, hd, kqj, nj);
    if (d + 32 <= hd) { vacc32(acc + d, vfj + d, hd, kqj, nj); d += 32; }
    if (d + 16 <= hd) { vacc16(acc + d, vfj + d, hd, kqj, nj); d += 16; }
    if (d + 8 <= hd) { vacc8(acc + d, vfj + d, hd, kqj, nj); d += 8; }
    if (d + 4 <= hd) { vacc4(acc + d, vfj + d, hd, kqj, nj); d += 4; }
}

/* ---- k_attention_kvq: the V steps, 4 lanes at a time ---- */

static inline AI int64_t attn_kvq_vscale(float *acc, int64_t n, float ms) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(acc + i, vmulq_n_f32(vld1q_f32(acc + i), ms));
    return i;
}
static inline AI int64_t attn_kvq_vmad(float *acc, const float *vf, int64_t n, float vs) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(acc + i, vfmaq_n_f32(vld1q_f32(acc + i), vld1q_f32(vf + i), vs));
    return i;
}
static inline AI int64_t attn_kvq_vscale_h(float *acc, int64_t n, float ms) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(acc + i, f16r4(vmulq_n_f32(vld1q_f32(acc + i), ms)));
    return i;
}
static inline AI int64_t attn_kvq_vmad_h(float *acc, const k_half *vh, int64_t n, float vs) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(acc + i, f16r4(vfmaq_n_f32(vld1q_f32(acc + i), ldh4(vh + i), vs)));
    return i;
}

#define ATTN_FN
#define ATTN_LANES 4
#include "attn_driver.h"

void k_attention_f16acc_neon(ATTN_F16_PARAMS) { attn_f16acc(ATTN_F16_ARGS); }
void k_attention_tiled_neon(ATTN_F16_PARAMS) { attn_tiled(ATTN_F16_ARGS); }
void k_attention_kvq_neon(ATTN_KVQ_PARAMS) { attn_kvq(ATTN_KVQ_ARGS); }
