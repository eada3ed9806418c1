/* mm_simd.h — the x86 pieces of the k_matmul_q tile kernels that the two
 * sets share (Q5_K x 4 tokens, the Q0 family, the Q4_K / Q6_K weight
 * decoders of the group kernels and their helpers), written once over
 * simd_<isa>_amd64.h's instruction choices (KT, ACC_MADD16, ACC_DOT_U8I8)
 * and included by mm_avx2_amd64.c and mm_avx512_amd64.c, which add their
 * own pieces (the 256-bit and 512-bit Q4_K and Q6_K kernels, some written
 * once in mm_x86.h over their hooks) and run each type's tile through the
 * one driver, k_mm_run (mm_driver.h), as an mm_kernel naming its pieces.
 *
 * Specification: the single-token dots; each piece performs the same
 * per-token operations in the same order as its single-token kernel (the
 * f32 steps of several tokens may share one instruction, lane for lane), so
 * results are bit-identical; it decodes every weight block once per group. */
#ifndef WOOLLY_MM_SIMD_H
#define WOOLLY_MM_SIMD_H

#include "mm_driver.h"

#define NT 4

/* Ends GCC's view of an integer accumulation at v: without it GCC
 * reassociates a group kernel's exact int32 adds into trees whose partial
 * sums outnumber AVX2's 16 vector registers and spill (dot4p_q4_k: 20
 * spills and reloads per block). The sums are the same integers either
 * way, so the bits are too. */
#define MM_CHAIN(v) __asm__("" : "+x"(v))

/* The driver's piece (k_mm_piece_fn) over a set's one row x 4 tokens
 * kernel tok4 (MM_T4), 4 rows x one token kernel rows4 (MM_R4) and
 * one-token dot dot1; MM_X86_PIECE_T4 where there is no rows4. */
#define MM_X86_PIECE(name, tok4, rows4, dot1)                                                                   \
    KT static void name(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a, \
                        size_t a_row_bytes, float *out) {                                                       \
        (void)batch;                                                                                            \
        if (toks == 4) tok4(n, w, a, a_row_bytes, out);                                                         \
        else if (rows == 4) rows4(n, w, row_bytes, a, out);                                                     \
        else out[0] = dot1(n, w, a);                                                                            \
    }
#define MM_X86_PIECE_T4(name, tok4, dot1)                                                                       \
    KT static void name(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a, \
                        size_t a_row_bytes, float *out) {                                                       \
        (void)rows, (void)batch, (void)row_bytes;                                                               \
        if (toks == 4) tok4(n, w, a, a_row_bytes, out);                                                         \
        else out[0] = dot1(n, w, a);                                                                            \
    }

#define ACT(k, T) ((const T *)(a + (size_t)(k) * a_row_bytes))

/* ---- Q4_K and Q5_K (t, a constant at each call): see
 * k_dot_q{4,5}_k_q8_k_avx2. Q5_K adds the 5th bits (bit 2c / 2c+1 of qh[l])
 * and sums its min term in a scalar per token. d, dmin and scales have the
 * same offsets in both blocks. ---- */
KT static inline __attribute__((always_inline)) void dot4_q45k(const int t, int64_t n, const void *w, const char *a,
                                                              size_t a_row_bytes, float out[NT]) {
    const size_t bb = t == K_Q4_K ? sizeof(k_block_q4_k) : sizeof(k_block_q5_k);
    __m256 acc[NT];
    __m128 accm[NT];
    float summs[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) { acc[k] = _mm256_setzero_ps(); accm[k] = _mm_setzero_ps(); summs[k] = 0; }
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const k_block_q4_k *x = (const k_block_q4_k *)((const char *)w + (size_t)i * bb);
        const k_block_q5_k *x5 = (const k_block_q5_k *)x;
        const uint8_t *qs = t == K_Q4_K ? x->qs : x5->qs;
        const __m256i sm = k_q4k_scales_mins16_avx2(x->scales);
        const __m128i mins = _mm256_extracti128_si256(sm, 1);
        const __m256i sc = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
        const float d = k_h2f_avx2(x->d), dmin = k_h2f_avx2(x->dmin);
        const k_block_q8_k *y[NT];
        __m256i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            y[k] = ACT(k, k_block_q8_k) + i;
            if (t == K_Q4_K) {
                const __m256i bs = _mm256_loadu_si256((const __m256i *)y[k]->bsums);
                const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                accm[k] = _mm_fmadd_ps(_mm_set1_ps(dmin * y[k]->d), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum)), accm[k]);
            } else {
                summs[k] = k_q5k_summs_avx2(summs[k], mins, y[k]->bsums, y[k]->d * dmin);
            }
            sumi[k] = _mm256_setzero_si256();
        }
        __m256i hb = t == K_Q5_K ? _mm256_loadu_si256((const __m256i *)x5->qh) : _mm256_setzero_si256();
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i lo, hi;
            k_q45k_chunk_avx2(t, q4, &hb, &lo, &hi);
            const __m256i s0 = k_bcast16_avx2(sc, 2 * c), s1 = k_bcast16_avx2(sc, 2 * c + 1);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++) {
                const int8_t *qa = y[k]->qs + 64 * c;
                const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)qa));
                const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(qa + 32)));
                sumi[k] = ACC_MADD16(sumi[k], p0, s0);
                sumi[k] = ACC_MADD16(sumi[k], p1, s1);
                MM_CHAIN(sumi[k]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++)
        out[k] = t == K_Q4_K ? k_hsum_avx2(acc[k]) - k_hsum128_avx2(accm[k]) : k_hsum_avx2(acc[k]) + summs[k];
}



/* The activation side data of the Q4_K group kernels for nt tokens, per
 * block (64*nt bytes): the 8 bsum pair sums of token k at int16 8k, its d
 * at floats 4k..4k+3 of the second part and 8k..8k+7 of the third (the
 * layout q4k_side4 names; q4k_side8 puts the same after the quants). */
KT static inline __attribute__((always_inline)) void q4k_prep_tokens(const int nt, int64_t n, const char *a,
                                                                   size_t a_row_bytes, void *side) {
    char *blk = (char *)side;
    for (int64_t i = 0; i < n / K_QKK; i++, blk += 64 * nt) {
        int16_t *bsum = (int16_t *)blk;
        float *yd4 = (float *)(blk + 16 * nt), *yd8 = (float *)(blk + 32 * nt);
        for (int k = 0; k < nt; k++) {
            const k_block_q8_k *y = ACT(k, k_block_q8_k) + i;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
            _mm_store_si128((__m128i *)(bsum + 8 * k), _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
            const __m256 dk = _mm256_set1_ps(y->d);
            _mm_store_ps(yd4 + 4 * k, _mm256_castps256_ps128(dk));
            _mm256_store_ps(yd8 + 8 * k, dk);
        }
    }
}

/* One Q4_K block decoded by q4k_wprep for the group kernels (dot4p_q4_k,
 * dot8_q4_k_zmm): quants as bytes, scale words, mins, d and dmin as f32. */
typedef struct {
    uint8_t q[8][32]; /* sub-block j's 32 quants, 0..15 */
    int32_t s[8];     /* sub-block j's scale in both int16 halves */
    int16_t mins[8];  /* the 8 mins */
    float d, dmin;    /* the block's d and dmin as f32 */
    uint8_t pad[8];
} q4k_wx;
_Static_assert(sizeof(q4k_wx) == 320, "q4k_wx is 5 cache lines");
_Static_assert(MM_SIDE_BLOCKS * sizeof(q4k_wx) <= MM_WX_BYTES, "a chunk holds at least one row");

KT static void q4k_wprep(int64_t n, const void *w, size_t row_bytes, int64_t nr, void *wx) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    q4k_wx *o = (q4k_wx *)wx;
    for (int64_t r = 0; r < nr; r++) {
        const k_block_q4_k *x = (const k_block_q4_k *)((const char *)w + (size_t)r * row_bytes);
        for (int64_t i = 0; i < n / K_QKK; i++, o++) {
            const __m256i sm = k_q4k_scales_mins16_avx2(x[i].scales);
            const __m256i sc = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(sm));
            _mm256_store_si256((__m256i *)o->s, _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
            _mm_store_si128((__m128i *)o->mins, _mm256_extracti128_si256(sm, 1));
            _Pragma("GCC unroll 4")
            for (int c = 0; c < 4; c++) {
                const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
                _mm256_store_si256((__m256i *)o->q[2 * c], _mm256_and_si256(q4, m4));
                _mm256_store_si256((__m256i *)o->q[2 * c + 1], _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4));
            }
            o->d = k_h2f_avx2(x[i].d);
            o->dmin = k_h2f_avx2(x[i].dmin);
        }
    }
}

KT static void dot4_q5_k(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    dot4_q45k(K_Q5_K, n, w, a, a_row_bytes, out);
}

/* One Q6_K block decoded by q6k_wprep for the group kernels (dot4p_q6_k,
 * dot8_q6_k_zmm). */
typedef struct {
    uint8_t q[8][32];  /* vector v: quants 32v..32v+31, 0..63 */
    int16_t s[8][16];  /* vector v: scale 2v in lanes 0..7, scale 2v+1 in lanes 8..15 */
    int16_t sc32[16];  /* -32 * scale g */
    float d;           /* the block's d as f32 */
    uint8_t pad[28];
} q6k_wx;
_Static_assert(sizeof(q6k_wx) == 576, "q6k_wx is 9 cache lines");
_Static_assert(MM_SIDE_BLOCKS * sizeof(q6k_wx) <= MM_WX_BYTES, "a chunk holds at least one row");

KT static void q6k_wprep(int64_t n, const void *w, size_t row_bytes, int64_t nr, void *wx) {
    q6k_wx *o = (q6k_wx *)wx;
    for (int64_t r = 0; r < nr; r++) {
        const k_block_q6_k *x = (const k_block_q6_k *)((const char *)w + (size_t)r * row_bytes);
        for (int64_t i = 0; i < n / K_QKK; i++, o++) {
            _Pragma("GCC unroll 2")
            for (int h = 0; h < 2; h++) {
                __m256i q[4];
                k_q6k_quants_avx2(&x[i], h, q);
                _Pragma("GCC unroll 4")
                for (int j = 0; j < 4; j++) _mm256_store_si256((__m256i *)o->q[4 * h + j], q[j]);
            }
            const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
            _mm256_store_si256((__m256i *)o->sc32, _mm256_mullo_epi16(sc16, _mm256_set1_epi16(-32)));
            _Pragma("GCC unroll 8")
            for (int v = 0; v < 8; v++)
                _mm256_store_si256((__m256i *)o->s[v], _mm256_setr_m128i(_mm_set1_epi16((short)x[i].scales[2 * v]),
                                                                          _mm_set1_epi16((short)x[i].scales[2 * v + 1])));
            o->d = k_h2f_avx2(x[i].d);
        }
    }
}

/* ---- the Q0 family (Q8_0, Q4_0, Q5_0; see dot_q32_simd.h): each
 * block's signed quants by its decoder; d is the first field of every block. ---- */
typedef __m256i (*q0_decode_fn)(const char *blk);

KT static inline __m256i dec_q8_0(const char *b) { return _mm256_loadu_si256((const __m256i *)((const k_block_q8_0 *)b)->qs); }
KT static inline __m256i dec_q4_0(const char *b) {
    return _mm256_sub_epi8(k_nibbles32_avx2(((const k_block_q4_0 *)b)->qs), _mm256_set1_epi8(8));
}
KT static inline __m256i dec_q5_0(const char *b) {
    const k_block_q5_0 *x = (const k_block_q5_0 *)b;
    const __m256i hi = _mm256_and_si256(k_bits32_avx2(x->qh), _mm256_set1_epi8(0x10));
    return _mm256_sub_epi8(_mm256_or_si256(k_nibbles32_avx2(x->qs), hi), _mm256_set1_epi8(16));
}

/* 1 row x 4 tokens: one accumulator per token here; the single-token
 * kernels use two, so these differ from them in f32 summation order only. */
KT static inline __attribute__((always_inline)) void dot4_q0(q0_decode_fn dec, size_t bsize, int64_t n, const void *w,
                                                            const char *a, size_t a_row_bytes, float out[NT]) {
    __m256 acc[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const char *blk = (const char *)w + (size_t)i * bsize;
        const __m256i qx = dec(blk);
        const __m256i ax = _mm256_sign_epi8(qx, qx);
        k_half dh;
        __builtin_memcpy(&dh, blk, 2);
        const float d = k_h2f_avx2(dh);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            const k_block_q8_0 *y = ACT(k, k_block_q8_0) + i;
            const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)y->qs), qx);
            const __m256i s = ACC_DOT_U8I8(_mm256_setzero_si256(), ax, sy);
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * k_h2f_avx2(y->d)), _mm256_cvtepi32_ps(s), acc[k]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) out[k] = k_hsum_avx2(acc[k]);
}

KT static void dot4_q8_0(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    dot4_q0(dec_q8_0, sizeof(k_block_q8_0), n, w, a, a_row_bytes, out);
}
KT static void dot4_q4_0(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    dot4_q0(dec_q4_0, sizeof(k_block_q4_0), n, w, a, a_row_bytes, out);
}
KT static void dot4_q5_0(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    dot4_q0(dec_q5_0, sizeof(k_block_q5_0), n, w, a, a_row_bytes, out);
}

/* ---- 4 rows x 1 token for the Q0 family (MatVec): each row keeps its own
 * single accumulator in the reference order (see dot_q32_simd.h); four
 * independent chains hide the FMA latency, and each activation block is
 * loaded once for the four rows. d is the first field of every Q0 block. ---- */
KT static inline __attribute__((always_inline)) void rows4_q0(q0_decode_fn dec, size_t bsize, int64_t n, const char *w,
                                                             size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const __m256i ya = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const float dy = k_h2f_avx2(y[i].d);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            const char *blk = w + (size_t)r * row_bytes + (size_t)i * bsize;
            /* the same block of the next group of 4 rows: four short row
             * streams defeat the hardware prefetcher. Out of cache (68 MB
             * Q8_0 matrix, one thread) 11 -> 42 GB/s; Q4_0 7 -> 16 GB/s. */
            _mm_prefetch(blk + 4 * row_bytes, _MM_HINT_T0);
            const __m256i q = dec(blk);
            const __m256i s = ACC_DOT_U8I8(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(ya, q));
            k_half dh;
            __builtin_memcpy(&dh, blk, 2);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(dh) * dy), _mm256_cvtepi32_ps(s), acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]);
}

KT static void rows4_q8_0(int64_t n, const char *w, size_t rb, const void *a, float out[4]) {
    rows4_q0(dec_q8_0, sizeof(k_block_q8_0), n, w, rb, a, out);
}
KT static void rows4_q4_0(int64_t n, const char *w, size_t rb, const void *a, float out[4]) {
    rows4_q0(dec_q4_0, sizeof(k_block_q4_0), n, w, rb, a, out);
}
KT static void rows4_q5_0(int64_t n, const char *w, size_t rb, const void *a, float out[4]) {
    rows4_q0(dec_q5_0, sizeof(k_block_q5_0), n, w, rb, a, out);
}

/* Prefetch distance of the MatVec row kernels, in rows: the next 4-row
 * group. Two groups ahead was chosen on TinyLlama (short rows); on
 * granite-8b (rows up to 12,800 weights, 7-10 KB) it runs ahead of what
 * the cache keeps: tg32 -t 2, one group vs two, interleaved pairs on a
 * 2-core Xeon: avx512 4.08/3.92/3.95 vs 3.82/3.87/3.80, avx2 3.68 vs
 * 3.49; four groups 3.64/3.62; TinyLlama tg64 31.0/32.2 vs 31.0/31.6. */
#ifndef MM_PF_Q4K
#define MM_PF_Q4K 4
#endif
#ifndef MM_PF_Q6K
#define MM_PF_Q6K 4
#endif

/* Q4_K, 4 rows x 1 token, the start of row x's block: prefetch the same
 * block MM_PF_Q4K rows ahead (see rows4_q0 and above), fold the min term into accm and
 * return the scales (lanes 0..7) and mins (8..15) as int16. */
KT static inline __attribute__((always_inline)) __m256i rows4_q4k_head(const k_block_q4_k *x, size_t row_bytes, __m128i bsum,
                                                                      float yd, __m128 *accm) {
    const char *nx = (const char *)x + MM_PF_Q4K * row_bytes;
    _mm_prefetch(nx, _MM_HINT_T0);
    _mm_prefetch(nx + 64, _MM_HINT_T0);
    _mm_prefetch(nx + 128, _MM_HINT_T0);
    const __m256i sm = k_q4k_scales_mins16_avx2(x->scales);
    const __m128i pm = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), bsum);
    *accm = _mm_fmadd_ps(_mm_set1_ps(k_h2f_avx2(x->dmin) * yd), _mm_cvtepi32_ps(pm), *accm);
    return sm;
}

#endif
