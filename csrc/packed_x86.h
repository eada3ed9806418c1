/* packed_x86.h — row-interleaved ("packed") Q4_K weights on x86 (see the
 * packed members in kernels.h), included by packed_<isa>_amd64.c after
 * simd_<isa>_amd64.h; PK_ZMM selects the 512-bit gemv.
 *
 * Layout: a group of 8 rows (8 * row_bytes bytes) holds, for each block b
 * of the rows, one 1152-byte "x8 block" (8 * 144, so block b of the group
 * sits at b * 1152 and the group keeps the size of its rows):
 *   [   0,   16)  d of rows 0..7 (f16)
 *   [  16,   32)  dmin of rows 0..7 (f16)
 *   [  32,  128)  the 12 scale bytes of each row as three 32-bit words:
 *                 word k (bytes 4k..4k+3) of row r at 32 + 32k + 4r
 *   [ 128, 1152)  quants: the 32 bytes of chunk c (sub-blocks 2c, 2c+1) of
 *                 row r at 128 + 256c + 32r
 * so one pass over a group reads one sequential stream, the scale words of
 * the 8 rows decode in one vector each, and one activation load feeds 8
 * rows (two rows per 512-bit vector with PK_ZMM).
 *
 * Numerics: per row, the integer lane sums (lane l: the products of bytes
 * 4l..4l+3 of each chunk's low and high nibbles times their sub-block
 * scales, summed over the chunks) and every f32 step (d*yd and dmin*yd
 * products, the 8-lane FMA per block, the 4-lane min FMA, the final
 * horizontal sums) are those of k_dot_q4_k_q8_k_<isa> and of the set's
 * rows4 / tile kernels, so the results are the same bits. */

#define PK_G 8
/* software prefetch distance of the gemv in bytes (0: none). The packed
 * stream is sequential; out of cache (BenchmarkMatVecPacked big, Q4_K,
 * AVX-512, 3 interleaved rounds each, packed / unpacked thread-CPU GB/s)
 * 0 gave 1.00-1.06x, 1152 0.95x, 2304 0.96x, 4608 0.80x, 9216 0.76x,
 * 18432 0.89x: none is used. */
#ifndef PK_PF
#define PK_PF 0
#endif
#define PK_XB (PK_G * (int64_t)sizeof(k_block_q4_k)) /* bytes of one x8 block */

/* nrows (a multiple of 8) rows of Q4_K, row_bytes apart, into the layout above */
__attribute__((unused)) static void pk_q4k_pack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QKK;
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        const char *s = (const char *)src + (size_t)g * row_bytes;
        char *d = (char *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++) {
            char *o = d + b * PK_XB;
            for (int r = 0; r < PK_G; r++) {
                const k_block_q4_k *x = (const k_block_q4_k *)(s + (size_t)r * row_bytes) + b;
                memcpy(o + 2 * r, &x->d, 2);
                memcpy(o + 16 + 2 * r, &x->dmin, 2);
                for (int k = 0; k < 3; k++) memcpy(o + 32 + 32 * k + 4 * r, x->scales + 4 * k, 4);
                for (int c = 0; c < 4; c++) memcpy(o + 128 + 256 * c + 32 * r, x->qs + 32 * c, 32);
            }
        }
    }
}

/* the inverse of pk_q4k_pack */
static void pk_q4k_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QKK;
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        const char *s = (const char *)src + (size_t)g * row_bytes;
        char *d = (char *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++) {
            const char *o = s + b * PK_XB;
            for (int r = 0; r < PK_G; r++) {
                k_block_q4_k *x = (k_block_q4_k *)(d + (size_t)r * row_bytes) + b;
                memcpy(&x->d, o + 2 * r, 2);
                memcpy(&x->dmin, o + 16 + 2 * r, 2);
                for (int k = 0; k < 3; k++) memcpy(x->scales + 4 * k, o + 32 + 32 * k + 4 * r, 4);
                for (int c = 0; c < 4; c++) memcpy(x->qs + 32 * c, o + 128 + 256 * c + 32 * r, 32);
            }
        }
    }
}

/* The scales and mins of the 8 rows of an x8 block, as 8 bytes per row:
 * *s0 / *m0 hold rows 0, 1, 4, 5 in their 64-bit lanes, *s1 / *m1 rows 2,
 * 3, 6, 7 (k_q4k_unpack_scales on 8 rows at once). */
KT static inline __attribute__((always_inline)) void pk_q4k_scales(const char *o, __m256i *s0, __m256i *s1, __m256i *m0,
                                                                  __m256i *m1) {
    const __m256i k1 = _mm256_set1_epi32(0x3f3f3f3f), k2 = _mm256_set1_epi32(0x0f0f0f0f), k3 = _mm256_set1_epi32(0x03030303);
    const __m256i w0 = _mm256_loadu_si256((const __m256i *)(o + 32));
    const __m256i w1 = _mm256_loadu_si256((const __m256i *)(o + 64));
    const __m256i w2 = _mm256_loadu_si256((const __m256i *)(o + 96));
    const __m256i slo = _mm256_and_si256(w0, k1), mlo = _mm256_and_si256(w1, k1);
    const __m256i shi = _mm256_or_si256(_mm256_and_si256(w2, k2), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w0, 6), k3), 4));
    const __m256i mhi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), k2),
                                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w1, 6), k3), 4));
    *s0 = _mm256_unpacklo_epi32(slo, shi);
    *s1 = _mm256_unpackhi_epi32(slo, shi);
    *m0 = _mm256_unpacklo_epi32(mlo, mhi);
    *m1 = _mm256_unpackhi_epi32(mlo, mhi);
}

/* Min terms of the 8 rows of an x8 block: accm[p] holds rows (pa, pb) =
 * (0,1), (4,5), (2,3), (6,7) for p = 0..3, 4 lanes each, updated as the
 * one-row kernel updates its accm (same products, same FMA per lane). */
KT static inline __attribute__((always_inline)) void pk_q4k_mins(__m256i m0, __m256i m1, __m128i bsum, __m256 dmy, __m256 accm[4]) {
    const __m256i b2 = _mm256_broadcastsi128_si256(bsum);
    const __m256i mm[4] = {_mm256_cvtepu8_epi16(_mm256_castsi256_si128(m0)), _mm256_cvtepu8_epi16(_mm256_extracti128_si256(m0, 1)),
                           _mm256_cvtepu8_epi16(_mm256_castsi256_si128(m1)), _mm256_cvtepu8_epi16(_mm256_extracti128_si256(m1, 1))};
    static const int rows[4][2] = {{0, 1}, {4, 5}, {2, 3}, {6, 7}};
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) {
        const __m256i idx = _mm256_setr_epi32(rows[p][0], rows[p][0], rows[p][0], rows[p][0], rows[p][1], rows[p][1], rows[p][1],
                                              rows[p][1]);
        accm[p] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dmy, idx), _mm256_cvtepi32_ps(_mm256_madd_epi16(mm[p], b2)), accm[p]);
    }
}

/* the f32 min sum of row r from accm (pk_q4k_mins' pairs) */
KT static inline float pk_q4k_minsum(const __m256 accm[4], int r) {
    static const int pair[8] = {0, 0, 2, 2, 1, 1, 3, 3};
    const __m256 v = accm[pair[r]];
    return k_hsum128_avx2(r & 1 ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
}

#ifndef PK_ZMM
/* 8 packed rows x one token: out[r] = dot(row r, a) */
KT static void pk_q4k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[PK_G], accm[4];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) acc[r] = _mm256_setzero_ps();
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) accm[p] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const char *o = w + i * PK_XB;
        if (PK_PF) k_prefetch_lines(o + PK_PF, PK_XB / 64);
        const __m256 yd = _mm256_set1_ps(y[i].d);
        const __m256 dy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o)), yd);
        const __m256 dmy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16))), yd);
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        __m256i s0, s1, m0, m1;
        pk_q4k_scales(o, &s0, &s1, &m0, &m1);
        pk_q4k_mins(m0, m1, bsum, dmy, accm);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < PK_G; r++) {
            /* row r's 8 scale bytes in every 64-bit lane */
            const int q = (r & 1) | ((r & 4) >> 1); /* its 64-bit lane in s0 (r & 2 == 0) or s1 */
            const __m256i sr = _mm256_permutevar8x32_epi32((r & 2) ? s1 : s0, _mm256_setr_epi32(2 * q, 2 * q + 1, 2 * q, 2 * q + 1,
                                                                                              2 * q, 2 * q + 1, 2 * q, 2 * q + 1));
            __m256i sumi = _mm256_setzero_si256();
            _Pragma("GCC unroll 4")
            for (int c = 0; c < 4; c++) {
                const __m256i q4 = _mm256_loadu_si256((const __m256i *)(o + 128 + 256 * c + 32 * r));
                const __m256i p0 = _mm256_maddubs_epi16(_mm256_and_si256(q4, m4), _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
                const __m256i p1 = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4),
                                                        _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
                sumi = ACC_MADD16(sumi, p0, _mm256_shuffle_epi8(sr, _mm256_set1_epi16((short)(0x8000 | (2 * c)))));
                sumi = ACC_MADD16(sumi, p1, _mm256_shuffle_epi8(sr, _mm256_set1_epi16((short)(0x8000 | (2 * c + 1)))));
            }
            acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dy, _mm256_set1_epi32(r)), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) out[r] = k_hsum_avx2(acc[r]) - pk_q4k_minsum(accm, r);
}
#else
/* 8 packed rows x one token on 512-bit vectors: rows 2p and 2p+1 share a
 * vector (their chunks are adjacent in the layout), the activation chunks
 * are broadcast to both halves. Same integer lanes, same f32 steps. */
KT static void pk_q4k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[4];
    __m256 accm[4];
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) { acc[p] = _mm512_setzero_ps(); accm[p] = _mm256_setzero_ps(); }
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const char *o = w + i * PK_XB;
        if (PK_PF) k_prefetch_lines(o + PK_PF, PK_XB / 64);
        const __m256 yd = _mm256_set1_ps(y[i].d);
        const __m256 dy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o)), yd);
        const __m256 dmy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16))), yd);
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        __m256i s0, s1, m0, m1;
        pk_q4k_scales(o, &s0, &s1, &m0, &m1);
        pk_q4k_mins(m0, m1, bsum, dmy, accm);
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
                                                        _mm512_castsi256_si512((p & 1) ? s1 : s0));
            __m512i sumi = _mm512_setzero_si512();
            _Pragma("GCC unroll 4")
            for (int c = 0; c < 4; c++) {
                const __m512i q4 = _mm512_loadu_si512((const void *)(o + 128 + 256 * c + 64 * p));
                const __m512i lo = _mm512_and_si512(q4, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q4, 4), m4);
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(lo, alo[c]), _mm512_shuffle_epi8(sp, _mm512_set1_epi16((short)(0x8000 | (2 * c)))));
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(hi, ahi[c]),
                                           _mm512_shuffle_epi8(sp, _mm512_set1_epi16((short)(0x8000 | (2 * c + 1)))));
            }
            const __m512 dyp = _mm512_permutexvar_ps(_mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                                                                       2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                                                       2 * p + 1),
                                                     _mm512_castps256_ps512(dy));
            acc[p] = _mm512_fmadd_ps(dyp, _mm512_cvtepi32_ps(sumi), acc[p]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) {
        const __m256 lo = _mm512_castps512_ps256(acc[p]);
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1));
        out[2 * p] = k_hsum_avx2(lo) - pk_q4k_minsum(accm, 2 * p);
        out[2 * p + 1] = k_hsum_avx2(hi) - pk_q4k_minsum(accm, 2 * p + 1);
    }
}
#endif

/* The calling thread's buffer for unpacked rows (at least `bytes`), NULL
 * if it cannot be had; kept for the thread's life, grown when needed. */
static void *pk_buffer(size_t bytes) {
    static _Thread_local void *buf;
    static _Thread_local size_t cap;
    if (cap < bytes) {
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes) != 0) return NULL;
        free(buf);
        buf = p;
        cap = bytes;
    }
    return buf;
}

/* ---- Q6_K, groups of 8 rows. One x8 block (8 * 210 = 1680 bytes):
 *   [   0,   16)  d of rows 0..7 (f16)
 *   [  16,  144)  the 16 scales of row r at 16 + 16r
 *   [ 144, 1680)  quants: half h (elements 128h ..), row pair p (rows 2p,
 *                 2p+1), part m at 144 + 768h + 192p + 64m + 32s for row
 *                 2p+s: m = 0 ql[64h .. +32), m = 1 ql[64h+32 .. +32),
 *                 m = 2 qh[32h .. +32)
 * so a row pair's parts are 64-byte vectors (PK_ZMM) and the pair's scales
 * one 32-byte load. Per row the integer lanes (k_q6k_quants_avx2's 6-bit
 * quants, the -32 offset folded as 32 * sum scale * bsum, scales 2j / 2j+1
 * on lanes 0..3 / 4..7) and the f32 steps are those of the set's dot. ---- */
#define PK6_XB (PK_G * (int64_t)sizeof(k_block_q6_k))

static inline size_t pk6_off(int h, int r, int m) { return 144 + 768 * h + 192 * (r / 2) + 64 * m + 32 * (r % 2); }

__attribute__((unused)) static void pk_q6k_pack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QKK;
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        const char *s = (const char *)src + (size_t)g * row_bytes;
        char *d = (char *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++) {
            char *o = d + b * PK6_XB;
            for (int r = 0; r < PK_G; r++) {
                const k_block_q6_k *x = (const k_block_q6_k *)(s + (size_t)r * row_bytes) + b;
                memcpy(o + 2 * r, &x->d, 2);
                memcpy(o + 16 + 16 * r, x->scales, 16);
                for (int h = 0; h < 2; h++) {
                    memcpy(o + pk6_off(h, r, 0), x->ql + 64 * h, 32);
                    memcpy(o + pk6_off(h, r, 1), x->ql + 64 * h + 32, 32);
                    memcpy(o + pk6_off(h, r, 2), x->qh + 32 * h, 32);
                }
            }
        }
    }
}

static void pk_q6k_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QKK;
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        const char *s = (const char *)src + (size_t)g * row_bytes;
        char *d = (char *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++) {
            const char *o = s + b * PK6_XB;
            for (int r = 0; r < PK_G; r++) {
                k_block_q6_k *x = (k_block_q6_k *)(d + (size_t)r * row_bytes) + b;
                memcpy(&x->d, o + 2 * r, 2);
                memcpy(x->scales, o + 16 + 16 * r, 16);
                for (int h = 0; h < 2; h++) {
                    memcpy(x->ql + 64 * h, o + pk6_off(h, r, 0), 32);
                    memcpy(x->ql + 64 * h + 32, o + pk6_off(h, r, 1), 32);
                    memcpy(x->qh + 32 * h, o + pk6_off(h, r, 2), 32);
                }
            }
        }
    }
}

/* the 4 quant vectors of k_q6k_quants_avx2 from the parts L0, L1, H (any width) */
#define PK6_QUANTS(W, L0, L1, H, q)                                                                                             \
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

#ifndef PK_ZMM
KT static void pk_q6k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc[PK_G];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) acc[r] = _mm256_setzero_ps();
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
                PK6_QUANTS(256, L0, L1, H, q);
                const int8_t *qa = y[i].qs + 128 * h;
                _Pragma("GCC unroll 4")
                for (int k = 0; k < 4; k++) {
                    const int j = 4 * h + k;
                    const __m128i shuf = _mm_set_epi64x(0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j));
                    const __m256i sv = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
                    const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(qa + 32 * k)));
                    sumi = ACC_MADD16(sumi, p, sv);
                }
            }
            acc[r] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dy, _mm256_set1_epi32(r)), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) out[r] = k_hsum_avx2(acc[r]);
}
#else
/* two rows per 512-bit vector: lanes 0..7 row 2p, 8..15 row 2p+1 */
KT static void pk_q6k_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m512 acc[4];
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) acc[p] = _mm512_setzero_ps();
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
                PK6_QUANTS(512, L0, L1, H, q);
                _Pragma("GCC unroll 4")
                for (int k = 0; k < 4; k++) {
                    const int j = 4 * h + k;
                    const __m256i shuf = _mm256_set_epi64x(0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j),
                                                           0x0101010101010101LL * (2 * j + 1), 0x0101010101010101LL * (2 * j));
                    const __m512i sv = _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(sc, shuf));
                    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[k], av[j]), sv);
                }
            }
            const __m512 dyp = _mm512_permutexvar_ps(_mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                                                                       2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                                                       2 * p + 1),
                                                     _mm512_castps256_ps512(dy));
            acc[p] = _mm512_fmadd_ps(dyp, _mm512_cvtepi32_ps(sumi), acc[p]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) {
        out[2 * p] = k_hsum_avx2(_mm512_castps512_ps256(acc[p]));
        out[2 * p + 1] = k_hsum_avx2(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1)));
    }
}
#endif

/* ---- Q8_0, groups of 8 rows. One x8 block (8 * 34 = 272 bytes): d of
 * rows 0..7 (f16), then the 32 quants of row r at 16 + 32r (a row pair's
 * quants one 64-byte vector). Per row: one 8-lane f32 accumulator, per
 * block fma(d_w * d_a, lane sums of 4 products) in block order, then
 * k_hsum_avx2: the order of the set's rows4 / dot (dot_q32_simd.h). ---- */
#define PK8_XB (PK_G * (int64_t)sizeof(k_block_q8_0))
/* Q8_0's gemv prefetches 8 x8 blocks ahead (5 lines each): out of cache
 * (BenchmarkMatVecPacked big, AVX-512, interleaved rounds, packed /
 * unpacked thread-CPU GB/s) none 0.95-1.03x, 2176 bytes 0.98-1.26x (median
 * 1.09x over 4 rounds, 1.12x over 3 others), 1088 1.05x, 4352 0.98x */
#ifndef PK8_PF
#define PK8_PF 2176
#endif

__attribute__((unused)) static void pk_q8_0_pack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QK;
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        const char *s = (const char *)src + (size_t)g * row_bytes;
        char *d = (char *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++) {
            char *o = d + b * PK8_XB;
            for (int r = 0; r < PK_G; r++) {
                const k_block_q8_0 *x = (const k_block_q8_0 *)(s + (size_t)r * row_bytes) + b;
                memcpy(o + 2 * r, &x->d, 2);
                memcpy(o + 16 + 32 * r, x->qs, 32);
            }
        }
    }
}

static void pk_q8_0_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const int64_t nb = n / K_QK;
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        const char *s = (const char *)src + (size_t)g * row_bytes;
        char *d = (char *)dst + (size_t)g * row_bytes;
        for (int64_t b = 0; b < nb; b++) {
            const char *o = s + b * PK8_XB;
            for (int r = 0; r < PK_G; r++) {
                k_block_q8_0 *x = (k_block_q8_0 *)(d + (size_t)r * row_bytes) + b;
                memcpy(&x->d, o + 2 * r, 2);
                memcpy(x->qs, o + 16 + 32 * r, 32);
            }
        }
    }
}

#ifndef PK_ZMM
KT static void pk_q8_0_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m256 acc[PK_G];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < PK_G; r++) acc[r] = _mm256_setzero_ps();
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
#else
/* two rows per 512-bit vector; sign(y, q) as y negated where q < 0 (where
 * q == 0 the product is 0 either way), |q| as unsigned bytes */
KT static void pk_q8_0_gemv8(int64_t n, const char *w, const void *a, float out[PK_G]) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m512 acc[4];
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) acc[p] = _mm512_setzero_ps();
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
            const __m512 dp = _mm512_permutexvar_ps(_mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                                                                      2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                                                      2 * p + 1),
                                                    _mm512_castps256_ps512(dd));
            acc[p] = _mm512_fmadd_ps(dp, _mm512_cvtepi32_ps(s), acc[p]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) {
        out[2 * p] = k_hsum_avx2(_mm512_castps512_ps256(acc[p]));
        out[2 * p + 1] = k_hsum_avx2(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1)));
    }
}
#endif

/* rows per unpacked tile of mm_packed (a multiple of 8) */
#define PK_TILE_ROWS 64

/* k_mm_tile_kernel over packed rows (nr a multiple of 8). One to three
 * tokens: the gemv per token (the set's tile runs its rows4 / dot per token
 * then too, same bits). Four or more: tiles of up to 64 rows unpacked into
 * a per-thread buffer and handed to the set's own tile kernel, which reuses
 * them across the tokens. Returns nothing: a buffer that cannot be had
 * falls back to the gemv per token (same bits). */
typedef void (*pk_gemv_fn)(int64_t n, const char *w, const void *a, float out[PK_G]);
typedef void (*pk_unpack_fn)(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst);

KT static inline __attribute__((always_inline)) void pk_mm(pk_gemv_fn gemv, pk_unpack_fn unpack, k_mm_tile_fn tile, K_MM_TILE_PARAMS) {
    const char *wb = (const char *)w, *ab = (const char *)a;
    if (ntok >= 4) {
        const int64_t rows = nr < PK_TILE_ROWS ? nr : PK_TILE_ROWS;
        void *buf = pk_buffer((size_t)rows * row_bytes);
        if (buf) {
            for (int64_t r = 0; r < nr; r += rows) {
                const int64_t rn = nr - r < rows ? nr - r : rows;
                unpack(n, wb + (size_t)r * row_bytes, row_bytes, rn, buf);
                tile(n, buf, row_bytes, rn, a, a_row_bytes, ntok, y + r, y_stride);
            }
            return;
        }
    }
    for (int64_t t = 0; t < ntok; t++)
        for (int64_t r = 0; r < nr; r += PK_G)
            gemv(n, wb + (size_t)r * row_bytes, ab + (size_t)t * a_row_bytes, y + t * y_stride + r);
}

