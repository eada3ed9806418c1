/* mm_avx512_amd64.c — k_matmul_q tile kernels, AVX-512 VNNI (instruction
 * choices: simd_avx512_amd64.h): the 512-bit Q4_K and Q6_K pieces (one row
 * x 4 tokens, the 8-token group kernels on decoded weights and on the raw
 * rows, and the hooks of mm_x86.h's 4 rows x one token and Q6_K 4-token
 * bodies) and the Q0 family on prepared token groups, with mm_simd.h's
 * shared ones; each k_mm_*_avx512 is k_mm_run (mm_driver.h) over its type's
 * mm_kernel. */
#include "simd_avx512_amd64.h"
#include "mm_simd.h"

#define MM_ISA avx512
#define AI __attribute__((always_inline))

/* Q4_K on 512-bit vectors (Zen 5 and the Intel cores run them full width):
 * for chunk c the low 256 bits take the low nibbles against activations
 * 64c..64c+31 with scale 2c, the high 256 bits the high nibbles against
 * 64c+32..64c+63 with scale 2c+1 — one maddubs and one dpwssd per token or
 * row where the 256-bit kernels have two of each. Folding the halves at the
 * end of a block (mm_wi_fold) gives the same exact int32 lane sums, and the
 * f32 part is the same code, so the bits are the same. sidx[c] picks the
 * scale words 2c and 2c+1 of the scales and mins (k_q4k_scales_mins16_avx2)
 * into the two halves. */
typedef __m512i mm_wi;
typedef struct { __m512i m4, sidx[4]; } q4k_rconsts;
KT static inline AI q4k_rconsts q4k_rows_consts(void) {
    q4k_rconsts kc;
    kc.m4 = _mm512_set1_epi8(0x0F);
    _Pragma("GCC unroll 4")
    for (int c = 0; c < 4; c++)
        kc.sidx[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
    return kc;
}
KT static inline AI __m512i q4k_rows_scales(__m256i sm) { return _mm512_castsi256_si512(sm); }
KT static inline AI __m256i mm_wi_fold(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}
KT static inline AI __m512i mm_wi_from(__m256i start) {
    (void)start; /* added by mm_wi_onto */
    return _mm512_setzero_si512();
}
/* chunk c of 32 quant bytes: the low nibbles in the low half, the high ones in the high half */
KT static inline AI __m512i q4k_zmm_quants(q4k_rconsts kc, const uint8_t *qs, const int c) {
    const __m512i q4 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)));
    return _mm512_and_si512(_mm512_mask_srli_epi16(q4, (__mmask32)0xFFFF0000u, q4, 4), kc.m4);
}

/* rows4_q4_k: chunk c of the 4 rows against the token's 64 quants 64c.. */
KT static inline AI void q4k_rows_chunk(q4k_rconsts kc, const int c, const int8_t *qa, const k_block_q4_k *const x[4],
                                         const __m512i sc[4], __m512i sumi[4]) {
    const __m512i av = _mm512_loadu_si512((const void *)(qa + 64 * c));
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++)
        sumi[r] = _mm512_dpwssd_epi32(sumi[r], _mm512_maddubs_epi16(q4k_zmm_quants(kc, x[r]->qs, c), av),
                                      _mm512_permutexvar_epi16(kc.sidx[c], sc[r]));
}

/* one row x 4 tokens in this layout, the f32 steps of k_dot_q4_k_q8_k */
KT static void dot4_q4_k(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    const k_block_q4_k *x = (const k_block_q4_k *)w;
    const q4k_rconsts kc = q4k_rows_consts();
    __m256 acc[NT] = {0};
    __m128 accm[NT] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const __m256i sm = k_q4k_scales_mins16_avx2(x[i].scales);
        const __m128i mins = _mm256_extracti128_si256(sm, 1);
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
            const __m512i q = q4k_zmm_quants(kc, x[i].qs, c);
            const __m512i s = _mm512_permutexvar_epi16(kc.sidx[c], _mm512_castsi256_si512(sm));
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++)
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(q, _mm512_loadu_si512((const void *)(y[k]->qs + 64 * c))), s);
        }
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[k]->d), _mm256_cvtepi32_ps(mm_wi_fold(sumi[k])), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) out[k] = k_hsum_avx2(acc[k]) - k_hsum128_avx2(accm[k]);
}

/* ---- Q4_K x 8 tokens on 512-bit vectors. The weights of a chunk of rows
 * are decoded once (q4k_wprep: quants as bytes, scales, mins, d, dmin as
 * f32) and the activations of a group of 8 tokens laid out once per chunk
 * (q4k_prep8) so that one register holds the same sub-block of two tokens,
 * token 2p in the low 256 bits and 2p+1 in the high: one maddubs and one
 * dpwssd per token and 64 quants, as in dot4_q4_k, and every sub-block
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

/* dot8_q4_k_zmm (raw 0: the weights q4k_wprep decoded) and rdot8_q4_k_zmm
 * (raw 1: the raw Q4_K rows, the tile's only group of tokens,
 * mm_group.rdot): each block's quants, scale words, mins, d and dmin are
 * decoded into registers exactly as q4k_wprep writes them, then the same
 * integer and f32 operations in the same order, so the same bits. With one
 * group per tile the decoded copy would be written and read once; decoding
 * in registers saves those stores and reloads. */
KT static inline __attribute__((always_inline)) void q4k_dot8(const int raw, MM_GDOT_PARAMS) {
    (void)a, (void)a_row_bytes;
    const q4k_wx *xw = (const q4k_wx *)w;
    const k_block_q4_k *xr = (const k_block_q4_k *)w;
    const q4k_side8 *sd = (const q4k_side8 *)side;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[4], accm[2]; /* acc[p]: tokens 2p, 2p+1 (8 lanes each); accm[h]: tokens 4h..4h+3 (4 lanes each); st: acc, accm */
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) acc[p] = i0 ? _mm512_load_ps(st + 16 * p) : _mm512_setzero_ps();
    accm[0] = i0 ? _mm512_load_ps(st + 64) : _mm512_setzero_ps();
    accm[1] = i0 ? _mm512_load_ps(st + 80) : _mm512_setzero_ps();
    for (int64_t i = 0; i < i1 - i0; i++, sd++, xw++, xr++) {
        __m512i mins, s2 = _mm512_setzero_si512();
        float xd, xdmin;
        if (raw) {
            k_prefetch_lines((const char *)xr + MM_PF_RAW, 3);
            const __m256i sm = k_q4k_scales_mins16_avx2(xr->scales);
            const __m512i sc = _mm512_zextsi256_si512(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(sm)));
            s2 = _mm512_or_si512(sc, _mm512_slli_epi32(sc, 16)); /* lane j: scale j in both halves */
            mins = _mm512_broadcast_i32x4(_mm256_extracti128_si256(sm, 1));
            xd = k_h2f_avx2(xr->d), xdmin = k_h2f_avx2(xr->dmin);
        } else {
            mins = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)xw->mins));
            xd = xw->d, xdmin = xw->dmin;
        }
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            const __m512i pm = _mm512_madd_epi16(mins, _mm512_load_si512((const void *)sd->bsum[h]));
            accm[h] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(xdmin), _mm512_load_ps(sd->yd4[h])), _mm512_cvtepi32_ps(pm), accm[h]);
        }
        __m512i sumi[2][4]; /* two sums per pair (even, odd sub-blocks) for shorter chains */
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) sumi[0][p] = sumi[1][p] = _mm512_setzero_si512();
        _Pragma("GCC unroll 4")
        for (int c = 0; c < 4; c++) {
            const __m512i q4 = raw ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xr->qs + 32 * c))) : m4;
            _Pragma("GCC unroll 2")
            for (int e = 0; e < 2; e++) {
                const int j = 2 * c + e;
                const __m512i q = raw ? _mm512_and_si512(e ? _mm512_srli_epi16(q4, 4) : q4, m4)
                                      : _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)xw->q[j]));
                const __m512i s = raw ? _mm512_permutexvar_epi32(_mm512_set1_epi32(j), s2) : _mm512_set1_epi32(xw->s[j]);
                _Pragma("GCC unroll 4")
                for (int p = 0; p < 4; p++) {
                    const __m512i pr = _mm512_maddubs_epi16(q, _mm512_load_si512((const void *)sd->qs[p][j]));
                    sumi[e][p] = _mm512_dpwssd_epi32(sumi[e][p], pr, s);
                }
            }
        }
        const __m512 dv = _mm512_set1_ps(xd);
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
KT static void dot8_q4_k_zmm(MM_GDOT_PARAMS) { q4k_dot8(0, MM_GDOT_ARGS); }
KT static void rdot8_q4_k_zmm(MM_GDOT_PARAMS) { q4k_dot8(1, MM_GDOT_ARGS); }
static const mm_group mm_q4k_group = {8, sizeof(q4k_side8), q4k_prep8, dot8_q4_k_zmm, 96, sizeof(q4k_wx), q4k_wprep,
                                    rdot8_q4_k_zmm, sizeof(k_block_q4_k)};

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

/* dot4_q6_k: block x (scales S) against the 4 tokens' blocks y, sumi[k] += token k's lane sums */
typedef struct q6z_scales q6k_tsc;
KT static inline AI struct q6z_scales q6k_tok4_scales(const k_block_q6_k *x) {
    struct q6z_scales S;
    q6z_make_scales(x->scales, &S);
    return S;
}
KT static inline AI void q6k_tok4_sums(const k_block_q6_k *x, struct q6z_scales S, const k_block_q8_k *const y[NT], __m512i sumi[NT]) {
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; h++) {
        __m512i q01, q23;
        q6z_decode(x, h, &q01, &q23);
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) {
            const int8_t *qa = y[k]->qs + 128 * h;
            sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(q01, _mm512_loadu_si512((const void *)qa)), S.s[2 * h]);
            sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(q23, _mm512_loadu_si512((const void *)(qa + 64))), S.s[2 * h + 1]);
        }
    }
}
KT static inline AI __m256i mm_wi_onto(__m512i v, __m256i start) { return q6z_fold(v, start); }

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

/* dot8_q6_k_zmm (raw 0: the weights q6k_wprep decoded) and rdot8_q6_k_zmm
 * (raw 1: the raw Q6_K rows, mm_group.rdot, as rdot8_q4_k_zmm): quants
 * (k_q6k_quants_avx2's steps on broadcast 512-bit loads), scale words and
 * -32 * scales decoded in registers as q6k_wprep writes them, then the
 * same operations in the same order: the same bits. */
KT static inline __attribute__((always_inline)) void q6k_dot8(const int raw, MM_GDOT_PARAMS) {
    (void)a, (void)a_row_bytes;
    const q6k_wx *xw = (const q6k_wx *)w;
    const k_block_q6_k *xr = (const k_block_q6_k *)w;
    const q6k_side8 *sd = (const q6k_side8 *)side;
    /* scale word index of vector v: lanes 0..7 scale 2v, 8..15 scale 2v+1, in both 256-bit halves */
    const __m512i sbase = _mm512_set_epi16(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                                           1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 acc[4]; /* acc[p]: tokens 2p, 2p+1 (8 lanes each); st: acc */
    _Pragma("GCC unroll 4")
    for (int p = 0; p < 4; p++) acc[p] = i0 ? _mm512_load_ps(st + 16 * p) : _mm512_setzero_ps();
    for (int64_t i = 0; i < i1 - i0; i++, sd++, xw++, xr++) {
        __m512i sc16 = _mm512_setzero_si512(), sc32;
        if (raw) {
            k_prefetch_lines((const char *)xr + MM_PF_RAW, 4);
            sc16 = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xr->scales)));
            sc32 = _mm512_broadcast_i64x4(_mm256_mullo_epi16(_mm512_castsi512_si256(sc16), _mm256_set1_epi16(-32)));
        } else {
            sc32 = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)xw->sc32));
        }
        __m512i sumi[2][4]; /* two sums per pair (even, odd vectors) for shorter chains */
        _Pragma("GCC unroll 4")
        for (int p = 0; p < 4; p++) {
            sumi[0][p] = _mm512_madd_epi16(sc32, _mm512_load_si512((const void *)sd->bsums[p]));
            sumi[1][p] = _mm512_setzero_si512();
        }
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            __m512i q[4];
            if (raw) {
                const uint8_t *ql = xr->ql + 64 * h;
                const __m512i L0 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)ql));
                const __m512i L1 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ql + 32)));
                const __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xr->qh + 32 * h)));
                K_Q6K_QUANTS(512, L0, L1, H, q);
            }
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                const int v = 4 * h + j;
                if (!raw) q[j] = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)xw->q[v]));
                const __m512i s = raw ? _mm512_permutexvar_epi16(_mm512_add_epi16(sbase, _mm512_set1_epi16((short)(2 * v))), sc16)
                                      : _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)xw->s[v]));
                _Pragma("GCC unroll 4")
                for (int p = 0; p < 4; p++)
                    sumi[v % 2][p] = _mm512_dpwssd_epi32(sumi[v % 2][p], _mm512_maddubs_epi16(q[j], _mm512_load_si512((const void *)sd->qs[p][v])), s);
            }
        }
        const __m512 dv = _mm512_set1_ps(raw ? k_h2f_avx2(xr->d) : xw->d);
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
KT static void dot8_q6_k_zmm(MM_GDOT_PARAMS) { q6k_dot8(0, MM_GDOT_ARGS); }
KT static void rdot8_q6_k_zmm(MM_GDOT_PARAMS) { q6k_dot8(1, MM_GDOT_ARGS); }
static const mm_group mm_q6k_group = {8, sizeof(q6k_side8), q6k_prep8, dot8_q6_k_zmm, 64, sizeof(q6k_wx), q6k_wprep,
                                    rdot8_q6_k_zmm, sizeof(k_block_q6_k)};

/* rows4_q6_k in dot4_q6_k's layout: the token's 4 x 64 quants, loaded once
 * for the 4 rows, and one row's lanes folded onto start (same bits) */
typedef struct { __m512i a[4]; } q6k_racts;
KT static inline AI q6k_racts q6k_racts_load(const int8_t *qs) {
    q6k_racts av;
    _Pragma("GCC unroll 4")
    for (int j = 0; j < 4; j++) av.a[j] = _mm512_loadu_si512((const void *)(qs + 64 * j));
    return av;
}
KT static inline AI __m256i q6k_row_sums(const k_block_q6_k *x, q6k_racts av, __m256i start) {
    struct q6z_scales S;
    q6z_make_scales(x->scales, &S);
    __m512i q01, q23, sumi;
    q6z_decode(x, 0, &q01, &q23);
    sumi = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_maddubs_epi16(q01, av.a[0]), S.s[0]);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q23, av.a[1]), S.s[1]);
    q6z_decode(x, 1, &q01, &q23);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q01, av.a[2]), S.s[2]);
    sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q23, av.a[3]), S.s[3]);
    return q6z_fold(sumi, start);
}

/* ---- A batch of the Q0 family on prepared token groups (mm_driver.h
 * phase 2b) ----
 *
 * The prep writes, per block i and pair p of tokens (2p, 2p+1) of a group
 * of g, the two tokens' 32 activation bytes plus 128 (a ^ 0x80, unsigned)
 * side by side in 64 bytes, then per pair the two scales as f32. A row's
 * block q (signed, broadcast to both halves) and its correction
 * c = -128 * (the sum of q over each lane's 4 elements) are made once per
 * block for the g tokens; vpdpbusd(c, a + 128, q) is exactly sum(a * q)
 * per lane (int32, no saturation), dot4_q0's lanes for two tokens at once,
 * and the f32 part is its code per 256-bit half: d = d_w * d_a, one fma
 * per block in order, k_hsum_avx2. So the bits are dot4_q0's (and the
 * reference's one-accumulator order). An odd g leaves the last pair's high
 * half zero, its result unused.
 *
 * Layout of block i at i * ceil(g/2) * Q0_PREP_PAIR: the pairs' 64-byte
 * activations, then the pairs' 2 f32 scales. */
#define Q0_PREP_PAIR 72

static size_t q0_tprep_bytes(int64_t n) { return (size_t)(n / K_QK) * (MM_TPREP_TOKS / 2) * Q0_PREP_PAIR; }

KT static void q0_tprep(int g, int64_t n, const char *a, size_t a_row_bytes, void *side) {
    const int64_t nb = n / K_QK;
    const int np = (g + 1) / 2;
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t i = 0; i < nb; i++) {
        unsigned char *pb = (unsigned char *)side + (size_t)i * np * Q0_PREP_PAIR;
        float *dy = (float *)(pb + (size_t)np * 64);
        for (int k = 0; k < 2 * np; k++) {
            if (k < g) {
                const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
                _mm256_storeu_si256((__m256i *)(pb + 32 * k), _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y->qs), flip));
                dy[k] = k_h2f_avx2(y->d);
            } else {
                _mm256_storeu_si256((__m256i *)(pb + 32 * k), _mm256_setzero_si256());
                dy[k] = 0.0f;
            }
        }
    }
}

/* one row x 2 * NP prepared tokens (the last one unused when g is odd) */
KT static inline __attribute__((always_inline)) void q0_prepped(q0_decode_fn dec, size_t bsize, const int NP, int g,
                                                               int64_t n, const char *w, const unsigned char *side,
                                                               float *out) {
    const __m512i c128 = _mm512_set1_epi8((char)0x80);
    const __m512i pairsel = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 acc[MM_TPREP_TOKS / 2];
    _Pragma("GCC unroll 4")
    for (int p = 0; p < NP; p++) acc[p] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / K_QK; i++) {
        const char *blk = w + (size_t)i * bsize;
        const unsigned char *pb = side + (size_t)i * NP * Q0_PREP_PAIR;
        const float *dy = (const float *)(pb + (size_t)NP * 64);
        const __m512i q = _mm512_broadcast_i64x4(dec(blk));
        const __m512i c = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), c128, q));
        k_half dh;
        __builtin_memcpy(&dh, blk, 2);
        const __m128 dw = _mm_set1_ps(k_h2f_avx2(dh));
        _Pragma("GCC unroll 4")
        for (int p = 0; p < NP; p++) {
            const __m512i s = _mm512_dpbusd_epi32(c, _mm512_loadu_si512((const void *)(pb + 64 * p)), q);
            const __m128 d2 = _mm_mul_ps(dw, _mm_castpd_ps(_mm_load_sd((const double *)(dy + 2 * p))));
            const __m512 d = _mm512_permutexvar_ps(pairsel, _mm512_castps128_ps512(d2));
            acc[p] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[p]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int p = 0; p < NP; p++) {
        out[2 * p] = k_hsum_avx2(_mm512_castps512_ps256(acc[p]));
        if (2 * p + 1 < g) out[2 * p + 1] = k_hsum_avx2(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1)));
    }
}

KT static inline __attribute__((always_inline)) void q0_prepped_any(q0_decode_fn dec, size_t bsize, int g, int64_t n,
                                                                   const char *w, const char *a, float *out) {
    const unsigned char *side = (const unsigned char *)a;
    switch ((g + 1) / 2) {
    case 1: q0_prepped(dec, bsize, 1, g, n, w, side, out); return;
    case 2: q0_prepped(dec, bsize, 2, g, n, w, side, out); return;
    case 3: q0_prepped(dec, bsize, 3, g, n, w, side, out); return;
    default: q0_prepped(dec, bsize, 4, g, n, w, side, out); return;
    }
}

/* a Q0 piece with the prepared groups: a = the group when rows == 1 and
 * a_row_bytes == 0 with toks >= 2 (phase 2b), else the plain piece */
#define Q0_PREP_PIECE(name, plain, dec, block)                                                                    \
    KT static void name(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a, \
                        size_t a_row_bytes, float *out) {                                                       \
        if (rows == 1 && toks >= 2 && a_row_bytes == 0) q0_prepped_any(dec, sizeof(block), toks, n, w, a, out); \
        else plain(rows, toks, batch, n, w, row_bytes, a, a_row_bytes, out);                                    \
    }

#include "mm_x86.h"

void k_mm_q4_k_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_k, K_MM_TILE_ARGS); }
void k_mm_q5_k_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_k, K_MM_TILE_ARGS); }
void k_mm_q6_k_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_q6_k, K_MM_TILE_ARGS); }

/* the Q0 family: mm_simd.h's pieces, batches on prepared token groups */
Q0_PREP_PIECE(q8_0_pp_piece, q8_0_piece, dec_q8_0, k_block_q8_0)
Q0_PREP_PIECE(q4_0_pp_piece, q4_0_piece, dec_q4_0, k_block_q4_0)
Q0_PREP_PIECE(q5_0_pp_piece, q5_0_piece, dec_q5_0, k_block_q5_0)
#define Q0_KERNEL(pp) {.piece = (pp), .shapes = MM_R4 | MM_T4, .tprep = q0_tprep, .tprep_bytes = q0_tprep_bytes}
static const mm_kernel mm_q8_0 = Q0_KERNEL(q8_0_pp_piece);
static const mm_kernel mm_q4_0 = Q0_KERNEL(q4_0_pp_piece);
static const mm_kernel mm_q5_0 = Q0_KERNEL(q5_0_pp_piece);
void k_mm_q8_0_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_q8_0, K_MM_TILE_ARGS); }
void k_mm_q4_0_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_0, K_MM_TILE_ARGS); }
void k_mm_q5_0_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_0, K_MM_TILE_ARGS); }
