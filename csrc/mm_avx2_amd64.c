/* mm_avx2_amd64.c — k_matmul_q tile kernels, AVX2 (instruction choices:
 * simd_avx2_amd64.h): the 256-bit Q4_K and Q6_K pieces (the 4-token group
 * kernels on decoded weights and on the raw rows, and the hooks of
 * mm_x86.h's one row x 4 tokens and 4 rows x one token bodies), with
 * mm_simd.h's shared ones; each k_mm_*_avx2 is k_mm_run (mm_driver.h) over
 * its type's mm_kernel. */
#include "simd_avx2_amd64.h"
#include "mm_simd.h"

KT static void dot4_q4_k(int64_t n, const void *w, const char *a, size_t a_row_bytes, float out[NT]) {
    dot4_q45k(K_Q4_K, n, w, a, a_row_bytes, out);
}

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

/* dot4p_q4_k (raw 0: the weights q4k_wprep decoded) and rdot4p_q4_k
 * (raw 1: the raw Q4_K rows, mm_group.rdot: quants, scale words, mins, d
 * and dmin decoded in registers as q4k_wprep writes them, prefetching
 * MM_PF_RAW bytes ahead), then the same operations in the same order, so
 * the same bits. */
KT static inline __attribute__((always_inline)) void q4k_dot4p(const int raw, MM_GDOT_PARAMS) {
    const q4k_wx *xw = (const q4k_wx *)w;
    const k_block_q4_k *xr = (const k_block_q4_k *)w;
    const q4k_side4 *sd = (const q4k_side4 *)side;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[NT], accm[2]; /* accm[p]: tokens 2p, 2p+1 (4 lanes each); st: acc, then accm */
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = i0 ? _mm256_load_ps(st + 8 * k) : _mm256_setzero_ps();
    accm[0] = i0 ? _mm256_load_ps(st + 32) : _mm256_setzero_ps();
    accm[1] = i0 ? _mm256_load_ps(st + 40) : _mm256_setzero_ps();
    const k_block_q8_k *y[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) y[k] = ACT(k, k_block_q8_k);
    for (int64_t i = 0; i < i1 - i0; i++, sd++) {
        __m256i mins, s2 = _mm256_setzero_si256();
        float d, dmin;
        if (raw) {
            k_prefetch_lines((const char *)&xr[i] + MM_PF_RAW, 3);
            const __m256i sm = k_q4k_scales_mins16_avx2(xr[i].scales);
            const __m256i sc = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(sm));
            s2 = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)); /* lane j: scale j in both halves */
            mins = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(sm, 1));
            d = k_h2f_avx2(xr[i].d), dmin = k_h2f_avx2(xr[i].dmin);
        } else {
            mins = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)xw[i].mins));
            d = xw[i].d, dmin = xw[i].dmin;
        }
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
            __m256i lo, hi, s0, s1;
            if (raw) {
                const __m256i q4 = _mm256_loadu_si256((const __m256i *)(xr[i].qs + 32 * c));
                lo = _mm256_and_si256(q4, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
                s0 = _mm256_permutevar8x32_epi32(s2, _mm256_set1_epi32(2 * c));
                s1 = _mm256_permutevar8x32_epi32(s2, _mm256_set1_epi32(2 * c + 1));
            } else {
                lo = _mm256_load_si256((const __m256i *)xw[i].q[2 * c]), hi = _mm256_load_si256((const __m256i *)xw[i].q[2 * c + 1]);
                s0 = _mm256_set1_epi32(xw[i].s[2 * c]), s1 = _mm256_set1_epi32(xw[i].s[2 * c + 1]);
            }
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++) {
                const int8_t *qa = y[k][i].qs + 64 * c;
                const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)qa));
                const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(qa + 32)));
                sumi[k] = ACC_MADD16(sumi[k], p0, s0);
                sumi[k] = ACC_MADD16(sumi[k], p1, s1);
                MM_CHAIN(sumi[k]);
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
KT static void dot4p_q4_k(MM_GDOT_PARAMS) { q4k_dot4p(0, MM_GDOT_ARGS); }
KT static void rdot4p_q4_k(MM_GDOT_PARAMS) { q4k_dot4p(1, MM_GDOT_ARGS); }
static const mm_group mm_q4k_group = {4, sizeof(q4k_side4), q4k_prep4, dot4p_q4_k, 48, sizeof(q4k_wx), q4k_wprep,
                                    rdot4p_q4_k, sizeof(k_block_q4_k)};

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

/* dot4p_q6_k (raw 0: the weights q6k_wprep decoded) and rdot4p_q6_k (raw
 * 1: the raw Q6_K rows, mm_group.rdot, as rdot4p_q4_k): k_q6k_quants_avx2's
 * quants, and the scale words (scale 2v in lanes 0..7, 2v+1 in 8..15) and
 * -32 * scales q6k_wprep writes, in registers; the same operations after
 * that, so the same bits. */
KT static inline __attribute__((always_inline)) void q6k_dot4p(const int raw, MM_GDOT_PARAMS) {
    const q6k_wx *xw = (const q6k_wx *)w;
    const k_block_q6_k *xr = (const k_block_q6_k *)w;
    const q6k_side4 *sd = (const q6k_side4 *)side;
    __m256 acc[NT]; /* st: acc */
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) acc[k] = i0 ? _mm256_load_ps(st + 8 * k) : _mm256_setzero_ps();
    const k_block_q8_k *y[NT];
    _Pragma("GCC unroll 4")
    for (int k = 0; k < NT; k++) y[k] = ACT(k, k_block_q8_k);
    for (int64_t i = 0; i < i1 - i0; i++, sd++, xw++, xr++) {
        __m256i sc16 = _mm256_setzero_si256(), sc32;
        if (raw) {
            k_prefetch_lines((const char *)xr + MM_PF_RAW, 4);
            sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xr->scales));
            sc32 = _mm256_mullo_epi16(sc16, _mm256_set1_epi16(-32));
        } else {
            sc32 = _mm256_load_si256((const __m256i *)xw->sc32);
        }
        __m256i sumi[NT];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < NT; k++) sumi[k] = _mm256_madd_epi16(sc32, _mm256_load_si256((const __m256i *)sd->bsums[k]));
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            __m256i q[4], sh = _mm256_setzero_si256();
            if (raw) {
                k_q6k_quants_avx2(xr, h, q);
                /* scales 8h..8h+7 as words in both 128-bit halves */
                sh = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11) : _mm256_permute2x128_si256(sc16, sc16, 0x00);
            }
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++) {
                const int v = 4 * h + j;
                __m256i s;
                if (raw) {
                    const char b = (char)(4 * j); /* word 2j of the half: bytes 4j, 4j+1; word 2j+1: 4j+2, 4j+3 */
                    const __m256i idx = _mm256_setr_epi8(b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1,
                                                         b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3, b + 2, b + 3,
                                                         b + 2, b + 3, b + 2, b + 3);
                    s = _mm256_shuffle_epi8(sh, idx);
                } else {
                    q[j] = _mm256_load_si256((const __m256i *)xw->q[v]), s = _mm256_load_si256((const __m256i *)xw->s[v]);
                }
                _Pragma("GCC unroll 4")
                for (int k = 0; k < NT; k++) {
                    sumi[k] = ACC_MADD16(sumi[k], _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i *)(y[k][i].qs + 32 * v))), s);
                    MM_CHAIN(sumi[k]);
                }
            }
        }
        const __m256 dv = _mm256_set1_ps(raw ? k_h2f_avx2(xr->d) : xw->d);
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
KT static void dot4p_q6_k(MM_GDOT_PARAMS) { q6k_dot4p(0, MM_GDOT_ARGS); }
KT static void rdot4p_q6_k(MM_GDOT_PARAMS) { q6k_dot4p(1, MM_GDOT_ARGS); }
static const mm_group mm_q6k_group = {NT, sizeof(q6k_side4), q6k_prep4, dot4p_q6_k, 32, sizeof(q6k_wx), q6k_wprep,
                                    rdot4p_q6_k, sizeof(k_block_q6_k)};

/* ---- the hooks of mm_x86.h on 256-bit vectors ---- */
#define MM_ISA avx2

/* rows4_q4_k: a row's int32 lane sums, its scale words from
 * k_q4k_scales_mins16_avx2 (in both 128-bit halves), and the lanes folded
 * to 8 (here they are 8 already) */
typedef __m256i mm_wi;
typedef struct { __m256i m4; } q4k_rconsts;
KT static inline __attribute__((always_inline)) q4k_rconsts q4k_rows_consts(void) {
    return (q4k_rconsts){_mm256_set1_epi8(0x0F)};
}
KT static inline __attribute__((always_inline)) __m256i q4k_rows_scales(__m256i sm) {
    return _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
}
KT static inline __attribute__((always_inline)) __m256i mm_wi_fold(__m256i v) { return v; }
KT static inline __attribute__((always_inline)) __m256i mm_wi_from(__m256i start) { return start; }
KT static inline __attribute__((always_inline)) __m256i mm_wi_onto(__m256i v, __m256i start) {
    (void)start; /* v began at start */
    return v;
}

/* rows4_q4_k: chunk c (sub-blocks 2c, 2c+1) of the 4 rows against the
 * token's quants qa, each activation vector loaded once for the 4 rows */
KT static inline __attribute__((always_inline)) void q4k_rows_chunk(q4k_rconsts kc, const int c, const int8_t *qa,
                                                                   const k_block_q4_k *const x[4], const __m256i sc[4],
                                                                   __m256i sumi[4]) {
    const __m256i alo = _mm256_loadu_si256((const __m256i *)(qa + 64 * c));
    const __m256i ahi = _mm256_loadu_si256((const __m256i *)(qa + 64 * c + 32));
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) {
        const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[r]->qs + 32 * c));
        const __m256i p0 = _mm256_maddubs_epi16(_mm256_and_si256(q4, kc.m4), alo);
        const __m256i p1 = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q4, 4), kc.m4), ahi);
        sumi[r] = ACC_MADD16(sumi[r], p0, k_bcast16_avx2(sc[r], 2 * c));
        sumi[r] = ACC_MADD16(sumi[r], p1, k_bcast16_avx2(sc[r], 2 * c + 1));
        MM_CHAIN(sumi[r]);
    }
}

/* rows4_q6_k: the token's quants (read per row here), and one row's lane
 * sums from start: the single-row kernel's steps */
typedef struct { const int8_t *qs; } q6k_racts;
KT static inline __attribute__((always_inline)) q6k_racts q6k_racts_load(const int8_t *qs) { return (q6k_racts){qs}; }
KT static inline __attribute__((always_inline)) __m256i q6k_row_sums(const k_block_q6_k *x, q6k_racts av, __m256i sumi) {
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)x->scales);
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; h++) {
        __m256i q[4];
        k_q6k_quants_avx2(x, h, q);
        sumi = k_q6k_half_avx2(sumi, q, sc8, av.qs + 128 * h, h, 0);
    }
    return sumi;
}

/* dot4_q6_k: block x (scale bytes sc8) against the 4 tokens' blocks y,
 * s[k] += token k's lane sums (k_dot_q6_k_q8_k_avx2's operations) */
typedef __m128i q6k_tsc; /* the 16 scale bytes */
KT static inline __attribute__((always_inline)) __m128i q6k_tok4_scales(const k_block_q6_k *x) {
    return _mm_loadu_si128((const __m128i *)x->scales);
}
KT static inline __attribute__((always_inline)) void q6k_tok4_sums(const k_block_q6_k *x, __m128i sc8, const k_block_q8_k *const y[NT],
                                                                  __m256i s[NT]) {
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; h++) {
        __m256i q[4];
        k_q6k_quants_avx2(x, h, q);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < 4; j++) {
            const int p = 4 * h + j;
            const __m128i shuf = _mm_set_epi64x(0x0101010101010101LL * (2 * p + 1), 0x0101010101010101LL * (2 * p));
            const __m256i sv = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, shuf));
            _Pragma("GCC unroll 4")
            for (int k = 0; k < NT; k++) {
                const __m256i pr = _mm256_maddubs_epi16(q[j], _mm256_loadu_si256((const __m256i *)(y[k]->qs + 128 * h + 32 * j)));
                s[k] = ACC_MADD16(s[k], pr, sv);
                MM_CHAIN(s[k]);
            }
        }
    }
}

#include "mm_x86.h"

void k_mm_q4_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_k, K_MM_TILE_ARGS); }
void k_mm_q5_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_k, K_MM_TILE_ARGS); }
void k_mm_q6_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q6_k, K_MM_TILE_ARGS); }

/* the Q0 family: mm_simd.h's pieces */
static const mm_kernel mm_q8_0 = {.piece = q8_0_piece, .shapes = MM_R4 | MM_T4};
void k_mm_q8_0_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q8_0, K_MM_TILE_ARGS); }
static const mm_kernel mm_q4_0 = {.piece = q4_0_piece, .shapes = MM_R4 | MM_T4};
void k_mm_q4_0_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_0, K_MM_TILE_ARGS); }
static const mm_kernel mm_q5_0 = {.piece = q5_0_piece, .shapes = MM_R4 | MM_T4};
void k_mm_q5_0_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_0, K_MM_TILE_ARGS); }
