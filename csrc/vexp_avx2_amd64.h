/* vexp_avx2_amd64.h — ggml's vectorised exp on 8 AVX2 lanes, shared by the
 * exact attention and SwiGLU kernels (private to csrc). */
#ifndef WOOLLY_VEXP_AVX2_AMD64_H
#define WOOLLY_VEXP_AVX2_AMD64_H

#include "attn_common.h"
#include "kernels_avx2_amd64.h"

/* ggml_v_expf on 8 lanes, as k_attn_vexpf: the f32 FMA steps, then j * 2^n
 * (exact in f32 while 2^n is a normal float; other lanes go the scalar way). */
K_AVX2 static inline __m256 vexpf8(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    const __m256 ok = _mm256_and_ps(_mm256_cmp_ps(n, _mm256_set1_ps(-126.0f), _CMP_GE_OQ),
                                    _mm256_cmp_ps(n, _mm256_set1_ps(127.0f), _CMP_LE_OQ));
    if (_mm256_movemask_ps(ok) != 0xff) {
        float xs[8], ys[8];
        _mm256_storeu_ps(xs, x);
        for (int l = 0; l < 8; l++) ys[l] = k_attn_vexpf(xs[l]);
        return _mm256_loadu_ps(ys);
    }
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(j, _mm256_castsi256_ps(e));
}

#endif
