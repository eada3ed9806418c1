/* q2k_q3k_avx2_amd64.c — Q2_K and Q3_K with AVX2: dequantization, dots with
 * Q8_K activations, and the k_matmul_q tiles. Specification: q2k_q3k_ref.c;
 * the dequantizers give its bits (multiply and subtract, never fused), the
 * dots its integer lanes and its f32 steps, so the same bits as well.
 *
 * A block is 8 vectors v of 32 quants (layout: q2k_q3k.h). Per vector the
 * products come from maddubs (unsigned x signed bytes -> int16 pair sums,
 * exact here) and madd with the group scales (int16 -> int32 lane sums):
 * lane l of vector v gets scale(2v) * (q . a over elements 4l..4l+3) for
 * l < 4 and scale(2v+1) for l >= 4, as the reference lanes want. Q3_K's
 * signed quants go through maddubs as |q| against a with q's sign. */
#include "q2k_q3k_x86.h"

/* The 32 quants of vector v: Q2_K 0..3; Q3_K -4..3 (low two bits, plus 4
 * when bit v of hmask[l] is set, minus 4). */
K_AVX2 static inline __m256i q23_quants_avx2(int type, const void *blk, int v) {
    const uint8_t *qs = type == K_Q2_K ? ((const k_block_q2_k *)blk)->qs : ((const k_block_q3_k *)blk)->qs;
    const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * (v / 4)));
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * (v % 4)), _mm256_set1_epi8(3));
    if (type == K_Q2_K) return low;
    const __m256i hm = _mm256_loadu_si256((const __m256i *)((const k_block_q3_k *)blk)->hmask);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hm, v), _mm256_set1_epi8(1));
    return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(hi, 2)), _mm256_set1_epi8(4));
}

/* ---- dequantization ---- */

/* 8 quants (bytes) to f32, signed or not */
K_AVX2 static inline __m256 q8_to_ps(__m128i b8, int is_signed) {
    return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(b8) : _mm256_cvtepu8_epi32(b8));
}

K_AVX2 static inline void q23_dequant_avx2(int type, const void *src, float *dst, int64_t n) {
    const size_t bsz = type == K_Q2_K ? sizeof(k_block_q2_k) : sizeof(k_block_q3_k);
    const int sgn = type == K_Q3_K;
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK) {
        const char *blk = (const char *)src + (size_t)i * bsz;
        const __m128i s8 = q23_scale_bytes(type, blk);
        float dl[16], ml[16];
        if (type == K_Q2_K) {
            const k_block_q2_k *x = (const k_block_q2_k *)blk;
            const __m256 d = _mm256_set1_ps(k_h2f_avx2(x->d)), dmin = _mm256_set1_ps(k_h2f_avx2(x->dmin));
            const __m128i m8 = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)x->scales), 4), _mm_set1_epi8(15));
            _mm256_storeu_ps(ml, _mm256_mul_ps(dmin, q8_to_ps(m8, 0)));
            _mm256_storeu_ps(ml + 8, _mm256_mul_ps(dmin, q8_to_ps(_mm_unpackhi_epi64(m8, m8), 0)));
            _mm256_storeu_ps(dl, _mm256_mul_ps(d, q8_to_ps(s8, 0)));
            _mm256_storeu_ps(dl + 8, _mm256_mul_ps(d, q8_to_ps(_mm_unpackhi_epi64(s8, s8), 0)));
        } else {
            const __m256 d = _mm256_set1_ps(k_h2f_avx2(((const k_block_q3_k *)blk)->d));
            _mm256_storeu_ps(dl, _mm256_mul_ps(d, q8_to_ps(s8, 1)));
            _mm256_storeu_ps(dl + 8, _mm256_mul_ps(d, q8_to_ps(_mm_unpackhi_epi64(s8, s8), 1)));
        }
        _Pragma("GCC unroll 8")
        for (int v = 0; v < 8; v++) {
            const __m256i q = q23_quants_avx2(type, blk, v);
            const __m128i qlo = _mm256_castsi256_si128(q), qhi = _mm256_extracti128_si256(q, 1);
            const __m128i part[4] = {qlo, _mm_unpackhi_epi64(qlo, qlo), qhi, _mm_unpackhi_epi64(qhi, qhi)};
            for (int j = 0; j < 4; j++) { /* elements 8j..8j+7 of the vector, group 2v + j/2 */
                const int g = 2 * v + j / 2;
                __m256 y = _mm256_mul_ps(_mm256_set1_ps(dl[g]), q8_to_ps(part[j], sgn));
                if (type == K_Q2_K) y = _mm256_sub_ps(y, _mm256_set1_ps(ml[g]));
                _mm256_storeu_ps(dst + 32 * v + 8 * j, y);
            }
        }
    }
}

K_AVX2 void k_dequant_q2_k_avx2(const void *src, float *dst, int64_t n) { q23_dequant_avx2(K_Q2_K, src, dst, n); }
K_AVX2 void k_dequant_q3_k_avx2(const void *src, float *dst, int64_t n) { q23_dequant_avx2(K_Q3_K, src, dst, n); }

/* ---- dots: R weight rows x T tokens (R * T <= 4) ---- */

/* int16 scales of vector k (0..3) of a half, from that half's 8 scales as
 * int16 in both 128-bit lanes: group 2k in the low lane, 2k+1 in the high. */
K_AVX2 static inline __m256i q23_vec_scales(__m256i half, int k) {
    const __m128i lo = _mm_set1_epi16((short)(((4 * k + 1) << 8) | (4 * k)));
    const __m128i hi = _mm_set1_epi16((short)(((4 * k + 3) << 8) | (4 * k + 2)));
    return _mm256_shuffle_epi8(half, _mm256_set_m128i(hi, lo));
}

/* ---- the hooks of q2k_q3k_pieces.h' tile: 8 steps, one per vector v ---- */
#define Q23_TARGET K_AVX2
#define Q23_T8 0
#define Q23_TMAX 4
#define Q23_STEPS 8
typedef __m256i q23_wi;

/* a block's 16 group scales as int16, groups 0..7 in both 128-bit lanes of
 * half[0], 8..15 in half[1] */
typedef struct { __m256i half[2]; } q23_wblk;
K_AVX2 static inline __attribute__((always_inline)) q23_wblk q23_wblk_make(const int type, const void *blk) {
    const __m256i s16 = type == K_Q2_K ? _mm256_cvtepu8_epi16(q23_scale_bytes(type, blk))
                                       : _mm256_cvtepi8_epi16(q23_scale_bytes(type, blk));
    return (q23_wblk){{_mm256_broadcastsi128_si256(_mm256_castsi256_si128(s16)),
                       _mm256_broadcastsi128_si256(_mm256_extracti128_si256(s16, 1))}};
}

/* vector v's quants q, the unsigned bytes maddubs takes (|q|) and its scale words */
typedef struct { __m256i q, qu, sc; } q23_w;
K_AVX2 static inline __attribute__((always_inline)) q23_w q23_wts(const int type, const void *blk, q23_wblk wb, const int v) {
    q23_w r;
    r.q = q23_quants_avx2(type, blk, v);
    r.qu = type == K_Q2_K ? r.q : _mm256_abs_epi8(r.q);
    r.sc = q23_vec_scales(wb.half[v / 4], v % 4);
    return r;
}

/* sumi + vector v's scaled lane sums against a token's quants qs */
K_AVX2 static inline __attribute__((always_inline)) __m256i q23_acc(const int type, __m256i sumi, q23_w wq, const int8_t *qs,
                                                                   const int v) {
    __m256i av = _mm256_loadu_si256((const __m256i *)(qs + 32 * v));
    if (type == K_Q3_K) av = _mm256_sign_epi8(av, wq.q);
    return _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(wq.qu, av), wq.sc));
}
K_AVX2 static inline __attribute__((always_inline)) __m256i q23_fold(__m256i v) { return v; }

#include "q2k_q3k_pieces.h"

K_AVX2 float k_dot_q2_k_q8_k_avx2(int64_t n, const void *w, const void *a) { return q23_dot(K_Q2_K, n, w, a); }
K_AVX2 float k_dot_q3_k_q8_k_avx2(int64_t n, const void *w, const void *a) { return q23_dot(K_Q3_K, n, w, a); }
void k_mm_q2_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&q2k_kernel, K_MM_TILE_ARGS); }
void k_mm_q3_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&q3k_kernel, K_MM_TILE_ARGS); }
