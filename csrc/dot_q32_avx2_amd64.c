/* dot_q32_avx2_amd64.c — 32-element weight blocks x Q8_0 activations, AVX2.
 * Specification: k_dot_q{4_0,4_1,5_0,5_1,8_0}_q8_0_ref in dot_ref.c. One exact
 * int32 sum per block, scaled by d_w * d_a in f32 (two accumulators). */
#include "kernels_avx2_amd64.h"

#define LOADA(p) _mm256_loadu_si256((const __m256i *)(p))

/* Q4_0: (nibble - 8) */
K_AVX2 float k_dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *a) {
    const k_block_q4_0 *x = (const k_block_q4_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i off = _mm256_set1_epi8(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t nb = n / K_QK;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i q0 = _mm256_sub_epi8(k_nibbles32_avx2(x[i].qs), off);
        const __m256i q1 = _mm256_sub_epi8(k_nibbles32_avx2(x[i + 1].qs), off);
        const __m256i s0 = k_dot_i8_avx2(q0, LOADA(y[i].qs));
        const __m256i s1 = k_dot_i8_avx2(q1, LOADA(y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i + 1].d) * k_h2f_avx2(y[i + 1].d)), _mm256_cvtepi32_ps(s1), acc1);
    }
    for (; i < nb; i++) {
        const __m256i q0 = _mm256_sub_epi8(k_nibbles32_avx2(x[i].qs), off);
        const __m256i s0 = k_dot_i8_avx2(q0, LOADA(y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s0), acc0);
    }
    return k_hsum_avx2(_mm256_add_ps(acc0, acc1));
}

/* Q5_0: (nibble | bit << 4) - 16 */
K_AVX2 float k_dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *a) {
    const k_block_q5_0 *x = (const k_block_q5_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i b4 = _mm256_set1_epi8(0x10), off = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i hi = _mm256_and_si256(k_bits32_avx2(x[i].qh), b4);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(k_nibbles32_avx2(x[i].qs), hi), off);
        const __m256i s = k_dot_i8_avx2(q, LOADA(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s), acc);
    }
    return k_hsum_avx2(acc);
}

/* Q4_1 / Q5_1: d*da*<q,a> + m*da*sum(a); lanes hold <q,a> partials and
 * sum(a) partials side by side, folded with two FMAs per block. */
K_AVX2 float k_dot_q4_1_q8_0_avx2(int64_t n, const void *w, const void *a) {
    const k_block_q4_1 *x = (const k_block_q4_1 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i ya = LOADA(y[i].qs);
        const __m256i s = k_dot_u8i8_avx2(k_nibbles32_avx2(x[i].qs), ya);
        const __m256i sa = k_dot_u8i8_avx2(one, ya);
        const float da = k_h2f_avx2(y[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * da), _mm256_cvtepi32_ps(s), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].m) * da), _mm256_cvtepi32_ps(sa), accm);
    }
    return k_hsum_avx2(acc) + k_hsum_avx2(accm);
}

K_AVX2 float k_dot_q5_1_q8_0_avx2(int64_t n, const void *w, const void *a) {
    const k_block_q5_1 *x = (const k_block_q5_1 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i one = _mm256_set1_epi8(1), b4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i ya = LOADA(y[i].qs);
        const __m256i q = _mm256_or_si256(k_nibbles32_avx2(x[i].qs), _mm256_and_si256(k_bits32_avx2(x[i].qh), b4));
        const __m256i s = k_dot_u8i8_avx2(q, ya);
        const __m256i sa = k_dot_u8i8_avx2(one, ya);
        const float da = k_h2f_avx2(y[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * da), _mm256_cvtepi32_ps(s), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].m) * da), _mm256_cvtepi32_ps(sa), accm);
    }
    return k_hsum_avx2(acc) + k_hsum_avx2(accm);
}

K_AVX2 float k_dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *a) {
    const k_block_q8_0 *x = (const k_block_q8_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t nb = n / K_QK;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i s0 = k_dot_i8_avx2(LOADA(x[i].qs), LOADA(y[i].qs));
        const __m256i s1 = k_dot_i8_avx2(LOADA(x[i + 1].qs), LOADA(y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i + 1].d) * k_h2f_avx2(y[i + 1].d)), _mm256_cvtepi32_ps(s1), acc1);
    }
    for (; i < nb; i++) {
        const __m256i s0 = k_dot_i8_avx2(LOADA(x[i].qs), LOADA(y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s0), acc0);
    }
    return k_hsum_avx2(_mm256_add_ps(acc0, acc1));
}
