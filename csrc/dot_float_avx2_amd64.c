/* dot_float_avx2_amd64.c — F16 x F16, F32 x F32, BF16 x F32 dots, AVX2+FMA.
 * Specification: k_dot_{f16_f16,f32_f32,bf16_f32}_ref in dot_ref.c (f32
 * accumulation; here in 4 x 8 lanes, then the scalar tail). */
#include "kernels_avx2_amd64.h"

#define LOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOADB(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))

K_AVX2 float k_dot_f16_f16_avx2(int64_t n, const void *w, const void *a) {
    const k_half *x = (const k_half *)w, *y = (const k_half *)a;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(LOADH(x + i), LOADH(y + i), s0);
        s1 = _mm256_fmadd_ps(LOADH(x + i + 8), LOADH(y + i + 8), s1);
        s2 = _mm256_fmadd_ps(LOADH(x + i + 16), LOADH(y + i + 16), s2);
        s3 = _mm256_fmadd_ps(LOADH(x + i + 24), LOADH(y + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(LOADH(x + i), LOADH(y + i), s0);
    float s = k_hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) s += _cvtsh_ss(x[i]) * _cvtsh_ss(y[i]);
    return s;
}

K_AVX2 float k_dot_f32_f32_avx2(int64_t n, const void *w, const void *a) {
    const float *x = (const float *)w, *y = (const float *)a;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
    float s = k_hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

K_AVX2 float k_dot_bf16_f32_avx2(int64_t n, const void *w, const void *a) {
    const k_bf16 *x = (const k_bf16 *)w;
    const float *y = (const float *)a;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(LOADB(x + i), _mm256_loadu_ps(y + i), s0);
        s1 = _mm256_fmadd_ps(LOADB(x + i + 8), _mm256_loadu_ps(y + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(LOADB(x + i), _mm256_loadu_ps(y + i), s0);
    float s = k_hsum_avx2(_mm256_add_ps(s0, s1));
    for (; i < n; i++) s += k_bf16_to_f32(x[i]) * y[i];
    return s;
}
