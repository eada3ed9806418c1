/* mm_avx512_amd64.c — k_matmul_q tile kernels, AVX-512 VNNI on 256-bit vectors
 * (vpdpbusd / vpdpwssd fuse the multiply-add chains of the AVX2 build; the
 * integer sums are the same, so results are bit-identical to it). The body
 * is mm_simd.h. */
#include "kernels_avx2_amd64.h"

#define KT K_AVX512
#define KFN(name) name##_avx512
#define ACC_MADD16(acc, p, s) _mm256_dpwssd_epi32((acc), (p), (s))
#define ACC_DOT_U8I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))

#define MM_ZMM 1 /* 512-bit variants of the hottest tiles */
#include "mm_simd.h"
