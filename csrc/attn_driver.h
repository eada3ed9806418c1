/* attn_driver.h — the exact attention kernels over the f16 KV cache,
 * written once: the drivers of k_attention_f16acc_<isa> and
 * k_attention_tiled_<isa> (the loops over tokens, heads, chunks and tiles,
 * the online softmax, the masks and the soft-cap), as static inline
 * functions over per-ISA vector primitives. Included by attn_x86.h (for
 * attn_avx2_amd64.c and attn_avx512_amd64.c)
 * and attn_neon_arm64.c after they define:
 *
 *   ATTN_FN            function attribute of the drivers (the target ISA)
 *   ATTN_LANES         f32 lanes of a vector (the tiled kernel needs head_dim
 *                      a multiple of it; otherwise it runs the ref kernel)
 *   float attn_h2f(k_half), float attn_f16r1(float)   one f16 conversion /
 *                      rounding to f16 and back, as the vector code does it
 *   float attn_dot64(x, y, np)   the vector part of dot_f16 of attn_f16_ref.c:
 *                      its first np (> 0, a multiple of 64) elements
 *   void vblock64/32/16/8(acc, v, kv_stride, cn, ms, vs) (and vblock4 when
 *                      ATTN_LANES is 4)   the V accumulation of a chunk over
 *                      that many head lanes
 *   void vblock64x2(acc0, acc1, v, kv_stride, cn, ms0, vs0, ms1, vs1)   vblock64
 *                      for two heads over the same V rows
 *   void attn_widen_tile(kt, vf, kh, vh, kv_stride, ic, n0, n, hd)   K tile
 *                      transposed to f32 (lanes outside [n0, n) 0), V to f32
 *   void attn_scores(kq, kt, qh, hd, sc)   the tile's 64 scores times sc
 *   void attn_rescale(acc, hd, ms)         acc *= ms
 *   double attn_exp_sum(kq, jlo, jhi, M)   kq[j] = vexp(kq[j] - M) on the
 *                      lanes [jlo, jhi) (0 elsewhere), by groups of 16 each
 *                      reduced pairwise in f32, the groups added in double
 *   void attn_vacc(acc, vf, hd, kq, n)     acc += kq[j] * vf row j, j < n
 *   and the primitives of attn_kvq_driver.h (k_attention_kvq), which it
 *                      includes
 *
 * The primitives keep every rounding of the reference kernels
 * (attn_f16_ref.c, attn_tiled_ref.c), so each ISA gives their bits. */
#ifndef WOOLLY_ATTN_DRIVER_H
#define WOOLLY_ATTN_DRIVER_H

#include "attn_common.h"

#define ATTN_CHUNK 64

/* The V accumulation of a chunk over the head lanes [i, hd) the vector
 * blocks cover (returns where they stop); the driver does the rest in
 * scalar code. */
ATTN_FN static inline __attribute__((always_inline)) int64_t attn_vaccum_f16(float *acc, const k_half *vc,
                                                                            int64_t kv_stride, int64_t cn,
                                                                            const float *msv, const float *vsv,
                                                                            int64_t i, int64_t hd) {
    for (; i + 64 <= hd; i += 64) vblock64(acc + i, vc + i, kv_stride, cn, msv, vsv);
    if (i + 32 <= hd) { vblock32(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 32; }
    if (i + 16 <= hd) { vblock16(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 16; }
    if (i + 8 <= hd) { vblock8(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 8; }
#if ATTN_LANES == 4
    if (i + 4 <= hd) { vblock4(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 4; }
#endif
    return i;
}

/* dot_f16 of attn_f16_ref.c: the vector part, then the rest in double */
ATTN_FN static inline __attribute__((always_inline)) float attn_dot_f16(const float *x, const k_half *y, int64_t n, int64_t np) {
    double sum = 0;
    if (np > 0) sum = (double)attn_dot64(x, y, np);
    for (int64_t i = np; i < n; i++) {
        float p = x[i] * attn_h2f(y[i]);
        sum += (double)p;
    }
    return (float)sum;
}

/* k_attention_f16acc: positions (from the window's first one) in chunks of
 * 64: first the chunk's scores (independent dots, pipelined; soft-capped
 * with the C library's tanhf), then the scalar online-softmax recurrence
 * (ms, vs, S), then the V accumulation. Two query heads of one KV group go
 * together (e = 0, 1: each with its own scores, softmax and accumulator,
 * computed exactly as alone), so each V row is loaded once for both and the
 * two accumulations give the vector units independent work.
 * scratch: 2 * (head_dim + 3*64) floats. */
ATTN_FN static inline __attribute__((always_inline)) void attn_f16acc(ATTN_F16_PARAMS) {
    const int64_t group = n_head / n_head_kv, hd = head_dim, np = hd & ~(int64_t)63;
    const float ksc = k_attn_score_scale(scale, softcap);
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1;) {
            const int64_t g = h / group;
            const int nh = h + 1 < h1 && (h + 1) / group == g ? 2 : 1;
            const k_half *kh = k + g * hd, *vh = v + g * hd;
            float *acc[2], *sc[2], *msv[2], *vsv[2], S[2], M[2];
            const float *qh[2];
            for (int e = 0; e < nh; e++) {
                acc[e] = scratch + e * (hd + 3 * ATTN_CHUNK);
                sc[e] = acc[e] + hd, msv[e] = sc[e] + ATTN_CHUNK, vsv[e] = msv[e] + ATTN_CHUNK;
                qh[e] = q + t * q_stride + (h + e) * hd;
                S[e] = 0, M[e] = -INFINITY;
                for (int64_t i = 0; i < hd; i++) acc[e][i] = 0;
            }
            for (int64_t c0 = first; c0 < npos; c0 += ATTN_CHUNK) {
                const int64_t cn = npos - c0 < ATTN_CHUNK ? npos - c0 : ATTN_CHUNK;
                for (int e = 0; e < nh; e++) {
#ifdef ATTN_SCORES_F16
                    if (np == hd)
                        attn_scores_f16(sc[e], qh[e], kh + c0 * kv_stride, e == 0 && (h == h0 || h % group == 0) ? vh + c0 * kv_stride : 0,
                                        kv_stride, cn, hd, ksc);
                    else
#endif
                        for (int64_t j = 0; j < cn; j++) sc[e][j] = attn_dot_f16(qh[e], kh + (c0 + j) * kv_stride, hd, np) * ksc;
                    if (softcap != 0)
                        for (int64_t j = 0; j < cn; j++) sc[e][j] = softcap * tanhf(sc[e][j]);
#ifdef ATTN_SOFTMAX_CHUNK
                    attn_softmax_chunk(sc[e], cn, &M[e], &S[e], msv[e], vsv[e]);
#else
                    for (int64_t j = 0; j < cn; j++) {
                        const float s = sc[e][j];
                        float ms = 1, vs = 1;
                        if (s > M[e]) {
                            ms = k_attn_expf(M[e] - s);
                            M[e] = s;
                        } else {
                            vs = k_attn_expf(s - M[e]);
                        }
                        S[e] = fmaf(S[e], ms, vs);
                        msv[e][j] = ms;
                        vsv[e][j] = vs;
                    }
#endif
                }
                const k_half *vc = vh + c0 * kv_stride;
                int64_t i0 = 0;
                if (nh == 2)
                    for (; i0 + 64 <= hd; i0 += 64)
                        vblock64x2(acc[0] + i0, acc[1] + i0, vc + i0, kv_stride, cn, msv[0], vsv[0], msv[1], vsv[1]);
                for (int e = 0; e < nh; e++) {
                    for (int64_t i = attn_vaccum_f16(acc[e], vc, kv_stride, cn, msv[e], vsv[e], i0, hd); i < hd; i++) {
                        float a = acc[e][i];
                        for (int64_t j = 0; j < cn; j++) {
                            if (msv[e][j] != 1.0f) a = attn_f16r1(a * msv[e][j]);
                            a = attn_f16r1(fmaf(attn_h2f(vc[j * kv_stride + i]), vsv[e][j], a));
                        }
                        acc[e][i] = a;
                    }
                }
            }
            for (int e = 0; e < nh; e++) {
                if (sinks) k_attn_sink(acc[e], hd, sinks[h + e], M[e], &S[e]);
                const float inv = S[e] != 0 ? 1 / S[e] : 0;
                float *o = out + t * out_stride + (h + e) * hd;
                for (int64_t i = 0; i < hd; i++) o[i] = acc[e][i] * inv;
            }
            h += nh;
        }
    }
}

/* k_attention_tiled: blocks of up to 32 query rows of one head; each
 * 64-position tile of K (transposed) and V is widened to f32 once per block
 * and shared by its rows; tiles before the block's first window and, per
 * row, tiles with no position in the row's window are skipped. */
ATTN_FN static inline __attribute__((always_inline)) void attn_tiled(ATTN_F16_PARAMS) {
    const int64_t group = n_head / n_head_kv, hd = head_dim;
    if (hd % ATTN_LANES != 0) {
        k_attention_tiled_ref(ATTN_F16_ARGS);
        return;
    }
    enum { TILE = K_ATTN_TILE, ROWS = K_ATTN_TILED_ROWS };
    float *kt = scratch;               /* [hd][TILE] K tile, transposed */
    float *vf = kt + hd * TILE;        /* [TILE][hd] V tile */
    float *accs = vf + TILE * hd;      /* [ROWS][hd] */
    float *Ms = accs + ROWS * hd, *Ss = Ms + ROWS, *kq = Ss + ROWS; /* [ROWS], [ROWS], [TILE] */
    const float sc = k_attn_score_scale(scale, softcap);
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
                attn_widen_tile(kt, vf, kh, vh, kv_stride, ic, n0, n, hd);
                for (int64_t r = 0; r < rn; r++) {
                    /* this row's unmasked lanes [jlo, jhi); none: skip the tile */
                    const int64_t p = pos0 + t0 + r, first = k_attn_first(p, window);
                    const int64_t jhi = p + 1 - ic < TILE ? p + 1 - ic : TILE;
                    const int64_t jlo = first > ic ? first - ic : 0;
                    if (jhi <= jlo) continue;
                    const float *qh = q + (t0 + r) * q_stride + h * hd;
                    float *acc = accs + r * hd;
                    attn_scores(kq, kt, qh, hd, sc);
                    if (softcap != 0)
                        for (int64_t j = jlo; j < jhi; j++) kq[j] = tanhf(kq[j]) * softcap;
                    float tmax = -INFINITY;
                    for (int64_t j = jlo; j < jhi; j++) tmax = kq[j] > tmax ? kq[j] : tmax;
                    float M = Ms[r], S = Ss[r];
                    if (tmax > M) {
                        const float ms = k_attn_expf(M - tmax);
                        attn_rescale(acc, hd, ms);
                        S *= ms;
                        M = tmax;
                    }
                    S = (float)((double)S + attn_exp_sum(kq, jlo, jhi, M));
                    Ms[r] = M, Ss[r] = S;
                    attn_vacc(acc, vf + jlo * hd, hd, kq + jlo, jhi - jlo);
                }
            }
            for (int64_t r = 0; r < rn; r++) {
                if (sinks) k_attn_sink(accs + r * hd, hd, sinks[h], Ms[r], &Ss[r]);
                const float inv = Ss[r] != 0 ? 1 / Ss[r] : 0;
                const float *acc = accs + r * hd;
                float *o = out + (t0 + r) * out_stride + h * hd;
                for (int64_t d = 0; d < hd; d++) o[d] = acc[d] * inv;
            }
        }
    }
}

#include "attn_kvq_driver.h"

#endif
