/* mxfp4_x86.h — the MXFP4 tile, its k_mm_run piece and the one-token dot,
 * the same for both x86 sets: included by mxfp4_<isa>_amd64.c after its
 * hooks and prepared-token bodies
 *   MX_TARGET                     the function attribute of its ISA
 *   mx_ctx, mx_ctx_make()         the tile's constants (the value table)
 *   mx_acc, mx_acc_zero()         a (row, token)'s f32 accumulator(s)
 *   mx_w, mx_wts(cx, x)           blocks x[0], x[1] of a row, ready for the dots
 *   mx_pair_fma(acc, w, y, e0, e1)   acc + the two blocks against a token's
 *                                 blocks y[0], y[1] (E8M0 factors e0, e1)
 *   mx_acc_sum(acc)               the final f32 sum (even + odd, then hsum)
 *   mx_last_isum(cx, x, y)        one block's integer dot with one Q8_0 block
 *   mxfp4_prepped(T, ...)         one row x T (2..8) prepared tokens
 *   mxfp4_tprep, mxfp4_tprep_bytes   the token prep of k_mm_run's phase 2b
 * (always_inline, R and T constants). The integer lanes are mxfp4_ref.c's
 * and the f32 steps its vec_dot order, so every result has its bits. */
#ifndef WOOLLY_MXFP4_X86_H
#define WOOLLY_MXFP4_X86_H

#include "mm_driver.h"

/* R rows (row_bytes apart) x T tokens (a_row_bytes apart), R * T <= 4:
 * out[k * R + r] = dot(row r, token k) in vec_dot's order. A row's two
 * blocks are made ready once for the T tokens; an odd block count leaves
 * the last block as one scalar term, fmaf(d, its integer sum, total). */
MX_TARGET static inline __attribute__((always_inline)) void mxfp4_tile(const int R, const int T, int64_t n, const char *w,
                                                                      size_t row_bytes, const char *a, size_t a_row_bytes,
                                                                      float *out) {
    const mx_ctx cx = mx_ctx_make();
    const int64_t nb = n / K_QK;
    mx_acc acc[4][4];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) acc[r][k] = mx_acc_zero();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const k_block_q8_0 *y[4];
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) y[k] = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_mxfp4 *x = (const k_block_mxfp4 *)(w + (size_t)r * row_bytes) + i;
            if (R > 1) _mm_prefetch((const char *)x + 4 * row_bytes, _MM_HINT_T0); /* the next group of rows */
            const mx_w wq = mx_wts(cx, x);
            const float e0 = k_e8m0_half(x[0].e), e1 = k_e8m0_half(x[1].e);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) acc[r][k] = mx_pair_fma(acc[r][k], wq, y[k], e0, e1);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) out[k * R + r] = mx_acc_sum(acc[r][k]);
    if (i < nb) {
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_mxfp4 *x = (const k_block_mxfp4 *)(w + (size_t)r * row_bytes) + i;
            const float e = k_e8m0_half(x->e);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) {
                const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
                out[k * R + r] = fmaf(k_h2f_avx2(y->d) * e, (float)mx_last_isum(cx, x, y), out[k * R + r]);
            }
        }
    }
}

/* one order: batch does not matter; a = the prepared group when rows == 1
 * and a_row_bytes == 0 with toks >= 2 (phase 2b) */
MX_TARGET static void mxfp4_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                                  const char *a, size_t a_row_bytes, float *out) {
    (void)batch;
    if (rows == 1 && toks >= 2 && a_row_bytes == 0) {
        const unsigned char *side = (const unsigned char *)a;
        switch (toks) {
        case 2: mxfp4_prepped(2, n, w, side, out); return;
        case 3: mxfp4_prepped(3, n, w, side, out); return;
        case 4: mxfp4_prepped(4, n, w, side, out); return;
        case 5: mxfp4_prepped(5, n, w, side, out); return;
        case 6: mxfp4_prepped(6, n, w, side, out); return;
        case 7: mxfp4_prepped(7, n, w, side, out); return;
        default: mxfp4_prepped(8, n, w, side, out); return;
        }
    }
    if (rows == 4) mxfp4_tile(4, 1, n, w, row_bytes, a, 0, out);
    else if (toks == 4) mxfp4_tile(1, 4, n, w, 0, a, a_row_bytes, out);
    else mxfp4_tile(1, 1, n, w, 0, a, 0, out);
}

/* the one-token dot: the 1 x 1 tile */
MX_TARGET static inline __attribute__((always_inline)) float mxfp4_dot(int64_t n, const void *w, const void *a) {
    float out = 0.0f; /* set by the tile; initialized for -Wmaybe-uninitialized */
    mxfp4_tile(1, 1, n, (const char *)w, 0, (const char *)a, 0, &out);
    return out;
}

static const mm_kernel mm_mxfp4_piece = {.piece = mxfp4_piece,
                                         .shapes = MM_R4 | MM_T4 | MM_BATCH_1X1,
                                         .tprep = mxfp4_tprep,
                                         .tprep_bytes = mxfp4_tprep_bytes};

#endif
