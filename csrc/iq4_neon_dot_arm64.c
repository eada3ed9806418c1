/*
 * iq4_neon_dot_arm64.c — IQ4_NL and IQ4_XS dots and tiles with the dotprod
 * extension (SDOT, k_sdot); the plain-NEON twins and the description of
 * the summation orders are in csrc/iq4_neon_arm64.c and csrc/iq4_ref.c.
 * SDOT gives lane l = the products of elements 4l..4l+3 directly, the
 * integer lanes of every other IQ4 kernel, so the results have their bits.
 *
 * SDOT is k_sdot (sdot_arm64.h: inline assembly, no -march flag). Handed
 * out only when the CPU has dotprod (csrc/dispatch_arm64.c).
 */
#include "sdot_arm64.h"
#include "kernels_neon_arm64.h"
#include <math.h>
#include <stddef.h>
#include <stdint.h>

K_DOTPROD_BEGIN

typedef k_block_iq4_nl blk_iq4_nl;
typedef k_block_iq4_xs blk_iq4_xs;
typedef k_block_q8_0 blk_q8_0;
typedef k_block_q8_k blk_q8_k;

#define K_INLINE static inline __attribute__((always_inline))

/* levels of the 16 low nibbles (elements 0..15) and 16 high nibbles (16..31) */
struct lv32 { int8x16_t lo, hi; };

K_INLINE struct lv32 levels32(int8x16_t table, const uint8_t *qs) {
    const uint8x16_t b = vld1q_u8(qs);
    struct lv32 v = {vqtbl1q_s8(table, vandq_u8(b, vdupq_n_u8(15))), vqtbl1q_s8(table, vshrq_n_u8(b, 4))};
    return v;
}

/* ---- IQ4_NL x Q8_0 ---- */

/* one token, vec_dot's order: f[r][0] even blocks, f[r][1] odd blocks (each
 * as lanes 0..3 | 4..7), summed before the hsum; odd last block by fmaf */
K_INLINE void iq4nl_rows(const int R, int64_t n, const char *w, size_t row_bytes, const void *a, float *out) {
    const blk_q8_0 *y = (const blk_q8_0 *)a;
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    const int32x4_t zero = vdupq_n_s32(0);
    const int64_t nb = n / 32, npair = nb & ~(int64_t)1;
    float32x4_t f[4][2][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++) f[r][0][0] = f[r][0][1] = f[r][1][0] = f[r][1][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < nb; i++) {
        const int8x16_t a0 = vld1q_s8(y[i].qs), a1 = vld1q_s8(y[i].qs + 16);
        const float dy = k_h2f(y[i].d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const blk_iq4_nl *x = (const blk_iq4_nl *)(w + (size_t)r * row_bytes) + i;
            const struct lv32 q = levels32(table, x->qs);
            const int32x4_t s0 = k_sdot(zero, q.lo, a0), s1 = k_sdot(zero, q.hi, a1);
            const float d = k_h2f(x->d) * dy;
            if (i < npair) {
                float32x4_t *g = f[r][i & 1];
                g[0] = vfmaq_f32(g[0], vcvtq_f32_s32(s0), vdupq_n_f32(d));
                g[1] = vfmaq_f32(g[1], vcvtq_f32_s32(s1), vdupq_n_f32(d));
            } else { /* the odd last block, after the pairs' total */
                const float total = k_hsum8(vaddq_f32(f[r][0][0], f[r][1][0]), vaddq_f32(f[r][0][1], f[r][1][1]));
                out[r] = fmaf(d, (float)vaddvq_s32(vaddq_s32(s0, s1)), total);
            }
        }
    }
    if (npair == nb)
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++)
            out[r] = k_hsum8(vaddq_f32(f[r][0][0], f[r][1][0]), vaddq_f32(f[r][0][1], f[r][1][1]));
}

/* one row x T tokens of a batch, tinyBLAS_Q0's order */
K_INLINE void iq4nl_toks(const int T, int64_t n, const void *w, const char *a, size_t a_row_bytes, float *out) {
    const blk_iq4_nl *x = (const blk_iq4_nl *)w;
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    const int32x4_t zero = vdupq_n_s32(0);
    float32x4_t f[4][2];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) f[k][0] = f[k][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / 32; i++) {
        const struct lv32 q = levels32(table, x[i].qs);
        const float dx = k_h2f(x[i].d);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const blk_q8_0 *y = (const blk_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            const float32x4_t d = vdupq_n_f32(dx * k_h2f(y->d));
            f[k][0] = vfmaq_f32(f[k][0], vcvtq_f32_s32(k_sdot(zero, q.lo, vld1q_s8(y->qs))), d);
            f[k][1] = vfmaq_f32(f[k][1], vcvtq_f32_s32(k_sdot(zero, q.hi, vld1q_s8(y->qs + 16))), d);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) out[k] = k_hsum8(f[k][0], f[k][1]);
}

/* ---- IQ4_XS x Q8_K ---- */

/* R rows x T tokens into out[k * R + r]: int32 lanes over the 8 sub-blocks,
 * one FMA per super-block. The scales apply by parts (as the Q4_K dots of
 * dot_body_arm64.h): one chain of SDOTs per lane set, times the
 * differences ls[s] - ls[s+1] (ls[8] = 0), lane multiply-accumulates;
 * the integer lanes are the same numbers. */
K_INLINE void iq4xs_tile(const int R, const int T, int64_t n, const char *w, size_t row_bytes,
                           const char *a, size_t a_row_bytes, float *out) {
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    const int32x4_t zero = vdupq_n_s32(0);
    float32x4_t f[4][4][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) f[r][k][0] = f[r][k][1] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / 256; i++) {
        const blk_iq4_xs *x[4];
        const blk_q8_k *y[4];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) x[r] = (const blk_iq4_xs *)(w + (size_t)r * row_bytes) + i;
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) y[k] = (const blk_q8_k *)(a + (size_t)k * a_row_bytes) + i;
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            /* ds0 lane s = ls[s] - ls[s+1] for s < 4, ds1 for s = 4..7 (ls = scale - 32) */
            const int16x8_t s16 =
                vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vcreate_u8(k_iq4xs_scales8(x[r])))), vdupq_n_s16(32));
            const int32x4_t s0 = vmovl_s16(vget_low_s16(s16)), s1 = vmovl_high_s16(s16);
            const int32x4_t ds0 = vsubq_s32(s0, vextq_s32(s0, s1, 1)), ds1 = vsubq_s32(s1, vextq_s32(s1, zero, 1));
            int32x4_t clo[4], chi[4], lo[4], hi[4];
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) clo[k] = chi[k] = zero;
#define XS_SUB(s, DS, ln)                                                                       \
    do {                                                                                        \
        const struct lv32 q = levels32(table, x[r]->qs + 16 * (s));                             \
        _Pragma("GCC unroll 8")                                                                 \
        for (int k = 0; k < T; k++) {                                                           \
            clo[k] = k_sdot(clo[k], q.lo, vld1q_s8(y[k]->qs + 32 * (s)));                       \
            chi[k] = k_sdot(chi[k], q.hi, vld1q_s8(y[k]->qs + 32 * (s) + 16));                  \
            if ((s) == 0) {                                                                     \
                lo[k] = vmulq_laneq_s32(clo[k], DS, ln);                                        \
                hi[k] = vmulq_laneq_s32(chi[k], DS, ln);                                        \
            } else {                                                                            \
                lo[k] = vmlaq_laneq_s32(lo[k], clo[k], DS, ln);                                 \
                hi[k] = vmlaq_laneq_s32(hi[k], chi[k], DS, ln);                                 \
            }                                                                                   \
        }                                                                                       \
    } while (0)
            XS_SUB(0, ds0, 0); XS_SUB(1, ds0, 1); XS_SUB(2, ds0, 2); XS_SUB(3, ds0, 3);
            XS_SUB(4, ds1, 0); XS_SUB(5, ds1, 1); XS_SUB(6, ds1, 2); XS_SUB(7, ds1, 3);
#undef XS_SUB
            const float dx = k_h2f(x[r]->d);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) {
                const float32x4_t d = vdupq_n_f32(dx * y[k]->d);
                f[r][k][0] = vfmaq_f32(f[r][k][0], vcvtq_f32_s32(lo[k]), d);
                f[r][k][1] = vfmaq_f32(f[r][k][1], vcvtq_f32_s32(hi[k]), d);
            }
        }
    }
    k_hsum8_tile(R, T, f, out);
}

#define IQ4_TARGET
#include "iq4_piece.h"
#include "mm_driver.h"

IQ4_SET(k_dot_iq4_nl_q8_0_neon_dot, k_dot_iq4_xs_q8_k_neon_dot, k_mm_iq4_nl_neon_dot, k_mm_iq4_xs_neon_dot)
K_DOTPROD_END
