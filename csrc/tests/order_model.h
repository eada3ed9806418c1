/*
 * order_model.h — scalar models of the SIMD dot products' exact float
 * summation order, so every ISA can be checked bit for bit against one
 * definition (and therefore against each other: AVX2, AVX-512 and NEON give
 * the same bits, which keeps parity with the reference build on every CPU).
 *
 * The order is the reference build's (llama.cpp's x86 AVX2 path): per block
 * 8 int32 lanes, lane l = the products of elements 4l..4l+3 of each
 * 32-element group (times the group's scale for the K-quants), folded into
 * 8 f32 lanes with one FMA per block; hsum8 = ((l0+l4) + (l2+l6)) +
 * ((l1+l5) + (l3+l7)). Every float operation is its own statement (no
 * compiler contraction), FMAs are explicit fmaf calls.
 */
#ifndef WOOLLY_ORDER_MODEL_H
#define WOOLLY_ORDER_MODEL_H

#include <math.h>
#include "kernels.h"

static float om_hsum4(const float v[4]) {
    float a = v[0] + v[2];
    float b = v[1] + v[3];
    return a + b;
}

static float om_hsum8(const float v[8]) {
    float r[4];
    for (int l = 0; l < 4; l++) r[l] = v[l] + v[l + 4];
    return om_hsum4(r);
}

/* 32 signed quants of one block of Q4_0 / Q5_0 / Q8_0 */
static void om_q32(int t, const uint8_t *blk, int8_t q[32]) {
    if (t == K_Q8_0) { memcpy(q, blk + 2, 32); return; }
    uint32_t qh = 0;
    const uint8_t *qs = blk + 2;
    if (t == K_Q5_0) { memcpy(&qh, blk + 2, 4); qs = blk + 6; }
    const int off = t == K_Q5_0 ? 16 : 8;
    for (int j = 0; j < 16; j++) {
        q[j] = (int8_t)((qs[j] & 15) + (int)(((qh >> j) & 1) << 4) - off);
        q[j + 16] = (int8_t)((qs[j] >> 4) + (int)(((qh >> (j + 16)) & 1) << 4) - off);
    }
}

static float om_dot_q32(int t, int64_t n, const void *w, const void *a) {
    const int64_t bb = k_row_bytes(t, K_QK);
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QK; i++) {
        const uint8_t *blk = (const uint8_t *)w + i * bb;
        k_half dw; memcpy(&dw, blk, 2);
        int8_t q[32];
        om_q32(t, blk, q);
        const float d = k_f16_to_f32(dw) * k_f16_to_f32(y[i].d);
        for (int l = 0; l < 8; l++) {
            int32_t s = 0;
            for (int e = 4 * l; e < 4 * l + 4; e++) s += q[e] * y[i].qs[e];
            acc[l] = fmaf(d, (float)s, acc[l]);
        }
    }
    return om_hsum8(acc);
}

/* Q4_K / Q5_K: lanes over the 8 sub-blocks; min term in 4 lanes, subtracted at the end */
static float om_dot_q45k(int t, int64_t n, const void *w, const void *a) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0}, accm[4] = {0}, summs = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const uint8_t *scales, *qs, *qh = NULL;
        k_half d, dmin;
        if (t == K_Q4_K) {
            const k_block_q4_k *x = (const k_block_q4_k *)w + i;
            scales = x->scales; qs = x->qs; d = x->d; dmin = x->dmin;
        } else {
            const k_block_q5_k *x = (const k_block_q5_k *)w + i;
            scales = x->scales; qs = x->qs; qh = x->qh; d = x->d; dmin = x->dmin;
        }
        uint8_t sc[8], m[8];
        for (int s = 0; s < 8; s++) k_q4k_scale_min(s, scales, &sc[s], &m[s]);
        int32_t lane[8] = {0};
        for (int s = 0; s < 8; s++) {
            const int c = s / 2, high = s & 1;
            for (int e = 0; e < 32; e++) {
                int q = high ? qs[32 * c + e] >> 4 : qs[32 * c + e] & 15;
                if (qh) q += ((qh[e] >> s) & 1) << 4;
                lane[e / 4] += sc[s] * q * y[i].qs[32 * s + e];
            }
        }
        const float dd = k_f16_to_f32(d) * y[i].d, dm = k_f16_to_f32(dmin) * y[i].d;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(dd, (float)lane[l], acc[l]);
        int32_t pmsum = 0;
        for (int l = 0; l < 4; l++) {
            int32_t b0 = y[i].bsums[4 * l] + y[i].bsums[4 * l + 1];
            int32_t b1 = y[i].bsums[4 * l + 2] + y[i].bsums[4 * l + 3];
            int32_t pm = m[2 * l] * b0 + m[2 * l + 1] * b1;
            accm[l] = fmaf(dm, (float)pm, accm[l]);
            pmsum += pm;
        }
        /* Q5_K: the min term is the exact integer sum per block, one scalar FMA */
        const float dmin_yd = y[i].d * k_f16_to_f32(dmin);
        summs = fmaf(-dmin_yd, (float)pmsum, summs);
    }
    float s = om_hsum8(acc);
    if (t == K_Q5_K) return s + summs;
    float sm = om_hsum4(accm);
    return s - sm;
}

/* Q6_K: unsigned quants u in 0..63; lane l starts at
 * -32 * (scale[2l]*bsum[2l] + scale[2l+1]*bsum[2l+1]) */
static float om_dot_q6k(int64_t n, const void *w, const void *a) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int32_t lane[8];
        for (int l = 0; l < 8; l++)
            lane[l] = -32 * (x[i].scales[2 * l] * y[i].bsums[2 * l] + x[i].scales[2 * l + 1] * y[i].bsums[2 * l + 1]);
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = x[i].ql + 64 * h, *H = x[i].qh + 32 * h;
            for (int e = 0; e < 32; e++) {
                int u[4] = {(L[e] & 15) | (((H[e] >> 0) & 3) << 4), (L[e + 32] & 15) | (((H[e] >> 2) & 3) << 4),
                            (L[e] >> 4) | (((H[e] >> 4) & 3) << 4), (L[e + 32] >> 4) | (((H[e] >> 6) & 3) << 4)};
                for (int k = 0; k < 4; k++) {
                    const int el = 128 * h + 32 * k + e; /* element; vector (h,k), position e */
                    lane[e / 4] += x[i].scales[el / 16] * u[k] * y[i].qs[el];
                }
            }
        }
        const float d = k_f16_to_f32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return om_hsum8(acc);
}

/* Q2_K / Q3_K: element e = 128h + 32k + l takes bits 2k, 2k+1 of
 * qs[32h + l] and (Q3_K) bit 4h + k of hmask[l]; its 16-element group is
 * e / 16 and it adds scale * q * a to lane (e % 32) / 4. Q2_K folds its min
 * term, lane l = m[2l] * bsums[2l] + m[2l+1] * bsums[2l+1], into the same
 * accumulators before the block's lanes. */
static float om_dot_q23k(int t, int64_t n, const void *w, const void *a) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const k_block_q2_k *x2 = (const k_block_q2_k *)w + i;
        const k_block_q3_k *x3 = (const k_block_q3_k *)w + i;
        const uint8_t *qs = t == K_Q2_K ? x2->qs : x3->qs;
        int32_t lane[8] = {0};
        for (int e = 0; e < K_QKK; e++) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32, g = e / 16;
            int q = (qs[32 * h + l] >> (2 * k)) & 3, sc;
            if (t == K_Q2_K) {
                sc = x2->scales[g] & 15;
            } else {
                q += 4 * ((x3->hmask[l] >> (4 * h + k)) & 1) - 4;
                const int lo = g < 8 ? x3->scales[g] & 15 : x3->scales[g - 8] >> 4;
                const int hi = (x3->scales[8 + g % 4] >> (2 * (g / 4))) & 3;
                sc = (lo | (hi << 4)) - 32;
            }
            lane[l / 4] += sc * q * y[i].qs[e];
        }
        if (t == K_Q2_K) {
            const float dm = -(y[i].d * k_f16_to_f32(x2->dmin));
            for (int l = 0; l < 8; l++) {
                const int32_t pm = (x2->scales[2 * l] >> 4) * y[i].bsums[2 * l] + (x2->scales[2 * l + 1] >> 4) * y[i].bsums[2 * l + 1];
                acc[l] = fmaf(dm, (float)pm, acc[l]);
            }
        }
        const float d = k_f16_to_f32(t == K_Q2_K ? x2->d : x3->d) * y[i].d;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return om_hsum8(acc);
}

/* F16 / F32 (ggml_vec_dot_f16 / _f32 of the reference build): np = n & ~63
 * elements in 4 accumulators x 16 lanes (element i + 16j of each 64-step in
 * accumulator j, lane i); x0 += x2, x1 += x3, x0 += x1; the 16 lanes reduced
 * (l + l+8, l + l+4, l + l+2, l + l+1); the rest added in double. */
static float om_dot_float(int t, int64_t n, const void *w, const void *a) {
#define OM_V(p, i) (t == K_F16 ? k_f16_to_f32(((const k_half *)(p))[i]) : ((const float *)(p))[i])
    const int64_t np = n & ~(int64_t)63;
    float lane[64] = {0}; /* lane 16j + i: accumulator j, lane i (all +0 when np = 0) */
    for (int64_t e = 0; e < np; e++) lane[e % 64] = fmaf(OM_V(w, e), OM_V(a, e), lane[e % 64]);
    float x0[16];
    for (int i = 0; i < 16; i++) {
        const float s02 = lane[i] + lane[32 + i], s13 = lane[16 + i] + lane[48 + i];
        x0[i] = s02 + s13;
    }
    for (int i = 0; i < 8; i++) x0[i] = x0[i] + x0[i + 8];
    for (int i = 0; i < 4; i++) x0[i] = x0[i] + x0[i + 4];
    for (int i = 0; i < 2; i++) x0[i] = x0[i] + x0[i + 2];
    double sum = (double)(x0[0] + x0[1]);
    for (int64_t e = np; e < n; e++) {
        const float p = OM_V(w, e) * OM_V(a, e);
        sum += (double)p;
    }
#undef OM_V
    return (float)sum;
}

/* The order of IQ4_NL's and MXFP4's dots over nb blocks of 32: block i's
 * factor d(w, a, i) times its 8 lanes lane(w, a, i, l), one FMA a lane,
 * into acc[i & 1] (batch: every block into acc[0], tinyBLAS_Q0's one
 * accumulator), the two added lane by lane, hsum8, then (not batch) an odd
 * last block as fmaf(d, its integer sum, total). */
typedef float om_blk_d_fn(const void *w, const void *a, int64_t i);
typedef int32_t om_blk_lane_fn(const void *w, const void *a, int64_t i, int l);
static float om_even_odd(int64_t nb, int batch, const void *w, const void *a, om_blk_d_fn *d, om_blk_lane_fn *lane) {
    const int64_t paired = batch ? nb : nb & ~(int64_t)1;
    float acc[2][8] = {{0}};
    for (int64_t i = 0; i < paired; i++) {
        const float di = d(w, a, i);
        float *ac = acc[batch ? 0 : i & 1];
        for (int l = 0; l < 8; l++) ac[l] = fmaf(di, (float)lane(w, a, i, l), ac[l]);
    }
    float v[8];
    for (int l = 0; l < 8; l++) v[l] = acc[0][l] + acc[1][l];
    float s = om_hsum8(v);
    if (paired < nb) {
        int32_t isum = 0;
        for (int l = 0; l < 8; l++) isum += lane(w, a, nb - 1, l);
        s = fmaf(d(w, a, nb - 1), (float)isum, s);
    }
    return s;
}

/* ---- IQ4_NL / IQ4_XS: 4-bit indices into ggml's 16 levels (kvalues_iq4nl) ---- */
static const int8_t om_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* lane l of one 32-group: sum over e in 4l..4l+3 of level(e) * a[e], where
 * element e < 16 is the low nibble of qs[e] and e >= 16 the high nibble of qs[e-16] */
static int32_t om_iq4_lane(const uint8_t *qs, const int8_t *a, int l) {
    int32_t s = 0;
    for (int e = 4 * l; e < 4 * l + 4; e++) {
        const int nib = e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
        s += om_iq4_levels[nib] * a[e];
    }
    return s;
}

/* IQ4_NL x Q8_0. batch = 0: ggml's vec_dot (one token): blocks 0, 2, 4 ...
 * into one 8-lane accumulator, 1, 3, 5 ... into another, added lane by lane,
 * hsum8, then an odd last block as fmaf(d, integer block sum, total).
 * batch = 1: tinyBLAS_Q0 (two or more tokens): one accumulator, in order. */
static float om_iq4nl_d(const void *w, const void *a, int64_t i) {
    return k_f16_to_f32(((const k_block_iq4_nl *)w)[i].d) * k_f16_to_f32(((const k_block_q8_0 *)a)[i].d);
}
static int32_t om_iq4nl_lane(const void *w, const void *a, int64_t i, int l) {
    return om_iq4_lane(((const k_block_iq4_nl *)w)[i].qs, ((const k_block_q8_0 *)a)[i].qs, l);
}
static float om_dot_iq4nl(int64_t n, const void *w, const void *a, int batch) {
    return om_even_odd(n / K_QK, batch, w, a, om_iq4nl_d, om_iq4nl_lane);
}

/* IQ4_XS x Q8_K: lanes summed in int32 over the 8 sub-blocks times their
 * scale (6 bits: low nibble of scales_l[j/2] for even j, high for odd, bits
 * 2j..2j+1 of scales_h on top; minus 32), one FMA with d * y.d per super-block */
static float om_dot_iq4xs(int64_t n, const void *w, const void *a) {
    const k_block_iq4_xs *x = (const k_block_iq4_xs *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int32_t lane[8] = {0};
        for (int j = 0; j < 8; j++) {
            const int lo = j % 2 ? x[i].scales_l[j / 2] >> 4 : x[i].scales_l[j / 2] & 15;
            const int ls = (lo | (((x[i].scales_h >> (2 * j)) & 3) << 4)) - 32;
            for (int l = 0; l < 8; l++) lane[l] += ls * om_iq4_lane(x[i].qs + 16 * j, y[i].qs + 32 * j, l);
        }
        const float d = k_f16_to_f32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return om_hsum8(acc);
}

/* ---- MXFP4: E2M1 codes with one E8M0 exponent per 32 ---- */

/* twice the E2M1 value of code c, from its bits: sign c>>3, exponent bits
 * (c>>1)&3, mantissa bit c&1; exponent 0 is subnormal (0 or 0.5) */
static int om_e2m1_x2(int c) {
    const int ex = (c >> 1) & 3, m = c & 1;
    const int v = ex == 0 ? m : (2 + m) << (ex - 1);
    return c & 8 ? -v : v;
}

/* half the E8M0 value: 2^(e - 128), exactly (ldexpf keeps f32 subnormals);
 * e = 255 is 2^127 in ggml, not NaN */
static float om_e8m0_half(uint8_t e) { return ldexpf(1.0f, (int)e - 128); }

/* lane l of one MXFP4 block (element e < 16: low nibble of qs[e], else the
 * high nibble of qs[e - 16]) against 32 int8 activations */
static int32_t om_mxfp4_lane(const uint8_t *qs, const int8_t *a, int l) {
    int32_t s = 0;
    for (int e = 4 * l; e < 4 * l + 4; e++) s += om_e2m1_x2(e < 16 ? qs[e] & 15 : qs[e - 16] >> 4) * a[e];
    return s;
}

/* MXFP4 x Q8_0, ggml's x86 vec_dot (the only order: no batched kernel):
 * even blocks into one 8-lane accumulator, odd ones into another, added
 * lane by lane, hsum8, then an odd last block as fmaf(d, integer sum, total);
 * d = f16(y.d) * e8m0_half(e) */
static float om_mxfp4_d(const void *w, const void *a, int64_t i) {
    return k_f16_to_f32(((const k_block_q8_0 *)a)[i].d) * om_e8m0_half(((const k_block_mxfp4 *)w)[i].e);
}
static int32_t om_mxfp4_blk_lane(const void *w, const void *a, int64_t i, int l) {
    return om_mxfp4_lane(((const k_block_mxfp4 *)w)[i].qs, ((const k_block_q8_0 *)a)[i].qs, l);
}
static float om_dot_mxfp4(int64_t n, const void *w, const void *a) {
    return om_even_odd(n / K_QK, 0, w, a, om_mxfp4_d, om_mxfp4_blk_lane);
}

/* The model for weight type t, or NULL-equivalent (returns 0 in *ok) */
static float om_dot(int t, int64_t n, const void *w, const void *a, int *ok) {
    *ok = 1;
    switch (t) {
    case K_Q4_0: case K_Q5_0: case K_Q8_0: return om_dot_q32(t, n, w, a);
    case K_Q4_K: case K_Q5_K: return om_dot_q45k(t, n, w, a);
    case K_Q6_K: return om_dot_q6k(n, w, a);
    case K_Q2_K: case K_Q3_K: return om_dot_q23k(t, n, w, a);
    case K_F16: case K_F32: return om_dot_float(t, n, w, a);
    case K_IQ4_NL: return om_dot_iq4nl(n, w, a, 0);
    case K_IQ4_XS: return om_dot_iq4xs(n, w, a);
    case K_MXFP4: return om_dot_mxfp4(n, w, a);
    default: *ok = 0; return 0;
    }
}

#endif
