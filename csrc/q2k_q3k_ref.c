/* q2k_q3k_ref.c — scalar references for Q2_K and Q3_K (layouts: q2k_q3k.h):
 * dequantization bit-identical to ggml's to_float, and the dots with Q8_K
 * activations in the summation order of the reference build (llama.cpp's x86
 * AVX2 vec_dot for these types, which its AVX-512 build also runs), so that
 * ref, AVX2, AVX-512 and NEON give the same bits:
 *
 *   per block, 8 int32 lanes: lane l = sum over the 8 vectors v of
 *     scale(group 2v + l/4) * (q . a over elements 32v + 4l .. 32v + 4l + 3)
 *   Q2_K  acc[l] = fmaf(-(yd * dmin), mins[l], acc[l]), mins[l] =
 *         m[2l] * bsums[2l] + m[2l+1] * bsums[2l+1] (m = the 4-bit mins), then
 *         acc[l] = fmaf(yd * d, lane[l], acc[l])
 *   Q3_K  acc[l] = fmaf(yd * d, lane[l], acc[l]), q signed (-4..3)
 *   result: k_hsum8_ref(acc) = ((0+4) + (2+6)) + ((1+5) + (3+7)).
 * The integer sums are exact, so only the f32 steps fix the bits. Float
 * products of the dequantizers are separate statements: a compiler must not
 * fuse them into an FMA. */
#include <math.h>
#include <string.h>
#include "kernels.h"
#include "ref_sum.h"

#define H2F(h) k_f16_to_f32(h)

/* the 2-bit fields of a block's qs[64] in element order */
static void low2_bits(const uint8_t *qs, uint8_t q[K_QKK]) {
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) q[128 * h + 32 * k + l] = (uint8_t)((qs[32 * h + l] >> (2 * k)) & 3);
}

/* Q3_K quants q (-4..3) in element order */
static void q3k_quants(const k_block_q3_k *x, int8_t q[K_QKK]) {
    uint8_t lo[K_QKK];
    low2_bits(x->qs, lo);
    for (int e = 0; e < K_QKK; e++) {
        const int bit = (x->hmask[e % 32] >> (e / 32)) & 1; /* element 32v + l: bit v of hmask[l] */
        q[e] = (int8_t)(lo[e] + 4 * bit - 4);
    }
}

/* Q3_K scale of group g, minus 32 (formats: q2k_q3k.h) */
static int q3k_scale(const uint8_t *s, int g) {
    const int low = (s[g % 8] >> (4 * (g / 8))) & 15;
    const int top = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (low | (top << 4)) - 32;
}

void k_dequant_q2_k_ref(const void *src, float *dst, int64_t n) {
    const k_block_q2_k *b = (const k_block_q2_k *)src;
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK) {
        const float d = H2F(b[i].d), dmin = H2F(b[i].dmin);
        uint8_t q[K_QKK];
        low2_bits(b[i].qs, q);
        for (int g = 0; g < 16; g++) {
            const float dl = d * (float)(b[i].scales[g] & 15);
            const float ml = dmin * (float)(b[i].scales[g] >> 4);
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const float t = dl * (float)q[e];
                dst[e] = t - ml;
            }
        }
    }
}

void k_dequant_q3_k_ref(const void *src, float *dst, int64_t n) {
    const k_block_q3_k *b = (const k_block_q3_k *)src;
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK) {
        const float d = H2F(b[i].d);
        int8_t q[K_QKK];
        q3k_quants(&b[i], q);
        for (int g = 0; g < 16; g++) {
            const float dl = d * (float)q3k_scale(b[i].scales, g);
            for (int e = 16 * g; e < 16 * g + 16; e++) dst[e] = dl * (float)q[e];
        }
    }
}

/* the 8 lanes of one block (see the top of the file) */
static void lanes_g16(int32_t lane[8], const int8_t *q, const int8_t *a, const int sc[16]) {
    for (int l = 0; l < 8; l++) {
        lane[l] = 0;
        for (int v = 0; v < 8; v++) {
            int32_t s = 0;
            for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; e++) s += q[e] * a[e];
            lane[l] += sc[2 * v + l / 4] * s;
        }
    }
}

/* Q2_K (q3 = 0) and Q3_K (q3 = 1): per block the quants and 16 group
 * scales, the 8 lanes, then Q2_K's min term and the lanes' term per lane */
static float dot_q23(int q3, int64_t n, const void *w, const void *a) {
    const k_block_q2_k *x2 = (const k_block_q2_k *)w;
    const k_block_q3_k *x3 = (const k_block_q3_k *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int8_t q[K_QKK];
        int sc[16], lane[8];
        if (q3) {
            q3k_quants(&x3[i], q);
            for (int g = 0; g < 16; g++) sc[g] = q3k_scale(x3[i].scales, g);
        } else {
            uint8_t u[K_QKK];
            low2_bits(x2[i].qs, u);
            memcpy(q, u, sizeof q); /* 0..3 */
            for (int g = 0; g < 16; g++) sc[g] = x2[i].scales[g] & 15;
        }
        lanes_g16(lane, q, y[i].qs, sc);
        const float yd = y[i].d, d = yd * H2F(q3 ? x3[i].d : x2[i].d);
        if (!q3) {
            const float dmin = -(yd * H2F(x2[i].dmin));
            for (int l = 0; l < 8; l++) {
                const int32_t mins = (x2[i].scales[2 * l] >> 4) * y[i].bsums[2 * l] +
                                     (x2[i].scales[2 * l + 1] >> 4) * y[i].bsums[2 * l + 1];
                acc[l] = fmaf(dmin, (float)mins, acc[l]);
            }
        }
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return k_hsum8_ref(acc);
}

float k_dot_q2_k_q8_k_ref(int64_t n, const void *w, const void *a) { return dot_q23(0, n, w, a); }
float k_dot_q3_k_q8_k_ref(int64_t n, const void *w, const void *a) { return dot_q23(1, n, w, a); }
