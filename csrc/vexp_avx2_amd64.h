/* vexp_avx2_amd64.h — ggml's vectorised exp on 8 AVX2 lanes (vexpf8, the
 * body of vexp_body.h), shared by the exact attention and SwiGLU kernels
 * (private to csrc). */
#ifndef WOOLLY_VEXP_AVX2_AMD64_H
#define WOOLLY_VEXP_AVX2_AMD64_H

#include "attn_common.h"
#include "kernels_avx2_amd64.h"

#define VX_FN K_AVX2
#define VX_NAME vexpf8
#define VX_F __m256
#define VX_LANES 8
#define VX_DUP(c) _mm256_set1_ps(c)
#define VX_SUB(a, b) _mm256_sub_ps((a), (b))
#define VX_MUL(a, b) _mm256_mul_ps((a), (b))
#define VX_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VX_FNMA(a, b, c) _mm256_fnmadd_ps((a), (b), (c))
#define VX_IN_RANGE(n)                                                                              \
    (_mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps((n), _mm256_set1_ps(-126.0f), _CMP_GE_OQ),     \
                                      _mm256_cmp_ps((n), _mm256_set1_ps(127.0f), _CMP_LE_OQ))) == 0xff)
#define VX_POW2(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
#define VX_LD(p) _mm256_loadu_ps(p)
#define VX_ST(p, v) _mm256_storeu_ps((p), (v))
#include "vexp_body.h"

#endif
