/* dot_q32_avx512_amd64.c — 32-element-block x Q8_0 dots, AVX-512 VNNI on 256-bit vectors
 * (vpdpbusd / vpdpwssd fuse the multiply-add chains of the AVX2 build; the
 * integer sums are the same, so results are bit-identical to it). The body
 * is dot_q32_simd.h. */
#include "kernels_avx2_amd64.h"

#define KT K_AVX512
#define KFN(name) name##_avx512
#define ACC_MADD16(acc, p, s) _mm256_dpwssd_epi32((acc), (p), (s))
#define ACC_DOT_U8I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))

#include "dot_q32_simd.h"
