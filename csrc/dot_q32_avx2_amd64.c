/* dot_q32_avx2_amd64.c — 32-element-block x Q8_0 dots, AVX2 (maddubs + madd). The body is
 * dot_q32_simd.h, shared with the AVX-512 VNNI build (dot_q32_avx512_amd64.c). */
#include "kernels_avx2_amd64.h"

#define KT K_AVX2
#define KFN(name) name##_avx2
#define ACC_MADD16(acc, p, s) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (s)))
#define ACC_DOT_U8I8(acc, u, s) \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))

#include "dot_q32_simd.h"
