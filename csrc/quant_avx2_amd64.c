/* quant_avx2_amd64.c — activation quantization and dequantization, AVX2.
 * Specification: quant_ref.c. Both directions produce the SAME BYTES / BITS
 * as ref: rounding is _mm256_round_ps(_MM_FROUND_TO_NEAREST_INT), i.e. the
 * half-to-even of ref's nearest_int(); dequant multiplies and subtracts in two
 * rounded steps like ref (no FMA). */
#include <math.h>
#include <string.h>
#include "kernels_avx2_amd64.h"

#define RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* 32 floats * s, rounded to nearest-even, clamped to <= 127, as 32 int8 in order. */
K_AVX2 static inline __m256i round_pack32(const float *x, __m256 s, __m256i hi) {
    __m256i v0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), s), RNE));
    __m256i v1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), s), RNE));
    __m256i v2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), s), RNE));
    __m256i v3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), s), RNE));
    v0 = _mm256_min_epi32(v0, hi); v1 = _mm256_min_epi32(v1, hi);
    v2 = _mm256_min_epi32(v2, hi); v3 = _mm256_min_epi32(v3, hi);
    /* packs interleave per 128-bit lane; the permute restores element order */
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

K_AVX2 static inline __m256 absmax32(const float *x, __m256 m) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int j = 0; j < 32; j += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
    return m;
}

/* Q8_K, see k_quantize_q8_k_ref: amax by SIMD, then the first element with
 * |x| == amax gives the signed max (first-wins, as the ref scan). */
K_AVX2 void k_quantize_q8_k_avx2(const float *x, void *dst, int64_t n) {
    k_block_q8_k *y = (k_block_q8_k *)dst;
    const __m256i hi = _mm256_set1_epi32(127);
    for (int64_t i = 0; i < n / K_QKK; i++, x += K_QKK) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < K_QKK; j += 32) m = absmax32(x + j, m);
        const float amax = k_hmax_avx2(m);
        if (amax == 0) {
            k_q8k_zero_block(&y[i]);
            continue;
        }
        const float max = k_q8k_signed_max(x, amax);
        const float iscale = -127.f / max;
        if (!isfinite(iscale)) {
            /* a subnormal max overflows the scale: the quants are then not
             * round()s but what the ref's integer trick gives; take them from it */
            k_quantize_q8_k_ref(x, &y[i], K_QKK);
            continue;
        }
        const __m256 s = _mm256_set1_ps(iscale);
        const __m256i ones = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
        for (int j = 0; j < K_QKK; j += 32) {
            const __m256i q = round_pack32(x + j, s, hi);
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), q);
            /* two 16-element sums: pairs (maddubs) -> quads (madd) -> hadd */
            const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, q), ones16);
            const __m128i lo = _mm256_castsi256_si128(s4), up = _mm256_extracti128_si256(s4, 1);
            const __m128i h = _mm_hadd_epi32(lo, up);   /* [l0+l1, l2+l3, u0+u1, u2+u3] */
            const __m128i g = _mm_hadd_epi32(h, h);     /* [sum lo 16, sum up 16, ..] */
            y[i].bsums[j / 16]     = (int16_t)_mm_cvtsi128_si32(g);
            y[i].bsums[j / 16 + 1] = (int16_t)_mm_extract_epi32(g, 1);
        }
        y[i].d = 1 / iscale;
    }
}

/* Q8_0, see k_quantize_q8_0_ref: d = amax/127 (f16), quants from id = 127/amax. */
K_AVX2 void k_quantize_q8_0_avx2(const float *x, void *dst, int64_t n) {
    k_block_q8_0 *y = (k_block_q8_0 *)dst;
    const __m256i hi = _mm256_set1_epi32(127);
    for (int64_t i = 0; i < n / K_QK; i++, x += K_QK) {
        const float amax = k_hmax_avx2(absmax32(x, _mm256_setzero_ps()));
        const float d = amax / 127.f;
        const float id = amax != 0 ? 127.f / amax : 0.f;
        if (!isfinite(id)) { /* subnormal amax: see the Q8_K note above */
            k_quantize_q8_0_ref(x, &y[i], K_QK);
            continue;
        }
        y[i].d = (k_half)_cvtss_sh(d, 0);
        _mm256_storeu_si256((__m256i *)y[i].qs, round_pack32(x, _mm256_set1_ps(id), hi));
    }
}

K_AVX2 void k_quantize_f16_avx2(const float *x, void *dst, int64_t n) {
    k_half *y = (k_half *)dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) y[i] = (k_half)_cvtss_sh(x[i], 0);
}

/* ---- dequantization (bit-identical to ref) ---- */

K_AVX2 void k_dequant_f16_avx2(const void *src, float *dst, int64_t n) {
    const k_half *s = (const k_half *)src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++) dst[i] = _cvtsh_ss(s[i]);
}

/* 32 int8 -> 4 x 8 floats, each * d */
K_AVX2 static inline void store_i8x32_scaled(float *dst, __m256i q, __m256 d) {
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    _mm256_storeu_ps(dst,      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d));
    _mm256_storeu_ps(dst + 8,  _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d));
    _mm256_storeu_ps(dst + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d));
    _mm256_storeu_ps(dst + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d));
}

/* 32 uint8 -> 4 x 8 floats, each (q * d) - m, two roundings like ref */
K_AVX2 static inline void store_u8x32_affine(float *dst, __m256i q, __m256 d, __m256 m) {
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    const __m128i part[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    _Pragma("GCC unroll 4")
    for (int k = 0; k < 4; k++) {
        const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(part[k]));
        const __m256 t = _mm256_mul_ps(d, f);
        _mm256_storeu_ps(dst + 8 * k, _mm256_sub_ps(t, m));
    }
}

K_AVX2 void k_dequant_q8_0_avx2(const void *src, float *dst, int64_t n) {
    const k_block_q8_0 *b = (const k_block_q8_0 *)src;
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK)
        store_i8x32_scaled(dst, _mm256_loadu_si256((const __m256i *)b[i].qs), _mm256_set1_ps(_cvtsh_ss(b[i].d)));
}

K_AVX2 void k_dequant_q4_0_avx2(const void *src, float *dst, int64_t n) {
    const k_block_q4_0 *b = (const k_block_q4_0 *)src;
    const __m256i off = _mm256_set1_epi8(8);
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK)
        store_i8x32_scaled(dst, _mm256_sub_epi8(k_nibbles32_avx2(b[i].qs), off), _mm256_set1_ps(_cvtsh_ss(b[i].d)));
}

K_AVX2 void k_dequant_q4_k_avx2(const void *src, float *dst, int64_t n) {
    const k_block_q4_k *b = (const k_block_q4_k *)src;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = _cvtsh_ss(b[i].d), dmin = _cvtsh_ss(b[i].dmin);
        uint32_t u[4];
        k_q4k_unpack_scales(b[i].scales, u);
        const uint8_t *sc = (const uint8_t *)u, *mn = sc + 8;
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++, dst += 64) {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * c));
            store_u8x32_affine(dst, _mm256_and_si256(q4, m4), _mm256_set1_ps(d * sc[2 * c]),
                               _mm256_set1_ps(dmin * mn[2 * c]));
            store_u8x32_affine(dst + 32, _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4),
                               _mm256_set1_ps(d * sc[2 * c + 1]), _mm256_set1_ps(dmin * mn[2 * c + 1]));
        }
    }
}

K_AVX2 void k_dequant_q5_k_avx2(const void *src, float *dst, int64_t n) {
    const k_block_q5_k *b = (const k_block_q5_k *)src;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m1 = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = _cvtsh_ss(b[i].d), dmin = _cvtsh_ss(b[i].dmin);
        uint32_t u[4];
        k_q4k_unpack_scales(b[i].scales, u);
        const uint8_t *sc = (const uint8_t *)u, *mn = sc + 8;
        __m256i hb = _mm256_loadu_si256((const __m256i *)b[i].qh);
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++, dst += 64) {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * c));
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, m1), 4);
            const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), m1), 4);
            hb = _mm256_srli_epi16(hb, 2);
            store_u8x32_affine(dst, _mm256_or_si256(_mm256_and_si256(q4, m4), h0),
                               _mm256_set1_ps(d * sc[2 * c]), _mm256_set1_ps(dmin * mn[2 * c]));
            store_u8x32_affine(dst + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), h1),
                               _mm256_set1_ps(d * sc[2 * c + 1]), _mm256_set1_ps(dmin * mn[2 * c + 1]));
        }
    }
}

/* Q6_K: (d * scale[g]) * (q - 32); a 32-quant vector spans groups g, g+1 */
K_AVX2 void k_dequant_q6_k_avx2(const void *src, float *dst, int64_t n) {
    const k_block_q6_k *b = (const k_block_q6_k *)src;
    const __m256i off = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = _cvtsh_ss(b[i].d);
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++, dst += 128) {
            const int8_t *sc = b[i].scales + 8 * h;
            __m256i q[4];
            k_q6k_quants_avx2(&b[i], h, q);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < 4; k++) {
                const __m256i qs = _mm256_sub_epi8(q[k], off);
                const __m128i lo = _mm256_castsi256_si128(qs), hi = _mm256_extracti128_si256(qs, 1);
                const __m256 d0 = _mm256_set1_ps(d * (float)sc[2 * k]), d1 = _mm256_set1_ps(d * (float)sc[2 * k + 1]);
                float *o = dst + 32 * k;
                _mm256_storeu_ps(o,      _mm256_mul_ps(d0, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
                _mm256_storeu_ps(o + 8,  _mm256_mul_ps(d0, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
                _mm256_storeu_ps(o + 16, _mm256_mul_ps(d1, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
                _mm256_storeu_ps(o + 24, _mm256_mul_ps(d1, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
            }
        }
    }
}
