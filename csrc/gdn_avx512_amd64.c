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

K_AVX512 static inline __attribute__((always_inline)) float gdn_row(float *m, const float *k, const float *q, int64_t S,
                                                                    float decay, float vj, float b, float scale) {
    const int64_t np = S & ~(int64_t)63;
    float d = 0, o = 0;
    if (np > 0) {
        const __m512 dv = _mm512_set1_ps(decay);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t i = 0; i < np; i += 64) {
            const __m512 x0 = _mm512_mul_ps(_mm512_loadu_ps(m + i), dv);
            const __m512 x1 = _mm512_mul_ps(_mm512_loadu_ps(m + i + 16), dv);
            const __m512 x2 = _mm512_mul_ps(_mm512_loadu_ps(m + i + 32), dv);
            const __m512 x3 = _mm512_mul_ps(_mm512_loadu_ps(m + i + 48), dv);
            _mm512_storeu_ps(m + i, x0);
            _mm512_storeu_ps(m + i + 16, x1);
            _mm512_storeu_ps(m + i + 32, x2);
            _mm512_storeu_ps(m + i + 48, x3);
            a0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(k + i), a0);
            a1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(k + i + 16), a1);
            a2 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(k + i + 32), a2);
            a3 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(k + i + 48), a3);
        }
        d = gdn_reduce16(a0, a1, a2, a3);
    }
    for (int64_t i = np; i < S; i++) {
        m[i] = m[i] * decay;
        const float p = m[i] * k[i];
        d += p;
    }
    const float dj = (vj - d) * b;
    if (np > 0) {
        const __m512 djv = _mm512_set1_ps(dj);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t i = 0; i < np; i += 64) {
            const __m512 x0 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i), djv, _mm512_loadu_ps(m + i));
            const __m512 x1 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i + 16), djv, _mm512_loadu_ps(m + i + 16));
            const __m512 x2 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i + 32), djv, _mm512_loadu_ps(m + i + 32));
            const __m512 x3 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i + 48), djv, _mm512_loadu_ps(m + i + 48));
            _mm512_storeu_ps(m + i, x0);
            _mm512_storeu_ps(m + i + 16, x1);
            _mm512_storeu_ps(m + i + 32, x2);
            _mm512_storeu_ps(m + i + 48, x3);
            a0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(q + i), a0);
            a1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(q + i + 16), a1);
            a2 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(q + i + 32), a2);
            a3 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(q + i + 48), a3);
        }
        o = gdn_reduce16(a0, a1, a2, a3);
    }
    for (int64_t i = np; i < S; i++) {
        m[i] = fmaf(k[i], dj, m[i]);
        const float p = m[i] * q[i];
        o += p;
    }
    return o * scale;
}

#define GDN_FN K_AVX512
#include "gdn_driver.h"

K_AVX512 void k_gdn_recur_avx512(K_GDN_RECUR_PARAMS) { gdn_recur(K_GDN_RECUR_ARGS); }
K_AVX512 void k_gdn_conv_avx512(K_GDN_CONV_PARAMS) { gdn_conv(K_GDN_CONV_ARGS); }
