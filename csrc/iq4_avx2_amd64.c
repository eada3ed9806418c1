/* iq4_avx2_amd64.c — IQ4_NL and IQ4_XS kernels, AVX2.
 *
 * A group of 32 packed nibbles becomes 32 signed levels with one vpshufb
 * from the 16-entry table (k_iq4nl_values in both 128-bit halves); the
 * int8 dot with the activations is maddubs(|q|, a with q's sign) (int16
 * pair sums, no saturation: |q|, |a| <= 127) and madd with 1 (IQ4_NL) or
 * with the sub-block scale (IQ4_XS). That gives iq4_ref.c's exact int32
 * lanes; the f32 steps are the ones iq4_ref.c spells out, so every kernel
 * here gives ref's bits.
 *
 * The tiles (k_mm_*) run 4 rows x 1 token for MatVec and 1 row x 4 tokens
 * for a batch through k_mm_run (MM_BARE). */
#include <math.h>
#include "kernels_avx2_amd64.h"

#define K_INLINE static inline __attribute__((always_inline))

K_AVX2 K_INLINE __m256i iq4_table_avx2(void) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_iq4nl_values));
}

/* the 32 signed levels of one group: bytes 0..15 from the low nibbles of
 * qs[0..15], bytes 16..31 from their high nibbles (element order) */
K_AVX2 K_INLINE __m256i iq4_levels_avx2(__m256i table, const uint8_t *qs) {
    return _mm256_shuffle_epi8(table, k_nibbles32_avx2(qs));
}

/* int16 sums of the products of elements (2i, 2i+1) of q and a */
K_AVX2 K_INLINE __m256i iq4_pairs_avx2(__m256i q, __m256i a) {
    return _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
}

K_AVX2 K_INLINE int32_t iq4_isum_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(s) + _mm_extract_epi32(s, 1);
}

/* dst[j] = f * level[j], j < 32 */
K_AVX2 K_INLINE void iq4_store32_avx2(float *dst, __m256i lv, __m256 f) {
    const __m128i lo = _mm256_castsi256_si128(lv), hi = _mm256_extracti128_si256(lv, 1);
    _mm256_storeu_ps(dst, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
    _mm256_storeu_ps(dst + 16, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
    _mm256_storeu_ps(dst + 24, _mm256_mul_ps(f, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
}

K_AVX2 void k_dequant_iq4_nl_avx2(const void *src, float *dst, int64_t n) {
    const k_block_iq4_nl *x = (const k_block_iq4_nl *)src;
    const __m256i table = iq4_table_avx2();
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK)
        iq4_store32_avx2(dst, iq4_levels_avx2(table, x[i].qs), _mm256_set1_ps(k_h2f_avx2(x[i].d)));
}

K_AVX2 void k_dequant_iq4_xs_avx2(const void *src, float *dst, int64_t n) {
    const k_block_iq4_xs *x = (const k_block_iq4_xs *)src;
    const __m256i table = iq4_table_avx2();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = k_h2f_avx2(x[i].d);
        for (int s = 0; s < 8; s++, dst += 32) {
            const float dl = d * (float)k_iq4xs_scale(&x[i], s);
            iq4_store32_avx2(dst, iq4_levels_avx2(table, x[i].qs + 16 * s), _mm256_set1_ps(dl));
        }
    }
}

/* ---- IQ4_NL x Q8_0 ---- */

/* R rows (row_bytes apart) x one token, ggml vec_dot's order: blocks 2k in
 * even[r], 2k+1 in odd[r], then hsum(even + odd), then an odd last block as
 * fmaf(d, its integer sum, total). */
K_AVX2 K_INLINE void iq4nl_rows(const int R, int64_t n, const char *w, size_t row_bytes, const void *a, float *out) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i table = iq4_table_avx2(), one = _mm256_set1_epi16(1);
    const int64_t nb = n / K_QK;
    __m256 even[4], odd[4];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++) even[r] = odd[r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256i a1 = _mm256_loadu_si256((const __m256i *)y[i + 1].qs);
        const float dy0 = k_h2f_avx2(y[i].d), dy1 = k_h2f_avx2(y[i + 1].d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_iq4_nl *x = (const k_block_iq4_nl *)(w + (size_t)r * row_bytes) + i;
            if (R > 1) _mm_prefetch((const char *)x + 4 * row_bytes, _MM_HINT_T0); /* the next group of rows */
            const __m256i s0 = _mm256_madd_epi16(iq4_pairs_avx2(iq4_levels_avx2(table, x[0].qs), a0), one);
            const __m256i s1 = _mm256_madd_epi16(iq4_pairs_avx2(iq4_levels_avx2(table, x[1].qs), a1), one);
            even[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[0].d) * dy0), _mm256_cvtepi32_ps(s0), even[r]);
            odd[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[1].d) * dy1), _mm256_cvtepi32_ps(s1), odd[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++) out[r] = k_hsum_avx2(_mm256_add_ps(even[r], odd[r]));
    if (i < nb) {
        const __m256i al = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const float dy = k_h2f_avx2(y[i].d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_iq4_nl *x = (const k_block_iq4_nl *)(w + (size_t)r * row_bytes) + i;
            const int32_t isum = iq4_isum_avx2(_mm256_madd_epi16(iq4_pairs_avx2(iq4_levels_avx2(table, x->qs), al), one));
            out[r] = fmaf(k_h2f_avx2(x->d) * dy, (float)isum, out[r]);
        }
    }
}

/* One row x T tokens (a_row_bytes apart) of a batch, tinyBLAS_Q0's order:
 * one accumulator per token, blocks in order. */
K_AVX2 K_INLINE void iq4nl_toks(const int T, int64_t n, const void *w, const char *a, size_t a_row_bytes, float *out) {
    const k_block_iq4_nl *x = (const k_block_iq4_nl *)w;
    const __m256i table = iq4_table_avx2(), one = _mm256_set1_epi16(1);
    __m256 acc[4];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i q = iq4_levels_avx2(table, x[i].qs), aq = _mm256_sign_epi8(q, q);
        const float d = k_h2f_avx2(x[i].d);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            const __m256i sa = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)y->qs), q);
            const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(aq, sa), one);
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * k_h2f_avx2(y->d)), _mm256_cvtepi32_ps(s), acc[k]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) out[k] = k_hsum_avx2(acc[k]);
}

/* ---- IQ4_XS x Q8_K ---- */

/* the hooks of iq4_x86.h: 8 steps of 32 quants (one sub-block), the 8
 * sub-block scales minus 32 as int16 in both 128-bit halves */
#define IQ4_TARGET K_AVX2
#define IQ4XS_STEPS 8
typedef struct { __m256i table; } iq4xs_ctx;
typedef __m256i iq4xs_wi, iq4xs_wsc, iq4xs_w;
K_AVX2 K_INLINE iq4xs_ctx iq4xs_ctx_make(void) { return (iq4xs_ctx){iq4_table_avx2()}; }
K_AVX2 K_INLINE __m256i iq4xs_scales(const k_block_iq4_xs *x) {
    const __m128i s = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)k_iq4xs_scales8(x)));
    return _mm256_broadcastsi128_si256(_mm_sub_epi16(s, _mm_set1_epi16(32)));
}
K_AVX2 K_INLINE __m256i iq4xs_act(const k_block_q8_k *y, const int s) { return _mm256_loadu_si256((const __m256i *)(y->qs + 32 * s)); }
K_AVX2 K_INLINE __m256i iq4xs_wts(iq4xs_ctx cx, const k_block_iq4_xs *x, const int s) { return iq4_levels_avx2(cx.table, x->qs + 16 * s); }
K_AVX2 K_INLINE __m256i iq4xs_ls(iq4xs_ctx cx, __m256i sc, const int s) {
    (void)cx;
    return k_bcast16_avx2(sc, s);
}
K_AVX2 K_INLINE __m256i iq4xs_madd(__m256i sumi, __m256i q, __m256i av, __m256i ls) {
    return _mm256_add_epi32(sumi, _mm256_madd_epi16(iq4_pairs_avx2(q, av), ls));
}
K_AVX2 K_INLINE __m256i iq4xs_fold(__m256i v) { return v; }

#include "iq4_x86.h"

K_AVX2 float k_dot_iq4_nl_q8_0_avx2(int64_t n, const void *w, const void *a) { return iq4nl_dot(n, w, a); }
K_AVX2 float k_dot_iq4_xs_q8_k_avx2(int64_t n, const void *w, const void *a) { return iq4xs_dot(n, w, a); }
void k_mm_iq4_nl_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_iq4nl_piece, K_MM_TILE_ARGS); }
void k_mm_iq4_xs_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_iq4xs_piece, K_MM_TILE_ARGS); }
