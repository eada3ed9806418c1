/*
 * pack_neon_mxfp4_arm64.c — row-interleaved ("packed") MXFP4 weights of
 * the dotprod set (kernels.h, "row-interleaved weights"; the i8mm set
 * inherits them): groups of 4 rows whose blocks sit side by side, so one
 * SDOT by element gives one integer lane of the 4 rows.
 *
 * The results are the bits of the unpacked MXFP4 kernels (mxfp4_ref.c's
 * order, which every set keeps): per row and block 8 exact int32 lanes,
 * lane l = the products of elements 4l..4l+3; each lane converted and
 * FMAed on its own with d = f32(y.d) * k_e8m0_half(e), even blocks into
 * one set of 8 f32 lanes and odd blocks into another; the sets added lane
 * by lane, reduced ((0+4) + (2+6)) + ((1+5) + (3+7)); an odd last block
 * added as fmaf(d, its integer sum, total). Here vector l holds lane l of
 * rows 0..3, so every float step is the unpacked one, for 4 rows at once.
 *
 * MXFP4 x4 layout: a group of 4 rows of nb blocks takes 4 x 17 x nb bytes
 * (the rows' own bytes), block pairs first. Pair p (blocks 2p, 2p + 1) at
 * 136 p from the group's start:
 *     0  E[8]      byte 4h + r = e of row r's block 2p + h
 *     8  Q[64]     block 2p: 16 bytes per k = 0..3 at 8 + 16 k, bytes
 *                  4r..4r+3 = row r's qs[4k .. 4k+3] (low nibbles: its
 *                  elements 4k..4k+3, integer lane k; high nibbles:
 *                  elements 16+4k..16+4k+3, lane 4+k)
 *    72  Q[64]     block 2p + 1, the same
 * and, when nb is odd, the last block at 136 (nb / 2): E[4] (row r's e at
 * r), then its Q[64].
 *
 * One token (the one-token piece, inline assembly on fixed registers per
 * pair of blocks): per block 4 rows x 32 weights, 16 bytes of nibbles
 * give 2 x 16 values (AND / USHR, TBL into k_mxfp4_values), two SDOTs by
 * element into zeroed lanes, two SCVTF and two FMLA into the block's
 * accumulator set. The E8M0 factors of a pair (8 bytes) come from integer
 * steps on their top 16 bits, k_e8m0_half's bits without a branch or a
 * table:
 *     T(e) = max((e << 7) - 0x80, (e << 5) + 0x20)   (signed 16-bit)
 * is (e - 1) << 7 for e >= 2 (4 (e - 1) >= e + 1), 0x40 for e = 1 and
 * 0x20 for e = 0, and T(e) << 16 is k_e8m0_half(e)'s f32 bits for every e.
 *
 * Batches (two or more tokens): per chunk of 32 rows, four tokens at a
 * time over a group (mx4_group4: the pairs' factors d for the 4 tokens
 * first, then 4 passes, even / odd blocks x lanes 0..3 / 4..7, each with
 * the 4 tokens' 16 accumulators of its lanes in registers; the values of
 * each nibble vector serve the 4 tokens), then two (each pass runs the
 * group's even blocks, then its odd blocks, with both tokens' accumulators
 * of that parity in registers), an odd last token through the one-token
 * kernel.
 */
#include "sdot_arm64.h"
#include "kernels_neon_arm64.h"
#include "mm_driver.h"
#include <string.h>

#define MX4_PAIR_BYTES 136 /* 2 blocks x 4 rows x 17 bytes */
#define MX4_ONE_BYTES 68   /* 1 block x 4 rows x 17 bytes */

/* ---- layout ---- */

/* one group block: the 4 rows' block b (x[r]) <-> e at E (stride 1) and
 * nibbles at Q */
static void mx4_fill(uint8_t *E, uint8_t *Q, const k_block_mxfp4 *const x[4]) {
    for (int r = 0; r < 4; r++) {
        E[r] = x[r]->e;
        for (int k = 0; k < 4; k++) memcpy(Q + 16 * k + 4 * r, x[r]->qs + 4 * k, 4);
    }
}

void k_pack_mxfp4_x4_neon_dot(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QK;
    for (int64_t g = 0; g + 4 <= nrows; g += 4) {
        uint8_t *o = (uint8_t *)dst + (size_t)g * row_bytes;
        const k_block_mxfp4 *rows[4];
        for (int r = 0; r < 4; r++) rows[r] = (const k_block_mxfp4 *)((const char *)src + (size_t)(g + r) * row_bytes);
        int64_t b = 0;
        for (; b + 1 < nb; b += 2, o += MX4_PAIR_BYTES)
            for (int h = 0; h < 2; h++) {
                const k_block_mxfp4 *x[4] = {rows[0] + b + h, rows[1] + b + h, rows[2] + b + h, rows[3] + b + h};
                mx4_fill(o + 4 * h, o + 8 + 64 * h, x);
            }
        if (b < nb) {
            const k_block_mxfp4 *x[4] = {rows[0] + b, rows[1] + b, rows[2] + b, rows[3] + b};
            mx4_fill(o, o + 4, x);
        }
    }
}

K_DOTPROD_BEGIN

#if defined(__clang__)
#define MX4_ARCH ""
#else
#define MX4_ARCH ".arch armv8.2-a+dotprod\n\t"
#endif

/* the 16 integer chains v0..v15 start at zero */
#define MX4_ZERO16                                                                                   \
    "movi v0.2d, #0\n\tmovi v1.2d, #0\n\tmovi v2.2d, #0\n\tmovi v3.2d, #0\n\t"                     \
    "movi v4.2d, #0\n\tmovi v5.2d, #0\n\tmovi v6.2d, #0\n\tmovi v7.2d, #0\n\t"                     \
    "movi v8.2d, #0\n\tmovi v9.2d, #0\n\tmovi v10.2d, #0\n\tmovi v11.2d, #0\n\t"                   \
    "movi v12.2d, #0\n\tmovi v13.2d, #0\n\tmovi v14.2d, #0\n\tmovi v15.2d, #0\n\t"

/* Fixed registers of the pair loop:
 *   v0-v7    f32 lanes 0..7 of the even blocks (vector l: lane l of rows 0..3)
 *   v8-v15   the same of the odd blocks
 *   v16-v19  left to the compiler for the constants tab, m4, c80, c20
 *   v20-v23  a block's nibble vectors k = 0..3
 *   v24/v25  the token's block: elements 0..15 / 16..31
 *   v26/v27  d of the even / odd block's 4 rows
 *   v28-v31  scratch
 * Lane k and 4 + k of a block (W the nibble vector k, ACC its set's base):
 * the values by TBL, SDOT into zeroed lanes, SCVTF, FMLA by d. */
#define MX4_LANE_(K, W, ACC_LO, ACC_HI, D, X, Z, XH, ZH)                                             \
    "and v" #X ".16b, v" #W ".16b, %[m4].16b\n\t"                                                      \
    "ushr v" #XH ".16b, v" #W ".16b, #4\n\t"                                                         \
    "tbl v" #X ".16b, {%[tab].16b}, v" #X ".16b\n\t"                                                    \
    "tbl v" #XH ".16b, {%[tab].16b}, v" #XH ".16b\n\t"                                                  \
    "movi v" #Z ".2d, #0\n\t"                                                                        \
    "movi v" #ZH ".2d, #0\n\t"                                                                       \
    "sdot v" #Z ".4s, v" #X ".16b, v24.4b[" #K "]\n\t"                                               \
    "sdot v" #ZH ".4s, v" #XH ".16b, v25.4b[" #K "]\n\t"                                             \
    "scvtf v" #Z ".4s, v" #Z ".4s\n\t"                                                               \
    "scvtf v" #ZH ".4s, v" #ZH ".4s\n\t"                                                             \
    "fmla v" #ACC_LO ".4s, v" #Z ".4s, v" #D ".4s\n\t"                                               \
    "fmla v" #ACC_HI ".4s, v" #ZH ".4s, v" #D ".4s\n\t"
#define MX4_LANE(...) MX4_LANE_(__VA_ARGS__)
/* the 8 lanes of one block: accumulators A0 .. A0 + 7, d in D */
#define MX4_BLOCK(A0, A1, A2, A3, A4, A5, A6, A7, D)                                                 \
    MX4_LANE(0, 20, A0, A4, D, 28, 30, 20, 31) MX4_LANE(1, 21, A1, A5, D, 29, 28, 21, 30)            \
    MX4_LANE(2, 22, A2, A6, D, 31, 29, 22, 28) MX4_LANE(3, 23, A3, A7, D, 30, 31, 23, 29)

/* s + the odd last block's term for 4 rows: its integer sum (the 8 lanes
 * in one SDOT chain, exact) times d, one fmaf per row; o at the block's
 * E[4] and Q[64], yl the token's block */
static inline __attribute__((always_inline)) float32x4_t mx4_last(const uint8_t *o, const k_block_q8_0 *yl,
                                                                  float32x4_t s, int8x16_t tab, uint8x16_t m4) {
    const float yd = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(yl->d))), 0);
    const float dv[4] = {yd * k_e8m0_half(o[0]), yd * k_e8m0_half(o[1]), yd * k_e8m0_half(o[2]), yd * k_e8m0_half(o[3])};
    const int8x16_t a0 = vld1q_s8(yl->qs), a1 = vld1q_s8(yl->qs + 16);
    const uint8x16_t q0 = vld1q_u8(o + 4), q1 = vld1q_u8(o + 20), q2 = vld1q_u8(o + 36), q3 = vld1q_u8(o + 52);
    int32x4_t is = vdupq_n_s32(0);
    is = k_sdot_lane0(is, vqtbl1q_s8(tab, vandq_u8(q0, m4)), a0);
    is = k_sdot_lane1(is, vqtbl1q_s8(tab, vandq_u8(q1, m4)), a0);
    is = k_sdot_lane2(is, vqtbl1q_s8(tab, vandq_u8(q2, m4)), a0);
    is = k_sdot_lane3(is, vqtbl1q_s8(tab, vandq_u8(q3, m4)), a0);
    is = k_sdot_lane0(is, vqtbl1q_s8(tab, vshrq_n_u8(q0, 4)), a1);
    is = k_sdot_lane1(is, vqtbl1q_s8(tab, vshrq_n_u8(q1, 4)), a1);
    is = k_sdot_lane2(is, vqtbl1q_s8(tab, vshrq_n_u8(q2, 4)), a1);
    is = k_sdot_lane3(is, vqtbl1q_s8(tab, vshrq_n_u8(q3, 4)), a1);
    return vfmaq_f32(s, vcvtq_f32_s32(is), vld1q_f32(dv));
}

/* One group of 4 rows x one token: out[r] = dot(row r, token), mxfp4_ref's
 * bits. o at the group's first block, y the token's Q8_0 row; tab, m4,
 * c80, c20 the constants (k_mxfp4_values, 0x0f bytes, 0x80 and 0x20
 * halfwords), made once by the caller's loop over groups. */
static inline __attribute__((always_inline)) void mx4_group(int64_t nb, const uint8_t *o, const k_block_q8_0 *y,
                                                            float *out, int8x16_t tab, uint8x16_t m4, uint16x8_t c80,
                                                            uint16x8_t c20) {
    float32x4_t sum[1];
    float32x4_t *F = sum; /* the sum leaves the asm through memory */
    __asm__("" : "+r"(F));
    const uint8_t *yb = (const uint8_t *)y;
    int64_t np = nb / 2;
    __asm__ volatile(MX4_ARCH
                     MX4_ZERO16
                     "cbz %[np], 2f\n"
                     "1:\n\t"
                     "ldr d28, [%[o]], #8\n\t"
                     "ld1 {v29.h}[0], [%[y]], #2\n\t"
                     "ldp q24, q25, [%[y]], #32\n\t"
                     "ld1 {v29.h}[1], [%[y]], #2\n\t"
                     "ushll v30.8h, v28.8b, #7\n\t"
                     "ushll v31.8h, v28.8b, #5\n\t"
                     "sub v30.8h, v30.8h, %[c80].8h\n\t"
                     "add v31.8h, v31.8h, %[c20].8h\n\t"
                     "smax v30.8h, v30.8h, v31.8h\n\t"
                     "fcvtl v29.4s, v29.4h\n\t"
                     "shll v26.4s, v30.4h, #16\n\t"
                     "shll2 v27.4s, v30.8h, #16\n\t"
                     "fmul v26.4s, v26.4s, v29.s[0]\n\t"
                     "fmul v27.4s, v27.4s, v29.s[1]\n\t"
                     "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[o]], #64\n\t"
                     MX4_BLOCK(0, 1, 2, 3, 4, 5, 6, 7, 26)
                     "ldp q24, q25, [%[y]], #32\n\t"
                     "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[o]], #64\n\t"
                     MX4_BLOCK(8, 9, 10, 11, 12, 13, 14, 15, 27)
                     "subs %[np], %[np], #1\n\t"
                     "b.ne 1b\n"
                     "2:\n\t"
                     /* both sets lane by lane, then ((0+4) + (2+6)) + ((1+5) + (3+7)) */
                     "fadd v0.4s, v0.4s, v8.4s\n\tfadd v1.4s, v1.4s, v9.4s\n\t"
                     "fadd v2.4s, v2.4s, v10.4s\n\tfadd v3.4s, v3.4s, v11.4s\n\t"
                     "fadd v4.4s, v4.4s, v12.4s\n\tfadd v5.4s, v5.4s, v13.4s\n\t"
                     "fadd v6.4s, v6.4s, v14.4s\n\tfadd v7.4s, v7.4s, v15.4s\n\t"
                     "fadd v0.4s, v0.4s, v4.4s\n\tfadd v2.4s, v2.4s, v6.4s\n\t"
                     "fadd v1.4s, v1.4s, v5.4s\n\tfadd v3.4s, v3.4s, v7.4s\n\t"
                     "fadd v0.4s, v0.4s, v2.4s\n\tfadd v1.4s, v1.4s, v3.4s\n\t"
                     "fadd v0.4s, v0.4s, v1.4s\n\t"
                     "str q0, [%[F]]\n\t"
                     : [o] "+r"(o), [y] "+r"(yb), [np] "+r"(np)
                     : [tab] "w"(tab), [m4] "w"(m4), [c80] "w"(c80), [c20] "w"(c20), [F] "r"(F)
                     : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
                       "v15", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc",
                       "memory");
    float32x4_t s = F[0];
    if (nb % 2) s = mx4_last(o, (const k_block_q8_0 *)yb, s, tab, m4);
    vst1q_f32(out, s);
}

/* Two tokens, one pass over the even (or odd) blocks of a group: per block
 * the 4 exponents and the two tokens' d at once, the values of each nibble
 * vector shared by both tokens' SDOTs; lanes, conversions and FMAs as in
 * mx4_group, token 0 into v0-v7, token 1 into v8-v15 (both sets of one
 * parity), stored to res[0..15]. e, q at the pass's first block's E and
 * Q, yd / yq the tokens' first d and qs, each moving 136 / 68 bytes per
 * block. */
#define MX4_T2_HALF(K, W, A0, A1, ACC0, ACC1)                                                         \
    "movi v31.2d, #0\n\t"                                                                            \
    "sdot v31.4s, v" #W ".16b, v" #A0 ".4b[" #K "]\n\t"                                              \
    "scvtf v31.4s, v31.4s\n\t"                                                                        \
    "fmla v" #ACC0 ".4s, v31.4s, v28.4s\n\t"                                                         \
    "movi v31.2d, #0\n\t"                                                                            \
    "sdot v31.4s, v" #W ".16b, v" #A1 ".4b[" #K "]\n\t"                                              \
    "scvtf v31.4s, v31.4s\n\t"                                                                        \
    "fmla v" #ACC1 ".4s, v31.4s, v29.4s\n\t"
#define MX4_T2_LANE_(K, W, L0, L1, H0, H1)                                                            \
    "and v30.16b, v" #W ".16b, %[m4].16b\n\t"                                                        \
    "ushr v" #W ".16b, v" #W ".16b, #4\n\t"                                                          \
    "tbl v30.16b, {%[tab].16b}, v30.16b\n\t"                                                          \
    "tbl v" #W ".16b, {%[tab].16b}, v" #W ".16b\n\t"                                                  \
    MX4_T2_HALF(K, 30, 24, 26, L0, L1) MX4_T2_HALF(K, W, 25, 27, H0, H1)
#define MX4_T2_LANE(...) MX4_T2_LANE_(__VA_ARGS__)
static inline __attribute__((always_inline)) void mx4_pass2(int64_t np, const uint8_t *e, const uint8_t *q,
                                                            const uint8_t *yd0, const uint8_t *yq0, const uint8_t *yd1,
                                                            const uint8_t *yq1, float32x4_t *res, int8x16_t tab,
                                                            uint8x16_t m4, uint16x8_t c80, uint16x8_t c20) {
    const uint64_t s68 = 68, s136 = 136;
    __asm__ volatile(MX4_ARCH
                     MX4_ZERO16
                     "cbz %[np], 2f\n"
                     "1:\n\t"
                     "ldr s30, [%[e]], #136\n\t"
                     "ld1 {v31.h}[0], [%[yd0]], %[s68]\n\t"
                     "ld1 {v31.h}[1], [%[yd1]], %[s68]\n\t"
                     "ld1 {v24.16b, v25.16b}, [%[yq0]], %[s68]\n\t"
                     "ld1 {v26.16b, v27.16b}, [%[yq1]], %[s68]\n\t"
                     "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[q]], %[s136]\n\t"
                     "ushll v28.8h, v30.8b, #7\n\t"
                     "ushll v29.8h, v30.8b, #5\n\t"
                     "sub v28.8h, v28.8h, %[c80].8h\n\t"
                     "add v29.8h, v29.8h, %[c20].8h\n\t"
                     "smax v28.8h, v28.8h, v29.8h\n\t"
                     "shll v28.4s, v28.4h, #16\n\t"
                     "fcvtl v31.4s, v31.4h\n\t"
                     "fmul v29.4s, v28.4s, v31.s[1]\n\t"
                     "fmul v28.4s, v28.4s, v31.s[0]\n\t"
                     MX4_T2_LANE(0, 20, 0, 8, 4, 12) MX4_T2_LANE(1, 21, 1, 9, 5, 13)
                     MX4_T2_LANE(2, 22, 2, 10, 6, 14) MX4_T2_LANE(3, 23, 3, 11, 7, 15)
                     "subs %[np], %[np], #1\n\t"
                     "b.ne 1b\n"
                     "2:\n\t"
                     "stp q0, q1, [%[res]]\n\tstp q2, q3, [%[res], #32]\n\t"
                     "stp q4, q5, [%[res], #64]\n\tstp q6, q7, [%[res], #96]\n\t"
                     "stp q8, q9, [%[res], #128]\n\tstp q10, q11, [%[res], #160]\n\t"
                     "stp q12, q13, [%[res], #192]\n\tstp q14, q15, [%[res], #224]\n\t"
                     : [np] "+r"(np), [e] "+r"(e), [q] "+r"(q), [yd0] "+r"(yd0), [yq0] "+r"(yq0), [yd1] "+r"(yd1),
                       [yq1] "+r"(yq1)
                     : [tab] "w"(tab), [m4] "w"(m4), [c80] "w"(c80), [c20] "w"(c20), [res] "r"(res), [s68] "r"(s68),
                       [s136] "r"(s136)
                     : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
                       "v15", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc",
                       "memory");
}
#undef MX4_T2_HALF
#undef MX4_T2_LANE_
#undef MX4_T2_LANE

/* One group of 4 rows x two tokens (y0, y1 their Q8_0 rows): out0[r],
 * out1[r] = dot(row r, token), mx4_group's bits per token: the even blocks'
 * pass, the odd blocks' pass, the two sets added lane by lane and reduced
 * as there, then the odd last block. */
static inline __attribute__((always_inline)) void mx4_group2(int64_t nb, const uint8_t *o, const uint8_t *y0,
                                                             const uint8_t *y1, float *out0, float *out1, int8x16_t tab,
                                                             uint8x16_t m4, uint16x8_t c80, uint16x8_t c20) {
    float32x4_t evs[16], ods[16];
    float32x4_t *ev = evs, *od = ods; /* written by the asm */
    __asm__("" : "+r"(ev), "+r"(od));
    const int64_t np = nb / 2;
    mx4_pass2(np, o, o + 8, y0, y0 + 2, y1, y1 + 2, ev, tab, m4, c80, c20);
    mx4_pass2(np, o + 4, o + 72, y0 + 34, y0 + 36, y1 + 34, y1 + 36, od, tab, m4, c80, c20);
    const uint8_t *last = o + (size_t)np * MX4_PAIR_BYTES;
    const uint8_t *ys[2] = {y0, y1};
    float *outs[2] = {out0, out1};
    for (int t = 0; t < 2; t++) {
        float32x4_t b[8];
        for (int l = 0; l < 8; l++) b[l] = vaddq_f32(ev[8 * t + l], od[8 * t + l]);
        float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(b[0], b[4]), vaddq_f32(b[2], b[6])),
                                  vaddq_f32(vaddq_f32(b[1], b[5]), vaddq_f32(b[3], b[7])));
        if (nb % 2) s = mx4_last(last, (const k_block_q8_0 *)ys[t] + 2 * np, s, tab, m4);
        vst1q_f32(outs[t], s);
    }
}
/* Four tokens, one group: per segment of up to MX4_SEG block pairs, first
 * the factors d = f32(y.d) x k_e8m0_half(e) of both blocks of each pair
 * for the 4 tokens (mx4_dv4, to memory: [pair][parity][token], 4 rows
 * each), then 4 passes (mx4_pass4): parity h (even / odd blocks) x half
 * (lanes 0..3 from the low nibbles, 4..7 from the high ones), each 16
 * chains (4 tokens x 4 lanes) resumed from and left in res[2h + half]. The
 * values of each nibble vector serve the 4 tokens and each pair's factors
 * both halves; lanes, conversions and FMAs as in mx4_group, in the same
 * order per lane. */
#define MX4_SEG 32
static inline __attribute__((always_inline)) void mx4_dv4(int64_t np, const uint8_t *e, const uint8_t *y0,
                                                          const uint8_t *y1, const uint8_t *y2, const uint8_t *y3,
                                                          float32x4_t *dvp) {
    const uint64_t s34 = 34;
    __asm__ volatile(MX4_ARCH "movi v26.8h, #0x80\n\t"
                              "movi v27.8h, #0x20\n"
                              "1:\n\t"
                              "ldr d30, [%[e]], #136\n\t"
                              "ld1 {v31.h}[0], [%[y0]], %[s34]\n\t"
                              "ld1 {v31.h}[4], [%[y0]], %[s34]\n\t"
                              "ld1 {v31.h}[1], [%[y1]], %[s34]\n\t"
                              "ld1 {v31.h}[5], [%[y1]], %[s34]\n\t"
                              "ld1 {v31.h}[2], [%[y2]], %[s34]\n\t"
                              "ld1 {v31.h}[6], [%[y2]], %[s34]\n\t"
                              "ld1 {v31.h}[3], [%[y3]], %[s34]\n\t"
                              "ld1 {v31.h}[7], [%[y3]], %[s34]\n\t"
                              "ushll v28.8h, v30.8b, #7\n\t"
                              "ushll v29.8h, v30.8b, #5\n\t"
                              "sub v28.8h, v28.8h, v26.8h\n\t"
                              "add v29.8h, v29.8h, v27.8h\n\t"
                              "smax v28.8h, v28.8h, v29.8h\n\t"
                              "shll v29.4s, v28.4h, #16\n\t"
                              "shll2 v28.4s, v28.8h, #16\n\t"
                              "fcvtl v30.4s, v31.4h\n\t"
                              "fcvtl2 v31.4s, v31.8h\n\t"
                              "fmul v16.4s, v29.4s, v30.s[0]\n\t"
                              "fmul v17.4s, v29.4s, v30.s[1]\n\t"
                              "fmul v18.4s, v29.4s, v30.s[2]\n\t"
                              "fmul v19.4s, v29.4s, v30.s[3]\n\t"
                              "fmul v20.4s, v28.4s, v31.s[0]\n\t"
                              "fmul v21.4s, v28.4s, v31.s[1]\n\t"
                              "fmul v22.4s, v28.4s, v31.s[2]\n\t"
                              "fmul v23.4s, v28.4s, v31.s[3]\n\t"
                              "st1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[dv]], #64\n\t"
                              "st1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[dv]], #64\n\t"
                              "subs %[np], %[np], #1\n\t"
                              "b.ne 1b\n\t"
                     : [np] "+r"(np), [e] "+r"(e), [y0] "+r"(y0), [y1] "+r"(y1), [y2] "+r"(y2), [y3] "+r"(y3),
                       [dv] "+r"(dvp)
                     : [s34] "r"(s34)
                     : "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v26", "v27", "v28", "v29", "v30",
                       "v31", "cc", "memory");
}
/* lane K of the 4 tokens (activations v24-v27, factors v16-v19) from the
 * values in v(20 + K), into v(K), v(4 + K), v(8 + K), v(12 + K); Z, ZB
 * alternate scratch */
#define MX4_T4_(K, W, A, ACC, DV, Z)                                                                 \
    "movi v" #Z ".2d, #0\n\t"                                                                        \
    "sdot v" #Z ".4s, v" #W ".16b, v" #A ".4b[" #K "]\n\t"                                           \
    "scvtf v" #Z ".4s, v" #Z ".4s\n\t"                                                               \
    "fmla v" #ACC ".4s, v" #Z ".4s, v" #DV ".4s\n\t"
#define MX4_T4(...) MX4_T4_(__VA_ARGS__)
#define MX4_T4_LANE(K, W, A0, A1, A2, A3)                                                            \
    MX4_T4(K, W, 24, A0, 16, 28) MX4_T4(K, W, 25, A1, 17, 29) MX4_T4(K, W, 26, A2, 18, 28)           \
    MX4_T4(K, W, 27, A3, 19, 29)
#define MX4_T4_LO(W) "and v" #W ".16b, v" #W ".16b, v31.16b\n\ttbl v" #W ".16b, {v30.16b}, v" #W ".16b\n\t"
#define MX4_T4_HI(W) "ushr v" #W ".16b, v" #W ".16b, #4\n\ttbl v" #W ".16b, {v30.16b}, v" #W ".16b\n\t"
#define MX4_T4_PASS(DEC)                                                                             \
    __asm__ volatile(MX4_ARCH "ldr q30, [%[tab]]\n\t"                                                 \
                              "movi v31.16b, #15\n\t"                                                \
                              "mov %[xr], %[res]\n\t"                                                  \
                              "ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[xr]], #64\n\t"                     \
                              "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[xr]], #64\n\t"                     \
                              "ld1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[xr]], #64\n\t"                   \
                              "ld1 {v12.4s, v13.4s, v14.4s, v15.4s}, [%[xr]]\n"                        \
                              "1:\n\t"                                                               \
                              "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[q]], %[s136]\n\t"        \
                              "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[dv]], %[s128]\n\t"           \
                              "ldr q24, [%[y0]], #68\n\t"                                            \
                              "ldr q25, [%[y1]], #68\n\t"                                            \
                              "ldr q26, [%[y2]], #68\n\t"                                            \
                              "ldr q27, [%[y3]], #68\n\t" DEC(20) DEC(21) DEC(22) DEC(23)             \
                                  MX4_T4_LANE(0, 20, 0, 4, 8, 12) MX4_T4_LANE(1, 21, 1, 5, 9, 13)    \
                                      MX4_T4_LANE(2, 22, 2, 6, 10, 14) MX4_T4_LANE(3, 23, 3, 7, 11, 15) \
                              "subs %[np], %[np], #1\n\t"                                            \
                              "b.ne 1b\n\t"                                                          \
                              "mov %[xr], %[res]\n\t"                                                  \
                              "st1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[xr]], #64\n\t"                     \
                              "st1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[xr]], #64\n\t"                     \
                              "st1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[xr]], #64\n\t"                   \
                              "st1 {v12.4s, v13.4s, v14.4s, v15.4s}, [%[xr]]\n\t"                      \
                     : [np] "+r"(np), [q] "+r"(q), [dv] "+r"(dvp), [y0] "+r"(y0), [y1] "+r"(y1),  \
                       [y2] "+r"(y2), [y3] "+r"(y3), [xr] "=&r"(xr)                                 \
                     : [tab] "r"(k_mxfp4_values), [res] "r"(res), [s136] "r"(s136), [s128] "r"(s128) \
                     : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11",    \
                       "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", \
                       "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory")
/* np (>= 1) pairs of one parity and half: q at the parity's first Q, dvp
 * at its first factors, y0..y3 at the tokens' qs of the half; res the 16
 * chains (token t, lane k at res[4t + k]) */
static inline __attribute__((always_inline)) void mx4_pass4(int hi, int64_t np, const uint8_t *q,
                                                            const float32x4_t *dvp, const uint8_t *y0,
                                                            const uint8_t *y1, const uint8_t *y2, const uint8_t *y3,
                                                            float32x4_t *res) {
    const uint64_t s136 = 136, s128 = 128;
    const void *xr;
    if (hi)
        MX4_T4_PASS(MX4_T4_HI);
    else
        MX4_T4_PASS(MX4_T4_LO);
    (void)xr;
}
#undef MX4_T4_
#undef MX4_T4
#undef MX4_T4_LANE
#undef MX4_T4_LO
#undef MX4_T4_HI
#undef MX4_T4_PASS

/* One group of 4 rows x four tokens (a: token 0's Q8_0 row, arb apart):
 * y[t * ys + r] = dot(row r, token t), mx4_group's bits per token */
static inline __attribute__((always_inline)) void mx4_group4(int64_t nb, const uint8_t *o, const uint8_t *a,
                                                             size_t arb, float *y, int64_t ys, int8x16_t tab,
                                                             uint8x16_t m4) {
    float32x4_t ress[4][16], dvs[8 * MX4_SEG];
    float32x4_t(*res)[16] = ress;
    float32x4_t *dv = dvs; /* both written by the asm */
    __asm__("" : "+r"(res), "+r"(dv));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 16; j++) res[i][j] = vdupq_n_f32(0);
    const int64_t np = nb / 2;
    for (int64_t p0 = 0; p0 < np; p0 += MX4_SEG) {
        const int64_t ns = np - p0 < MX4_SEG ? np - p0 : MX4_SEG;
        const uint8_t *op = o + (size_t)p0 * MX4_PAIR_BYTES;
        const uint8_t *yb[4];
        for (int t = 0; t < 4; t++) yb[t] = a + (size_t)t * arb + (size_t)(2 * p0) * sizeof(k_block_q8_0);
        mx4_dv4(ns, op, yb[0], yb[1], yb[2], yb[3], dv);
        for (int h = 0; h < 2; h++)
            for (int half = 0; half < 2; half++) {
                const size_t yo = (size_t)h * sizeof(k_block_q8_0) + 2 + 16 * (size_t)half;
                mx4_pass4(half, ns, op + 8 + 64 * h, dv + 4 * h, yb[0] + yo, yb[1] + yo, yb[2] + yo, yb[3] + yo,
                          res[2 * h + half]);
            }
    }
    const uint8_t *last = o + (size_t)np * MX4_PAIR_BYTES;
    for (int t = 0; t < 4; t++) {
        float32x4_t b[8];
        for (int k = 0; k < 4; k++) {
            b[k] = vaddq_f32(res[0][4 * t + k], res[2][4 * t + k]);
            b[4 + k] = vaddq_f32(res[1][4 * t + k], res[3][4 * t + k]);
        }
        float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(b[0], b[4]), vaddq_f32(b[2], b[6])),
                                  vaddq_f32(vaddq_f32(b[1], b[5]), vaddq_f32(b[3], b[7])));
        if (nb % 2) s = mx4_last(last, (const k_block_q8_0 *)(a + (size_t)t * arb) + 2 * np, s, tab, m4);
        vst1q_f32(y + t * ys, s);
    }
}
#undef MX4_ARCH
#undef MX4_LANE_
#undef MX4_LANE
#undef MX4_BLOCK

/* one token over `rows` rows (whole groups): y[r] = dot(row r, token) */
static void mx4_one(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a, size_t a_row_bytes,
                    float *y, int64_t y_stride) {
    (void)toks, (void)a_row_bytes, (void)y_stride;
    const int64_t nb = n / K_QK;
    const int8x16_t tab = vld1q_s8(k_mxfp4_values);
    const uint8x16_t m4 = vdupq_n_u8(15);
    const uint16x8_t c80 = vdupq_n_u16(0x80), c20 = vdupq_n_u16(0x20);
    for (int g = 0; g + 4 <= rows; g += 4)
        mx4_group(nb, (const uint8_t *)w + (size_t)g * row_bytes, (const k_block_q8_0 *)a, y + g, tab, m4, c80, c20);
}

/* two tokens over `rows` rows (whole groups): y[k * y_stride + r] */
static void mx4_two(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a, size_t a_row_bytes,
                    float *y, int64_t y_stride) {
    (void)toks;
    const int64_t nb = n / K_QK;
    const int8x16_t tab = vld1q_s8(k_mxfp4_values);
    const uint8x16_t m4 = vdupq_n_u8(15);
    const uint16x8_t c80 = vdupq_n_u16(0x80), c20 = vdupq_n_u16(0x20);
    for (int g = 0; g + 4 <= rows; g += 4)
        mx4_group2(nb, (const uint8_t *)w + (size_t)g * row_bytes, (const uint8_t *)a, (const uint8_t *)a + a_row_bytes,
                   y + g, y + y_stride + g, tab, m4, c80, c20);
}

/* four tokens over `rows` rows (whole groups): y[k * y_stride + r] */
static void mx4_four(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a, size_t a_row_bytes,
                     float *y, int64_t y_stride) {
    (void)toks;
    const int64_t nb = n / K_QK;
    const int8x16_t tab = vld1q_s8(k_mxfp4_values);
    const uint8x16_t m4 = vdupq_n_u8(15);
    for (int g = 0; g + 4 <= rows; g += 4)
        mx4_group4(nb, (const uint8_t *)w + (size_t)g * row_bytes, (const uint8_t *)a, a_row_bytes, y + g, y_stride,
                   tab, m4);
}

/* One token: mx4_one over every group. A batch: per chunk of 32 rows (its
 * groups stay in L1 across the tokens) the tokens four at a time, then two,
 * the odd one through mx4_one. */
static const mm_kernel mm_mxfp4_x4 = {.pack_rows = 4,
                                      .pack_one = mx4_one,
                                      .pack_chunk = 32,
                                      .pack_toks = {4, 2},
                                      .pack_pieces = {mx4_four, mx4_two}};

void k_mm_packed_mxfp4_x4_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_mxfp4_x4, K_MM_TILE_ARGS); }

K_DOTPROD_END
