/* packed_x86.h — row-interleaved ("packed") Q4_K, Q6_K and Q8_0 weights on
 * x86 (see the packed members in kernels.h): the layouts, their pack and
 * unpack functions and the helpers both gemvs use, included by
 * packed_<isa>_amd64.c after simd_<isa>_amd64.h; each of those files has
 * its own gemvs (8 packed rows x one token, the (8, 1) piece of the
 * driver, mm_driver.h) and runs its packed tiles through k_mm_run.
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
 * rows (two rows per 512-bit vector in the AVX-512 gemv).
 *
 * Numerics: per row, the integer lane sums (lane l: the products of bytes
 * 4l..4l+3 of each chunk's low and high nibbles times their sub-block
 * scales, summed over the chunks) and every f32 step (d*yd and dmin*yd
 * products, the 8-lane FMA per block, the 4-lane min FMA, the final
 * horizontal sums) are those of k_dot_q4_k_q8_k_<isa> and of the set's
 * rows4 / tile kernels, so the results are the same bits. */

#include "mm_driver.h"

#define PK_G 8
/* pins an exact int32 accumulator in a register (see MM_CHAIN, mm_simd.h) */
#define PK_CHAIN(v) __asm__("" : "+x"(v))
/* software prefetch distance of the gemv in bytes (0: none). The packed
 * stream is sequential; out of cache (BenchmarkMatVecPacked big, Q4_K,
 * AVX-512, 3 interleaved rounds each, packed / unpacked thread-CPU GB/s)
 * 0 gave 1.00-1.06x, 1152 0.95x, 2304 0.96x, 4608 0.80x, 9216 0.76x,
 * 18432 0.89x: none is used. */
#ifndef PK_PF
#define PK_PF 0
#endif
#define PK_XB (PK_G * (int64_t)sizeof(k_block_q4_k)) /* bytes of one x8 block */

/* The walk of the pack and unpack functions: for every whole group of
 * PK_G rows (nrows a multiple of 8, row_bytes apart) and each block b of
 * its rows, move(o, x, r, pack) copies the fields of block b of row r (x,
 * bsz bytes) into the group's x8 block o (xb bytes, at b * xb) when pack,
 * else back out of it. src is read only: the rows when pack (into dst),
 * the packed groups otherwise. One move per type, so a layout is spelled
 * once for both directions. */
typedef void pk_move_fn(char *o, char *x, int r, int pack);
static inline __attribute__((always_inline)) void pk_walk(int64_t nb, size_t bsz, int64_t xb, const void *src,
                                                          size_t row_bytes, int64_t nrows, void *dst, int pack,
                                                          pk_move_fn *move) {
    for (int64_t g = 0; g + PK_G <= nrows; g += PK_G) {
        char *s = (char *)src + (size_t)g * row_bytes, *d = (char *)dst + (size_t)g * row_bytes;
        char *rows = pack ? s : d, *x8 = pack ? d : s;
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < PK_G; r++) move(x8 + b * xb, rows + (size_t)r * row_bytes + (size_t)b * bsz, r, pack);
    }
}

/* len bytes from field to x8 block place o (pack), or back */
static inline void pk_copy(char *o, void *field, size_t len, int pack) {
    if (pack) memcpy(o, field, len);
    else memcpy(field, o, len);
}

static inline void pk_q4k_move(char *o, char *xb, int r, int pack) {
    k_block_q4_k *x = (k_block_q4_k *)xb;
    pk_copy(o + 2 * r, &x->d, 2, pack);
    pk_copy(o + 16 + 2 * r, &x->dmin, 2, pack);
    for (int k = 0; k < 3; k++) pk_copy(o + 32 + 32 * k + 4 * r, x->scales + 4 * k, 4, pack);
    for (int c = 0; c < 4; c++) pk_copy(o + 128 + 256 * c + 32 * r, x->qs + 32 * c, 32, pack);
}

/* nrows (a multiple of 8) rows of Q4_K, row_bytes apart, into the layout above */
__attribute__((unused)) static void pk_q4k_pack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_walk(n / K_QKK, sizeof(k_block_q4_k), PK_XB, src, row_bytes, nrows, dst, 1, pk_q4k_move);
}

/* the inverse of pk_q4k_pack */
static void pk_q4k_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_walk(n / K_QKK, sizeof(k_block_q4_k), PK_XB, src, row_bytes, nrows, dst, 0, pk_q4k_move);
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

/* The per-block start of the Q4_K gemvs at x8 block i of the group at w
 * and the token's block y: o the x8 block (prefetching PK_PF bytes ahead),
 * dy the rows' d * yd (row r in lane r), s0 / s1 their scales
 * (pk_q4k_scales); the min terms are added to accm (pk_q4k_mins). */
typedef struct {
    const char *o;
    __m256 dy;
    __m256i s0, s1;
} pk_q4k_head;

KT static inline __attribute__((always_inline)) pk_q4k_head pk_q4k_block(const char *w, int64_t i, const k_block_q8_k *y,
                                                                        __m256 accm[4]) {
    pk_q4k_head hd;
    hd.o = w + i * PK_XB;
    if (PK_PF) k_prefetch_lines(hd.o + PK_PF, PK_XB / 64);
    const __m256 yd = _mm256_set1_ps(y->d);
    hd.dy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)hd.o)), yd);
    const __m256 dmy = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(hd.o + 16))), yd);
    const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
    const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    __m256i m0, m1;
    pk_q4k_scales(hd.o, &hd.s0, &hd.s1, &m0, &m1);
    pk_q4k_mins(m0, m1, bsum, dmy, accm);
    return hd;
}

/* the f32 min sum of row r from accm (pk_q4k_mins' pairs) */
KT static inline float pk_q4k_minsum(const __m256 accm[4], int r) {
    static const int pair[8] = {0, 0, 2, 2, 1, 1, 3, 3};
    const __m256 v = accm[pair[r]];
    return k_hsum128_avx2(r & 1 ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
}


/* ---- Q6_K, groups of 8 rows. One x8 block (8 * 210 = 1680 bytes):
 *   [   0,   16)  d of rows 0..7 (f16)
 *   [  16,  144)  the 16 scales of row r at 16 + 16r
 *   [ 144, 1680)  quants: half h (elements 128h ..), row pair p (rows 2p,
 *                 2p+1), part m at 144 + 768h + 192p + 64m + 32s for row
 *                 2p+s: m = 0 ql[64h .. +32), m = 1 ql[64h+32 .. +32),
 *                 m = 2 qh[32h .. +32)
 * so a row pair's parts are 64-byte vectors (the AVX-512 gemv) and the pair's scales
 * one 32-byte load. Per row the integer lanes (k_q6k_quants_avx2's 6-bit
 * quants, the -32 offset folded as 32 * sum scale * bsum, scales 2j / 2j+1
 * on lanes 0..3 / 4..7) and the f32 steps are those of the set's dot. ---- */
#define PK6_XB (PK_G * (int64_t)sizeof(k_block_q6_k))

static inline size_t pk6_off(int h, int r, int m) { return 144 + 768 * h + 192 * (r / 2) + 64 * m + 32 * (r % 2); }

static inline void pk_q6k_move(char *o, char *xb, int r, int pack) {
    k_block_q6_k *x = (k_block_q6_k *)xb;
    pk_copy(o + 2 * r, &x->d, 2, pack);
    pk_copy(o + 16 + 16 * r, x->scales, 16, pack);
    for (int h = 0; h < 2; h++) {
        pk_copy(o + pk6_off(h, r, 0), x->ql + 64 * h, 32, pack);
        pk_copy(o + pk6_off(h, r, 1), x->ql + 64 * h + 32, 32, pack);
        pk_copy(o + pk6_off(h, r, 2), x->qh + 32 * h, 32, pack);
    }
}

__attribute__((unused)) static void pk_q6k_pack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_walk(n / K_QKK, sizeof(k_block_q6_k), PK6_XB, src, row_bytes, nrows, dst, 1, pk_q6k_move);
}

static void pk_q6k_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_walk(n / K_QKK, sizeof(k_block_q6_k), PK6_XB, src, row_bytes, nrows, dst, 0, pk_q6k_move);
}



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

static inline void pk_q8_0_move(char *o, char *xb, int r, int pack) {
    k_block_q8_0 *x = (k_block_q8_0 *)xb;
    pk_copy(o + 2 * r, &x->d, 2, pack);
    pk_copy(o + 16 + 32 * r, x->qs, 32, pack);
}

__attribute__((unused)) static void pk_q8_0_pack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_walk(n / K_QK, sizeof(k_block_q8_0), PK8_XB, src, row_bytes, nrows, dst, 1, pk_q8_0_move);
}

static void pk_q8_0_unpack(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_walk(n / K_QK, sizeof(k_block_q8_0), PK8_XB, src, row_bytes, nrows, dst, 0, pk_q8_0_move);
}

/* The driver's (8, 1) piece over a gemv of 8 packed rows */
#define PK_PIECE(name, gemv)                                                                                    \
    KT static void name(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a, \
                        size_t a_row_bytes, float *out) {                                                       \
        (void)rows, (void)toks, (void)batch, (void)row_bytes, (void)a_row_bytes;                                \
        gemv(n, w, a, out);                                                                                     \
    }

/* A set's packed mm_kernels pk_<t> (isa: its name suffix), which its
 * k_mm_packed_<t>_x8_<isa> run: the (8, 1) pieces of its gemvs
 * pk_q4k_gemv8, pk_q6k_gemv8 and pk_q8_0_gemv8, batches of 4 or more
 * tokens through its unpacked tiles k_mm_<t>_<isa> on the unpacked rows. */
#define PK_KERNEL(t, pt, isa)                                                                                        \
    PK_PIECE(pk_##pt##_piece, pk_##pt##_gemv8)                                                                       \
    static const mm_kernel pk_##t = {.piece = pk_##pt##_piece, .pack_rows = PK_G, .unpack = pk_##pt##_unpack,        \
                                     .unpacked = k_mm_##t##_##isa};
#define PK_X86_KERNELS(isa) PK_KERNEL(q4_k, q4k, isa) PK_KERNEL(q6_k, q6k, isa) PK_KERNEL(q8_0, q8_0, isa)
