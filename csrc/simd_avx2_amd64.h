/* simd_avx2_amd64.h — the AVX2 instruction choices of the x86 integer-dot
 * bodies (dot_kquant_simd.h, dot_q32_simd.h, mm_simd.h), included by the
 * *_avx2_amd64.c files before those bodies. simd_avx512_amd64.h gives the
 * same three names for AVX-512 VNNI; the integer sums are the same on both.
 *   KT                      function attribute (target ISA) of the bodies
 *   ACC_MADD16(acc, p, s)   acc (8 x i32) += pairwise sums of p*s (16 x i16)
 *   ACC_DOT_U8I8(acc, u, s) acc (8 x i32) += 4-wise sums of u*s (u8 x i8) */
#ifndef WOOLLY_SIMD_ISA_H
#define WOOLLY_SIMD_ISA_H

#include "kernels_avx2_amd64.h"

#define KT K_AVX2
#define ACC_MADD16(acc, p, s) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (s)))
#define ACC_DOT_U8I8(acc, u, s) \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))

#endif
