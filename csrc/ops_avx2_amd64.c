/* ops_avx2_amd64.c — attention, rmsnorm, rope, softmax, silu*mul, swiglu,
 * add, scale, AVX2. Specification: ops_ref.c. rope and swiglu give the ref's
 * bits; softmax and silu_mul use a vector polynomial exp (Cephes-style range
 * reduction, degree-6, about 1 ulp), so they match ref to ~1e-6 relative,
 * not bit for bit. */
#include <math.h>
#include "kernels_avx2_amd64.h"
#include "vexp_avx2_amd64.h"

/* e^x for 8 lanes; x below -87.3 gives 0, above 88.7 is clamped. */
K_AVX2 static inline __m256 vexp(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.72283f), lo = _mm256_set1_ps(-87.33654f);
    const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    /* x = n ln2 + r, |r| <= ln2/2 */
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* * 2^n (n in [-126, 128]: split in two steps so 2^128 does not overflow the exponent field) */
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    p = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    return _mm256_andnot_ps(under, p);
}

/* x[i] = exp(x[i] - mx); returns the sum (f32 lanes, double tail fold) */
K_AVX2 static float exp_sub_sum(float *x, int64_t n, float mx) {
    const __m256 vm = _mm256_set1_ps(mx);
    __m256 s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = vexp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        s = _mm256_add_ps(s, e);
    }
    float sum = k_hsum_avx2(s);
    for (; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    return sum;
}

K_AVX2 static inline float dot_f32(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = k_hsum_avx2(_mm256_add_ps(s0, s1));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* y += a * x */
K_AVX2 static inline void axpy(float *y, float a, const float *x, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

/* k_attn_f32 (attn_common.h) over the AVX2 dot, exp and axpy. */
K_AVX2 void k_attention_avx2(ATTN_F32_PARAMS) { k_attn_f32(ATTN_F32_ARGS, dot_f32, exp_sub_sum, axpy); }

/* sum of float squares accumulated in double, as ref */
K_AVX2 void k_rmsnorm_avx2(float *out, const float *x, const float *w, int64_t n, float eps) {
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 sq = _mm256_mul_ps(v, v);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    double buf[4];
    _mm256_storeu_pd(buf, _mm256_add_pd(s0, s1));
    double sum = (buf[0] + buf[1]) + (buf[2] + buf[3]);
    for (; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = n > 0 ? (float)(sum / (double)n) : 0.0f;
    const float s = 1.0f / sqrtf(mean + eps);
    const __m256 vs = _mm256_set1_ps(s);
    i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 t = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
        if (w) t = _mm256_mul_ps(t, _mm256_loadu_ps(w + i));
        _mm256_storeu_ps(out + i, t);
    }
    for (; i < n; i++) {
        float t = x[i] * s;
        out[i] = w ? t * w[i] : t;
    }
}

K_AVX2 void k_add_avx2(float *out, const float *a, const float *b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; i++) out[i] = a[i] + b[i];
}

K_AVX2 void k_scale_avx2(float *x, float s, int64_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    for (; i < n; i++) x[i] *= s;
}

/* k_rope_ref's roundings on 8 lanes. Pairs (2i, 2i+1): with a = x0 in both
 * lanes of a pair and b = x1, lane 2i is fma(a, c, b * -s) and lane 2i+1 is
 * fma(a, s, b * c) (negating s is exact, so b * -s = -(x1 * s)). */
K_AVX2 void k_rope_avx2(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                        const float *cos_t, const float *sin_t, int neox) {
    const int64_t half = n_rot / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * head_dim;
        int64_t i = 0;
        if (neox) {
            for (; i + 8 <= half; i += 8) {
                const __m256 x0 = _mm256_loadu_ps(xh + i), x1 = _mm256_loadu_ps(xh + i + half);
                const __m256 c = _mm256_loadu_ps(cos_t + i), s = _mm256_loadu_ps(sin_t + i);
                _mm256_storeu_ps(xh + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
                _mm256_storeu_ps(xh + i + half, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
            }
        } else {
            const __m256 negeven = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
            const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
            for (; i + 4 <= half; i += 4) {
                const __m256 v = _mm256_loadu_ps(xh + 2 * i);
                const __m256 a = _mm256_moveldup_ps(v), b = _mm256_movehdup_ps(v);
                const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos_t + i)), dup);
                const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin_t + i)), dup);
                const __m256 cs = _mm256_blend_ps(c, s, 0xAA);                         /* c, s, c, s, ... */
                const __m256 sc = _mm256_xor_ps(_mm256_blend_ps(s, c, 0xAA), negeven); /* -s, c, -s, c, ... */
                _mm256_storeu_ps(xh + 2 * i, _mm256_fmadd_ps(a, cs, _mm256_mul_ps(b, sc)));
            }
        }
        for (; i < half; i++) {
            const int64_t i0 = neox ? i : 2 * i;
            const int64_t i1 = neox ? i + half : 2 * i + 1;
            k_rope_pair(xh, i0, i1, cos_t[i], sin_t[i]);
        }
    }
}

/* k_swiglu_ref with vexpf8 over the ggml_v_expf part of the range. */
K_AVX2 void k_swiglu_avx2(float *out, const float *gate, const float *up, int64_t n, int64_t i0, int64_t i1) {
    const int64_t nv = n & ~(int64_t)15, v1 = i1 < nv ? i1 : nv;
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    int64_t i = i0;
    for (; i + 8 <= v1; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = vexpf8(_mm256_sub_ps(zero, g));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
    for (; i < i1; i++) {
        out[i] = k_swiglu1(i, nv, gate[i], up[i]);
    }
}
