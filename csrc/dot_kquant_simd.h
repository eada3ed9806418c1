/* dot_kquant_simd.h — bodies of the K-quant x Q8_K dots as static inline
 * helpers, included by dot_kquant_<isa>_amd64.c after simd_<isa>_amd64.h,
 * which gives KT (the target attribute), ACC_MADD16 and ACC_DOT_U8I8; each
 * .c file writes out its k_dot_q*_k_q8_k_<isa> over these helpers.
 * Specification: k_dot_q{4,5,6}_k_q8_k_ref in dot_ref.c. Per super-block the
 * integer sums are exact (maddubs never saturates for these ranges), then one
 * f32 FMA folds in d * y.d, so results differ from ref only in the order of
 * the f32 block sums, and are the same bits on every ISA level. */

/* Q4_K and Q5_K (t, a constant at each call): 4 chunks of 64 = 32 bytes of
 * nibbles; low nibbles sub-block 2c, high nibbles sub-block 2c+1; for Q5_K
 * bit 2c / 2c+1 of qh[l] adds 16 to the low / high nibble. Min term:
 * dmin*yd * sum_s m[s] * (bsum[2s] + bsum[2s+1]), for Q5_K summed in a
 * scalar, as the reference does for Q5_K only. d, dmin and scales have the
 * same offsets in both blocks. */
KT static inline __attribute__((always_inline)) float dot_q45k(const int t, int64_t n, const void *w, const void *a) {
    const size_t bb = t == K_Q4_K ? sizeof(k_block_q4_k) : sizeof(k_block_q5_k);
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    float summs = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const k_block_q4_k *x = (const k_block_q4_k *)((const char *)w + (size_t)i * bb);
        const k_block_q5_k *x5 = (const k_block_q5_k *)x;
        const float yd = y[i].d;
        /* lanes 0..7 scales, 8..15 mins, as int16 */
        const __m256i sm = k_q4k_scales_mins16_avx2(x->scales);
        if (t == K_Q4_K) {
            const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
            const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            const __m128i pm = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), bsum);
            accm = _mm_fmadd_ps(_mm_set1_ps(k_h2f_avx2(x->dmin) * yd), _mm_cvtepi32_ps(pm), accm);
        } else {
            summs = k_q5k_summs_avx2(summs, _mm256_extracti128_si256(sm, 1), y[i].bsums, yd * k_h2f_avx2(x->dmin));
        }

        const __m256i sc = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
        const uint8_t *q = t == K_Q4_K ? x->qs : x5->qs;
        const int8_t *qa = y[i].qs;
        __m256i hb = t == K_Q5_K ? _mm256_loadu_si256((const __m256i *)x5->qh) : _mm256_setzero_si256();
        __m256i sumi = _mm256_setzero_si256();
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++, q += 32, qa += 64) {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)q);
            __m256i lo, hi;
            k_q45k_chunk_avx2(t, q4, &hb, &lo, &hi);
            const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)qa));
            const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(qa + 32)));
            sumi = ACC_MADD16(sumi, p0, k_bcast16_avx2(sc, 2 * c));
            sumi = ACC_MADD16(sumi, p1, k_bcast16_avx2(sc, 2 * c + 1));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x->d) * yd), _mm256_cvtepi32_ps(sumi), acc);
    }
    return t == K_Q4_K ? k_hsum_avx2(acc) - k_hsum128_avx2(accm) : k_hsum_avx2(acc) + summs;
}

/* Q6_K: per half, 4 vectors of 32 unsigned 6-bit quants q (0..63); the -32
 * offset is folded once per block as 32 * sum_g scale[g] * bsum[g]. A 32-quant
 * vector spans two 16-element scale groups: lanes 0..7 of the int16 pair sums
 * take scale 2j, lanes 8..15 scale 2j+1. */
KT static inline __attribute__((always_inline)) float dot_q6_k_q8_k(int64_t n, const void *w, const void *a) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), bs);
        __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            k_q6k_quants_avx2(&x[i], h, q);
            const int8_t *qa = y[i].qs + 128 * h;
            _Pragma("GCC unroll 4")
            for (int k = 0; k < 4; k++) {
                const int j = 4 * h + k; /* scale pair: scales 2j, 2j+1 */
                const __m128i shuf = _mm_set_epi64x(0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j));
                const __m256i s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
                const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(qa + 32 * k)));
                sumi = ACC_MADD16(sumi, p, s);
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return k_hsum_avx2(acc);
}
