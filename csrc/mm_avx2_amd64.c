/* mm_avx2_amd64.c — k_matmul_q tile kernels, AVX2 (instruction choices:
 * simd_avx2_amd64.h): the 256-bit Q4_K and Q6_K pieces (one row x 4
 * tokens, 4 rows x one token, and the 4-token group kernels on decoded
 * weights and on the raw rows), with mm_simd.h's shared ones; each k_mm_*_avx2 is k_mm_run
 * (mm_driver.h) over its type's mm_kernel. */
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
            _mm_prefetch((const char *)&xr[i] + MM_PF_RAW, _MM_HINT_T0);
            _mm_prefetch((const char *)&xr[i] + MM_PF_RAW + 64, _MM_HINT_T0);
            _mm_prefetch((const char *)&xr[i] + MM_PF_RAW + 128, _MM_HINT_T0);
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
static const mm_group q4k_group4 = {4, sizeof(q4k_side4), q4k_prep4, dot4p_q4_k, 48, sizeof(q4k_wx), q4k_wprep,
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
            _mm_prefetch((const char *)xr + MM_PF_RAW, _MM_HINT_T0);
            _mm_prefetch((const char *)xr + MM_PF_RAW + 64, _MM_HINT_T0);
            _mm_prefetch((const char *)xr + MM_PF_RAW + 128, _MM_HINT_T0);
            _mm_prefetch((const char *)xr + MM_PF_RAW + 192, _MM_HINT_T0);
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
static const mm_group q6k_group4 = {NT, sizeof(q6k_side4), q6k_prep4, dot4p_q6_k, 32, sizeof(q6k_wx), q6k_wprep,
                                    rdot4p_q6_k, sizeof(k_block_q6_k)};

/* ---- Q6_K: see k_dot_q6_k_q8_k_avx2 ---- */
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
                    MM_CHAIN(sumi[k]);
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

/* ---- Q4_K, 4 rows x 1 token (MatVec): the activation loads and bsum
 * pairs are shared by the 4 rows; per row the operations and their order are
 * those of the single-row kernel (same bits). ---- */
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
                MM_CHAIN(sumi[r]);
            }
        }
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(k_h2f_avx2(x[r]->d) * yd), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++) out[r] = k_hsum_avx2(acc[r]) - k_hsum128_avx2(accm[r]);
}

/* ---- Q6_K, 4 rows x 1 token (MatVec): per row the operations and their
 * order are those of the single-row kernel (same bits); four independent
 * rows per pass, the next row group prefetched (see rows4_q0). ---- */
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

MM_X86_PIECE(q4k_piece, dot4_q4_k, rows4_q4_k, k_dot_q4_k_q8_k_avx2)
MM_X86_PIECE_T4(q5k_piece, dot4_q5_k, k_dot_q5_k_q8_k_avx2)
MM_X86_PIECE(q6k_piece, dot4_q6_k, rows4_q6_k, k_dot_q6_k_q8_k_avx2)
MM_X86_PIECE(q8_0_piece, dot4_q8_0, rows4_q8_0, k_dot_q8_0_q8_0_avx2)
MM_X86_PIECE(q4_0_piece, dot4_q4_0, rows4_q4_0, k_dot_q4_0_q8_0_avx2)
MM_X86_PIECE(q5_0_piece, dot4_q5_0, rows4_q5_0, k_dot_q5_0_q8_0_avx2)

static const mm_kernel mm_q4_k = {.piece = q4k_piece, .shapes = MM_R4 | MM_T4, .group = &q4k_group4};
static const mm_kernel mm_q5_k = {.piece = q5k_piece, .shapes = MM_T4};
static const mm_kernel mm_q6_k = {.piece = q6k_piece, .shapes = MM_R4 | MM_T4, .group = &q6k_group4};
static const mm_kernel mm_q8_0 = {.piece = q8_0_piece, .shapes = MM_R4 | MM_T4};
static const mm_kernel mm_q4_0 = {.piece = q4_0_piece, .shapes = MM_R4 | MM_T4};
static const mm_kernel mm_q5_0 = {.piece = q5_0_piece, .shapes = MM_R4 | MM_T4};

void k_mm_q4_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_k, K_MM_TILE_ARGS); }
void k_mm_q5_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_k, K_MM_TILE_ARGS); }
void k_mm_q6_k_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q6_k, K_MM_TILE_ARGS); }
void k_mm_q8_0_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q8_0, K_MM_TILE_ARGS); }
void k_mm_q4_0_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q4_0, K_MM_TILE_ARGS); }
void k_mm_q5_0_avx2(K_MM_TILE_PARAMS) { k_mm_run(&mm_q5_0, K_MM_TILE_ARGS); }
