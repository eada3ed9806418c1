/* attn_tiled_ref.c — reference of k_attention_tiled (see kernels.h): causal
 * attention over an f16 KV cache with the numerics of the reference build's
 * tiled CPU flash attention (64 or more query rows). Scalar, exact. */
#include "attn_common.h"

/* one (token, head): the tiles over its window */
static void tiled_row(k_attn_ref_row *r) {
    const k_half *k = r->k, *v = r->v;
    const int64_t kv_stride = r->kv_stride, hd = r->hd, first = r->first, npos = r->npos;
    const float *qh = r->q;
    const float sc = r->sc, softcap = r->softcap;
    float *acc = r->acc, *kq = r->scratch, M = r->M, S = r->S;
    /* tiles at multiples of 64 from the one holding the window's
     * first position; lanes [jlo, jhi) are unmasked */
    for (int64_t ic = first - first % K_ATTN_TILE; ic < npos; ic += K_ATTN_TILE) {
        const int64_t jlo = first > ic ? first - ic : 0;
        const int64_t jhi = npos - ic < K_ATTN_TILE ? npos - ic : K_ATTN_TILE;
        float tmax = -INFINITY;
        for (int64_t j = jlo; j < jhi; j++) {
            const k_half *kp = k + (ic + j) * kv_stride;
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
            const k_half *vp = v + (ic + j) * kv_stride;
            const float w = kq[j];
            for (int64_t d = 0; d < hd; d++) acc[d] = fmaf(w, k_f16_to_f32(vp[d]), acc[d]);
        }
    }
    r->M = M, r->S = S;
}

/* scratch: the tile's scores [K_ATTN_TILE], then the accumulator */
void k_attention_tiled_ref(ATTN_F16_PARAMS) { k_attn_ref_rows(ATTN_F16_ARGS, scratch + K_ATTN_TILE, tiled_row); }
