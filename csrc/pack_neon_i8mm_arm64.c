/*
 * pack_neon_i8mm_arm64.c — prompt tiles of the i8mm set (K_IMPL_NEON_I8MM)
 * for Q4_K and Q5_K over the dotprod set's packed x4 layouts
 * (pack_neon_dot_arm64.c: the same bytes, the same pack kernels), on
 * USMMLA:
 *
 *   k_usmmla(acc, a, b)  acc (int32x4) += the 2x2 matrix product of a (2 rows
 *                        of 8 uint8) by b transposed (2 columns of 8 int8):
 *                        lane 2i + j gets sum_k a[8i + k] * b[8j + k]
 *
 * The results are the bits of the dotprod set (its one-token kernels,
 * q45k_x4_c there): per row and block the same 8 integer
 * lanes (lane l = sum over the 8 sub-blocks s of scale s times the 4
 * products of elements 4l..4l+3 of s),
 * the same FMAs into 8 f32 lanes and the same final sums. Integer sums are
 * exact, so only the way a lane's integer is formed changes:
 *
 *   USMMLA sums 8 products where a lane is made of 4 per sub-block, with a
 *   scale per sub-block. Its 8 bytes are taken as lane l of sub-blocks 2c
 *   and 2c + 1 (the layout's vectors of lane l, chunk c), with each weight
 *   premultiplied by its sub-block's scale, split in two so the products
 *   fit a byte: scale = 8 h + m, h = scale >> 3, m = scale & 7, both <= 7,
 *   and q * h, q * m <= 217 for a 5-bit q (105 for Q4_K). Lane l = 8 H + M,
 *   where H (M) is the USMMLA sum of q * h (q * m) times the activations
 *   over the 4 chunks: 8 USMMLAs per lane for 2 rows x 2 tokens, no
 *   per-sub-block multiply-add. The min term is the dotprod kernel's, per
 *   token.
 *
 * A tile is a batch of up to 16 row groups (64 rows) x up to 4 token pairs:
 * the activations of 8 blocks are first rearranged into USMMLA operands
 * (per token pair, chunk c and lane l: token t's bytes of lane l of
 * sub-blocks 2c, 2c + 1, then token u's), then every group of the batch
 * runs over those blocks. The f32 lane accumulators of the batch live on the
 * stack between blocks (~43 KB in all). One token, and the last of an odd
 * count, go through the dotprod set's packed kernel, which token pairs do
 * not help.
 *
 * Q6_K, IQ4_XS and Q8_0 keep the dotprod kernels: no split of their scales
 * keeps the premultiplied weights in a byte (Q8_0 has none to fold), and
 * without it the instruction gives 16 useful products, as SDOT does
 * (docs/apple-proxy.md, "The i8mm set").
 *
 * The instruction is inline assembly, as SDOT in sdot_arm64.h: gcc takes it
 * after an `.arch` line, clang inside functions with target("i8mm")
 * (K_I8MM_BEGIN / K_I8MM_END), so the package needs no -march flag.
 */
#include <string.h>
#include "kernels_neon_arm64.h"
#include "mm_driver.h"

#if defined(__clang__)
#define K_I8MM_BEGIN _Pragma("clang attribute push(__attribute__((target(\"i8mm\"))), apply_to = function)")
#define K_I8MM_END _Pragma("clang attribute pop")
#define K_SMMLA_ASM "usmmla %0.4s, %1.16b, %2.16b"
#else
#define K_I8MM_BEGIN
#define K_I8MM_END
#define K_SMMLA_ASM ".arch armv8.2-a+dotprod+i8mm\n\tusmmla %0.4s, %1.16b, %2.16b"
#endif

#define Q4K_X4_BYTES (4 * sizeof(k_block_q4_k))
#define Q5K_X4_BYTES (4 * sizeof(k_block_q5_k))
#define I8_TP 4  /* token pairs per tile (the pieces below name 1 to 4) */
#define I8_NBC 8 /* blocks of rearranged activations */
#define I8_GB 16 /* row groups (of 4) per batch */

K_I8MM_BEGIN

/* USMMLA: a unsigned (the premultiplied weights), b signed (the activations) */
static inline __attribute__((always_inline)) int32x4_t k_usmmla(int32x4_t acc, uint8x16_t a, int8x16_t b) {
    __asm__(K_SMMLA_ASM : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}

/* m + h * k[0] in one MLA by element (compilers turn the multiply by a
 * constant 8 into a shift and an add) */
static inline __attribute__((always_inline)) int32x4_t mla_lane0(int32x4_t m, int32x4_t h, int32x4_t k) {
    __asm__("mla %0.4s, %1.4s, %2.s[0]" : "+w"(m) : "w"(h), "w"(k));
    return m;
}

/* one Q8_K block of the tile's tokens, as the SMMLA kernels read it */
typedef struct {
    int8x16_t b[32][I8_TP];    /* b[8c + l][p]: lane l of sub-blocks 2c, 2c+1 of tokens 2p, 2p+1 */
    float32x4_t yt[I8_TP];     /* {d of 2p, d of 2p+1, d of 2p, d of 2p+1} */
    int16x8_t bs[2 * I8_TP];   /* per token: the 8 sub-blocks' sums of activations */
    float yd[2 * I8_TP];       /* per token: d */
} i8_act;

static inline __attribute__((always_inline)) void i8_arrange(i8_act *o, const char *a, size_t a_row_bytes,
                                                             int64_t b, const int TP) {
    for (int p = 0; p < TP; p++) {
        const k_block_q8_k *yt = (const k_block_q8_k *)(a + (size_t)(2 * p) * a_row_bytes) + b;
        const k_block_q8_k *yu = (const k_block_q8_k *)(a + (size_t)(2 * p + 1) * a_row_bytes) + b;
        o->yd[2 * p] = yt->d;
        o->yd[2 * p + 1] = yu->d;
        const float32x2_t du = {yt->d, yu->d};
        o->yt[p] = vcombine_f32(du, du);
        o->bs[2 * p] = vpaddq_s16(vld1q_s16(yt->bsums), vld1q_s16(yt->bsums + 8));
        o->bs[2 * p + 1] = vpaddq_s16(vld1q_s16(yu->bsums), vld1q_s16(yu->bsums + 8));
        for (int c = 0; c < 4; c++)
            for (int h = 0; h < 2; h++) {
                const int32x4_t pt = vreinterpretq_s32_s8(vld1q_s8(yt->qs + 64 * c + 16 * h));
                const int32x4_t qt = vreinterpretq_s32_s8(vld1q_s8(yt->qs + 64 * c + 32 + 16 * h));
                const int32x4_t pu = vreinterpretq_s32_s8(vld1q_s8(yu->qs + 64 * c + 16 * h));
                const int32x4_t qu = vreinterpretq_s32_s8(vld1q_s8(yu->qs + 64 * c + 32 + 16 * h));
                /* 8 bytes per lane: 4 of sub-block 2c, 4 of 2c + 1 */
                const int64x2_t t01 = vreinterpretq_s64_s32(vzip1q_s32(pt, qt)), t23 = vreinterpretq_s64_s32(vzip2q_s32(pt, qt));
                const int64x2_t u01 = vreinterpretq_s64_s32(vzip1q_s32(pu, qu)), u23 = vreinterpretq_s64_s32(vzip2q_s32(pu, qu));
                const int l = 8 * c + 4 * h;
                o->b[l][p] = vreinterpretq_s8_s64(vzip1q_s64(t01, u01));
                o->b[l + 1][p] = vreinterpretq_s8_s64(vzip2q_s64(t01, u01));
                o->b[l + 2][p] = vreinterpretq_s8_s64(vzip1q_s64(t23, u23));
                o->b[l + 3][p] = vreinterpretq_s8_s64(vzip2q_s64(t23, u23));
            }
    }
}

/* TBL indices of the scale multipliers: byte 4s + r of {sc0, sc1} is the
 * scale of sub-block s of row r; an SMMLA operand of row pair rp holds row
 * 2rp's lane of sub-blocks 2c, 2c+1, then row 2rp+1's (chunk c adds 8). */
static const uint8_t i8_sc_idx[2][16] = {{0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5},
                                         {2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7}};

/* The 4 rows' quants of lane l (l = 4h + j) of sub-blocks 2c (*lo) and 2c+1
 * (*hi), bytes 4r..4r+3 = row r's, from the layouts of pack_neon_dot_arm64.c
 * (Q5_K: the decoding of its q45k_x4_c, vector u[j] and u[4+j]). */
static inline __attribute__((always_inline)) void q45_quants(const int t, const uint8_t *qv, const int c, const int h,
                                                             const int j, uint32x4_t *lo, uint32x4_t *hi) {
    if (t == K_Q4_K) {
        const uint8x16_t v = vld1q_u8(qv + 16 * (8 * c + 4 * h + j));
        *lo = vreinterpretq_u32_u8(vandq_u8(v, vdupq_n_u8(15)));
        *hi = vreinterpretq_u32_u8(vshrq_n_u8(v, 4));
        return;
    }
    const uint8_t *X = qv + 80 * (2 * c + h);
    const uint8x16_t m5 = vdupq_n_u8(31);
    if (j == 0) {
        *lo = vreinterpretq_u32_u8(vandq_u8(vld1q_u8(X), m5));
        *hi = vreinterpretq_u32_u8(vandq_u8(vld1q_u8(X + 64), m5));
    } else if (j == 1) {
        const uint8x16_t X0 = vld1q_u8(X), X1 = vld1q_u8(X + 16);
        *lo = vreinterpretq_u32_u8(vandq_u8(X1, m5));
        *hi = vreinterpretq_u32_u8(vshrq_n_u8(vsriq_n_u8(X0, X1, 3), 3));
    } else if (j == 2) {
        const uint8x16_t X2 = vld1q_u8(X + 32), X3 = vld1q_u8(X + 48);
        *lo = vreinterpretq_u32_u8(vandq_u8(X2, m5));
        *hi = vreinterpretq_u32_u8(vshrq_n_u8(vsriq_n_u8(X2, X3, 3), 3));
    } else {
        const uint8x16_t X1 = vld1q_u8(X + 16), X3 = vld1q_u8(X + 48), X4 = vld1q_u8(X + 64);
        const uint8x16_t Yb = vbslq_u8(vdupq_n_u8(0x40), vshlq_n_u8(X1, 1), vshlq_n_u8(X3, 2));
        *lo = vreinterpretq_u32_u8(vandq_u8(X3, m5));
        *hi = vreinterpretq_u32_u8(vshrq_n_u8(vsriq_n_u8(X4, Yb, 3), 3));
    }
}

/* Integer lane l = 4h + j of the 4 rows x the tile's tokens, into the f32
 * accumulators acc[l][rp][p] (rows 2rp, 2rp+1 x tokens 2p, 2p+1:
 * {r t, r u, r' t, r' u}) with the block's dv. */
static inline __attribute__((always_inline)) void q45_lane(const int t, const uint8_t *qv, const int h, const int j,
                                                           const uint8x16_t mu[4][4], const i8_act *ab,
                                                           const float32x4_t dv[2][I8_TP], float32x4_t acc[8][2][I8_TP],
                                                           const int TP) {
    const int l = 4 * h + j;
    const int32x4_t k8 = vdupq_n_s32(8);
    int32x4_t H[2][I8_TP], M[2][I8_TP];
    for (int p = 0; p < TP; p++) H[0][p] = H[1][p] = M[0][p] = M[1][p] = vdupq_n_s32(0);
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        uint32x4_t ql, qh;
        q45_quants(t, qv, c, h, j, &ql, &qh);
        /* rows 0, 1 and rows 2, 3: 8 bytes per row, sub-block 2c then 2c+1 */
        const uint8x16_t z0 = vreinterpretq_u8_u32(vzip1q_u32(ql, qh)), z1 = vreinterpretq_u8_u32(vzip2q_u32(ql, qh));
        const uint8x16_t h0 = vmulq_u8(z0, mu[c][0]), m0 = vmulq_u8(z0, mu[c][1]);
        const uint8x16_t h1 = vmulq_u8(z1, mu[c][2]), m1 = vmulq_u8(z1, mu[c][3]);
        for (int p = 0; p < TP; p++) {
            const int8x16_t B = ab->b[8 * c + l][p];
            H[0][p] = k_usmmla(H[0][p], h0, B);
            M[0][p] = k_usmmla(M[0][p], m0, B);
            H[1][p] = k_usmmla(H[1][p], h1, B);
            M[1][p] = k_usmmla(M[1][p], m1, B);
        }
    }
    for (int rp = 0; rp < 2; rp++)
        for (int p = 0; p < TP; p++) {
            const int32x4_t L = mla_lane0(M[rp][p], H[rp][p], k8);
            acc[l][rp][p] = vfmaq_f32(acc[l][rp][p], vcvtq_f32_s32(L), dv[rp][p]);
        }
}

/* Q4_K or Q5_K (t) x4, one block of one group x the tile's token pairs:
 * acc as q45_lane's; am[t][i]: Q4_K's min term, vector i of token t (rows
 * 0..3); Q5_K: am[t][0] its summs. */
static inline __attribute__((always_inline)) void q45k_block(const int t, const uint8_t *o, const i8_act *ab,
                                                             float32x4_t acc[8][2][I8_TP], float32x4_t am[2 * I8_TP][4],
                                                             const int TP) {
    const uint8x16_t m6 = vdupq_n_u8(63), m7 = vdupq_n_u8(7);
    const float32x4_t d4 = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)o)));
    const float32x4_t dm4 = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(o + 8))));
    const uint8x16_t S0 = vld1q_u8(o + 16), S1 = vld1q_u8(o + 32), N = vld1q_u8(o + 48);

    /* the min term, as the dotprod kernel forms it */
    int16x8_t mn[4];
    k_q45k_x4_mins_neon(S0, S1, N, mn);
    for (int k = 0; k < 2 * TP; k++) {
        int32x4_t M[4];
        k_q45k_x4_msums_neon(mn, ab->bs[k], M);
        /* Q5_K: summs = fmaf(-dmin * yd, (float)(M0 + M1 + M2 + M3), summs) */
        k_q45k_x4_minterm_neon(t == K_Q4_K, M, vmulq_f32(dm4, vdupq_n_f32(ab->yd[k])), am[k]);
    }

    /* the scale multipliers of chunk c: mu[c] = {h rows 0,1; m rows 0,1; h rows 2,3; m rows 2,3} */
    const uint8x16_t sc0 = vandq_u8(S0, m6), sc1 = vandq_u8(S1, m6);
    const uint8x16x2_t SH = {{vshrq_n_u8(sc0, 3), vshrq_n_u8(sc1, 3)}};
    const uint8x16x2_t SL = {{vandq_u8(sc0, m7), vandq_u8(sc1, m7)}};
    uint8x16_t mu[4][4];
    for (int rp = 0; rp < 2; rp++) {
        uint8x16_t ix = vld1q_u8(i8_sc_idx[rp]);
        for (int c = 0; c < 4; c++, ix = vaddq_u8(ix, vdupq_n_u8(8))) {
            mu[c][2 * rp] = vqtbl2q_u8(SH, ix);
            mu[c][2 * rp + 1] = vqtbl2q_u8(SL, ix);
        }
    }
    float32x4_t dv[2][I8_TP];
    for (int p = 0; p < TP; p++) {
        dv[0][p] = vmulq_f32(vzip1q_f32(d4, d4), ab->yt[p]);
        dv[1][p] = vmulq_f32(vzip2q_f32(d4, d4), ab->yt[p]);
    }

    const uint8_t *qv = o + 64;
    if (t == K_Q4_K) { /* one vector per lane: lane l as h = 0, j = l (measured: fewer spills than unrolled) */
        for (int l = 0; l < 8; l++)
            q45_lane(t, qv, 0, l, (const uint8x16_t(*)[4])mu, ab, (const float32x4_t(*)[I8_TP])dv, acc, TP);
        return;
    }
    for (int l = 0; l < 8; l++) { /* Q5_K: the decoding depends on l % 4 */
        const uint8x16_t(*m)[4] = (const uint8x16_t(*)[4])mu;
        const float32x4_t(*d)[I8_TP] = (const float32x4_t(*)[I8_TP])dv;
        switch (l & 3) {
        case 0: q45_lane(t, qv, l >> 2, 0, m, ab, d, acc, TP); break;
        case 1: q45_lane(t, qv, l >> 2, 1, m, ab, d, acc, TP); break;
        case 2: q45_lane(t, qv, l >> 2, 2, m, ab, d, acc, TP); break;
        default: q45_lane(t, qv, l >> 2, 3, m, ab, d, acc, TP); break;
        }
    }
}

/* groups [0, ng) (ng <= I8_GB) of w x token pairs [0, TP) of a */
static inline __attribute__((always_inline)) void q45k_tile(const int t, int64_t nb, const uint8_t *w, size_t row_bytes, int64_t ng,
                                                           const char *a, size_t a_row_bytes, float *y,
                                                           int64_t y_stride, const int TP) {
    i8_act ab[I8_NBC];
    float32x4_t acc[I8_GB][8][2][I8_TP];
    float32x4_t am[I8_GB][2 * I8_TP][4];
    const float32x4_t fz = vdupq_n_f32(0);
    for (int64_t g = 0; g < ng; g++) {
        for (int l = 0; l < 8; l++)
            for (int rp = 0; rp < 2; rp++)
                for (int p = 0; p < I8_TP; p++) acc[g][l][rp][p] = fz;
        for (int t = 0; t < 2 * I8_TP; t++)
            for (int i = 0; i < 4; i++) am[g][t][i] = fz;
    }
    for (int64_t b0 = 0; b0 < nb; b0 += I8_NBC) {
        const int nbc = nb - b0 < I8_NBC ? (int)(nb - b0) : I8_NBC;
        for (int j = 0; j < nbc; j++) i8_arrange(&ab[j], a, a_row_bytes, b0 + j, TP);
        for (int64_t g = 0; g < ng; g++) {
            const size_t gb = t == K_Q4_K ? Q4K_X4_BYTES : Q5K_X4_BYTES;
            const uint8_t *o = w + (size_t)(4 * g) * row_bytes + (size_t)b0 * gb;
            for (int j = 0; j < nbc; j++, o += gb) q45k_block(t, o, &ab[j], acc[g], am[g], TP);
        }
    }
    /* the dotprod kernel's final sums: hsum8 of the lanes minus the min term
     * (Q4_K: k_hsum8 - k_hsum4(am)) or plus summs (Q5_K) */
    for (int64_t g = 0; g < ng; g++)
        for (int p = 0; p < TP; p++) {
            float mt[2][4];
            for (int j = 0; j < 2; j++) {
                const float32x4_t *m = am[g][2 * p + j];
                vst1q_f32(mt[j], t == K_Q4_K ? vaddq_f32(vaddq_f32(m[0], m[2]), vaddq_f32(m[1], m[3])) : m[0]);
            }
            for (int rp = 0; rp < 2; rp++) {
                float32x4_t A[8];
                for (int l = 0; l < 8; l++) A[l] = acc[g][l][rp][p];
                const float32x4_t t0 = vaddq_f32(A[0], A[4]), t1 = vaddq_f32(A[1], A[5]);
                const float32x4_t t2 = vaddq_f32(A[2], A[6]), t3 = vaddq_f32(A[3], A[7]);
                float s[4];
                vst1q_f32(s, vaddq_f32(vaddq_f32(t0, t2), vaddq_f32(t1, t3)));
                for (int i = 0; i < 2; i++)     /* row 2rp + i */
                    for (int j = 0; j < 2; j++) /* token 2p + j */
                        y[(2 * p + j) * y_stride + 4 * g + 2 * rp + i] =
                            t == K_Q4_K ? s[2 * i + j] - mt[j][2 * rp + i] : s[2 * i + j] + mt[j][2 * rp + i];
            }
        }
}

/* one function per type and token-pair count, so that only one tile's stack
 * frame is live */
#define Q45K_TILE_FN(name, t, tp)                                                                            \
    static __attribute__((noinline)) void name##tp(int rows, int toks, int64_t n, const char *w, size_t row_bytes, \
                                                   const char *a, size_t a_row_bytes, float *y, int64_t y_stride) { \
        (void)toks;                                                                                          \
        q45k_tile(t, n / K_QKK, (const uint8_t *)w, row_bytes, rows / 4, a, a_row_bytes, y, y_stride, tp);  \
    }
Q45K_TILE_FN(q4k_tile, K_Q4_K, 1)
Q45K_TILE_FN(q4k_tile, K_Q4_K, 2)
Q45K_TILE_FN(q4k_tile, K_Q4_K, 3)
Q45K_TILE_FN(q4k_tile, K_Q4_K, 4)
Q45K_TILE_FN(q5k_tile, K_Q5_K, 1)
Q45K_TILE_FN(q5k_tile, K_Q5_K, 2)
Q45K_TILE_FN(q5k_tile, K_Q5_K, 3)
Q45K_TILE_FN(q5k_tile, K_Q5_K, 4)
#undef Q45K_TILE_FN

/* The pieces (k_mm_run, mm_driver.h): up to I8_GB groups x 2, 4, 6 or 8
 * tokens (1 to I8_TP token pairs); the driver walks the rows in chunks of
 * 4 * I8_GB and a batch's tokens in pieces of 8, then 6, 4 or 2, and runs
 * one token (or the last of an odd count) through the dotprod set's piece
 * (USMMLA pairs tokens). */
static const mm_kernel mm_q4k = {.pack_rows = 4, .pack_one = k_mm_piece_q4_k_x4_neon_dot, .pack_chunk = 4 * I8_GB,
                                 .pack_toks = {8, 6, 4, 2}, .pack_pieces = {q4k_tile4, q4k_tile3, q4k_tile2, q4k_tile1}};
static const mm_kernel mm_q5k = {.pack_rows = 4, .pack_one = k_mm_piece_q5_k_x4_neon_dot, .pack_chunk = 4 * I8_GB,
                                 .pack_toks = {8, 6, 4, 2}, .pack_pieces = {q5k_tile4, q5k_tile3, q5k_tile2, q5k_tile1}};

void k_mm_packed_q4_k_x4_neon_i8mm(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4k, K_MM_TILE_ARGS); }
void k_mm_packed_q5_k_x4_neon_i8mm(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5k, K_MM_TILE_ARGS); }

K_I8MM_END
