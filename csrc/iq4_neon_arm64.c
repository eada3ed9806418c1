/* iq4_neon_arm64.c — IQ4_NL and IQ4_XS dots and tiles for every arm64 CPU
 * (plain Advanced SIMD; the dotprod twins are csrc/iq4_neon_dot_arm64.c).
 *
 * vqtbl1q_s8 maps 16 nibbles to their signed levels (k_iq4nl_values); the
 * int8 dot of 16 levels with 16 activations is built from widening
 * multiplies (vmull_s8) and pairwise adds, lane l = elements 4l..4l+3 — the
 * lanes SDOT would give. A 32-element group is two such halves, x86's
 * lanes 0..3 (elements 0..15, the low nibbles) and 4..7 (16..31, the high
 * nibbles), so the integer lanes are iq4_ref.c's and the f32 steps (FMA per
 * block, hsum8 = (l + l+4), then (0+2) + (1+3)) are the same: these kernels
 * give the bits of ref and of the x86 kernels, including IQ4_NL's two orders
 * (vec_dot for one token, tinyBLAS_Q0 for a batch; see iq4_ref.c). */
#include <arm_neon.h>
#include <math.h>
#include "kernels_neon_arm64.h"

#define K_INLINE static inline __attribute__((always_inline))

/* lane l = q[4l]*a[4l] + ... + q[4l+3]*a[4l+3]; |q|, |a| <= 127, so the
 * int16 products are exact */
K_INLINE int32x4_t iq4_dot16(int8x16_t q, int8x16_t a) {
    const int32x4_t p0 = vpaddlq_s16(vmull_s8(vget_low_s8(q), vget_low_s8(a)));
    const int32x4_t p1 = vpaddlq_s16(vmull_high_s8(q, a));
    return vpaddq_s32(p0, p1);
}

/* the levels of one 32-group: elements 0..15 (low nibbles), 16..31 (high) */
K_INLINE void iq4_levels(int8x16_t table, const uint8_t *qs, int8x16_t *qlo, int8x16_t *qhi) {
    const uint8x16_t b = vld1q_u8(qs);
    *qlo = vqtbl1q_s8(table, vandq_u8(b, vdupq_n_u8(15)));
    *qhi = vqtbl1q_s8(table, vshrq_n_u8(b, 4));
}

/* one 32-group dotted with a[0..31]: lanes 0..3 and 4..7 */
K_INLINE void iq4_group(int8x16_t table, const uint8_t *qs, const int8_t *a, int32x4_t *lo, int32x4_t *hi) {
    int8x16_t qlo, qhi;
    iq4_levels(table, qs, &qlo, &qhi);
    *lo = iq4_dot16(qlo, vld1q_s8(a));
    *hi = iq4_dot16(qhi, vld1q_s8(a + 16));
}

/* ---- IQ4_NL x Q8_0 ---- */

/* R rows x one token in vec_dot's order: blocks 2k and 2k+1 into two lane
 * sets, added lane by lane before the hsum; an odd last block as
 * fmaf(d, its integer sum, total) */
K_INLINE void iq4nl_rows(const int R, int64_t n, const char *w, size_t row_bytes, const void *a, float *out) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    const int64_t nb = n / K_QK;
    float32x4_t acc[4][2][2]; /* [row][even/odd block][lanes 0..3 / 4..7] */
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int h = 0; h < 2; h++) acc[r][h][0] = acc[r][h][1] = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        _Pragma("GCC unroll 8")
        for (int h = 0; h < 2; h++) {
            const float dy = k_h2f(y[i + h].d);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < R; r++) {
                const k_block_iq4_nl *x = (const k_block_iq4_nl *)(w + (size_t)r * row_bytes) + i + h;
                int32x4_t lo, hi;
                iq4_group(table, x->qs, y[i + h].qs, &lo, &hi);
                const float32x4_t d = vdupq_n_f32(k_h2f(x->d) * dy);
                acc[r][h][0] = vfmaq_f32(acc[r][h][0], vcvtq_f32_s32(lo), d);
                acc[r][h][1] = vfmaq_f32(acc[r][h][1], vcvtq_f32_s32(hi), d);
            }
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        out[r] = k_hsum8(vaddq_f32(acc[r][0][0], acc[r][1][0]), vaddq_f32(acc[r][0][1], acc[r][1][1]));
    if (i < nb) {
        const float dy = k_h2f(y[i].d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_iq4_nl *x = (const k_block_iq4_nl *)(w + (size_t)r * row_bytes) + i;
            int32x4_t lo, hi;
            iq4_group(table, x->qs, y[i].qs, &lo, &hi);
            out[r] = fmaf(k_h2f(x->d) * dy, (float)vaddvq_s32(vaddq_s32(lo, hi)), out[r]);
        }
    }
}

/* one row x T tokens of a batch in tinyBLAS_Q0's order (one lane set per
 * token, blocks in order); the levels are looked up once for the T tokens */
K_INLINE void iq4nl_toks(const int T, int64_t n, const void *w, const char *a, size_t a_row_bytes, float *out) {
    const k_block_iq4_nl *x = (const k_block_iq4_nl *)w;
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    float32x4_t lo_acc[4], hi_acc[4];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) lo_acc[k] = hi_acc[k] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / K_QK; i++) {
        int8x16_t qlo, qhi;
        iq4_levels(table, x[i].qs, &qlo, &qhi);
        const float dx = k_h2f(x[i].d);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            const float32x4_t d = vdupq_n_f32(dx * k_h2f(y->d));
            lo_acc[k] = vfmaq_f32(lo_acc[k], vcvtq_f32_s32(iq4_dot16(qlo, vld1q_s8(y->qs))), d);
            hi_acc[k] = vfmaq_f32(hi_acc[k], vcvtq_f32_s32(iq4_dot16(qhi, vld1q_s8(y->qs + 16))), d);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) out[k] = k_hsum8(lo_acc[k], hi_acc[k]);
}

/* ---- IQ4_XS x Q8_K ---- */

/* R rows x T tokens, out[k * R + r]: per super-block the sub-blocks' lanes
 * times their scales summed in int32, one FMA with d * y.d per block */
K_INLINE void iq4xs_tile(const int R, const int T, int64_t n, const char *w, size_t row_bytes,
                              const char *a, size_t a_row_bytes, float *out) {
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    float32x4_t acc[4][4][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) acc[r][k][0] = acc[r][k][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int32x4_t sum[4][4][2];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++)
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) sum[r][k][0] = sum[r][k][1] = vdupq_n_s32(0);
        uint64_t sc[4];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) sc[r] = k_iq4xs_scales8((const k_block_iq4_xs *)(w + (size_t)r * row_bytes) + i);
        _Pragma("GCC unroll 8")
        for (int s = 0; s < 8; s++) {
            _Pragma("GCC unroll 8")
            for (int r = 0; r < R; r++) {
                const k_block_iq4_xs *x = (const k_block_iq4_xs *)(w + (size_t)r * row_bytes) + i;
                const int32_t ls = (int32_t)((sc[r] >> (8 * s)) & 63) - 32;
                int8x16_t qlo, qhi;
                iq4_levels(table, x->qs + 16 * s, &qlo, &qhi);
                _Pragma("GCC unroll 8")
                for (int k = 0; k < T; k++) {
                    const int8_t *ya = ((const k_block_q8_k *)(a + (size_t)k * a_row_bytes) + i)->qs + 32 * s;
                    sum[r][k][0] = vmlaq_n_s32(sum[r][k][0], iq4_dot16(qlo, vld1q_s8(ya)), ls);
                    sum[r][k][1] = vmlaq_n_s32(sum[r][k][1], iq4_dot16(qhi, vld1q_s8(ya + 16)), ls);
                }
            }
        }
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const float dx = k_h2f(((const k_block_iq4_xs *)(w + (size_t)r * row_bytes) + i)->d);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) {
                const float32x4_t d = vdupq_n_f32(dx * ((const k_block_q8_k *)(a + (size_t)k * a_row_bytes) + i)->d);
                acc[r][k][0] = vfmaq_f32(acc[r][k][0], vcvtq_f32_s32(sum[r][k][0]), d);
                acc[r][k][1] = vfmaq_f32(acc[r][k][1], vcvtq_f32_s32(sum[r][k][1]), d);
            }
        }
    }
    k_hsum8_tile(R, T, acc, out);
}

#define IQ4_TARGET
#include "iq4_piece.h"
#include "mm_driver.h"

IQ4_SET(k_dot_iq4_nl_q8_0_neon, k_dot_iq4_xs_q8_k_neon, k_mm_iq4_nl_neon, k_mm_iq4_xs_neon)
