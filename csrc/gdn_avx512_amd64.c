/* gdn_avx512_amd64.c — the Gated DeltaNet kernels for the avx512 impl
 * (gdn.h): the reference dot's four 16-lane accumulators are four 512-bit
 * vectors, as in ggml's AVX-512 vec_dot_f32; the same tree, so the bits of
 * gdn_ref.c. */
#include <immintrin.h>
#include <math.h>
#include "gdn.h"
#include "kernels.h"
#include "kernels_avx2_amd64.h"

K_AVX512 static inline __attribute__((always_inline)) float gdn_reduce16(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m512 s = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    u = _mm_add_ps(u, _mm_movehl_ps(u, u));
    u = _mm_add_ss(u, _mm_shuffle_ps(u, u, 1));
    return _mm_cvtss_f32(u);
}

/* one vector of gdn_row.h's pass: m * c, or fmaf(k, c, m) (upd) */
K_AVX512 static inline __attribute__((always_inline)) __m512 gdn_x16(const int upd, const float *m, const float *k, __m512 c) {
    return upd ? _mm512_fmadd_ps(_mm512_loadu_ps(k), c, _mm512_loadu_ps(m)) : _mm512_mul_ps(_mm512_loadu_ps(m), c);
}

/* gdn_row.h's pass: the four 16-lane accumulators as four vectors */
K_AVX512 static inline __attribute__((always_inline)) float gdn_vpass(const int upd, float *m, const float *k,
                                                                      const float *r, int64_t np, float c) {
    const __m512 cv = _mm512_set1_ps(c);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < np; i += 64) {
        const __m512 x0 = gdn_x16(upd, m + i, k + i, cv);
        const __m512 x1 = gdn_x16(upd, m + i + 16, k + i + 16, cv);
        const __m512 x2 = gdn_x16(upd, m + i + 32, k + i + 32, cv);
        const __m512 x3 = gdn_x16(upd, m + i + 48, k + i + 48, cv);
        _mm512_storeu_ps(m + i, x0);
        _mm512_storeu_ps(m + i + 16, x1);
        _mm512_storeu_ps(m + i + 32, x2);
        _mm512_storeu_ps(m + i + 48, x3);
        a0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r + i), a0);
        a1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r + i + 16), a1);
        a2 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(r + i + 32), a2);
        a3 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(r + i + 48), a3);
    }
    return gdn_reduce16(a0, a1, a2, a3);
}

#define GDN_FN K_AVX512
#include "gdn_row.h"
#include "gdn_driver.h"

K_AVX512 void k_gdn_recur_avx512(K_GDN_RECUR_PARAMS) { gdn_recur(K_GDN_RECUR_ARGS); }
K_AVX512 void k_gdn_conv_avx512(K_GDN_CONV_PARAMS) { gdn_conv(K_GDN_CONV_ARGS); }
