/* attn_kvq_ref.c — reference of k_attention_kvq (see kernels.h): causal
 * attention over a KV cache with q8_0 / q4_0 (or f16) K and V rows, with
 * the numerics of the reference build's one-row CPU flash attention for
 * such a cache; and the q4_0 row quantizer that stores K / V rows. Scalar,
 * exact: fmaf for the fused steps, every f16 rounding through
 * k_f32_to_f16. */
#include "attn_common.h"

static inline float f16r(float x) { return k_f16_to_f32(k_f32_to_f16(x)); }

/* Q4_0 as the reference stores a row (its scalar quantizer): max = the
 * value of largest magnitude (the first), d = max / -8 (f16), id = 1/d
 * (0 for an all-zero block), q = min(15, (int8)(x * id + 8.5)); element j
 * in the low nibble of qs[j], j + 16 in the high one. */
void k_quantize_q4_0_ref(const float *x, void *dst, int64_t n) {
    k_block_q4_0 *y = (k_block_q4_0 *)dst;
    for (int64_t i = 0; i < n / K_QK; i++, x += K_QK) {
        float amax = 0, max = 0;
        for (int j = 0; j < K_QK; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = k_f32_to_f16(d);
        for (int j = 0; j < K_QK / 2; j++) {
            const float x0 = x[j] * id + 8.5f, x1 = x[j + K_QK / 2] * id + 8.5f;
            int8_t q0 = (int8_t)x0, q1 = (int8_t)x1;
            q0 = q0 < 15 ? q0 : 15;
            q1 = q1 < 15 ? q1 : 15;
            y[i].qs[j] = (uint8_t)q0 | (uint8_t)(q1 << 4);
        }
    }
}

void k_attention_kvq_ref(ATTN_KVQ_PARAMS) {
    const int64_t group = n_head / n_head_kv, hd = head_dim, np = hd & ~(int64_t)63;
    const float sc = k_attn_score_scale(scale, softcap);
    const int64_t kgb = k_row_bytes(ktype, hd), vgb = k_row_bytes(vtype, hd);
    float *acc = scratch, *vf = scratch + hd, *qf = scratch + 2 * hd; /* qf: Q as f16 values, or its q8_0 bytes */
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * hd;
            if (ktype == K_F16)
                for (int64_t i = 0; i < hd; i++) qf[i] = f16r(qh[i]);
            else
                fn->q8(qh, qf, hd);
            float S = 0, M = -INFINITY;
            for (int64_t i = 0; i < hd; i++) acc[i] = 0;
            for (int64_t p = first; p < npos; p++) {
                const char *kp = (const char *)k + p * k_stride + g * kgb;
                const char *vp = (const char *)v + p * v_stride + g * vgb;
                float s = ktype == K_F16 ? k_attn_dot_f16_ref(qf, (const k_half *)kp, hd, np) : fn->kdot(hd, kp, qf);
                s *= sc;
                if (softcap != 0) s = softcap * tanhf(s);
                float ms = 1, vs = 1;
                if (s > M) {
                    const float old = M;
                    M = s;
                    ms = k_attn_expf(old - M);
                    if (vtype == K_F16)
                        for (int64_t i = 0; i < hd; i++) acc[i] = f16r(acc[i] * ms);
                    else
                        for (int64_t i = 0; i < hd; i++) acc[i] *= ms;
                } else {
                    vs = k_attn_expf(s - M);
                }
                if (vtype == K_F16) {
                    const k_half *vh = (const k_half *)vp;
                    for (int64_t i = 0; i < hd; i++) acc[i] = f16r(fmaf(k_f16_to_f32(vh[i]), vs, acc[i]));
                } else {
                    fn->vdeq(vp, vf, hd);
                    for (int64_t i = 0; i < hd; i++) acc[i] = fmaf(vf[i], vs, acc[i]);
                }
                S = fmaf(S, ms, vs);
            }
            const float inv = S != 0 ? 1 / S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = acc[i] * inv;
        }
    }
}
