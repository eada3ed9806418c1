/* attn_common.h — scalar pieces shared by the exact attention kernels
 * (attn_*.c): the reference build's two exponentials, written out so that
 * every kernel set and every libm give the same bits. Private to csrc. */
#ifndef WOOLLY_ATTN_COMMON_H
#define WOOLLY_ATTN_COMMON_H

#include <math.h>
#include <string.h>
#include "kernels.h"

/* Every rounding below is meant: no contraction into FMAs (gcc -std=c11
 * already keeps them apart; clang contracts within an expression unless told). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The parameters of the exact attention kernels over the f16 cache (see
 * kernels.h) and their names as arguments, for the drivers and dispatch. */
#define ATTN_F16_PARAMS K_ATTN_H_PARAMS
#define ATTN_F16_ARGS \
    n_tok, pos0, n_head, n_head_kv, head_dim, q, q_stride, k, v, kv_stride, scale, window, softcap, sinks, out, out_stride, h0, h1, scratch

/* The same for the attention over an f32 cache (k_attention_<set>). */
#define ATTN_F32_PARAMS                                                                                        \
    int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim, const float *q,         \
        int64_t q_stride, const float *k, const float *v, int64_t kv_stride, float scale, int64_t window,     \
        float softcap, const float *sinks, float *out, int64_t out_stride, int64_t h0, int64_t h1, float *scratch
#define ATTN_F32_ARGS ATTN_F16_ARGS

/* The same for the attention over a quantized cache (k_attention_kvq). */
#define ATTN_KVQ_PARAMS                                                                                        \
    int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim, const float *q,         \
        int64_t q_stride, int ktype, const void *k, int64_t k_stride, int vtype, const void *v,              \
        int64_t v_stride, float scale, int64_t window, float softcap, float *out, int64_t out_stride,         \
        int64_t h0, int64_t h1, float *scratch, const k_attn_kvq_fns *fn
#define ATTN_KVQ_PARAMS_NOFN                                                                                   \
    int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim, const float *q,         \
        int64_t q_stride, int ktype, const void *k, int64_t k_stride, int vtype, const void *v,              \
        int64_t v_stride, float scale, int64_t window, float softcap, float *out, int64_t out_stride,         \
        int64_t h0, int64_t h1, float *scratch
#define ATTN_KVQ_ARGS_NOFN                                                                                     \
    n_tok, pos0, n_head, n_head_kv, head_dim, q, q_stride, ktype, k, k_stride, vtype, v, v_stride, scale,     \
        window, softcap, out, out_stride, h0, h1, scratch
#define ATTN_KVQ_ARGS                                                                                          \
    n_tok, pos0, n_head, n_head_kv, head_dim, q, q_stride, ktype, k, k_stride, vtype, v, v_stride, scale,     \
        window, softcap, out, out_stride, h0, h1, scratch, fn

/* dot_f16 of k_attention_f16acc_ref (attn_f16_ref.c): x (f16 values as
 * f32) . y, 4 accumulators x 16 lanes over the first np elements, the rest
 * in double. */
float k_attn_dot_f16_ref(const float *x, const k_half *y, int64_t n, int64_t np);

/* Query rows per block of k_attention_tiled: they share a converted K/V tile. */
#define K_ATTN_TILED_ROWS 32
#define K_ATTN_TILE 64

static inline uint64_t k_attn_dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double k_attn_bitsd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline uint32_t k_attn_fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float k_attn_bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* First cache position that the query at position p attends to: with a
 * window (> 0) the keys p' with p - p' < window, i.e. llama.cpp's standard
 * sliding-window mask; otherwise position 0. */
static inline int64_t k_attn_first(int64_t p, int64_t window) {
    return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
}

/* The multiplier of q.k: the reference folds the soft-cap into the scale
 * (scale / cap, one f32 division) and caps the scaled score with tanhf. */
static inline float k_attn_score_scale(float scale, float softcap) {
    return softcap != 0 ? scale / softcap : scale;
}

/* 2^e for -1022 <= e <= 1023 */
static inline double k_attn_pow2(int e) { return k_attn_bitsd((uint64_t)(e + 1023) << 52); }

/* glibc's expf (optimized-routines algorithm, x86-64 build): a 32-entry table
 * of 2^(i/32) and a cubic in double, each operation rounded (-std=c11 keeps
 * gcc from contracting). Out of (-103, 88] the double exp rounded to f32.
 * The table and constants are shared with the vector form in attn_x86.h. */
static const uint64_t k_attn_exp_tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
#define K_ATTN_EXP_INVLN2N (0x1.71547652b82fep+0 * 32)
#define K_ATTN_EXP_SHIFT 0x1.8p+52
#define K_ATTN_EXP_C0 (0x1.c6af84b912394p-5 / 32 / 32 / 32)
#define K_ATTN_EXP_C1 (0x1.ebfce50fac4f3p-3 / 32 / 32)
#define K_ATTN_EXP_C2 (0x1.62e42ff0c52d6p-1 / 32)
/* the lanes k_attn_expf computes itself (the rest go to exp) */
static inline int k_attn_expf_fast(float x) { return x > -103.0f && !(x > 88.0f); }
static inline float k_attn_expf(float x) {
    if (!k_attn_expf_fast(x)) return (float)exp((double)x);
    const double z = K_ATTN_EXP_INVLN2N * (double)x;
    const double shift = K_ATTN_EXP_SHIFT;
    double kd = z + shift;
    const uint64_t ki = k_attn_dbits(kd);
    kd -= shift;
    const double r = z - kd;
    const double s = k_attn_bitsd(k_attn_exp_tab[ki % 32] + (ki << 47));
    const double p = K_ATTN_EXP_C0 * r + K_ATTN_EXP_C1;
    double y = K_ATTN_EXP_C2 * r + 1;
    const double rr = r * r;
    const double prr = p * rr;
    y = prr + y;
    return (float)(y * s);
}

/* The online softmax's step for a score s above the running max *M:
 * *M = s, and the factor expf(M_old - s) that rescales the accumulator
 * and the sum S (the reference's ms; its V weight vs is then 1). */
static inline float k_attn_new_max(float *M, float s) {
    const float old = *M;
    *M = s;
    return k_attn_expf(old - s);
}

/* The attention sink of a head (gpt-oss): a learned logit s that joins the
 * softmax's denominator without a value row. Applied as the reference does,
 * once after the last position, to the f32 accumulator acc [hd], its max M
 * and its sum S: s > M: acc *= expf(M - s), S = fmaf(S, expf(M - s), 1);
 * else S = fmaf(S, 1, expf(s - M)) (= S + expf(s - M)). */
static inline void k_attn_sink(float *acc, int64_t hd, float s, float M, float *S) {
    float ms = 1, vs = 1;
    if (s > M) {
        ms = k_attn_new_max(&M, s);
        for (int64_t i = 0; i < hd; i++) acc[i] *= ms;
    } else {
        vs = k_attn_expf(s - M);
    }
    *S = fmaf(*S, ms, vs);
}

/* The walk of the scalar references over an f16 cache (attn_f16_ref.c,
 * attn_tiled_ref.c): per (token t, head h) of [h0, h1), p = pos0 + t, the
 * reference's row function accumulates the head's V rows over the window's
 * positions first(p) .. p into acc (head_dim floats, zeroed), with its
 * running max M (from -inf) and sum S (from 0); then the sink (k_attn_sink)
 * and out = acc * (S != 0 ? 1/S : 0). */
typedef struct {
    const float *q;      /* the head's query [hd] */
    const k_half *k, *v; /* its KV group's first element: position p's at k + p * kv_stride */
    int64_t kv_stride, hd, first, npos;
    float sc, softcap;   /* k_attn_score_scale's multiplier, the soft-cap (0: none) */
    float *acc, *scratch;
    float M, S;
} k_attn_ref_row;
typedef void k_attn_ref_row_fn(k_attn_ref_row *r);
static inline void k_attn_ref_rows(ATTN_F16_PARAMS, float *acc, k_attn_ref_row_fn *row) {
    const int64_t group = n_head / n_head_kv, hd = head_dim;
    const float sc = k_attn_score_scale(scale, softcap);
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t npos = pos0 + t + 1, first = k_attn_first(pos0 + t, window);
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            k_attn_ref_row r = {q + t * q_stride + h * hd, k + g * hd, v + g * hd, kv_stride, hd, first, npos, sc, softcap,
                                acc, scratch, -INFINITY, 0};
            for (int64_t i = 0; i < hd; i++) acc[i] = 0;
            row(&r);
            if (sinks) k_attn_sink(acc, hd, sinks[h], r.M, &r.S);
            const float inv = r.S != 0 ? 1 / r.S : 0;
            float *o = out + t * out_stride + h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = acc[i] * inv;
        }
    }
}

/* ggml's vectorised exp (ggml_v_expf: max error 1.45 + 0.5 ulp), one lane:
 * the f32 FMA steps of the vector code, then j * 2^n in double. */
static inline float k_attn_vexpf(float x) {
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    if (n > 192 || n < -192) return (float)exp((double)x);
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    return (float)((double)j * k_attn_pow2((int)n));
}

/* One element of the reference's SwiGLU (k_swiglu): element i of a row whose
 * 16-lane blocks end at nv. */
static inline float k_swiglu1(int64_t i, int64_t nv, float g, float u) {
    const float e = i < nv ? k_attn_vexpf(-g) : k_attn_expf(-g);
    return g / (1.0f + e) * u;
}

/* One pair of the reference's RoPE (k_rope): each output one FMA with the
 * other product rounded on its own. */
static inline void k_rope_pair(float *xh, int64_t i0, int64_t i1, float c, float s) {
    const float x0 = xh[i0], x1 = xh[i1];
    const float b = x1 * s, f = x1 * c;
    xh[i0] = fmaf(x0, c, -b);
    xh[i1] = fmaf(x0, s, f);
}

/* The f32-cache attention k_attention_<set> (see kernels.h), written once:
 * per (token, head) the scores over the window (soft-capped with the C
 * library's tanhf), their softmax, and the weighted sum of V; scratch[i] is
 * position first + i. A kernel set supplies the three vector primitives:
 *   dot(a, b, n)           a . b
 *   exp_sum(s, n, mx)      s[i] = exp(s[i] - mx), returns their sum
 *   axpy(y, a, x, n)       y += a * x
 * Inlined into each set's kernel, the calls through them are direct. */
typedef float k_attn_dot_fn(const float *a, const float *b, int64_t n);
typedef float k_attn_exp_sum_fn(float *s, int64_t n, float mx);
typedef void k_attn_axpy_fn(float *y, float a, const float *x, int64_t n);

static inline __attribute__((always_inline)) void k_attn_f32(ATTN_F32_PARAMS, k_attn_dot_fn *dot,
                                                             k_attn_exp_sum_fn *exp_sum, k_attn_axpy_fn *axpy) {
    const int64_t group = n_head / n_head_kv;
    const float sc = k_attn_score_scale(scale, softcap);
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t first = k_attn_first(pos0 + t, window), n = pos0 + t + 1 - first;
        for (int64_t h = h0; h < h1; h++) {
            const int64_t g = h / group;
            const float *qh = q + t * q_stride + h * head_dim;
            const float *kg = k + first * kv_stride + g * head_dim, *vg = v + first * kv_stride + g * head_dim;
            float *o = out + t * out_stride + h * head_dim;
            float mx = -INFINITY;
            for (int64_t p = 0; p < n; p++) {
                float s = dot(qh, kg + p * kv_stride, head_dim) * sc;
                if (softcap != 0) s = softcap * tanhf(s);
                scratch[p] = s;
                mx = s > mx ? s : mx;
            }
            float ssum;
            if (sinks) { /* the sink joins the denominator */
                const float sk = sinks[h];
                const float m2 = sk > mx ? sk : mx;
                ssum = exp_sum(scratch, n, m2) + expf(sk - m2);
            } else {
                ssum = exp_sum(scratch, n, mx);
            }
            const float inv = 1.0f / ssum;
            for (int64_t i = 0; i < head_dim; i++) o[i] = 0;
            for (int64_t p = 0; p < n; p++) axpy(o, scratch[p] * inv, vg + p * kv_stride, head_dim);
        }
    }
}

#endif
