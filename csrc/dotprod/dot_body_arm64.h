/*
 * dot_body_arm64.h — the quantized dot products for arm64, written once over
 * one primitive:
 *
 *   K_DOT16(acc, a, b)  acc (int32x4) += the 16 int8 products a[i]*b[i],
 *                       summed in groups of four into the four lanes
 *
 * and instantiated twice:
 *   csrc/dot_neon_arm64.c              K_DOT16 from vmull_s8 + vpadalq_s16  (_neon)
 *   csrc/dotprod/dot_neon_dot_arm64.c  K_DOT16 = vdotq_s32                  (_neon_dot)
 * K_NAME(f) appends the impl suffix to a function name.
 *
 * Products fit: |w| <= 32 (K-quants, Q4_0/Q5_0 after the offset) or 128
 * (Q8_0), |a| <= 127, so a pair of products fits int16 in the vmull path.
 *
 * Note for editors: csrc/ includes this file from a sub-directory, so the Go
 * build cache does not see edits here when rebuilding package csrc: run
 * `go clean -cache` (or touch csrc/dot_neon_arm64.c) after changing it.
 */
#include <arm_neon.h>
#include <string.h>
#include "../kernels_neon_arm64.h"

static inline float k_h2f(k_half h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* sum_s m[s] * (bsums[2s] + bsums[2s+1]) for the 8 sub-block mins of a
 * Q4_K / Q5_K block against a Q8_K block. */
static inline int32_t k_mins_dot(const uint8_t m[8], const int16_t *bsums) {
    int16x8_t bs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
    int16x8_t mv = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m)));
    int32x4_t p = vmull_s16(vget_low_s16(bs), vget_low_s16(mv));
    p = vmlal_high_s16(p, bs, mv);
    return vaddvq_s32(p);
}

static inline void k_scales_mins(const uint8_t *scales, uint8_t sc[8], uint8_t m[8]) {
    for (int j = 0; j < 8; j++) k_q4k_scale_min(j, scales, &sc[j], &m[j]);
}

float K_NAME(k_dot_q4_k_q8_k)(int64_t n, const void *w, const void *a) {
    const k_block_q4_k *x = (const k_block_q4_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const uint8x16_t m4 = vdupq_n_u8(15);
    const int32x4_t z = vdupq_n_s32(0);
    float sumf = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = y[i].d * k_h2f(x[i].d);
        const float dmin = y[i].d * k_h2f(x[i].dmin);
        uint8_t sc[8], m[8];
        k_scales_mins(x[i].scales, sc, m);
        const int32_t summs = k_mins_dot(m, y[i].bsums);
        const uint8_t *q = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int32x4_t acc = z;
        for (int c = 0; c < 4; c++, q += 32, q8 += 64) {
            uint8x16_t b0 = vld1q_u8(q), b1 = vld1q_u8(q + 16);
            int32x4_t lo = K_DOT16(z, vreinterpretq_s8_u8(vandq_u8(b0, m4)), vld1q_s8(q8));
            lo = K_DOT16(lo, vreinterpretq_s8_u8(vandq_u8(b1, m4)), vld1q_s8(q8 + 16));
            int32x4_t hi = K_DOT16(z, vreinterpretq_s8_u8(vshrq_n_u8(b0, 4)), vld1q_s8(q8 + 32));
            hi = K_DOT16(hi, vreinterpretq_s8_u8(vshrq_n_u8(b1, 4)), vld1q_s8(q8 + 48));
            acc = vmlaq_n_s32(acc, lo, sc[2 * c]);
            acc = vmlaq_n_s32(acc, hi, sc[2 * c + 1]);
        }
        sumf += d * (float)vaddvq_s32(acc) - dmin * (float)summs;
    }
    return sumf;
}

float K_NAME(k_dot_q5_k_q8_k)(int64_t n, const void *w, const void *a) {
    const k_block_q5_k *x = (const k_block_q5_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const uint8x16_t m4 = vdupq_n_u8(15), one = vdupq_n_u8(1), two = vdupq_n_u8(2);
    const int32x4_t z = vdupq_n_s32(0);
    float sumf = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = y[i].d * k_h2f(x[i].d);
        const float dmin = y[i].d * k_h2f(x[i].dmin);
        uint8_t sc[8], m[8];
        k_scales_mins(x[i].scales, sc, m);
        const int32_t summs = k_mins_dot(m, y[i].bsums);
        const uint8_t *q = x[i].qs;
        const int8_t *q8 = y[i].qs;
        uint8x16_t h0 = vld1q_u8(x[i].qh), h1 = vld1q_u8(x[i].qh + 16);
        int32x4_t acc = z;
        for (int c = 0; c < 4; c++, q += 32, q8 += 64) {
            uint8x16_t b0 = vld1q_u8(q), b1 = vld1q_u8(q + 16);
            uint8x16_t l0 = vorrq_u8(vandq_u8(b0, m4), vshlq_n_u8(vandq_u8(h0, one), 4));
            uint8x16_t l1 = vorrq_u8(vandq_u8(b1, m4), vshlq_n_u8(vandq_u8(h1, one), 4));
            uint8x16_t u0 = vorrq_u8(vshrq_n_u8(b0, 4), vshlq_n_u8(vandq_u8(h0, two), 3));
            uint8x16_t u1 = vorrq_u8(vshrq_n_u8(b1, 4), vshlq_n_u8(vandq_u8(h1, two), 3));
            h0 = vshrq_n_u8(h0, 2);
            h1 = vshrq_n_u8(h1, 2);
            int32x4_t lo = K_DOT16(z, vreinterpretq_s8_u8(l0), vld1q_s8(q8));
            lo = K_DOT16(lo, vreinterpretq_s8_u8(l1), vld1q_s8(q8 + 16));
            int32x4_t hi = K_DOT16(z, vreinterpretq_s8_u8(u0), vld1q_s8(q8 + 32));
            hi = K_DOT16(hi, vreinterpretq_s8_u8(u1), vld1q_s8(q8 + 48));
            acc = vmlaq_n_s32(acc, lo, sc[2 * c]);
            acc = vmlaq_n_s32(acc, hi, sc[2 * c + 1]);
        }
        sumf += d * (float)vaddvq_s32(acc) - dmin * (float)summs;
    }
    return sumf;
}

float K_NAME(k_dot_q6_k_q8_k)(int64_t n, const void *w, const void *a) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    const int8x16_t s32 = vdupq_n_s8(32);
    const int32x4_t z = vdupq_n_s32(0);
    float sumf = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = y[i].d * k_h2f(x[i].d);
        int32x4_t acc = z;
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = x[i].ql + 64 * h, *H = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            const int8_t *q8 = y[i].qs + 128 * h;
            for (int j = 0; j < 2; j++) { /* l = 16j .. 16j+15: scale group j (+2, +4, +6) */
                uint8x16_t la = vld1q_u8(L + 16 * j), lb = vld1q_u8(L + 32 + 16 * j);
                uint8x16_t hh = vld1q_u8(H + 16 * j);
                uint8x16_t u1 = vorrq_u8(vandq_u8(la, m4), vshlq_n_u8(vandq_u8(hh, m3), 4));
                uint8x16_t u2 = vorrq_u8(vandq_u8(lb, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 2), m3), 4));
                uint8x16_t u3 = vorrq_u8(vshrq_n_u8(la, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 4), m3), 4));
                uint8x16_t u4 = vorrq_u8(vshrq_n_u8(lb, 4), vshlq_n_u8(vshrq_n_u8(hh, 6), 4));
                const int8_t *p = q8 + 16 * j;
                int32x4_t s1 = K_DOT16(z, vsubq_s8(vreinterpretq_s8_u8(u1), s32), vld1q_s8(p));
                int32x4_t s2 = K_DOT16(z, vsubq_s8(vreinterpretq_s8_u8(u2), s32), vld1q_s8(p + 32));
                int32x4_t s3 = K_DOT16(z, vsubq_s8(vreinterpretq_s8_u8(u3), s32), vld1q_s8(p + 64));
                int32x4_t s4 = K_DOT16(z, vsubq_s8(vreinterpretq_s8_u8(u4), s32), vld1q_s8(p + 96));
                acc = vmlaq_n_s32(acc, s1, sc[j + 0]);
                acc = vmlaq_n_s32(acc, s2, sc[j + 2]);
                acc = vmlaq_n_s32(acc, s3, sc[j + 4]);
                acc = vmlaq_n_s32(acc, s4, sc[j + 6]);
            }
        }
        sumf += d * (float)vaddvq_s32(acc);
    }
    return sumf;
}

/* 32-element formats: two blocks per step with independent accumulators. */
static inline float32x4_t k_acc_block(float32x4_t acc, int32x4_t s, k_half dw, k_half da) {
    return vmlaq_n_f32(acc, vcvtq_f32_s32(s), k_h2f(dw) * k_h2f(da));
}

static inline int32x4_t k_q4_0_dot(const k_block_q4_0 *x, const k_block_q8_0 *y) {
    const uint8x16_t m4 = vdupq_n_u8(15);
    const int8x16_t s8 = vdupq_n_s8(8);
    uint8x16_t q = vld1q_u8(x->qs);
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), s8);
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), s8);
    int32x4_t s = K_DOT16(vdupq_n_s32(0), lo, vld1q_s8(y->qs));
    return K_DOT16(s, hi, vld1q_s8(y->qs + 16));
}

float K_NAME(k_dot_q4_0_q8_0)(int64_t n, const void *w, const void *a) {
    const k_block_q4_0 *x = (const k_block_q4_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const int64_t nb = n / K_QK;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        acc0 = k_acc_block(acc0, k_q4_0_dot(&x[i], &y[i]), x[i].d, y[i].d);
        acc1 = k_acc_block(acc1, k_q4_0_dot(&x[i + 1], &y[i + 1]), x[i + 1].d, y[i + 1].d);
    }
    if (i < nb) acc0 = k_acc_block(acc0, k_q4_0_dot(&x[i], &y[i]), x[i].d, y[i].d);
    return vaddvq_f32(vaddq_f32(acc0, acc1));
}

static inline int32x4_t k_q5_0_dot(const k_block_q5_0 *x, const k_block_q8_0 *y) {
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t m4 = vdupq_n_u8(15), b16 = vdupq_n_u8(16), bv = vld1q_u8(bit);
    const int8x16_t s16 = vdupq_n_s8(16);
    uint8x16_t q = vld1q_u8(x->qs);
    /* lane j of hl holds qh byte j/8 (elements 0..15), of hh byte 2 + j/8 (16..31) */
    uint8x16_t hl = vcombine_u8(vdup_n_u8(x->qh[0]), vdup_n_u8(x->qh[1]));
    uint8x16_t hh = vcombine_u8(vdup_n_u8(x->qh[2]), vdup_n_u8(x->qh[3]));
    uint8x16_t lo5 = vorrq_u8(vandq_u8(q, m4), vandq_u8(vtstq_u8(hl, bv), b16));
    uint8x16_t hi5 = vorrq_u8(vshrq_n_u8(q, 4), vandq_u8(vtstq_u8(hh, bv), b16));
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(lo5), s16);
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(hi5), s16);
    int32x4_t s = K_DOT16(vdupq_n_s32(0), lo, vld1q_s8(y->qs));
    return K_DOT16(s, hi, vld1q_s8(y->qs + 16));
}

float K_NAME(k_dot_q5_0_q8_0)(int64_t n, const void *w, const void *a) {
    const k_block_q5_0 *x = (const k_block_q5_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const int64_t nb = n / K_QK;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        acc0 = k_acc_block(acc0, k_q5_0_dot(&x[i], &y[i]), x[i].d, y[i].d);
        acc1 = k_acc_block(acc1, k_q5_0_dot(&x[i + 1], &y[i + 1]), x[i + 1].d, y[i + 1].d);
    }
    if (i < nb) acc0 = k_acc_block(acc0, k_q5_0_dot(&x[i], &y[i]), x[i].d, y[i].d);
    return vaddvq_f32(vaddq_f32(acc0, acc1));
}

static inline int32x4_t k_q8_0_dot(const k_block_q8_0 *x, const k_block_q8_0 *y) {
    int32x4_t s = K_DOT16(vdupq_n_s32(0), vld1q_s8(x->qs), vld1q_s8(y->qs));
    return K_DOT16(s, vld1q_s8(x->qs + 16), vld1q_s8(y->qs + 16));
}

float K_NAME(k_dot_q8_0_q8_0)(int64_t n, const void *w, const void *a) {
    const k_block_q8_0 *x = (const k_block_q8_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const int64_t nb = n / K_QK;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        acc0 = k_acc_block(acc0, k_q8_0_dot(&x[i], &y[i]), x[i].d, y[i].d);
        acc1 = k_acc_block(acc1, k_q8_0_dot(&x[i + 1], &y[i + 1]), x[i + 1].d, y[i + 1].d);
    }
    if (i < nb) acc0 = k_acc_block(acc0, k_q8_0_dot(&x[i], &y[i]), x[i].d, y[i].d);
    return vaddvq_f32(vaddq_f32(acc0, acc1));
}
