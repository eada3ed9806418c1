/* dot_q32_simd.h — bodies of the 32-element-block x Q8_0 dots as static
 * inline helpers, included by dot_q32_<isa>_amd64.c after simd_<isa>_amd64.h
 * (KT, ACC_DOT_U8I8); each .c file writes out its k_dot_q*_q8_0_<isa>.
 * Specification: k_dot_q{4_0,4_1,5_0,5_1,8_0}_q8_0_ref in dot_ref.c.
 *
 * Summation order (Q4_0, Q5_0, Q8_0) is the reference build's (llama.cpp x86:
 * ggml's AVX2 vec_dot and llamafile's tinyBLAS_Q0): one 8-lane f32
 * accumulator; per block, lane l gets fma(d_w * d_a, int sum of the products
 * of elements 4l..4l+3, lane l), blocks in order; then k_hsum_avx2
 * ((l + l+4), (0+2) + (1+3)). Keeping exactly this order makes stories260K
 * Q8_0/Q4_0 logits bit-identical to the reference (found by the runtime
 * owner: any other order flips int8 roundings downstream). One chain per row
 * is latency-bound, so MatVec runs 4 rows at a time (mm_simd.h). */

#define LOADA(p) _mm256_loadu_si256((const __m256i *)(p))

/* signed x signed bytes, 8 x i32 of 4-wise sums; x may be -128, y must not
 * (activations are in [-127, 127]) */
KT static inline __m256i dot_i8(__m256i x, __m256i y) {
    return ACC_DOT_U8I8(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* Q4_0: (nibble - 8) */
KT static inline __attribute__((always_inline)) float dot_q4_0_q8_0(int64_t n, const void *w, const void *a) {
    const k_block_q4_0 *x = (const k_block_q4_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i off = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i q = _mm256_sub_epi8(k_nibbles32_avx2(x[i].qs), off);
        const __m256i s = dot_i8(q, LOADA(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s), acc);
    }
    return k_hsum_avx2(acc);
}

/* Q5_0: (nibble | bit << 4) - 16 */
KT static inline __attribute__((always_inline)) float dot_q5_0_q8_0(int64_t n, const void *w, const void *a) {
    const k_block_q5_0 *x = (const k_block_q5_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i b4 = _mm256_set1_epi8(0x10), off = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i hi = _mm256_and_si256(k_bits32_avx2(x[i].qh), b4);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(k_nibbles32_avx2(x[i].qs), hi), off);
        const __m256i s = dot_i8(q, LOADA(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s), acc);
    }
    return k_hsum_avx2(acc);
}

/* Q4_1 / Q5_1: d*da*<q,a> + m*da*sum(a); lanes hold <q,a> partials and
 * sum(a) partials side by side, folded with two FMAs per block. One block:
 * q its 32 unsigned quants, d and m its scale and min. */
KT static inline __attribute__((always_inline)) void dot_qx_1_block(__m256i q, k_half d, k_half m, const k_block_q8_0 *y,
                                                                    __m256 *acc, __m256 *accm) {
    const __m256i ya = LOADA(y->qs);
    const __m256i s = ACC_DOT_U8I8(_mm256_setzero_si256(), q, ya);
    const __m256i sa = ACC_DOT_U8I8(_mm256_setzero_si256(), _mm256_set1_epi8(1), ya);
    const float da = k_h2f_avx2(y->d);
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(d) * da), _mm256_cvtepi32_ps(s), *acc);
    *accm = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(m) * da), _mm256_cvtepi32_ps(sa), *accm);
}

KT static inline __attribute__((always_inline)) float dot_q4_1_q8_0(int64_t n, const void *w, const void *a) {
    const k_block_q4_1 *x = (const k_block_q4_1 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) dot_qx_1_block(k_nibbles32_avx2(x[i].qs), x[i].d, x[i].m, &y[i], &acc, &accm);
    return k_hsum_avx2(acc) + k_hsum_avx2(accm);
}

KT static inline __attribute__((always_inline)) float dot_q5_1_q8_0(int64_t n, const void *w, const void *a) {
    const k_block_q5_1 *x = (const k_block_q5_1 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m256i b4 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i q = _mm256_or_si256(k_nibbles32_avx2(x[i].qs), _mm256_and_si256(k_bits32_avx2(x[i].qh), b4));
        dot_qx_1_block(q, x[i].d, x[i].m, &y[i], &acc, &accm);
    }
    return k_hsum_avx2(acc) + k_hsum_avx2(accm);
}

KT static inline __attribute__((always_inline)) float dot_q8_0_q8_0(int64_t n, const void *w, const void *a) {
    const k_block_q8_0 *x = (const k_block_q8_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i s = dot_i8(LOADA(x[i].qs), LOADA(y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * k_h2f_avx2(y[i].d)), _mm256_cvtepi32_ps(s), acc);
    }
    return k_hsum_avx2(acc);
}
