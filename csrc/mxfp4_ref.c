/* mxfp4_ref.c — scalar reference kernels of MXFP4 (OCP microscaling FP4:
 * 32 E2M1 values sharing one E8M0 exponent), paired with Q8_0 activations.
 *
 * Values: k_e8m0_half(e) * k_mxfp4_values[nibble] (kernels.h), one f32
 * multiply per element; the product is exact (a small integer times a
 * power of two), so dequantization is bit-identical to ggml's to_float.
 *
 * Dot product: the reference build (llama.cpp's AVX2 vec_dot, which its
 * AVX-512 build runs too) sums like IQ4_NL's one-token dot (iq4_ref.c):
 * per block 8 exact int32 lanes, lane l holding the products of elements
 * 4l..4l+3, folded with one fmaf per block into 8 f32 accumulators, even
 * blocks into one set and odd blocks into another; the sets are added lane
 * by lane, reduced with hsum8 = ((0+4) + (2+6)) + ((1+5) + (3+7)), and an
 * odd last block is added as fmaf(d, its integer sum, total). The block
 * factor is d = f16(y.d) * k_e8m0_half(e), rounded to f32 first.
 *
 * There is one order only: the reference has no batched (tinyBLAS) kernel
 * for MXFP4, so a batch is the same vec_dot per (row, token), and every
 * tile kernel of every impl gives this function's bits. */
#include <math.h>
#include "kernels.h"
#include "ref_sum.h"

const int8_t k_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void k_dequant_mxfp4_ref(const void *src, float *dst, int64_t n) {
    const k_block_mxfp4 *b = (const k_block_mxfp4 *)src;
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float d = k_e8m0_half(b[i].e);
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)k_mxfp4_values[b[i].qs[j] & 15];
            dst[j + 16] = d * (float)k_mxfp4_values[b[i].qs[j] >> 4];
        }
    }
}

/* lane[l] = the products of elements 4l..4l+3 of block x and activations a */
static void mxfp4_lanes(int32_t lane[8], const k_block_mxfp4 *x, const int8_t *a) {
    int8_t q[32];
    for (int j = 0; j < 16; j++) {
        q[j] = k_mxfp4_values[x->qs[j] & 15];
        q[j + 16] = k_mxfp4_values[x->qs[j] >> 4];
    }
    for (int l = 0; l < 8; l++) {
        int32_t s = 0;
        for (int e = 4 * l; e < 4 * l + 4; e++) s += q[e] * a[e];
        lane[l] = s;
    }
}

static float mxfp4_d(const k_block_mxfp4 *x, const k_block_q8_0 *y) { return k_f16_to_f32(y->d) * k_e8m0_half(x->e); }

float k_dot_mxfp4_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_mxfp4 *x = (const k_block_mxfp4 *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const int64_t nb = n / K_QK;
    float acc[2][8] = {{0}}, both[8];
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        for (int h = 0; h < 2; h++) {
            int32_t lane[8];
            mxfp4_lanes(lane, &x[i + h], y[i + h].qs);
            const float d = mxfp4_d(&x[i + h], &y[i + h]);
            for (int l = 0; l < 8; l++) acc[h][l] = fmaf(d, (float)lane[l], acc[h][l]);
        }
    }
    for (int l = 0; l < 8; l++) both[l] = acc[0][l] + acc[1][l];
    float sum = k_hsum8_ref(both);
    if (i < nb) { /* odd block count: the last block as one scalar term */
        int32_t lane[8], isum = 0;
        mxfp4_lanes(lane, &x[i], y[i].qs);
        for (int l = 0; l < 8; l++) isum += lane[l];
        sum = fmaf(mxfp4_d(&x[i], &y[i]), (float)isum, sum);
    }
    return sum;
}
