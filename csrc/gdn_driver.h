/* gdn_driver.h — the drivers of the Gated DeltaNet kernels (gdn.h), written
 * once as static inline functions over one per-ISA piece. Included by
 * gdn_ref.c, gdn_avx2_amd64.c, gdn_avx512_amd64.c and gdn_neon_arm64.c
 * after they define:
 *
 *   GDN_FN   function attribute of the drivers (the target ISA, or nothing)
 *   float gdn_row(m, k, q, S, decay, vj, b, scale)   one row of the state:
 *            m[i] *= decay; dj = (vj - dot(m, k)) * b; m[i] = fmaf(k[i], dj,
 *            m[i]); returns dot(m, q) * scale — dot in the order of gdn.h
 *            (the vector sets take it from gdn_row.h)
 *
 * The convolution is element-wise over channels; it is written here in
 * plain C loops over blocks of channels (fmaf, so each tap is one fused
 * multiply-add on every ISA), which the compiler vectorizes for each
 * target. */
#ifndef WOOLLY_GDN_DRIVER_H
#define WOOLLY_GDN_DRIVER_H

#include <math.h>
#include "gdn.h"

GDN_FN static inline __attribute__((always_inline)) void gdn_recur(K_GDN_RECUR_PARAMS) {
    const int64_t kd = nK * S, rep = nK > 0 ? nV / nK : 1;
    for (int64_t hv = h0; hv < h1; hv++) {
        const int64_t hk = grouped ? hv / rep : hv % nK;
        float *M = state + hv * S * S;
        for (int64_t t = 0; t < n; t++) {
            const float *row = qkv + t * qkv_stride;
            const float *q = row + hk * S, *k = row + kd + hk * S, *v = row + 2 * kd + hv * S;
            const float dc = decay[t * g_stride + hv], b = beta[t * g_stride + hv];
            float *o = out + t * out_stride + hv * S;
            for (int64_t j = 0; j < S; j++) o[j] = gdn_row(M + j * S, k, q, S, dc, v[j], b, scale);
        }
    }
}

/* one channel at a time (the channels past the last whole block, or
 * windows longer than GDN_CONV_MAXW) */
GDN_FN static inline __attribute__((always_inline)) void gdn_conv1(K_GDN_CONV_PARAMS) {
    for (int64_t ch = c0; ch < c1; ch++) {
        float *wn = win + ch * (K - 1);
        const float *wc = w + ch * K;
        for (int64_t t = 0; t < n; t++) {
            const float x = in[t * stride + ch];
            float sum = 0;
            for (int64_t i = 0; i < K - 1; i++) sum = fmaf(wn[i], wc[i], sum);
            out[t * stride + ch] = fmaf(x, wc[K - 1], sum);
            if (K > 1) {
                for (int64_t i = 0; i + 1 < K - 1; i++) wn[i] = wn[i + 1];
                wn[K - 2] = x;
            }
        }
    }
}

#define GDN_CB 16       /* channels of a block: one vector row per tap */
#define GDN_CT 256      /* channels of a tile (whole blocks) */
#define GDN_CONV_MAXW 8 /* the longest window of the tiled path */
#define GDN_CONV_MINN 4 /* up to this many tokens, one channel at a time (the
                         * rows stay in the cache; transposing costs more) */

/* Tiles of up to GDN_CT channels (whole blocks of GDN_CB): their windows and
 * taps transposed to [tap][channel] on the stack, the window a ring (no
 * shifting); token by token, each row's inputs and outputs of the tile are
 * contiguous (the rows are far apart: walking one channel down the tokens
 * would miss the cache on every row), and the lane loops of a block
 * vectorize. Each channel's operations are those of gdn_conv1, in order. */
GDN_FN static inline __attribute__((always_inline)) void gdn_conv(K_GDN_CONV_PARAMS) {
    const int64_t W = K - 1;
    int64_t ch = c0;
    if (W <= GDN_CONV_MAXW && n > GDN_CONV_MINN)
        while (c1 - ch >= GDN_CB) {
            const int64_t tw = (c1 - ch < GDN_CT ? c1 - ch : GDN_CT) & ~(int64_t)(GDN_CB - 1);
            float wb[GDN_CONV_MAXW][GDN_CT], tp[GDN_CONV_MAXW + 1][GDN_CT];
            for (int64_t c = 0; c < tw; c++) {
                for (int64_t i = 0; i < W; i++) wb[i][c] = win[(ch + c) * W + i];
                for (int64_t i = 0; i < K; i++) tp[i][c] = w[(ch + c) * K + i];
            }
            int64_t r = 0; /* the ring slot of the oldest input */
            for (int64_t t = 0; t < n; t++) {
                const float *x = in + t * stride + ch;
                float *o = out + t * stride + ch;
                for (int64_t cb = 0; cb < tw; cb += GDN_CB) {
                    float s[GDN_CB], xs[GDN_CB]; /* xs: read before out is written */
                    for (int c = 0; c < GDN_CB; c++) s[c] = 0;
                    for (int64_t i = 0; i < W; i++) {
                        const int64_t sl = r + i < W ? r + i : r + i - W;
                        for (int c = 0; c < GDN_CB; c++) s[c] = fmaf(wb[sl][cb + c], tp[i][cb + c], s[c]);
                    }
                    for (int c = 0; c < GDN_CB; c++) xs[c] = x[cb + c];
                    for (int c = 0; c < GDN_CB; c++) o[cb + c] = fmaf(xs[c], tp[W][cb + c], s[c]);
                    if (W > 0)
                        for (int c = 0; c < GDN_CB; c++) wb[r][cb + c] = xs[c];
                }
                if (W > 0) r = r + 1 < W ? r + 1 : 0;
            }
            for (int64_t c = 0; c < tw; c++)
                for (int64_t i = 0; i < W; i++) {
                    const int64_t sl = r + i < W ? r + i : r + i - W;
                    win[(ch + c) * W + i] = wb[sl][c];
                }
            ch += tw;
        }
    gdn_conv1(out, in, stride, n, win, w, K, ch, c1);
}

#endif
