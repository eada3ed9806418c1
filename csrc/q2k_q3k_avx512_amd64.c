/* q2k_q3k_avx512_amd64.c — Q2_K and Q3_K dots and k_matmul_q tiles with
 * AVX-512 BW + VNNI (impl "avx512"; dequantization is the AVX2 kernel).
 * Specification: q2k_q3k_ref.c, same bits (tested against ref and AVX2).
 *
 * One 512-bit vector holds two 32-element vectors of a block (v = 2p, 2p+1:
 * elements 64p .. 64p+63, 16-element groups 4p .. 4p+3, one per 128-bit
 * lane). The group scale is multiplied into the weights as bytes, q * s with
 * |q * s| <= 128 (an unsigned byte), the sign of q * s moved onto the
 * activation, and vpdpbusd adds the 4-element products straight into int32
 * lanes: int32 lane L gets (q * s) . a over elements 4L .. 4L+3 of the
 * vector pair. Folding lanes L and L+8 at the end of a block gives lane l of
 * the reference (element 4l .. 4l+3 of every 32-element vector), exactly: the
 * same integers, summed in another order. The weight-side work (bits, scale
 * products, sign mask) is done once per row and reused by every token. */
#include "q2k_q3k_x86.h"

/* Weights of vector pair p of a block: u = |q * s| bytes, neg = lanes where
 * q * s < 0 (Q3_K; 0 for Q2_K, whose quants and scales are not negative). */
typedef struct {
    __m512i u;
    __mmask64 neg;
} q23_w;

/* Per-block inputs of q23_wts: the 16 scale bytes (q23_scale_bytes)
 * in all four 128-bit lanes, their absolute values (Q3_K), and hmask in both
 * 256-bit halves (Q3_K). */
typedef struct {
    __m512i s, abs_s, hm;
} q23_wblk;

K_AVX512 static inline __attribute__((always_inline)) q23_wblk q23_wblk_make(int type, const void *blk) {
    q23_wblk b;
    b.s = _mm512_broadcast_i32x4(q23_scale_bytes(type, blk));
    b.abs_s = b.s;
    b.hm = b.s;
    if (type == K_Q3_K) {
        b.abs_s = _mm512_abs_epi8(b.s);
        b.hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const k_block_q3_k *)blk)->hmask));
    }
    return b;
}

/* shifts of the 16-bit words, s0 in the low 256 bits and s1 in the high;
 * a negative pair shifts left by -s0, -s1 */
K_AVX512 static inline __attribute__((always_inline)) __m512i q23_shift2(__m512i x, int s0, int s1) {
    if (s0 < 0)
        return _mm512_sllv_epi16(x, _mm512_inserti64x4(_mm512_set1_epi16((short)-s0), _mm256_set1_epi16((short)-s1), 1));
    return _mm512_srlv_epi16(x, _mm512_inserti64x4(_mm512_set1_epi16((short)s0), _mm256_set1_epi16((short)s1), 1));
}

/* pshufb index: in 128-bit lane L, byte 4p + L of each lane (in every byte,
 * or with word = 1: in the low byte of each word and 0 in the high one) */
K_AVX512 static inline __attribute__((always_inline)) __m512i q23_group_idx(int p, int word) {
    const short hi = word ? (short)0x8000 : 0;
    __m128i l[4];
    for (int L = 0; L < 4; L++)
        l[L] = _mm_set1_epi16((short)(hi | ((word ? 0 : (4 * p + L) << 8)) | (4 * p + L)));
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(l[1], l[0])), _mm256_set_m128i(l[3], l[2]), 1);
}

K_AVX512 static inline __attribute__((always_inline)) q23_w q23_wts(int type, const void *blk, q23_wblk b, int p) {
    const uint8_t *qs = type == K_Q2_K ? ((const k_block_q2_k *)blk)->qs : ((const k_block_q3_k *)blk)->qs;
    const int k = 2 * (p % 2); /* vectors 2p, 2p+1 are vectors k, k+1 of half p/2 */
    const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * (p / 2))));
    __m512i q = _mm512_and_si512(q23_shift2(bits, 2 * k, 2 * k + 2), _mm512_set1_epi8(3));
    /* |scale| of group 4p + L in the low byte of each word of lane L: the
     * word-wise multiply below then gives |q| * |s| <= 4 * 32 per byte, with
     * nothing carried into the high byte */
    const __m512i s_words = _mm512_shuffle_epi8(b.abs_s, q23_group_idx(p, 1));
    q23_w r;
    if (type == K_Q2_K) {
        r.u = _mm512_mullo_epi16(q, s_words);
        r.neg = 0;
        return r;
    }
    /* bit 2p / 2p+1 of hmask[l] moved to bit 2: +4 */
    const __m512i h4 = _mm512_and_si512(q23_shift2(b.hm, 2 * p - 2, 2 * p - 1), _mm512_set1_epi8(4));
    q = _mm512_sub_epi8(_mm512_or_si512(q, h4), _mm512_set1_epi8(4)); /* -4..3 */
    r.u = _mm512_mullo_epi16(_mm512_abs_epi8(q), s_words);
    r.neg = _mm512_movepi8_mask(q) ^ _mm512_movepi8_mask(_mm512_shuffle_epi8(b.s, q23_group_idx(p, 0)));
    return r;
}

/* ---- the hooks of q2k_q3k_pieces.h' tile: 4 steps, one per vector pair p ---- */
#define Q23_TARGET K_AVX512
#define Q23_T8 1
#define Q23_TMAX 8
#define Q23_STEPS 4
typedef __m512i q23_wi;

/* sumi + pair p's lane sums against a token's quants qs (with the weights' signs) */
K_AVX512 static inline __attribute__((always_inline)) __m512i q23_acc(const int type, __m512i sumi, q23_w wq, const int8_t *qs,
                                                                     const int p) {
    __m512i av = _mm512_loadu_si512((const void *)(qs + 64 * p));
    if (type == K_Q3_K) av = _mm512_mask_sub_epi8(av, wq.neg, _mm512_setzero_si512(), av);
    return _mm512_dpbusd_epi32(sumi, wq.u, av);
}
/* lanes L and L+8 added: the reference's lane l */
K_AVX512 static inline __attribute__((always_inline)) __m256i q23_fold(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

#include "q2k_q3k_pieces.h"

K_AVX512 float k_dot_q2_k_q8_k_avx512(int64_t n, const void *w, const void *a) { return q23_dot(K_Q2_K, n, w, a); }
K_AVX512 float k_dot_q3_k_q8_k_avx512(int64_t n, const void *w, const void *a) { return q23_dot(K_Q3_K, n, w, a); }
void k_mm_q2_k_avx512(K_MM_TILE_PARAMS) { k_mm_run(&q2k_kernel, K_MM_TILE_ARGS); }
void k_mm_q3_k_avx512(K_MM_TILE_PARAMS) { k_mm_run(&q3k_kernel, K_MM_TILE_ARGS); }
