/* iq4_x86.h — the IQ4_XS tile of both x86 sets, written once over per-ISA
 * hooks: included by iq4_<isa>_amd64.c after
 *   IQ4_TARGET                     the function attribute of its ISA
 *   iq4xs_ctx, iq4xs_ctx_make()    the constants of a tile (lookup table, ...)
 *   iq4xs_wi                       the int32 lane sums of a (row, token)
 *   iq4xs_wsc, iq4xs_scales(x)     a block's 8 sub-block scales minus 32 as
 *                                  int16, in the layout iq4xs_ls picks from
 *   IQ4XS_STEPS                    steps per super-block (8 of 32 quants on
 *                                  256 bits, 4 of 64 on 512)
 *   iq4xs_act(y, s)                step s of a token's Q8_K quants
 *   iq4xs_w, iq4xs_wts(cx, x, s)   step s of a row's weights, ready for the dots
 *   iq4xs_ls(cx, sc, s)            the scale words of step s
 *   iq4xs_madd(sumi, w, av, ls)    sumi + the scaled int32 lane sums of w . av
 *   iq4xs_fold(sumi)               the lanes folded to 8 (iq4_ref.c's lanes)
 * and with iq4nl_rows / iq4nl_toks (iq4_piece.h), which it includes; then
 * the mm_kernels of the two types. The integer lanes are exact and the f32
 * steps written here once, so both sets give iq4_ref.c's bits. */
/* R rows x T tokens: out[k * R + r] = dot(row r, token k). Per super-block
 * the sub-blocks' lanes are summed in int32 (with the scales), then one FMA
 * with d * y.d; hsum at the end (one order for any R, T). */
IQ4_TARGET static inline __attribute__((always_inline)) void iq4xs_tile(const int R, const int T, int64_t n, const char *w,
                                                                       size_t row_bytes, const char *a, size_t a_row_bytes,
                                                                       float *out) {
    const iq4xs_ctx cx = iq4xs_ctx_make();
    __m256 acc[4][4] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const k_block_iq4_xs *x[4];
        const k_block_q8_k *y[4];
        iq4xs_wi sumi[4][4];
        iq4xs_wsc sc[4];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            x[r] = (const k_block_iq4_xs *)(w + (size_t)r * row_bytes) + i;
            sc[r] = iq4xs_scales(x[r]);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) sumi[r][k] = (iq4xs_wi){0};
        }
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) y[k] = (const k_block_q8_k *)(a + (size_t)k * a_row_bytes) + i;
        _Pragma("GCC unroll 8")
        for (int s = 0; s < IQ4XS_STEPS; s++) {
            iq4xs_wi av[4];
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) av[k] = iq4xs_act(y[k], s);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < R; r++) {
                const iq4xs_w q = iq4xs_wts(cx, x[r], s);
                const iq4xs_wi ls = iq4xs_ls(cx, sc[r], s);
                _Pragma("GCC unroll 8")
                for (int k = 0; k < T; k++) sumi[r][k] = iq4xs_madd(sumi[r][k], q, av[k], ls);
            }
        }
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const float d = k_h2f_avx2(x[r]->d);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++)
                acc[r][k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(iq4xs_fold(sumi[r][k])), acc[r][k]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) out[k * R + r] = k_hsum_avx2(acc[r][k]);
}

#include "iq4_piece.h"
#include "mm_driver.h"

static const mm_kernel mm_iq4nl_piece = MM_BARE(iq4nl_piece);
static const mm_kernel mm_iq4xs_piece = MM_BARE(iq4xs_piece);
