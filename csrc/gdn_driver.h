/* gdn_driver.h — the drivers of the Gated DeltaNet kernels (gdn.h), written
 * once as static inline functions over one per-ISA piece. Included by
 * gdn_ref.c, gdn_avx2_amd64.c, gdn_avx512_amd64.c and gdn_neon_arm64.c
 * after they define:
 *
 *   GDN_FN   function attribute of the drivers (the target ISA, or nothing)
 *   float gdn_row(m, k, q, S, decay, vj, b, scale)   one row of the state:
 *            m[i] *= decay; dj = (vj - dot(m, k)) * b; m[i] = fmaf(k[i], dj,
 *            m[i]); returns dot(m, q) * scale — dot in the order of gdn.h
 *
 * The convolution is element-wise over channels; it is written here in
 * scalar C (fmaf, so each tap is one fused multiply-add on every ISA) and
 * compiled for each target. */
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

GDN_FN static inline __attribute__((always_inline)) void gdn_conv(K_GDN_CONV_PARAMS) {
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

#endif
