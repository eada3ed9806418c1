/* packed_avx512_amd64.c — packed Q4_K, Q6_K and Q8_0, AVX-512 VNNI:
 * packed_x86.h's layouts (packed by k_pack_*_x8_avx2) with the 512-bit
 * gemvs (two rows per vector), and the packed tiles as k_mm_run over them
 * (mm_driver.h): batches of 4 or more tokens through the set's own
 * unpacked tiles. */
#include "simd_avx512_amd64.h"
#include "packed_x86.h"

/* Two rows per 512-bit vector (row 2p in lanes 0..7, 2p+1 in 8..15):
 * acc + (their factors, lanes 2p and 2p+1 of d, 8 lanes each) * the int32
 * lane sums s; and the halves, each one row's 8 f32 lanes. */
KT static inline __attribute__((always_inline)) __m512 pk_pair_fma(__m256 d, const int p, __m512i s, __m512 acc) {
    const __m512 dp = _mm512_permutexvar_ps(_mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                                                              2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                                              2 * p + 1),
                                            _mm512_castps256_ps512(d));
    return _mm512_fmadd_ps(dp, _mm512_cvtepi32_ps(s), acc);
}
KT static inline __attribute__((always_inline)) __m256 pk_lo256(__m512 v) { return _mm512_castps512_ps256(v); }
KT static inline __attribute__((always_inline)) __m256 pk_hi256(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
/* out[2p], out[2p+1] = the sums of acc[p]'s halves */
KT static inline __attribute__((always_inline)) void pk_pairs_out(const __m512 acc[4], float out[PK_G]) {
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) {
        out[2 * p] = k_hsum_avx2(pk_lo256(acc[p]));
        out[2 * p + 1] = k_hsum_avx2(pk_hi256(acc[p]));
    }
}

/* 8 packed rows x one token on 512-bit vectors: rows 2p and 2p+1 share a
 * vector (their chunks are adjacent in the layout), the activation chunks
 * are broadcast to both halves. Same integer lanes, same f32 steps. */
KT static void pk_q4k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[4] = {0};
    __m256 accm[4] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const pk_q4k_head hd = pk_q4k_block(w, i, &y[i], accm);
        __m512i alo[4], ahi[4];
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            alo[c] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
            ahi[c] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
        }
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) {
            /* rows 2p, 2p+1: qwords q, q+1 of s0 (p even) or s1 (p odd), q = p & 2 */
            const int q = p & 2;
            const __m512i sp = _mm512_permutexvar_epi64(_mm512_setr_epi64(q, q, q, q, q + 1, q + 1, q + 1, q + 1),
                                                        _mm512_castsi256_si512((p & 1) ? hd.s1 : hd.s0));
            __m512i sumi = _mm512_setzero_si512();
            _Pragma("GCC unroll 4")
            for (int c = 0; c < 4; c++) {
                const __m512i q4 = _mm512_loadu_si512((const void *)(hd.o + 128 + 256 * c + 64 * p));
                const __m512i lo = _mm512_and_si512(q4, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q4, 4), m4);
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(lo, alo[c]), _mm512_shuffle_epi8(sp, _mm512_set1_epi16((short)(0x8000 | (2 * c)))));
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(hi, ahi[c]),
                                           _mm512_shuffle_epi8(sp, _mm512_set1_epi16((short)(0x8000 | (2 * c + 1)))));
            }
            acc[p] = pk_pair_fma(hd.dy, p, sumi, acc[p]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) {
        out[2 * p] = k_hsum_avx2(pk_lo256(acc[p])) - pk_q4k_minsum(accm, 2 * p);
        out[2 * p + 1] = k_hsum_avx2(pk_hi256(acc[p])) - pk_q4k_minsum(accm, 2 * p + 1);
    }
}

/* two rows per 512-bit vector: lanes 0..7 row 2p, 8..15 row 2p+1 */
KT static void pk_q6k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m512 acc[4] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const char *o = w + i * PK6_XB;
        if (PK_PF) k_prefetch_lines(o + PK_PF, PK6_XB / 64);
        const __m256 dy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o)), _mm256_set1_ps(y[i].d));
        const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m512i av[8];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) av[j] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * j)));
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) {
            const __m256i sc = _mm256_loadu_si256((const __m256i *)(o + 16 + 32 * p)); /* rows 2p, 2p+1 */
            const __m512i corr = _mm512_madd_epi16(_mm512_cvtepi8_epi16(sc), bs);
            __m512i sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(corr, 5));
            _Pragma("GCC unroll 2")
            for (int h = 0; h < 2; h++) {
                __m512i q[4];
                const __m512i L0 = _mm512_loadu_si512((const void *)(o + pk6_off(h, 2 * p, 0)));
                const __m512i L1 = _mm512_loadu_si512((const void *)(o + pk6_off(h, 2 * p, 1)));
                const __m512i H = _mm512_loadu_si512((const void *)(o + pk6_off(h, 2 * p, 2)));
                K_Q6K_QUANTS(512, L0, L1, H, q);
                _Pragma("GCC unroll 4")
                for (int k = 0; k < 4; k++) {
                    const int j = 4 * h + k;
                    const __m256i shuf = _mm256_set_epi64x(0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j),
                                                           0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j));
                    const __m512i sv = _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(sc, shuf));
                    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[k], av[j]), sv);
                }
            }
            acc[p] = pk_pair_fma(dy, p, sumi, acc[p]);
        }
    }
    pk_pairs_out(acc, out);
}

/* two rows per 512-bit vector; sign(y, q) as y negated where q < 0 (where
 * q == 0 the product is 0 either way), |q| as unsigned bytes */
KT static void pk_q8_0_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m512 acc[4] = {0};
    for (int64_t i = 0; i < n / K_QK; i++) {
        const char *o = w + i * PK8_XB;
        if (PK8_PF) k_prefetch_lines(o + PK8_PF, 5);
        const __m512i ya = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y[i].qs));
        const __m256 dd = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o)), _mm256_set1_ps(k_h2f_avx2(y[i].d)));
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) {
            const __m512i q = _mm512_loadu_si512((const void *)(o + 16 + 64 * p));
            const __m512i sy = _mm512_mask_sub_epi8(ya, _mm512_movepi8_mask(q), _mm512_setzero_si512(), ya);
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), sy);
            acc[p] = pk_pair_fma(dd, p, s, acc[p]);
        }
    }
    pk_pairs_out(acc, out);
}

PK_X86_KERNELS(avx512)
void k_mm_packed_q4_k_x8_avx512(K_MM_TILE_PARAMS) { k_mm_run(&pk_q4_k, K_MM_TILE_ARGS); }
void k_mm_packed_q6_k_x8_avx512(K_MM_TILE_PARAMS) { k_mm_run(&pk_q6_k, K_MM_TILE_ARGS); }
void k_mm_packed_q8_0_x8_avx512(K_MM_TILE_PARAMS) { k_mm_run(&pk_q8_0, K_MM_TILE_ARGS); }
