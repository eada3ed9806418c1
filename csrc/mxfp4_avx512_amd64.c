/* mxfp4_avx512_amd64.c — MXFP4 dot and tile, AVX-512 BW + VNNI.
 *
 * A 512-bit vector holds two consecutive blocks: 128-bit lanes [low nibbles
 * of block 0, high nibbles of block 0, low of block 1, high of block 1],
 * matching the two blocks' 64 activation bytes. vpshufb maps the nibbles
 * to |value| (the doubled E2M1 magnitudes), the codes 8..15 (sign bit set)
 * negate the activations (a mask subtract), and vpdpbusd gives int32 lanes
 * 0..7 for block 0 and 8..15 for block 1: the exact lanes of mxfp4_ref.c.
 * One 512-bit accumulator per (row, token) takes the even blocks in its
 * low half and the odd blocks in its high half — the reference's two
 * accumulators side by side — added half to half at the end; an odd last
 * block is fmaf(d, its integer sum, total). So every result has ref's bits.
 * Dequantization is the AVX2 kernel's (impl "avx512" falls back to it). */
#include <math.h>
#include "kernels_avx2_amd64.h"
#include "mm_driver.h"

#define K_INLINE static inline __attribute__((always_inline))

/* |value| of each code, in all four 128-bit lanes */
K_AVX512 K_INLINE __m512i mxfp4_abs_table512(void) {
    return _mm512_broadcast_i32x4(_mm_abs_epi8(_mm_loadu_si128((const __m128i *)k_mxfp4_values)));
}

/* the codes of blocks x[0], x[1] in the two-block lane order above */
K_AVX512 K_INLINE __m512i mxfp4_codes_pair(const k_block_mxfp4 *x) {
    const __m256i v = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)x[1].qs), _mm_loadu_si128((const __m128i *)x[0].qs));
    const __m512i z = _mm512_castsi256_si512(v);
    const __m512i dup = _mm512_shuffle_i64x2(z, z, 0x50); /* lanes 0, 0, 1, 1 */
    return _mm512_and_si512(_mm512_mask_srli_epi16(dup, (__mmask32)0xFF00FF00u, dup, 4), _mm512_set1_epi8(15));
}

K_AVX512 K_INLINE __m512i mxfp4_load2x32(const int8_t *a0, const int8_t *a1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a0)),
                              _mm256_loadu_si256((const __m256i *)a1), 1);
}

/* the high 256 bits of a float vector (AVX-512 F only, no DQ) */
K_AVX512 K_INLINE __m256 mxfp4_hi256(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

/* one block against one Q8_0 block on 256 bits: the sum of its 8 int32 lanes */
K_AVX512 K_INLINE int32_t mxfp4_isum256(const k_block_mxfp4 *x, const k_block_q8_0 *y) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_mxfp4_values));
    const __m256i q = _mm256_shuffle_epi8(table, k_nibbles32_avx2(x->qs));
    const __m256i a = _mm256_loadu_si256((const __m256i *)y->qs);
    const __m256i v = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_cvtsi128_si32(s) + _mm_extract_epi32(s, 1) + _mm_extract_epi32(s, 2) + _mm_extract_epi32(s, 3);
}

/* the tile's hooks (mxfp4_x86.h): a row's two blocks in one vector as
 * |value| and the lanes to negate, one 512-bit accumulator (even blocks in
 * the low half, odd ones in the high half) */
typedef struct { __m512i absq; } mx_ctx;
typedef __m512 mx_acc;
typedef struct { __m512i mag; __mmask64 neg; } mx_w;
K_AVX512 K_INLINE mx_ctx mx_ctx_make(void) { return (mx_ctx){mxfp4_abs_table512()}; }
K_AVX512 K_INLINE __m512 mx_acc_zero(void) { return _mm512_setzero_ps(); }
K_AVX512 K_INLINE mx_w mx_wts(mx_ctx cx, const k_block_mxfp4 *x) {
    const __m512i idx = mxfp4_codes_pair(x);
    return (mx_w){_mm512_shuffle_epi8(cx.absq, idx), _mm512_cmpge_epu8_mask(idx, _mm512_set1_epi8(8))};
}
K_AVX512 K_INLINE __m512 mx_pair_fma(__m512 acc, mx_w wq, const k_block_q8_0 *y, float e0, float e1) {
    const __m512i av = mxfp4_load2x32(y[0].qs, y[1].qs);
    const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq.mag, _mm512_mask_sub_epi8(av, wq.neg, _mm512_setzero_si512(), av));
    const __m512 d = _mm512_mask_blend_ps((__mmask16)0xFF00u, _mm512_set1_ps(k_h2f_avx2(y[0].d) * e0), _mm512_set1_ps(k_h2f_avx2(y[1].d) * e1));
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
}
K_AVX512 K_INLINE float mx_acc_sum(__m512 acc) { return k_hsum_avx2(_mm256_add_ps(_mm512_castps512_ps256(acc), mxfp4_hi256(acc))); }
K_AVX512 K_INLINE int32_t mx_last_isum(mx_ctx cx, const k_block_mxfp4 *x, const k_block_q8_0 *y) {
    (void)cx;
    return mxfp4_isum256(x, y);
}

/* ---- A batch: prepared token groups (mm_driver.h phase 2b) ----
 *
 * The prep writes, per pair of blocks p and token k of a group of g, the
 * two blocks' 64 activation bytes plus 128 (a ^ 0x80, unsigned) and their
 * two scales as f32, so the row loop does no f16 conversion, no gathering
 * of the two 32-byte halves and no sign fix-up per token: with q the
 * signed doubled E2M1 values of the row, vpdpbusd(c, a + 128, q) with
 * c = -128 * (the sum of q over each lane's 4 elements) is exactly
 * sum(a * q) per lane (int32, no saturation: |lane| < 2^14), the lanes of
 * mxfp4_ref.c. The row's c, q and E8M0 factors are made once per pair and
 * serve the g tokens; d = f32(y.d) * k_e8m0_half(e) and the f32 sums are
 * the tile's above, so the bits are the reference's.
 *
 * Layout per pair p (the last one half filled for an odd block count), at
 * p * g * MXFP4_PREP_TOK: per token 64 bytes of activations and the two
 * scales spread over the 16 lanes (8 each), 128 bytes. */
#define MXFP4_PREP_TOK 128

static size_t mxfp4_tprep_bytes(int64_t n) { return (size_t)((n / K_QK + 1) / 2) * MM_TPREP_TOKS * MXFP4_PREP_TOK; }

K_AVX512 static void mxfp4_tprep(int g, int64_t n, const char *a, size_t a_row_bytes, void *side) {
    const int64_t nb = n / K_QK;
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t i = 0; i < nb; i += 2) {
        unsigned char *pp = (unsigned char *)side + (size_t)(i / 2) * g * MXFP4_PREP_TOK;
        for (int k = 0; k < g; k++, pp += MXFP4_PREP_TOK) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            const int two = i + 1 < nb;
            _mm256_storeu_si256((__m256i *)pp, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y[0].qs), flip));
            _mm256_storeu_si256((__m256i *)(pp + 32), two ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y[1].qs), flip)
                                                          : _mm256_setzero_si256());
            _mm256_storeu_ps((float *)(pp + 64), _mm256_set1_ps(k_h2f_avx2(y[0].d)));
            _mm256_storeu_ps((float *)(pp + 96), _mm256_set1_ps(two ? k_h2f_avx2(y[1].d) : 0.0f));
        }
    }
}

/* one row x T prepared tokens: out[k] = dot(row, token k) */
K_AVX512 K_INLINE void mxfp4_prepped(const int T, int64_t n, const char *w, const unsigned char *side, float *out) {
    const __m512i vals = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k_mxfp4_values));
    const __m512i c128 = _mm512_set1_epi8((char)0x80);
    const __m512i pairsel = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const k_block_mxfp4 *x = (const k_block_mxfp4 *)w;
    const int64_t nb = n / K_QK;
    __m512 acc[MM_TPREP_TOKS];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) acc[k] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const unsigned char *pp = side + (size_t)(i / 2) * T * MXFP4_PREP_TOK;
        _mm_prefetch((const char *)(x + i) + 512, _MM_HINT_T0);
        const __m512i q = _mm512_shuffle_epi8(vals, mxfp4_codes_pair(x + i));
        const __m512i c = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), c128, q));
        const __m512 e = _mm512_permutexvar_ps(pairsel, _mm512_castps128_ps512(_mm_setr_ps(k_e8m0_half(x[i].e), k_e8m0_half(x[i + 1].e), 0.0f, 0.0f)));
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const unsigned char *pk = pp + (size_t)k * MXFP4_PREP_TOK;
            const __m512i s = _mm512_dpbusd_epi32(c, _mm512_loadu_si512((const void *)pk), q);
            const __m512 d = _mm512_mul_ps(_mm512_loadu_ps((const float *)(pk + 64)), e);
            acc[k] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[k]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) out[k] = k_hsum_avx2(_mm256_add_ps(_mm512_castps512_ps256(acc[k]), mxfp4_hi256(acc[k])));
    if (i < nb) { /* odd block count: the last block as one scalar term */
        const unsigned char *pp = side + (size_t)(i / 2) * T * MXFP4_PREP_TOK;
        const __m256i q = _mm256_shuffle_epi8(_mm512_castsi512_si256(vals), k_nibbles32_avx2(x[i].qs));
        const __m256i c = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm512_castsi512_si256(c128), q));
        const float e = k_e8m0_half(x[i].e);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const unsigned char *pk = pp + (size_t)k * MXFP4_PREP_TOK;
            const __m256i v = _mm256_dpbusd_epi32(c, _mm256_loadu_si256((const __m256i *)pk), q);
            const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            const int32_t isum = _mm_cvtsi128_si32(h) + _mm_extract_epi32(h, 1) + _mm_extract_epi32(h, 2) + _mm_extract_epi32(h, 3);
            out[k] = fmaf(((const float *)(pk + 64))[0] * e, (float)isum, out[k]);
        }
    }
}

/* the piece, the dot and the mm_kernel over the tiles above */
#define MX_TARGET K_AVX512
#include "mxfp4_x86.h"

K_AVX512 float k_dot_mxfp4_q8_0_avx512(int64_t n, const void *w, const void *a) { return mxfp4_dot(n, w, a); }
void k_mm_mxfp4_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_mxfp4_piece, K_MM_TILE_ARGS); }
