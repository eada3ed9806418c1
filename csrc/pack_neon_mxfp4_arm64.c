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
 * Batches (two or more tokens): the first multiple of 8 tokens unpacks
 * chunks of rows (k_mm_run's phase 1) and runs the unpacked tile, whose
 * prepared token groups of 8 (mxfp4_neon_tile.h) share a row's decoding
 * among the 8; the other tokens run the one-token piece token by token
 * over chunks of rows.
 */
#include "sdot_arm64.h"
#include "kernels_neon_arm64.h"
#include "mm_driver.h"
#include <string.h>

#define MX4_PAIR_BYTES 136 /* 2 blocks x 4 rows x 17 bytes */
#define MX4_ONE_BYTES 68   /* 1 block x 4 rows x 17 bytes */

/* ---- layout: pack and unpack (their own inverses, byte for byte) ---- */

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

/* packed group block (E, Q) -> block b of the 4 rows at x[r]: the nibble
 * vectors transposed as 4 x 4 words */
static inline __attribute__((always_inline)) void mx4_unfill(const uint8_t *E, const uint8_t *Q, k_block_mxfp4 *const x[4]) {
    const uint32x4_t v0 = vreinterpretq_u32_u8(vld1q_u8(Q)), v1 = vreinterpretq_u32_u8(vld1q_u8(Q + 16));
    const uint32x4_t v2 = vreinterpretq_u32_u8(vld1q_u8(Q + 32)), v3 = vreinterpretq_u32_u8(vld1q_u8(Q + 48));
    const uint32x4_t t0 = vtrn1q_u32(v0, v1), t1 = vtrn2q_u32(v0, v1);
    const uint32x4_t t2 = vtrn1q_u32(v2, v3), t3 = vtrn2q_u32(v2, v3);
    const uint64x2_t u0 = vreinterpretq_u64_u32(t0), u1 = vreinterpretq_u64_u32(t1);
    const uint64x2_t u2 = vreinterpretq_u64_u32(t2), u3 = vreinterpretq_u64_u32(t3);
    vst1q_u8(x[0]->qs, vreinterpretq_u8_u64(vtrn1q_u64(u0, u2)));
    vst1q_u8(x[1]->qs, vreinterpretq_u8_u64(vtrn1q_u64(u1, u3)));
    vst1q_u8(x[2]->qs, vreinterpretq_u8_u64(vtrn2q_u64(u0, u2)));
    vst1q_u8(x[3]->qs, vreinterpretq_u8_u64(vtrn2q_u64(u1, u3)));
    for (int r = 0; r < 4; r++) x[r]->e = E[r];
}

/* the inverse of k_pack_mxfp4_x4_neon_dot (k_pack_kernel's form: src the
 * packed groups, dst rows row_bytes apart) */
static void mx4_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QK;
    for (int64_t g = 0; g + 4 <= nrows; g += 4) {
        const uint8_t *o = (const uint8_t *)src + (size_t)g * row_bytes;
        k_block_mxfp4 *rows[4];
        for (int r = 0; r < 4; r++) rows[r] = (k_block_mxfp4 *)((char *)dst + (size_t)(g + r) * row_bytes);
        int64_t b = 0;
        for (; b + 1 < nb; b += 2, o += MX4_PAIR_BYTES)
            for (int h = 0; h < 2; h++) {
                k_block_mxfp4 *const x[4] = {rows[0] + b + h, rows[1] + b + h, rows[2] + b + h, rows[3] + b + h};
                mx4_unfill(o + 4 * h, o + 8 + 64 * h, x);
            }
        if (b < nb) {
            k_block_mxfp4 *const x[4] = {rows[0] + b, rows[1] + b, rows[2] + b, rows[3] + b};
            mx4_unfill(o, o + 4, x);
        }
    }
}

K_DOTPROD_BEGIN

#if defined(__clang__)
#define MX4_ARCH ""
#else
#define MX4_ARCH ".arch armv8.2-a+dotprod\n\t"
#endif

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
                     "movi v0.2d, #0\n\tmovi v1.2d, #0\n\tmovi v2.2d, #0\n\tmovi v3.2d, #0\n\t"
                     "movi v4.2d, #0\n\tmovi v5.2d, #0\n\tmovi v6.2d, #0\n\tmovi v7.2d, #0\n\t"
                     "movi v8.2d, #0\n\tmovi v9.2d, #0\n\tmovi v10.2d, #0\n\tmovi v11.2d, #0\n\t"
                     "movi v12.2d, #0\n\tmovi v13.2d, #0\n\tmovi v14.2d, #0\n\tmovi v15.2d, #0\n\t"
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
    if (nb % 2) { /* odd block count: the last block's integer sum, one fmaf per row */
        const k_block_q8_0 *yl = (const k_block_q8_0 *)yb;
        const float yd = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(yl->d))), 0);
        const float dv[4] = {yd * k_e8m0_half(o[0]), yd * k_e8m0_half(o[1]), yd * k_e8m0_half(o[2]),
                             yd * k_e8m0_half(o[3])};
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
        s = vfmaq_f32(s, vcvtq_f32_s32(is), vld1q_f32(dv));
    }
    vst1q_f32(out, s);
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

/* k_mm_run's (G, 1) piece: one group x one token (phase 1's fallback
 * when it cannot have its buffer of unpacked rows) */
static void mx4_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a,
                      size_t a_row_bytes, float *out) {
    (void)rows, (void)toks, (void)batch, (void)row_bytes, (void)a_row_bytes;
    mx4_group(n / K_QK, (const uint8_t *)w, (const k_block_q8_0 *)a, out, vld1q_s8(k_mxfp4_values), vdupq_n_u8(15),
              vdupq_n_u16(0x80), vdupq_n_u16(0x20));
}

/* the one-token piece, token by token over chunks of 32 rows (a chunk's
 * groups stay in L1 across the tokens) */
static const mm_kernel mm_mxfp4_x4_one = {.pack_rows = 4, .pack_one = mx4_one, .pack_chunk = 32};
/* chunks of rows unpacked, then the unpacked tile (its prepared token
 * groups) */
static const mm_kernel mm_mxfp4_x4_batch = {
    .piece = mx4_piece, .pack_rows = 4, .unpack = mx4_unpack, .unpacked = k_mm_mxfp4_neon_dot};

/* The unpacked tile pays for the unpacking only in whole prepared groups
 * of 8 tokens (Apple proxy, instructions per 256 weights per row and
 * token: 8 and 16 tokens 102.6 and 98.6 unpacked, against 117 token by
 * token here; 4 to 7 tokens, whose prepared groups are smaller, 240-270),
 * so the first multiple of 8 tokens goes there and the rest token by token. */
void k_mm_packed_mxfp4_x4_neon_dot(K_MM_TILE_PARAMS) {
    const int64_t t8 = ntok / 8 * 8;
    if (t8 > 0) k_mm_run(&mm_mxfp4_x4_batch, n, w, row_bytes, nr, a, a_row_bytes, t8, y, y_stride);
    if (ntok > t8)
        k_mm_run(&mm_mxfp4_x4_one, n, w, row_bytes, nr, (const char *)a + (size_t)t8 * a_row_bytes, a_row_bytes, ntok - t8,
                 y + t8 * y_stride, y_stride);
}

K_DOTPROD_END
