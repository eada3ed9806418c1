/* dot_float_avx2_amd64.c — F16 x F16, F32 x F32, BF16 x F32 dots and the
 * F16/F32 matmul tiles, AVX2+FMA+F16C. Specification: k_dot_{f16_f16,
 * f32_f32,bf16_f32}_ref in dot_ref.c (f32 products summed in f32).
 *
 * Summation order is the reference build's ggml_vec_dot_f16 / _f32 (llama.cpp
 * x86, AVX-512): np = n & ~63 elements in 4 accumulators x 16 lanes of FMA
 * (element i + 16j of each 64-step in accumulator j, lane i); x0 += x2,
 * x1 += x3, x0 += x1; the 16 lanes reduced (l + l+8, l + l+4, l + l+2,
 * l + l+1); the other n - np products added in double. Here a 16-lane
 * accumulator is two ymm (lanes 0-7, 8-15). With it llama-2-tiny-random-F16
 * logits match the reference to 5e-10, for one token and for batches (the
 * llamafile tinyBLAS order, one 16-lane accumulator per output, and f32
 * activations for F16 weights, were tried for batches and matched worse:
 * stories260K-F32 batch 0.0047 vs 0.0029, -F16 0.0153 vs 0.0148). */
#include "kernels_avx2_amd64.h"
#include "mm_driver.h"

#define LOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOADF(p) _mm256_loadu_ps(p)
#define LOADB(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))

/* ---- one token: ggml_vec_dot order ---- */

#define VECDOT_BODY(LX, LY, TAILPROD)                                                        \
    const int64_t np = n & ~(int64_t)63;                                                     \
    double sum = 0;                                                                          \
    if (np > 0) {                                                                            \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; \
        for (int64_t i = 0; i < np; i += 64) {                                               \
            a0 = _mm256_fmadd_ps(LX(x + i), LY(y + i), a0);                                  \
            a1 = _mm256_fmadd_ps(LX(x + i + 8), LY(y + i + 8), a1);                          \
            a2 = _mm256_fmadd_ps(LX(x + i + 16), LY(y + i + 16), a2);                        \
            a3 = _mm256_fmadd_ps(LX(x + i + 24), LY(y + i + 24), a3);                        \
            a4 = _mm256_fmadd_ps(LX(x + i + 32), LY(y + i + 32), a4);                        \
            a5 = _mm256_fmadd_ps(LX(x + i + 40), LY(y + i + 40), a5);                        \
            a6 = _mm256_fmadd_ps(LX(x + i + 48), LY(y + i + 48), a6);                        \
            a7 = _mm256_fmadd_ps(LX(x + i + 56), LY(y + i + 56), a7);                        \
        }                                                                                    \
        a0 = _mm256_add_ps(a0, a4); a1 = _mm256_add_ps(a1, a5);      /* x0 += x2 */          \
        a2 = _mm256_add_ps(a2, a6); a3 = _mm256_add_ps(a3, a7);      /* x1 += x3 */          \
        a0 = _mm256_add_ps(a0, a2); a1 = _mm256_add_ps(a1, a3);      /* x0 += x1 */          \
        sum = (double)k_hsum_avx2(_mm256_add_ps(a0, a1));            /* 16-lane tree */      \
    }                                                                                        \
    for (int64_t i = np; i < n; i++) {                                                       \
        float p = TAILPROD;                                                                  \
        sum += (double)p;                                                                    \
    }                                                                                        \
    return (float)sum;

K_AVX2 float k_dot_f16_f16_avx2(int64_t n, const void *w, const void *a) {
    const k_half *x = (const k_half *)w, *y = (const k_half *)a;
    VECDOT_BODY(LOADH, LOADH, _cvtsh_ss(x[i]) * _cvtsh_ss(y[i]))
}

K_AVX2 float k_dot_f32_f32_avx2(int64_t n, const void *w, const void *a) {
    const float *x = (const float *)w, *y = (const float *)a;
    VECDOT_BODY(LOADF, LOADF, x[i] * y[i])
}

K_AVX2 float k_dot_bf16_f32_avx2(int64_t n, const void *w, const void *a) {
    const k_bf16 *x = (const k_bf16 *)w;
    const float *y = (const float *)a;
    VECDOT_BODY(LOADB, LOADF, k_bf16_to_f32(x[i]) * y[i])
}

/* ---- matmul tiles: the same per-row dot for every token count (the
 * 8 accumulators already give each dot enough independent FMA chains) ---- */

static const mm_kernel mm_f32 = {.dot = k_dot_f32_f32_avx2};
static const mm_kernel mm_f16 = {.dot = k_dot_f16_f16_avx2};
void k_mm_f32_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_f32, K_MM_TILE_ARGS); }
void k_mm_f16_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_f16, K_MM_TILE_ARGS); }
