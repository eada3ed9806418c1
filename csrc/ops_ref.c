/* ops_ref.c — scalar reference of the f32 ops: sgemm, attention, rmsnorm,
 * rope, softmax, silu*mul, add, scale. */
#include <math.h>
#include <string.h>
#include "attn_common.h"
#include "kernels.h"

/* C[m][j] for m in [m0,m1), j < N; see k_sgemm in kernels.h. */
void k_sgemm_ref(int trans_b, int64_t m0, int64_t m1, int64_t N, int64_t K,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
    for (int64_t m = m0; m < m1; m++) {
        const float *a = A + m * lda;
        float *c = C + m * ldc;
        if (trans_b) {
            for (int64_t j = 0; j < N; j++) {
                const float *b = B + j * ldb;
                float s = 0;
                for (int64_t k = 0; k < K; k++) s += a[k] * b[k];
                c[j] = s;
            }
        } else {
            for (int64_t j = 0; j < N; j++) c[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                const float ak = a[k];
                const float *b = B + k * ldb;
                for (int64_t j = 0; j < N; j++) c[j] += ak * b[j];
            }
        }
    }
}

/* The reference primitives of k_attn_f32: sums in order, float. */
static float dot_ref(const float *a, const float *b, int64_t n) {
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
static float exp_sum_ref(float *s, int64_t n, float mx) {
    float sum = 0;
    for (int64_t p = 0; p < n; p++) {
        s[p] = expf(s[p] - mx);
        sum += s[p];
    }
    return sum;
}
static void axpy_ref(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* Causal GQA attention, one (token, head) at a time, over the positions
 * first .. p of the window (see kernels.h):
 *   s[p'] = scale * q.k[p'] (or softcap * tanhf(q.k[p'] * (scale / softcap)));
 *   s = softmax(s);  out = sum s[p'] v[p']     (scratch[i] is position first + i) */
void k_attention_ref(ATTN_F32_PARAMS) { k_attn_f32(ATTN_F32_ARGS, dot_ref, exp_sum_ref, axpy_ref); }

/* out = x * (1/sqrtf(mean(x^2) + eps)) [* w]; sum of squares in double. */
void k_rmsnorm_ref(float *out, const float *x, const float *w, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = n > 0 ? (float)(sum / (double)n) : 0.0f;
    const float s = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) {
        float t = x[i] * s;
        out[i] = w ? t * w[i] : t;
    }
}

void k_rope_ref(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                const float *cos_t, const float *sin_t, int neox) {
    const int64_t half = n_rot / 2;
    for (int64_t h = 0; h < n_heads; h++) {
        float *xh = x + h * head_dim;
        for (int64_t i = 0; i < half; i++) {
            const int64_t i0 = neox ? i : 2 * i;
            const int64_t i1 = neox ? i + half : 2 * i + 1;
            k_rope_pair(xh, i0, i1, cos_t[i], sin_t[i]);
        }
    }
}

void k_swiglu_ref(float *out, const float *gate, const float *up, int64_t n, int64_t i0, int64_t i1) {
    const int64_t nv = n & ~(int64_t)15;
    for (int64_t i = i0; i < i1; i++) {
        out[i] = k_swiglu1(i, nv, gate[i], up[i]);
    }
}

void k_add_ref(float *out, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void k_scale_ref(float *x, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

