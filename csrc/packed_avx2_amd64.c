/* packed_avx2_amd64.c — packed (row-interleaved) Q4_K, Q6_K and Q8_0, AVX2:
 * the layouts of packed_x86.h, their pack functions (the AVX-512 set uses
 * the same layouts and these), the 256-bit gemvs, and the packed tiles as
 * k_mm_run over them (mm_driver.h): batches of 4 or more tokens through
 * the set's unpacked tiles. */
#include "simd_avx2_amd64.h"
#include "packed_x86.h"

/* 8 packed rows x one token: out[r] = dot(row r, a) */
KT static void pk_q4k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[PK_G] = {0}, accm[4] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const pk_q4k_head hd = pk_q4k_block(w, i, &y[i], accm);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < PK_G; r++) {
            /* row r's 8 scale bytes in every 64-bit lane */
            const int q = (r & 1) | ((r & 4) >> 1); /* its 64-bit lane in s0 (r & 2 == 0) or s1 */
            const __m256i sr = _mm256_permutevar8x32_epi32((r & 2) ? hd.s1 : hd.s0,
                                                           _mm256_setr_epi32(2 * q, 2 * q + 1, 2 * q, 2 * q + 1, 2 * q, 2 * q + 1, 2 * q, 2 * q + 1));
            __m256i sumi = _mm256_setzero_si256();
            _Pragma("GCC unroll 4")
            for (int c = 0; c < 4; c++) {
                const __m256i q4 = _mm256_loadu_si256((const __m256i *)(hd.o + 128 + 256 * c + 32 * r));
                const __m256i p0 = _mm256_maddubs_epi16(_mm256_and_si256(q4, m4), _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
                const __m256i p1 = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4),
                                                        _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
                sumi = ACC_MADD16(sumi, p0, _mm256_shuffle_epi8(sr, _mm256_set1_epi16((short)(0x8000 | (2 * c)))));
                sumi = ACC_MADD16(sumi, p1, _mm256_shuffle_epi8(sr, _mm256_set1_epi16((short)(0x8000 | (2 * c + 1)))));
                PK_CHAIN(sumi);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(hd.dy, _mm256_set1_epi32(r)), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) out[r] = k_hsum_avx2(acc[r]) - pk_q4k_minsum(accm, r);
}

KT static void pk_q6k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc[PK_G] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const char *o = w + i * PK6_XB;
        if (PK_PF) k_prefetch_lines(o + PK_PF, PK6_XB / 64);
        const __m256 dy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o)), _mm256_set1_ps(y[i].d));
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < PK_G; r++) {
            const __m128i sc8 = _mm_loadu_si128((const __m128i *)(o + 16 + 16 * r));
            const __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), bs);
            __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
            _Pragma("GCC unroll 2")
            for (int h = 0; h < 2; h++) {
                __m256i q[4];
                const __m256i L0 = _mm256_loadu_si256((const __m256i *)(o + pk6_off(h, r, 0)));
                const __m256i L1 = _mm256_loadu_si256((const __m256i *)(o + pk6_off(h, r, 1)));
                const __m256i H = _mm256_loadu_si256((const __m256i *)(o + pk6_off(h, r, 2)));
                K_Q6K_QUANTS(256, L0, L1, H, q);
                sumi = k_q6k_half_avx2(sumi, q, sc8, y[i].qs + 128 * h, h, 1);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dy, _mm256_set1_epi32(r)), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) out[r] = k_hsum_avx2(acc[r]);
}

KT static void pk_q8_0_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m256 acc[PK_G] = {0};
    for (int64_t i = 0; i < n / K_QK; i++) {
        const char *o = w + i * PK8_XB;
        if (PK8_PF) k_prefetch_lines(o + PK8_PF, 5);
        const __m256i ya = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256 dd = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o)), _mm256_set1_ps(k_h2f_avx2(y[i].d)));
        _Pragma("GCC unroll 8")
        for (int r = 0; r < PK_G; r++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(o + 16 + 32 * r));
            const __m256i s = ACC_DOT_U8I8(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(ya, q));
            acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dd, _mm256_set1_epi32(r)), _mm256_cvtepi32_ps(s), acc[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) out[r] = k_hsum_avx2(acc[r]);
}

void k_pack_q4_k_x8_avx2(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_q4k_pack(n, src, row_bytes, nrows, dst);
}
void k_pack_q6_k_x8_avx2(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_q6k_pack(n, src, row_bytes, nrows, dst);
}
void k_pack_q8_0_x8_avx2(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_q8_0_pack(n, src, row_bytes, nrows, dst);
}
PK_X86_KERNELS(avx2)
void k_mm_packed_q4_k_x8_avx2(K_MM_TILE_PARAMS) { k_mm_run(&pk_q4_k, K_MM_TILE_ARGS); }
void k_mm_packed_q6_k_x8_avx2(K_MM_TILE_PARAMS) { k_mm_run(&pk_q6_k, K_MM_TILE_ARGS); }
void k_mm_packed_q8_0_x8_avx2(K_MM_TILE_PARAMS) { k_mm_run(&pk_q8_0, K_MM_TILE_ARGS); }
