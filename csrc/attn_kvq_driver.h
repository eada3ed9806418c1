/* attn_kvq_driver.h — the driver of k_attention_kvq (the attention over a
 * quantized KV cache), written once as a static inline function over
 * per-ISA primitives. Included by attn_driver.h (for the vector kernel
 * sets) and by attn_kvq_ref.c (the reference: scalar primitives that leave
 * every lane to the driver's own loops) after they define:
 *
 *   ATTN_FN            function attribute of the driver (the target ISA)
 *   float attn_h2f(k_half), float attn_f16r1(float)   one f16 conversion /
 *                      rounding to f16 and back
 *   float attn_dot_f16(x, y, n, np)   dot_f16 of attn_f16_ref.c
 *   int64_t attn_kvq_vscale(acc, n, ms)         acc = acc * ms lane-wise
 *   int64_t attn_kvq_vmad(acc, vf, n, vs)       acc = fmaf(vf, vs, acc)
 *   int64_t attn_kvq_vscale_h(acc, n, ms)       acc = f16(acc * ms)
 *   int64_t attn_kvq_vmad_h(acc, vh, n, vs)     acc = f16(fmaf(f32(vh), vs, acc))
 *                      (the V steps over the whole vectors of the first n
 *                      lanes; each returns where it stopped, the driver
 *                      does the rest in scalar code with the same roundings) */
#ifndef WOOLLY_ATTN_KVQ_DRIVER_H
#define WOOLLY_ATTN_KVQ_DRIVER_H

#include "attn_common.h"

/* k_attention_kvq (attn_kvq_ref.c): per (token, head) Q in K's vec-dot
 * type, then position by position the score (the impl's K dot, or
 * attn_dot_f16), the online softmax and the V step on the vector primitives,
 * the lanes they leave in scalar code (the same roundings). */
ATTN_FN static inline __attribute__((always_inline)) void attn_kvq(ATTN_KVQ_PARAMS) {
    const int64_t group = n_head / n_head_kv, hd = head_dim, np = hd & ~(int64_t)63;
    const float sc = k_attn_score_scale(scale, softcap);
    const int64_t kgb = k_row_bytes(ktype, hd), vgb = k_row_bytes(vtype, hd);
    float *acc = scratch, *vf = scratch + hd, *qf = scratch + 2 * hd;
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * hd;
            if (ktype == K_F16)
                for (int64_t i = 0; i < hd; i++) qf[i] = attn_f16r1(qh[i]);
            else
                fn->q8(qh, qf, hd);
            float S = 0, M = -INFINITY;
            for (int64_t i = 0; i < hd; i++) acc[i] = 0;
            for (int64_t p = first; p < npos; p++) {
                const char *kp = (const char *)k + p * k_stride + g * kgb;
                const char *vp = (const char *)v + p * v_stride + g * vgb;
                float s = ktype == K_F16 ? attn_dot_f16(qf, (const k_half *)kp, hd, np) : fn->kdot(hd, kp, qf);
                s *= sc;
                if (softcap != 0) s = softcap * tanhf(s);
                float ms = 1, vs = 1;
                if (s > M) {
                    ms = k_attn_new_max(&M, s);
                    if (vtype == K_F16)
                        for (int64_t i = attn_kvq_vscale_h(acc, hd, ms); i < hd; i++) acc[i] = attn_f16r1(acc[i] * ms);
                    else
                        for (int64_t i = attn_kvq_vscale(acc, hd, ms); i < hd; i++) acc[i] *= ms;
                } else {
                    vs = k_attn_expf(s - M);
                }
                if (vtype == K_F16) {
                    const k_half *vh = (const k_half *)vp;
                    for (int64_t i = attn_kvq_vmad_h(acc, vh, hd, vs); i < hd; i++)
                        acc[i] = attn_f16r1(fmaf(attn_h2f(vh[i]), vs, acc[i]));
                } else {
                    fn->vdeq(vp, vf, hd);
                    for (int64_t i = attn_kvq_vmad(acc, vf, hd, vs); i < hd; i++) acc[i] = fmaf(vf[i], vs, acc[i]);
                }
                S = fmaf(S, ms, vs);
            }
            const float inv = S != 0 ? 1 / S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = acc[i] * inv;
        }
    }
}

#endif
