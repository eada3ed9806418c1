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

/* one (token, head): the f16-accumulating online softmax, position by
 * position */
static void f16acc_row(k_attn_ref_row *r) {
    const int64_t hd = r->hd, np = hd & ~(int64_t)63;
    float *acc = r->acc;
    for (int64_t p = r->first; p < r->npos; p++) {
        const k_half *kp = r->k + p * r->kv_stride, *vp = r->v + p * r->kv_stride;
        float s = k_attn_dot_f16_ref(r->q, kp, hd, np) * r->sc;
        if (r->softcap != 0) s = r->softcap * tanhf(s);
        float ms = 1, vs = 1;
        if (s > r->M) {
            ms = k_attn_new_max(&r->M, s);
            for (int64_t i = 0; i < hd; i++) {
                float m = acc[i] * ms;
                acc[i] = f16r(m);
            }
        } else {
            vs = k_attn_expf(s - r->M);
        }
        for (int64_t i = 0; i < hd; i++) acc[i] = f16r(fmaf(k_f16_to_f32(vp[i]), vs, acc[i]));
        r->S = fmaf(r->S, ms, vs);
    }
}

/* scratch: the accumulator */
void k_attention_f16acc_ref(ATTN_F16_PARAMS) { k_attn_ref_rows(ATTN_F16_ARGS, scratch, f16acc_row); }
