/*
 * quant_neon_arm64.c — NEON dequantization and activation quantization.
 *
 * Every function here gives the same bits as its _ref twin in quant_ref.c:
 * the float expressions are evaluated in the same order with separate
 * multiply and subtract instructions (never a fused multiply-add), and
 * rounding repeats the reference's nearest_int (see round4).
 */
#include <arm_neon.h>
#include <string.h>
#include "kernels_neon_arm64.h"

/* Store 8 / 16 floats from a vector of u8 or s8 quants times a scalar. */
static inline void store16_s8(float *dst, int8x16_t q, float32x4_t d) {
    int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    vst1q_f32(dst + 0,  vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
    vst1q_f32(dst + 4,  vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d));
    vst1q_f32(dst + 8,  vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
    vst1q_f32(dst + 12, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d));
}

/* dst = d*q - m for 16 unsigned quants (the K-quant "t = d*q; t - m" form). */
static inline void store16_u8_dm(float *dst, uint8x16_t q, float32x4_t d, float32x4_t m) {
    uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_high_u8(q);
    vst1q_f32(dst + 0,  vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)))), m));
    vst1q_f32(dst + 4,  vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_high_u16(lo))), m));
    vst1q_f32(dst + 8,  vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)))), m));
    vst1q_f32(dst + 12, vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_high_u16(hi))), m));
}

/* ---- dequantization ---- */

void k_dequant_f16_neon(const void *src, float *dst, int64_t n) {
    const uint16_t *s = (const uint16_t *)src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(s + i));
        vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
        vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
    }
    for (; i < n; i++) dst[i] = k_f16_to_f32(s[i]);
}

void k_dequant_q4_0_neon(const void *src, float *dst, int64_t n) {
    const k_block_q4_0 *b = (const k_block_q4_0 *)src;
    const uint8x16_t m4 = vdupq_n_u8(15);
    const int8x16_t s8 = vdupq_n_s8(8);
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float32x4_t d = vdupq_n_f32(k_h2f(b[i].d));
        uint8x16_t q = vld1q_u8(b[i].qs);
        int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), s8);
        int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), s8);
        store16_s8(dst, lo, d);
        store16_s8(dst + 16, hi, d);
    }
}

void k_dequant_q8_0_neon(const void *src, float *dst, int64_t n) {
    const k_block_q8_0 *b = (const k_block_q8_0 *)src;
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float32x4_t d = vdupq_n_f32(k_h2f(b[i].d));
        store16_s8(dst, vld1q_s8(b[i].qs), d);
        store16_s8(dst + 16, vld1q_s8(b[i].qs + 16), d);
    }
}

/* Q4_K (qh NULL) and Q5_K, chunk by chunk as the reference (quant_ref.c);
 * for Q5_K bit 2c of qh is 16 for the low nibbles, bit 2c+1 for the high. */
static inline __attribute__((always_inline)) void dequant_q45k(const uint8_t *scales, float d, float dmin,
                                                               const uint8_t *q, const uint8_t *qh, float *dst) {
    const uint8x16_t m4 = vdupq_n_u8(15);
    uint8x16_t h0 = vdupq_n_u8(0), h1 = h0;
    if (qh) h0 = vld1q_u8(qh), h1 = vld1q_u8(qh + 16);
    for (int c = 0; c < 4; c++, q += 32, dst += 64) {
        float dm[4];
        k_q4k_chunk_dm(scales, c, d, dmin, dm);
        const float32x4_t d0 = vdupq_n_f32(dm[0]), mm0 = vdupq_n_f32(dm[1]);
        const float32x4_t d1 = vdupq_n_f32(dm[2]), mm1 = vdupq_n_f32(dm[3]);
        const uint8x16_t q0 = vld1q_u8(q), q1 = vld1q_u8(q + 16);
        uint8x16_t u[4] = {vandq_u8(q0, m4), vandq_u8(q1, m4), vshrq_n_u8(q0, 4), vshrq_n_u8(q1, 4)};
        if (qh) k_q5k_chunk_neon(q0, q1, &h0, &h1, u);
        store16_u8_dm(dst + 0, u[0], d0, mm0);
        store16_u8_dm(dst + 16, u[1], d0, mm0);
        store16_u8_dm(dst + 32, u[2], d1, mm1);
        store16_u8_dm(dst + 48, u[3], d1, mm1);
    }
}

/* the rows of Q4_K (q5 = 0) or Q5_K (q5 = 1) blocks, block by block */
static inline __attribute__((always_inline)) void dequant_q45k_blocks(const int q5, const void *src, float *dst,
                                                                      int64_t n) {
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK) {
        if (q5) {
            const k_block_q5_k *b = (const k_block_q5_k *)src + i;
            dequant_q45k(b->scales, k_h2f(b->d), k_h2f(b->dmin), b->qs, b->qh, dst);
        } else {
            const k_block_q4_k *b = (const k_block_q4_k *)src + i;
            dequant_q45k(b->scales, k_h2f(b->d), k_h2f(b->dmin), b->qs, NULL, dst);
        }
    }
}

void k_dequant_q4_k_neon(const void *src, float *dst, int64_t n) { dequant_q45k_blocks(0, src, dst, n); }
void k_dequant_q5_k_neon(const void *src, float *dst, int64_t n) { dequant_q45k_blocks(1, src, dst, n); }

void k_dequant_q6_k_neon(const void *src, float *dst, int64_t n) {
    const k_block_q6_k *b = (const k_block_q6_k *)src;
    const int8x16_t s32 = vdupq_n_s8(32);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = k_h2f(b[i].d);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *L = b[i].ql + 64 * h, *H = b[i].qh + 32 * h;
            const int8_t *sc = b[i].scales + 8 * h;
            for (int j = 0; j < 2; j++) { /* l = 16j .. 16j+15, scale group j */
                uint8x16_t u[4];
                k_q6k_quads_neon(L, H, j, u);
                for (int k = 0; k < 4; k++)
                    store16_s8(dst + 16 * j + 32 * k, vsubq_s8(vreinterpretq_s8_u8(u[k]), s32),
                               vdupq_n_f32(d * (float)sc[j + 2 * k]));
            }
        }
    }
}

/* ---- activation quantization ---- */

/* Round 16 floats (times s) to int8 exactly as the reference's nearest_int
 * and (int8_t) cast do: add 1.5 * 2^23 and keep the low mantissa bits (round
 * half to even, the same as vcvtnq_s32_f32 for |v| < 2^22), then narrow by
 * truncation. Doing it the reference's way rather than with vcvtnq keeps the
 * bytes identical even for degenerate blocks (an iscale that overflows to
 * inf on subnormal inputs, inf or NaN inputs). Q8_K's clamp to 127 is
 * applied before the narrowing, as in the reference. */
static inline int32x4_t round4(const float *x, float32x4_t s) {
    const float32x4_t magic = vdupq_n_f32(12582912.0f);
    float32x4_t f = vaddq_f32(vmulq_f32(s, vld1q_f32(x)), magic);
    int32x4_t i = vandq_s32(vreinterpretq_s32_f32(f), vdupq_n_s32(0x007fffff));
    return vsubq_s32(i, vdupq_n_s32(0x00400000));
}

static inline int8x16_t round16(const float *x, float32x4_t s, int clamp127) {
    int32x4_t i0 = round4(x + 0, s), i1 = round4(x + 4, s);
    int32x4_t i2 = round4(x + 8, s), i3 = round4(x + 12, s);
    if (clamp127) {
        const int32x4_t c = vdupq_n_s32(127);
        i0 = vminq_s32(i0, c); i1 = vminq_s32(i1, c);
        i2 = vminq_s32(i2, c); i3 = vminq_s32(i3, c);
    }
    int16x8_t a = vcombine_s16(vmovn_s32(i0), vmovn_s32(i1));
    int16x8_t b = vcombine_s16(vmovn_s32(i2), vmovn_s32(i3));
    return vcombine_s8(vmovn_s16(a), vmovn_s16(b));
}

void k_quantize_q8_k_neon(const float *x, void *dst, int64_t n) {
    k_block_q8_k *y = (k_block_q8_k *)dst;
    for (int64_t i = 0; i < n / K_QKK; i++, x += K_QKK) {
        float32x4_t av = vdupq_n_f32(0);
        for (int j = 0; j < K_QKK; j += 4) av = vmaxnmq_f32(av, vabsq_f32(vld1q_f32(x + j)));
        const float amax = vmaxnmvq_f32(av);
        if (!(amax > 0)) {
            k_q8k_zero_block(&y[i]);
            continue;
        }
        const float max = k_q8k_signed_max(x, amax);
        const float iscale = -127.f / max;
        const float32x4_t s = vdupq_n_f32(iscale);
        for (int g = 0; g < 16; g++) {
            int8x16_t q = round16(x + 16 * g, s, 1);
            vst1q_s8(y[i].qs + 16 * g, q);
            y[i].bsums[g] = (int16_t)vaddlvq_s8(q);
        }
        y[i].d = 1 / iscale;
    }
}

void k_quantize_q8_0_neon(const float *x, void *dst, int64_t n) {
    k_block_q8_0 *y = (k_block_q8_0 *)dst;
    for (int64_t i = 0; i < n / K_QK; i++, x += K_QK) {
        float32x4_t av = vabsq_f32(vld1q_f32(x));
        for (int j = 4; j < K_QK; j += 4) av = vmaxnmq_f32(av, vabsq_f32(vld1q_f32(x + j)));
        const float amax = vmaxnmvq_f32(av);
        const float d = amax / 127.f;
        const float id = amax != 0 ? 127.f / amax : 0.f;
        y[i].d = k_f32_to_f16(d);
        const float32x4_t s = vdupq_n_f32(id);
        vst1q_s8(y[i].qs, round16(x, s, 0));
        vst1q_s8(y[i].qs + 16, round16(x + 16, s, 0));
    }
}

void k_quantize_f16_neon(const float *x, void *dst, int64_t n) {
    k_half *y = (k_half *)dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float16x8_t h = vcombine_f16(vcvt_f16_f32(vld1q_f32(x + i)), vcvt_f16_f32(vld1q_f32(x + i + 4)));
        vst1q_u16(y + i, vreinterpretq_u16_f16(h));
    }
    for (; i < n; i++) y[i] = k_f32_to_f16(x[i]);
}

/* ---- IQ4_NL / IQ4_XS: d (times the IQ4_XS sub-block factor) x level ---- */

static inline void store32_iq4(float *dst, int8x16_t table, const uint8_t *qs, float32x4_t d) {
    const uint8x16_t q = vld1q_u8(qs);
    store16_s8(dst, vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(15))), d);
    store16_s8(dst + 16, vqtbl1q_s8(table, vshrq_n_u8(q, 4)), d);
}

void k_dequant_iq4_nl_neon(const void *src, float *dst, int64_t n) {
    const k_block_iq4_nl *b = (const k_block_iq4_nl *)src;
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) store32_iq4(dst, table, b[i].qs, vdupq_n_f32(k_h2f(b[i].d)));
}

void k_dequant_iq4_xs_neon(const void *src, float *dst, int64_t n) {
    const k_block_iq4_xs *b = (const k_block_iq4_xs *)src;
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = k_h2f(b[i].d);
        for (int s = 0; s < 8; s++, dst += 32) {
            const float dl = d * (float)k_iq4xs_scale(&b[i], s); /* rounded to f32 first, as ref */
            store32_iq4(dst, table, b[i].qs + 16 * s, vdupq_n_f32(dl));
        }
    }
}
