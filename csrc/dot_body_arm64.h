/*
 * dot_body_arm64.h — the quantized dot products for arm64, written once over
 * one primitive:
 *
 *   K_DOT16(acc, a, b)  acc (int32x4) += the 16 int8 products a[i]*b[i],
 *                       lane l getting the products of elements 4l..4l+3
 *
 * as static inline helpers (dot_*, dot4_*, rows4_*) and the pieces of their
 * tiles (piece_*, mm_* for k_mm_run, mm_driver.h), included twice:
 *   csrc/dot_neon_arm64.c              K_DOT16 from vmull_s8 + vpadalq_s16  (_neon)
 *   csrc/dot_neon_dot_arm64.c          K_DOT16 = k_sdot (SDOT)             (_neon_dot)
 * and each of those files writes out its kernels (k_dot_q4_k_q8_k_neon, ...,
 * k_mm_q8_0_neon_dot) as calls of these helpers with ARM_DOT_SET (at the
 * end of this file), which takes their names.
 *
 * Summation order: the same as the x86 kernels (dot_q32_simd.h,
 * dot_kquant_simd.h and dot_float_avx2_amd64.c), which follow the reference
 * build (llama.cpp's AVX2 path) because the stories260K parity depends on
 * it: an 8-lane int32 sum per block, lane l holding the products of elements
 * 4l..4l+3 of each 32-element group (here lanes 0..3 in one int32x4, 4..7 in
 * another), folded into an 8-lane f32 accumulator with one FMA per block,
 * and finally k_hsum8: (l + l+4), then (0+2) + (1+3). Integer lane sums are
 * exact, so only the float steps must match, and they do: NEON and AVX2 give
 * the same bits (csrc/tests checks both against one scalar model).
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>
#include "kernels_neon_arm64.h"
#include "mm_driver.h"

/* Lane i of the result: a[2i]*b[2i] + a[2i+1]*b[2i+1] (int16 x int16 -> int32), i < 4:
 * x86's _mm_madd_epi16. */
static inline int32x4_t k_madd16(int16x8_t a, int16x8_t b) {
    return vpaddq_s32(vmull_s16(vget_low_s16(a), vget_low_s16(b)), vmull_high_s16(a, b));
}

/* Min term of a Q4_K / Q5_K block: lane i = m[2i]*bsum[2i] + m[2i+1]*bsum[2i+1]
 * with bsum[s] = bsums[2s] + bsums[2s+1] (the sub-block sums). */
static inline int32x4_t k_mins4v(uint8x8_t m, const int16_t *bsums) {
    int16x8_t bs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
    return k_madd16(vreinterpretq_s16_u16(vmovl_u8(m)), bs);
}

/* The scale sums of the Q4_K / Q5_K dots in the integer units, without a
 * zeroed register per group: with P[s] the products of sub-block s (one
 * int32x4 of lanes) and C[s] = P[0] + ... + P[s] (one chain of K_DOT16s),
 *   sum_s sc[s] * P[s] = sum_s (sc[s] - sc[s+1]) * C[s],   sc[8] = 0
 * (summation by parts; the integer lanes are the same numbers). k_q4k_dsc
 * gives dsc[0] = sc[s] - sc[s+1] for s = 0..3, dsc[1] for s = 4..7, and the
 * 8 mins. */
static inline void k_q4k_dsc(const uint8_t *scales, int32x4_t dsc[2], uint8x8_t *m8) {
    uint64_t sc, m;
    k_q4k_scales_mins8(scales, &sc, &m);
    const uint16x8_t s16 = vmovl_u8(vcreate_u8(sc));
    const int32x4_t s0 = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(s16)));
    const int32x4_t s1 = vreinterpretq_s32_u32(vmovl_high_u16(s16));
    /* (the differences in 32 bits: widened after, clang turns each lane use
     * into a dup and a widening) */
    dsc[0] = vsubq_s32(s0, vextq_s32(s0, s1, 1));
    dsc[1] = vsubq_s32(s1, vextq_s32(s1, vdupq_n_s32(0), 1));
    *m8 = vcreate_u8(m);
}

/* lo/hi lanes of one Q4_K / Q5_K block from its 256 unsigned quants u (chunk
 * c: u[4c+0] / u[4c+1] the low 16 / high 16 of sub-block 2c, u[4c+2] /
 * u[4c+3] those of sub-block 2c+1) and the block's activations q8. */
#define K_Q45K_CHUNK(c, U0, U1, U2, U3)                                                          \
    do {                                                                                       \
        clo = K_DOT16(clo, vreinterpretq_s8_u8(U0), vld1q_s8(q8 + 64 * (c)));                    \
        chi = K_DOT16(chi, vreinterpretq_s8_u8(U1), vld1q_s8(q8 + 64 * (c) + 16));               \
        if ((c) == 0) {                                                                        \
            lo = vmulq_laneq_s32(clo, dsc[0], 0);                                              \
            hi = vmulq_laneq_s32(chi, dsc[0], 0);                                              \
        } else {                                                                               \
            lo = vmlaq_laneq_s32(lo, clo, dsc[(c) / 2], (2 * (c)) % 4);                         \
            hi = vmlaq_laneq_s32(hi, chi, dsc[(c) / 2], (2 * (c)) % 4);                         \
        }                                                                                      \
        clo = K_DOT16(clo, vreinterpretq_s8_u8(U2), vld1q_s8(q8 + 64 * (c) + 32));               \
        chi = K_DOT16(chi, vreinterpretq_s8_u8(U3), vld1q_s8(q8 + 64 * (c) + 48));               \
        lo = vmlaq_laneq_s32(lo, clo, dsc[(c) / 2], (2 * (c)) % 4 + 1);                         \
        hi = vmlaq_laneq_s32(hi, chi, dsc[(c) / 2], (2 * (c)) % 4 + 1);                         \
    } while (0)

/* Q4_K (q5 = 0) and Q5_K (q5 = 1; a constant at every call): the blocks
 * share d, dmin, scales and qs; Q5_K's 5th bits (qh) go into the chunks'
 * quants (k_q5k_chunk_neon). The min terms differ as the reference's do:
 * Q4_K keeps 4 lanes (accm), Q5_K the exact integer sum per block, folded
 * with one scalar FMA (summs). */
static inline __attribute__((always_inline)) float dot_q45k(const int q5, int64_t n, const void *w, const void *a) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const uint8x16_t m4 = vdupq_n_u8(15);
    float32x4_t acc_lo = vdupq_n_f32(0), acc_hi = acc_lo, accm = acc_lo;
    float summs = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const k_block_q4_k *x4 = (const k_block_q4_k *)w + i;
        const k_block_q5_k *x5 = (const k_block_q5_k *)w + i;
        const float yd = y[i].d;
        int32x4_t dsc[2];
        uint8x8_t m;
        k_q4k_dsc(q5 ? x5->scales : x4->scales, dsc, &m);
        const float dmin_yd = k_h2f(q5 ? x5->dmin : x4->dmin) * yd;
        const int32x4_t mins = k_mins4v(m, y[i].bsums);
        if (q5) summs = fmaf(-dmin_yd, (float)vaddvq_s32(mins), summs);
        else accm = vfmaq_f32(accm, vcvtq_f32_s32(mins), vdupq_n_f32(dmin_yd));
        const uint8_t *q = q5 ? x5->qs : x4->qs;
        const int8_t *q8 = y[i].qs;
        uint8x16_t hb0 = vdupq_n_u8(0), hb1 = hb0;
        if (q5) hb0 = vld1q_u8(x5->qh), hb1 = vld1q_u8(x5->qh + 16);
        /* lanes 0..3 / 4..7: elements 0..15 / 16..31 of each sub-block */
        int32x4_t clo = vdupq_n_s32(0), chi = clo, lo, hi;
#define K_Q45K_BYTES(c)                                                                                      \
    do {                                                                                                     \
        const uint8x16_t b0 = vld1q_u8(q + 32 * (c)), b1 = vld1q_u8(q + 32 * (c) + 16);                     \
        uint8x16_t u[4] = {vandq_u8(b0, m4), vandq_u8(b1, m4), vshrq_n_u8(b0, 4), vshrq_n_u8(b1, 4)};         \
        if (q5) k_q5k_chunk_neon(b0, b1, &hb0, &hb1, u); /* bit 2c of qh: 16 on the low nibbles, 2c+1 high */ \
        K_Q45K_CHUNK(c, u[0], u[1], u[2], u[3]);                                                            \
    } while (0)
        K_Q45K_BYTES(0); K_Q45K_BYTES(1); K_Q45K_BYTES(2); K_Q45K_BYTES(3);
#undef K_Q45K_BYTES
        const float32x4_t d = vdupq_n_f32(k_h2f(q5 ? x5->d : x4->d) * yd);
        acc_lo = vfmaq_f32(acc_lo, vcvtq_f32_s32(lo), d);
        acc_hi = vfmaq_f32(acc_hi, vcvtq_f32_s32(hi), d);
    }
    return q5 ? k_hsum8(acc_lo, acc_hi) + summs : k_hsum8(acc_lo, acc_hi) - k_hsum4(accm);
}

static inline __attribute__((always_inline)) float dot_q4_k_q8_k(int64_t n, const void *w, const void *a) { return dot_q45k(0, n, w, a); }
static inline __attribute__((always_inline)) float dot_q5_k_q8_k(int64_t n, const void *w, const void *a) { return dot_q45k(1, n, w, a); }

/* Q6_K: unsigned 6-bit quants u (0..63); the -32 offset is folded once per
 * block per lane as -32 * (scale[2l]*bsum[2l] + scale[2l+1]*bsum[2l+1]), the
 * way the x86 kernels do (so the 8 integer lanes are the same numbers). The
 * 32 quants of vector (h, k) are elements 128h + 32k + 0..31; its first 16
 * (lanes 0..3) take scale 8h+2k, the next 16 (lanes 4..7) scale 8h+2k+1.
 * The scales apply by parts (see k_q4k_dsc) along each lane set's groups:
 * lanes 0..3 chain the even 16-element groups g = 0, 2, .., 14 with
 * differences sc[g] - sc[g+2], lanes 4..7 the odd ones (sc[16], sc[17] = 0). */
static inline __attribute__((always_inline)) float dot_q6_k_q8_k(int64_t n, const void *w, const void *a) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const int32x4_t z = vdupq_n_s32(0);
    float32x4_t acc_lo = vdupq_n_f32(0), acc_hi = acc_lo;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const int8x16_t sc8 = vld1q_s8(x[i].scales);
        const int16x8_t s_lo = vmovl_s8(vget_low_s8(sc8)), s_hi = vmovl_high_s8(sc8);
        int32x4_t lo = vshlq_n_s32(k_madd16(s_lo, vld1q_s16(y[i].bsums)), 5);
        int32x4_t hi = vshlq_n_s32(k_madd16(s_hi, vld1q_s16(y[i].bsums + 8)), 5);
        lo = vsubq_s32(z, lo);
        hi = vsubq_s32(z, hi);
        /* dg[g / 4] lane g % 4 = sc[g] - sc[g+2], the differences taken in
         * 32 bits (clang turns lane uses of a widened value into a dup and a
         * widening each) */
        const int32x4_t s0 = vmovl_s16(vget_low_s16(s_lo)), s1 = vmovl_high_s16(s_lo);
        const int32x4_t s2 = vmovl_s16(vget_low_s16(s_hi)), s3 = vmovl_high_s16(s_hi);
        const int32x4_t dg0 = vsubq_s32(s0, vextq_s32(s0, s1, 2)), dg1 = vsubq_s32(s1, vextq_s32(s1, s2, 2));
        const int32x4_t dg2 = vsubq_s32(s2, vextq_s32(s2, s3, 2)), dg3 = vsubq_s32(s3, vextq_s32(s3, z, 2));
        int32x4_t clo = z, chi = z;
#define K_Q6K_HJ(h, j, DA, DB)                                                                        \
    do {                                                                                              \
        uint8x16_t u[4];                                                                              \
        k_q6k_quads_neon(x[i].ql + 64 * (h), x[i].qh + 32 * (h), j, u);                              \
        const int8_t *p = y[i].qs + 128 * (h) + 16 * (j);                                             \
        int32x4_t *cc = (j) ? &chi : &clo, *ll = (j) ? &hi : &lo;                                     \
        *cc = K_DOT16(*cc, vreinterpretq_s8_u8(u[0]), vld1q_s8(p));                                  \
        *ll = vmlaq_laneq_s32(*ll, *cc, DA, (j));                                                    \
        *cc = K_DOT16(*cc, vreinterpretq_s8_u8(u[1]), vld1q_s8(p + 32));                             \
        *ll = vmlaq_laneq_s32(*ll, *cc, DA, 2 + (j));                                                \
        *cc = K_DOT16(*cc, vreinterpretq_s8_u8(u[2]), vld1q_s8(p + 64));                             \
        *ll = vmlaq_laneq_s32(*ll, *cc, DB, (j));                                                    \
        *cc = K_DOT16(*cc, vreinterpretq_s8_u8(u[3]), vld1q_s8(p + 96));                             \
        *ll = vmlaq_laneq_s32(*ll, *cc, DB, 2 + (j));                                                \
    } while (0)
        /* (h, j): groups 8h + j, 8h + 2 + j (lanes of dg[2h]), 8h + 4 + j, 8h + 6 + j (dg[2h+1]) */
        K_Q6K_HJ(0, 0, dg0, dg1); K_Q6K_HJ(0, 1, dg0, dg1);
        K_Q6K_HJ(1, 0, dg2, dg3); K_Q6K_HJ(1, 1, dg2, dg3);
#undef K_Q6K_HJ
        const float32x4_t d = vdupq_n_f32(k_h2f(x[i].d) * y[i].d);
        acc_lo = vfmaq_f32(acc_lo, vcvtq_f32_s32(lo), d);
        acc_hi = vfmaq_f32(acc_hi, vcvtq_f32_s32(hi), d);
    }
    return k_hsum8(acc_lo, acc_hi);
}

/* 32-element formats: per block, 8 int32 lanes (lo: elements 0..15, hi:
 * 16..31), acc = fma(d_w * d_a, lanes, acc) in block order, then k_hsum8. */
typedef struct { int32x4_t lo, hi; } k_lanes8;

static inline k_lanes8 k_q4_0_lanes(const k_block_q4_0 *x, const k_block_q8_0 *y) {
    const uint8x16_t m4 = vdupq_n_u8(15);
    const int8x16_t s8 = vdupq_n_s8(8);
    const int32x4_t z = vdupq_n_s32(0);
    uint8x16_t q = vld1q_u8(x->qs);
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), s8);
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), s8);
    return (k_lanes8){K_DOT16(z, lo, vld1q_s8(y->qs)), K_DOT16(z, hi, vld1q_s8(y->qs + 16))};
}

static inline k_lanes8 k_q5_0_lanes(const k_block_q5_0 *x, const k_block_q8_0 *y) {
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t m4 = vdupq_n_u8(15), b16 = vdupq_n_u8(16), bv = vld1q_u8(bit);
    const int8x16_t s16 = vdupq_n_s8(16);
    const int32x4_t z = vdupq_n_s32(0);
    uint8x16_t q = vld1q_u8(x->qs);
    /* lane j of hl holds qh byte j/8 (elements 0..15), of hh byte 2 + j/8 (16..31) */
    uint8x16_t hl = vcombine_u8(vdup_n_u8(x->qh[0]), vdup_n_u8(x->qh[1]));
    uint8x16_t hh = vcombine_u8(vdup_n_u8(x->qh[2]), vdup_n_u8(x->qh[3]));
    uint8x16_t lo5 = vorrq_u8(vandq_u8(q, m4), vandq_u8(vtstq_u8(hl, bv), b16));
    uint8x16_t hi5 = vorrq_u8(vshrq_n_u8(q, 4), vandq_u8(vtstq_u8(hh, bv), b16));
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(lo5), s16);
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(hi5), s16);
    return (k_lanes8){K_DOT16(z, lo, vld1q_s8(y->qs)), K_DOT16(z, hi, vld1q_s8(y->qs + 16))};
}

static inline k_lanes8 k_q8_0_lanes(const k_block_q8_0 *x, const k_block_q8_0 *y) {
    const int32x4_t z = vdupq_n_s32(0);
    return (k_lanes8){K_DOT16(z, vld1q_s8(x->qs), vld1q_s8(y->qs)),
                      K_DOT16(z, vld1q_s8(x->qs + 16), vld1q_s8(y->qs + 16))};
}

/* The 32-element formats by their type t (K_Q4_0, K_Q5_0, K_Q8_0; a constant
 * at every call, so the choices below fold away): the block size and the
 * block's lanes; every block starts with its f16 scale d. */
static inline size_t q32_block_size(int t) {
    return t == K_Q4_0 ? sizeof(k_block_q4_0) : t == K_Q5_0 ? sizeof(k_block_q5_0) : sizeof(k_block_q8_0);
}

static inline float q32_d(const char *blk) { return k_h2f(*(const k_half *)blk); }

static inline k_lanes8 q32_lanes(int t, const char *blk, const k_block_q8_0 *y) {
    if (t == K_Q4_0) return k_q4_0_lanes((const k_block_q4_0 *)blk, y);
    if (t == K_Q5_0) return k_q5_0_lanes((const k_block_q5_0 *)blk, y);
    return k_q8_0_lanes((const k_block_q8_0 *)blk, y);
}

static inline __attribute__((always_inline)) float dot_q32(int t, int64_t n, const void *w, const void *a) {
    const size_t bb = q32_block_size(t);
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float32x4_t acc_lo = vdupq_n_f32(0), acc_hi = acc_lo;
    for (int64_t i = 0; i < n / K_QK; i++) {
        const char *x = (const char *)w + (size_t)i * bb;
        const k_lanes8 s = q32_lanes(t, x, &y[i]);
        const float32x4_t d = vdupq_n_f32(q32_d(x) * k_h2f(y[i].d));
        acc_lo = vfmaq_f32(acc_lo, vcvtq_f32_s32(s.lo), d);
        acc_hi = vfmaq_f32(acc_hi, vcvtq_f32_s32(s.hi), d);
    }
    return k_hsum8(acc_lo, acc_hi);
}

/* ---- k_matmul_q tiles: one weight row x 4 tokens -------------------------
 * Per token the integer lanes and the float steps are exactly those of the
 * single-token kernel above, so the results are the same bits as the
 * single-token dot (tested). */

#define K_NT 4
#define K_ACT(k, T) ((const T *)((const char *)a + (size_t)(k) * a_row_bytes))

/* The K-quant tiles are 4 one-token dots: with the SDOT chains and the
 * scales by parts of the dots above (no zeroed register, no scalar scale)
 * a dot costs less per token than decoding a block once for 4 tokens did
 * (Apple proxy, instructions per row and token, dotprod / plain NEON:
 * Q4_K 110 / 186 against 169 / 217 for the decoded tile, Q6_K 141 / 218
 * against 179 / 227). Same bits by construction. */
static void dot4_q4_k(int64_t n, const void *w, const void *a, size_t s, float out[K_NT]) {
    for (int k = 0; k < K_NT; k++) out[k] = dot_q4_k_q8_k(n, w, (const char *)a + (size_t)k * s);
}
static void dot4_q5_k(int64_t n, const void *w, const void *a, size_t s, float out[K_NT]) {
    for (int k = 0; k < K_NT; k++) out[k] = dot_q5_k_q8_k(n, w, (const char *)a + (size_t)k * s);
}
static void dot4_q6_k(int64_t n, const void *w, const void *a, size_t s, float out[K_NT]) {
    for (int k = 0; k < K_NT; k++) out[k] = dot_q6_k_q8_k(n, w, (const char *)a + (size_t)k * s);
}

/* 32-element formats: the block's lanes work on one activation block;
 * the weights are re-read from L1 per token (decoding them is a few ops). */
static inline __attribute__((always_inline)) void dot4_q32(int t, int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[K_NT]) {
    const size_t bb = q32_block_size(t);
    float32x4_t acc_lo[K_NT], acc_hi[K_NT];
    for (int k = 0; k < K_NT; k++) acc_lo[k] = acc_hi[k] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / K_QK; i++) {
        const char *x = (const char *)w + (size_t)i * bb;
        const float wd = q32_d(x);
        for (int k = 0; k < K_NT; k++) {
            const k_block_q8_0 *y = K_ACT(k, k_block_q8_0) + i;
            const k_lanes8 s = q32_lanes(t, x, y);
            const float32x4_t d = vdupq_n_f32(wd * k_h2f(y->d));
            acc_lo[k] = vfmaq_f32(acc_lo[k], vcvtq_f32_s32(s.lo), d);
            acc_hi[k] = vfmaq_f32(acc_hi[k], vcvtq_f32_s32(s.hi), d);
        }
    }
    for (int k = 0; k < K_NT; k++) out[k] = k_hsum8(acc_lo[k], acc_hi[k]);
}

static void dot4_q4_0(int64_t n, const void *w, const void *a, size_t s, float out[K_NT]) { dot4_q32(K_Q4_0, n, w, a, s, out); }
static void dot4_q5_0(int64_t n, const void *w, const void *a, size_t s, float out[K_NT]) { dot4_q32(K_Q5_0, n, w, a, s, out); }
static void dot4_q8_0(int64_t n, const void *w, const void *a, size_t s, float out[K_NT]) { dot4_q32(K_Q8_0, n, w, a, s, out); }

/* 4 weight rows x 1 token for the 32-element formats: four independent FMA
 * chains instead of one (a single row is bound by the FMA latency: one
 * dependent FMA pair per 34-byte block). Per row the same operations in the
 * same order as the single-token dot. */
static inline __attribute__((always_inline)) void rows4_q32(int t, int64_t n, const void *w, size_t row_bytes, const void *a, float out[4]) {
    const size_t bb = q32_block_size(t);
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const char *x0 = (const char *)w, *x1 = x0 + row_bytes, *x2 = x0 + 2 * row_bytes, *x3 = x0 + 3 * row_bytes;
    float32x4_t l0 = vdupq_n_f32(0), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;
    for (int64_t i = 0; i < n / K_QK; i++, x0 += bb, x1 += bb, x2 += bb, x3 += bb) {
        const float yd = k_h2f(y[i].d);
        k_lanes8 s;
        float32x4_t d;
        s = q32_lanes(t, x0, &y[i]); d = vdupq_n_f32(q32_d(x0) * yd);
        l0 = vfmaq_f32(l0, vcvtq_f32_s32(s.lo), d); h0 = vfmaq_f32(h0, vcvtq_f32_s32(s.hi), d);
        s = q32_lanes(t, x1, &y[i]); d = vdupq_n_f32(q32_d(x1) * yd);
        l1 = vfmaq_f32(l1, vcvtq_f32_s32(s.lo), d); h1 = vfmaq_f32(h1, vcvtq_f32_s32(s.hi), d);
        s = q32_lanes(t, x2, &y[i]); d = vdupq_n_f32(q32_d(x2) * yd);
        l2 = vfmaq_f32(l2, vcvtq_f32_s32(s.lo), d); h2 = vfmaq_f32(h2, vcvtq_f32_s32(s.hi), d);
        s = q32_lanes(t, x3, &y[i]); d = vdupq_n_f32(q32_d(x3) * yd);
        l3 = vfmaq_f32(l3, vcvtq_f32_s32(s.lo), d); h3 = vfmaq_f32(h3, vcvtq_f32_s32(s.hi), d);
    }
    out[0] = k_hsum8(l0, h0); out[1] = k_hsum8(l1, h1);
    out[2] = k_hsum8(l2, h2); out[3] = k_hsum8(l3, h3);
}

static void rows4_q4_0(int64_t n, const void *w, size_t rb, const void *a, float out[4]) { rows4_q32(K_Q4_0, n, w, rb, a, out); }
static void rows4_q5_0(int64_t n, const void *w, size_t rb, const void *a, float out[4]) { rows4_q32(K_Q5_0, n, w, rb, a, out); }
static void rows4_q8_0(int64_t n, const void *w, size_t rb, const void *a, float out[4]) { rows4_q32(K_Q8_0, n, w, rb, a, out); }

/* The pieces of the tiles (mm_driver.h; k_mm_run walks the rows and
 * tokens): (1, 4) the 4-token dot, (4, 1) the 4-row dot where the format
 * has one, (1, 1) the one-token dot; per (row, token) the bits of the
 * one-token dot (K_NEON_PIECE_T4: kernels_neon_arm64.h). */
#define ARM_PIECE(name, dot4, rows4, dot1)                                                                     \
    static void name(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a, \
                     size_t a_row_bytes, float *out) {                                                         \
        (void)batch, (void)row_bytes, (void)rows;                                                              \
        if (toks == 4) dot4(n, w, a, a_row_bytes, out);                                                        \
        else if (rows == 4) rows4(n, w, row_bytes, a, out);                                                    \
        else out[0] = dot1(n, w, a);                                                                           \
    }
static inline __attribute__((always_inline)) float dot1_q4_0(int64_t n, const void *w, const void *a) { return dot_q32(K_Q4_0, n, w, a); }
static inline __attribute__((always_inline)) float dot1_q5_0(int64_t n, const void *w, const void *a) { return dot_q32(K_Q5_0, n, w, a); }
static inline __attribute__((always_inline)) float dot1_q8_0(int64_t n, const void *w, const void *a) { return dot_q32(K_Q8_0, n, w, a); }
K_NEON_PIECE_T4(piece_q4_k, dot4_q4_k, dot_q4_k_q8_k)
K_NEON_PIECE_T4(piece_q5_k, dot4_q5_k, dot_q5_k_q8_k)
K_NEON_PIECE_T4(piece_q6_k, dot4_q6_k, dot_q6_k_q8_k)
ARM_PIECE(piece_q4_0, dot4_q4_0, rows4_q4_0, dot1_q4_0)
ARM_PIECE(piece_q5_0, dot4_q5_0, rows4_q5_0, dot1_q5_0)
ARM_PIECE(piece_q8_0, dot4_q8_0, rows4_q8_0, dot1_q8_0)
#undef ARM_PIECE

/* the tile kernels' mm_kernels: groups of 4 tokens against every row of
 * the tile, then each remaining token (k_matvec: the only one) against the
 * rows, 4 rows at a time where the format has a 4-row dot */
static const mm_kernel mm_q4_k = {.piece = piece_q4_k, .shapes = MM_T4};
static const mm_kernel mm_q5_k = {.piece = piece_q5_k, .shapes = MM_T4};
static const mm_kernel mm_q6_k = {.piece = piece_q6_k, .shapes = MM_T4};
static const mm_kernel mm_q4_0 = {.piece = piece_q4_0, .shapes = MM_T4 | MM_R4};
static const mm_kernel mm_q5_0 = {.piece = piece_q5_0, .shapes = MM_T4 | MM_R4};
static const mm_kernel mm_q8_0 = {.piece = piece_q8_0, .shapes = MM_T4 | MM_R4};

/* The kernels of the including file's set, each written out under the
 * name the file passes: the one-token dots of Q4_K, Q5_K, Q6_K, Q4_0, Q5_0
 * and Q8_0 (D4K .. D80) and their tiles (T4K .. T80, k_mm_run over the
 * mm_kernels above). */
#define ARM_DOT_SET(D4K, D5K, D6K, D40, D50, D80, T4K, T5K, T6K, T40, T50, T80)                     \
    float D4K(int64_t n, const void *w, const void *a) { return dot_q4_k_q8_k(n, w, a); }         \
    float D5K(int64_t n, const void *w, const void *a) { return dot_q5_k_q8_k(n, w, a); }         \
    float D6K(int64_t n, const void *w, const void *a) { return dot_q6_k_q8_k(n, w, a); }         \
    float D40(int64_t n, const void *w, const void *a) { return dot1_q4_0(n, w, a); }             \
    float D50(int64_t n, const void *w, const void *a) { return dot1_q5_0(n, w, a); }             \
    float D80(int64_t n, const void *w, const void *a) { return dot1_q8_0(n, w, a); }             \
    void T4K(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_k, K_MM_TILE_ARGS); }                             \
    void T5K(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_k, K_MM_TILE_ARGS); }                             \
    void T6K(K_MM_TILE_PARAMS) { k_mm_run(&mm_q6_k, K_MM_TILE_ARGS); }                             \
    void T40(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_0, K_MM_TILE_ARGS); }                             \
    void T50(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_0, K_MM_TILE_ARGS); }                             \
    void T80(K_MM_TILE_PARAMS) { k_mm_run(&mm_q8_0, K_MM_TILE_ARGS); }
