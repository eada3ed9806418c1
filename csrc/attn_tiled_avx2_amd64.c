/* attn_tiled_avx2_amd64.c — k_attention_tiled with AVX2+FMA+F16C; the same
 * bits as k_attention_tiled_ref (attn_tiled_ref.c).
 *
 * Work goes by blocks of up to 32 query rows of one head: each 64-position
 * tile of K (transposed) and V is widened to f32 once per block and shared by
 * its rows; tiles before the block's first window and, per row, tiles with
 * no position in the row's window are skipped. Per row and tile the 64 scores are 8 vectors of independent FMA
 * chains over the head dimension (lane j = position j), the exponentials are
 * ggml_v_expf on 8 lanes, and V is accumulated 64 head lanes at a time in
 * registers. head_dim not a multiple of 8 runs the ref kernel. */
#include "attn_common.h"
#include "kernels_avx2_amd64.h"
#include "vexp_avx2_amd64.h"

#define TILE K_ATTN_TILE
#define ROWS K_ATTN_TILED_ROWS

K_AVX2 static inline __m256 ldh8(const k_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* Transposes the 8x8 block r[0..7] in place: r[i] lane j <- r[j] lane i. */
K_AVX2 static inline void transpose8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* acc[0..8*NV) = fmaf(kq[j], vf[j*hd + ...], acc) for j < n, in registers. */
#define VACC(NV)                                                                                     \
    K_AVX2 static inline void vacc##NV(float *acc, const float *vf, int64_t hd, const float *kq,     \
                                       int64_t n) {                                                  \
        __m256 a[NV];                                                                                \
        for (int r = 0; r < NV; r++) a[r] = _mm256_loadu_ps(acc + 8 * r);                            \
        for (int64_t j = 0; j < n; j++) {                                                            \
            const __m256 w = _mm256_broadcast_ss(kq + j);                                            \
            for (int r = 0; r < NV; r++) a[r] = _mm256_fmadd_ps(w, _mm256_loadu_ps(vf + j * hd + 8 * r), a[r]); \
        }                                                                                            \
        for (int r = 0; r < NV; r++) _mm256_storeu_ps(acc + 8 * r, a[r]);                            \
    }
#pragma GCC push_options
#pragma GCC optimize("unroll-loops")
VACC(8)
VACC(4)
VACC(2)
VACC(1)
#pragma GCC pop_options

K_AVX2 void k_attention_tiled_avx2(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                                   int64_t head_dim, const float *q, int64_t q_stride,
                                   const k_half *k, const k_half *v, int64_t kv_stride,
                                   float scale, int64_t window, float softcap, float *out, int64_t out_stride,
                                   int64_t h0, int64_t h1, float *scratch) {
    const int64_t group = n_head / n_head_kv, hd = head_dim;
    if (hd % 8 != 0) {
        k_attention_tiled_ref(n_tok, pos0, n_head, n_head_kv, head_dim, q, q_stride, k, v, kv_stride,
                              scale, window, softcap, out, out_stride, h0, h1, scratch);
        return;
    }
    float *kt = scratch;               /* [hd][TILE] K tile, transposed */
    float *vf = kt + hd * TILE;        /* [TILE][hd] V tile */
    float *accs = vf + TILE * hd;      /* [ROWS][hd] */
    float *Ms = accs + ROWS * hd, *Ss = Ms + ROWS, *kq = Ss + ROWS; /* [ROWS], [ROWS], [TILE] */
    const float sc = k_attn_score_scale(scale, softcap);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t h = h0; h < h1; h++) {
        const int64_t g = h / group;
        const k_half *kh = k + g * hd, *vh = v + g * hd;
        for (int64_t t0 = 0; t0 < n_tok; t0 += ROWS) {
            const int64_t rn = n_tok - t0 < ROWS ? n_tok - t0 : ROWS;
            for (int64_t i = 0; i < rn * hd; i++) accs[i] = 0;
            for (int64_t r = 0; r < rn; r++) Ms[r] = -INFINITY, Ss[r] = 0;
            /* the block's positions: first0 (its first row's window) .. npmax - 1 */
            const int64_t npmax = pos0 + t0 + rn, first0 = k_attn_first(pos0 + t0, window);
            for (int64_t ic = first0 - first0 % TILE; ic < npmax; ic += TILE) {
                const int64_t n = npmax - ic < TILE ? npmax - ic : TILE;
                const int64_t n0 = first0 > ic ? first0 - ic : 0;
                /* widen the tile's lanes [n0, n): K transposed (other lanes 0), V as is */
                for (int64_t j0 = 0; j0 < TILE; j0 += 8) {
                    for (int64_t d0 = 0; d0 < hd; d0 += 8) {
                        __m256 b[8];
                        for (int jj = 0; jj < 8; jj++)
                            b[jj] = j0 + jj >= n0 && j0 + jj < n ? ldh8(kh + (ic + j0 + jj) * kv_stride + d0)
                                                                 : _mm256_setzero_ps();
                        transpose8(b);
                        for (int dd = 0; dd < 8; dd++) _mm256_storeu_ps(kt + (d0 + dd) * TILE + j0, b[dd]);
                    }
                }
                for (int64_t j = n0; j < n; j++)
                    for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(vf + j * hd + d, ldh8(vh + (ic + j) * kv_stride + d));
                for (int64_t r = 0; r < rn; r++) {
                    /* this row's unmasked lanes [jlo, jhi); none: skip the tile */
                    const int64_t p = pos0 + t0 + r, first = k_attn_first(p, window);
                    const int64_t jhi = p + 1 - ic < TILE ? p + 1 - ic : TILE;
                    const int64_t jlo = first > ic ? first - ic : 0;
                    if (jhi <= jlo) continue;
                    const float *qh = q + (t0 + r) * q_stride + h * hd;
                    float *acc = accs + r * hd;
                    /* scores: lane j of vector c is position 8c + j */
                    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
                    for (int64_t d = 0; d < hd; d++) {
                        const __m256 qd = _mm256_broadcast_ss(qh + d);
                        const float *kd = kt + d * TILE;
                        s0 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd), s0);
                        s1 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 8), s1);
                        s2 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 16), s2);
                        s3 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 24), s3);
                        s4 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 32), s4);
                        s5 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 40), s5);
                        s6 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 48), s6);
                        s7 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 56), s7);
                    }
                    const __m256 vsc = _mm256_set1_ps(sc);
                    _mm256_storeu_ps(kq, _mm256_mul_ps(s0, vsc));
                    _mm256_storeu_ps(kq + 8, _mm256_mul_ps(s1, vsc));
                    _mm256_storeu_ps(kq + 16, _mm256_mul_ps(s2, vsc));
                    _mm256_storeu_ps(kq + 24, _mm256_mul_ps(s3, vsc));
                    _mm256_storeu_ps(kq + 32, _mm256_mul_ps(s4, vsc));
                    _mm256_storeu_ps(kq + 40, _mm256_mul_ps(s5, vsc));
                    _mm256_storeu_ps(kq + 48, _mm256_mul_ps(s6, vsc));
                    _mm256_storeu_ps(kq + 56, _mm256_mul_ps(s7, vsc));
                    if (softcap != 0)
                        for (int64_t j = jlo; j < jhi; j++) kq[j] = tanhf(kq[j]) * softcap;
                    float tmax = -INFINITY;
                    for (int64_t j = jlo; j < jhi; j++) tmax = kq[j] > tmax ? kq[j] : tmax;
                    float M = Ms[r], S = Ss[r];
                    if (tmax > M) {
                        const float ms = k_attn_expf(M - tmax);
                        const __m256 vm = _mm256_set1_ps(ms);
                        for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(acc + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), vm));
                        S *= ms;
                        M = tmax;
                    }
                    /* exponentials of the lanes [jlo, jhi), 0 elsewhere, by
                     * groups of 16 (the groups outside would add 0) */
                    const __m256 vM = _mm256_set1_ps(M);
                    double sum = 0;
                    for (int64_t b = jlo - jlo % 16; b < jhi; b += 16) {
                        const __m256i lo = _mm256_set1_epi32((int)(jlo - b) - 1), hi = _mm256_set1_epi32((int)(jhi - b));
                        const __m256i lane1 = _mm256_add_epi32(lane, _mm256_set1_epi32(8));
                        const __m256 m0 = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(hi, lane), _mm256_cmpgt_epi32(lane, lo)));
                        const __m256 m1 = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(hi, lane1), _mm256_cmpgt_epi32(lane1, lo)));
                        const __m256 e0 = _mm256_and_ps(m0, vexpf8(_mm256_sub_ps(_mm256_loadu_ps(kq + b), vM)));
                        const __m256 e1 = _mm256_and_ps(m1, vexpf8(_mm256_sub_ps(_mm256_loadu_ps(kq + b + 8), vM)));
                        _mm256_storeu_ps(kq + b, e0);
                        _mm256_storeu_ps(kq + b + 8, e1);
                        const __m256 w8 = _mm256_add_ps(e0, e1);
                        __m128 u = _mm_add_ps(_mm256_castps256_ps128(w8), _mm256_extractf128_ps(w8, 1));
                        u = _mm_add_ps(u, _mm_movehl_ps(u, u));
                        u = _mm_add_ss(u, _mm_movehdup_ps(u));
                        sum += (double)_mm_cvtss_f32(u);
                    }
                    S = (float)((double)S + sum);
                    Ms[r] = M, Ss[r] = S;
                    const int64_t nj = jhi - jlo;
                    const float *kqj = kq + jlo, *vfj = vf + jlo * hd;
                    int64_t d = 0;
                    for (; d + 64 <= hd; d += 64) vacc8(acc + d, vfj + d, hd, kqj, nj);
                    if (d + 32 <= hd) { vacc4(acc + d, vfj + d, hd, kqj, nj); d += 32; }
                    if (d + 16 <= hd) { vacc2(acc + d, vfj + d, hd, kqj, nj); d += 16; }
                    if (d + 8 <= hd) { vacc1(acc + d, vfj + d, hd, kqj, nj); d += 8; }
                }
            }
            for (int64_t r = 0; r < rn; r++) {
                const float inv = Ss[r] != 0 ? 1 / Ss[r] : 0;
                const float *acc = accs + r * hd;
                float *o = out + (t0 + r) * out_stride + h * hd;
                for (int64_t d = 0; d < hd; d++) o[d] = acc[d] * inv;
            }
        }
    }
}
