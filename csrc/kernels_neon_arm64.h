/*
 * kernels_neon_arm64.h — prototypes of the arm64 kernels (private to csrc,
 * csrc/dotprod and csrc/tests). Same signatures as the _ref kernels in
 * kernels.h.
 *
 *   _neon      plain Advanced SIMD, every arm64 CPU (csrc/quant_neon_arm64.c, dot_neon_arm64.c)
 *   _neon_dot  SDOT kernels (*_neon_dot_arm64.c, k_sdot of sdot_arm64.h);
 *              only called when the CPU has dotprod
 *   _neon_i8mm USMMLA kernels (*_neon_i8mm_arm64.c, k_usmmla); only called
 *              when the CPU has dotprod and i8mm
 */
#ifndef WOOLLY_KERNELS_NEON_ARM64_H
#define WOOLLY_KERNELS_NEON_ARM64_H

#include <arm_neon.h>
#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared through the function types of kernels.h.
 *
 * The integer dots and k_matmul_q tiles of both sets (_neon: widening
 * multiplies; _neon_dot: SDOT), each set's written out under these names
 * by ARM_DOT_SET (dot_body_arm64.h: Q4_K, Q5_K, Q6_K, Q4_0, Q5_0, Q8_0),
 * Q23_SET (q2k_q3k_set_arm64.h), IQ4_SET (iq4_piece.h) and MX_SET
 * (mxfp4_neon_tile.h). The tiles give the dots' bits; the IQ4 and MXFP4
 * ones run 4 rows x 1 token or 1 row x 4 tokens through k_mm_run, IQ4_NL
 * batches in the batch order, the others 1 row x 4 tokens. */
k_dot_kernel k_dot_q2_k_q8_k_neon, k_dot_q3_k_q8_k_neon, k_dot_q4_k_q8_k_neon, k_dot_q5_k_q8_k_neon,
    k_dot_q6_k_q8_k_neon, k_dot_q4_0_q8_0_neon, k_dot_q5_0_q8_0_neon, k_dot_q8_0_q8_0_neon,
    k_dot_iq4_nl_q8_0_neon, k_dot_iq4_xs_q8_k_neon, k_dot_mxfp4_q8_0_neon;
k_mm_tile_kernel k_mm_q2_k_neon, k_mm_q3_k_neon, k_mm_q4_k_neon, k_mm_q5_k_neon, k_mm_q6_k_neon,
    k_mm_q4_0_neon, k_mm_q5_0_neon, k_mm_q8_0_neon, k_mm_iq4_nl_neon, k_mm_iq4_xs_neon, k_mm_mxfp4_neon;
k_dot_kernel k_dot_q2_k_q8_k_neon_dot, k_dot_q3_k_q8_k_neon_dot, k_dot_q4_k_q8_k_neon_dot,
    k_dot_q5_k_q8_k_neon_dot, k_dot_q6_k_q8_k_neon_dot, k_dot_q4_0_q8_0_neon_dot, k_dot_q5_0_q8_0_neon_dot,
    k_dot_q8_0_q8_0_neon_dot, k_dot_iq4_nl_q8_0_neon_dot, k_dot_iq4_xs_q8_k_neon_dot, k_dot_mxfp4_q8_0_neon_dot;
k_mm_tile_kernel k_mm_q2_k_neon_dot, k_mm_q3_k_neon_dot, k_mm_q4_k_neon_dot, k_mm_q5_k_neon_dot,
    k_mm_q6_k_neon_dot, k_mm_q4_0_neon_dot, k_mm_q5_0_neon_dot, k_mm_q8_0_neon_dot,
    k_mm_iq4_nl_neon_dot, k_mm_iq4_xs_neon_dot, k_mm_mxfp4_neon_dot;

/* plain NEON only, which the SDOT set shares: the float dots
 * (dot_neon_arm64.c), dequantization (quant_neon_arm64.c; Q2_K / Q3_K in
 * q2k_q3k_neon_arm64.c, MXFP4 in mxfp4_neon_arm64.c) and activation
 * quantization (quant_neon_arm64.c) */
k_dot_kernel k_dot_f16_f16_neon, k_dot_f32_f32_neon;
k_dequant_kernel k_dequant_f16_neon, k_dequant_q4_0_neon, k_dequant_q8_0_neon, k_dequant_q2_k_neon,
    k_dequant_q3_k_neon, k_dequant_q4_k_neon, k_dequant_q5_k_neon, k_dequant_q6_k_neon,
    k_dequant_iq4_nl_neon, k_dequant_iq4_xs_neon, k_dequant_mxfp4_neon;
k_quantize_kernel k_quantize_q8_k_neon, k_quantize_q8_0_neon, k_quantize_f16_neon;

/* Packed (row-interleaved) weights of the dotprod set, pack_neon_dot_arm64.c:
 * k_pack_<t>_x<G>_neon_dot and its tile over packed groups of G rows */
k_pack_kernel k_pack_q4_k_x4_neon_dot, k_pack_q5_k_x4_neon_dot, k_pack_q6_k_x4_neon_dot, k_pack_q8_0_x8_neon_dot,
    k_pack_iq4_xs_x4_neon_dot;
/* MXFP4 x4, pack_neon_mxfp4_arm64.c (the i8mm set inherits it) */
k_pack_kernel k_pack_mxfp4_x4_neon_dot;
k_mm_tile_kernel k_mm_packed_mxfp4_x4_neon_dot;
/* USMMLA tiles over the dotprod set's packed layouts, pack_neon_i8mm_arm64.c */
k_mm_tile_kernel k_mm_packed_q4_k_x4_neon_i8mm, k_mm_packed_q5_k_x4_neon_i8mm;
k_mm_tile_kernel k_mm_packed_q4_k_x4_neon_dot, k_mm_packed_q5_k_x4_neon_dot, k_mm_packed_q6_k_x4_neon_dot,
    k_mm_packed_q8_0_x8_neon_dot, k_mm_packed_iq4_xs_x4_neon_dot;
/* their Q4_K and Q5_K pieces (mm_driver.h's mm_pack_piece_fn), which the
 * i8mm tiles run for single tokens, and for batches of 4 and 2 tokens
 * (_t4, _t2: any multiple of 4 rows) */
void k_mm_piece_q4_k_x4_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *y, int64_t y_stride);
void k_mm_piece_q5_k_x4_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *y, int64_t y_stride);
void k_mm_piece_q4_k_x4_t4_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                    size_t a_row_bytes, float *y, int64_t y_stride);
void k_mm_piece_q4_k_x4_t2_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                    size_t a_row_bytes, float *y, int64_t y_stride);
void k_mm_piece_q5_k_x4_t4_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                    size_t a_row_bytes, float *y, int64_t y_stride);
void k_mm_piece_q5_k_x4_t2_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                    size_t a_row_bytes, float *y, int64_t y_stride);

k_swiglu_kernel k_swiglu_neon;                                        /* ops_neon_arm64.c */
k_rmsnorm_kernel k_rmsnorm_neon;                                      /* ops_neon_arm64.c */
k_rope_kernel k_rope_neon;                                            /* ops_neon_arm64.c */
k_add_kernel k_add_neon;                                              /* ops_neon_arm64.c */
k_attn_h_kernel k_attention_f16acc_neon, k_attention_tiled_neon;      /* attn_neon_arm64.c */
k_attn_kvq_kernel k_attention_kvq_neon;                               /* attn_neon_arm64.c */
k_sgemm_kernel k_sgemm_neon;

#ifdef __cplusplus
}
#endif

/* ---- helpers of the kernel files (static inline) ---- */

/* one f16 to f32 */
static inline __attribute__((always_inline)) float k_h2f(k_half h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* ((v0 + v2) + (v1 + v3)), the tail of the x86 horizontal sum */
static inline __attribute__((always_inline)) float k_hsum4(float32x4_t v) {
    float32x2_t t = vadd_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

/* 8 lanes held as lo (0..3) and hi (4..7): (l + l+4), then k_hsum4 */
static inline __attribute__((always_inline)) float k_hsum8(float32x4_t lo, float32x4_t hi) {
    return k_hsum4(vaddq_f32(lo, hi));
}

/* the end of an R rows x T tokens tile (R, T <= 4, constants):
 * out[k * R + r] = k_hsum8 of acc[r][k] (lanes 0..3, 4..7) */
static inline __attribute__((always_inline)) void k_hsum8_tile(const int R, const int T, float32x4_t acc[4][4][2],
                                                               float *out) {
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) out[k * R + r] = k_hsum8(acc[r][k][0], acc[r][k][1]);
}

/* The piece (mm_driver.h) of a tile that runs one row x 4 tokens (dot4,
 * MM_T4) and one row x one token (dot1), for k_mm_run; static, in the
 * file that expands it. */
#define K_NEON_PIECE_T4(name, dot4, dot1)                                                                      \
    static void name(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a, \
                     size_t a_row_bytes, float *out) {                                                         \
        (void)batch, (void)row_bytes, (void)rows;                                                              \
        if (toks == 4) dot4(n, w, a, a_row_bytes, out);                                                        \
        else out[0] = dot1(n, w, a);                                                                           \
    }

/* Packed Q4_K / Q5_K x4 blocks (pack_neon_dot_arm64.c,
 * pack_neon_i8mm_arm64.c): the mins of the 4 rows, from the 6-bit scale
 * bytes S0, S1 and the top bits N, widened to int16 (n[j]: min 2j of rows
 * 0..3 in lanes 0..3, min 2j+1 in lanes 4..7) */
static inline __attribute__((always_inline)) void k_q45k_x4_mins_neon(uint8x16_t S0, uint8x16_t S1, uint8x16_t N,
                                                                      int16x8_t n[4]) {
    const uint8x16_t mn0 = vsliq_n_u8(N, vshrq_n_u8(S0, 6), 4);                /* mins 0..3 */
    const uint8x16_t mn1 = vsliq_n_u8(vshrq_n_u8(N, 4), vshrq_n_u8(S1, 6), 4); /* mins 4..7 */
    n[0] = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn0)));
    n[1] = vreinterpretq_s16_u16(vmovl_high_u8(mn0));
    n[2] = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mn1)));
    n[3] = vreinterpretq_s16_u16(vmovl_high_u8(mn1));
}

/* Asm: the 8 integer lanes of a pass (v8-v15) converted to f32 in place,
 * the float step of the 4-token pieces and the M2's tiles. */
#define NEON_SCVTF_V8_V15                                                                            \
    "scvtf v8.4s, v8.4s\n\t"                                                                         \
    "scvtf v9.4s, v9.4s\n\t"                                                                         \
    "scvtf v10.4s, v10.4s\n\t"                                                                       \
    "scvtf v11.4s, v11.4s\n\t"                                                                       \
    "scvtf v12.4s, v12.4s\n\t"                                                                       \
    "scvtf v13.4s, v13.4s\n\t"                                                                       \
    "scvtf v14.4s, v14.4s\n\t"                                                                       \
    "scvtf v15.4s, v15.4s\n\t"

/* The same in the asm loops over packed Q4_K / Q5_K x4 blocks (%[o] at the
 * block): d (v17) and dmin (v18) of the 4 rows as f32, the scale bytes S0
 * (v19) and S1 (v20), and the mins n[0..3] as above in v0-v3; clobbers
 * v16 and v21-v23. */
#define K_Q45K_X4_ASM_HEAD                                                                           \
    "ldr q16, [%[o]]\n\t"                                                                            \
    "fcvtl v17.4s, v16.4h\n\t"                                                                       \
    "fcvtl2 v18.4s, v16.8h\n\t"                                                                      \
    "ldp q19, q20, [%[o], #16]\n\t"                                                                  \
    "ldr q21, [%[o], #48]\n\t"                                                                       \
    "ushr v23.16b, v21.16b, #4\n\t"                                                                  \
    "ushr v22.16b, v19.16b, #6\n\t"                                                                  \
    "sli v21.16b, v22.16b, #4\n\t"                                                                   \
    "ushr v22.16b, v20.16b, #6\n\t"                                                                  \
    "sli v23.16b, v22.16b, #4\n\t"                                                                   \
    "uxtl v0.8h, v21.8b\n\t"                                                                         \
    "uxtl2 v1.8h, v21.16b\n\t"                                                                       \
    "uxtl v2.8h, v23.8b\n\t"                                                                         \
    "uxtl2 v3.8h, v23.16b\n\t"


/* ... their sums against a token's 8 bsum pairs bs: M[j] = rows 0..3's
 * min 2j * bs[2j] + min 2j+1 * bs[2j+1] */
static inline __attribute__((always_inline)) void k_q45k_x4_msums_neon(const int16x8_t n[4], int16x8_t bs,
                                                                       int32x4_t M[4]) {
    M[0] = vmlal_high_laneq_s16(vmull_laneq_s16(vget_low_s16(n[0]), bs, 0), n[0], bs, 1);
    M[1] = vmlal_high_laneq_s16(vmull_laneq_s16(vget_low_s16(n[1]), bs, 2), n[1], bs, 3);
    M[2] = vmlal_high_laneq_s16(vmull_laneq_s16(vget_low_s16(n[2]), bs, 4), n[2], bs, 5);
    M[3] = vmlal_high_laneq_s16(vmull_laneq_s16(vget_low_s16(n[3]), bs, 6), n[3], bs, 7);
}

/* ... and their term, with dmv = the rows' dmin * the token's d: Q4_K (q4)
 * a[j] += M[j] * dmv, one accumulator per pair of sub-blocks; Q5_K
 * a[0] += -dmv * (M[0] + M[1] + M[2] + M[3]) (its summs) */
static inline __attribute__((always_inline)) void k_q45k_x4_minterm_neon(const int q4, const int32x4_t M[4],
                                                                         float32x4_t dmv, float32x4_t *a) {
    if (q4) { /* the 4 accumulators as one 4-register LD1 and ST1 */
        float32x4x4_t v = vld1q_f32_x4((const float *)a);
        v.val[0] = vfmaq_f32(v.val[0], vcvtq_f32_s32(M[0]), dmv);
        v.val[1] = vfmaq_f32(v.val[1], vcvtq_f32_s32(M[1]), dmv);
        v.val[2] = vfmaq_f32(v.val[2], vcvtq_f32_s32(M[2]), dmv);
        v.val[3] = vfmaq_f32(v.val[3], vcvtq_f32_s32(M[3]), dmv);
        vst1q_f32_x4((float *)a, v);
    } else {
        const int32x4_t Ms = vaddq_s32(vaddq_s32(M[0], M[1]), vaddq_s32(M[2], M[3]));
        a[0] = vfmaq_f32(a[0], vnegq_f32(dmv), vcvtq_f32_s32(Ms));
    }
}

/* Q5_K, chunk c of a block: the unsigned quants of bytes b0, b1 (16 each)
 * with their 5th bits, low nibbles (+16 where bit 0 of hb0 / hb1 is set) in
 * q[0], q[1], high nibbles (+16 where bit 1 is) in q[2], q[3]; hb0 and hb1
 * move on by two bits. */
static inline __attribute__((always_inline)) void k_q5k_chunk_neon(uint8x16_t b0, uint8x16_t b1, uint8x16_t *hb0,
                                                                   uint8x16_t *hb1, uint8x16_t q[4]) {
    const uint8x16_t m4 = vdupq_n_u8(15), one = vdupq_n_u8(1), two = vdupq_n_u8(2);
    q[0] = vorrq_u8(vandq_u8(b0, m4), vshlq_n_u8(vandq_u8(*hb0, one), 4));
    q[1] = vorrq_u8(vandq_u8(b1, m4), vshlq_n_u8(vandq_u8(*hb1, one), 4));
    q[2] = vorrq_u8(vshrq_n_u8(b0, 4), vshlq_n_u8(vandq_u8(*hb0, two), 3));
    q[3] = vorrq_u8(vshrq_n_u8(b1, 4), vshlq_n_u8(vandq_u8(*hb1, two), 3));
    *hb0 = vshrq_n_u8(*hb0, 2);
    *hb1 = vshrq_n_u8(*hb1, 2);
}

/* Q6_K, 16 lanes of one half-block: the unsigned 6-bit quants of elements
 * 16j + l (u[0]), 32 + 16j + l (u[1]), 64 + 16j + l (u[2]) and 96 + 16j + l
 * (u[3]) of the half whose low bits are L (64 bytes) and high bits H (32). */
static inline __attribute__((always_inline)) void k_q6k_quads_neon(const uint8_t *L, const uint8_t *H, int j,
                                                                   uint8x16_t u[4]) {
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    const uint8x16_t la = vld1q_u8(L + 16 * j), lb = vld1q_u8(L + 32 + 16 * j), hh = vld1q_u8(H + 16 * j);
    u[0] = vorrq_u8(vandq_u8(la, m4), vshlq_n_u8(vandq_u8(hh, m3), 4));
    u[1] = vorrq_u8(vandq_u8(lb, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 2), m3), 4));
    u[2] = vorrq_u8(vshrq_n_u8(la, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 4), m3), 4));
    u[3] = vorrq_u8(vshrq_n_u8(lb, 4), vshlq_n_u8(vshrq_n_u8(hh, 6), 4));
}

#endif
