/*
 * q2k_q3k_neon_dot_arm64.c — Q2_K and Q3_K x Q8_K dots on SDOT (k_sdot),
 * for impl neon-dotprod: one token (k_dot_*_neon_dot) and the tiles
 * k_mm_q{2,3}_k_neon_dot (one row x 4 tokens, q2k_q3k_set_arm64.h; the
 * plain-NEON twins are q2k_q3k_neon_arm64.c). Specification:
 * csrc/q2k_q3k_ref.c, the same bits: per block 8 int32 lanes, lane l =
 * sum over the 8 vectors of 32 elements of scale * (q . a over elements
 * 4l..4l+3), which is what SDOT gives lane by lane (lanes 0..3 from
 * elements 0..15 of a vector, 4..7 from 16..31); then the reference's f32
 * steps.
 *
 * Q2_K multiplies each quant by its group scale first (q * s <= 45 fits a
 * signed byte), so one SDOT per 16 elements and token adds the scaled
 * products; Q3_K's q * s can reach 128, so it takes SDOT of the raw quants
 * times the scale in int32.
 */
#include "sdot_arm64.h"
#include <string.h>
#include "kernels_neon_arm64.h"

K_DOTPROD_BEGIN

/* The 16 group scales of a block: Q2_K the low nibbles; Q3_K the 6-bit
 * scales minus 32 (low nibbles of groups 0..7 from scales[0..7], of 8..15
 * from their high nibbles; top bits of group g: bits 2(g/4), 2(g/4)+1 of
 * scales[8 + g%4]). */
static inline int8x16_t dp_scales(int type, const void *blk) {
    if (type == K_Q2_K) return vreinterpretq_s8_u8(vandq_u8(vld1q_u8(((const k_block_q2_k *)blk)->scales), vdupq_n_u8(15)));
    static const int8_t top_shift[16] = {0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6};
    const uint8_t *s = ((const k_block_q3_k *)blk)->scales;
    uint32_t w2;
    memcpy(&w2, s + 8, 4);
    const uint8x8_t x = vld1_u8(s);
    const uint8x16_t low = vcombine_u8(vand_u8(x, vdup_n_u8(15)), vshr_n_u8(x, 4));
    const uint8x16_t top = vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(w2)), vld1q_s8(top_shift)), vdupq_n_u8(3));
    return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, vshlq_n_u8(top, 4))), vdupq_n_s8(32));
}

/* out[t] = dot(row w, token t) for T tokens (1 or 4) a_row_bytes apart */
static inline __attribute__((always_inline)) void dp_dot(const int type, const int T, int64_t n, const char *w,
                                                        const char *a, size_t a_row_bytes, float *out) {
    const size_t bsz = type == K_Q2_K ? sizeof(k_block_q2_k) : sizeof(k_block_q3_k);
    const uint8x16_t three = vdupq_n_u8(3), one = vdupq_n_u8(1), four = vdupq_n_u8(4);
    float32x4_t lo_f[4], hi_f[4];
    for (int t = 0; t < T; t++) lo_f[t] = hi_f[t] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const char *blk = w + (size_t)i * bsz;
        const k_block_q8_k *y[4];
        for (int t = 0; t < T; t++) y[t] = (const k_block_q8_k *)(a + (size_t)t * a_row_bytes) + i;
        const int8x16_t sv = dp_scales(type, blk);
        int8_t s[16];
        vst1q_s8(s, sv);
        float wd;
        if (type == K_Q2_K) {
            /* the min term first: lane l += -(y.d * dmin) * (m[2l] bsums[2l] + m[2l+1] bsums[2l+1]) */
            const k_block_q2_k *x = (const k_block_q2_k *)blk;
            const uint8x16_t m = vshrq_n_u8(vld1q_u8(x->scales), 4);
            const int16x8_t m_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m)));
            const int16x8_t m_hi = vreinterpretq_s16_u16(vmovl_high_u8(m));
            const float dmin = k_h2f(x->dmin);
            for (int t = 0; t < T; t++) {
                const int16x8_t b_lo = vld1q_s16(y[t]->bsums), b_hi = vld1q_s16(y[t]->bsums + 8);
                const int32x4_t p_lo = vpaddq_s32(vmull_s16(vget_low_s16(m_lo), vget_low_s16(b_lo)), vmull_high_s16(m_lo, b_lo));
                const int32x4_t p_hi = vpaddq_s32(vmull_s16(vget_low_s16(m_hi), vget_low_s16(b_hi)), vmull_high_s16(m_hi, b_hi));
                const float32x4_t dm = vdupq_n_f32(-(y[t]->d * dmin));
                lo_f[t] = vfmaq_f32(lo_f[t], vcvtq_f32_s32(p_lo), dm);
                hi_f[t] = vfmaq_f32(hi_f[t], vcvtq_f32_s32(p_hi), dm);
            }
            wd = k_h2f(x->d);
        } else {
            wd = k_h2f(((const k_block_q3_k *)blk)->d);
        }
        const uint8_t *qs = type == K_Q2_K ? ((const k_block_q2_k *)blk)->qs : ((const k_block_q3_k *)blk)->qs;
        const uint8_t *hm = ((const k_block_q3_k *)blk)->hmask; /* Q3_K only */
        const uint8x16_t hm0 = type == K_Q3_K ? vld1q_u8(hm) : one, hm1 = type == K_Q3_K ? vld1q_u8(hm + 16) : one;
        int32x4_t lo_i[4], hi_i[4];
        for (int t = 0; t < T; t++) lo_i[t] = hi_i[t] = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) {
            const uint8x16_t b0 = vld1q_u8(qs + 32 * h), b1 = vld1q_u8(qs + 32 * h + 16);
            for (int k = 0; k < 4; k++) {
                const int v = 4 * h + k; /* elements 32v .. 32v+31, groups 2v (b0) and 2v+1 (b1) */
                const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * k));
                uint8x16_t q0 = vandq_u8(vshlq_u8(b0, sh), three), q1 = vandq_u8(vshlq_u8(b1, sh), three);
                if (type == K_Q2_K) {
                    q0 = vmulq_u8(q0, vdupq_n_u8((uint8_t)s[2 * v]));
                    q1 = vmulq_u8(q1, vdupq_n_u8((uint8_t)s[2 * v + 1]));
                } else {
                    const int8x16_t hs = vdupq_n_s8((int8_t)-v);
                    q0 = vsubq_u8(vorrq_u8(q0, vshlq_n_u8(vandq_u8(vshlq_u8(hm0, hs), one), 2)), four);
                    q1 = vsubq_u8(vorrq_u8(q1, vshlq_n_u8(vandq_u8(vshlq_u8(hm1, hs), one), 2)), four);
                }
                for (int t = 0; t < T; t++) {
                    const int8x16_t a0 = vld1q_s8(y[t]->qs + 32 * v), a1 = vld1q_s8(y[t]->qs + 32 * v + 16);
                    if (type == K_Q2_K) {
                        lo_i[t] = k_sdot(lo_i[t], vreinterpretq_s8_u8(q0), a0);
                        hi_i[t] = k_sdot(hi_i[t], vreinterpretq_s8_u8(q1), a1);
                    } else {
                        const int32x4_t z = vdupq_n_s32(0);
                        lo_i[t] = vmlaq_n_s32(lo_i[t], k_sdot(z, vreinterpretq_s8_u8(q0), a0), s[2 * v]);
                        hi_i[t] = vmlaq_n_s32(hi_i[t], k_sdot(z, vreinterpretq_s8_u8(q1), a1), s[2 * v + 1]);
                    }
                }
            }
        }
        for (int t = 0; t < T; t++) {
            const float32x4_t dd = vdupq_n_f32(y[t]->d * wd);
            lo_f[t] = vfmaq_f32(lo_f[t], vcvtq_f32_s32(lo_i[t]), dd);
            hi_f[t] = vfmaq_f32(hi_f[t], vcvtq_f32_s32(hi_i[t]), dd);
        }
    }
    for (int t = 0; t < T; t++) out[t] = k_hsum8(lo_f[t], hi_f[t]); /* ((0+4) + (2+6)) + ((1+5) + (3+7)) */
}

#define Q23_BODY dp_dot
#include "q2k_q3k_set_arm64.h"
Q23_SET(k_dot_q2_k_q8_k_neon_dot, k_dot_q3_k_q8_k_neon_dot, k_mm_q2_k_neon_dot, k_mm_q3_k_neon_dot)
K_DOTPROD_END
