/*
 * q2k_q3k_neon_arm64.c — Q2_K and Q3_K on every arm64 CPU (plain Advanced
 * SIMD): dequantization, dots with Q8_K activations and the k_matmul_q tiles
 * (q2k_q3k_set_arm64.h; the SDOT twins are q2k_q3k_neon_dot_arm64.c).
 * Specification: q2k_q3k_ref.c; the same bits.
 *
 * Dot: per 16-element group, widening products (vmull_s8), pair sums in
 * int16 (vpaddq_s16; at most 2 * 4 * 127), times the group scale into int32
 * pair accumulators (vmlal_n_s16); at the end of a block adjacent pairs are
 * added (vpaddq_s32), which gives lane l = the products of elements 4l..4l+3
 * of every 32-element vector times their scales: the reference's exact int32
 * lanes. The f32 steps are the reference's: per block (Q2_K: first the min
 * term) one FMA per lane, then ((0+4) + (2+6)) + ((1+5) + (3+7)) (k_hsum8).
 */
#include <arm_neon.h>
#include "kernels_neon_arm64.h"
#include "q2k_q3k.h"

/* ---- dequantization ----
 * A group has one d * scale (and Q2_K one dmin * min), so it takes at most
 * 8 distinct values: they are computed once with the reference's float
 * steps (value(q) = dl * q - ml, or dl * q), and the group's elements are
 * looked up in that table byte-wise (vqtbl2q_u8): bit-identical by
 * construction. */

/* 16 float bits for 16 table indices u (0..7) from tab (8 floats = 32 bytes) */
static inline void q23_lookup16(float *dst, uint8x16_t u, uint8x16x2_t tab) {
    static const uint8_t inc[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    const uint8x16_t u4 = vshlq_n_u8(u, 2), off = vld1q_u8(inc);
    const uint8x16_t d0 = vzip1q_u8(u4, u4), d1 = vzip2q_u8(u4, u4); /* each index twice */
    const uint8x16_t e[4] = {vzip1q_u8(d0, d0), vzip2q_u8(d0, d0), vzip1q_u8(d1, d1), vzip2q_u8(d1, d1)};
    for (int j = 0; j < 4; j++) vst1q_u8((uint8_t *)(dst + 4 * j), vqtbl2q_u8(tab, vaddq_u8(e[j], off)));
}

static inline void q23_dequant_neon(int type, const void *src, float *dst, int64_t n) {
    const size_t bsz = type == K_Q2_K ? sizeof(k_block_q2_k) : sizeof(k_block_q3_k);
    const uint8x16_t three = vdupq_n_u8(3), one = vdupq_n_u8(1);
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK) {
        const char *blk = (const char *)src + (size_t)i * bsz;
        const k_block_q2_k *x2 = (const k_block_q2_k *)blk;
        const k_block_q3_k *x3 = (const k_block_q3_k *)blk;
        int8_t s3[16];
        if (type == K_Q3_K) k_q3k_scales16(x3->scales, s3);
        const float d = k_h2f(type == K_Q2_K ? x2->d : x3->d);
        const float dmin = type == K_Q2_K ? k_h2f(x2->dmin) : 0;
        for (int e0 = 0; e0 < K_QKK; e0 += 16) { /* group g = e0 / 16: vector v = g / 2, half h, k */
            const int g = e0 / 16, v = g / 2, h = v / 4, k = v % 4;
            const uint8_t *qs = (type == K_Q2_K ? x2->qs : x3->qs) + 32 * h + 16 * (g % 2);
            uint8x16_t u = vandq_u8(vshlq_u8(vld1q_u8(qs), vdupq_n_s8((int8_t)(-2 * k))), three);
            float tab[8] = {0};
            if (type == K_Q2_K) {
                const float dl = d * (float)(x2->scales[g] & 15), ml = dmin * (float)(x2->scales[g] >> 4);
                for (int q = 0; q < 4; q++) {
                    const float t = dl * (float)q;
                    tab[q] = t - ml;
                }
            } else {
                const float dl = d * (float)s3[g];
                for (int q = 0; q < 8; q++) tab[q] = dl * (float)(q - 4); /* index q = quant + 4 */
                const uint8x16_t hb = vld1q_u8(x3->hmask + 16 * (g % 2));
                u = vorrq_u8(u, vshlq_n_u8(vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)-v)), one), 2));
            }
            uint8x16x2_t tv;
            tv.val[0] = vld1q_u8((const uint8_t *)tab);
            tv.val[1] = vld1q_u8((const uint8_t *)(tab + 4));
            q23_lookup16(dst + e0, u, tv);
        }
    }
}

void k_dequant_q2_k_neon(const void *src, float *dst, int64_t n) { q23_dequant_neon(K_Q2_K, src, dst, n); }
void k_dequant_q3_k_neon(const void *src, float *dst, int64_t n) { q23_dequant_neon(K_Q3_K, src, dst, n); }

/* ---- dots ---- */

/* the quants of vector v (elements 0..15 and 16..31): Q2_K 0..3, Q3_K -4..3 */
typedef struct { int8x16_t lo, hi; } q23_vec;

static inline q23_vec q23_quants_neon(int type, const void *blk, int v) {
    const uint8_t *qs = (type == K_Q2_K ? ((const k_block_q2_k *)blk)->qs : ((const k_block_q3_k *)blk)->qs) + 32 * (v / 4);
    const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * (v % 4)));
    const uint8x16_t three = vdupq_n_u8(3);
    uint8x16_t lo = vandq_u8(vshlq_u8(vld1q_u8(qs), sh), three), hi = vandq_u8(vshlq_u8(vld1q_u8(qs + 16), sh), three);
    if (type == K_Q3_K) {
        const uint8_t *hm = ((const k_block_q3_k *)blk)->hmask;
        const int8x16_t hs = vdupq_n_s8((int8_t)-v);
        const uint8x16_t one = vdupq_n_u8(1), four = vdupq_n_u8(4);
        lo = vsubq_u8(vorrq_u8(lo, vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(hm), hs), one), 2)), four);
        hi = vsubq_u8(vorrq_u8(hi, vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(hm + 16), hs), one), 2)), four);
    }
    return (q23_vec){vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi)};
}

/* pair[0..1]: scaled pair sums of elements 0..7 / 8..15 of every vector,
 * pair[2..3]: of elements 16..23 / 24..31 */
static inline void q23_products(q23_vec q, const int8_t *a, int16_t s0, int16_t s1, int32x4_t pair[4]) {
    const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
    const int16x8_t p0 = vpaddq_s16(vmull_s8(vget_low_s8(q.lo), vget_low_s8(a0)), vmull_high_s8(q.lo, a0));
    const int16x8_t p1 = vpaddq_s16(vmull_s8(vget_low_s8(q.hi), vget_low_s8(a1)), vmull_high_s8(q.hi, a1));
    pair[0] = vmlal_n_s16(pair[0], vget_low_s16(p0), s0);
    pair[1] = vmlal_high_n_s16(pair[1], p0, s0);
    pair[2] = vmlal_n_s16(pair[2], vget_low_s16(p1), s1);
    pair[3] = vmlal_high_n_s16(pair[3], p1, s1);
}

/* Q2_K's min lanes: lane l = m[2l] * bsums[2l] + m[2l+1] * bsums[2l+1] */
static inline void q2k_min_lanes(const k_block_q2_k *x, const int16_t *bsums, int32x4_t *lo, int32x4_t *hi) {
    const uint8x16_t m8 = vshrq_n_u8(vld1q_u8(x->scales), 4);
    const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m8))), m1 = vreinterpretq_s16_u16(vmovl_high_u8(m8));
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
    *lo = vpaddq_s32(vmull_s16(vget_low_s16(m0), vget_low_s16(b0)), vmull_high_s16(m0, b0));
    *hi = vpaddq_s32(vmull_s16(vget_low_s16(m1), vget_low_s16(b1)), vmull_high_s16(m1, b1));
}

/* out[t] = dot(row w, token t), T tokens a_row_bytes apart (T <= 4) */
static inline __attribute__((always_inline)) void q23_dot_neon(const int type, const int T, int64_t n, const char *w,
                                                              const char *a, size_t a_row_bytes, float *out) {
    const size_t bsz = type == K_Q2_K ? sizeof(k_block_q2_k) : sizeof(k_block_q3_k);
    float32x4_t acc[4][2];
    for (int t = 0; t < T; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const char *blk = w + (size_t)i * bsz;
        const k_block_q8_k *y[4];
        for (int t = 0; t < T; t++) y[t] = (const k_block_q8_k *)(a + (size_t)t * a_row_bytes) + i;
        int16_t sc[16];
        float d;
        if (type == K_Q2_K) {
            const k_block_q2_k *x = (const k_block_q2_k *)blk;
            for (int g = 0; g < 16; g++) sc[g] = x->scales[g] & 15;
            const float dmin = k_h2f(x->dmin);
            for (int t = 0; t < T; t++) {
                int32x4_t mlo, mhi;
                q2k_min_lanes(x, y[t]->bsums, &mlo, &mhi);
                const float32x4_t dm = vdupq_n_f32(-(y[t]->d * dmin));
                acc[t][0] = vfmaq_f32(acc[t][0], vcvtq_f32_s32(mlo), dm);
                acc[t][1] = vfmaq_f32(acc[t][1], vcvtq_f32_s32(mhi), dm);
            }
            d = k_h2f(x->d);
        } else {
            int8_t s8[16];
            k_q3k_scales16(((const k_block_q3_k *)blk)->scales, s8);
            for (int g = 0; g < 16; g++) sc[g] = s8[g];
            d = k_h2f(((const k_block_q3_k *)blk)->d);
        }
        int32x4_t pair[4][4];
        for (int t = 0; t < T; t++) pair[t][0] = pair[t][1] = pair[t][2] = pair[t][3] = vdupq_n_s32(0);
        for (int v = 0; v < 8; v++) {
            const q23_vec q = q23_quants_neon(type, blk, v);
            for (int t = 0; t < T; t++) q23_products(q, y[t]->qs + 32 * v, sc[2 * v], sc[2 * v + 1], pair[t]);
        }
        for (int t = 0; t < T; t++) {
            const float32x4_t dd = vdupq_n_f32(y[t]->d * d);
            acc[t][0] = vfmaq_f32(acc[t][0], vcvtq_f32_s32(vpaddq_s32(pair[t][0], pair[t][1])), dd);
            acc[t][1] = vfmaq_f32(acc[t][1], vcvtq_f32_s32(vpaddq_s32(pair[t][2], pair[t][3])), dd);
        }
    }
    for (int t = 0; t < T; t++) out[t] = k_hsum8(acc[t][0], acc[t][1]);
}

#define Q23_BODY q23_dot_neon
#include "q2k_q3k_set_arm64.h"
Q23_SET(k_dot_q2_k_q8_k_neon, k_dot_q3_k_q8_k_neon, k_mm_q2_k_neon, k_mm_q3_k_neon)
