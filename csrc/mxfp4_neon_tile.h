/* mxfp4_neon_tile.h — the MXFP4 tile of the two arm64 kernel sets, included
 * by mxfp4_neon_arm64.c (widening multiplies) and mxfp4_neon_dot_arm64.c
 * (SDOT), which define before including it
 *   MX_DOT16(q, a)  int32x4_t lane l = the products of elements 4l..4l+3
 *                   of 16 int8 codes' values q and 16 activations a
 *   MX_TARGET       the function attribute of the set (may be empty)
 * and get mxfp4_tile, mxfp4_piece and the prepared-group prep (mxfp4_tprep,
 * mxfp4_tprep_bytes) for the set's mm_kernel (static). MX_SET(dot, tile)
 * writes out the set's one-token dot and tile under those names.
 *
 * The values of a block's 16 low nibbles (elements 0..15) and 16 high ones
 * (16..31) come from one vqtbl1q_s8 each (k_mxfp4_values); their lanes are
 * x86's lanes 0..3 and 4..7, so the int32 lanes are mxfp4_ref.c's and the
 * f32 steps (even and odd blocks in two lane sets, FMA per block, the sets
 * added, hsum8 = (l + l+4), then (0+2) + (1+3); an odd last block by fmaf)
 * are the same: these kernels give ref's bits. */

#include <string.h>
#include "mm_driver.h"

#define MX_INLINE static inline __attribute__((always_inline))

MX_TARGET MX_INLINE float mx_hsum8(float32x4_t lo, float32x4_t hi) {
    const float32x4_t t = vaddq_f32(lo, hi);
    return (vgetq_lane_f32(t, 0) + vgetq_lane_f32(t, 2)) + (vgetq_lane_f32(t, 1) + vgetq_lane_f32(t, 3));
}

MX_TARGET MX_INLINE float mx_h2f(k_half h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

/* the values of elements 0..15 and 16..31 of block x */
struct mx_lv { int8x16_t lo, hi; };
MX_TARGET MX_INLINE struct mx_lv mx_levels(int8x16_t table, const k_block_mxfp4 *x) {
    const uint8x16_t b = vld1q_u8(x->qs);
    struct mx_lv v = {vqtbl1q_s8(table, vandq_u8(b, vdupq_n_u8(15))), vqtbl1q_s8(table, vshrq_n_u8(b, 4))};
    return v;
}

/* R rows (row_bytes apart) x T tokens (a_row_bytes apart), R * T <= 4:
 * out[k * R + r] = dot(row r, token k), vec_dot's order */
MX_TARGET MX_INLINE void mxfp4_tile(const int R, const int T, int64_t n, const char *w, size_t row_bytes,
                                    const char *a, size_t a_row_bytes, float *out) {
    const int8x16_t table = vld1q_s8(k_mxfp4_values);
    const int64_t nb = n / K_QK;
    float32x4_t acc[4][4][2][2]; /* [row][token][even/odd block][lanes 0..3 / 4..7] */
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++)
            acc[r][k][0][0] = acc[r][k][0][1] = acc[r][k][1][0] = acc[r][k][1][1] = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        _Pragma("GCC unroll 8")
        for (int h = 0; h < 2; h++) {
            _Pragma("GCC unroll 8")
            for (int r = 0; r < R; r++) {
                const k_block_mxfp4 *x = (const k_block_mxfp4 *)(w + (size_t)r * row_bytes) + i + h;
                const struct mx_lv q = mx_levels(table, x);
                const float e = k_e8m0_half(x->e);
                _Pragma("GCC unroll 8")
                for (int k = 0; k < T; k++) {
                    const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i + h;
                    const int32x4_t lo = MX_DOT16(q.lo, vld1q_s8(y->qs)), hi = MX_DOT16(q.hi, vld1q_s8(y->qs + 16));
                    const float32x4_t d = vdupq_n_f32(mx_h2f(y->d) * e);
                    acc[r][k][h][0] = vfmaq_f32(acc[r][k][h][0], vcvtq_f32_s32(lo), d);
                    acc[r][k][h][1] = vfmaq_f32(acc[r][k][h][1], vcvtq_f32_s32(hi), d);
                }
            }
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++)
            out[k * R + r] = mx_hsum8(vaddq_f32(acc[r][k][0][0], acc[r][k][1][0]), vaddq_f32(acc[r][k][0][1], acc[r][k][1][1]));
    if (i < nb) { /* odd block count: the last block as one scalar term */
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_mxfp4 *x = (const k_block_mxfp4 *)(w + (size_t)r * row_bytes) + i;
            const struct mx_lv q = mx_levels(table, x);
            const float e = k_e8m0_half(x->e);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) {
                const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
                const int32x4_t s = vaddq_s32(MX_DOT16(q.lo, vld1q_s8(y->qs)), MX_DOT16(q.hi, vld1q_s8(y->qs + 16)));
                out[k * R + r] = fmaf(mx_h2f(y->d) * e, (float)vaddvq_s32(s), out[k * R + r]);
            }
        }
    }
}

/* ---- A batch: prepared token groups (mm_driver.h phase 2b) ----
 *
 * The prep copies, per block i and token k of a group of g, the block's 32
 * activation bytes to one place and converts its f16 scale to f32 once, so
 * the row loop reads each token's block with one 32-byte load at a fixed
 * offset and multiplies four tokens' scales by the row's E8M0 factor in
 * one FMUL. A row's block is decoded (nibbles, TBL, E8M0) once for the g
 * tokens instead of once per 4. Layout per block i, at i * MX_PREP_STRIDE(g):
 * g x 32 activation bytes, then 8 f32 scales (those past g zero).
 *
 * Per token and block: two MX_DOT16 (lanes 0..3 and 4..7), two
 * conversions and two FMAs by element with d = f32(y.d) * k_e8m0_half(e):
 * the lanes, products and FMAs of mxfp4_tile, so the same bits. 8 tokens'
 * even and odd accumulators (32 vectors) do not fit the register file with
 * the row's values, so a row runs in two passes, its even blocks then its
 * odd ones (16 accumulators each; the two sets never meet before the end
 * in the reference order either), each pass storing its accumulators once;
 * then the sets are added and reduced as in mxfp4_tile. */
#define MX_PREP_STRIDE(g) ((size_t)(g) * 32 + 32)

static size_t mxfp4_tprep_bytes(int64_t n) { return (size_t)(n / K_QK) * MX_PREP_STRIDE(MM_TPREP_TOKS); }

MX_TARGET static void mxfp4_tprep(int g, int64_t n, const char *a, size_t a_row_bytes, void *side) {
    const int64_t nb = n / K_QK;
    const size_t S = MX_PREP_STRIDE(g);
    for (int64_t i = 0; i < nb; i++) {
        unsigned char *p = (unsigned char *)side + (size_t)i * S;
        float d[MM_TPREP_TOKS] = {0};
        for (int k = 0; k < g; k++) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            vst1q_s8((int8_t *)(p + 32 * k), vld1q_s8(y->qs));
            vst1q_s8((int8_t *)(p + 32 * k + 16), vld1q_s8(y->qs + 16));
            d[k] = mx_h2f(y->d);
        }
        memcpy(p + 32 * g, d, sizeof d);
    }
}

/* k_e8m0_half(e) for every e, as f32 bits: one load in the row loop
 * instead of the branch-free select of kernels.h */
#define MX_E8(e) ((e) < 2 ? 0x00200000u << ((e) & 1) : (uint32_t)((e) - 1) << 23)
#define MX_E8x4(e) MX_E8(e), MX_E8((e) + 1), MX_E8((e) + 2), MX_E8((e) + 3)
#define MX_E8x16(e) MX_E8x4(e), MX_E8x4((e) + 4), MX_E8x4((e) + 8), MX_E8x4((e) + 12)
#define MX_E8x64(e) MX_E8x16(e), MX_E8x16((e) + 16), MX_E8x16((e) + 32), MX_E8x16((e) + 48)
static const uint32_t mx_e8m0_half_bits[256] = {MX_E8x64(0), MX_E8x64(64), MX_E8x64(128), MX_E8x64(192)};

/* acc + x * d[l] (FMLA by element: fused, as vfmaq_f32 with d[l] in every lane) */
MX_TARGET MX_INLINE float32x4_t mx_fma_lane(float32x4_t acc, float32x4_t x, float32x4_t d, const int l) {
    switch (l) {
    case 0: return vfmaq_laneq_f32(acc, x, d, 0);
    case 1: return vfmaq_laneq_f32(acc, x, d, 1);
    case 2: return vfmaq_laneq_f32(acc, x, d, 2);
    default: return vfmaq_laneq_f32(acc, x, d, 3);
    }
}

/* one pass: blocks i0, i0 + 2, ... (np of them) of one row against T
 * prepared tokens; res[8 k .. 8 k + 7] = token k's 8 f32 lanes */
MX_TARGET MX_INLINE void mx_prep_pass(const int T, int64_t i0, int64_t np, const k_block_mxfp4 *x,
                                      const unsigned char *side, float *res) {
    const int8x16_t table = vld1q_s8(k_mxfp4_values);
    const size_t S = MX_PREP_STRIDE(T);
    float32x4_t acc[MM_TPREP_TOKS][2];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) acc[k][0] = acc[k][1] = vdupq_n_f32(0);
    const unsigned char *p = side + (size_t)i0 * S;
    x += i0;
    for (int64_t j = 0; j < np; j++, x += 2, p += 2 * S) {
        const struct mx_lv q = mx_levels(table, x);
        const float32x4_t e = vreinterpretq_f32_u32(vld1q_dup_u32(&mx_e8m0_half_bits[x->e]));
        float32x4_t dv[2];
        dv[0] = vmulq_f32(vld1q_f32((const float *)(p + 32 * T)), e);
        dv[1] = T > 4 ? vmulq_f32(vld1q_f32((const float *)(p + 32 * T + 16)), e) : dv[0];
        /* opaque: else clang also forms lane 0's product as a scalar FMUL, per vector */
        __asm__("" : "+w"(dv[0]), "+w"(dv[1]));
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const int8_t *pa = (const int8_t *)(p + 32 * k);
            const int32x4_t lo = MX_DOT16(q.lo, vld1q_s8(pa)), hi = MX_DOT16(q.hi, vld1q_s8(pa + 16));
            acc[k][0] = mx_fma_lane(acc[k][0], vcvtq_f32_s32(lo), dv[k / 4], k % 4);
            acc[k][1] = mx_fma_lane(acc[k][1], vcvtq_f32_s32(hi), dv[k / 4], k % 4);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) {
        vst1q_f32(res + 8 * k, acc[k][0]);
        vst1q_f32(res + 8 * k + 4, acc[k][1]);
    }
}

/* not inlined: each pass's accumulators leave the registers through res */
MX_TARGET __attribute__((noinline)) static void mx_prep_pass_any(int T, int64_t i0, int64_t np, const k_block_mxfp4 *x,
                                                                 const unsigned char *side, float *res) {
    switch (T) {
    case 2: mx_prep_pass(2, i0, np, x, side, res); return;
    case 3: mx_prep_pass(3, i0, np, x, side, res); return;
    case 4: mx_prep_pass(4, i0, np, x, side, res); return;
    case 5: mx_prep_pass(5, i0, np, x, side, res); return;
    case 6: mx_prep_pass(6, i0, np, x, side, res); return;
    case 7: mx_prep_pass(7, i0, np, x, side, res); return;
    default: mx_prep_pass(8, i0, np, x, side, res); return;
    }
}

/* one row x T prepared tokens (2 <= T <= 8): out[k] = dot(row, token k) */
MX_TARGET static void mxfp4_prepped(int T, int64_t n, const char *w, const unsigned char *side, float *out) {
    const k_block_mxfp4 *x = (const k_block_mxfp4 *)w;
    const int64_t nb = n / K_QK, np = nb / 2;
    _Alignas(16) float ev[8 * MM_TPREP_TOKS], od[8 * MM_TPREP_TOKS];
    mx_prep_pass_any(T, 0, np, x, side, ev);
    mx_prep_pass_any(T, 1, np, x, side, od);
    for (int k = 0; k < T; k++)
        out[k] = mx_hsum8(vaddq_f32(vld1q_f32(ev + 8 * k), vld1q_f32(od + 8 * k)),
                          vaddq_f32(vld1q_f32(ev + 8 * k + 4), vld1q_f32(od + 8 * k + 4)));
    if (nb % 2) { /* odd block count: the last block as one scalar term */
        const int64_t i = nb - 1;
        const unsigned char *p = side + (size_t)i * MX_PREP_STRIDE(T);
        const struct mx_lv q = mx_levels(vld1q_s8(k_mxfp4_values), x + i);
        const float e = k_e8m0_half(x[i].e);
        const float *d = (const float *)(p + 32 * T);
        for (int k = 0; k < T; k++) {
            const int8_t *pa = (const int8_t *)(p + 32 * k);
            const int32x4_t s = vaddq_s32(MX_DOT16(q.lo, vld1q_s8(pa)), MX_DOT16(q.hi, vld1q_s8(pa + 16)));
            out[k] = fmaf(d[k] * e, (float)vaddvq_s32(s), out[k]);
        }
    }
}

/* one order: batch does not matter; a = the prepared group when rows == 1
 * and a_row_bytes == 0 with toks >= 2 (phase 2b) */
MX_TARGET static void mxfp4_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                                  const char *a, size_t a_row_bytes, float *out) {
    (void)batch;
    if (rows == 1 && toks >= 2 && a_row_bytes == 0) {
        mxfp4_prepped(toks, n, w, (const unsigned char *)a, out);
        return;
    }
    if (rows == 4) mxfp4_tile(4, 1, n, w, row_bytes, a, 0, out);
    else if (toks == 4) mxfp4_tile(1, 4, n, w, 0, a, a_row_bytes, out);
    else mxfp4_tile(1, 1, n, w, 0, a, 0, out);
}

MX_TARGET MX_INLINE float mxfp4_dot(int64_t n, const void *w, const void *a) {
    float out = 0.0f; /* set by the tile; initialized for -Wmaybe-uninitialized */
    mxfp4_tile(1, 1, n, (const char *)w, 0, (const char *)a, 0, &out);
    return out;
}

#define MX_SET(DOT, MM)                                                                                   \
    float DOT(int64_t n, const void *w, const void *a) { return mxfp4_dot(n, w, a); }                   \
    static const mm_kernel mm_mxfp4_piece = {                                                           \
        .piece = mxfp4_piece, .shapes = MM_R4 | MM_T4 | MM_BATCH_1X1, .tprep = mxfp4_tprep,            \
        .tprep_bytes = mxfp4_tprep_bytes};                                                              \
    void MM(K_MM_TILE_PARAMS) { k_mm_run(&mm_mxfp4_piece, K_MM_TILE_ARGS); }
