/* simd_avx512_amd64.h — the AVX-512 VNNI instruction choices of the x86
 * integer-dot bodies on 256-bit vectors (see simd_avx2_amd64.h): vpdpbusd /
 * vpdpwssd fuse the multiply-add chains of the AVX2 build; the integer sums
 * are the same, so results are bit-identical to it. */
#ifndef WOOLLY_SIMD_ISA_H
#define WOOLLY_SIMD_ISA_H

#include "kernels_avx2_amd64.h"

#define KT K_AVX512
#define ACC_MADD16(acc, p, s) _mm256_dpwssd_epi32((acc), (p), (s))
#define ACC_DOT_U8I8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))

#endif
