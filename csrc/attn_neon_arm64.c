/*
 * attn_neon_arm64.c — the exact attention kernels over the f16 KV cache with
 * NEON: k_attention_f16acc_neon and k_attention_tiled_neon, the same bits as
 * k_attention_f16acc_ref / k_attention_tiled_ref (attn_f16_ref.c,
 * attn_tiled_ref.c). Same structure as the AVX2 kernels
 * (attn_f16_avx2_amd64.c, attn_tiled_avx2_amd64.c) with 4-lane vectors:
 * vfmaq is the fused step, vcvt_f16_f32 rounds to nearest even (default
 * FPCR), and the 16-lane reduction trees are spelled out lane for lane.
 * Both skip the positions before the sliding window (the tiled one by whole
 * tiles) and soft-cap with the C library's tanhf, as the ref kernels do.
 */
#include <arm_neon.h>
#include "attn_common.h"
#include "kernels_neon_arm64.h"
#include "vexp_neon_arm64.h"

#define CHUNK 64
#define TILE K_ATTN_TILE
#define ROWS K_ATTN_TILED_ROWS

static inline float32x4_t ldh4(const k_half *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
static inline float32x4_t f16r4(float32x4_t x) { return vcvt_f32_f16(vcvt_f16_f32(x)); }
static inline float f16r1(float x) { return vgetq_lane_f32(f16r4(vdupq_n_f32(x)), 0); }
static inline float h2f(k_half h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

/* lanes (0..3) + (4..7) of the 16-lane tree after the w = 8 step: w = 4, 2, 1 */
static inline float tree8(float32x4_t lo, float32x4_t hi) {
    const float32x4_t v4 = vaddq_f32(lo, hi);
    const float32x2_t v2 = vadd_f32(vget_low_f32(v4), vget_high_f32(v4));
    return vget_lane_f32(v2, 0) + vget_lane_f32(v2, 1);
}

/* ---- k_attention_f16acc ---- */

/* dot_f16 of attn_f16_ref.c: a[j][4c..4c+3] = accumulator j, lanes 4c.. */
static inline float dot_f16(const float *x, const k_half *y, int64_t n, int64_t np) {
    double sum = 0;
    if (np > 0) {
        float32x4_t a[4][4];
        for (int j = 0; j < 4; j++)
            for (int c = 0; c < 4; c++) a[j][c] = vdupq_n_f32(0);
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int c = 0; c < 4; c++)
                    a[j][c] = vfmaq_f32(a[j][c], vld1q_f32(x + i + 16 * j + 4 * c), ldh4(y + i + 16 * j + 4 * c));
        float32x4_t v[4];
        for (int c = 0; c < 4; c++) v[c] = vaddq_f32(vaddq_f32(a[0][c], a[2][c]), vaddq_f32(a[1][c], a[3][c]));
        sum = (double)tree8(vaddq_f32(v[0], v[2]), vaddq_f32(v[1], v[3])); /* w = 8, then 4, 2, 1 */
    }
    for (int64_t i = np; i < n; i++) {
        float p = x[i] * h2f(y[i]);
        sum += (double)p;
    }
    return (float)sum;
}

#define VBLOCK(NV)                                                                                  \
    static inline void vblock##NV(float *acc, const k_half *v, int64_t kv_stride, int64_t cn,       \
                                  const float *ms, const float *vs) {                               \
        float32x4_t a[NV];                                                                          \
        for (int r = 0; r < NV; r++) a[r] = vld1q_f32(acc + 4 * r);                                 \
        for (int64_t j = 0; j < cn; j++) {                                                          \
            const k_half *vp = v + j * kv_stride;                                                   \
            if (ms[j] != 1.0f)                                                                      \
                for (int r = 0; r < NV; r++) a[r] = f16r4(vmulq_n_f32(a[r], ms[j]));                \
            for (int r = 0; r < NV; r++) a[r] = f16r4(vfmaq_n_f32(a[r], ldh4(vp + 4 * r), vs[j]));  \
        }                                                                                           \
        for (int r = 0; r < NV; r++) vst1q_f32(acc + 4 * r, a[r]);                                  \
    }
#pragma GCC push_options
#pragma GCC optimize("unroll-loops")
VBLOCK(16)
VBLOCK(8)
VBLOCK(4)
VBLOCK(2)
VBLOCK(1)
#pragma GCC pop_options

void k_attention_f16acc_neon(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                             int64_t head_dim, const float *q, int64_t q_stride,
                             const k_half *k, const k_half *v, int64_t kv_stride,
                             float scale, int64_t window, float softcap, float *out, int64_t out_stride,
                             int64_t h0, int64_t h1, float *scratch) {
    const int64_t group = n_head / n_head_kv, hd = head_dim, np = hd & ~(int64_t)63;
    const float ksc = k_attn_score_scale(scale, softcap);
    float *acc = scratch, *sc = scratch + hd, *msv = sc + CHUNK, *vsv = msv + CHUNK;
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * hd;
            const k_half *kh = k + g * hd, *vh = v + g * hd;
            float S = 0, M = -INFINITY;
            for (int64_t i = 0; i < hd; i++) acc[i] = 0;
            for (int64_t c0 = first; c0 < npos; c0 += CHUNK) {
                const int64_t cn = npos - c0 < CHUNK ? npos - c0 : CHUNK;
                for (int64_t j = 0; j < cn; j++) sc[j] = dot_f16(qh, kh + (c0 + j) * kv_stride, hd, np) * ksc;
                if (softcap != 0)
                    for (int64_t j = 0; j < cn; j++) sc[j] = softcap * tanhf(sc[j]);
                for (int64_t j = 0; j < cn; j++) {
                    const float s = sc[j];
                    float ms = 1, vs = 1;
                    if (s > M) {
                        ms = k_attn_expf(M - s);
                        M = s;
                    } else {
                        vs = k_attn_expf(s - M);
                    }
                    S = fmaf(S, ms, vs);
                    msv[j] = ms;
                    vsv[j] = vs;
                }
                const k_half *vc = vh + c0 * kv_stride;
                int64_t i = 0;
                for (; i + 64 <= hd; i += 64) vblock16(acc + i, vc + i, kv_stride, cn, msv, vsv);
                if (i + 32 <= hd) { vblock8(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 32; }
                if (i + 16 <= hd) { vblock4(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 16; }
                if (i + 8 <= hd) { vblock2(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 8; }
                if (i + 4 <= hd) { vblock1(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 4; }
                for (; i < hd; i++) {
                    float a = acc[i];
                    for (int64_t j = 0; j < cn; j++) {
                        if (msv[j] != 1.0f) a = f16r1(a * msv[j]);
                        a = f16r1(fmaf(h2f(vc[j * kv_stride + i]), vsv[j], a));
                    }
                    acc[i] = a;
                }
            }
            const float inv = S != 0 ? 1 / S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = acc[i] * inv;
        }
    }
}

/* ---- k_attention_tiled ---- */

#define VACC(NV)                                                                                    \
    static inline void vacc##NV(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { \
        float32x4_t a[NV];                                                                          \
        for (int r = 0; r < NV; r++) a[r] = vld1q_f32(acc + 4 * r);                                 \
        for (int64_t j = 0; j < n; j++) {                                                           \
            const float w = kq[j];                                                                  \
            for (int r = 0; r < NV; r++) a[r] = vfmaq_n_f32(a[r], vld1q_f32(vf + j * hd + 4 * r), w); \
        }                                                                                           \
        for (int r = 0; r < NV; r++) vst1q_f32(acc + 4 * r, a[r]);                                  \
    }
#pragma GCC push_options
#pragma GCC optimize("unroll-loops")
VACC(16)
VACC(8)
VACC(4)
VACC(2)
VACC(1)
#pragma GCC pop_options

void k_attention_tiled_neon(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                            int64_t head_dim, const float *q, int64_t q_stride,
                            const k_half *k, const k_half *v, int64_t kv_stride,
                            float scale, int64_t window, float softcap, float *out, int64_t out_stride,
                            int64_t h0, int64_t h1, float *scratch) {
    const int64_t group = n_head / n_head_kv, hd = head_dim;
    if (hd % 4 != 0) {
        k_attention_tiled_ref(n_tok, pos0, n_head, n_head_kv, head_dim, q, q_stride, k, v, kv_stride,
                              scale, window, softcap, out, out_stride, h0, h1, scratch);
        return;
    }
    float *kt = scratch;               /* [hd][TILE] K tile, transposed */
    float *vf = kt + hd * TILE;        /* [TILE][hd] V tile */
    float *accs = vf + TILE * hd;      /* [ROWS][hd] */
    float *Ms = accs + ROWS * hd, *Ss = Ms + ROWS, *kq = Ss + ROWS;
    const float sc = k_attn_score_scale(scale, softcap);
    const uint32x4_t lane = {0, 1, 2, 3};
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
                for (int64_t j0 = 0; j0 < TILE; j0 += 4) {
                    for (int64_t d0 = 0; d0 < hd; d0 += 4) {
                        float32x4_t b[4];
                        for (int jj = 0; jj < 4; jj++)
                            b[jj] = j0 + jj >= n0 && j0 + jj < n ? ldh4(kh + (ic + j0 + jj) * kv_stride + d0) : vdupq_n_f32(0);
                        const float32x4x2_t t01 = vtrnq_f32(b[0], b[1]), t23 = vtrnq_f32(b[2], b[3]);
                        vst1q_f32(kt + (d0 + 0) * TILE + j0, vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])));
                        vst1q_f32(kt + (d0 + 1) * TILE + j0, vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])));
                        vst1q_f32(kt + (d0 + 2) * TILE + j0, vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])));
                        vst1q_f32(kt + (d0 + 3) * TILE + j0, vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1])));
                    }
                }
                for (int64_t j = n0; j < n; j++)
                    for (int64_t d = 0; d < hd; d += 4) vst1q_f32(vf + j * hd + d, ldh4(vh + (ic + j) * kv_stride + d));
                for (int64_t r = 0; r < rn; r++) {
                    /* this row's unmasked lanes [jlo, jhi); none: skip the tile */
                    const int64_t p = pos0 + t0 + r, first = k_attn_first(p, window);
                    const int64_t jhi = p + 1 - ic < TILE ? p + 1 - ic : TILE;
                    const int64_t jlo = first > ic ? first - ic : 0;
                    if (jhi <= jlo) continue;
                    const float *qh = q + (t0 + r) * q_stride + h * hd;
                    float *acc = accs + r * hd;
                    float32x4_t s[16];
                    for (int c = 0; c < 16; c++) s[c] = vdupq_n_f32(0);
                    for (int64_t d = 0; d < hd; d++) {
                        const float qd = qh[d];
                        const float *kd = kt + d * TILE;
                        for (int c = 0; c < 16; c++) s[c] = vfmaq_n_f32(s[c], vld1q_f32(kd + 4 * c), qd);
                    }
                    for (int c = 0; c < 16; c++) vst1q_f32(kq + 4 * c, vmulq_n_f32(s[c], sc));
                    if (softcap != 0)
                        for (int64_t j = jlo; j < jhi; j++) kq[j] = tanhf(kq[j]) * softcap;
                    float tmax = -INFINITY;
                    for (int64_t j = jlo; j < jhi; j++) tmax = kq[j] > tmax ? kq[j] : tmax;
                    float M = Ms[r], S = Ss[r];
                    if (tmax > M) {
                        const float ms = k_attn_expf(M - tmax);
                        for (int64_t d = 0; d < hd; d += 4) vst1q_f32(acc + d, vmulq_n_f32(vld1q_f32(acc + d), ms));
                        S *= ms;
                        M = tmax;
                    }
                    /* exponentials of the lanes [jlo, jhi), 0 elsewhere, by
                     * groups of 16 (the groups outside would add 0) */
                    const float32x4_t vM = vdupq_n_f32(M);
                    double sum = 0;
                    for (int64_t b = jlo - jlo % 16; b < jhi; b += 16) {
                        float32x4_t e[4];
                        for (int c = 0; c < 4; c++) {
                            /* lane l + b + 4c in [jlo, jhi): (l + b + 4c - jlo) unsigned < jhi - jlo */
                            const uint32x4_t m = vcltq_u32(vaddq_u32(lane, vdupq_n_u32((uint32_t)(b + 4 * c - jlo))),
                                                           vdupq_n_u32((uint32_t)(jhi - jlo)));
                            e[c] = vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(
                                                                         vexpf4(vsubq_f32(vld1q_f32(kq + b + 4 * c), vM)))));
                            vst1q_f32(kq + b + 4 * c, e[c]);
                        }
                        sum += (double)tree8(vaddq_f32(e[0], e[2]), vaddq_f32(e[1], e[3]));
                    }
                    S = (float)((double)S + sum);
                    Ms[r] = M, Ss[r] = S;
                    const int64_t nj = jhi - jlo;
                    const float *kqj = kq + jlo, *vfj = vf + jlo * hd;
                    int64_t d = 0;
                    for (; d + 64 <= hd; d += 64) vacc16(acc + d, vfj + d, hd, kqj, nj);
                    if (d + 32 <= hd) { vacc8(acc + d, vfj + d, hd, kqj, nj); d += 32; }
                    if (d + 16 <= hd) { vacc4(acc + d, vfj + d, hd, kqj, nj); d += 16; }
                    if (d + 8 <= hd) { vacc2(acc + d, vfj + d, hd, kqj, nj); d += 8; }
                    if (d + 4 <= hd) { vacc1(acc + d, vfj + d, hd, kqj, nj); d += 4; }
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
