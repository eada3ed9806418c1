/*
 * pack_neon_dot_arm64.c — row-interleaved ("packed") weights of the
 * dotprod set (kernels.h, "row-interleaved weights"): groups of 4 rows
 * whose blocks sit side by side, one activation load feeding the 4 rows
 * through SDOT by element (k_sdot_lane<i>, sdot_arm64.h).
 *
 * The results are the bits of the set's unpacked kernels (the Q4_K dot of
 * dot_body_arm64.h and its tiles): per row the same 8 integer lanes per
 * block (lane l = the products of elements 4l..4l+3 of each 32-element
 * sub-block, times its scale), the same FMAs into 8 f32 lanes and the same
 * final sums. Here the 4 lanes of a vector are the 4 rows: vector l holds
 * integer lane l of rows 0..3, so every float step is the unpacked one,
 * done for 4 rows at once.
 *
 * Q4_K x4 layout: per super-block b, 576 bytes (4 x 144) at 576 * b from
 * the group's start:
 *     0  d[4]      f16, row r at 2r
 *     8  dmin[4]   f16
 *    16  S[32]     byte 4s + r = scale s of row r (6 bits) | (min s >> 4) << 6
 *    48  N[16]     byte 4s + r (s < 4) = (min s of row r) & 15
 *                                      | ((min s+4 of row r) & 15) << 4
 *    64  Q[512]    16 bytes per (c, l), c = 0..3 chunks of 64 elements,
 *                  l = 0..7, at 64 + 16 * (8c + l): bytes 4r..4r+3 = row
 *                  r's qs[32c + 4l .. 32c + 4l + 3] (low nibbles: elements
 *                  4l..4l+3 of sub-block 2c, high: of sub-block 2c + 1)
 *
 * Q5_K x4 layout: per super-block b, 704 bytes (4 x 176) at 704 * b: the
 * head of Q4_K x4 (d, dmin, S, N at 0..63), then per chunk c and half h
 * (lanes 4h..4h+3) 80 bytes at 64 + 80 * (2c + h): the 5-bit quants of
 * the 8 vectors u[j] = lane 4h+j of sub-block 2c, u[4+j] = lane 4h+j of
 * sub-block 2c+1 (bytes 4r..4r+3 of a vector: row r's elements), 8 values
 * in 5 bytes at X0..X4 (16 bytes apart):
 *   X0 = u0 | (u5 >> 2) << 5        X1 = u1 | (u7 & 1) << 5 | (u5 & 3) << 6
 *   X2 = u2 | (u6 >> 2) << 5        X3 = u3 | (u7 >> 1 & 1) << 5 | (u6 & 3) << 6
 *   X4 = u4 | (u7 >> 2) << 5
 * (decoded with 5 ANDs and 3 shift-inserts, see q45k_x4_c)
 *
 * IQ4_XS x4 layout: per super-block b, 544 bytes (4 x 136) at 544 * b:
 *     0  d[4]      f16
 *     8  S[16]     byte 4s + r (s < 4) = scale s of row r (6 bits, before
 *                  the -32) | (scale s+4 >> 4) << 6
 *    24  N[8]      byte k = n[k] | n[k+8] << 4, n[4s + r] = scale s+4 of
 *                  row r & 15 (s < 4)
 *    32  Q[512]    as Q4_K x4: 16 bytes per (c, l) at 32 + 16 * (8c + l),
 *                  bytes 4r..4r+3 = row r's nibbles of elements 4l..4l+3
 *                  of sub-block 2c (low) and of sub-block 2c+1 (high)
 *
 * Q8_0 x8 layout: per block b, 272 bytes (8 x 34) at 272 * b:
 *     0  d[8]      f16, row r at 2r
 *    16  Q[256]    32 bytes per l = 0..7 at 16 + 32l: bytes 4r..4r+3 = row
 *                  r's qs[4l .. 4l + 3], r = 0..7
 * (8 rows: the block's float work, 8 lanes per row, is most of the cost,
 * and 8 rows keep 16 accumulators, no spills; d first: the kernel walks
 * the block with post-incremented loads only)
 *
 * Q6_K x4 layout: per super-block b, 840 bytes (4 x 210) at 840 * b. The
 * 6-bit quants u (0..63) of 16-element group g (elements 16g..16g+15) as
 * 4 vectors W(g, j), j = 0..3, bytes 4r..4r+3 = row r's u of elements
 * 16g + 4j .. 16g + 4j + 3, stored in 3 x 16 bytes:
 *   48g        X = W(g,0) | (W(g,3) & 3) << 6
 *   48g + 16   Y = W(g,1) | (W(g,3) >> 2 & 3) << 6
 *   48g + 32   Z = W(g,2) | (W(g,3) >> 4) << 6
 *   768        scales: byte 4g + r = scale g of row r (int8)
 *   832        d[4]  f16
 */
#include "sdot_arm64.h"
#include "kernels_neon_arm64.h"
#include "mm_driver.h"

/* f16 -> f32 as dot_body_arm64.h's k_h2f */
static inline float k_f16_to_f32_neon(k_half h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* The walk of the pack functions: for each whole group of G rows (nrows a
 * multiple of G, row_bytes apart) and each block b of its rows, fill(o, x)
 * writes the group's block b (xb bytes at o, b * xb into the group) from
 * block b of its G rows (x[r], bsz bytes each). */
typedef void pack_fill_fn(uint8_t *o, const char *const x[8]);
static void pack_groups(int G, int64_t nb, size_t bsz, size_t xb, const void *src, size_t row_bytes, int64_t nrows,
                        void *dst, pack_fill_fn *fill) {
    for (int64_t g = 0; g + G <= nrows; g += G) {
        uint8_t *o = (uint8_t *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++, o += xb) {
            const char *x[8];
            for (int r = 0; r < G; r++) x[r] = (const char *)src + (size_t)(g + r) * row_bytes + (size_t)b * bsz;
            fill(o, x);
        }
    }
}

#define Q4K_X4_BYTES (4 * sizeof(k_block_q4_k))

/* The 64-byte head of a Q4_K / Q5_K x4 group block (d, dmin, S, N above)
 * from the 4 rows' blocks x[r] (d, dmin and scales at the same offsets in
 * both formats). */
static void pack_q45k_head(const k_block_q4_k *const x[4], uint8_t *o) {
    uint8_t sc[4][8], m[4][8];
    for (int r = 0; r < 4; r++) {
        memcpy(o + 2 * r, &x[r]->d, 2);
        memcpy(o + 8 + 2 * r, &x[r]->dmin, 2);
        for (int s = 0; s < 8; s++) k_q4k_scale_min(s, x[r]->scales, &sc[r][s], &m[r][s]);
    }
    for (int s = 0; s < 8; s++)
        for (int r = 0; r < 4; r++) o[16 + 4 * s + r] = (uint8_t)(sc[r][s] | (m[r][s] >> 4) << 6);
    for (int s = 0; s < 4; s++)
        for (int r = 0; r < 4; r++) o[48 + 4 * s + r] = (uint8_t)((m[r][s] & 15) | (m[r][s + 4] & 15) << 4);
}

static void pack_q4k_fill(uint8_t *o, const char *const xb[8]) {
    const k_block_q4_k *x[4];
    for (int r = 0; r < 4; r++) x[r] = (const k_block_q4_k *)xb[r];
    pack_q45k_head(x, o);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 8; l++)
            for (int r = 0; r < 4; r++) memcpy(o + 64 + 16 * (8 * c + l) + 4 * r, x[r]->qs + 32 * c + 4 * l, 4);
}

void k_pack_q4_k_x4_neon_dot(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pack_groups(4, n / K_QKK, sizeof(k_block_q4_k), Q4K_X4_BYTES, src, row_bytes, nrows, dst, pack_q4k_fill);
}

#define Q5K_X4_BYTES (4 * sizeof(k_block_q5_k))

/* the 5-bit quant of element e (0..31) of sub-block s of a Q5_K block */
static inline unsigned q5k_u(const k_block_q5_k *x, int s, int e) {
    const uint8_t q = x->qs[32 * (s / 2) + e];
    return (unsigned)((s % 2 ? q >> 4 : q & 15) | ((x->qh[e] >> s) & 1) << 4);
}

static void pack_q5k_fill(uint8_t *o, const char *const xb[8]) {
    const k_block_q5_k *x[4];
    for (int r = 0; r < 4; r++) x[r] = (const k_block_q5_k *)xb[r];
    pack_q45k_head((const k_block_q4_k *const *)x, o);
    for (int c = 0; c < 4; c++)
        for (int h = 0; h < 2; h++) {
            uint8_t *X = o + 64 + 80 * (2 * c + h);
            for (int r = 0; r < 4; r++)
                for (int e = 0; e < 4; e++) {
                    unsigned u[8]; /* u[j]: lane 4h+j of sub-block 2c, u[4+j]: of 2c+1 */
                    for (int j = 0; j < 4; j++) {
                        u[j] = q5k_u(x[r], 2 * c, 4 * (4 * h + j) + e);
                        u[4 + j] = q5k_u(x[r], 2 * c + 1, 4 * (4 * h + j) + e);
                    }
                    const int k = 4 * r + e;
                    X[k] = (uint8_t)(u[0] | (u[5] >> 2) << 5);
                    X[16 + k] = (uint8_t)(u[1] | (u[7] & 1) << 5 | (u[5] & 3) << 6);
                    X[32 + k] = (uint8_t)(u[2] | (u[6] >> 2) << 5);
                    X[48 + k] = (uint8_t)(u[3] | (u[7] >> 1 & 1) << 5 | (u[6] & 3) << 6);
                    X[64 + k] = (uint8_t)(u[4] | (u[7] >> 2) << 5);
                }
        }
}

void k_pack_q5_k_x4_neon_dot(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pack_groups(4, n / K_QKK, sizeof(k_block_q5_k), Q5K_X4_BYTES, src, row_bytes, nrows, dst, pack_q5k_fill);
}

#define IQ4XS_X4_BYTES (4 * sizeof(k_block_iq4_xs))

static void pack_iq4xs_fill(uint8_t *o, const char *const xb[8]) {
    uint8_t nib[16];
    for (int r = 0; r < 4; r++) {
        const k_block_iq4_xs *x = (const k_block_iq4_xs *)xb[r];
        memcpy(o + 2 * r, &x->d, 2);
        for (int s = 0; s < 4; s++) {
            const int lo = k_iq4xs_scale(x, s) + 32, hi = k_iq4xs_scale(x, s + 4) + 32;
            o[8 + 4 * s + r] = (uint8_t)(lo | (hi >> 4) << 6);
            nib[4 * s + r] = (uint8_t)(hi & 15);
        }
        /* element e of sub-block j: nibble e % 16 of qs[16j + e % 16], low for e < 16 */
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 8; l++)
                for (int e = 0; e < 4; e++) {
                    const int el = 4 * l + e, sh = el < 16 ? 0 : 4;
                    const unsigned q0 = (x->qs[16 * (2 * c) + el % 16] >> sh) & 15;
                    const unsigned q1 = (x->qs[16 * (2 * c + 1) + el % 16] >> sh) & 15;
                    o[32 + 16 * (8 * c + l) + 4 * r + e] = (uint8_t)(q0 | q1 << 4);
                }
    }
    for (int k = 0; k < 8; k++) o[24 + k] = (uint8_t)(nib[k] | nib[k + 8] << 4);
}

void k_pack_iq4_xs_x4_neon_dot(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pack_groups(4, n / K_QKK, sizeof(k_block_iq4_xs), IQ4XS_X4_BYTES, src, row_bytes, nrows, dst, pack_iq4xs_fill);
}

#define Q80_X8_BYTES (8 * sizeof(k_block_q8_0))

static void pack_q80_fill(uint8_t *o, const char *const xb[8]) {
    for (int r = 0; r < 8; r++) {
        const k_block_q8_0 *x = (const k_block_q8_0 *)xb[r];
        memcpy(o + 2 * r, &x->d, 2);
        for (int l = 0; l < 8; l++) memcpy(o + 16 + 32 * l + 4 * r, x->qs + 4 * l, 4);
    }
}

void k_pack_q8_0_x8_neon_dot(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pack_groups(8, n / K_QK, sizeof(k_block_q8_0), Q80_X8_BYTES, src, row_bytes, nrows, dst, pack_q80_fill);
}

#define Q6K_X4_BYTES (4 * sizeof(k_block_q6_k))

/* the unsigned 6-bit quant j (0..255) of a Q6_K block */
static inline uint8_t q6k_u(const k_block_q6_k *x, int j) {
    const int h = j / 128, e = j % 128, k = e / 32, l = e % 32; /* e = 32k + l */
    const uint8_t lo = k < 2 ? x->ql[64 * h + 32 * k + l] & 15 : x->ql[64 * h + 32 * (k - 2) + l] >> 4;
    return (uint8_t)(lo | ((x->qh[32 * h + l] >> (2 * k)) & 3) << 4);
}

static void pack_q6k_fill(uint8_t *o, const char *const xb[8]) {
    for (int r = 0; r < 4; r++) {
        const k_block_q6_k *x = (const k_block_q6_k *)xb[r];
        memcpy(o + 832 + 2 * r, &x->d, 2);
        for (int g = 0; g < 16; g++) {
            o[768 + 4 * g + r] = (uint8_t)x->scales[g];
            for (int e = 0; e < 4; e++) {
                const int base = 16 * g + e;
                const uint8_t u3 = q6k_u(x, base + 12);
                o[48 * g + 4 * r + e] = (uint8_t)(q6k_u(x, base) | (u3 & 3) << 6);
                o[48 * g + 16 + 4 * r + e] = (uint8_t)(q6k_u(x, base + 4) | (u3 >> 2 & 3) << 6);
                o[48 * g + 32 + 4 * r + e] = (uint8_t)(q6k_u(x, base + 8) | (u3 >> 4) << 6);
            }
        }
    }
}

void k_pack_q6_k_x4_neon_dot(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pack_groups(4, n / K_QKK, sizeof(k_block_q6_k), Q6K_X4_BYTES, src, row_bytes, nrows, dst, pack_q6k_fill);
}

K_DOTPROD_BEGIN

/* k_hsum8 of the 8 lane accumulators, for the 4 rows at once */
static inline float32x4_t hsum8_x4(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3, float32x4_t a4,
                                   float32x4_t a5, float32x4_t a6, float32x4_t a7) {
    const float32x4_t t0 = vaddq_f32(a0, a4), t1 = vaddq_f32(a1, a5);
    const float32x4_t t2 = vaddq_f32(a2, a6), t3 = vaddq_f32(a3, a7);
    return vaddq_f32(vaddq_f32(t0, t2), vaddq_f32(t1, t3));
}

/* A kernel's n f32 accumulators in memory (accs), zeroed, behind a pointer
 * the compiler cannot see through (see nib_xt) */
static inline __attribute__((always_inline)) float32x4_t *acc_zero(float32x4_t *accs, int n) {
    float32x4_t *F = accs;
    __asm__("" : "+r"(F));
    for (int i = 0; i < n; i++) F[i] = vdupq_n_f32(0);
    return F;
}

/* Q8_0, one group of 8 rows x one token: per block integer lane l of rows
 * 0..3 and of rows 4..7 in one vector each (an SDOT by element into a
 * zeroed register), converted and folded with the unpacked dot's FMA
 * (dot_q32: d = d_w * d_a, then fmaf(d, lane, acc[l])), then its final
 * sums. The whole loop is inline assembly on fixed registers, two blocks
 * per pass (written in C, clang kept the accumulators but spent ~9
 * instructions per block more on addresses, copies and the zeroes):
 *   v0-v7   F32 lanes 0..7 of rows 0..3, v8-v15 of rows 4..7
 *   v16-v23 the weights of 4 lanes (rows 0..3, rows 4..7 of each)
 *   v24/v25 the token's qs 0..15 / 16..31, v26/v27 d of rows 0..3 / 4..7
 *           times the token's d
 *   v28-v31 integer lanes (v28: first the token's d, v29 the rows' d) */
#if defined(__clang__)
#define Q80_ARCH ""
#else
#define Q80_ARCH ".arch armv8.2-a+dotprod\n\t"
#endif
/* lane l: F (rows 0..3) and G (rows 4..7) from weights WA, WB and element
 * I of the activations A, through the integer lanes T0, T1 */
#define Q80_LANE_(F, G, WA, WB, A, I, T0, T1)                                                        \
    "movi v" #T0 ".2d, #0\n\t"                                                                       \
    "movi v" #T1 ".2d, #0\n\t"                                                                       \
    "sdot v" #T0 ".4s, v" #WA ".16b, v" #A ".4b[" #I "]\n\t"                                         \
    "sdot v" #T1 ".4s, v" #WB ".16b, v" #A ".4b[" #I "]\n\t"                                         \
    "scvtf v" #T0 ".4s, v" #T0 ".4s\n\t"                                                             \
    "scvtf v" #T1 ".4s, v" #T1 ".4s\n\t"                                                             \
    "fmla v" #F ".4s, v" #T0 ".4s, v26.4s\n\t"                                                       \
    "fmla v" #G ".4s, v" #T1 ".4s, v27.4s\n\t"
#define Q80_LANE(...) Q80_LANE_(__VA_ARGS__)
#define Q80_W "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[o]], #64\n\t" \
              "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[o]], #64\n\t"
/* one block: the rows' d, the token's d and qs, lanes 0..3, then 4..7 */
#define Q80_BLOCK                                                                                    \
    "ldr q29, [%[o]], #16\n\t"                                                                       \
    "ldr h28, [%[y]], #2\n\t"                                                                        \
    "ld1 {v24.16b, v25.16b}, [%[y]], #32\n\t"                                                        \
    Q80_W                                                                                            \
    "fcvt s28, h28\n\t"                                                                              \
    "fcvtl v26.4s, v29.4h\n\t"                                                                       \
    "fcvtl2 v27.4s, v29.8h\n\t"                                                                      \
    "fmul v26.4s, v26.4s, v28.s[0]\n\t"                                                              \
    "fmul v27.4s, v27.4s, v28.s[0]\n\t"                                                              \
    Q80_LANE(0, 8, 16, 17, 24, 0, 28, 29) Q80_LANE(1, 9, 18, 19, 24, 1, 30, 31)                      \
    Q80_LANE(2, 10, 20, 21, 24, 2, 28, 29) Q80_LANE(3, 11, 22, 23, 24, 3, 30, 31)                    \
    Q80_W                                                                                            \
    Q80_LANE(4, 12, 16, 17, 25, 0, 28, 29) Q80_LANE(5, 13, 18, 19, 25, 1, 30, 31)                    \
    Q80_LANE(6, 14, 20, 21, 25, 2, 28, 29) Q80_LANE(7, 15, 22, 23, 25, 3, 30, 31)
/* hsum8_x4 of the lanes F0..F0+7 into F0 */
#define Q80_HSUM_(F0, F1, F2, F3, F4, F5, F6, F7)                                                    \
    "fadd v" #F0 ".4s, v" #F0 ".4s, v" #F4 ".4s\n\t"                                                 \
    "fadd v" #F2 ".4s, v" #F2 ".4s, v" #F6 ".4s\n\t"                                                 \
    "fadd v" #F1 ".4s, v" #F1 ".4s, v" #F5 ".4s\n\t"                                                 \
    "fadd v" #F3 ".4s, v" #F3 ".4s, v" #F7 ".4s\n\t"                                                 \
    "fadd v" #F0 ".4s, v" #F0 ".4s, v" #F2 ".4s\n\t"                                                 \
    "fadd v" #F1 ".4s, v" #F1 ".4s, v" #F3 ".4s\n\t"                                                 \
    "fadd v" #F0 ".4s, v" #F0 ".4s, v" #F1 ".4s\n\t"
#define Q80_HSUM(...) Q80_HSUM_(__VA_ARGS__)
#define Q80_ZERO4(A, B, C, D)                                                                        \
    "movi v" #A ".2d, #0\n\tmovi v" #B ".2d, #0\n\tmovi v" #C ".2d, #0\n\tmovi v" #D ".2d, #0\n\t"
/* out[0..7] = rows 0..7 of the group at o times the token's nb blocks at y */
static inline __attribute__((always_inline)) void q80_x8(int64_t nb, const uint8_t *o, const k_block_q8_0 *y,
                                                         float *out) {
    const uint8_t *yb = (const uint8_t *)y;
    __asm__ volatile(Q80_ARCH
                     Q80_ZERO4(0, 1, 2, 3) Q80_ZERO4(4, 5, 6, 7) Q80_ZERO4(8, 9, 10, 11) Q80_ZERO4(12, 13, 14, 15)
                     "tbz %[nb], #0, 2f\n\t"
                     Q80_BLOCK
                     "2:\n\t"
                     "lsr %[nb], %[nb], #1\n\t"
                     "cbz %[nb], 3f\n\t"
                     "1:\n\t"
                     Q80_BLOCK Q80_BLOCK
                     "subs %[nb], %[nb], #1\n\t"
                     "b.ne 1b\n\t"
                     "3:\n\t"
                     Q80_HSUM(0, 1, 2, 3, 4, 5, 6, 7) Q80_HSUM(8, 9, 10, 11, 12, 13, 14, 15)
                     "stp q0, q8, [%[out]]\n\t"
                     : [o] "+r"(o), [y] "+r"(yb), [nb] "+r"(nb)
                     : [out] "r"(out)
                     : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
                       "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26",
                       "v27", "v28", "v29", "v30", "v31", "cc", "memory");
}
#undef Q80_ARCH
#undef Q80_LANE_
#undef Q80_LANE
#undef Q80_W
#undef Q80_BLOCK
#undef Q80_HSUM_
#undef Q80_HSUM
#undef Q80_ZERO4

/* the one-token piece over `rows` rows (groups of 8); a batch runs it per
 * token over chunks of 32 rows (4 groups, 35 KB of a 2048-element row:
 * the chunk stays in L1 across the tokens) */
static void q80_piece(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a, size_t a_row_bytes,
                      float *y, int64_t y_stride) {
    (void)toks, (void)a_row_bytes, (void)y_stride;
    const int64_t nb = n / K_QK;
    for (int g = 0; g + 8 <= rows; g += 8) q80_x8(nb, (const uint8_t *)w + (size_t)g * row_bytes, (const k_block_q8_0 *)a, y + g);
}
static const mm_kernel mm_q8_0_x8 = {.pack_rows = 8, .pack_one = q80_piece, .pack_chunk = 32};

void k_mm_packed_q8_0_x8_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_q8_0_x8, K_MM_TILE_ARGS); }

/* ---- several tokens per pass over a group ------------------------------
 * A prompt batch runs each packed group's blocks once for T tokens (T = 2
 * or 4): the weights are loaded and decoded (nibbles, 5- and 6-bit quants,
 * scales by parts, mins) once per block and feed the T tokens' SDOTs.
 * Every (row, token) keeps its own float accumulators and goes through the
 * one-token kernel's float steps in the same order (the same products
 * dv = d * yd, the same FMAs per block, the same final sums); integer sums
 * are exact in any order. So each output is, bit for bit, the one-token
 * kernel's. LG = the integer lanes of a half done per pass: 4 for T = 2,
 * 2 for T = 4 (the activations are loaded twice, the 2 x 4 x T integer
 * lanes would not fit the 32 registers). */
#if defined(__clang__)
#define K_UNROLL _Pragma("clang loop unroll(full)")
#else
#define K_UNROLL _Pragma("GCC unroll 8")
#endif

/* k_sdot_lane<i> for an i known after unrolling, kept in program order
 * (volatile): free to move, clang's scheduler hoists the SDOTs of all
 * tokens ahead of their MLAs and spills what it cannot hold */
#define SDOT_LANE_V(i, acc, w, a) __asm__ volatile(K_SDOT_LANE_ASM(i) : "+w"(acc) : "w"(w), "w"(a))
static inline __attribute__((always_inline)) int32x4_t sdot_lane_i(int i, int32x4_t acc, int8x16_t w, int8x16_t a) {
    switch (i) {
    case 0: SDOT_LANE_V(0, acc, w, a); break;
    case 1: SDOT_LANE_V(1, acc, w, a); break;
    case 2: SDOT_LANE_V(2, acc, w, a); break;
    default: SDOT_LANE_V(3, acc, w, a); break;
    }
    return acc;
}
/* l += c * ds and l = c * ds, in program order with the SDOTs (as above:
 * the MLA reads c before the next SDOT of the chain overwrites it, so no
 * copy of c is needed) */
static inline __attribute__((always_inline)) int32x4_t mla_v(int32x4_t l, int32x4_t c, int32x4_t ds) {
    __asm__ volatile("mla %0.4s, %1.4s, %2.4s" : "+w"(l) : "w"(c), "w"(ds));
    return l;
}
static inline __attribute__((always_inline)) int32x4_t mul_v(int32x4_t c, int32x4_t ds) {
    int32x4_t l;
    __asm__ volatile("mul %0.4s, %1.4s, %2.4s" : "=w"(l) : "w"(c), "w"(ds));
    return l;
}

/* the weights of lane i of half h, chunk c (even sub-block: *we, odd:
 * *wo) of a Q4_K / Q5_K / IQ4_XS x4 group block whose quants start at qv */
static inline __attribute__((always_inline)) void nib_lane(int t, const uint8_t *qv, int c, int h, int i, int8x16_t *we,
                                                           int8x16_t *wo) {
    const uint8x16_t m4 = vdupq_n_u8(15);
    if (t == K_Q5_K) {
        const uint8x16_t m5 = vdupq_n_u8(31);
        const uint8_t *p5 = qv + 80 * (2 * c + h);
        uint8x16_t e, od;
        if (i == 0) {
            e = vandq_u8(vld1q_u8(p5), m5);
            od = vandq_u8(vld1q_u8(p5 + 64), m5);
        } else if (i == 1) {
            const uint8x16_t X1 = vld1q_u8(p5 + 16);
            e = vandq_u8(X1, m5);
            od = vshrq_n_u8(vsriq_n_u8(vld1q_u8(p5), X1, 3), 3);
        } else if (i == 2) {
            const uint8x16_t X2 = vld1q_u8(p5 + 32);
            e = vandq_u8(X2, m5);
            od = vshrq_n_u8(vsriq_n_u8(X2, vld1q_u8(p5 + 48), 3), 3);
        } else {
            const uint8x16_t X3 = vld1q_u8(p5 + 48);
            e = vandq_u8(X3, m5);
            const uint8x16_t Yb = vbslq_u8(vdupq_n_u8(0x40), vshlq_n_u8(vld1q_u8(p5 + 16), 1), vshlq_n_u8(X3, 2));
            od = vshrq_n_u8(vsriq_n_u8(vld1q_u8(p5 + 64), Yb, 3), 3);
        }
        *we = vreinterpretq_s8_u8(e);
        *wo = vreinterpretq_s8_u8(od);
        return;
    }
    const uint8x16_t v = vld1q_u8(qv + 16 * (8 * c + 4 * h + i));
    if (t == K_IQ4_XS) {
        const int8x16_t table = vld1q_s8(k_iq4nl_values);
        *we = vqtbl1q_s8(table, vandq_u8(v, m4));
        *wo = vqtbl1q_s8(table, vshrq_n_u8(v, 4));
    } else {
        *we = vreinterpretq_s8_u8(vandq_u8(v, m4));
        *wo = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    }
}

/* Q4_K, Q5_K or IQ4_XS (t), one group of 4 rows x T tokens: token k's
 * Q8_K row at a + k * arb, its 4 outputs at y + k * ys; per token the
 * float steps of q45k_x4_c / iq4xs_x4_c. The tiles run it for T = 2; 4
 * tokens go through q4k_x4_t4, q5k_x4_t4, iq4xs_x4_t4 (fixed registers,
 * below). */
static inline __attribute__((always_inline)) void nib_xt(int t, int T, int64_t nb, const uint8_t *o, const char *a,
                                                         size_t arb, float *y, int64_t ys) {
    const size_t gb = t == K_Q4_K ? Q4K_X4_BYTES : t == K_Q5_K ? Q5K_X4_BYTES : IQ4XS_X4_BYTES;
    const int LG = T >= 4 ? 2 : 4;
    const uint8x16_t m4 = vdupq_n_u8(15), m6 = vdupq_n_u8(63);
    const int32x4_t z = vdupq_n_s32(0);
    /* the float accumulators in memory, behind a pointer the compiler
     * cannot see through: each is read and written once per block, and
     * held in registers they crowd out the integer lanes and spill worse
     * (adjacent ones pair into LDP/STP) */
    float32x4_t accs[4][8], ams[4][4], summss[4];
    float32x4_t(*acc)[8] = accs, (*am)[4] = ams, *summs = summss;
    __asm__("" : "+r"(acc), "+r"(am), "+r"(summs));
    K_UNROLL for (int k = 0; k < T; k++) {
        K_UNROLL for (int l = 0; l < 8; l++) acc[k][l] = vdupq_n_f32(0);
        K_UNROLL for (int i = 0; i < 4; i++) am[k][i] = vdupq_n_f32(0);
        summs[k] = vdupq_n_f32(0);
    }
    for (int64_t b = 0; b < nb; b++, o += gb) {
        const k_block_q8_k *yk[4];
        K_UNROLL for (int k = 0; k < T; k++) yk[k] = (const k_block_q8_k *)(a + (size_t)k * arb) + b;
        float32x4_t dv[4];
        int8x16_t D0, D1;
        if (t == K_IQ4_XS) {
            const float32x4_t d32 = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)o)));
            K_UNROLL for (int k = 0; k < T; k++) dv[k] = vmulq_f32(d32, vdupq_n_f32(yk[k]->d));
            const uint8x16_t S = vld1q_u8(o + 8);
            const uint8x8_t N = vld1_u8(o + 24);
            const uint8x16_t sc0 = vandq_u8(S, m6);
            const uint8x16_t sc1 =
                vsliq_n_u8(vcombine_u8(vand_u8(N, vget_low_u8(m4)), vshr_n_u8(N, 4)), vshrq_n_u8(S, 6), 4);
            D0 = vreinterpretq_s8_u8(vsubq_u8(sc0, vextq_u8(sc0, sc1, 4)));
            D1 = vreinterpretq_s8_u8(vsubq_u8(sc1, vextq_u8(sc1, vdupq_n_u8(32), 4)));
        } else {
            const uint16x8_t dd = vld1q_u16((const uint16_t *)o);
            const float32x4_t d32 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(dd)));
            const float32x4_t dm32 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(dd)));
            const uint8x16_t S0 = vld1q_u8(o + 16), S1 = vld1q_u8(o + 32), N = vld1q_u8(o + 48);
            const uint8x16_t sc0 = vandq_u8(S0, m6), sc1 = vandq_u8(S1, m6);
            D0 = vreinterpretq_s8_u8(vsubq_u8(sc0, vextq_u8(sc0, sc1, 4)));
            D1 = vreinterpretq_s8_u8(vsubq_u8(sc1, vextq_u8(sc1, vdupq_n_u8(0), 4)));
            int16x8_t mn[4];
            k_q45k_x4_mins_neon(S0, S1, N, mn);
            K_UNROLL for (int k = 0; k < T; k++) {
                const float32x4_t yd = vdupq_n_f32(yk[k]->d);
                dv[k] = vmulq_f32(d32, yd);
                const float32x4_t dmv = vmulq_f32(dm32, yd);
                const int16x8_t bs = vpaddq_s16(vld1q_s16(yk[k]->bsums), vld1q_s16(yk[k]->bsums + 8));
                int32x4_t M[4];
                k_q45k_x4_msums_neon(mn, bs, M);
                k_q45k_x4_minterm_neon(t == K_Q4_K, M, dmv, t == K_Q4_K ? am[k] : &summs[k]);
            }
        }
        /* ds[s]: sc[s] - sc[s+1] of the 4 rows (by parts) */
        int32x4_t ds[8];
        {
            const int16x8_t e01 = vmovl_s8(vget_low_s8(D0)), e23 = vmovl_high_s8(D0);
            const int16x8_t e45 = vmovl_s8(vget_low_s8(D1)), e67 = vmovl_high_s8(D1);
            ds[0] = vmovl_s16(vget_low_s16(e01)), ds[1] = vmovl_high_s16(e01);
            ds[2] = vmovl_s16(vget_low_s16(e23)), ds[3] = vmovl_high_s16(e23);
            ds[4] = vmovl_s16(vget_low_s16(e45)), ds[5] = vmovl_high_s16(e45);
            ds[6] = vmovl_s16(vget_low_s16(e67)), ds[7] = vmovl_high_s16(e67);
        }
        const uint8_t *qv = o + (t == K_IQ4_XS ? 32 : 64);
        K_UNROLL for (int h = 0; h < 2; h++) {
            K_UNROLL for (int i0 = 0; i0 < 4; i0 += LG) {
                int32x4_t C[4][4], L[4][4];
                K_UNROLL for (int c = 0; c < 4; c++) {
                    int8x16_t ae[4], ao[4];
                    K_UNROLL for (int k = 0; k < T; k++) {
                        ae[k] = vld1q_s8(yk[k]->qs + 64 * c + 16 * h);
                        ao[k] = vld1q_s8(yk[k]->qs + 64 * c + 32 + 16 * h);
                    }
                    K_UNROLL for (int j = 0; j < LG; j++) {
                        const int i = i0 + j;
                        int8x16_t we, wo;
                        nib_lane(t, qv, c, h, i, &we, &wo);
                        K_UNROLL for (int k = 0; k < T; k++) {
                            C[k][j] = sdot_lane_i(i, c == 0 ? z : C[k][j], we, ae[k]);
                            L[k][j] = c == 0 ? mul_v(C[k][j], ds[2 * c]) : mla_v(L[k][j], C[k][j], ds[2 * c]);
                            C[k][j] = sdot_lane_i(i, C[k][j], wo, ao[k]);
                            L[k][j] = mla_v(L[k][j], C[k][j], ds[2 * c + 1]);
                        }
                    }
                }
                K_UNROLL for (int k = 0; k < T; k++) {
                    K_UNROLL for (int j = 0; j < LG; j++) {
                        const int l = 4 * h + i0 + j;
                        acc[k][l] = vfmaq_f32(acc[k][l], vcvtq_f32_s32(L[k][j]), dv[k]);
                    }
                }
            }
        }
    }
    K_UNROLL for (int k = 0; k < T; k++) {
        const float32x4_t s = hsum8_x4(acc[k][0], acc[k][1], acc[k][2], acc[k][3], acc[k][4], acc[k][5], acc[k][6],
                                       acc[k][7]);
        float32x4_t r;
        if (t == K_Q4_K) r = vsubq_f32(s, vaddq_f32(vaddq_f32(am[k][0], am[k][2]), vaddq_f32(am[k][1], am[k][3])));
        else if (t == K_Q5_K) r = vaddq_f32(s, summs[k]);
        else r = s;
        vst1q_f32(y + k * ys, r);
    }
}

/* Q6_K, one group of 4 rows x T tokens, as nib_xt: per token the float
 * steps of q6k_x4_c. The -32 offset's integer term is folded as
 * (-32 * sc) * bsum, the same exact value. The tile runs it for T = 2;
 * 4 tokens go through q6k_x4_t4 (fixed registers, below). */
static inline __attribute__((always_inline)) void q6k_xt(int T, int64_t nb, const uint8_t *o, const char *a, size_t arb,
                                                         float *y, int64_t ys) {
    const int LG = T >= 4 ? 2 : 4;
    const uint8x16_t m6 = vdupq_n_u8(63);
    float32x4_t accs[4][8];
    float32x4_t(*acc)[8] = accs; /* in memory, as in nib_xt */
    __asm__("" : "+r"(acc));
    K_UNROLL for (int k = 0; k < T; k++) K_UNROLL for (int l = 0; l < 8; l++) acc[k][l] = vdupq_n_f32(0);
    for (int64_t b = 0; b < nb; b++, o += Q6K_X4_BYTES) {
        const k_block_q8_k *yk[4];
        K_UNROLL for (int k = 0; k < T; k++) yk[k] = (const k_block_q8_k *)(a + (size_t)k * arb) + b;
        const float32x4_t d32 = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(o + 832))));
        float32x4_t dv[4];
        K_UNROLL for (int k = 0; k < T; k++) dv[k] = vmulq_f32(d32, vdupq_n_f32(yk[k]->d));
        const int8x16_t V0 = vld1q_s8((const int8_t *)o + 768), V1 = vld1q_s8((const int8_t *)o + 784);
        const int8x16_t V2 = vld1q_s8((const int8_t *)o + 800), V3 = vld1q_s8((const int8_t *)o + 816);
        int16x8_t E[9];
        E[0] = vmovl_s8(vget_low_s8(V0)), E[1] = vmovl_high_s8(V0), E[2] = vmovl_s8(vget_low_s8(V1));
        E[3] = vmovl_high_s8(V1), E[4] = vmovl_s8(vget_low_s8(V2)), E[5] = vmovl_high_s8(V2);
        E[6] = vmovl_s8(vget_low_s8(V3)), E[7] = vmovl_high_s8(V3), E[8] = vdupq_n_s16(0);
        /* lane l's offset term from groups 2l, 2l+1: (-32 sc) x bsum, exact in 32 bits */
        int32x4_t off[4][8];
        K_UNROLL for (int k = 0; k < T; k++) {
            const int16x8_t bs0 = vld1q_s16(yk[k]->bsums), bs1 = vld1q_s16(yk[k]->bsums + 8);
#define Q6K_OFFT(l, BS, i)                                                                                        \
    do {                                                                                                          \
        const int16x8_t e32 = vmulq_n_s16(E[l], -32);                                                             \
        off[k][l] = vmlal_high_laneq_s16(vmull_laneq_s16(vget_low_s16(e32), BS, i), e32, BS, (i) + 1);            \
    } while (0)
            Q6K_OFFT(0, bs0, 0); Q6K_OFFT(1, bs0, 2); Q6K_OFFT(2, bs0, 4); Q6K_OFFT(3, bs0, 6);
            Q6K_OFFT(4, bs1, 0); Q6K_OFFT(5, bs1, 2); Q6K_OFFT(6, bs1, 4); Q6K_OFFT(7, bs1, 6);
#undef Q6K_OFFT
        }
        K_UNROLL for (int h = 0; h < 2; h++) {
            K_UNROLL for (int i0 = 0; i0 < 4; i0 += LG) {
                int32x4_t C[4][4], L[4][4];
                K_UNROLL for (int k = 0; k < T; k++) K_UNROLL for (int j = 0; j < LG; j++) {
                    C[k][j] = vdupq_n_s32(0);
                    L[k][j] = off[k][4 * h + i0 + j];
                }
                K_UNROLL for (int g2 = 0; g2 < 8; g2++) {
                    const int g = 2 * g2 + h;
                    const int16x8_t D = vsubq_s16(E[g2], E[g2 + 1]);
                    const int32x4_t ds = h == 0 ? vmovl_s16(vget_low_s16(D)) : vmovl_high_s16(D);
                    const uint8_t *p = o + 48 * g;
                    int8x16_t A[4];
                    K_UNROLL for (int k = 0; k < T; k++) A[k] = vld1q_s8(yk[k]->qs + 16 * g);
                    K_UNROLL for (int j = 0; j < LG; j++) {
                        const int i = i0 + j;
                        uint8x16_t w;
                        if (i < 3) w = vandq_u8(vld1q_u8(p + 16 * i), m6);
                        else w = vshrq_n_u8(vsriq_n_u8(vsriq_n_u8(vld1q_u8(p + 32), vld1q_u8(p + 16), 2), vld1q_u8(p), 4), 2);
                        K_UNROLL for (int k = 0; k < T; k++) {
                            C[k][j] = sdot_lane_i(i, C[k][j], vreinterpretq_s8_u8(w), A[k]);
                            L[k][j] = mla_v(L[k][j], C[k][j], ds);
                        }
                    }
                }
                K_UNROLL for (int k = 0; k < T; k++) K_UNROLL for (int j = 0; j < LG; j++) {
                    const int l = 4 * h + i0 + j;
                    acc[k][l] = vfmaq_f32(acc[k][l], vcvtq_f32_s32(L[k][j]), dv[k]);
                }
            }
        }
    }
    K_UNROLL for (int k = 0; k < T; k++)
        vst1q_f32(y + k * ys, hsum8_x4(acc[k][0], acc[k][1], acc[k][2], acc[k][3], acc[k][4], acc[k][5], acc[k][6],
                                       acc[k][7]));
}

/* Q4_K, one group of 4 rows x one token: out[r] = the unpacked dot of row
 * r (dot_body_arm64.h), its integer lanes with the scales by parts
 * (k_q4k_dsc: ds[s] = sc[s] - sc[s+1] per row), the same FMAs per block
 * into 8 f32 lanes and the min term as lane i of its k_mins4, one vector
 * per i, then the same final sums. Each chunk c of 64 elements runs all 8
 * integer lanes, so its activations are one 64-byte load and its quants
 * two; the scales by parts of its two sub-blocks are widened as they come.
 * The lanes are
 * inline assembly with fixed registers: 16 chains, 4 activation and 4
 * quant vectors leave no room for the compiler's scheduling, which spills
 * (written in C this ran ~20 instructions more per block).
 *   v0-v7   C (lane l: the chain of SDOTs), v8-v15 L (lane l by parts)
 *   v16-v19 the chunk's activations: even sub-block elements 0..15,
 *           16..31, odd sub-block 0..15, 16..31
 *   v20-v23 four quant vectors (lanes 4h..4h+3), v24/v25 the chunk's
 *           even/odd scale by parts, v26 scratch */
#if defined(__clang__)
#define Q4K_ARCH ""
#else
#define Q4K_ARCH ".arch armv8.2-a+dotprod\n\t"
#endif
#define Q4K_LANE_(C, L, W, AE, AO, I, FIRST, DEC)                                                    \
    FIRST##_ZERO(C) "and v26.16b, v" #W ".16b, %[m4].16b\n\t" DEC##_LO                              \
    "sdot v" #C ".4s, v26.16b, v" #AE ".4b[" #I "]\n\t" FIRST##_MUL(L, C)                            \
    "ushr v" #W ".16b, v" #W ".16b, #4\n\t" DEC##_HI(W)                                            \
    "sdot v" #C ".4s, v" #W ".16b, v" #AO ".4b[" #I "]\n\t"                                          \
    "mla v" #L ".4s, v" #C ".4s, v25.4s\n\t"
#define Q4K_LANE(...) Q4K_LANE_(__VA_ARGS__)
#define Q4K_F_ZERO(C) "movi v" #C ".2d, #0\n\t"
#define Q4K_F_MUL(L, C) "mul v" #L ".4s, v" #C ".4s, v24.4s\n\t"
#define Q4K_N_ZERO(C)
#define Q4K_N_MUL(L, C) "mla v" #L ".4s, v" #C ".4s, v24.4s\n\t"
/* the nibbles as they are (Q4_K) or looked up in k_iq4nl_values (IQ4_XS) */
#define Q4K_D_LO
#define Q4K_D_HI(W)
#define Q4K_X_LO "tbl v26.16b, {%[tab].16b}, v26.16b\n\t"
#define Q4K_X_HI(W) "tbl v" #W ".16b, {%[tab].16b}, v" #W ".16b\n\t"
/* chunk c: WIDEN (sshll / sshll2) of D the scales by parts of its
 * sub-blocks; the activations' pointer moves on by POST (#64, and in the
 * last chunk %[next] = 100: past the bsums to the next block's qs) */
#define Q4K_CHUNK(WIDEN, D, ARR, FIRST, DEC, POST)                                                   \
    WIDEN " v26.8h, %[" D "]." ARR ", #0\n\t"                                                        \
    "sshll v24.4s, v26.4h, #0\n\t"                                                                   \
    "sshll2 v25.4s, v26.8h, #0\n\t"                                                                  \
    "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[ap]], " POST "\n\t"                               \
    "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[o]], #64\n\t"                                     \
    Q4K_LANE(0, 8, 20, 16, 18, 0, FIRST, DEC) Q4K_LANE(1, 9, 21, 16, 18, 1, FIRST, DEC)             \
    Q4K_LANE(2, 10, 22, 16, 18, 2, FIRST, DEC) Q4K_LANE(3, 11, 23, 16, 18, 3, FIRST, DEC)           \
    "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[o]], #64\n\t"                                     \
    Q4K_LANE(4, 12, 20, 17, 19, 0, FIRST, DEC) Q4K_LANE(5, 13, 21, 17, 19, 1, FIRST, DEC)           \
    Q4K_LANE(6, 14, 22, 17, 19, 2, FIRST, DEC) Q4K_LANE(7, 15, 23, 17, 19, 3, FIRST, DEC)
#define Q4K_CHUNKS(DEC)                                                                              \
    Q4K_CHUNK("sshll", "D0", "8b", Q4K_F, DEC, "#64") Q4K_CHUNK("sshll2", "D0", "16b", Q4K_N, DEC, "#64") \
    Q4K_CHUNK("sshll", "D1", "8b", Q4K_N, DEC, "#64") Q4K_CHUNK("sshll2", "D1", "16b", Q4K_N, DEC, "%[next]")
/* F[l] = fmaf(cvt(L_l), dv, F[l]), l = 0..7 (fmla's product is the same,
 * commutative); the 8 accumulators come and go as two 4-register LD1/ST1
 * (F[0..3] at F, F[4..7] at F2 = F + 4), where pairs took 4 LDP and 4 STP */
#define Q4K_FLOAT_(FMA)                                                                              \
    NEON_SCVTF_V8_V15                                                                                \
    "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[F]]\n\t"                                              \
    "ld1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[F2]]\n\t"                                             \
    FMA " v16.4s, v8.4s, %[dv].4s\n\t"                                                               \
    FMA " v17.4s, v9.4s, %[dv].4s\n\t"                                                               \
    FMA " v18.4s, v10.4s, %[dv].4s\n\t"                                                              \
    FMA " v19.4s, v11.4s, %[dv].4s\n\t"                                                              \
    FMA " v20.4s, v12.4s, %[dv].4s\n\t"                                                              \
    FMA " v21.4s, v13.4s, %[dv].4s\n\t"                                                              \
    FMA " v22.4s, v14.4s, %[dv].4s\n\t"                                                              \
    FMA " v23.4s, v15.4s, %[dv].4s\n\t"                                                              \
    "st1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[F]]\n\t"                                              \
    "st1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[F2]]\n\t"
#define Q4K_FLOAT Q4K_FLOAT_("fmla")
#define Q4K_CLOBBERS                                                                                 \
    "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",      \
        "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "memory"
/* The start of a block of q45k_x4_c (q4 1: Q4_K, 0: Q5_K): the rows'
 * 64-byte head at *o (d and dmin, then the scale bytes S0, S1, N), moved
 * past, and the token's d before its qs at *yb; *dv = d * yd, the scale differences
 * D0, D1 the asm takes, and the min term into F8 (k_q45k_x4_minterm_neon:
 * F8[0..3] for Q4_K, F8[0] for Q5_K) with dmin * yd. */
static inline __attribute__((always_inline)) void q45k_x4_head(const int q4, const uint8_t **o, const uint8_t **yb,
                                                               uint8x16_t m6, uint8x16_t zb, float32x4_t *dv,
                                                               int8x16_t *D0, int8x16_t *D1, float32x4_t *F8) {
    const uint8x16x4_t hd = vld1q_u8_x4(*o);
    *o += 64;
    const float yd = ((const float *)*yb)[-1];
    const uint16x8_t dd = vreinterpretq_u16_u8(hd.val[0]);
    *dv = vmulq_n_f32(vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(dd))), yd);
    float32x4_t dm32; /* (clang makes vcvt_high_f32_f16 an EXT and an FCVTL) */
    __asm__("fcvtl2 %0.4s, %1.8h" : "=w"(dm32) : "w"(dd));
    const float32x4_t dmv = vmulq_n_f32(dm32, yd);
    const uint8x16_t S0 = hd.val[1], S1 = hd.val[2], N = hd.val[3];
    const uint8x16_t sc0 = vandq_u8(S0, m6), sc1 = vandq_u8(S1, m6);
    *D0 = vreinterpretq_s8_u8(vsubq_u8(sc0, vextq_u8(sc0, sc1, 4)));
    *D1 = vreinterpretq_s8_u8(vsubq_u8(sc1, vextq_u8(sc1, zb, 4)));
    int16x8_t mn[4];
    int32x4_t M[4];
    k_q45k_x4_mins_neon(S0, S1, N, mn);
    const int16x8_t bs = vpaddq_s16(vld1q_s16((const int16_t *)(*yb + 256)), vld1q_s16((const int16_t *)(*yb + 272)));
    k_q45k_x4_msums_neon(mn, bs, M);
    k_q45k_x4_minterm_neon(q4, M, dmv, F8);
}
/* IQ4_XS, one group of 4 rows x one token, chunk by chunk as q45k_x4_c:
 * the Q4_K kernel's integer lanes with the nibbles looked up in
 * k_iq4nl_values and the scales minus 32 (by parts, the last difference
 * is scale 7 - 32); no min term; the float steps of the unpacked IQ4_XS
 * kernels (iq4_neon_dot_arm64.c). */
static inline __attribute__((always_inline)) void iq4xs_x4_c(int64_t nb, const uint8_t *o, const k_block_q8_k *y,
                                                             float *out) {
    const int8x16_t table = vld1q_s8(k_iq4nl_values);
    const uint8x16_t m4 = vdupq_n_u8(15), m6 = vdupq_n_u8(63), b32 = vdupq_n_u8(32);
    float32x4_t accs[8];
    float32x4_t *F = acc_zero(accs, 8);
    const uint8_t *yb = (const uint8_t *)y + 4; /* as q45k_x4_c */
    const int64_t next = (int64_t)sizeof(k_block_q8_k) - 192;
    for (int64_t b = 0; b < nb; b++) {
        const float yd = ((const float *)yb)[-1];
        const float32x4_t dv = vmulq_n_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)o))), yd);
        const uint8x16_t S = vld1q_u8(o + 8);
        const uint8x8_t N = vld1_u8(o + 24);
        o += 32;
        const uint8x16_t sc0 = vandq_u8(S, m6);
        const uint8x16_t sc1 = vsliq_n_u8(vcombine_u8(vand_u8(N, vget_low_u8(m4)), vshr_n_u8(N, 4)), vshrq_n_u8(S, 6), 4);
        const int8x16_t D0 = vreinterpretq_s8_u8(vsubq_u8(sc0, vextq_u8(sc0, sc1, 4)));
        const int8x16_t D1 = vreinterpretq_s8_u8(vsubq_u8(sc1, vextq_u8(sc1, b32, 4)));
        __asm__ volatile(Q4K_ARCH Q4K_CHUNKS(Q4K_X) Q4K_FLOAT
                         : [o] "+r"(o), [ap] "+r"(yb)
                         : [D0] "w"(D0), [D1] "w"(D1), [dv] "w"(dv), [m4] "w"(m4), [tab] "w"(table), [F] "r"(F),
                           [F2] "r"(F + 4), [next] "r"(next)
                         : Q4K_CLOBBERS);
    }
    vst1q_f32(out, hsum8_x4(F[0], F[1], F[2], F[3], F[4], F[5], F[6], F[7]));
}
/* Q5_K, one group of 4 rows x one token, chunk by chunk in the registers
 * of q45k_x4_c (Q4_K): its lanes with 5-bit quants, the min term as the sum of the
 * k_mins4 lanes in one FMA per block (the unpacked Q5_K dot's). A half's 80 bytes of 5-bit
 * quants (X0..X4 in the layout above, v20-v23 and v27) are decoded in
 * place: the even lanes X & 31, the odd ones u4 = X4 & 31, u5 and u6 by
 * shift-inserts, u7 from X4 and the top bits of X1 and X3 (u7 & 1 and
 * u7 >> 1 & 1) gathered by two shifts and a shift-insert. */
#define Q5K_MLA_(L, C, DS) "mla v" #L ".4s, v" #C ".4s, v" #DS ".4s\n\t"
#define Q5K_E(C, L, X, A, I, FIRST)                                                                  \
    FIRST##_ZERO(C) "and v26.16b, v" #X ".16b, %[m5].16b\n\t"                                       \
    "sdot v" #C ".4s, v26.16b, v" #A ".4b[" #I "]\n\t" FIRST##_MUL(L, C)
#define Q5K_O(C, L, W, A, I)                                                                         \
    "sdot v" #C ".4s, v" #W ".16b, v" #A ".4b[" #I "]\n\t" Q5K_MLA_(L, C, 25)
#define Q5K_HALF_(C0, C1, C2, C3, L0, L1, L2, L3, AE, AO, FIRST)                                    \
    "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[o]], #64\n\t"                                     \
    "ld1 {v27.16b}, [%[o]], #16\n\t"                                                                 \
    Q5K_E(C0, L0, 20, AE, 0, FIRST) "and v26.16b, v27.16b, %[m5].16b\n\t" Q5K_O(C0, L0, 26, AO, 0)  \
    Q5K_E(C1, L1, 21, AE, 1, FIRST) "sri v20.16b, v21.16b, #3\n\tushr v20.16b, v20.16b, #3\n\t"     \
    Q5K_O(C1, L1, 20, AO, 1)                                                                         \
    Q5K_E(C2, L2, 22, AE, 2, FIRST) "sri v22.16b, v23.16b, #3\n\tushr v22.16b, v22.16b, #3\n\t"     \
    Q5K_O(C2, L2, 22, AO, 2)                                                                         \
    Q5K_E(C3, L3, 23, AE, 3, FIRST)                                                                  \
    "shl v23.16b, v23.16b, #2\n\tshl v21.16b, v21.16b, #2\n\tsri v23.16b, v21.16b, #1\n\t"          \
    "sri v27.16b, v23.16b, #3\n\tushr v27.16b, v27.16b, #3\n\t" Q5K_O(C3, L3, 27, AO, 3)
#define Q5K_HALF(...) Q5K_HALF_(__VA_ARGS__)
#define Q5K_CHUNK(WIDEN, D, ARR, FIRST, POST)                                                        \
    WIDEN " v26.8h, %[" D "]." ARR ", #0\n\t"                                                        \
    "sshll v24.4s, v26.4h, #0\n\t"                                                                   \
    "sshll2 v25.4s, v26.8h, #0\n\t"                                                                  \
    "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[ap]], " POST "\n\t"                               \
    Q5K_HALF(0, 1, 2, 3, 8, 9, 10, 11, 16, 18, FIRST) Q5K_HALF(4, 5, 6, 7, 12, 13, 14, 15, 17, 19, FIRST)
/* Q4_K (q4 1) or Q5_K (q4 0), one group of 4 rows x one token */
static inline __attribute__((always_inline)) void q45k_x4_c(const int q4, int64_t nb, const uint8_t *o,
                                                            const k_block_q8_k *y, float *out) {
    const uint8x16_t m4 = vdupq_n_u8(15), m5 = vdupq_n_u8(31), m6 = vdupq_n_u8(63), zb = vdupq_n_u8(0);
    float32x4_t accs[12];
    float32x4_t *F = acc_zero(accs, q4 ? 12 : 9); /* F[8..11] the min term (F[8] for Q5_K) */
    const uint8_t *yb = (const uint8_t *)y + 4; /* qs of block b: d at yb - 4, bsums at yb + 256 */
    const int64_t next = (int64_t)sizeof(k_block_q8_k) - 192;
    for (int64_t b = 0; b < nb; b++) {
        float32x4_t dv;
        int8x16_t D0, D1;
        q45k_x4_head(q4, &o, &yb, m6, zb, &dv, &D0, &D1, F + 8);
        if (q4)
            __asm__ volatile(Q4K_ARCH Q4K_CHUNKS(Q4K_D) Q4K_FLOAT
                             : [o] "+r"(o), [ap] "+r"(yb)
                             : [D0] "w"(D0), [D1] "w"(D1), [dv] "w"(dv), [m4] "w"(m4), [F] "r"(F), [F2] "r"(F + 4),
                               [next] "r"(next)
                             : Q4K_CLOBBERS);
        else
            __asm__ volatile(Q4K_ARCH
                             Q5K_CHUNK("sshll", "D0", "8b", Q4K_F, "#64") Q5K_CHUNK("sshll2", "D0", "16b", Q4K_N, "#64")
                             Q5K_CHUNK("sshll", "D1", "8b", Q4K_N, "#64")
                             Q5K_CHUNK("sshll2", "D1", "16b", Q4K_N, "%[next]")
                             Q4K_FLOAT
                             : [o] "+r"(o), [ap] "+r"(yb)
                             : [D0] "w"(D0), [D1] "w"(D1), [dv] "w"(dv), [m5] "w"(m5), [F] "r"(F), [F2] "r"(F + 4),
                               [next] "r"(next)
                             : Q4K_CLOBBERS, "v27");
    }
    const float32x4_t s = hsum8_x4(F[0], F[1], F[2], F[3], F[4], F[5], F[6], F[7]);
    vst1q_f32(out, q4 ? vsubq_f32(s, vaddq_f32(vaddq_f32(F[8], F[10]), vaddq_f32(F[9], F[11]))) : vaddq_f32(s, F[8]));
}
#undef Q5K_MLA_
#undef Q5K_E
#undef Q5K_O
#undef Q5K_HALF_
#undef Q5K_HALF
#undef Q5K_CHUNK

/* Q6_K, one group of 4 rows x one token, in the fixed registers of
 * q45k_x4_c. Lane l < 4 of the unpacked dot (dot_q6_k_q8_k) holds elements
 * 4l..4l+3 of the even 16-element groups, lane 4 + l those of the odd
 * groups, each times its group's scale, plus the -32 offset as
 * -32 * (scale[2l] * bsum[2l] + scale[2l+1] * bsum[2l+1]); here vector l
 * holds lane l of the 4 rows, the scales by parts along the even groups
 * (lanes 0..3) and the odd ones (lanes 4..7), and the float steps are the
 * unpacked dot's per block. Both chains (even groups: lanes 0..3, odd: lanes 4..7) run
 * group by group, so four groups' activations are one 64-byte load and a
 * group's quants one 48-byte load; the scales by parts of groups 2k and
 * 2k+1 are one signed subtract-long of neighbouring scale bytes. L holds
 * each lane negated (Q6K_OFF), undone in the float step's FMLS.
 *   v0-v7 C, v8-v15 L (first the offsets), v16-v19 activations of groups
 *   4m..4m+3, v20-v22 the quants X, Y, Z, v23 scratch, v24/v25 scales by
 *   parts (odd / even group), v26-v28 scale bytes */
#if defined(__clang__)
#define Q6K_ARCH ""
#else
#define Q6K_ARCH ".arch armv8.2-a+dotprod\n\t"
#endif
/* L_l = (32 E_l) x bsums, E_l the scales of groups 2l, 2l+1: minus the
 * offset term -32 * (sc[2l] bsum[2l] + sc[2l+1] bsum[2l+1]), exact. L
 * holds minus the unpacked dot's lane (the chains come off it by MLS):
 * cvt(L) is minus that lane's conversion exactly, and FMLS (which negates
 * a factor and fuses) makes the unpacked dot's FMA of it */
#define Q6K_OFF_(L, SSHLL, V, ARR, B, I0, I1)                                                         \
    SSHLL " v6.8h, v" #V "." ARR ", #5\n\t"                                                         \
    "smull v" #L ".4s, v6.4h, v" #B ".h[" #I0 "]\n\t"                                                \
    "smlal2 v" #L ".4s, v6.8h, v" #B ".h[" #I1 "]\n\t"
#define Q6K_OFF(...) Q6K_OFF_(__VA_ARGS__)
#define Q6K_ZERO(C0, C1, C2, C3)                                                                     \
    "movi v" #C0 ".2d, #0\n\tmovi v" #C1 ".2d, #0\n\tmovi v" #C2 ".2d, #0\n\tmovi v" #C3 ".2d, #0\n\t"
/* scales by parts of groups 2k (v25) and 2k+1 (v24), k = 2j from the
 * bytes of E_2j, E_2j+1 (v26) and E_2j+2 (high half of v28) */
#define Q6K_D_EVEN(OFF)                                                                              \
    "ldp q26, q27, [%[sc], #" #OFF "]\n\t"                                                           \
    "ext v28.16b, v26.16b, v27.16b, #8\n\t"                                                          \
    "ssubl v24.8h, v26.8b, v28.8b\n\t"                                                               \
    "sshll v25.4s, v24.4h, #0\n\t"                                                                   \
    "sshll2 v24.4s, v24.8h, #0\n\t"
#define Q6K_D_LAST                                                                                   \
    "ldr q26, [%[sc], #48]\n\t"                                                                      \
    "dup d28, v26.d[1]\n\t"                                                                          \
    "ssubl v24.8h, v26.8b, v28.8b\n\t"                                                               \
    "sshll v25.4s, v24.4h, #0\n\t"                                                                   \
    "sshll2 v24.4s, v24.8h, #0\n\t"
#define Q6K_D_ODD                                                                                    \
    "ssubl2 v24.8h, v26.16b, v28.16b\n\t"                                                            \
    "sshll v25.4s, v24.4h, #0\n\t"                                                                   \
    "sshll2 v24.4s, v24.8h, #0\n\t"
#define Q6K_ACT(POST) "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[ap]], " POST "\n\t"
/* one group: its 4 quant vectors (X, Y, Z & 63, W3 from their top bits)
 * into the chain C0..C3 / L0..L3 with activations A and scales DS (L minus
 * the scaled chains: see Q6K_OFF) */
#define Q6K_G_(C0, C1, C2, C3, L0, L1, L2, L3, A, DS)                                                 \
    "ld1 {v20.16b, v21.16b, v22.16b}, [%[o]], #48\n\t"                                               \
    "and v23.16b, v20.16b, %[m6].16b\n\t"                                                            \
    "sdot v" #C0 ".4s, v23.16b, v" #A ".4b[0]\n\t"                                                   \
    "mls v" #L0 ".4s, v" #C0 ".4s, v" #DS ".4s\n\t"                                                  \
    "and v23.16b, v21.16b, %[m6].16b\n\t"                                                            \
    "sdot v" #C1 ".4s, v23.16b, v" #A ".4b[1]\n\t"                                                   \
    "mls v" #L1 ".4s, v" #C1 ".4s, v" #DS ".4s\n\t"                                                  \
    "and v23.16b, v22.16b, %[m6].16b\n\t"                                                            \
    "sdot v" #C2 ".4s, v23.16b, v" #A ".4b[2]\n\t"                                                   \
    "mls v" #L2 ".4s, v" #C2 ".4s, v" #DS ".4s\n\t"                                                  \
    "sri v22.16b, v21.16b, #2\n\t"                                                                   \
    "sri v22.16b, v20.16b, #4\n\t"                                                                   \
    "ushr v22.16b, v22.16b, #2\n\t"                                                                  \
    "sdot v" #C3 ".4s, v22.16b, v" #A ".4b[3]\n\t"                                                   \
    "mls v" #L3 ".4s, v" #C3 ".4s, v" #DS ".4s\n\t"
#define Q6K_G(...) Q6K_G_(__VA_ARGS__)
#define Q6K_EV(A) Q6K_G(0, 1, 2, 3, 8, 9, 10, 11, A, 25)
#define Q6K_OD(A) Q6K_G(4, 5, 6, 7, 12, 13, 14, 15, A, 24)
/* groups 4m..4m+3, D the scales by parts of groups 4m, 4m+1; the
 * activations' pointer moves on by POST (the last quad's: to the next
 * block's qs, as q45k_x4_c's) */
#define Q6K_QUAD(D, POST) Q6K_ACT(POST) D Q6K_EV(16) Q6K_OD(17) Q6K_D_ODD Q6K_EV(18) Q6K_OD(19)
static inline __attribute__((always_inline)) void q6k_x4_c(int64_t nb, const uint8_t *o, const k_block_q8_k *y,
                                                           float *out) {
    const uint8x16_t m6 = vdupq_n_u8(63);
    float32x4_t accs[8];
    float32x4_t *F = acc_zero(accs, 8);
    const uint8_t *yb = (const uint8_t *)y + 4; /* as q45k_x4_c */
    const int64_t next = (int64_t)sizeof(k_block_q8_k) - 192;
    for (int64_t b = 0; b < nb; b++) {
        const float yd = ((const float *)yb)[-1];
        const float32x4_t dv =
            vmulq_n_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(o + 832)))), yd);
        const uint8_t *sc = o + 768;
        __asm__ volatile(Q6K_ARCH
                         "ldp q0, q1, [%[ap], #256]\n\t"
                         "ldp q2, q3, [%[sc]]\n\t"
                         "ldp q4, q5, [%[sc], #32]\n\t"
                         Q6K_OFF(8, "sshll", 2, "8b", 0, 0, 1) Q6K_OFF(9, "sshll2", 2, "16b", 0, 2, 3)
                         Q6K_OFF(10, "sshll", 3, "8b", 0, 4, 5) Q6K_OFF(11, "sshll2", 3, "16b", 0, 6, 7)
                         Q6K_OFF(12, "sshll", 4, "8b", 1, 0, 1) Q6K_OFF(13, "sshll2", 4, "16b", 1, 2, 3)
                         Q6K_OFF(14, "sshll", 5, "8b", 1, 4, 5) Q6K_OFF(15, "sshll2", 5, "16b", 1, 6, 7)
                         Q6K_ZERO(0, 1, 2, 3) Q6K_ZERO(4, 5, 6, 7)
                         Q6K_QUAD(Q6K_D_EVEN(0), "#64") Q6K_QUAD(Q6K_D_EVEN(16), "#64")
                         Q6K_QUAD(Q6K_D_EVEN(32), "#64") Q6K_QUAD(Q6K_D_LAST, "%[next]") Q4K_FLOAT_("fmls")
                         : [o] "+r"(o), [ap] "+r"(yb)
                         : [sc] "r"(sc), [dv] "w"(dv), [m6] "w"(m6), [F] "r"(F), [F2] "r"(F + 4), [next] "r"(next)
                         : Q4K_CLOBBERS, "v27", "v28");
        o += 72; /* the asm went over the quants: past scales and d */
    }
    vst1q_f32(out, hsum8_x4(F[0], F[1], F[2], F[3], F[4], F[5], F[6], F[7]));
}
/* Q6_K, one group of 4 rows x 4 tokens (the batch piece), in fixed
 * registers: the integer lanes and float steps of q6k_xt with T = 4, the
 * lanes two at a time (passes (h, i0): lanes 4h + i0, 4h + i0 + 1 of the 4
 * tokens), so each pass runs 16 chains (C, L) of 4 tokens x 2 lanes. Per
 * block the scales by parts of the 16 groups (sc[g] - sc[g+2] of the 4
 * rows, widened; the even groups', then the odd ones', so that a pass
 * loads two groups' with one LDP) go to memory first, and the 4 tokens' dv
 * = d * yd (tokens 0..2 stay in registers, token 3's goes to memory); each
 * pass starts its L from the offset terms of its lanes, as q6k_xt does
 * but with the lane's sign flipped (L = (32 sc) x bsum, minus the scaled
 * chains by MLS: no NEG of the scales; the float step undoes the sign),
 * and ends with the float steps of its 8 (token, lane) pairs, whose
 * accumulators are side by side (F[8p + 2k + j] for pass p, token k,
 * lane 2p + j: two 4-register LD1/ST1). The whole loop over the blocks is
 * one asm; the token pointers sit at their block's group 15 (qs + 240),
 * whose load moves them on to the next block's.
 *   v0-v7   C (token k, lane j at v(2k + j); v0, v2, v4, v6 first hold
 *           the tokens' bsums of half h; v0-v5 scratch of the scales'
 *           widening), v8-v15 L (v(8 + 2k + j))
 *   v16-v19 one group's activations of tokens 0..3
 *   v20-v23 the group's weights (X, Y, Z, scratch), v24/v25 the scales by
 *   parts of the group and of the next one of the pass
 *   v26/v27 the pass's scales x 32, v28-v30 dv of tokens 0..2 (v25 token
 *   3's in the float step), v31 the mask 63 */
#if defined(__clang__)
#define Q6T_ARCH ""
#else
#define Q6T_ARCH ".arch armv8.2-a+dotprod\n\t"
#endif
/* the offset terms of token k's lanes into LA, LB from its bsums (in CK) */
#define Q6T_OFF_(CK, LA, LB, Y, H, B0, B1, B2, B3)                                                   \
    "ldr q" #CK ", [%[" #Y "], #(16 + 16 * " #H ")]\n\t"                                            \
    "smull v" #LA ".4s, v27.4h, v" #CK ".h[" #B0 "]\n\t"                                             \
    "smlal2 v" #LA ".4s, v27.8h, v" #CK ".h[" #B1 "]\n\t"                                            \
    "smull v" #LB ".4s, v26.4h, v" #CK ".h[" #B2 "]\n\t"                                             \
    "smlal2 v" #LB ".4s, v26.8h, v" #CK ".h[" #B3 "]\n\t"
#define Q6T_OFF(...) Q6T_OFF_(__VA_ARGS__)
/* token k's two chains: SDOTs by elements I0, I1 of its activations A
 * (L holds minus q6k_xt's lane: MLS) */
#define Q6T_K_(C0, C1, L0, L1, A, WA, WB, I0, I1, DS)                                                \
    "sdot v" #C0 ".4s, v" #WA ".16b, v" #A ".4b[" #I0 "]\n\t"                                        \
    "mls v" #L0 ".4s, v" #C0 ".4s, v" #DS ".4s\n\t"                                                  \
    "sdot v" #C1 ".4s, v" #WB ".16b, v" #A ".4b[" #I1 "]\n\t"                                        \
    "mls v" #L1 ".4s, v" #C1 ".4s, v" #DS ".4s\n\t"
#define Q6T_K(...) Q6T_K_(__VA_ARGS__)
/* the weights of lanes 0, 1 (v20, v21) or 2, 3 (v23, v22) of group G */
#define Q6T_W01(G)                                                                                   \
    "ldp q20, q21, [%[o], #(48 * " #G ")]\n\t"                                                       \
    "and v20.16b, v20.16b, v31.16b\n\t"                                                              \
    "and v21.16b, v21.16b, v31.16b\n\t"
#define Q6T_W23(G)                                                                                   \
    "ldp q20, q21, [%[o], #(48 * " #G ")]\n\t"                                                       \
    "ldr q22, [%[o], #(48 * " #G " + 32)]\n\t"                                                       \
    "and v23.16b, v22.16b, v31.16b\n\t"                                                              \
    "sri v22.16b, v21.16b, #2\n\t"                                                                   \
    "sri v22.16b, v20.16b, #4\n\t"                                                                   \
    "ushr v22.16b, v22.16b, #2\n\t"
/* group G of a pass, its scales by parts in v DS */
/* group G's activations of the 4 tokens (the token pointers are at their
 * block's group 15, qs + 240); the block's last (Q6T_ACTL, group 15)
 * moves them on to the next block's */
#define Q6T_ACT(G)                                                                                   \
    "ldur q16, [%[y0], #(16 * " #G " - 240)]\n\t"                                                    \
    "ldur q17, [%[y1], #(16 * " #G " - 240)]\n\t"                                                    \
    "ldur q18, [%[y2], #(16 * " #G " - 240)]\n\t"                                                    \
    "ldur q19, [%[y3], #(16 * " #G " - 240)]\n\t"
#define Q6T_ACTL(G)                                                                                  \
    "ld1 {v16.16b}, [%[y0]], %[ystep]\n\t"                                                           \
    "ld1 {v17.16b}, [%[y1]], %[ystep]\n\t"                                                           \
    "ld1 {v18.16b}, [%[y2]], %[ystep]\n\t"                                                           \
    "ld1 {v19.16b}, [%[y3]], %[ystep]\n\t"
#define Q6T_G_(G, W, WA, WB, I0, I1, DS, ACT)                                                        \
    ACT(G) W(G) Q6T_K(0, 1, 8, 9, 16, WA, WB, I0, I1, DS) Q6T_K(2, 3, 10, 11, 17, WA, WB, I0, I1, DS)       \
    Q6T_K(4, 5, 12, 13, 18, WA, WB, I0, I1, DS) Q6T_K(6, 7, 14, 15, 19, WA, WB, I0, I1, DS)
#define Q6T_G(...) Q6T_G_(__VA_ARGS__)
/* groups H + 2 M and H + 2 M + 2 (the pass's M-th and next): their scales
 * by parts side by side in ds (the pass's groups in order), one LDP */
#define Q6T_G2(H, M, W, WA, WB, I0, I1, ACT2)                                                        \
    "ldp q24, q25, [%[ds], #(16 * (8 * " #H " + " #M "))]\n\t"                                       \
    Q6T_G((H + 2 * M), W, WA, WB, I0, I1, 24, Q6T_ACT) Q6T_G((H + 2 * M + 2), W, WA, WB, I0, I1, 25, ACT2)
/* the pass's float step: token k's lanes FL, FL + 1 += cvt(-L) * dv[k], as
 * FMLS of cvt(L) (negation is exact, FMLS negates a factor and fuses: the
 * bits of q6k_xt's FMA)
 * (dv in v28, v29, v30, v25), the pass's 8 accumulators side by side as
 * q4k_x4_t4's (F[8p + 2k + j], lane 2p + j), two 4-register LD1/ST1 at
 * pf and pf2 = pf + 64, which move on by FPOST */
#define Q6T_F(FPOST)                                                                                 \
    NEON_SCVTF_V8_V15                                                                                \
    "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[pf]]\n\t"                                             \
    "ld1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[pf2]]\n\t"                                            \
    "fmls v16.4s, v8.4s, v28.4s\n\t"                                                                 \
    "fmls v17.4s, v9.4s, v28.4s\n\t"                                                                 \
    "fmls v18.4s, v10.4s, v29.4s\n\t"                                                                \
    "fmls v19.4s, v11.4s, v29.4s\n\t"                                                                \
    "fmls v20.4s, v12.4s, v30.4s\n\t"                                                                \
    "fmls v21.4s, v13.4s, v30.4s\n\t"                                                                \
    "fmls v22.4s, v14.4s, v25.4s\n\t"                                                                \
    "fmls v23.4s, v15.4s, v25.4s\n\t"                                                                \
    "st1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[pf]], " FPOST "\n\t"                                  \
    "st1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[pf2]], " FPOST "\n\t"
/* dv[k] = d x yd of token k (d32 * yd, as q6k_xt) */
#define Q6T_DV                                                                                       \
    "ldr d16, [%[o], #832]\n\t"                                                                      \
    "fcvtl v16.4s, v16.4h\n\t"                                                                       \
    "ldur s17, [%[y0], #-244]\n\t"                                                                   \
    "ldur s18, [%[y1], #-244]\n\t"                                                                   \
    "ldur s19, [%[y2], #-244]\n\t"                                                                   \
    "ldur s20, [%[y3], #-244]\n\t"                                                                   \
    "fmul v28.4s, v16.4s, v17.s[0]\n\t"                                                              \
    "fmul v29.4s, v16.4s, v18.s[0]\n\t"                                                              \
    "fmul v30.4s, v16.4s, v19.s[0]\n\t"                                                              \
    "fmul v24.4s, v16.4s, v20.s[0]\n\t"                                                              \
    "str q24, [%[dv]]\n\t"
/* ds[2m], ds[2m+1]: D_m = the scale bytes of groups 2m, 2m+1 minus those of
 * 2m+2, 2m+3 (0 past group 15), widened; S_j = bytes 16j..16j+15 in
 * v16-v19, N_j = bytes 16j+8..16j+23 (EXT), so D_2j = S_j - N_j (low
 * halves) and D_2j+1 the high halves */
#define Q6T_D2_(S, N, OFF)                                                                           \
    "ssubl v0.8h, v" #S ".8b, v" #N ".8b\n\t"                                                        \
    "ssubl2 v1.8h, v" #S ".16b, v" #N ".16b\n\t"                                                     \
    "sshll v2.4s, v0.4h, #0\n\t"                                                                     \
    "sshll2 v3.4s, v0.8h, #0\n\t"                                                                    \
    "sshll v4.4s, v1.4h, #0\n\t"                                                                     \
    "sshll2 v5.4s, v1.8h, #0\n\t"                                                                    \
    "stp q2, q4, [%[ds], #" #OFF "]\n\t"                                                             \
    "stp q3, q5, [%[ds], #(" #OFF " + 128)]\n\t"
#define Q6T_D2(...) Q6T_D2_(__VA_ARGS__)
#define Q6T_DS                                                                                       \
    "ldp q16, q17, [%[o], #768]\n\t"                                                                 \
    "ldp q18, q19, [%[o], #800]\n\t"                                                                 \
    "movi v20.2d, #0\n\t"                                                                            \
    "ext v21.16b, v16.16b, v17.16b, #8\n\t"                                                          \
    "ext v22.16b, v17.16b, v18.16b, #8\n\t"                                                          \
    "ext v23.16b, v18.16b, v19.16b, #8\n\t"                                                          \
    "ext v20.16b, v19.16b, v20.16b, #8\n\t"                                                          \
    Q6T_D2(16, 21, 0) Q6T_D2(17, 22, 32) Q6T_D2(18, 23, 64) Q6T_D2(19, 20, 96)
/* pass (H, i0): S the scale vector of its lanes' groups, B0..B3 their
 * bsums, I0, I1 = i0, i0 + 1, W/WA/WB the weights of those lanes, FL = 4H + i0 */
#define Q6T_PASS(H, S, B0, B1, B2, B3, I0, I1, W, WA, WB, FPOST, ACTL)                                        \
    "ldr q26, [%[o], #(768 + 16 * " #S ")]\n\t"                                                     \
    "sshll v27.8h, v26.8b, #5\n\t"                                                                   \
    "sshll2 v26.8h, v26.16b, #5\n\t"                                                                 \
    Q6T_OFF(0, 8, 9, y0, H, B0, B1, B2, B3) Q6T_OFF(2, 10, 11, y1, H, B0, B1, B2, B3)                \
    Q6T_OFF(4, 12, 13, y2, H, B0, B1, B2, B3) Q6T_OFF(6, 14, 15, y3, H, B0, B1, B2, B3)              \
    Q6K_ZERO(0, 1, 2, 3) Q6K_ZERO(4, 5, 6, 7)                                                        \
    Q6T_G2(H, 0, W, WA, WB, I0, I1, Q6T_ACT) Q6T_G2(H, 2, W, WA, WB, I0, I1, Q6T_ACT)                \
    Q6T_G2(H, 4, W, WA, WB, I0, I1, Q6T_ACT) Q6T_G2(H, 6, W, WA, WB, I0, I1, ACTL)                   \
    "ldr q25, [%[dv]]\n\t" Q6T_F(FPOST)
static inline __attribute__((always_inline)) void q6k_x4_t4(int64_t nb, const uint8_t *o, const char *a, size_t arb,
                                                            float *y, int64_t ys) {
    float32x4_t accs[32], dvs[4];
    int32x4_t dss[16];
    float32x4_t *F = accs, *dv = dvs; /* in memory, as in nib_xt */
    int32x4_t *ds = dss;
    __asm__("" : "+r"(F), "+r"(dv), "+r"(ds));
    for (int i = 0; i < 32; i++) F[i] = vdupq_n_f32(0);
    /* group 15 of token 0's block b (qs + 240): d at -244, bsums at +16 */
    const uint8_t *y0 = (const uint8_t *)a + 244;
    const uint8_t *y1 = y0 + arb, *y2 = y1 + arb, *y3 = y2 + arb;
    const int64_t fb = -384, ff = 128, ystep = sizeof(k_block_q8_k), gb = Q6K_X4_BYTES;
    float32x4_t *pf = F, *pf2 = F + 4; /* walked by the asm, back at the start per block */
    if (nb > 0)
        __asm__ volatile(Q6T_ARCH "movi v31.16b, #63\n\t"
                         "1:\n\t" Q6T_DV Q6T_DS
                         Q6T_PASS(0, 0, 0, 1, 2, 3, 0, 1, Q6T_W01, 20, 21, "%[ff]", Q6T_ACT)
                         Q6T_PASS(0, 1, 4, 5, 6, 7, 2, 3, Q6T_W23, 23, 22, "%[ff]", Q6T_ACT)
                         Q6T_PASS(1, 2, 0, 1, 2, 3, 0, 1, Q6T_W01, 20, 21, "%[ff]", Q6T_ACT)
                         Q6T_PASS(1, 3, 4, 5, 6, 7, 2, 3, Q6T_W23, 23, 22, "%[fb]", Q6T_ACTL)
                         "add %[o], %[o], %[gb]\n\t"
                         "subs %[nb], %[nb], #1\n\t"
                         "b.ne 1b\n\t"
                         : [pf] "+r"(pf), [pf2] "+r"(pf2), [o] "+r"(o), [nb] "+r"(nb), [y0] "+r"(y0), [y1] "+r"(y1),
                           [y2] "+r"(y2), [y3] "+r"(y3)
                         : [ds] "r"(ds), [dv] "r"(dv), [ff] "r"(ff), [fb] "r"(fb), [ystep] "r"(ystep), [gb] "r"(gb)
                         : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
                           "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26",
                           "v27", "v28", "v29", "v30", "v31", "cc", "memory");
    for (int k = 0; k < 4; k++) {
        const float32x4_t *f = F + 2 * k; /* lane 2p + j at f[8p + j] */
        vst1q_f32(y + k * ys, hsum8_x4(f[0], f[1], f[8], f[9], f[16], f[17], f[24], f[25]));
    }
}
/* Q4_K, one group of 4 rows x 4 tokens (the batch piece), the whole loop
 * over the group's blocks in fixed registers: the integer lanes and float
 * steps of nib_xt with T = 4, in 4 passes per block, pass i running lanes
 * i and 4 + i (halves 0 and 1) of the 4 tokens: 16 chains (C, L). A pass
 * loads a token's 64 activation bytes of a chunk in one LD1 (both halves'
 * even and odd sub-blocks), post-incremented; the last chunk's increment
 * (-192, or +100 in the last pass: to the next block's qs) rewinds it, so
 * the token pointers need no other arithmetic. Per block first: dv = d x yd
 * of the 4 tokens (kept), the mins' terms (into am, as nib_xt), and the
 * scales by parts ds[0..7] (to memory, one LDP per chunk in the passes).
 *   v0-v7   C (token k: lane i at v(2k), lane 4 + i at v(2k + 1))
 *   v8-v15  L (v(8 + 2k), v(9 + 2k))
 *   v16-v19 a token's chunk: even sub-block half 0, half 1, odd half 0, 1
 *   v20/v21 lane i's weights even / odd, v22/v23 lane 4 + i's
 *   v24/v25 ds of the chunk's even / odd sub-block
 *   v26 the mask 15, v27-v30 dv of tokens 0..3, v31 the mask 63
 * F holds token k's lane 4h + i at F[8i + 2k + h] (a pass's 8 side by side, for
 * two 4-register LD1/ST1). */
#define Q4T_MUL(L, C) "mul v" #L ".4s, v" #C ".4s, v24.4s\n\t"
#define Q4T_MLA(L, C) "mla v" #L ".4s, v" #C ".4s, v24.4s\n\t"
/* token k's chunk: its 4 chains' SDOTs by element I */
#define Q4T_K_(OP, C0, C1, L0, L1, Y, POST, I)                                                      \
    "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[" #Y "]], " POST "\n\t"                           \
    "sdot v" #C0 ".4s, v20.16b, v16.4b[" #I "]\n\t"                                                  \
    "sdot v" #C1 ".4s, v22.16b, v17.4b[" #I "]\n\t"                                                  \
    OP(L0, C0) OP(L1, C1)                                                                            \
    "sdot v" #C0 ".4s, v21.16b, v18.4b[" #I "]\n\t"                                                  \
    "sdot v" #C1 ".4s, v23.16b, v19.4b[" #I "]\n\t"                                                  \
    "mla v" #L0 ".4s, v" #C0 ".4s, v25.4s\n\t"                                                       \
    "mla v" #L1 ".4s, v" #C1 ".4s, v25.4s\n\t"
#define Q4T_K(...) Q4T_K_(__VA_ARGS__)
/* the nibbles of v20 (v22) to the weights v20, v21 (v22, v23): Q4_K
 * as they are, IQ4_XS through its table (v31) */
#define Q4T_NIB                                                                                      \
    "ushr v21.16b, v20.16b, #4\n\t"                                                                  \
    "and v20.16b, v20.16b, v26.16b\n\t"                                                              \
    "ushr v23.16b, v22.16b, #4\n\t"                                                                  \
    "and v22.16b, v22.16b, v26.16b\n\t"
#define Q4T_TBL                                                                                      \
    Q4T_NIB "tbl v20.16b, {v31.16b}, v20.16b\n\t"                                                   \
    "tbl v21.16b, {v31.16b}, v21.16b\n\t"                                                           \
    "tbl v22.16b, {v31.16b}, v22.16b\n\t"                                                           \
    "tbl v23.16b, {v31.16b}, v23.16b\n\t"
/* the nibbles of lanes I, 4 + I of chunk C (quants at o + QV) to v20-v23 */
#define Q4T_LD_(C, I, QV)                                                                            \
    "ldr q20, [%[o], #(" #QV " + 16 * (8 * " #C " + " #I "))]\n\t"                                  \
    "ldr q22, [%[o], #(" #QV " + 16 * (8 * " #C " + 4 + " #I "))]\n\t"
#define Q4T_LNIB(C, I) Q4T_LD_(C, I, 64) Q4T_NIB
#define Q4T_LTBL(C, I) Q4T_LD_(C, I, 32) Q4T_TBL
/* Q5_K: lane I of half H, chunk C, even / odd sub-block weights to vE / vO
 * (the values of nib_lane; v16-v19 scratch, v26 the mask 31). Lane 3's u7
 * as q45k_x4_c gathers it: X1 and X3 shifted so that their bit 5 is bit 7,
 * one shift-insert puts X1's below X3's, with no mask register */
#define Q5T_P(C, H) "(64 + 80 * (2 * " #C " + " #H "))"
#define Q5T_LANE0(C, H, E, O)                                                                        \
    "ldr q" #E ", [%[o], #" Q5T_P(C, H) "]\n\t"                                                      \
    "ldr q" #O ", [%[o], #(" Q5T_P(C, H) " + 64)]\n\t"                                               \
    "and v" #E ".16b, v" #E ".16b, v26.16b\n\t"                                                      \
    "and v" #O ".16b, v" #O ".16b, v26.16b\n\t"
#define Q5T_LANE1(C, H, E, O)                                                                        \
    "ldr q" #E ", [%[o], #(" Q5T_P(C, H) " + 16)]\n\t"                                               \
    "ldr q" #O ", [%[o], #" Q5T_P(C, H) "]\n\t"                                                      \
    "sri v" #O ".16b, v" #E ".16b, #3\n\t"                                                           \
    "ushr v" #O ".16b, v" #O ".16b, #3\n\t"                                                          \
    "and v" #E ".16b, v" #E ".16b, v26.16b\n\t"
#define Q5T_LANE2(C, H, E, O)                                                                        \
    "ldr q" #O ", [%[o], #(" Q5T_P(C, H) " + 32)]\n\t"                                               \
    "ldr q16, [%[o], #(" Q5T_P(C, H) " + 48)]\n\t"                                                   \
    "and v" #E ".16b, v" #O ".16b, v26.16b\n\t"                                                      \
    "sri v" #O ".16b, v16.16b, #3\n\t"                                                               \
    "ushr v" #O ".16b, v" #O ".16b, #3\n\t"
#define Q5T_LANE3(C, H, E, O)                                                                        \
    "ldr q16, [%[o], #(" Q5T_P(C, H) " + 48)]\n\t"                                                   \
    "ldr q17, [%[o], #(" Q5T_P(C, H) " + 16)]\n\t"                                                   \
    "ldr q" #O ", [%[o], #(" Q5T_P(C, H) " + 64)]\n\t"                                               \
    "shl v17.16b, v17.16b, #2\n\t"                                                                   \
    "shl v19.16b, v16.16b, #2\n\t"                                                                   \
    "sri v19.16b, v17.16b, #1\n\t"                                                                   \
    "sri v" #O ".16b, v19.16b, #3\n\t"                                                               \
    "ushr v" #O ".16b, v" #O ".16b, #3\n\t"                                                          \
    "and v" #E ".16b, v16.16b, v26.16b\n\t"
#define Q5T_DEC(C, I) Q5T_LANE##I(C, 0, 20, 21) Q5T_LANE##I(C, 1, 22, 23)
/* chunk C of pass I: the weights of lanes I, 4 + I (DEC: loaded and
 * decoded into v20-v23), the chunk's ds, 4 tokens */
#define Q4T_C_(OP, C, I, POST, DEC)                                                                  \
    DEC(C, I) "ldp q24, q25, [%[ds], #(32 * " #C ")]\n\t"                                            \
    Q4T_K(OP, 0, 1, 8, 9, y0, POST, I) Q4T_K(OP, 2, 3, 10, 11, y1, POST, I)                          \
    Q4T_K(OP, 4, 5, 12, 13, y2, POST, I) Q4T_K(OP, 6, 7, 14, 15, y3, POST, I)
#define Q4T_C(...) Q4T_C_(__VA_ARGS__)
/* the pass's float step: token k's lanes I, 4 + I += cvt(L) * dv; the
 * pass's 8 accumulators are contiguous (F[8I + 2k + h]), two 4-register
 * LD1/ST1 at pf and pf2 = pf + 64, which move on by FPOST (ff = 128 to
 * the next pass, fb = -384 after the last) */
#define Q4T_F(FPOST)                                                                                 \
    NEON_SCVTF_V8_V15                                                                                \
    "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[pf]]\n\t"                                             \
    "ld1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[pf2]]\n\t"                                            \
    "fmla v16.4s, v8.4s, v27.4s\n\t"                                                                 \
    "fmla v17.4s, v9.4s, v27.4s\n\t"                                                                 \
    "fmla v18.4s, v10.4s, v28.4s\n\t"                                                                \
    "fmla v19.4s, v11.4s, v28.4s\n\t"                                                                \
    "fmla v20.4s, v12.4s, v29.4s\n\t"                                                                \
    "fmla v21.4s, v13.4s, v29.4s\n\t"                                                                \
    "fmla v22.4s, v14.4s, v30.4s\n\t"                                                                \
    "fmla v23.4s, v15.4s, v30.4s\n\t"                                                                \
    "st1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[pf]], " FPOST "\n\t"                                  \
    "st1 {v20.4s, v21.4s, v22.4s, v23.4s}, [%[pf2]], " FPOST "\n\t"
#define Q4T_PASS(I, LAST, DEC, FPOST)                                                                \
    Q6K_ZERO(0, 1, 2, 3) Q6K_ZERO(4, 5, 6, 7)                                                        \
    Q4T_C(Q4T_MUL, 0, I, "#64", DEC) Q4T_C(Q4T_MLA, 1, I, "#64", DEC)                                \
    Q4T_C(Q4T_MLA, 2, I, "#64", DEC) Q4T_C(Q4T_MLA, 3, I, LAST, DEC) Q4T_F(FPOST)
/* the 4 passes of a block */
#define Q4T_PASSES(DEC)                                                                              \
    Q4T_PASS(0, "%[back]", DEC, "%[ff]") Q4T_PASS(1, "%[back]", DEC, "%[ff]")                        \
    Q4T_PASS(2, "%[back]", DEC, "%[ff]") Q4T_PASS(3, "%[next]", DEC, "%[fb]")
/* the block's head: d (v17) and dmin (v18) of the 4 rows; the mins n[0..3]
 * (k_q45k_x4_mins_neon) in v0-v3; the scales by parts ds[0..7] to memory */
#define Q4T_HEAD                                                                                     \
    K_Q45K_X4_ASM_HEAD                                                                               \
    "and v19.16b, v19.16b, v31.16b\n\t"                                                              \
    "and v20.16b, v20.16b, v31.16b\n\t"                                                              \
    "movi v22.2d, #0\n\t" Q4T_DS
/* ds[0..7] to memory from the 6-bit scales sc0 (v19, sub-blocks 0..3)
 * and sc1 (v20, 4..7) of the 4 rows, v22 what follows sc1 (the scale
 * bytes' 0 for Q4_K, IQ4_XS's offset 32): D = sc[s] - sc[s+1], widened */
#define Q4T_DS                                                                                       \
    "ext v24.16b, v19.16b, v20.16b, #4\n\t"                                                          \
    "ext v25.16b, v20.16b, v22.16b, #4\n\t"                                                          \
    "sub v19.16b, v19.16b, v24.16b\n\t"                                                              \
    "sub v20.16b, v20.16b, v25.16b\n\t"                                                              \
    "sxtl v21.8h, v19.8b\n\t"                                                                        \
    "sxtl2 v22.8h, v19.16b\n\t"                                                                      \
    "sxtl v23.8h, v20.8b\n\t"                                                                        \
    "sxtl2 v24.8h, v20.16b\n\t"                                                                      \
    "sxtl v4.4s, v21.4h\n\t"                                                                         \
    "sxtl2 v5.4s, v21.8h\n\t"                                                                        \
    "sxtl v6.4s, v22.4h\n\t"                                                                         \
    "sxtl2 v7.4s, v22.8h\n\t"                                                                        \
    "stp q4, q5, [%[ds]]\n\t"                                                                        \
    "stp q6, q7, [%[ds], #32]\n\t"                                                                   \
    "sxtl v4.4s, v23.4h\n\t"                                                                         \
    "sxtl2 v5.4s, v23.8h\n\t"                                                                        \
    "sxtl v6.4s, v24.4h\n\t"                                                                         \
    "sxtl2 v7.4s, v24.8h\n\t"                                                                        \
    "stp q4, q5, [%[ds], #64]\n\t"                                                                   \
    "stp q6, q7, [%[ds], #96]\n\t"
/* token (Y, DV) of the Q4_K and Q5_K 4-token pieces: dv (v DV) = d x yd,
 * v20 = dmin x yd, its bsum pairs (v12) ... */
#define QT_BSUMS_(Y, DV)                                                                             \
    "ldur s19, [%[" #Y "], #-4]\n\t"                                                                 \
    "fmul v" #DV ".4s, v17.4s, v19.s[0]\n\t"                                                         \
    "fmul v20.4s, v18.4s, v19.s[0]\n\t"                                                              \
    "ldp q12, q13, [%[" #Y "], #256]\n\t"                                                            \
    "addp v12.8h, v12.8h, v13.8h\n\t"
/* ... and the min sums M[0..3] (v8-v11) */
#define QT_MSUMS_(Y, DV)                                                                             \
    QT_BSUMS_(Y, DV)                                                                                 \
    "smull v8.4s, v0.4h, v12.h[0]\n\t"                                                               \
    "smull v9.4s, v1.4h, v12.h[2]\n\t"                                                               \
    "smull v10.4s, v2.4h, v12.h[4]\n\t"                                                              \
    "smull v11.4s, v3.4h, v12.h[6]\n\t"                                                              \
    "smlal2 v8.4s, v0.8h, v12.h[1]\n\t"                                                              \
    "smlal2 v9.4s, v1.8h, v12.h[3]\n\t"                                                              \
    "smlal2 v10.4s, v2.8h, v12.h[5]\n\t"                                                             \
    "smlal2 v11.4s, v3.8h, v12.h[7]\n\t"
/* token k: dv (v DV) = d x yd; its bsum pairs (v12), the min sums M[0..3]
 * (k_q45k_x4_msums_neon, v8-v11) and am[k][j] += cvt(M[j]) x dmin x yd,
 * the token's 4 accumulators one 4-register LD1/ST1 at am, which moves on
 * by K (#64 to the next token, -192 after the last) */
#define Q4T_MIN_(Y, DV, K)                                                                           \
    QT_MSUMS_(Y, DV)                                                                                 \
    "scvtf v8.4s, v8.4s\n\t"                                                                         \
    "scvtf v9.4s, v9.4s\n\t"                                                                         \
    "scvtf v10.4s, v10.4s\n\t"                                                                       \
    "scvtf v11.4s, v11.4s\n\t"                                                                       \
    "ld1 {v21.4s, v22.4s, v23.4s, v24.4s}, [%[am]]\n\t"                                             \
    "fmla v21.4s, v8.4s, v20.4s\n\t"                                                                 \
    "fmla v22.4s, v9.4s, v20.4s\n\t"                                                                 \
    "fmla v23.4s, v10.4s, v20.4s\n\t"                                                                \
    "fmla v24.4s, v11.4s, v20.4s\n\t"                                                                \
    "st1 {v21.4s, v22.4s, v23.4s, v24.4s}, [%[am]], " K "\n\t"
#define Q4T_MIN(...) Q4T_MIN_(__VA_ARGS__)
static inline __attribute__((always_inline)) void q4k_x4_t4(int64_t nb, const uint8_t *o, const char *a, size_t arb,
                                                            float *y, int64_t ys) {
    float32x4_t accs[32], ams[16];
    int32x4_t dss[8];
    float32x4_t *F = accs, *am = ams; /* in memory, as in nib_xt */
    int32x4_t *ds = dss;
    __asm__("" : "+r"(F), "+r"(am), "+r"(ds));
    for (int i = 0; i < 32; i++) F[i] = vdupq_n_f32(0);
    for (int i = 0; i < 16; i++) am[i] = vdupq_n_f32(0);
    const uint8_t *y0 = (const uint8_t *)a + 4; /* qs of token 0's block b; d at -4, bsums at 256 */
    const uint8_t *y1 = y0 + arb, *y2 = y1 + arb, *y3 = y2 + arb;
    const int64_t back = -192, next = (int64_t)sizeof(k_block_q8_k) - 192, fb = -384, ff = 128;
    float32x4_t *pf = F, *pf2 = F + 4, *pam = am; /* walked by the asm, back at the start per block */
    if (nb > 0)
        __asm__ volatile(Q6T_ARCH "movi v26.16b, #15\n\t"
                                  "movi v31.16b, #63\n\t"
                                  "1:\n\t" Q4T_HEAD Q4T_MIN(y0, 27, "#64") Q4T_MIN(y1, 28, "#64") Q4T_MIN(y2, 29, "#64")
                                      Q4T_MIN(y3, 30, "%[back]") Q4T_PASSES(Q4T_LNIB) "add %[o], %[o], #576\n\t"
                                                                                        "subs %[nb], %[nb], #1\n\t"
                                                                                        "b.ne 1b\n\t"
                         : [o] "+r"(o), [nb] "+r"(nb), [y0] "+r"(y0), [y1] "+r"(y1), [y2] "+r"(y2), [y3] "+r"(y3),
                           [pf] "+r"(pf), [pf2] "+r"(pf2), [am] "+r"(pam)
                         : [back] "r"(back), [next] "r"(next), [fb] "r"(fb), [ff] "r"(ff), [ds] "r"(ds)
                         : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
                           "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26",
                           "v27", "v28", "v29", "v30", "v31", "cc", "memory");
    for (int k = 0; k < 4; k++) {
        const float32x4_t *f = F + 2 * k, *m = am + 4 * k; /* lane 4h + i at f[8i + h] */
        const float32x4_t s = hsum8_x4(f[0], f[8], f[16], f[24], f[1], f[9], f[17], f[25]);
        vst1q_f32(y + k * ys, vsubq_f32(s, vaddq_f32(vaddq_f32(m[0], m[2]), vaddq_f32(m[1], m[3]))));
    }
}
/* Q5_K, as q4k_x4_t4 (the same head; the 5-bit weights as nib_lane
 * decodes them, with the mask 31 in v26; the mins' term as
 * k_q45k_x4_minterm_neon's summs: += -dmin x yd x (M0 + M1 + M2 + M3)).
 * The four min sums are one integer chain (exact: |min x bsum pair| <=
 * 63 x 4096, eight of them fit 32 bits), and FMLS is FMLA with the
 * first factor negated (the same fused operation, the same bits as
 * FNEG then FMLA). The 4 tokens' summs (am[k] into vA = v21 + k) are one
 * 4-register LD1 and ST1 per block. */
#define Q5T_MIN_(Y, DV, A)                                                                           \
    QT_BSUMS_(Y, DV)                                                                                 \
    "smull v8.4s, v0.4h, v12.h[0]\n\t"                                                               \
    "smlal2 v8.4s, v0.8h, v12.h[1]\n\t"                                                              \
    "smlal v8.4s, v1.4h, v12.h[2]\n\t"                                                               \
    "smlal2 v8.4s, v1.8h, v12.h[3]\n\t"                                                              \
    "smlal v8.4s, v2.4h, v12.h[4]\n\t"                                                               \
    "smlal2 v8.4s, v2.8h, v12.h[5]\n\t"                                                              \
    "smlal v8.4s, v3.4h, v12.h[6]\n\t"                                                               \
    "smlal2 v8.4s, v3.8h, v12.h[7]\n\t"                                                              \
    "scvtf v8.4s, v8.4s\n\t"                                                                         \
    "fmls v" #A ".4s, v20.4s, v8.4s\n\t"
#define Q5T_MIN(...) Q5T_MIN_(__VA_ARGS__)
static inline __attribute__((always_inline)) void q5k_x4_t4(int64_t nb, const uint8_t *o, const char *a, size_t arb,
                                                            float *y, int64_t ys) {
    float32x4_t accs[32], ams[4];
    int32x4_t dss[8];
    float32x4_t *F = accs, *am = ams; /* in memory, as in nib_xt; am: summs */
    int32x4_t *ds = dss;
    __asm__("" : "+r"(F), "+r"(am), "+r"(ds));
    for (int i = 0; i < 32; i++) F[i] = vdupq_n_f32(0);
    for (int i = 0; i < 4; i++) am[i] = vdupq_n_f32(0);
    const uint8_t *y0 = (const uint8_t *)a + 4; /* as q4k_x4_t4 */
    const uint8_t *y1 = y0 + arb, *y2 = y1 + arb, *y3 = y2 + arb;
    const int64_t back = -192, next = (int64_t)sizeof(k_block_q8_k) - 192, gb = Q5K_X4_BYTES, fb = -384, ff = 128;
    float32x4_t *pf = F, *pf2 = F + 4; /* walked by the asm, back at the start per block */
    if (nb > 0)
        __asm__ volatile(Q6T_ARCH "movi v26.16b, #31\n\t"
                                  "movi v31.16b, #63\n\t"
                                  "1:\n\t" Q4T_HEAD "ld1 {v21.4s, v22.4s, v23.4s, v24.4s}, [%[am]]\n\t"
                                      Q5T_MIN(y0, 27, 21) Q5T_MIN(y1, 28, 22) Q5T_MIN(y2, 29, 23) Q5T_MIN(y3, 30, 24)
                                      "st1 {v21.4s, v22.4s, v23.4s, v24.4s}, [%[am]]\n\t" Q4T_PASSES(Q5T_DEC) "add %[o], %[o], %[gb]\n\t"
                                                                                  "subs %[nb], %[nb], #1\n\t"
                                                                                  "b.ne 1b\n\t"
                         : [o] "+r"(o), [nb] "+r"(nb), [y0] "+r"(y0), [y1] "+r"(y1), [y2] "+r"(y2), [y3] "+r"(y3),
                           [pf] "+r"(pf), [pf2] "+r"(pf2)
                         : [back] "r"(back), [next] "r"(next), [gb] "r"(gb), [fb] "r"(fb), [ff] "r"(ff), [ds] "r"(ds), [am] "r"(am)
                         : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
                           "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26",
                           "v27", "v28", "v29", "v30", "v31", "cc", "memory");
    for (int k = 0; k < 4; k++) {
        const float32x4_t *f = F + 2 * k; /* as q4k_x4_t4 */
        vst1q_f32(y + k * ys, vaddq_f32(hsum8_x4(f[0], f[8], f[16], f[24], f[1], f[9], f[17], f[25]), am[k]));
    }
}
/* IQ4_XS, as q4k_x4_t4 (its head: d, the scales' low 4 bits S and top 2
 * bits N as iq4xs_x4_c decodes them, no mins; the nibbles through the
 * table in v31, the mask 63 made per block) */
#define Q4T_IQ_HEAD                                                                                  \
    "ldr d16, [%[o]]\n\t"                                                                            \
    "fcvtl v17.4s, v16.4h\n\t"                                                                       \
    "ldur q19, [%[o], #8]\n\t"                                                                       \
    "ldr d21, [%[o], #24]\n\t"                                                                       \
    "movi v25.16b, #63\n\t"                                                                          \
    "and v20.8b, v21.8b, v26.8b\n\t"                                                                 \
    "ushr v21.8b, v21.8b, #4\n\t"                                                                    \
    "mov v20.d[1], v21.d[0]\n\t"                                                                     \
    "ushr v22.16b, v19.16b, #6\n\t"                                                                  \
    "sli v20.16b, v22.16b, #4\n\t"                                                                   \
    "and v19.16b, v19.16b, v25.16b\n\t"                                                              \
    "movi v22.16b, #32\n\t" Q4T_DS
#define Q4T_IQ_DV_(Y, DV)                                                                            \
    "ldur s19, [%[" #Y "], #-4]\n\t"                                                                 \
    "fmul v" #DV ".4s, v17.4s, v19.s[0]\n\t"
#define Q4T_IQ_DV(...) Q4T_IQ_DV_(__VA_ARGS__)
static inline __attribute__((always_inline)) void iq4xs_x4_t4(int64_t nb, const uint8_t *o, const char *a, size_t arb,
                                                              float *y, int64_t ys) {
    float32x4_t accs[32];
    int32x4_t dss[8];
    float32x4_t *F = accs; /* in memory, as in nib_xt */
    int32x4_t *ds = dss;
    __asm__("" : "+r"(F), "+r"(ds));
    for (int i = 0; i < 32; i++) F[i] = vdupq_n_f32(0);
    const uint8_t *y0 = (const uint8_t *)a + 4; /* as q4k_x4_t4 */
    const uint8_t *y1 = y0 + arb, *y2 = y1 + arb, *y3 = y2 + arb;
    const int64_t back = -192, next = (int64_t)sizeof(k_block_q8_k) - 192, gb = IQ4XS_X4_BYTES, fb = -384, ff = 128;
    float32x4_t *pf = F, *pf2 = F + 4; /* walked by the asm, back at the start per block */
    if (nb > 0)
        __asm__ volatile(Q6T_ARCH "movi v26.16b, #15\n\t"
                                  "ldr q31, [%[tab]]\n\t"
                                  "1:\n\t" Q4T_IQ_HEAD Q4T_IQ_DV(y0, 27) Q4T_IQ_DV(y1, 28) Q4T_IQ_DV(y2, 29)
                                      Q4T_IQ_DV(y3, 30) Q4T_PASSES(Q4T_LTBL) "add %[o], %[o], %[gb]\n\t"
                                                                                   "subs %[nb], %[nb], #1\n\t"
                                                                                   "b.ne 1b\n\t"
                         : [o] "+r"(o), [nb] "+r"(nb), [y0] "+r"(y0), [y1] "+r"(y1), [y2] "+r"(y2), [y3] "+r"(y3),
                           [pf] "+r"(pf), [pf2] "+r"(pf2)
                         : [back] "r"(back), [next] "r"(next), [gb] "r"(gb), [fb] "r"(fb), [ff] "r"(ff), [tab] "r"(k_iq4nl_values),
                           [ds] "r"(ds)
                         : "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
                           "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26",
                           "v27", "v28", "v29", "v30", "v31", "cc", "memory");
    for (int k = 0; k < 4; k++) {
        const float32x4_t *f = F + 2 * k; /* as q4k_x4_t4 */
        vst1q_f32(y + k * ys, hsum8_x4(f[0], f[8], f[16], f[24], f[1], f[9], f[17], f[25]));
    }
}
#undef Q4T_MUL
#undef Q4T_MLA
#undef Q4T_K_
#undef Q4T_K
#undef Q4T_C_
#undef Q4T_C
#undef Q4T_F
#undef Q4T_PASS
#undef Q4T_PASSES
#undef Q4T_HEAD
#undef Q4T_MIN_
#undef Q4T_MIN
#undef Q4T_LD_
#undef Q4T_LNIB
#undef Q4T_LTBL
#undef Q5T_P
#undef Q5T_LANE0
#undef Q5T_LANE1
#undef Q5T_LANE2
#undef Q5T_LANE3
#undef Q5T_DEC
#undef Q5T_MIN_
#undef Q5T_MIN
#undef QT_BSUMS_
#undef QT_MSUMS_
#undef Q4T_NIB
#undef Q4T_TBL
#undef Q4T_DS
#undef Q4T_IQ_HEAD
#undef Q4T_IQ_DV_
#undef Q4T_IQ_DV
#undef Q6K_ARCH
#undef Q6T_ARCH
#undef Q6T_OFF_
#undef Q6T_OFF
#undef Q6T_K_
#undef Q6T_K
#undef Q6T_W01
#undef Q6T_W23
#undef Q6T_G_
#undef Q6T_G
#undef Q6T_G2
#undef Q6T_F
#undef Q6T_PASS
#undef Q6T_DV
#undef Q6T_D2_
#undef Q6T_D2
#undef Q6T_DS
#undef Q6K_OFF_
#undef Q6K_OFF
#undef Q6K_ZERO
#undef Q6K_D_EVEN
#undef Q6K_D_LAST
#undef Q6K_D_ODD
#undef Q6K_ACT
#undef Q6K_G_
#undef Q6K_G
#undef Q6K_EV
#undef Q6K_OD
#undef Q6K_QUAD

#undef Q4K_ARCH
#undef Q4K_LANE_
#undef Q4K_LANE
#undef Q4K_F_ZERO
#undef Q4K_F_MUL
#undef Q4K_N_ZERO
#undef Q4K_N_MUL
#undef Q4K_CHUNK
#undef Q4K_CHUNKS
#undef Q4K_FLOAT
#undef Q4K_FLOAT_
#undef Q4K_CLOBBERS
#undef Q4K_D_LO
#undef Q4K_D_HI
#undef Q4K_X_LO
#undef Q4K_X_HI

/* The pieces of the tiles (k_mm_run, mm_driver.h): one group of 4 rows x
 * 4 or 2 tokens, and one token over any number of groups. One token: the
 * one-token kernel per group. Two or more: per group the tokens 4 at a
 * time, then 2, then the one-token piece; a group's weights stay in cache
 * across its passes. Each kernel is a function of its own: beside one
 * another clang allocates their registers worse (+2 to +5 instructions per
 * 256 weights per row on the proxy). The Q4_K and Q5_K one-token pieces
 * serve the i8mm set's single tokens too (pack_neon_i8mm_arm64.c). */
#define PACKED_TILE_T(name, XT, T)                                                                         \
    static __attribute__((noinline)) void name##_t##T(int rows, int toks, int64_t n, const char *w,       \
                                                      size_t row_bytes, const char *a, size_t arb, float *y, \
                                                      int64_t ys) {                                        \
        (void)rows, (void)toks, (void)row_bytes;                                                           \
        XT(T, n / K_QKK, (const uint8_t *)w, a, arb, y, ys);                                               \
    }
#define PACKED_TILE(name, XT, X1, LINK)                                                                    \
    PACKED_TILE_T(name, XT, 4)                                                                             \
    PACKED_TILE_T(name, XT, 2)                                                                             \
    LINK void k_mm_piece_##name##_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, \
                                           const char *a, size_t a_row_bytes, float *y, int64_t y_stride) { \
        (void)toks, (void)a_row_bytes, (void)y_stride;                                                     \
        const int64_t nb = n / K_QKK;                                                                      \
        for (int g = 0; g + 4 <= rows; g += 4) {                                                           \
            float out[4];                                                                                  \
            X1(nb, (const uint8_t *)w + (size_t)g * row_bytes, (const k_block_q8_k *)a, out);              \
            memcpy(y + g, out, sizeof out);                                                                \
        }                                                                                                  \
    }                                                                                                      \
    static const mm_kernel mm_##name = {.pack_rows = 4, .pack_one = k_mm_piece_##name##_neon_dot,          \
                                        .pack_toks = {4, 2}, .pack_pieces = {name##_t4, name##_t2}};       \
    void k_mm_packed_##name##_neon_dot(K_MM_TILE_PARAMS) { k_mm_run(&mm_##name, K_MM_TILE_ARGS); }
/* Q4_K: 4 tokens in fixed registers, 2 in C */
#define Q4K_XT(T, ...) Q4K_XT##T(__VA_ARGS__)
#define Q4K_XT4(...) q4k_x4_t4(__VA_ARGS__)
#define Q4K_XT2(...) nib_xt(K_Q4_K, 2, __VA_ARGS__)
/* Q5_K: the same */
#define Q5K_XT(T, ...) Q5K_XT##T(__VA_ARGS__)
#define Q5K_XT4(...) q5k_x4_t4(__VA_ARGS__)
#define Q5K_XT2(...) nib_xt(K_Q5_K, 2, __VA_ARGS__)
/* IQ4_XS: the same */
#define IQ4XS_XT(T, ...) IQ4XS_XT##T(__VA_ARGS__)
#define IQ4XS_XT4(...) iq4xs_x4_t4(__VA_ARGS__)
#define IQ4XS_XT2(...) nib_xt(K_IQ4_XS, 2, __VA_ARGS__)
#define Q4K_X1(...) q45k_x4_c(1, __VA_ARGS__)
#define Q5K_X1(...) q45k_x4_c(0, __VA_ARGS__)
PACKED_TILE(q4_k_x4, Q4K_XT, Q4K_X1, )
PACKED_TILE(q5_k_x4, Q5K_XT, Q5K_X1, )
/* the Q4_K and Q5_K 4- and 2-token pieces over `rows` rows (whole groups),
 * for the i8mm set's batches of 4 and 2 tokens: its USMMLA tiles take
 * fewer instructions from 6 tokens on */
#define PACKED_GROUPS(name, T)                                                                             \
    void k_mm_piece_##name##_t##T##_neon_dot(int rows, int toks, int64_t n, const char *w, size_t row_bytes, \
                                             const char *a, size_t arb, float *y, int64_t ys) {            \
        for (int g = 0; g + 4 <= rows; g += 4)                                                             \
            name##_t##T(4, toks, n, w + (size_t)g * row_bytes, row_bytes, a, arb, y + g, ys);             \
    }
PACKED_GROUPS(q4_k_x4, 4)
PACKED_GROUPS(q4_k_x4, 2)
PACKED_GROUPS(q5_k_x4, 4)
PACKED_GROUPS(q5_k_x4, 2)
#undef PACKED_GROUPS
PACKED_TILE(iq4_xs_x4, IQ4XS_XT, iq4xs_x4_c, static)
/* Q6_K: 4 tokens in fixed registers, 2 in C */
#define Q6K_XT(T, ...) Q6K_XT##T(__VA_ARGS__)
#define Q6K_XT4(...) q6k_x4_t4(__VA_ARGS__)
#define Q6K_XT2(...) q6k_xt(2, __VA_ARGS__)
PACKED_TILE(q6_k_x4, Q6K_XT, q6k_x4_c, static)
#undef Q4K_XT
#undef Q4K_XT4
#undef Q4K_XT2
#undef Q5K_XT
#undef Q5K_XT4
#undef Q5K_XT2
#undef IQ4XS_XT
#undef IQ4XS_XT4
#undef IQ4XS_XT2
#undef Q4K_X1
#undef Q6K_XT
#undef Q6K_XT4
#undef Q6K_XT2
#undef Q5K_X1
#undef PACKED_TILE
#undef PACKED_TILE_T


K_DOTPROD_END
