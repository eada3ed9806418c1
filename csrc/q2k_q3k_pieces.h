/* q2k_q3k_pieces.h — the Q2_K / Q3_K tile (R rows x T tokens), its pieces
 * (the driver's interface, mm_driver.h), the one-token dot and the
 * mm_kernels, the same for AVX2 and AVX-512: included by
 * q2k_q3k_<isa>_amd64.c after its hooks
 *   Q23_TARGET                 its ISA's function attribute
 *   Q23_T8                     1 where the tile also runs 8 tokens at a time
 *                              (AVX-512), else 0
 *   Q23_TMAX, Q23_STEPS        most tokens of a tile (4 or 8), steps per block
 *   q23_wi                     a (row, token)'s int32 lane sums
 *   q23_wblk, q23_wblk_make(type, blk)   a block's per-block weight inputs
 *   q23_w, q23_wts(type, blk, wb, s)     step s's weights, made once per row
 *   q23_acc(type, sumi, w, qs, s)        sumi + step s's lane sums against a
 *                              token's quants
 *   q23_fold(sumi)             the lanes folded to the reference's 8
 * (all always_inline; type, R and T constants at every call). */

/* out[r * T + t] = dot(row r, token t). Rows are row_bytes apart, tokens
 * a_row_bytes apart; per (row, token) the operations of the reference: its
 * exact integer lanes, then its f32 steps. */
Q23_TARGET static inline __attribute__((always_inline)) void q23_tile(const int type, const int R, const int T, int64_t n,
                                                                      const char *w, size_t row_bytes, const char *a,
                                                                      size_t a_row_bytes, float *out) {
    const size_t bsz = type == K_Q2_K ? sizeof(k_block_q2_k) : sizeof(k_block_q3_k);
    __m256 acc[Q23_TMAX] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const k_block_q8_k *y[Q23_TMAX];
        _Pragma("GCC unroll 8")
        for (int t = 0; t < T; t++) y[t] = (const k_block_q8_k *)(a + (size_t)t * a_row_bytes) + i;
        _Pragma("GCC unroll 4")
        for (int r = 0; r < R; r++) {
            const char *blk = w + (size_t)r * row_bytes + (size_t)i * bsz;
            /* four short row streams: help the prefetcher (see mm_simd.h rows4_q0) */
            if (R > 1) {
                _mm_prefetch(blk + Q23_PF_ROWS * row_bytes, _MM_HINT_T0);
                _mm_prefetch(blk + Q23_PF_ROWS * row_bytes + 64, _MM_HINT_T0);
            }
            const q23_wblk wb = q23_wblk_make(type, blk);
            const float d = q23_block_start(type, blk, T, y, acc + r * T);
            q23_wi sumi[Q23_TMAX];
            _Pragma("GCC unroll 8")
            for (int t = 0; t < T; t++) sumi[t] = (q23_wi){0};
            _Pragma("GCC unroll 8")
            for (int s = 0; s < Q23_STEPS; s++) {
                const q23_w wq = q23_wts(type, blk, wb, s);
                _Pragma("GCC unroll 8")
                for (int t = 0; t < T; t++) sumi[t] = q23_acc(type, sumi[t], wq, y[t]->qs, s);
            }
            _Pragma("GCC unroll 8")
            for (int t = 0; t < T; t++)
                acc[r * T + t] = _mm256_fmadd_ps(_mm256_set1_ps(y[t]->d * d), _mm256_cvtepi32_ps(q23_fold(sumi[t])), acc[r * T + t]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int j = 0; j < R * T; j++) out[j] = k_hsum_avx2(acc[j]);
}

Q23_TARGET static inline __attribute__((always_inline)) float q23_dot(const int type, int64_t n, const void *w,
                                                                      const void *a) {
    float o;
    q23_tile(type, 1, 1, n, (const char *)w, 0, (const char *)a, 0, &o);
    return o;
}

/* (1, 8) where Q23_T8, (1, 4), (4, 1) and (1, 1); one order, batch does not matter */
Q23_TARGET static inline __attribute__((always_inline)) void q23_piece(const int type, int rows, int toks, int64_t n,
                                                                       const char *w, size_t row_bytes, const char *a,
                                                                       size_t a_row_bytes, float *out) {
    if (Q23_T8 && toks == 8) q23_tile(type, 1, 8, n, w, 0, a, a_row_bytes, out);
    else if (toks == 4) q23_tile(type, 1, 4, n, w, 0, a, a_row_bytes, out);
    else if (rows == 4) q23_tile(type, 4, 1, n, w, row_bytes, a, 0, out);
    else q23_tile(type, 1, 1, n, w, 0, a, 0, out);
}
Q23_TARGET static void q2k_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *out) {
    (void)batch;
    q23_piece(K_Q2_K, rows, toks, n, w, row_bytes, a, a_row_bytes, out);
}
Q23_TARGET static void q3k_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *out) {
    (void)batch;
    q23_piece(K_Q3_K, rows, toks, n, w, row_bytes, a, a_row_bytes, out);
}
static const mm_kernel q2k_kernel = {.piece = q2k_piece, .shapes = MM_R4 | MM_T4 | (Q23_T8 ? MM_T8 : 0)};
static const mm_kernel q3k_kernel = {.piece = q3k_piece, .shapes = MM_R4 | MM_T4 | (Q23_T8 ? MM_T8 : 0)};

