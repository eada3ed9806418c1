/*
 * kernels_avx2_amd64.h — prototypes of the x86-64 SIMD kernels (private to
 * csrc). Same signatures as the _ref kernels in kernels.h, which are the
 * specification each one is tested against (kernels/..._test.go).
 *
 * Every function is compiled with __attribute__((target(K_AVX2))) so the
 * package builds with plain -O2; dispatch_amd64.c hands them out only when Go
 * has seen AVX2+FMA+F16C on this CPU.
 *
 * Floating point: dequant kernels must be bit-identical to ref, so they
 * multiply and subtract separately (no FMA) and rely on -std=c11 (GCC then
 * defaults to -ffp-contract=off, so mul+sub is never fused).
 */
#ifndef WOOLLY_KERNELS_AVX2_AMD64_H
#define WOOLLY_KERNELS_AVX2_AMD64_H

#include <immintrin.h>
#include "kernels.h"
#include "kernels_sets.h"

#define K_AVX2 __attribute__((target("avx2,fma,f16c")))
/* impl "avx512": AVX-512 VL + BW + VNNI (used on 256-bit vectors) */
#define K_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

/* The lists every set has (kernels_sets.h), and the kernels only this set
 * has: the Q4_1 / Q5_1 and float dots, the f16 / f32 tiles
 * (dot_float_avx2_amd64.c). The k_matmul_q tiles: mm_avx2_amd64.c,
 * q2k_q3k_avx2_amd64.c, iq4_avx2_amd64.c, mxfp4_avx2_amd64.c. */
K_SET_CONVERT(avx2);
K_SET_QDOTS(avx2);
K_SET_QTILES(avx2);
k_dot_kernel k_dot_q4_1_q8_0_avx2, k_dot_q5_1_q8_0_avx2, k_dot_f16_f16_avx2, k_dot_f32_f32_avx2, k_dot_bf16_f32_avx2;
k_mm_tile_kernel k_mm_f16_avx2, k_mm_f32_avx2;

/* AVX-512 VNNI builds of the same bodies (*_avx512_amd64.c); every other
 * kernel of impl "avx512" is the AVX2 one. */
K_SET_QDOTS(avx512);
K_SET_QTILES(avx512);
k_dot_kernel k_dot_q4_1_q8_0_avx512, k_dot_q5_1_q8_0_avx512;

/* packed (row-interleaved) Q4_K, Q6_K and Q8_0, 8-row groups: packed_x86.h;
 * one layout per type, packed by k_pack_*_x8_avx2, for both sets */
k_pack_kernel k_pack_q4_k_x8_avx2, k_pack_q6_k_x8_avx2, k_pack_q8_0_x8_avx2;
k_mm_tile_kernel k_mm_packed_q4_k_x8_avx2, k_mm_packed_q4_k_x8_avx512, k_mm_packed_q6_k_x8_avx2, k_mm_packed_q6_k_x8_avx512,
    k_mm_packed_q8_0_x8_avx2, k_mm_packed_q8_0_x8_avx512;

k_sgemm_kernel k_sgemm_avx2;
k_attention_kernel k_attention_avx2;
k_attn_h_kernel k_attention_f16acc_avx2, k_attention_tiled_avx2;
k_attn_h_kernel k_attention_f16acc_avx512, k_attention_tiled_avx512;
k_attn_kvq_kernel k_attention_kvq_avx2, k_attention_kvq_avx512;
k_rmsnorm_kernel k_rmsnorm_avx2;
k_rope_kernel k_rope_avx2;
k_swiglu_kernel k_swiglu_avx2;
k_add_kernel k_add_avx2;
k_scale_kernel k_scale_avx2;

/* ---- shared helpers ---- */

K_AVX2 static inline float k_hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

K_AVX2 static inline float k_hsum128_avx2(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

K_AVX2 static inline float k_hmax_avx2(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

K_AVX2 static inline float k_h2f_avx2(k_half h) { return _cvtsh_ss(h); }

/* prefetch `lines` cache lines from p on (SSE: no target attribute needed) */
static inline __attribute__((always_inline)) void k_prefetch_lines(const void *p, int lines) {
    _Pragma("GCC unroll 8")
    for (int l = 0; l < lines; l++) _mm_prefetch((const char *)p + 64 * l, _MM_HINT_T0);
}

/* int16 lane broadcast of entry k of a vector of 8 int16 (both 128-bit halves equal) */
K_AVX2 static inline __m256i k_bcast16_avx2(__m256i v8, int k) {
    return _mm256_shuffle_epi8(v8, _mm256_set1_epi16((short)(((2 * k + 1) << 8) | (2 * k))));
}

/* 16 bytes of packed nibbles -> 32 bytes 0..15: element j < 16 from the low
 * nibble of byte j, element j+16 from its high nibble (Q4_0 order). */
K_AVX2 static inline __m256i k_nibbles32_avx2(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes, 0xFF where bit j is set. */
K_AVX2 static inline __m256i k_bits32_avx2(const uint8_t *qh4) {
    uint32_t qh;
    __builtin_memcpy(&qh, qh4, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                           0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), shuf);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Q5_K's min term the way the reference build sums it (ggml's AVX2 Q5_K dot:
 * the exact integer sum_s m[s] * (bsum[2s] + bsum[2s+1]) per block, then a
 * scalar f32 accumulator summs = fma(-(y.d * dmin), sum, summs), added to the
 * hsum of the main accumulator at the end). Returns the updated summs. */
K_AVX2 static inline float k_q5k_summs_avx2(float summs, __m128i mins16, const int16_t *bsums, float dmin_yd) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)bsums);
    const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    const __m128i pm = _mm_madd_epi16(mins16, bsum);
    const __m128i h = _mm_hadd_epi32(_mm_hadd_epi32(pm, pm), pm);
    const float isum = (float)_mm_cvtsi128_si32(h);
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(-dmin_yd), _mm_set_ss(isum), _mm_set_ss(summs)));
}
/* Q6_K: the 4 vectors of 6-bit quants q[0..3] of a half from its parts L0
 * (ql bytes 0..), L1 (ql bytes 32..) and H (qh), in vectors of W bits (256
 * or 512: a macro, as the intrinsics are named by width): q[k] = low or
 * high nibbles of L0 / L1 (k even: L0) | bits 2k, 2k+1 of H << 4. */
#define K_Q6K_QUANTS(W, L0, L1, H, q)                                                                                           \
    do {                                                                                                                        \
        const __m##W##i m4_ = _mm##W##_set1_epi8(0x0F), m3_ = _mm##W##_set1_epi8(3);                                            \
        q[0] = _mm##W##_or_si##W(_mm##W##_and_si##W(L0, m4_), _mm##W##_slli_epi16(_mm##W##_and_si##W(H, m3_), 4));              \
        q[1] = _mm##W##_or_si##W(_mm##W##_and_si##W(L1, m4_),                                                                   \
                                 _mm##W##_slli_epi16(_mm##W##_and_si##W(_mm##W##_srli_epi16(H, 2), m3_), 4));                   \
        q[2] = _mm##W##_or_si##W(_mm##W##_and_si##W(_mm##W##_srli_epi16(L0, 4), m4_),                                           \
                                 _mm##W##_slli_epi16(_mm##W##_and_si##W(_mm##W##_srli_epi16(H, 4), m3_), 4));                   \
        q[3] = _mm##W##_or_si##W(_mm##W##_and_si##W(_mm##W##_srli_epi16(L1, 4), m4_),                                           \
                                 _mm##W##_slli_epi16(_mm##W##_and_si##W(_mm##W##_srli_epi16(H, 6), m3_), 4));                   \
    } while (0)
/* Q6_K, half h of a block: its 4 vectors of 32 unsigned 6-bit quants (0..63),
 * vector k = elements 128h + 32k .. 128h + 32k + 31 (low 4 bits from ql, high
 * 2 from qh). */
K_AVX2 static inline __attribute__((always_inline)) void k_q6k_quants_avx2(const k_block_q6_k *x, int h, __m256i q[4]) {
    const uint8_t *ql = x->ql + 64 * h;
    const __m256i L0 = _mm256_loadu_si256((const __m256i *)ql);
    const __m256i L1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i H = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
    K_Q6K_QUANTS(256, L0, L1, H, q);
}

/* Q6_K, half h of a block on AVX2: sumi + the int32 lane sums of its 4
 * quant vectors q against the half's 128 activations qa, vector k with
 * scales 2j / 2j+1 (j = 4h + k, from the block's 16 scale bytes sc8) on
 * int32 lanes 0..3 / 4..7; chain pins sumi in a register after each step
 * (see MM_CHAIN, mm_simd.h). */
K_AVX2 static inline __attribute__((always_inline)) __m256i k_q6k_half_avx2(__m256i sumi, const __m256i q[4], __m128i sc8,
                                                                          const int8_t *qa, const int h, const int chain) {
    _Pragma("GCC unroll 4")
    for (int k = 0; k < 4; k++) {
        const int j = 4 * h + k;
        const __m128i shuf = _mm_set_epi64x(0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j));
        const __m256i sv = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
        const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(qa + 32 * k)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sv));
        if (chain) __asm__("" : "+x"(sumi));
    }
    return sumi;
}


/* Q4_K/Q5_K packed scales -> 8 scales in bytes 0..7, 8 mins in bytes 8..15. */
static inline void k_q4k_unpack_scales(const uint8_t *scales, uint32_t u[4]) {
    __builtin_memcpy(u, scales, 12);
    const uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);   /* mins 4..7   */
    const uint32_t m03 = u[1] & k1;                          /* mins 0..3   */
    u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);          /* scales 4..7 */
    u[2] = m03;
    u[0] &= k1;                                              /* scales 0..3 */
}

/* Q4_K / Q5_K scales and mins as int16: lanes 0..7 the 8 scales, 8..15 the 8 mins */
K_AVX2 static inline __attribute__((always_inline)) __m256i k_q4k_scales_mins16_avx2(const uint8_t *scales) {
    uint32_t u[4];
    k_q4k_unpack_scales(scales, u);
    return _mm256_cvtepu8_epi16(_mm_set_epi32((int)u[3], (int)u[2], (int)u[1], (int)u[0]));
}

/* Q4_K / Q5_K (t), one chunk of 32 bytes q4: the unsigned quants of its two
 * sub-blocks, low nibbles in lo, high in hi; for Q5_K bits 0 / 1 of each
 * byte of *hb add 16 to them and *hb moves on by two bits. */
K_AVX2 static inline __attribute__((always_inline)) void k_q45k_chunk_avx2(const int t, __m256i q4, __m256i *hb, __m256i *lo,
                                                                          __m256i *hi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m1 = _mm256_set1_epi8(1);
    *lo = _mm256_and_si256(q4, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
    if (t == K_Q5_K) {
        *lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(*hb, m1), 4));
        *hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(*hb, 1), m1), 4));
        *hb = _mm256_srli_epi16(*hb, 2);
    }
}

#endif
