/*
 * q2k_q3k_x86.h — helpers of the Q2_K / Q3_K x86 kernels
 * (q2k_q3k_avx2_amd64.c, q2k_q3k_avx512_amd64.c); private to those files.
 */
#ifndef WOOLLY_Q2K_Q3K_X86_H
#define WOOLLY_Q2K_Q3K_X86_H

#include "kernels_avx2_amd64.h"
#include "q2k_q3k.h"
#include "mm_driver.h"

/* Q2_K's min term of one block as the reference sums it: 8 int32 lanes,
 * lane l = m[2l] * bsums[2l] + m[2l+1] * bsums[2l+1] (m: the 16 high nibbles). */
K_AVX2 static inline __m256i q2k_min_lanes(const k_block_q2_k *x, const int16_t *bsums) {
    const __m128i s = _mm_loadu_si128((const __m128i *)x->scales);
    const __m256i m = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(15)));
    return _mm256_madd_epi16(m, _mm256_loadu_si256((const __m256i *)bsums));
}

/* Start of a weight block for T tokens: Q2_K folds its min term into the
 * token accumulators first (acc[t] += -(y.d * dmin) * mins, per lane, one
 * FMA), as the reference does; returns the block's d (Q2_K and Q3_K). */
K_AVX2 static inline __attribute__((always_inline)) float q23_block_start(const int type, const void *blk, const int T,
                                                                        const k_block_q8_k *const *y, __m256 *acc) {
    if (type == K_Q3_K) return k_h2f_avx2(((const k_block_q3_k *)blk)->d);
    const k_block_q2_k *x = (const k_block_q2_k *)blk;
    const float dmin = k_h2f_avx2(x->dmin);
    _Pragma("GCC unroll 8")
    for (int t = 0; t < T; t++) {
        const __m256 mins = _mm256_cvtepi32_ps(q2k_min_lanes(x, y[t]->bsums));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(-(y[t]->d * dmin)), mins, acc[t]);
    }
    return k_h2f_avx2(x->d);
}

/* The 16 group scales of a block as bytes: Q2_K the low nibbles (0..15),
 * Q3_K the signed 6-bit scales minus 32. */
K_AVX2 static inline __m128i q23_scale_bytes(int type, const void *blk) {
    if (type == K_Q2_K) {
        const __m128i s = _mm_loadu_si128((const __m128i *)((const k_block_q2_k *)blk)->scales);
        return _mm_and_si128(s, _mm_set1_epi8(15));
    }
    /* Q3_K: low nibbles of groups 0..7 from scales[0..7], of 8..15 from
     * their high nibbles; the top two bits of group g are bits 2(g/4),
     * 2(g/4)+1 of scales[8 + g%4] (the 32-bit word of scales[8..11] shifted
     * by 0, 2, 4, 6 for the four groups of four). */
    const uint8_t *sp = ((const k_block_q3_k *)blk)->scales;
    uint32_t w2;
    memcpy(&w2, sp + 8, 4);
    const __m128i x = _mm_loadl_epi64((const __m128i *)sp); /* scales[0..7] */
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
    const __m128i top = _mm_srlv_epi32(_mm_set1_epi32((int)w2), _mm_set_epi32(6, 4, 2, 0));
    const __m128i s6 = _mm_or_si128(low, _mm_slli_epi16(_mm_and_si128(top, _mm_set1_epi8(3)), 4));
    return _mm_sub_epi8(s6, _mm_set1_epi8(32));
}

/* Rows ahead that the multi-row kernels prefetch (two groups of 4). */
#define Q23_PF_ROWS 8

#endif
