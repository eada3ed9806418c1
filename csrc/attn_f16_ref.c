/* attn_f16_ref.c — reference of k_attention_f16acc (see kernels.h): causal
 * attention over an f16 KV cache with the reference build's f16-accumulating
 * flash-attention numerics (fewer than 64 query rows). Scalar, exact: fmaf
 * for the fused steps, every f16 rounding through k_f32_to_f16. */
#include "attn_common.h"

static inline float f16r(float x) { return k_f16_to_f32(k_f32_to_f16(x)); }

/* dot_f16: 4 accumulators x 16 lanes of FMA over the first np elements
 * (np a multiple of 64), fixed reduction tree, the rest in double. */
float k_attn_dot_f16_ref(const float *x, const k_half *y, int64_t n, int64_t np) {
    double sum = 0;
    if (np > 0) {
        float a[4][16] = {{0}};
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++)
                    a[j][l] = fmaf(x[i + 16 * j + l], k_f16_to_f32(y[i + 16 * j + l]), a[j][l]);
        for (int l = 0; l < 16; l++) {
            a[0][l] += a[2][l];
            a[1][l] += a[3][l];
        }
        for (int l = 0; l < 16; l++) a[0][l] += a[1][l];
        for (int w = 8; w >= 1; w /= 2)
            for (int l = 0; l < w; l++) a[0][l] += a[0][l + w];
        sum = (double)a[0][0];
    }
    for (int64_t i = np; i < n; i++) {
        float p = x[i] * k_f16_to_f32(y[i]);
        sum += (double)p;
    }
    return (float)sum;
}

void k_attention_f16acc_ref(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                            int64_t head_dim, const float *q, int64_t q_stride,
                            const k_half *k, const k_half *v, int64_t kv_stride,
                            float scale, int64_t window, float softcap, const float *sinks, float *out, int64_t out_stride,
                            int64_t h0, int64_t h1, float *acc) {
    const int64_t group = n_head / n_head_kv, hd = head_dim, np = hd & ~(int64_t)63;
    const float sc = k_attn_score_scale(scale, softcap);
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * hd;
            float S = 0, M = -INFINITY;
            for (int64_t i = 0; i < hd; i++) acc[i] = 0;
            for (int64_t p = first; p < npos; p++) {
                const k_half *kp = k + p * kv_stride + g * hd, *vp = v + p * kv_stride + g * hd;
                float s = k_attn_dot_f16_ref(qh, kp, hd, np) * sc;
                if (softcap != 0) s = softcap * tanhf(s);
                float ms = 1, vs = 1;
                if (s > M) {
                    const float old = M;
                    M = s;
                    ms = k_attn_expf(old - M);
                    for (int64_t i = 0; i < hd; i++) {
                        float m = acc[i] * ms;
                        acc[i] = f16r(m);
                    }
                } else {
                    vs = k_attn_expf(s - M);
                }
                for (int64_t i = 0; i < hd; i++) acc[i] = f16r(fmaf(k_f16_to_f32(vp[i]), vs, acc[i]));
                S = fmaf(S, ms, vs);
            }
            if (sinks) k_attn_sink(acc, hd, sinks[h], M, &S);
            const float inv = S != 0 ? 1 / S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = acc[i] * inv;
        }
    }
}
