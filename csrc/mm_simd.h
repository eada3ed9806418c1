/* mm_simd.h — the pieces of the k_matmul_q tile kernels (one weight row x a
 * group of 4 or 8 tokens, 4 rows x one token) and their driver mm_tile, as
 * static functions included by mm_<isa>_amd64.c after simd_<isa>_amd64.h
 * (KT, ACC_MADD16, ACC_DOT_U8I8; MM_ZMM adds the 512-bit pieces); each .c
 * file writes out its k_mm_*_<isa> as one mm_tile call naming its pieces.
 * Specification: the single-token dots; each group kernel performs the same
 * per-token operations in the same order as its single-token kernel (the
 * f32 steps of several tokens may share one instruction, lane for lane), so
 * results are bit-identical; it decodes every weight block once per group.
 *
 * The generic driver (k_matmul_q in dispatch.c) hands a tile of 16 to 64
 * weight rows to mm_tile(): for each group of tokens every row of the tile
 * is run against them, so the tile's rows stay in L2 across all tokens and
 * the group's activation rows stay in L1 across the tile. The group
 * kernels (Q4_K and Q6_K, AVX2 and AVX-512) decode the weights
 * first: the tile in chunks of rows whose decoded form fits a per-thread
 * buffer in L2, which every group of tokens reads instead of unpacking
 * nibbles and scales again. */

#define NT 4

typedef void (*dot4_fn)(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]);
/* A group kernel: wprep decodes what depends on the weights alone (per
 * block, wx_block bytes; row r of the chunk at r * blocks * wx_block) once
 * per chunk of rows; prep writes what depends on the activations alone
 * (per block, side_block bytes) once per group of nt tokens and chunk; dot
 * then runs one decoded row against the group with them, a range of blocks
 * at a time: out[k] = dot(row, token k), k < nt, after the last range. */
#define MM_SIDE_WX 2560          /* side_block at most */
#define MM_SIDE_BLOCKS 64        /* rows up to 64 blocks (16384 K-quant elements); longer ones skip the group kernel */
#define MM_WX_BYTES (384 * 1024) /* decoded weights of a chunk of rows */
#define MM_SEG_BLOCKS 8          /* blocks per pass over a chunk's rows: 8 tokens' side data of 8 blocks stay in L1 */
#define MM_GROUP_ROWS 64         /* rows per chunk at most (their accumulators are on the stack) */
#define MM_ST_FLOATS 96          /* st_floats at most */
typedef struct {
    int nt; /* tokens per group, at most 8 */
    size_t side_block;
    void (*prep)(int64_t n, const char *a, size_t a_row_bytes, void *side);
    /* blocks [i0, i1) of nb (w, a, side point at block i0); st: the row's
     * st_floats f32 accumulators, carried from one range to the next (read
     * when i0 > 0, written when i1 < nb); out written when i1 == nb */
    void (*dot)(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes, const void *side,
                float *st, float *out);
    int st_floats; /* at most MM_ST_FLOATS, a multiple of 16 (aligned loads) */
    size_t wx_block;
    void (*wprep)(int64_t n, const void *w, size_t row_bytes, int64_t nr, void *wx);
} mm_group;

/* The calling thread's buffer for decoded weights and side data
 * (MM_WX_BYTES + MM_SIDE_BLOCKS * MM_SIDE_WX), NULL if it cannot be had:
 * allocated on the thread's first use and kept for its life, so worker
 * threads neither allocate per call nor share one. */
static unsigned char *mm_group_buffer(void) {
    static _Thread_local unsigned char *buf;
    if (!buf) {
        void *p = NULL;
        if (posix_memalign(&p, 64, MM_WX_BYTES + MM_SIDE_BLOCKS * MM_SIDE_WX) == 0) buf = (unsigned char *)p;
    }
    return buf;
}

/* Whole groups of tokens through grp (rows of 1 to MM_SIDE_BLOCKS blocks),
 * the rows in chunks whose decoded weights fit wx (MM_WX_BYTES), and each
 * row in passes of MM_SEG_BLOCKS blocks, so a group's side data of a pass
 * stays in L1 across the chunk's rows; returns the number of tokens done. */
static int64_t mm_groups(const mm_group *grp, int64_t n, const char *wb, size_t row_bytes, int64_t nr, const char *ab,
                         size_t a_row_bytes, int64_t ntok, float *y, int64_t y_stride, unsigned char *wx, unsigned char *side) {
    _Alignas(64) float st[MM_GROUP_ROWS * MM_ST_FLOATS]; /* 24 KB */
    const int g = grp->nt;
    const int64_t nb = n / K_QKK;
    const size_t wx_row = (size_t)nb * grp->wx_block;
    int64_t chunk = (int64_t)(MM_WX_BYTES / wx_row);
    if (chunk > MM_GROUP_ROWS) chunk = MM_GROUP_ROWS;
    if (chunk < nr) { /* equal chunks: each chunk's activation prep serves as many rows */
        const int64_t nchunks = (nr + chunk - 1) / chunk;
        chunk = (nr + nchunks - 1) / nchunks;
    }
    const size_t sb = grp->side_block;
    for (int64_t r0 = 0; r0 < nr; r0 += chunk) {
        const int64_t rn = nr - r0 < chunk ? nr - r0 : chunk;
        const char *wr = wb + (size_t)r0 * row_bytes;
        grp->wprep(n, wr, row_bytes, rn, wx);
        for (int64_t t = 0; t + g <= ntok; t += g) {
            const char *at = ab + (size_t)t * a_row_bytes;
            grp->prep(n, at, a_row_bytes, side);
            for (int64_t i0 = 0; i0 < nb; i0 += MM_SEG_BLOCKS) {
                const int64_t i1 = nb - i0 < MM_SEG_BLOCKS ? nb : i0 + MM_SEG_BLOCKS;
                for (int64_t r = 0; r < rn; r++) {
                    float o[8];
                    grp->dot(i0, i1, nb, wx + (size_t)r * wx_row + (size_t)i0 * grp->wx_block,
                             at + (size_t)i0 * sizeof(k_block_q8_k), a_row_bytes, side + (size_t)i0 * sb, st + r * grp->st_floats, o);
                    if (i1 == nb)
                        for (int k = 0; k < g; k++) y[(t + k) * y_stride + r0 + r] = o[k];
                }
            }
        }
    }
    return ntok / g * g;
}

/* 4 weight rows (row_bytes apart) x one token: out[r] = dot(row r, a) */
typedef void (*rows4_fn)(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]);

/* Tokens in groups of grp->nt through grp (NULL: none), then in groups of
 * NT through dot4 (NULL: none); the remaining tokens (all of them for
 * MatVec, which calls with ntok = 1) row by row, four rows at a time
 * through rows4 where given. */
static void mm_tile(const mm_group *grp, dot4_fn dot4, rows4_fn rows4, k_dot_fn dot1, int64_t n, const void *w,
                    size_t row_bytes, int64_t nr, const void *a, size_t a_row_bytes, int64_t ntok, float *y, int64_t y_stride) {
    const char *wb = (const char *)w, *ab = (const char *)a;
    int64_t t = 0;
    if (grp && n >= K_QKK && n / K_QKK <= MM_SIDE_BLOCKS && ntok >= grp->nt) {
        unsigned char *buf = mm_group_buffer(); /* on failure the tokens go through dot4 below */
        if (buf) t = mm_groups(grp, n, wb, row_bytes, nr, ab, a_row_bytes, ntok, y, y_stride, buf, buf + MM_WX_BYTES);
    }
    if (dot4) {
        for (; t + NT <= ntok; t += NT) {
            const char *at = ab + (size_t)t * a_row_bytes;
            for (int64_t r = 0; r < nr; r++) {
                float o[NT];
                dot4(n, wb + (size_t)r * row_bytes, at, a_row_bytes, o);
                _Pragma("GCC unroll 4")
                for (int k = 0; k < NT; k++) y[(t + k) * y_stride + r] = o[k];
            }
        }
    }
    for (; t < ntok; t++) {
        const char *at = ab + (size_t)t * a_row_bytes;
        float *yt = y + t * y_stride;
        int64_t r = 0;
        if (rows4) {
            for (; r + 4 <= nr; r += 4) {
                float o[4];
                rows4(n, wb + (size_t)r * row_bytes, row_bytes, at, o);
                for (int k = 0; k < 4; k++) yt[r + k] = o[k];
            }
        }
        for (; r < nr; r++) yt[r] = dot1(n, wb + (size_t)r * row_bytes, at);
    }
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

#ifndef MM_ZMM /* the 512-bit build has its own */
KT static void dot4_q4_k(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    dot4_q45k(K_Q4_K, n, w, a, a_row_bytes, out);
}
#endif

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

#ifndef MM_ZMM /* the 256-bit build's group kernel (MM_ZMM has q4k_group8) */
/* ---- Q4_K x 4 tokens on decoded weights (mm_group): the per-token
 * operations of dot4_q4_k, with the min terms of two tokens in one register
 * (4 lanes each), the quants, scale words, mins, d and dmin from q4k_wprep
 * and the activation-only parts (bsum pair sums, d broadcasts) from
 * q4k_prep4, so the bits are the same. ---- */
typedef struct {
    int16_t bsum[2][16]; /* pair p: token 2p+j's 8 bsum pair sums in lanes 8j..8j+7 */
    float yd4[2][8];     /* pair p: token 2p+j's d in lanes 4j..4j+3 */
    float yd8[4][8];     /* token k's d in all 8 lanes */
} q4k_side4;
_Static_assert(sizeof(q4k_side4) == 64 * 4 && sizeof(q4k_side4) <= MM_SIDE_WX, "q4k_side4 is q4k_prep_tokens' 4-token block");

KT static void q4k_prep4(int64_t n, const char *a, size_t a_row_bytes, void *side) {
    q4k_prep_tokens(4, n, a, a_row_bytes, side);
}

KT static void dot4p_q4_k(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes,
                          const void *side, float *st, float *out) {
    const q4k_wx *x = (const q4k_wx *)w;
    const q4k_side4 *sd = (const q4k_side4 *)side;
    __m256 acc[NT], accm[2]; /* accm[p]: tokens 2p, 2p+1 (4 lanes each); st: acc, then accm */
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = i0 ? _mm256_load_ps(st + 8 * k) : _mm256_setzero_ps();
    accm[0] = i0 ? _mm256_load_ps(st + 32) : _mm256_setzero_ps();
    accm[1] = i0 ? _mm256_load_ps(st + 40) : _mm256_setzero_ps();
    const k_block_q8_k *y[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) y[k] = ACT(k, k_block_q8_k);
    for (int64_t i = 0; i < i1 - i0; i++, sd++) {
        const __m256i mins = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)x[i].mins));
        const float d = x[i].d, dmin = x[i].dmin;
        _Pragma("GCC unroll 2")
        for (int p = 0; p < 2; p++) {
            const __m256i pm = _mm256_madd_epi16(mins, _mm256_load_si256((const __m256i *)sd->bsum[p]));
            accm[p] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_load_ps(sd->yd4[p])), _mm256_cvtepi32_ps(pm), accm[p]);
        }
        __m256i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) sumi[k] = _mm256_setzero_si256();
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            const __m256i lo = _mm256_load_si256((const __m256i *)x[i].q[2 * c]), hi = _mm256_load_si256((const __m256i *)x[i].q[2 * c + 1]);
            const __m256i s0 = _mm256_set1_epi32(x[i].s[2 * c]), s1 = _mm256_set1_epi32(x[i].s[2 * c + 1]);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++) {
                const int8_t *qa = y[k][i].qs + 64 * c;
                const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)qa));
                const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(qa + 32)));
                sumi[k] = ACC_MADD16(sumi[k], p0, s0);
                sumi[k] = ACC_MADD16(sumi[k], p1, s1);
            }
        }
        const __m256 dv = _mm256_set1_ps(d);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(dv, _mm256_load_ps(sd->yd8[k])), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
    }
    if (i1 < nb) {
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) _mm256_store_ps(st + 8 * k, acc[k]);
        _mm256_store_ps(st + 32, accm[0]);
        _mm256_store_ps(st + 40, accm[1]);
        return;
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) {
        const __m128 mk = k % 2 ? _mm256_extractf128_ps(accm[k / 2], 1) : _mm256_castps256_ps128(accm[k / 2]);
        out[k] = k_hsum_avx2(acc[k]) - k_hsum128_avx2(mk);
    }
}
static const mm_group q4k_group4 = {4, sizeof(q4k_side4), q4k_prep4, dot4p_q4_k, 48, sizeof(q4k_wx), q4k_wprep};
#endif

#ifdef MM_ZMM
/* Q4_K x 4 tokens on 512-bit vectors (Zen 5 and the Intel cores run them
 * full width): the low 256 bits take the low nibbles against activations
 * 64c..64c+31 with scale 2c, the high 256 bits the high nibbles against
 * 64c+32..64c+63 with scale 2c+1 — one maddubs and one dpwssd per token
 * where dot4_q4_k has two of each. Folding the halves at the end of a block
 * gives the same exact int32 lane sums as dot4_q4_k, and the f32 part is the
 * same code, so the bits are the same. */
KT static void dot4_q4_k_zmm(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    const k_block_q4_k *x = (const k_block_q4_k *)w;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i sidx[4];
    _Pragma("GCC unroll 4")
    for (int c = 0; c < 4; c++)
        sidx[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
    __m256 acc[NT];
    __m128 accm[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) { acc[k] = _mm256_setzero_ps(); accm[k] = _mm_setzero_ps(); }
    for (int64_t i = 0; i < n / K_QKK; i++) {
        uint32_t u[4];
        k_q4k_unpack_scales(x[i].scales, u);
        const __m256i sm = _mm256_cvtepu8_epi16(_mm_set_epi32((int)u[3], (int)u[2], (int)u[1], (int)u[0]));
        const __m128i mins = _mm256_extracti128_si256(sm, 1);
        const __m512i sm512 = _mm512_castsi256_si512(sm);
        const float d = k_h2f_avx2(x[i].d), dmin = k_h2f_avx2(x[i].dmin);
        const k_block_q8_k *y[NT];
        __m512i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            y[k] = ACT(k, k_block_q8_k) + i;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)y[k]->bsums);
            const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            accm[k] = _mm_fmadd_ps(_mm_set1_ps(dmin * y[k]->d), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum)), accm[k]);
            sumi[k] = _mm512_setzero_si512();
        }
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            const __m512i q4 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c)));
            const __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(q4, (__mmask32)0xFFFF0000u, q4, 4), m4);
            const __m512i s = _mm512_permutexvar_epi16(sidx[c], sm512);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++) {
                const __m512i p = _mm512_maddubs_epi16(q, _mm512_loadu_si512((const void *)(y[k]->qs + 64 * c)));
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], p, s);
            }
        }
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sumi[k]), _mm512_extracti64x4_epi64(sumi[k], 1));
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(s8), acc[k]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) out[k] = k_hsum_avx2(acc[k]) - k_hsum128_avx2(accm[k]);
}

/* ---- Q4_K x 8 tokens on 512-bit vectors. The weights of a chunk of rows
 * are decoded once (q4k_wprep: quants as bytes, scales, mins, d, dmin as
 * f32) and the activations of a group of 8 tokens laid out once per chunk
 * (q4k_prep8) so that one register holds the same sub-block of two tokens,
 * token 2p in the low 256 bits and 2p+1 in the high: one maddubs and one
 * dpwssd per token and 64 quants, as in dot4_q4_k_zmm, and every sub-block
 * of a token lands in the same 8 int32 lanes, which are then exactly
 * k_dot_q4_k_q8_k's lane sums with no folding. Per token the f32
 * operations are those of the one-token dot: acc lanes += (d * yd) * (lane
 * sum), min lanes += (dmin * yd) * (mins . bsum pairs), in block order, so
 * the bits are the same. ---- */
typedef struct {
    int8_t qs[4][8][64]; /* pair p, sub-block j: token 2p's 32 quants, then token 2p+1's */
    int16_t bsum[2][32]; /* quad h: token 4h+j's 8 bsum pair sums in lanes 8j..8j+7 */
    float yd4[2][16];    /* quad h: token 4h+j's d in lanes 4j..4j+3 (its min term lanes) */
    float yd8[4][16];    /* pair p: token 2p's d in lanes 0..7, token 2p+1's in lanes 8..15 */
} q4k_side8;
_Static_assert(sizeof(q4k_side8) == MM_SIDE_WX, "q4k_side8 is one block of q4k_prep8");
_Static_assert(offsetof(q4k_side8, yd4) - offsetof(q4k_side8, bsum) == 16 * 8 && offsetof(q4k_side8, yd8) - offsetof(q4k_side8, bsum) == 32 * 8,
               "bsum..yd8 is q4k_prep_tokens' 8-token block");

/* Block i of 8 tokens' Q8_K quants in pairs: qs[p][j] = token 2p's quants
 * 32j..32j+31, then token 2p+1's (the Q4_K and Q6_K 8-token layouts) */
KT static inline void prep8_pairs(int8_t qs[4][8][64], const char *a, size_t a_row_bytes, int64_t i) {
    for (int k = 0; k < 8; k++) {
        const k_block_q8_k *y = ACT(k, k_block_q8_k) + i;
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++)
            _mm256_store_si256((__m256i *)(qs[k / 2][j] + 32 * (k % 2)), _mm256_loadu_si256((const __m256i *)(y->qs + 32 * j)));
    }
}

KT static void q4k_prep8(int64_t n, const char *a, size_t a_row_bytes, void *side) {
    q4k_side8 *sd = (q4k_side8 *)side;
    for (int64_t i = 0; i < n / K_QKK; i++, sd++) {
        prep8_pairs(sd->qs, a, a_row_bytes, i);
        q4k_prep_tokens(8, K_QKK, a + (size_t)i * sizeof(k_block_q8_k), a_row_bytes, sd->bsum);
    }
}

KT static void dot8_q4_k_zmm(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes,
                             const void *side, float *st, float *out) {
    (void)a, (void)a_row_bytes;
    const q4k_wx *x = (const q4k_wx *)w;
    const q4k_side8 *sd = (const q4k_side8 *)side;
    __m512 acc[4], accm[2]; /* acc[p]: tokens 2p, 2p+1 (8 lanes each); accm[h]: tokens 4h..4h+3 (4 lanes each); st: acc, accm */
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) acc[p] = i0 ? _mm512_load_ps(st + 16 * p) : _mm512_setzero_ps();
    accm[0] = i0 ? _mm512_load_ps(st + 64) : _mm512_setzero_ps();
    accm[1] = i0 ? _mm512_load_ps(st + 80) : _mm512_setzero_ps();
    for (int64_t i = 0; i < i1 - i0; i++, sd++, x++) {
        const __m512i mins = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)x->mins));
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            const __m512i pm = _mm512_madd_epi16(mins, _mm512_load_si512((const void *)sd->bsum[h]));
            accm[h] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(x->dmin), _mm512_load_ps(sd->yd4[h])), _mm512_cvtepi32_ps(pm), accm[h]);
        }
        __m512i sumi[2][4]; /* two sums per pair (even, odd sub-blocks) for shorter chains */
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) sumi[0][p] = sumi[1][p] = _mm512_setzero_si512();
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) {
            const __m512i q = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)x->q[j]));
            const __m512i s = _mm512_set1_epi32(x->s[j]);
            _Pragma("GCC unroll 4")
            for (int p = 0; p < 4; p++) {
                const __m512i pr = _mm512_maddubs_epi16(q, _mm512_load_si512((const void *)sd->qs[p][j]));
                sumi[j % 2][p] = _mm512_dpwssd_epi32(sumi[j % 2][p], pr, s);
            }
        }
        const __m512 dv = _mm512_set1_ps(x->d);
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++)
            acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(dv, _mm512_load_ps(sd->yd8[p])), _mm512_cvtepi32_ps(_mm512_add_epi32(sumi[0][p], sumi[1][p])), acc[p]);
    }
    if (i1 < nb) {
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) _mm512_store_ps(st + 16 * p, acc[p]);
        _mm512_store_ps(st + 64, accm[0]);
        _mm512_store_ps(st + 80, accm[1]);
        return;
    }
    _Alignas(64) float av[4 * 16], mv[2 * 16]; /* token k: av[8k..8k+7], mv[4k..4k+3] */
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) _mm512_store_ps(av + 16 * p, acc[p]);
    _mm512_store_ps(mv, accm[0]);
    _mm512_store_ps(mv + 16, accm[1]);
    _Pragma("GCC unroll 8")
    for (int k = 0; k < 8; k++) out[k] = k_hsum_avx2(_mm256_load_ps(av + 8 * k)) - k_hsum128_avx2(_mm_load_ps(mv + 4 * k));
}
static const mm_group q4k_group8 = {8, sizeof(q4k_side8), q4k_prep8, dot8_q4_k_zmm, 96, sizeof(q4k_wx), q4k_wprep};
#endif

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


#ifndef MM_ZMM /* the 256-bit build's Q6_K group kernel (MM_ZMM has q6k_group8) */
/* ---- Q6_K x 4 tokens on decoded weights (mm_group): dot4_q6_k's integer
 * sums with the quants, scale words and -32 * scales from q6k_wprep (lane
 * l starts at -32 * (sc[2l] * bsums[2l] + sc[2l+1] * bsums[2l+1]), one
 * madd) and each token's bsums and d from q6k_prep4; the f32 steps are the
 * one-token dot's, so the bits are the same. ---- */
typedef struct {
    int16_t bsums[NT][16]; /* token k's 16 bsums */
    float yd8[NT][8];      /* token k's d in all 8 lanes */
} q6k_side4;
_Static_assert(sizeof(q6k_side4) == 64 * NT && sizeof(q6k_side4) <= MM_SIDE_WX, "q6k_side4 is one block of q6k_prep4");

KT static void q6k_prep4(int64_t n, const char *a, size_t a_row_bytes, void *side) {
    q6k_side4 *sd = (q6k_side4 *)side;
    for (int64_t i = 0; i < n / K_QKK; i++, sd++)
        for (int k = 0; k < NT; k++) {
            const k_block_q8_k *y = ACT(k, k_block_q8_k) + i;
            _mm256_store_si256((__m256i *)sd->bsums[k], _mm256_loadu_si256((const __m256i *)y->bsums));
            _mm256_store_ps(sd->yd8[k], _mm256_set1_ps(y->d));
        }
}

KT static void dot4p_q6_k(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes,
                          const void *side, float *st, float *out) {
    const q6k_wx *x = (const q6k_wx *)w;
    const q6k_side4 *sd = (const q6k_side4 *)side;
    __m256 acc[NT]; /* st: acc */
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = i0 ? _mm256_load_ps(st + 8 * k) : _mm256_setzero_ps();
    const k_block_q8_k *y[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) y[k] = ACT(k, k_block_q8_k);
    for (int64_t i = 0; i < i1 - i0; i++, sd++, x++) {
        const __m256i sc32 = _mm256_load_si256((const __m256i *)x->sc32);
        __m256i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) sumi[k] = _mm256_madd_epi16(sc32, _mm256_load_si256((const __m256i *)sd->bsums[k]));
        _Pragma("GCC unroll 8")
        for (int v = 0; v < 8; v++) {
            const __m256i q = _mm256_load_si256((const __m256i *)x->q[v]), s = _mm256_load_si256((const __m256i *)x->s[v]);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++)
                sumi[k] = ACC_MADD16(sumi[k], _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(y[k][i].qs + 32 * v))), s);
        }
        const __m256 dv = _mm256_set1_ps(x->d);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(dv, _mm256_load_ps(sd->yd8[k])), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) {
        if (i1 < nb) _mm256_store_ps(st + 8 * k, acc[k]);
        else out[k] = k_hsum_avx2(acc[k]);
    }
}
static const mm_group q6k_group4 = {NT, sizeof(q6k_side4), q6k_prep4, dot4p_q6_k, 32, sizeof(q6k_wx), q6k_wprep};
#endif

/* ---- Q6_K: see k_dot_q6_k_q8_k_avx2 ---- */
#ifndef MM_ZMM /* the 512-bit build has its own */
KT static void dot4_q6_k(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    __m256 acc[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const k_block_q8_k *y[NT];
        __m256i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            y[k] = ACT(k, k_block_q8_k) + i;
            const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[k]->bsums));
            sumi[k] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
        }
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            k_q6k_quants_avx2(&x[i], h, q);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                const int p = 4 * h + j;
                const __m128i shuf = _mm_set_epi64x(0x0101010101010101LL * (2 * p + 1), 0x0101010101010101LL * (2 * p));
                const __m256i s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
                _Pragma("GCC unroll 4")
                for (int k = 0; k < NT; k++) {
                    const int8_t *qa = y[k]->qs + 128 * h + 32 * j;
                    const __m256i pr = _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i *)qa));
                    sumi[k] = ACC_MADD16(sumi[k], pr, s);
                }
            }
        }
        const float d = k_h2f_avx2(x[i].d);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) out[k] = k_hsum_avx2(acc[k]);
}
#endif

#ifdef MM_ZMM
/* Q6_K on 512-bit vectors: ql+64h is loaded as one 64-byte vector, so the
 * low / high 256 bits decode q[0] / q[1] (low nibbles) and q[2] / q[3] (high
 * nibbles) of dot4_q6_k, against 64 contiguous activation bytes each, with
 * scales 8h+0..3 and 8h+4..7 in 8-word groups. The halves are folded per
 * block (plus the same -32 * scales . bsums start), giving the same int32
 * lane sums as the 256-bit kernels, and the same f32 code: same bits. */
struct q6z_scales { __m512i s[4]; }; /* h=0: q01, q23; h=1: q01, q23 */

KT static inline void q6z_make_scales(const int8_t *scales, struct q6z_scales *o) {
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)scales));
    _Pragma("GCC unroll 4")
    for (int g = 0; g < 4; g++) { /* scales 4g .. 4g+3, 8 words each */
        const __m256i idx = _mm256_set_epi64x(0x0101010101010101LL * (4 * g + 3), 0x0101010101010101LL * (4 * g + 2),
                                              0x0101010101010101LL * (4 * g + 1), 0x0101010101010101LL * (4 * g));
        o->s[g] = _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(sc, idx));
    }
}

/* q01 (low nibbles of ql+64h with qh bits 0-1 / 2-3) and q23 (high nibbles, bits 4-5 / 6-7) */
KT static inline void q6z_decode(const k_block_q6_k *x, int h, __m512i *q01, __m512i *q23) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i LL = _mm512_loadu_si512((const void *)(x->ql + 64 * h));
    const __m512i HH = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->qh + 32 * h)));
    const __m512i H01 = _mm512_mask_srli_epi16(HH, (__mmask32)0xFFFF0000u, HH, 2); /* bits 0-1 | 2-3 at 0-1 */
    const __m512i H23 = _mm512_srli_epi16(H01, 4);                                 /* bits 4-5 | 6-7 at 0-1 */
    *q01 = _mm512_or_si512(_mm512_and_si512(LL, m4), _mm512_and_si512(_mm512_slli_epi16(H01, 4), m30));
    *q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(LL, 4), m4), _mm512_and_si512(_mm512_slli_epi16(H23, 4), m30));
}

KT static inline __m256i q6z_fold(__m512i v, __m256i start) {
    return _mm256_add_epi32(start, _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)));
}

KT static void dot4_q6_k_zmm(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    __m256 acc[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        struct q6z_scales S;
        q6z_make_scales(x[i].scales, &S);
        const k_block_q8_k *y[NT];
        __m256i start[NT];
        __m512i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            y[k] = ACT(k, k_block_q8_k) + i;
            const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[k]->bsums));
            start[k] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
            sumi[k] = _mm512_setzero_si512();
        }
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            __m512i q01, q23;
            q6z_decode(&x[i], h, &q01, &q23);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++) {
                const int8_t *qa = y[k]->qs + 128 * h;
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(q01, _mm512_loadu_si512((const void *)qa)), S.s[2 * h]);
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(q23, _mm512_loadu_si512((const void *)(qa + 64))), S.s[2 * h + 1]);
            }
        }
        const float d = k_h2f_avx2(x[i].d);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(q6z_fold(sumi[k], start[k])), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) out[k] = k_hsum_avx2(acc[k]);
}
/* ---- Q6_K x 8 tokens on 512-bit vectors, as dot8_q4_k_zmm: the weights of
 * a chunk of rows decoded once (q6k_wprep: quants as bytes in element
 * order, per-vector scale words, -32 * scales, d as f32), 8 tokens' quants
 * in pairs (q6k_prep8), so vector v (quants 32v..32v+31) of tokens 2p and
 * 2p+1 is one register and each token's 8 lanes collect every vector: lane
 * l starts at -32 * (sc[2l] * bsums[2l] + sc[2l+1] * bsums[2l+1]) (one
 * madd of the -32 * scales with the pair's bsums) and adds (scale of its
 * group) * (its 4 quants . activations), exactly k_dot_q6_k_q8_k's lane
 * sums; per token the f32 steps are the one-token dot's, so the same bits. ---- */
typedef struct {
    int8_t qs[4][8][64]; /* as q4k_side8 */
    int16_t bsums[4][32]; /* pair p: token 2p's 16 bsums, then token 2p+1's */
    float yd8[4][16];     /* pair p: token 2p's d in lanes 0..7, token 2p+1's in lanes 8..15 */
} q6k_side8;
_Static_assert(sizeof(q6k_side8) == MM_SIDE_WX, "q6k_side8 is one block of q6k_prep8");

KT static void q6k_prep8(int64_t n, const char *a, size_t a_row_bytes, void *side) {
    q6k_side8 *sd = (q6k_side8 *)side;
    for (int64_t i = 0; i < n / K_QKK; i++, sd++) {
        prep8_pairs(sd->qs, a, a_row_bytes, i);
        for (int k = 0; k < 8; k++) {
            const k_block_q8_k *y = ACT(k, k_block_q8_k) + i;
            _mm256_store_si256((__m256i *)(sd->bsums[k / 2] + 16 * (k % 2)), _mm256_loadu_si256((const __m256i *)y->bsums));
            _mm256_store_ps(sd->yd8[k / 2] + 8 * (k % 2), _mm256_set1_ps(y->d));
        }
    }
}

KT static void dot8_q6_k_zmm(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes,
                             const void *side, float *st, float *out) {
    (void)a, (void)a_row_bytes;
    const q6k_wx *x = (const q6k_wx *)w;
    const q6k_side8 *sd = (const q6k_side8 *)side;
    __m512 acc[4]; /* acc[p]: tokens 2p, 2p+1 (8 lanes each); st: acc */
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) acc[p] = i0 ? _mm512_load_ps(st + 16 * p) : _mm512_setzero_ps();
    for (int64_t i = 0; i < i1 - i0; i++, sd++, x++) {
        const __m512i sc32 = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)x->sc32));
        __m512i sumi[2][4]; /* two sums per pair (even, odd vectors) for shorter chains */
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) {
            sumi[0][p] = _mm512_madd_epi16(sc32, _mm512_load_si512((const void *)sd->bsums[p]));
            sumi[1][p] = _mm512_setzero_si512();
        }
        _Pragma("GCC unroll 8")
        for (int v = 0; v < 8; v++) {
            const __m512i q = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)x->q[v]));
            const __m512i s = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)x->s[v]));
            _Pragma("GCC unroll 4")
            for (int p = 0; p < 4; p++)
                sumi[v % 2][p] = _mm512_dpwssd_epi32(sumi[v % 2][p], _mm512_maddubs_epi16(q, _mm512_load_si512((const void *)sd->qs[p][v])), s);
        }
        const __m512 dv = _mm512_set1_ps(x->d);
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++)
            acc[p] = _mm512_fmadd_ps(_mm512_mul_ps(dv, _mm512_load_ps(sd->yd8[p])), _mm512_cvtepi32_ps(_mm512_add_epi32(sumi[0][p], sumi[1][p])), acc[p]);
    }
    _Alignas(64) float av[4 * 16]; /* token k: av[8k..8k+7] */
    float *sa = i1 < nb ? st : av;
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) _mm512_store_ps(sa + 16 * p, acc[p]);
    if (i1 < nb) return;
    _Pragma("GCC unroll 8")
    for (int k = 0; k < 8; k++) out[k] = k_hsum_avx2(_mm256_load_ps(av + 8 * k));
}
static const mm_group q6k_group8 = {8, sizeof(q6k_side8), q6k_prep8, dot8_q6_k_zmm, 64, sizeof(q6k_wx), q6k_wprep};
#endif

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

/* Prefetch distance of the MatVec row kernels, in rows: two 4-row groups
 * ahead (Q6_K at one group ahead measured ~4% slower for tg64 -t 2). */
#ifndef MM_PF_Q4K
#define MM_PF_Q4K 8
#endif
#ifndef MM_PF_Q6K
#define MM_PF_Q6K 8
#endif

/* Q4_K, 4 rows x 1 token, the start of row x's block: prefetch the same
 * block two row groups ahead (see rows4_q0; one group ahead out of cache,
 * busy machine: 23-28 -> 28-29 cpu-GB/s), fold the min term into accm and
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

/* ---- Q4_K, 4 rows x 1 token (MatVec): the activation loads and bsum
 * pairs are shared by the 4 rows; per row the operations and their order are
 * those of the single-row kernel (same bits). ---- */
#ifndef MM_ZMM /* the 512-bit build has its own */
KT static void rows4_q4_k(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[4];
    __m128 accm[4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) { acc[r] = _mm256_setzero_ps(); accm[r] = _mm_setzero_ps(); }
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float yd = y[i].d;
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const k_block_q4_k *x[4];
        __m256i sc[4], sumi[4];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            x[r] = (const k_block_q4_k *)(w + (size_t)r * row_bytes) + i;
            const __m256i sm = rows4_q4k_head(x[r], row_bytes, bsum, yd, &accm[r]);
            sc[r] = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
            sumi[r] = _mm256_setzero_si256();
        }
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            const __m256i alo = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c));
            const __m256i ahi = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32));
            _Pragma("GCC unroll 4")
            for (int r = 0; r < 4; r++) {
                const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[r]->qs + 32 * c));
                const __m256i p0 = _mm256_maddubs_epi16(_mm256_and_si256(q4, m4), alo);
                const __m256i p1 = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), ahi);
                sumi[r] = ACC_MADD16(sumi[r], p0, k_bcast16_avx2(sc[r], 2 * c));
                sumi[r] = ACC_MADD16(sumi[r], p1, k_bcast16_avx2(sc[r], 2 * c + 1));
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[r]->d) * yd), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]) - k_hsum128_avx2(accm[r]);
}
#endif

#ifdef MM_ZMM
/* rows4_q4_k on 512-bit vectors, the layout of dot4_q4_k_zmm: same int32
 * lane sums after the per-block fold, same f32 code, same bits. */
KT static void rows4_q4_k_zmm(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i sidx[4];
    _Pragma("GCC unroll 4")
    for (int c = 0; c < 4; c++)
        sidx[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
    __m256 acc[4];
    __m128 accm[4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) { acc[r] = _mm256_setzero_ps(); accm[r] = _mm_setzero_ps(); }
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float yd = y[i].d;
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const k_block_q4_k *x[4];
        __m512i sc[4], sumi[4];
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            x[r] = (const k_block_q4_k *)(w + (size_t)r * row_bytes) + i;
            const __m256i sm = rows4_q4k_head(x[r], row_bytes, bsum, yd, &accm[r]);
            sc[r] = _mm512_castsi256_si512(sm);
            sumi[r] = _mm512_setzero_si512();
        }
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            const __m512i av = _mm512_loadu_si512((const void *)(y[i].qs + 64 * c));
            _Pragma("GCC unroll 4")
            for (int r = 0; r < 4; r++) {
                const __m512i q4 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[r]->qs + 32 * c)));
                const __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(q4, (__mmask32)0xFFFF0000u, q4, 4), m4);
                sumi[r] = _mm512_dpwssd_epi32(sumi[r], _mm512_maddubs_epi16(q, av), _mm512_permutexvar_epi16(sidx[c], sc[r]));
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sumi[r]), _mm512_extracti64x4_epi64(sumi[r], 1));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[r]->d) * yd), _mm256_cvtepi32_ps(s8), acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]) - k_hsum128_avx2(accm[r]);
}
#endif

/* ---- Q6_K, 4 rows x 1 token (MatVec): per row the operations and their
 * order are those of the single-row kernel (same bits); four independent
 * rows per pass, the next row group prefetched (see rows4_q0). ---- */
#ifndef MM_ZMM /* the 512-bit build has its own */
KT static void rows4_q6_k(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            const k_block_q6_k *x = (const k_block_q6_k *)(w + (size_t)r * row_bytes) + i;
            const char *nx = (const char *)x + MM_PF_Q6K * row_bytes;
            _mm_prefetch(nx, _MM_HINT_T0);
            _mm_prefetch(nx + 64, _MM_HINT_T0);
            _mm_prefetch(nx + 128, _MM_HINT_T0);
            _mm_prefetch(nx + 192, _MM_HINT_T0);
            const __m128i sc8 = _mm_loadu_si128((const __m128i *)x->scales);
            const __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), bs);
            __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
            _Pragma("GCC unroll 2")
            for (int h = 0; h < 2; h++) {
                __m256i q[4];
                k_q6k_quants_avx2(x, h, q);
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
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x->d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]);
}
#endif

#ifdef MM_ZMM
/* rows4_q6_k in the dot4_q6_k_zmm layout (same bits) */
KT static void rows4_q6_k_zmm(int64_t n, const char *w, size_t row_bytes, const void *a, float out[4]) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    __m256 acc[4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        const __m512i a0 = _mm512_loadu_si512((const void *)y[i].qs), a1 = _mm512_loadu_si512((const void *)(y[i].qs + 64));
        const __m512i a2 = _mm512_loadu_si512((const void *)(y[i].qs + 128)), a3 = _mm512_loadu_si512((const void *)(y[i].qs + 192));
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            const k_block_q6_k *x = (const k_block_q6_k *)(w + (size_t)r * row_bytes) + i;
            const char *nx = (const char *)x + MM_PF_Q6K * row_bytes; /* see rows4_q0 */
            _mm_prefetch(nx, _MM_HINT_T0);
            _mm_prefetch(nx + 64, _MM_HINT_T0);
            _mm_prefetch(nx + 128, _MM_HINT_T0);
            _mm_prefetch(nx + 192, _MM_HINT_T0);
            const __m256i corr = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales)), bs);
            const __m256i start = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 5));
            struct q6z_scales S;
            q6z_make_scales(x->scales, &S);
            __m512i q01, q23, sumi;
            q6z_decode(x, 0, &q01, &q23);
            sumi = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(q01, a0), S.s[0]);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q23, a1), S.s[1]);
            q6z_decode(x, 1, &q01, &q23);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q01, a2), S.s[2]);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q23, a3), S.s[3]);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x->d) * y[i].d), _mm256_cvtepi32_ps(q6z_fold(sumi, start)), acc[r]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]);
}
#endif
