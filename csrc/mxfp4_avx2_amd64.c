/* mxfp4_avx2_amd64.c — MXFP4 dequantization, dot and tile, AVX2.
 *
 * One vpshufb maps the 32 nibbles of a block to their doubled E2M1 values
 * (k_mxfp4_values in both 128-bit halves: elements 0..15 from the low
 * nibbles, 16..31 from the high ones); the int8 dot with the activations
 * is maddubs(|q|, a with q's sign) (int16 pair sums, no saturation:
 * |q| <= 12, |a| <= 127) and madd with 1, which gives mxfp4_ref.c's exact
 * int32 lanes. The f32 steps are the ones mxfp4_ref.c spells out (even and
 * odd blocks in two accumulators, hsum, an odd last block by fmaf), so
 * every kernel here gives ref's bits.
 *
 * The tile runs R rows x T tokens in that one order (4 x 1 for MatVec,
 * 1 x 4 for a batch) through k_mm_run; a batch runs on prepared token
 * groups (below). */
#include <math.h>
#include "kernels_avx2_amd64.h"
#include "mm_driver.h"

#define K_INLINE static inline __attribute__((always_inline))

K_AVX2 K_INLINE __m256i mxfp4_table_avx2(void) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_mxfp4_values));
}

/* the 32 signed doubled values of one block, in element order */
K_AVX2 K_INLINE __m256i mxfp4_levels_avx2(__m256i table, const k_block_mxfp4 *x) {
    return _mm256_shuffle_epi8(table, k_nibbles32_avx2(x->qs));
}

/* the 8 int32 lanes of levels q against activations a (elements 4l..4l+3 in lane l) */
K_AVX2 K_INLINE __m256i mxfp4_lanes_avx2(__m256i q, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q)), _mm256_set1_epi16(1));
}

K_AVX2 K_INLINE int32_t mxfp4_isum_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(s) + _mm_extract_epi32(s, 1);
}

K_AVX2 void k_dequant_mxfp4_avx2(const void *src, float *dst, int64_t n) {
    const k_block_mxfp4 *x = (const k_block_mxfp4 *)src;
    const __m256i table = mxfp4_table_avx2();
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const __m256i lv = mxfp4_levels_avx2(table, &x[i]);
        const __m256 f = _mm256_set1_ps(k_e8m0_half(x[i].e));
        const __m128i lo = _mm256_castsi256_si128(lv), hi = _mm256_extracti128_si256(lv, 1);
        _mm256_storeu_ps(dst, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
        _mm256_storeu_ps(dst + 8, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
        _mm256_storeu_ps(dst + 16, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
        _mm256_storeu_ps(dst + 24, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
    }
}

/* the tile's hooks (mxfp4_x86.h): a row's two blocks as their values,
 * even and odd blocks in two accumulators */
typedef struct { __m256i table; } mx_ctx;
typedef struct { __m256 even, odd; } mx_acc;
typedef struct { __m256i q0, q1; } mx_w;
K_AVX2 K_INLINE mx_ctx mx_ctx_make(void) { return (mx_ctx){mxfp4_table_avx2()}; }
K_AVX2 K_INLINE mx_acc mx_acc_zero(void) { return (mx_acc){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
K_AVX2 K_INLINE mx_w mx_wts(mx_ctx cx, const k_block_mxfp4 *x) {
    return (mx_w){mxfp4_levels_avx2(cx.table, &x[0]), mxfp4_levels_avx2(cx.table, &x[1])};
}
K_AVX2 K_INLINE mx_acc mx_pair_fma(mx_acc acc, mx_w wq, const k_block_q8_0 *y, float e0, float e1) {
    const __m256i s0 = mxfp4_lanes_avx2(wq.q0, _mm256_loadu_si256((const __m256i *)y[0].qs));
    const __m256i s1 = mxfp4_lanes_avx2(wq.q1, _mm256_loadu_si256((const __m256i *)y[1].qs));
    acc.even = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(y[0].d) * e0), _mm256_cvtepi32_ps(s0), acc.even);
    acc.odd = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(y[1].d) * e1), _mm256_cvtepi32_ps(s1), acc.odd);
    return acc;
}
K_AVX2 K_INLINE float mx_acc_sum(mx_acc acc) { return k_hsum_avx2(_mm256_add_ps(acc.even, acc.odd)); }
K_AVX2 K_INLINE int32_t mx_last_isum(mx_ctx cx, const k_block_mxfp4 *x, const k_block_q8_0 *y) {
    return mxfp4_isum_avx2(mxfp4_lanes_avx2(mxfp4_levels_avx2(cx.table, x), _mm256_loadu_si256((const __m256i *)y->qs)));
}

/* ---- A batch: prepared token groups (mm_driver.h phase 2b) ----
 *
 * The prep writes, per block i and token k of a group of g, the block's
 * 32 activation bytes plus 128 (a ^ 0x80, unsigned) and its scale as f32.
 * With q a row block's signed doubled values, maddubs(a + 128, q) (int16
 * pair sums, no saturation: 255 * 12 * 2 < 2^15), madd with 1 and the
 * lanes' correction c = -128 * (the sum of q over the lane's 4 elements)
 * give exactly mxfp4_lanes_avx2's int32 lanes; c and q are made once per
 * block for the g tokens. The f32 steps are mxfp4_tile's, so the bits are
 * the reference's.
 *
 * Layout of block i at i * g * MXFP4_PREP_TOK: g x 32 bytes of
 * activations, then g f32 scales. */
#define MXFP4_PREP_TOK 36

static size_t mxfp4_tprep_bytes(int64_t n) { return (size_t)(n / K_QK) * MM_TPREP_TOKS * MXFP4_PREP_TOK; }

K_AVX2 static void mxfp4_tprep(int g, int64_t n, const char *a, size_t a_row_bytes, void *side) {
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t i = 0; i < n / K_QK; i++) {
        unsigned char *pb = (unsigned char *)side + (size_t)i * g * MXFP4_PREP_TOK;
        float *dy = (float *)(pb + (size_t)g * 32);
        for (int k = 0; k < g; k++) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            _mm256_storeu_si256((__m256i *)(pb + 32 * k), _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y->qs), flip));
            dy[k] = k_h2f_avx2(y->d);
        }
    }
}

/* levels q of a block and their lanes' correction -128 * sum */
K_AVX2 K_INLINE __m256i mxfp4_corr_avx2(__m256i q) {
    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8((char)0x80), q), _mm256_set1_epi16(1));
    return _mm256_sub_epi32(_mm256_setzero_si256(), s);
}

/* the int32 lanes of prepared activations au against levels q */
K_AVX2 K_INLINE __m256i mxfp4_plane_avx2(__m256i c, const unsigned char *au, __m256i q) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_loadu_si256((const __m256i *)au), q);
    return _mm256_add_epi32(c, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

/* one row x T prepared tokens: out[k] = dot(row, token k) */
K_AVX2 K_INLINE void mxfp4_prepped(const int T, int64_t n, const char *w, const unsigned char *side, float *out) {
    const __m256i table = mxfp4_table_avx2();
    const k_block_mxfp4 *x = (const k_block_mxfp4 *)w;
    const int64_t nb = n / K_QK;
    __m256 even[MM_TPREP_TOKS], odd[MM_TPREP_TOKS];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) even[k] = odd[k] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const unsigned char *p0 = side + (size_t)i * T * MXFP4_PREP_TOK, *p1 = p0 + (size_t)T * MXFP4_PREP_TOK;
        const float *d0 = (const float *)(p0 + (size_t)T * 32), *d1 = (const float *)(p1 + (size_t)T * 32);
        const __m256i q0 = mxfp4_levels_avx2(table, &x[i]), q1 = mxfp4_levels_avx2(table, &x[i + 1]);
        const __m256i c0 = mxfp4_corr_avx2(q0), c1 = mxfp4_corr_avx2(q1);
        const float e0 = k_e8m0_half(x[i].e), e1 = k_e8m0_half(x[i + 1].e);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const __m256i s0 = mxfp4_plane_avx2(c0, p0 + 32 * k, q0), s1 = mxfp4_plane_avx2(c1, p1 + 32 * k, q1);
            even[k] = _mm256_fmadd_ps(_mm256_set1_ps(d0[k] * e0), _mm256_cvtepi32_ps(s0), even[k]);
            odd[k] = _mm256_fmadd_ps(_mm256_set1_ps(d1[k] * e1), _mm256_cvtepi32_ps(s1), odd[k]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) out[k] = k_hsum_avx2(_mm256_add_ps(even[k], odd[k]));
    if (i < nb) { /* odd block count: the last block as one scalar term */
        const unsigned char *p0 = side + (size_t)i * T * MXFP4_PREP_TOK;
        const float *d0 = (const float *)(p0 + (size_t)T * 32);
        const __m256i q = mxfp4_levels_avx2(table, &x[i]), c = mxfp4_corr_avx2(q);
        const float e = k_e8m0_half(x[i].e);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++)
            out[k] = fmaf(d0[k] * e, (float)mxfp4_isum_avx2(mxfp4_plane_avx2(c, p0 + 32 * k, q)), out[k]);
    }
}

/* the piece, the dot and the mm_kernel over the tiles above */
#define MX_TARGET K_AVX2
#include "mxfp4_x86.h"

K_AVX2 float k_dot_mxfp4_q8_0_avx2(int64_t n, const void *w, const void *a) { return mxfp4_dot(n, w, a); }
void k_mm_mxfp4_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_mxfp4_piece, K_MM_TILE_ARGS); }
