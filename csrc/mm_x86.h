/* mm_x86.h — the Q4_K and Q6_K bodies both x86 sets share (4 rows x one
 * token, Q6_K one row x 4 tokens), the pieces of every type and the
 * K-quant mm_kernels, written once over per-ISA hooks: included by
 * mm_<isa>_amd64.c after mm_simd.h and its hooks
 *   MM_ISA                         the name suffix (avx2, avx512)
 *   dot4_q4_k(...)                 Q4_K, one row x 4 tokens
 *   mm_q4k_group, mm_q6k_group     the Q4_K / Q6_K group kernels (mm_group)
 *   mm_wi, mm_wi_fold(v)           a row's int32 lane sums (256 or 512 bits)
 *                                  and their fold to k_dot_q4_k_q8_k's 8 lanes
 *   mm_wi_from(start), mm_wi_onto(v, start)   lane sums begun from 8 lanes
 *                                  start, and folded onto them at the end
 *   q4k_rconsts, q4k_rows_consts(), q4k_rows_scales(sm),
 *   q4k_rows_chunk(kc, c, qa, x, sc, sumi)   rows4_q4_k's per-ISA steps
 *   q6k_racts, q6k_racts_load(qs), q6k_row_sums(x, av, start)
 *                                  rows4_q6_k's: the token's quants, one
 *                                  row's 8 lane sums from start
 *   q6k_tsc, q6k_tok4_scales(x), q6k_tok4_sums(x, sc, y, sumi)
 *                                  dot4_q6_k's: a block's scales as the sums
 *                                  take them, sumi[k] += token k's lane sums
 * Each hook keeps the integer lanes exact and the f32 steps are written
 * here once, so both sets give the single-token dots' bits. */
#ifndef WOOLLY_MM_X86_H
#define WOOLLY_MM_X86_H

#define MM_CAT_(a, b) a##b
#define MM_CAT(a, b) MM_CAT_(a, b)

/* ---- Q4_K, 4 rows x 1 token (MatVec): the activation loads and bsum
 * pairs are shared by the 4 rows; per row the operations and their order are
 * those of the single-row kernel (same bits). ---- */
KT static void rows4_q4_k(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const q4k_rconsts kc = q4k_rows_consts();
    __m256 acc[4] = {0};
    __m128 accm[4] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float yd = y[i].d;
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const k_block_q4_k *x[4];
        mm_wi sc[4], sumi[4];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            x[r] = (const k_block_q4_k *)(w + (size_t)r * row_bytes) + i;
            sc[r] = q4k_rows_scales(rows4_q4k_head(x[r], row_bytes, bsum, yd, &accm[r]));
            sumi[r] = (mm_wi){0};
        }
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) q4k_rows_chunk(kc, c, y[i].qs, x, sc, sumi);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[r]->d) * yd), _mm256_cvtepi32_ps(mm_wi_fold(sumi[r])), acc[r]);
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]) - k_hsum128_avx2(accm[r]);
}

/* ---- Q6_K, 4 rows x 1 token (MatVec): per row the operations and their
 * order are those of the single-row kernel (same bits); four independent
 * rows per pass, the next row group prefetched (see rows4_q0). ---- */
KT static void rows4_q6_k(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc[4] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const q6k_racts av = q6k_racts_load(y[i].qs);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            const k_block_q6_k *x = (const k_block_q6_k *)(w + (size_t)r * row_bytes) + i;
            k_prefetch_lines((const char *)x + MM_PF_Q6K * row_bytes, 4);
            const __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales)), bs);
            const __m256i start = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
            const __m256i s8 = q6k_row_sums(x, av, start);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x->d) * y[i].d), _mm256_cvtepi32_ps(s8), acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]);
}

/* ---- Q6_K, one row x 4 tokens: see k_dot_q6_k_q8_k_<isa>; each token's
 * lanes start at -32 * (scales . bsums) ---- */
KT static void dot4_q6_k(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    __m256 acc[NT] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const q6k_tsc sc = q6k_tok4_scales(&x[i]);
        const k_block_q8_k *y[NT];
        __m256i start[NT];
        mm_wi sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            y[k] = ACT(k, k_block_q8_k) + i;
            const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[k]->bsums));
            start[k] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
            sumi[k] = mm_wi_from(start[k]);
        }
        q6k_tok4_sums(&x[i], sc, y, sumi);
        const float d = k_h2f_avx2(x[i].d);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(mm_wi_onto(sumi[k], start[k])), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) out[k] = k_hsum_avx2(acc[k]);
}

/* ---- the pieces, and the K-quant kernels (the set adds its Q0 ones) ---- */
MM_X86_PIECE(q4k_piece, dot4_q4_k, rows4_q4_k, MM_CAT(k_dot_q4_k_q8_k_, MM_ISA))
MM_X86_PIECE_T4(q5k_piece, dot4_q5_k, MM_CAT(k_dot_q5_k_q8_k_, MM_ISA))
MM_X86_PIECE(q6k_piece, dot4_q6_k, rows4_q6_k, MM_CAT(k_dot_q6_k_q8_k_, MM_ISA))
MM_X86_PIECE(q8_0_piece, dot4_q8_0, rows4_q8_0, MM_CAT(k_dot_q8_0_q8_0_, MM_ISA))
MM_X86_PIECE(q4_0_piece, dot4_q4_0, rows4_q4_0, MM_CAT(k_dot_q4_0_q8_0_, MM_ISA))
MM_X86_PIECE(q5_0_piece, dot4_q5_0, rows4_q5_0, MM_CAT(k_dot_q5_0_q8_0_, MM_ISA))

static const mm_kernel mm_q4_k = {.piece = q4k_piece, .shapes = MM_R4 | MM_T4, .group = &mm_q4k_group};
static const mm_kernel mm_q5_k = {.piece = q5k_piece, .shapes = MM_T4};
static const mm_kernel mm_q6_k = {.piece = q6k_piece, .shapes = MM_R4 | MM_T4, .group = &mm_q6k_group};

#endif
