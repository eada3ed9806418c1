/* attn_f16_avx2_amd64.c — k_attention_f16acc with AVX2+FMA+F16C; the same
 * bits as k_attention_f16acc_ref (attn_f16_ref.c): the same FMAs, the same
 * reduction tree, f16 rounding by vcvtps2ph (round to nearest even).
 *
 * Positions (from the window's first one) go in chunks of 64: first the
 * chunk's scores (independent dots, pipelined; soft-capped with the C
 * library's tanhf), then the scalar online-softmax recurrence (ms, vs, S), then
 * the V accumulation, 64 head lanes at a time held in registers across the
 * chunk. scratch: head_dim + 3*64 floats. */
#include "attn_common.h"
#include "kernels_avx2_amd64.h"

#define RNE _MM_FROUND_TO_NEAREST_INT
#define CHUNK 64

K_AVX2 static inline __m256 f16r8(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, RNE)); }
K_AVX2 static inline float f16r1(float x) { return _cvtsh_ss(_cvtss_sh(x, RNE)); }
K_AVX2 static inline __m256 ldh8(const k_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* dot_f16 of attn_f16_ref.c: accumulator j lanes 0..7 / 8..15 = a[j]l / a[j]h */
K_AVX2 static inline float dot_f16(const float *x, const k_half *y, int64_t n, int64_t np) {
    double sum = 0;
    if (np > 0) {
        __m256 a0l = _mm256_setzero_ps(), a0h = a0l, a1l = a0l, a1h = a0l, a2l = a0l, a2h = a0l, a3l = a0l, a3h = a0l;
        for (int64_t i = 0; i < np; i += 64) {
            a0l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i),      ldh8(y + i),      a0l);
            a0h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8),  ldh8(y + i + 8),  a0h);
            a1l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), ldh8(y + i + 16), a1l);
            a1h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), ldh8(y + i + 24), a1h);
            a2l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 32), ldh8(y + i + 32), a2l);
            a2h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 40), ldh8(y + i + 40), a2h);
            a3l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 48), ldh8(y + i + 48), a3l);
            a3h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 56), ldh8(y + i + 56), a3h);
        }
        a0l = _mm256_add_ps(a0l, a2l); a0h = _mm256_add_ps(a0h, a2h);   /* a0 += a2 */
        a1l = _mm256_add_ps(a1l, a3l); a1h = _mm256_add_ps(a1h, a3h);   /* a1 += a3 */
        a0l = _mm256_add_ps(a0l, a1l); a0h = _mm256_add_ps(a0h, a1h);   /* a0 += a1 */
        const __m256 v = _mm256_add_ps(a0l, a0h);                       /* w = 8 */
        __m128 u = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* w = 4 */
        u = _mm_add_ps(u, _mm_movehl_ps(u, u));                         /* w = 2 */
        u = _mm_add_ss(u, _mm_movehdup_ps(u));                          /* w = 1 */
        sum = (double)_mm_cvtss_f32(u);
    }
    for (int64_t i = np; i < n; i++) {
        float p = x[i] * _cvtsh_ss(y[i]);
        sum += (double)p;
    }
    return (float)sum;
}

/* V accumulation of one chunk for NV vectors of 8 head lanes at acc / v:
 *   acc = f16(acc * ms[j]) when ms[j] != 1 (ms == 1 leaves f16 values as
 *   they are), then acc = f16(fmaf(v[j], vs[j], acc)), j = 0 .. cn-1. */
#define VBLOCK(NV)                                                                                   \
    K_AVX2 static inline void vblock##NV(float *acc, const k_half *v, int64_t kv_stride, int64_t cn, \
                                         const float *ms, const float *vs) {                        \
        __m256 a[NV];                                                                                \
        for (int r = 0; r < NV; r++) a[r] = _mm256_loadu_ps(acc + 8 * r);                            \
        for (int64_t j = 0; j < cn; j++) {                                                           \
            const k_half *vp = v + j * kv_stride;                                                    \
            if (ms[j] != 1.0f) {                                                                     \
                const __m256 vm = _mm256_set1_ps(ms[j]);                                             \
                for (int r = 0; r < NV; r++) a[r] = f16r8(_mm256_mul_ps(a[r], vm));                  \
            }                                                                                        \
            const __m256 vv = _mm256_set1_ps(vs[j]);                                                 \
            for (int r = 0; r < NV; r++) a[r] = f16r8(_mm256_fmadd_ps(ldh8(vp + 8 * r), vv, a[r]));  \
        }                                                                                            \
        for (int r = 0; r < NV; r++) _mm256_storeu_ps(acc + 8 * r, a[r]);                            \
    }
#pragma GCC push_options
#pragma GCC optimize("unroll-loops")
VBLOCK(8)
VBLOCK(4)
VBLOCK(2)
VBLOCK(1)
#pragma GCC pop_options

K_AVX2 void k_attention_f16acc_avx2(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
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
                for (; i + 64 <= hd; i += 64) vblock8(acc + i, vc + i, kv_stride, cn, msv, vsv);
                if (i + 32 <= hd) { vblock4(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 32; }
                if (i + 16 <= hd) { vblock2(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 16; }
                if (i + 8 <= hd) { vblock1(acc + i, vc + i, kv_stride, cn, msv, vsv); i += 8; }
                for (; i < hd; i++) {
                    float a = acc[i];
                    for (int64_t j = 0; j < cn; j++) {
                        if (msv[j] != 1.0f) a = f16r1(a * msv[j]);
                        a = f16r1(fmaf(_cvtsh_ss(vc[j * kv_stride + i]), vsv[j], a));
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
