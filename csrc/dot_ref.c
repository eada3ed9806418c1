/* dot_ref.c — scalar reference dot products of one weight row with one
 * activation row.
 *
 * Integer products are summed exactly per (sub-)block; the f32 part follows
 * the reference build's summation order (llama.cpp x86, which the AVX2 /
 * AVX-512 kernels reproduce), written out lane by lane so that ref gives the
 * same bits as the SIMD kernels:
 *   - Q8_0-family and K-quant dots keep 8 f32 "lanes"; lane l of a block
 *     gets the exact integer sum of the products of elements 4l..4l+3 of
 *     each 32-element group, and is folded with fmaf(d, lane, acc[l]); the
 *     lanes are reduced as hsum8: ((0+4) + (2+6)) + ((1+5) + (3+7)).
 *   - F16 / F32 / BF16 use ggml_vec_dot's 64-wide order (vecdot_f32 below).
 * fmaf is exact in C whether or not the CPU has FMA. */
#include <math.h>
#include <stddef.h>
#include <string.h>
#include "kernels.h"
#include "ref_sum.h"

#define H2F(h) k_f16_to_f32(h)

/* lane[l] += sum over e in 4l..4l+3 of q[e] * a[e], for 32 elements */
static void lanes32(int32_t lane[8], const int8_t *q, const int8_t *a) {
    for (int l = 0; l < 8; l++)
        for (int e = 4 * l; e < 4 * l + 4; e++) lane[l] += q[e] * a[e];
}

static void lanes32_u(int32_t lane[8], const uint8_t *q, const int8_t *a, int32_t scale) {
    for (int l = 0; l < 8; l++) {
        int32_t s = 0;
        for (int e = 4 * l; e < 4 * l + 4; e++) s += q[e] * a[e];
        lane[l] += scale * s;
    }
}

/* ---- K-quants x Q8_K ---- */

/* Q4_K / Q5_K quants of chunk c (0..3): lo = sub-block 2c, hi = 2c+1 */
static void unpack_q45k(const uint8_t *qs, const uint8_t *qh, int c, uint8_t lo[32], uint8_t hi[32]) {
    for (int l = 0; l < 32; l++) {
        lo[l] = qs[32 * c + l] & 15;
        hi[l] = qs[32 * c + l] >> 4;
        if (qh) {
            lo[l] += ((qh[l] >> (2 * c)) & 1) << 4;
            hi[l] += ((qh[l] >> (2 * c + 1)) & 1) << 4;
        }
    }
}

/* the min term's 4 lanes: pm[k] = m[2k] * bsum[2k] + m[2k+1] * bsum[2k+1],
 * bsum[s] = bsums[2s] + bsums[2s+1] (the 32 quants of sub-block s) */
static void min_lanes(const uint8_t m[8], const int16_t *bsums, int32_t pm[4]) {
    for (int k = 0; k < 4; k++) {
        const int32_t b0 = bsums[4 * k] + bsums[4 * k + 1], b1 = bsums[4 * k + 2] + bsums[4 * k + 3];
        pm[k] = m[2 * k] * b0 + m[2 * k + 1] * b1;
    }
}

/* Q4_K / Q5_K: value = d*sc*q - dmin*m. Main lanes as above; the min term in
 * 4 lanes folded with fmaf (Q4_K), or as one exact integer per block into a
 * scalar fmaf accumulator (Q5_K, as the reference does for Q5_K only). */
static float dot_q45k(int64_t n, const uint8_t *w, size_t bsize, size_t off_scales, size_t off_qh,
                      size_t off_qs, const void *a, int q5) {
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0}, accm[4] = {0}, summs = 0;
    for (int64_t i = 0; i < n / K_QKK; i++, w += bsize) {
        k_half dh, dmh;
        memcpy(&dh, w, 2);
        memcpy(&dmh, w + 2, 2);
        uint8_t sc[8], m[8];
        for (int s = 0; s < 8; s++) k_q4k_scale_min(s, w + off_scales, &sc[s], &m[s]);
        int32_t pm[4];
        min_lanes(m, y[i].bsums, pm);
        const float yd = y[i].d;
        if (q5) {
            const float isum = (float)((pm[0] + pm[1]) + (pm[2] + pm[3]));
            summs = fmaf(-(yd * H2F(dmh)), isum, summs);
        } else {
            const float dm = H2F(dmh) * yd;
            for (int k = 0; k < 4; k++) accm[k] = fmaf(dm, (float)pm[k], accm[k]);
        }
        int32_t lane[8] = {0};
        for (int c = 0; c < 4; c++) {
            uint8_t lo[32], hi[32];
            unpack_q45k(w + off_qs, q5 ? w + off_qh : NULL, c, lo, hi);
            lanes32_u(lane, lo, y[i].qs + 64 * c, sc[2 * c]);
            lanes32_u(lane, hi, y[i].qs + 64 * c + 32, sc[2 * c + 1]);
        }
        const float d = H2F(dh) * yd;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return q5 ? k_hsum8_ref(acc) + summs : k_hsum8_ref(acc) - k_hsum4_ref(accm);
}

float k_dot_q4_k_q8_k_ref(int64_t n, const void *w, const void *a) {
    return dot_q45k(n, (const uint8_t *)w, sizeof(k_block_q4_k), offsetof(k_block_q4_k, scales), 0,
                    offsetof(k_block_q4_k, qs), a, 0);
}

float k_dot_q5_k_q8_k_ref(int64_t n, const void *w, const void *a) {
    return dot_q45k(n, (const uint8_t *)w, sizeof(k_block_q5_k), offsetof(k_block_q5_k, scales),
                    offsetof(k_block_q5_k, qh), offsetof(k_block_q5_k, qs), a, 1);
}

/* Q6_K: d*yd * sum_g scale[g] * <q_g - 32, a_g> over 16 groups of 16. In
 * lanes: the 32 quants of vector v (0..7: half v/4, element block v%4) use
 * scale 2v for lanes 0..3 and 2v+1 for lanes 4..7; the -32 is folded per
 * lane l as -32 * (scale[2l] * bsums[2l] + scale[2l+1] * bsums[2l+1]). */
float k_dot_q6_k_q8_k_ref(int64_t n, const void *w, const void *a) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        uint8_t q[K_QKK]; /* unsigned 6-bit quants in element order */
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = x[i].ql + 64 * h, *H = x[i].qh + 32 * h;
            uint8_t *o = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                o[l]      = (uint8_t)((L[l] & 15)      | (((H[l] >> 0) & 3) << 4));
                o[l + 32] = (uint8_t)((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4));
                o[l + 64] = (uint8_t)((L[l] >> 4)      | (((H[l] >> 4) & 3) << 4));
                o[l + 96] = (uint8_t)((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4));
            }
        }
        const int8_t *sc = x[i].scales;
        int32_t lane[8];
        for (int l = 0; l < 8; l++) lane[l] = -32 * (sc[2 * l] * y[i].bsums[2 * l] + sc[2 * l + 1] * y[i].bsums[2 * l + 1]);
        for (int v = 0; v < 8; v++) {
            for (int l = 0; l < 8; l++) {
                int32_t s = 0;
                for (int e = 4 * l; e < 4 * l + 4; e++) s += q[32 * v + e] * y[i].qs[32 * v + e];
                lane[l] += (l < 4 ? sc[2 * v] : sc[2 * v + 1]) * s;
            }
        }
        const float d = H2F(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return k_hsum8_ref(acc);
}

/* ---- 32-element formats x Q8_0 ---- */

/* Unpack the 32 quants of a 4-bit block (element j: low nibble of qs[j] for
 * j < 16, high nibble of qs[j-16] otherwise) plus an optional 5th bit. */
static inline void unpack4(const uint8_t *qs, const uint8_t *qh4, int off, int8_t *q) {
    uint32_t qh = 0;
    if (qh4) memcpy(&qh, qh4, 4);
    for (int j = 0; j < 16; j++) {
        q[j]      = (int8_t)((qs[j] & 15) + (int)(((qh >> j) & 1) << 4) - off);
        q[j + 16] = (int8_t)((qs[j] >> 4) + (int)(((qh >> (j + 16)) & 1) << 4) - off);
    }
}

/* Q4_0 / Q5_0 / Q8_0: one lane set, fmaf(d_w * d_a, lane, acc) per block */
static float dot_q0(int64_t n, const uint8_t *w, size_t bsize, int kind, const void *a) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QK; i++, w += bsize) {
        int8_t q[K_QK];
        if (kind == K_Q8_0) memcpy(q, ((const k_block_q8_0 *)w)->qs, K_QK);
        else if (kind == K_Q4_0) unpack4(((const k_block_q4_0 *)w)->qs, NULL, 8, q);
        else unpack4(((const k_block_q5_0 *)w)->qs, ((const k_block_q5_0 *)w)->qh, 16, q);
        int32_t lane[8] = {0};
        lanes32(lane, q, y[i].qs);
        k_half dh;
        memcpy(&dh, w, 2);
        const float d = H2F(dh) * H2F(y[i].d);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return k_hsum8_ref(acc);
}

float k_dot_q4_0_q8_0_ref(int64_t n, const void *w, const void *a) { return dot_q0(n, w, sizeof(k_block_q4_0), K_Q4_0, a); }
float k_dot_q5_0_q8_0_ref(int64_t n, const void *w, const void *a) { return dot_q0(n, w, sizeof(k_block_q5_0), K_Q5_0, a); }
float k_dot_q8_0_q8_0_ref(int64_t n, const void *w, const void *a) { return dot_q0(n, w, sizeof(k_block_q8_0), K_Q8_0, a); }

/* Q4_1 / Q5_1: sum (d q + m)(da a) = d da <q,a> + m da sum(a), each in its
 * own lane set, reduced separately and added. */
static float dot_q1(int64_t n, const uint8_t *w, size_t bsize, int q5, const void *a) {
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc[8] = {0}, accm[8] = {0};
    static const int8_t ones[K_QK] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int64_t i = 0; i < n / K_QK; i++, w += bsize) {
        int8_t q[K_QK];
        k_half dh, mh;
        memcpy(&dh, w, 2);
        memcpy(&mh, w + 2, 2);
        if (q5) unpack4(((const k_block_q5_1 *)w)->qs, ((const k_block_q5_1 *)w)->qh, 0, q);
        else unpack4(((const k_block_q4_1 *)w)->qs, NULL, 0, q);
        int32_t lane[8] = {0}, lanea[8] = {0};
        lanes32(lane, q, y[i].qs);
        lanes32(lanea, ones, y[i].qs);
        const float da = H2F(y[i].d);
        const float d = H2F(dh) * da, m = H2F(mh) * da;
        for (int l = 0; l < 8; l++) {
            acc[l] = fmaf(d, (float)lane[l], acc[l]);
            accm[l] = fmaf(m, (float)lanea[l], accm[l]);
        }
    }
    return k_hsum8_ref(acc) + k_hsum8_ref(accm);
}

float k_dot_q4_1_q8_0_ref(int64_t n, const void *w, const void *a) { return dot_q1(n, w, sizeof(k_block_q4_1), 0, a); }
float k_dot_q5_1_q8_0_ref(int64_t n, const void *w, const void *a) { return dot_q1(n, w, sizeof(k_block_q5_1), 1, a); }

/* ---- float formats: ggml_vec_dot order ----
 * np = n & ~63 elements in 4 accumulators x 16 lanes (element i + 16j of each
 * 64-step in accumulator j, lane i) with fmaf; x0 += x2, x1 += x3, x0 += x1;
 * 16 lanes reduced l + l+8, l + l+4, l + l+2, l + l+1; the other elements'
 * products added in double. */
typedef float (*elem_fn)(const void *p, int64_t i);
static float el_f16(const void *p, int64_t i) { return H2F(((const k_half *)p)[i]); }
static float el_f32(const void *p, int64_t i) { return ((const float *)p)[i]; }
static float el_bf16(const void *p, int64_t i) { return k_bf16_to_f32(((const k_bf16 *)p)[i]); }

static float vecdot_f32(int64_t n, const void *x, elem_fn ex, const void *y, elem_fn ey) {
    const int64_t np = n & ~(int64_t)63;
    double sum = 0;
    if (np > 0) {
        float a[4][16] = {{0}};
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++) {
                    const int64_t e = i + 16 * j + l;
                    a[j][l] = fmaf(ex(x, e), ey(y, e), a[j][l]);
                }
        float v[16];
        for (int l = 0; l < 16; l++) {
            const float x0 = a[0][l] + a[2][l], x1 = a[1][l] + a[3][l];
            v[l] = x0 + x1;
        }
        for (int w = 8; w >= 1; w /= 2)
            for (int l = 0; l < w; l++) v[l] = v[l] + v[l + w];
        sum = (double)v[0];
    }
    for (int64_t i = np; i < n; i++) {
        const float p = ex(x, i) * ey(y, i);
        sum += (double)p;
    }
    return (float)sum;
}

float k_dot_f16_f16_ref(int64_t n, const void *w, const void *a) { return vecdot_f32(n, w, el_f16, a, el_f16); }
float k_dot_f32_f32_ref(int64_t n, const void *w, const void *a) { return vecdot_f32(n, w, el_f32, a, el_f32); }
float k_dot_bf16_f32_ref(int64_t n, const void *w, const void *a) { return vecdot_f32(n, w, el_bf16, a, el_f32); }
