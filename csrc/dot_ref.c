/* dot_ref.c — scalar reference dot products of one weight row with one
 * activation row. Integer products are summed exactly per (sub-)block, then
 * scaled once per block in f32, the way the SIMD kernels do it. */
#include <string.h>
#include "kernels.h"

#define H2F(h) k_f16_to_f32(h)

/* ---- K-quants x Q8_K ---- */

/* Q4_K: sum_b d*yd*sum_s sc[s]*<q_s, a_s> - dmin*yd*sum_s m[s]*bsum_s.
 * The min term uses the Q8_K bsums (sum of 16 quants each). */
float k_dot_q4_k_q8_k_ref(int64_t n, const void *w, const void *a) {
    const k_block_q4_k *x = (const k_block_q4_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int32_t sumi = 0, summ = 0;
        const uint8_t *q = x[i].qs;
        const int8_t *qa = y[i].qs;
        for (int c = 0; c < 4; c++, q += 32, qa += 64) {
            uint8_t sc0, m0, sc1, m1;
            k_q4k_scale_min(2 * c, x[i].scales, &sc0, &m0);
            k_q4k_scale_min(2 * c + 1, x[i].scales, &sc1, &m1);
            int32_t s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                s0 += (q[l] & 15) * qa[l];
                s1 += (q[l] >> 4) * qa[l + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            summ += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) +
                    m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
        }
        const float d = H2F(x[i].d) * y[i].d;
        const float dm = H2F(x[i].dmin) * y[i].d;
        float t = d * (float)sumi;
        acc += t - dm * (float)summ;
    }
    return acc;
}

/* Q5_K: as Q4_K with the 5th bit from qh. */
float k_dot_q5_k_q8_k_ref(int64_t n, const void *w, const void *a) {
    const k_block_q5_k *x = (const k_block_q5_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int32_t sumi = 0, summ = 0;
        const uint8_t *q = x[i].qs, *qh = x[i].qh;
        const int8_t *qa = y[i].qs;
        for (int c = 0; c < 4; c++, q += 32, qa += 64) {
            uint8_t sc0, m0, sc1, m1;
            k_q4k_scale_min(2 * c, x[i].scales, &sc0, &m0);
            k_q4k_scale_min(2 * c + 1, x[i].scales, &sc1, &m1);
            int32_t s0 = 0, s1 = 0;
            for (int l = 0; l < 32; l++) {
                int v0 = (q[l] & 15) + (((qh[l] >> (2 * c)) & 1) << 4);
                int v1 = (q[l] >> 4) + (((qh[l] >> (2 * c + 1)) & 1) << 4);
                s0 += v0 * qa[l];
                s1 += v1 * qa[l + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            summ += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) +
                    m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
        }
        const float d = H2F(x[i].d) * y[i].d;
        const float dm = H2F(x[i].dmin) * y[i].d;
        float t = d * (float)sumi;
        acc += t - dm * (float)summ;
    }
    return acc;
}

/* Q6_K: d*yd * sum_g scale[g] * <q_g - 32, a_g> over 16 groups of 16. */
float k_dot_q6_k_q8_k_ref(int64_t n, const void *w, const void *a) {
    const k_block_q6_k *x = (const k_block_q6_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int8_t q[K_QKK];
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = x[i].ql + 64 * h, *H = x[i].qh + 32 * h;
            int8_t *o = q + 128 * h;
            for (int l = 0; l < 32; l++) {
                o[l]      = (int8_t)(((L[l] & 15)      | (((H[l] >> 0) & 3) << 4)) - 32);
                o[l + 32] = (int8_t)(((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)) - 32);
                o[l + 64] = (int8_t)(((L[l] >> 4)      | (((H[l] >> 4) & 3) << 4)) - 32);
                o[l + 96] = (int8_t)(((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32);
            }
        }
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++) {
            int32_t s = 0;
            for (int j = 0; j < 16; j++) s += q[16 * g + j] * y[i].qs[16 * g + j];
            sumi += x[i].scales[g] * s;
        }
        const float d = H2F(x[i].d) * y[i].d;
        acc += d * (float)sumi;
    }
    return acc;
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

static inline int32_t idot32(const int8_t *a, const int8_t *b) {
    int32_t s = 0;
    for (int j = 0; j < K_QK; j++) s += a[j] * b[j];
    return s;
}

static inline int32_t isum32(const int8_t *a) {
    int32_t s = 0;
    for (int j = 0; j < K_QK; j++) s += a[j];
    return s;
}

float k_dot_q4_0_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_q4_0 *x = (const k_block_q4_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QK; i++) {
        int8_t q[K_QK];
        unpack4(x[i].qs, NULL, 8, q);
        float d = H2F(x[i].d) * H2F(y[i].d);
        acc += d * (float)idot32(q, y[i].qs);
    }
    return acc;
}

/* Q4_1: sum (d q + m)(da a) = d da <q,a> + m da sum(a). */
float k_dot_q4_1_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_q4_1 *x = (const k_block_q4_1 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QK; i++) {
        int8_t q[K_QK];
        unpack4(x[i].qs, NULL, 0, q);
        const float da = H2F(y[i].d);
        float t = H2F(x[i].d) * da * (float)idot32(q, y[i].qs);
        acc += t + H2F(x[i].m) * da * (float)isum32(y[i].qs);
    }
    return acc;
}

float k_dot_q5_0_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_q5_0 *x = (const k_block_q5_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QK; i++) {
        int8_t q[K_QK];
        unpack4(x[i].qs, x[i].qh, 16, q);
        float d = H2F(x[i].d) * H2F(y[i].d);
        acc += d * (float)idot32(q, y[i].qs);
    }
    return acc;
}

float k_dot_q5_1_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_q5_1 *x = (const k_block_q5_1 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QK; i++) {
        int8_t q[K_QK];
        unpack4(x[i].qs, x[i].qh, 0, q);
        const float da = H2F(y[i].d);
        float t = H2F(x[i].d) * da * (float)idot32(q, y[i].qs);
        acc += t + H2F(x[i].m) * da * (float)isum32(y[i].qs);
    }
    return acc;
}

float k_dot_q8_0_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_q8_0 *x = (const k_block_q8_0 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc = 0;
    for (int64_t i = 0; i < n / K_QK; i++) {
        float d = H2F(x[i].d) * H2F(y[i].d);
        acc += d * (float)idot32(x[i].qs, y[i].qs);
    }
    return acc;
}

/* ---- float formats: products accumulated in f32 ---- */

float k_dot_f16_f16_ref(int64_t n, const void *w, const void *a) {
    const k_half *x = (const k_half *)w, *y = (const k_half *)a;
    float acc = 0;
    for (int64_t i = 0; i < n; i++) acc += H2F(x[i]) * H2F(y[i]);
    return acc;
}

float k_dot_f32_f32_ref(int64_t n, const void *w, const void *a) {
    const float *x = (const float *)w, *y = (const float *)a;
    float acc = 0;
    for (int64_t i = 0; i < n; i++) acc += x[i] * y[i];
    return acc;
}

float k_dot_bf16_f32_ref(int64_t n, const void *w, const void *a) {
    const k_bf16 *x = (const k_bf16 *)w;
    const float *y = (const float *)a;
    float acc = 0;
    for (int64_t i = 0; i < n; i++) acc += k_bf16_to_f32(x[i]) * y[i];
    return acc;
}
