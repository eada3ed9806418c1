/* iq4_avx512_amd64.c — IQ4_NL and IQ4_XS dots and tiles, AVX-512 BW + VNNI.
 *
 * A 512-bit vector holds two 32-element groups (two IQ4_NL blocks, or two
 * consecutive IQ4_XS sub-blocks): 128-bit lanes [low nibbles of group 0,
 * high nibbles of group 0, low of group 1, high of group 1], matching 64
 * activation bytes. vpshufb maps the nibbles to |level| and the levels
 * 0..7 (the negative ones) negate the activations (a mask subtract, as
 * AVX-512 has no vpsignb); then
 *   IQ4_NL  vpdpbusd: int32 lanes 0..7 are group 0's, 8..15 group 1's;
 *   IQ4_XS  vpmaddubsw + vpdpwssd with the two sub-blocks' scales, the
 *           halves added at the end of the super-block.
 * These are the exact int32 lanes of iq4_ref.c / the AVX2 kernels, and the
 * f32 steps are the same, so every result has their bits:
 *   vec_dot order (one token): one 512-bit accumulator whose low half takes
 *     the even blocks and high half the odd blocks — the reference's two
 *     accumulators side by side; added half to half at the end;
 *   batch order: the two halves folded one after the other into one 256-bit
 *     accumulator per token. */
#include <math.h>
#include "kernels_avx2_amd64.h"

#define K_INLINE static inline __attribute__((always_inline))

/* |level| of each nibble, in all four 128-bit lanes */
K_AVX512 K_INLINE __m512i iq4_abs_table512(void) {
    return _mm512_broadcast_i32x4(_mm_abs_epi8(_mm_loadu_si128((const __m128i *)k_iq4nl_values)));
}

/* v = the 32 packed bytes of groups 0 (low 128 bits) and 1 (high): nibble
 * indices in the two-group lane order described above */
K_AVX512 K_INLINE __m512i iq4_index_pair(__m256i v) {
    const __m512i z = _mm512_castsi256_si512(v);
    const __m512i dup = _mm512_shuffle_i64x2(z, z, 0x50); /* lanes 0, 0, 1, 1 */
    return _mm512_and_si512(_mm512_mask_srli_epi16(dup, (__mmask32)0xFF00FF00u, dup, 4), _mm512_set1_epi8(15));
}

/* weights of a pair of groups, ready for the dots: |level| and where level < 0 */
struct iq4_wpair { __m512i mag; __mmask64 neg; };

K_AVX512 K_INLINE struct iq4_wpair iq4_wpair_of(__m512i absq, __m256i packed) {
    const __m512i idx = iq4_index_pair(packed);
    struct iq4_wpair p = {_mm512_shuffle_epi8(absq, idx), _mm512_cmplt_epu8_mask(idx, _mm512_set1_epi8(8))};
    return p;
}

/* activations with the weights' signs */
K_AVX512 K_INLINE __m512i iq4_signed_acts(struct iq4_wpair p, __m512i av) {
    return _mm512_mask_sub_epi8(av, p.neg, _mm512_setzero_si512(), av);
}

K_AVX512 K_INLINE __m256i iq4_load2x16(const uint8_t *q0, const uint8_t *q1) {
    return _mm256_set_m128i(_mm_loadu_si128((const __m128i *)q1), _mm_loadu_si128((const __m128i *)q0));
}

K_AVX512 K_INLINE __m512i iq4_load2x32(const int8_t *a0, const int8_t *a1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a0)),
                              _mm256_loadu_si256((const __m256i *)a1), 1);
}

/* one IQ4_NL block against one Q8_0 block on 256 bits: its 8 int32 lanes */
K_AVX512 K_INLINE __m256i iq4nl_lanes256(const k_block_iq4_nl *x, const k_block_q8_0 *y) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_iq4nl_values));
    const __m256i q = _mm256_shuffle_epi8(table, k_nibbles32_avx2(x->qs));
    const __m256i a = _mm256_loadu_si256((const __m256i *)y->qs);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(a, q));
}

/* the high 256 bits of a float vector (AVX-512 F only, no DQ) */
K_AVX512 K_INLINE __m256 iq4_hi256(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

K_AVX512 K_INLINE int32_t iq4_isum256(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_cvtsi128_si32(s) + _mm_extract_epi32(s, 1) + _mm_extract_epi32(s, 2) + _mm_extract_epi32(s, 3);
}

/* ---- IQ4_NL x Q8_0 ---- */

/* R rows x one token, vec_dot's order (see the top of the file; an odd
 * last block is fmaf(d, its integer sum, total)) */
K_AVX512 K_INLINE void iq4nl_rows(const int R, int64_t n, const char *w, size_t row_bytes, const void *a, float *out) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const __m512i absq = iq4_abs_table512();
    const int64_t nb = n / K_QK;
    __m512 acc[4] = {0};
    for (int64_t i = 0; i + 1 < nb; i += 2) {
        const __m512i av = iq4_load2x32(y[i].qs, y[i + 1].qs);
        const float dy0 = k_h2f_avx2(y[i].d), dy1 = k_h2f_avx2(y[i + 1].d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_iq4_nl *x = (const k_block_iq4_nl *)(w + (size_t)r * row_bytes) + i;
            if (R > 1) _mm_prefetch((const char *)x + 4 * row_bytes, _MM_HINT_T0); /* the next group of rows */
            const struct iq4_wpair p = iq4_wpair_of(absq, iq4_load2x16(x[0].qs, x[1].qs));
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.mag, iq4_signed_acts(p, av));
            const __m512 d = _mm512_mask_blend_ps((__mmask16)0xFF00u, _mm512_set1_ps(k_h2f_avx2(x[0].d) * dy0),
                                                  _mm512_set1_ps(k_h2f_avx2(x[1].d) * dy1));
            acc[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc[r]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        out[r] = k_hsum_avx2(_mm256_add_ps(_mm512_castps512_ps256(acc[r]), iq4_hi256(acc[r])));
    if (nb % 2) {
        const k_block_q8_0 *yl = &y[nb - 1]; /* the last block */
        const float dy = k_h2f_avx2(yl->d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_iq4_nl *x = (const k_block_iq4_nl *)(w + (size_t)r * row_bytes) + (nb - 1);
            out[r] = fmaf(k_h2f_avx2(x->d) * dy, (float)iq4_isum256(iq4nl_lanes256(x, yl)), out[r]);
        }
    }
}

/* one row x T tokens of a batch, tinyBLAS_Q0's order: per token one 256-bit
 * accumulator taking block 2k, then block 2k+1 */
K_AVX512 K_INLINE void iq4nl_toks(const int T, int64_t n, const void *w, const char *a, size_t a_row_bytes, float *out) {
    const k_block_iq4_nl *x = (const k_block_iq4_nl *)w;
    const __m512i absq = iq4_abs_table512();
    const int64_t nb = n / K_QK;
    __m256 acc[4] = {0};
    for (int64_t i = 0; i + 1 < nb; i += 2) {
        const struct iq4_wpair p = iq4_wpair_of(absq, iq4_load2x16(x[i].qs, x[i + 1].qs));
        const float d0 = k_h2f_avx2(x[i].d), d1 = k_h2f_avx2(x[i + 1].d);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.mag, iq4_signed_acts(p, iq4_load2x32(y[0].qs, y[1].qs)));
            const __m512 f = _mm512_cvtepi32_ps(s);
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d0 * k_h2f_avx2(y[0].d)), _mm512_castps512_ps256(f), acc[k]);
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d1 * k_h2f_avx2(y[1].d)), iq4_hi256(f), acc[k]);
        }
    }
    if (nb % 2) {
        const int64_t i = nb - 1; /* the last block */
        const float d = k_h2f_avx2(x[i].d);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++) {
            const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * k_h2f_avx2(y->d)), _mm256_cvtepi32_ps(iq4nl_lanes256(&x[i], y)), acc[k]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < T; k++) out[k] = k_hsum_avx2(acc[k]);
}

/* ---- IQ4_XS x Q8_K ---- */

/* the hooks of iq4_x86.h: 4 steps of two sub-blocks (2p, 2p+1) each, the
 * int32 sums in 512 bits with vpmaddubsw + vpdpwssd and the halves added
 * at the end of the super-block; pick[p] takes scale word 2p to words
 * 0..15 and 2p+1 to 16..31 from the 8 scales in every 128-bit lane */
#define IQ4_TARGET K_AVX512
#define IQ4XS_STEPS 4
typedef struct { __m512i absq, pick[4]; } iq4xs_ctx;
typedef __m512i iq4xs_wi, iq4xs_wsc;
typedef struct iq4_wpair iq4xs_w;
K_AVX512 K_INLINE iq4xs_ctx iq4xs_ctx_make(void) {
    iq4xs_ctx cx;
    cx.absq = iq4_abs_table512();
    _Pragma("GCC unroll 8")
    for (int p = 0; p < 4; p++)
        cx.pick[p] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * p)), _mm256_set1_epi16((short)(2 * p + 1)), 1);
    return cx;
}
K_AVX512 K_INLINE __m512i iq4xs_scales(const k_block_iq4_xs *x) {
    const __m128i s = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)k_iq4xs_scales8(x)));
    return _mm512_broadcast_i32x4(_mm_sub_epi16(s, _mm_set1_epi16(32)));
}
K_AVX512 K_INLINE __m512i iq4xs_act(const k_block_q8_k *y, const int p) { return _mm512_loadu_si512((const void *)(y->qs + 64 * p)); }
K_AVX512 K_INLINE struct iq4_wpair iq4xs_wts(iq4xs_ctx cx, const k_block_iq4_xs *x, const int p) {
    return iq4_wpair_of(cx.absq, _mm256_loadu_si256((const __m256i *)(x->qs + 32 * p)));
}
K_AVX512 K_INLINE __m512i iq4xs_ls(iq4xs_ctx cx, __m512i sc, const int p) { return _mm512_permutexvar_epi16(cx.pick[p], sc); }
K_AVX512 K_INLINE __m512i iq4xs_madd(__m512i sumi, struct iq4_wpair wp, __m512i av, __m512i ls) {
    return _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(wp.mag, iq4_signed_acts(wp, av)), ls);
}
K_AVX512 K_INLINE __m256i iq4xs_fold(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

#include "iq4_x86.h"

K_AVX512 float k_dot_iq4_nl_q8_0_avx512(int64_t n, const void *w, const void *a) { return iq4nl_dot(n, w, a); }
K_AVX512 float k_dot_iq4_xs_q8_k_avx512(int64_t n, const void *w, const void *a) { return iq4xs_dot(n, w, a); }
void k_mm_iq4_nl_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_iq4nl_piece, K_MM_TILE_ARGS); }
void k_mm_iq4_xs_avx512(K_MM_TILE_PARAMS) { k_mm_run(&mm_iq4xs_piece, K_MM_TILE_ARGS); }
