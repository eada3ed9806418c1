/* attn_tiled_ref.c — reference of k_attention_tiled (see kernels.h): causal
 * attention over an f16 KV cache with the numerics of the reference build's
 * tiled CPU flash attention (64 or more query rows). Scalar, exact. */
#include "attn_common.h"

void k_attention_tiled_ref(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                           int64_t head_dim, const float *q, int64_t q_stride,
                           const k_half *k, const k_half *v, int64_t kv_stride,
                           float scale, int64_t window, float softcap, const float *sinks, float *out, int64_t out_stride,
                           int64_t h0, int64_t h1, float *scratch) {
    const int64_t group = n_head / n_head_kv, hd = head_dim;
    const float sc = k_attn_score_scale(scale, softcap);
    float *kq = scratch, *acc = scratch + K_ATTN_TILE;
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * hd;
            float S = 0, M = -INFINITY;
            for (int64_t d = 0; d < hd; d++) acc[d] = 0;
            /* tiles at multiples of 64 from the one holding the window's
             * first position; lanes [jlo, jhi) are unmasked */
            for (int64_t ic = first - first % K_ATTN_TILE; ic < npos; ic += K_ATTN_TILE) {
                const int64_t jlo = first > ic ? first - ic : 0;
                const int64_t jhi = npos - ic < K_ATTN_TILE ? npos - ic : K_ATTN_TILE;
                float tmax = -INFINITY;
                for (int64_t j = jlo; j < jhi; j++) {
                    const k_half *kp = k + (ic + j) * kv_stride + g * hd;
                    float s = 0;
                    for (int64_t d = 0; d < hd; d++) s = fmaf(qh[d], k_f16_to_f32(kp[d]), s);
                    kq[j] = s * sc;
                    if (softcap != 0) kq[j] = tanhf(kq[j]) * softcap;
                    if (kq[j] > tmax) tmax = kq[j];
                }
                if (tmax > M) {
                    const float ms = k_attn_expf(M - tmax);
                    for (int64_t d = 0; d < hd; d++) acc[d] *= ms;
                    S *= ms;
                    M = tmax;
                }
                /* exponentials in groups of 16 lanes (masked lanes 0), each
                 * group reduced pairwise in f32 and added in double; groups
                 * without an unmasked lane would add 0 */
                double sum = 0;
                for (int64_t b = jlo - jlo % 16; b < jhi; b += 16) {
                    float lanes[16] = {0};
                    for (int64_t l = 0; l < 16; l++) {
                        if (b + l < jlo || b + l >= jhi) continue;
                        lanes[l] = k_attn_vexpf(kq[b + l] - M);
                        kq[b + l] = lanes[l];
                    }
                    for (int w = 8; w >= 1; w /= 2)
                        for (int l = 0; l < w; l++) lanes[l] += lanes[l + w];
                    sum += (double)lanes[0];
                }
                S = (float)((double)S + sum);
                for (int64_t j = jlo; j < jhi; j++) {
                    const k_half *vp = v + (ic + j) * kv_stride + g * hd;
                    const float w = kq[j];
                    for (int64_t d = 0; d < hd; d++) acc[d] = fmaf(w, k_f16_to_f32(vp[d]), acc[d]);
                }
            }
            if (sinks) k_attn_sink(acc, hd, sinks[h], M, &S);
            const float inv = S != 0 ? 1 / S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t d = 0; d < hd; d++) o[d] = acc[d] * inv;
        }
    }
}
