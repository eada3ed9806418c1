/* attn_f16_avx2_amd64.c — k_attention_f16acc with AVX2+FMA+F16C; the same
 * bits as k_attention_f16acc_ref (attn_f16_ref.c): the same FMAs, the same
 * reduction tree, f16 rounding by vcvtps2ph (round to nearest even). */
#include <math.h>
#include "kernels_avx2_amd64.h"

#define RNE _MM_FROUND_TO_NEAREST_INT

K_AVX2 static inline __m256 f16r8(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, RNE)); }
K_AVX2 static inline float f16r1(float x) { return _cvtsh_ss(_cvtss_sh(x, RNE)); }

/* dot_f16 of attn_f16_ref.c: accumulator j lanes 0..7 / 8..15 = a[j]l / a[j]h */
K_AVX2 static float dot_f16(const float *x, const float *y, int64_t n, int64_t np) {
    double sum = 0;
    if (np > 0) {
        __m256 a0l = _mm256_setzero_ps(), a0h = a0l, a1l = a0l, a1h = a0l, a2l = a0l, a2h = a0l, a3l = a0l, a3h = a0l;
        for (int64_t i = 0; i < np; i += 64) {
            a0l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i),      _mm256_loadu_ps(y + i),      a0l);
            a0h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8),  _mm256_loadu_ps(y + i + 8),  a0h);
            a1l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a1l);
            a1h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a1h);
            a2l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 32), _mm256_loadu_ps(y + i + 32), a2l);
            a2h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 40), _mm256_loadu_ps(y + i + 40), a2h);
            a3l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 48), _mm256_loadu_ps(y + i + 48), a3l);
            a3h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 56), _mm256_loadu_ps(y + i + 56), a3h);
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
        float p = x[i] * y[i];
        sum += (double)p;
    }
    return (float)sum;
}

K_AVX2 void k_attention_f16acc_avx2(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                                    int64_t head_dim, const float *q, int64_t q_stride,
                                    const float *k, const float *v, int64_t kv_stride,
                                    float scale, float *out, int64_t out_stride,
                                    int64_t h0, int64_t h1, float *acc) {
    const int64_t group = n_head / n_head_kv, hd = head_dim, np = hd & ~(int64_t)63;
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1;
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * hd;
            float S = 0, M = -INFINITY;
            for (int64_t i = 0; i < hd; i++) acc[i] = 0;
            for (int64_t p = 0; p < npos; p++) {
                const float *kp = k + p * kv_stride + g * hd, *vp = v + p * kv_stride + g * hd;
                const float s = dot_f16(qh, kp, hd, np) * scale;
                float ms = 1, vs = 1;
                if (s > M) {
                    const float old = M;
                    M = s;
                    ms = expf(old - M);
                    const __m256 vm = _mm256_set1_ps(ms);
                    int64_t i = 0;
                    for (; i + 8 <= hd; i += 8) _mm256_storeu_ps(acc + i, f16r8(_mm256_mul_ps(_mm256_loadu_ps(acc + i), vm)));
                    for (; i < hd; i++) {
                        float m = acc[i] * ms;
                        acc[i] = f16r1(m);
                    }
                } else {
                    vs = expf(s - M);
                }
                const __m256 vv = _mm256_set1_ps(vs);
                int64_t i = 0;
                for (; i < np; i += 8)
                    _mm256_storeu_ps(acc + i, f16r8(_mm256_fmadd_ps(_mm256_loadu_ps(vp + i), vv, _mm256_loadu_ps(acc + i))));
                for (; i + 8 <= hd; i += 8) {
                    const __m256 pv = _mm256_mul_ps(_mm256_loadu_ps(vp + i), vv);
                    _mm256_storeu_ps(acc + i, f16r8(_mm256_add_ps(_mm256_loadu_ps(acc + i), pv)));
                }
                for (; i < hd; i++) {
                    float pv = vp[i] * vs;
                    acc[i] = f16r1(acc[i] + pv);
                }
                float sm = S * ms;
                S = sm + vs;
            }
            const float inv = S != 0 ? 1 / S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = acc[i] * inv;
        }
    }
}
