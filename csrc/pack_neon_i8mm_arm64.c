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
 * not help. With 4 token pairs (every 8 tokens of a batch) each group's
 * blocks are one inline assembly loop on fixed registers (q45k_tile_a4,
 * the same steps); 3 pairs run the C below, 2 and 1 the dotprod set's
 * 4- and 2-token pieces (mm_q4k below).
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
#include <stddef.h>
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

/* ---- 4 token pairs (8 tokens) in fixed registers ------------------------
 * q45k_tile with TP = 4, each group's blocks one inline assembly loop on
 * fixed registers (the same integer lanes, USMMLA sums, float steps and
 * order as q45_lane and q45k_block: bits unchanged). Written in C, clang
 * kept 8 of the 16 scale multipliers and 7 of the 8 dv of a block on the
 * stack and reloaded them per lane, loaded the activations in 12 LDR/LDP
 * per lane and ran the mins in a loop of 29 instructions per token. Here,
 * per block: the mins' terms (per token), the 16 scale multipliers mu (to
 * memory, one LD1 per chunk in the lanes) and the 8 dv (to memory, two
 * LD1 per lane); then lane by lane:
 *   v0-v7   H[rp][p] at v(4rp + p), then the lane's 8 f32 accumulators
 *   v8-v15  M[rp][p] at v(8 + 4rp + p), then 8H + M as f32
 *   v16-v19 the activations of the 4 token pairs (one LD1), then dv[0][p]
 *   v20-v23 mu[c] (one LD1), then the premultiplied weights; then dv[1][p]
 *   v24-v26 the chunk's quants (decoding)
 *   v27 {8, ...} (8H + M by element), v28 0x40 (Q5_K), v29 7, v30 63,
 *   v31 15 (Q4_K) or 31 (Q5_K)
 * The activations' walker steps 512 bytes (a chunk) and -1472 after the
 * lane's last chunk (to the next lane's), the mu walker 64 and -192. */
#if defined(__clang__)
#define I8A_ARCH ""
#else
#define I8A_ARCH ".arch armv8.2-a+dotprod+i8mm\n\t"
#endif
_Static_assert(sizeof(i8_act) == 2272 && offsetof(i8_act, yt) == 2048 && offsetof(i8_act, bs) == 2112 &&
                   offsetof(i8_act, yd) == 2240,
               "the asm below addresses i8_act by these offsets");
/* the TBL indices of mu[c][2rp], mu[c][2rp + 1] (i8_sc_idx[rp] + 8c) at [2c + rp] */
#define I8_IX(x) {x, x, x, x, x + 4, x + 4, x + 4, x + 4, x + 1, x + 1, x + 1, x + 1, x + 5, x + 5, x + 5, x + 5}
static const uint8_t i8_sc_ix[8][16] __attribute__((aligned(16))) = {I8_IX(0),  I8_IX(2),  I8_IX(8),  I8_IX(10),
                                                                     I8_IX(16), I8_IX(18), I8_IX(24), I8_IX(26)};
#undef I8_IX
/* the block's head: d (v17) and dmin (v18) of the 4 rows, S0 (v19), S1
 * (v20), the mins n[0..3] (k_q45k_x4_mins_neon) in v0-v3, the tokens' yd in
 * v24/v25; xt = &ab->yt */
#define I8A_HEAD                                                                                     \
    K_Q45K_X4_ASM_HEAD                                                                               \
    "add %[xt], %[ab], #2048\n\t"                                                                    \
    "ldp q24, q25, [%[xt], #192]\n\t"
/* Q4_K, token K (yd: lane YI of v YV): M[0..3] = k_q45k_x4_msums_neon,
 * am[K][j] += cvt(M[j]) x (dmin x yd) (k_q45k_x4_minterm_neon), am walked by xam */
#define I8A_MIN4_(K, YV, YI)                                                                         \
    "ldr q12, [%[xt], #(64 + 16 * " #K ")]\n\t"                                                      \
    "fmul v13.4s, v18.4s, v" #YV ".s[" #YI "]\n\t"                                                   \
    "smull v8.4s, v0.4h, v12.h[0]\n\t"                                                               \
    "smull v9.4s, v1.4h, v12.h[2]\n\t"                                                               \
    "smull v10.4s, v2.4h, v12.h[4]\n\t"                                                              \
    "smull v11.4s, v3.4h, v12.h[6]\n\t"                                                              \
    "smlal2 v8.4s, v0.8h, v12.h[1]\n\t"                                                              \
    "smlal2 v9.4s, v1.8h, v12.h[3]\n\t"                                                              \
    "smlal2 v10.4s, v2.8h, v12.h[5]\n\t"                                                             \
    "smlal2 v11.4s, v3.8h, v12.h[7]\n\t"                                                             \
    "scvtf v8.4s, v8.4s\n\t"                                                                         \
    "scvtf v9.4s, v9.4s\n\t"                                                                         \
    "scvtf v10.4s, v10.4s\n\t"                                                                       \
    "scvtf v11.4s, v11.4s\n\t"                                                                       \
    "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[xam]]\n\t"                                                 \
    "fmla v4.4s, v8.4s, v13.4s\n\t"                                                                  \
    "fmla v5.4s, v9.4s, v13.4s\n\t"                                                                  \
    "fmla v6.4s, v10.4s, v13.4s\n\t"                                                                 \
    "fmla v7.4s, v11.4s, v13.4s\n\t"                                                                 \
    "st1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[xam]], #64\n\t"
#define I8A_MIN4(...) I8A_MIN4_(__VA_ARGS__)
#define I8A_MINS4                                                                                    \
    "mov %[xam], %[am]\n\t" I8A_MIN4(0, 24, 0) I8A_MIN4(1, 24, 1) I8A_MIN4(2, 24, 2) I8A_MIN4(3, 24, 3) \
        I8A_MIN4(4, 25, 0) I8A_MIN4(5, 25, 1) I8A_MIN4(6, 25, 2) I8A_MIN4(7, 25, 3)
/* Q5_K, token K: its summs (in AM) += -(dmin x yd) x cvt(M0 + M1 + M2 + M3),
 * the 8 products summed in one chain (integers: the same sum) */
#define I8A_MIN5_(K, YV, YI, AM)                                                                     \
    "ldr q12, [%[xt], #(64 + 16 * " #K ")]\n\t"                                                      \
    "fmul v13.4s, v18.4s, v" #YV ".s[" #YI "]\n\t"                                                   \
    "smull v14.4s, v0.4h, v12.h[0]\n\t"                                                              \
    "smlal2 v14.4s, v0.8h, v12.h[1]\n\t"                                                             \
    "smlal v14.4s, v1.4h, v12.h[2]\n\t"                                                              \
    "smlal2 v14.4s, v1.8h, v12.h[3]\n\t"                                                             \
    "smlal v14.4s, v2.4h, v12.h[4]\n\t"                                                              \
    "smlal2 v14.4s, v2.8h, v12.h[5]\n\t"                                                             \
    "smlal v14.4s, v3.4h, v12.h[6]\n\t"                                                              \
    "smlal2 v14.4s, v3.8h, v12.h[7]\n\t"                                                             \
    "scvtf v14.4s, v14.4s\n\t"                                                                       \
    "fneg v13.4s, v13.4s\n\t"                                                                        \
    "fmla v" #AM ".4s, v13.4s, v14.4s\n\t"
#define I8A_MIN5(...) I8A_MIN5_(__VA_ARGS__)
#define I8A_MINS5                                                                                    \
    "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[am]]\n\t"                                                  \
    "ld1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[am2]]\n\t"                                               \
    I8A_MIN5(0, 24, 0, 4) I8A_MIN5(1, 24, 1, 5) I8A_MIN5(2, 24, 2, 6) I8A_MIN5(3, 24, 3, 7)          \
    I8A_MIN5(4, 25, 0, 8) I8A_MIN5(5, 25, 1, 9) I8A_MIN5(6, 25, 2, 10) I8A_MIN5(7, 25, 3, 11)        \
    "st1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[am]]\n\t"                                                  \
    "st1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[am2]]\n\t"
/* mu[0..15] to memory (xm rewound): sc = S & 63, SH = sc >> 3, SL = sc & 7,
 * mu[c][2rp] = TBL(SH, ix[2c + rp]), mu[c][2rp + 1] = TBL(SL, ...) */
#define I8A_MU_(IA, IB)                                                                              \
    "tbl v8.16b, {v21.16b, v22.16b}, v" #IA ".16b\n\t"                                              \
    "tbl v9.16b, {v23.16b, v24.16b}, v" #IA ".16b\n\t"                                              \
    "tbl v10.16b, {v21.16b, v22.16b}, v" #IB ".16b\n\t"                                             \
    "tbl v11.16b, {v23.16b, v24.16b}, v" #IB ".16b\n\t"                                             \
    "st1 {v8.16b, v9.16b, v10.16b, v11.16b}, [%[xm]], #64\n\t"
#define I8A_MU                                                                                       \
    "and v19.16b, v19.16b, v30.16b\n\t"                                                              \
    "and v20.16b, v20.16b, v30.16b\n\t"                                                              \
    "ushr v21.16b, v19.16b, #3\n\t"                                                                  \
    "ushr v22.16b, v20.16b, #3\n\t"                                                                  \
    "and v23.16b, v19.16b, v29.16b\n\t"                                                              \
    "and v24.16b, v20.16b, v29.16b\n\t"                                                              \
    "ld1 {v0.16b, v1.16b, v2.16b, v3.16b}, [%[ix]]\n\t"                                              \
    "ld1 {v4.16b, v5.16b, v6.16b, v7.16b}, [%[ix2]]\n\t"                                             \
    "mov %[xm], %[mu]\n\t" I8A_MU_(0, 1) I8A_MU_(2, 3) I8A_MU_(4, 5) I8A_MU_(6, 7)                  \
    "mov %[xm], %[mu]\n\t"
/* dv[rp][p] = d of rows (2rp, 2rp, 2rp + 1, 2rp + 1) x yt[p], to memory */
#define I8A_DV                                                                                       \
    "zip1 v12.4s, v17.4s, v17.4s\n\t"                                                                \
    "zip2 v13.4s, v17.4s, v17.4s\n\t"                                                                \
    "ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[xt]]\n\t"                                                  \
    "fmul v4.4s, v12.4s, v0.4s\n\t"                                                                  \
    "fmul v5.4s, v12.4s, v1.4s\n\t"                                                                  \
    "fmul v6.4s, v12.4s, v2.4s\n\t"                                                                  \
    "fmul v7.4s, v12.4s, v3.4s\n\t"                                                                  \
    "fmul v8.4s, v13.4s, v0.4s\n\t"                                                                  \
    "fmul v9.4s, v13.4s, v1.4s\n\t"                                                                  \
    "fmul v10.4s, v13.4s, v2.4s\n\t"                                                                 \
    "fmul v11.4s, v13.4s, v3.4s\n\t"                                                                 \
    "st1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[dv]]\n\t"                                                  \
    "st1 {v8.4s, v9.4s, v10.4s, v11.4s}, [%[dv2]]\n\t"
#define I8A_ZERO                                                                                     \
    "movi v0.2d, #0\n\t"                                                                             \
    "movi v1.2d, #0\n\t"                                                                             \
    "movi v2.2d, #0\n\t"                                                                             \
    "movi v3.2d, #0\n\t"                                                                             \
    "movi v4.2d, #0\n\t"                                                                             \
    "movi v5.2d, #0\n\t"                                                                             \
    "movi v6.2d, #0\n\t"                                                                             \
    "movi v7.2d, #0\n\t"                                                                             \
    "movi v8.2d, #0\n\t"                                                                             \
    "movi v9.2d, #0\n\t"                                                                             \
    "movi v10.2d, #0\n\t"                                                                            \
    "movi v11.2d, #0\n\t"                                                                            \
    "movi v12.2d, #0\n\t"                                                                            \
    "movi v13.2d, #0\n\t"                                                                            \
    "movi v14.2d, #0\n\t"                                                                            \
    "movi v15.2d, #0\n\t"
/* the chunk's premultiplied weights: z0 = rows 0, 1 (zip1 of lo v25, hi
 * v24), z1 = rows 2, 3; v20..v23 = {z0 x SH, z0 x SL, z1 x SH, z1 x SL} */
#define I8A_ZIPMUL                                                                                   \
    "zip1 v26.4s, v25.4s, v24.4s\n\t"                                                                \
    "zip2 v25.4s, v25.4s, v24.4s\n\t"                                                                \
    "mul v20.16b, v20.16b, v26.16b\n\t"                                                              \
    "mul v21.16b, v21.16b, v26.16b\n\t"                                                              \
    "mul v22.16b, v22.16b, v25.16b\n\t"                                                              \
    "mul v23.16b, v23.16b, v25.16b\n\t"
/* token pair P's USMMLAs (activations v B): H0, M0 (rows 0, 1), H1, M1 */
#define I8A_P(H0, M0, H1, M1, B)                                                                     \
    "usmmla v" #H0 ".4s, v20.16b, v" #B ".16b\n\t"                                                   \
    "usmmla v" #M0 ".4s, v21.16b, v" #B ".16b\n\t"                                                   \
    "usmmla v" #H1 ".4s, v22.16b, v" #B ".16b\n\t"                                                   \
    "usmmla v" #M1 ".4s, v23.16b, v" #B ".16b\n\t"
#define I8A_USM                                                                                      \
    I8A_P(0, 8, 4, 12, 16) I8A_P(1, 9, 5, 13, 17) I8A_P(2, 10, 6, 14, 18) I8A_P(3, 11, 7, 15, 19)
/* one chunk: mu (post MP), the quants (DEC: lo v25, hi v24), the
 * activations (post BP), 16 USMMLAs */
#define I8A_CH(DEC, MP, BP)                                                                          \
    "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[xm]], " MP "\n\t" DEC I8A_ZIPMUL                   \
    "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[xb]], " BP "\n\t" I8A_USM
/* the lane's float step: L = M + 8H, acc[l][rp][p] += cvt(L) x dv[rp][p] */
#define I8A_FLOAT                                                                                    \
    "mla v8.4s, v0.4s, v27.s[0]\n\t"                                                                 \
    "mla v9.4s, v1.4s, v27.s[0]\n\t"                                                                 \
    "mla v10.4s, v2.4s, v27.s[0]\n\t"                                                                \
    "mla v11.4s, v3.4s, v27.s[0]\n\t"                                                                \
    "mla v12.4s, v4.4s, v27.s[0]\n\t"                                                                \
    "mla v13.4s, v5.4s, v27.s[0]\n\t"                                                                \
    "mla v14.4s, v6.4s, v27.s[0]\n\t"                                                                \
    "mla v15.4s, v7.4s, v27.s[0]\n\t"                                                                \
    NEON_SCVTF_V8_V15                                                                                \
    "ld1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[xa]], #64\n\t"                                             \
    "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[xa]], #64\n\t"                                             \
    "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[dv]]\n\t"                                              \
    "ld1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[dv2]]\n\t"                                             \
    "fmla v0.4s, v8.4s, v16.4s\n\t"                                                                  \
    "fmla v1.4s, v9.4s, v17.4s\n\t"                                                                  \
    "fmla v2.4s, v10.4s, v18.4s\n\t"                                                                 \
    "fmla v3.4s, v11.4s, v19.4s\n\t"                                                                 \
    "fmla v4.4s, v12.4s, v20.4s\n\t"                                                                 \
    "fmla v5.4s, v13.4s, v21.4s\n\t"                                                                 \
    "fmla v6.4s, v14.4s, v22.4s\n\t"                                                                 \
    "fmla v7.4s, v15.4s, v23.4s\n\t"                                                                 \
    "st1 {v0.4s, v1.4s, v2.4s, v3.4s}, [%[xs]], #64\n\t"                                             \
    "st1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[xs]], #64\n\t"
/* Q4_K: lane L's nibbles of chunk C (lo: sub-block 2c, hi: 2c + 1) */
#define I8A_D4(C, L)                                                                                 \
    "ldr q24, [%[o], #(64 + 16 * (8 * " #C " + " #L "))]\n\t"                                       \
    "and v25.16b, v24.16b, v31.16b\n\t"                                                              \
    "ushr v24.16b, v24.16b, #4\n\t"
#define I8A_LANE4(L)                                                                                 \
    I8A_ZERO I8A_CH(I8A_D4(0, L), "#64", "%[s512]") I8A_CH(I8A_D4(1, L), "#64", "%[s512]")           \
    I8A_CH(I8A_D4(2, L), "#64", "%[s512]") I8A_CH(I8A_D4(3, L), "%[m192]", "%[sback]") I8A_FLOAT
/* Q5_K: lane 4H + J of chunk C, as q45_quants (X at o + 64 + 80 (2C + H)) */
#define I8A_X(C, H, OFF) "[%[o], #(64 + 80 * (2 * " #C " + " #H ") + " #OFF ")]"
#define I8A_D5_0(C, H)                                                                               \
    "ldr q25, " I8A_X(C, H, 0) "\n\t"                                                                \
    "ldr q24, " I8A_X(C, H, 64) "\n\t"                                                               \
    "and v25.16b, v25.16b, v31.16b\n\t"                                                              \
    "and v24.16b, v24.16b, v31.16b\n\t"
#define I8A_D5_1(C, H)                                                                               \
    "ldr q25, " I8A_X(C, H, 16) "\n\t"                                                               \
    "ldr q24, " I8A_X(C, H, 0) "\n\t"                                                                \
    "sri v24.16b, v25.16b, #3\n\t"                                                                   \
    "ushr v24.16b, v24.16b, #3\n\t"                                                                  \
    "and v25.16b, v25.16b, v31.16b\n\t"
#define I8A_D5_2(C, H)                                                                               \
    "ldr q24, " I8A_X(C, H, 32) "\n\t"                                                               \
    "ldr q26, " I8A_X(C, H, 48) "\n\t"                                                               \
    "and v25.16b, v24.16b, v31.16b\n\t"                                                              \
    "sri v24.16b, v26.16b, #3\n\t"                                                                   \
    "ushr v24.16b, v24.16b, #3\n\t"
#define I8A_D5_3(C, H)                                                                               \
    "ldr q26, " I8A_X(C, H, 48) "\n\t"                                                               \
    "ldr q16, " I8A_X(C, H, 16) "\n\t"                                                               \
    "ldr q24, " I8A_X(C, H, 64) "\n\t"                                                               \
    "shl v16.16b, v16.16b, #1\n\t"                                                                   \
    "shl v17.16b, v26.16b, #2\n\t"                                                                   \
    "bit v17.16b, v16.16b, v28.16b\n\t"                                                              \
    "sri v24.16b, v17.16b, #3\n\t"                                                                   \
    "ushr v24.16b, v24.16b, #3\n\t"                                                                  \
    "and v25.16b, v26.16b, v31.16b\n\t"
#define I8A_LANE5(H, J)                                                                              \
    I8A_ZERO I8A_CH(I8A_D5_##J(0, H), "#64", "%[s512]") I8A_CH(I8A_D5_##J(1, H), "#64", "%[s512]")   \
    I8A_CH(I8A_D5_##J(2, H), "#64", "%[s512]") I8A_CH(I8A_D5_##J(3, H), "%[m192]", "%[sback]") I8A_FLOAT
#define I8A_LANES_PRE                                                                                \
    "mov %[xb], %[ab]\n\t"                                                                           \
    "mov %[xa], %[acc]\n\t"                                                                          \
    "mov %[xs], %[acc]\n\t"
#define I8A_Q4_BODY                                                                                  \
    I8A_HEAD I8A_MINS4 I8A_MU I8A_DV I8A_LANES_PRE I8A_LANE4(0) I8A_LANE4(1) I8A_LANE4(2) I8A_LANE4(3) \
        I8A_LANE4(4) I8A_LANE4(5) I8A_LANE4(6) I8A_LANE4(7)
#define I8A_Q5_BODY                                                                                  \
    I8A_HEAD I8A_MINS5 I8A_MU I8A_DV I8A_LANES_PRE I8A_LANE5(0, 0) I8A_LANE5(0, 1) I8A_LANE5(0, 2)   \
        I8A_LANE5(0, 3) I8A_LANE5(1, 0) I8A_LANE5(1, 1) I8A_LANE5(1, 2) I8A_LANE5(1, 3)
/* nb (>= 1) blocks of one group at o, activations ab[0..nb) */
#define I8A_LOOP(CONSTS, BODY, GB)                                                                   \
    __asm__ volatile(I8A_ARCH "movi v27.4s, #8\n\t"                                                  \
                              "movi v29.16b, #7\n\t"                                                 \
                              "movi v30.16b, #63\n\t" CONSTS "1:\n\t" BODY "add %[o], %[o], #" #GB "\n\t" \
                              "add %[ab], %[ab], #2272\n\t"                                          \
                              "subs %[nb], %[nb], #1\n\t"                                            \
                              "b.ne 1b\n\t"                                                          \
                     : [o] "+r"(o), [ab] "+r"(abp), [nb] "+r"(n), [xb] "=&r"(xb), [xt] "=&r"(xt),   \
                       [xa] "=&r"(xa), [xs] "=&r"(xs), [xm] "=&r"(xm), [xam] "=&r"(xam)             \
                     : [acc] "r"(accg), [am] "r"(amg), [am2] "r"(amg + 4), [mu] "r"(mu), [dv] "r"(dv),  \
                       [dv2] "r"(dv + 4), [ix] "r"(i8_sc_ix[0]), [ix2] "r"(i8_sc_ix[4]), [s512] "r"(s512), \
                       [sback] "r"(sback), [m192] "r"(m192)                                         \
                     : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12",     \
                       "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", \
                       "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory")

/* q45k_tile with TP = 4; am: Q4_K as there (am[g][k][0..3], token k),
 * Q5_K token k's summs at ((float32x4_t *)am[g])[k] */
static inline __attribute__((always_inline)) void q45k_tile_a4(const int t, int64_t nb, const uint8_t *w,
                                                              size_t row_bytes, int64_t ng, const char *a,
                                                              size_t a_row_bytes, float *y, int64_t y_stride) {
    i8_act ab[I8_NBC];
    float32x4_t acc[I8_GB][8][2][I8_TP];
    float32x4_t am[I8_GB][2 * I8_TP][4];
    uint8x16_t mu[16];
    float32x4_t dv[8];
    const float32x4_t fz = vdupq_n_f32(0);
    for (int64_t g = 0; g < ng; g++) {
        for (int l = 0; l < 8; l++)
            for (int rp = 0; rp < 2; rp++)
                for (int p = 0; p < I8_TP; p++) acc[g][l][rp][p] = fz;
        for (int k = 0; k < 2 * I8_TP; k++)
            for (int i = 0; i < 4; i++) am[g][k][i] = fz;
    }
    const int64_t s512 = 512, sback = -1472, m192 = -192;
    for (int64_t b0 = 0; b0 < nb; b0 += I8_NBC) {
        const int nbc = nb - b0 < I8_NBC ? (int)(nb - b0) : I8_NBC;
        for (int j = 0; j < nbc; j++) i8_arrange(&ab[j], a, a_row_bytes, b0 + j, I8_TP);
        for (int64_t g = 0; g < ng; g++) {
            const size_t gb = t == K_Q4_K ? Q4K_X4_BYTES : Q5K_X4_BYTES;
            const uint8_t *o = w + (size_t)(4 * g) * row_bytes + (size_t)b0 * gb;
            const i8_act *abp = ab;
            int64_t n = nbc;
            float32x4_t *accg = &acc[g][0][0][0], *amg = &am[g][0][0];
            const void *xb, *xt, *xa, *xs, *xm, *xam;
            if (t == K_Q4_K)
                I8A_LOOP("movi v31.16b, #15\n\t", I8A_Q4_BODY, 576);
            else
                I8A_LOOP("movi v31.16b, #31\n\t"
                         "movi v28.16b, #0x40\n\t",
                         I8A_Q5_BODY, 704);
            (void)xb, (void)xt, (void)xa, (void)xs, (void)xm, (void)xam;
        }
    }
    for (int64_t g = 0; g < ng; g++)
        for (int p = 0; p < I8_TP; p++) {
            float mt[2][4];
            for (int j = 0; j < 2; j++) {
                const float32x4_t *m = am[g][2 * p + j];
                vst1q_f32(mt[j], t == K_Q4_K ? vaddq_f32(vaddq_f32(m[0], m[2]), vaddq_f32(m[1], m[3]))
                                             : (&am[g][0][0])[2 * p + j]);
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
Q45K_TILE_FN(q4k_tile, K_Q4_K, 3)
Q45K_TILE_FN(q5k_tile, K_Q5_K, 3)
#undef Q45K_TILE_FN
/* 4 token pairs: q45k_tile_a4 */
static __attribute__((noinline)) void q4k_tile4(int rows, int toks, int64_t n, const char *w, size_t row_bytes,
                                                const char *a, size_t a_row_bytes, float *y, int64_t y_stride) {
    (void)toks;
    q45k_tile_a4(K_Q4_K, n / K_QKK, (const uint8_t *)w, row_bytes, rows / 4, a, a_row_bytes, y, y_stride);
}
static __attribute__((noinline)) void q5k_tile4(int rows, int toks, int64_t n, const char *w, size_t row_bytes,
                                                const char *a, size_t a_row_bytes, float *y, int64_t y_stride) {
    (void)toks;
    q45k_tile_a4(K_Q5_K, n / K_QKK, (const uint8_t *)w, row_bytes, rows / 4, a, a_row_bytes, y, y_stride);
}

/* The pieces (k_mm_run, mm_driver.h): up to I8_GB groups x 8 or 6 tokens
 * (4 or 3 token pairs); the driver walks the rows in chunks of 4 * I8_GB
 * and a batch's tokens in pieces of 8, then 6, 4 or 2, and runs one token
 * (or the last of an odd count) through the dotprod set's piece (USMMLA
 * pairs tokens). 4 and 2 tokens run the dotprod set's pieces too, which
 * take fewer instructions there (proxy, per 256 weights per row and token,
 * Q4_K / Q5_K: 61.6 / 66.4 for 4 tokens against 69.1 / 77.5 in 2 token
 * pairs here, 70.5 / 80.6 for 2 against 90.5 / 109.5). */
static const mm_kernel mm_q4k = {
    .pack_rows = 4,
    .pack_one = k_mm_piece_q4_k_x4_neon_dot,
    .pack_chunk = 4 * I8_GB,
    .pack_toks = {8, 6, 4, 2},
    .pack_pieces = {q4k_tile4, q4k_tile3, k_mm_piece_q4_k_x4_t4_neon_dot, k_mm_piece_q4_k_x4_t2_neon_dot}};
static const mm_kernel mm_q5k = {
    .pack_rows = 4,
    .pack_one = k_mm_piece_q5_k_x4_neon_dot,
    .pack_chunk = 4 * I8_GB,
    .pack_toks = {8, 6, 4, 2},
    .pack_pieces = {q5k_tile4, q5k_tile3, k_mm_piece_q5_k_x4_t4_neon_dot, k_mm_piece_q5_k_x4_t2_neon_dot}};

void k_mm_packed_q4_k_x4_neon_i8mm(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4k, K_MM_TILE_ARGS); }
void k_mm_packed_q5_k_x4_neon_i8mm(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5k, K_MM_TILE_ARGS); }

#undef I8A_ARCH
#undef I8A_CH
#undef I8A_D4
#undef I8A_D5_0
#undef I8A_D5_1
#undef I8A_D5_2
#undef I8A_D5_3
#undef I8A_DV
#undef I8A_FLOAT
#undef I8A_HEAD
#undef I8A_LANE4
#undef I8A_LANE5
#undef I8A_LANES_PRE
#undef I8A_LOOP
#undef I8A_MIN4
#undef I8A_MIN4_
#undef I8A_MIN5
#undef I8A_MIN5_
#undef I8A_MINS4
#undef I8A_MINS5
#undef I8A_MU
#undef I8A_MU_
#undef I8A_P
#undef I8A_Q4_BODY
#undef I8A_Q5_BODY
#undef I8A_USM
#undef I8A_X
#undef I8A_ZERO
#undef I8A_ZIPMUL

K_I8MM_END
