/* iq4_ref.c — scalar reference kernels of the two non-linear 4-bit formats,
 * IQ4_NL (32-element blocks, paired with Q8_0 activations) and IQ4_XS
 * (256-element super-blocks with a 6-bit scale per 32, paired with Q8_K).
 *
 * Both store 4-bit indices into one 16-entry table of signed levels
 * (k_iq4nl_values); a block's values are d * level (IQ4_NL) or
 * d * (scale - 32) * level (IQ4_XS).
 *
 * Dequantization is bit-identical to ggml's to_float: one f32 multiply per
 * element (IQ4_XS: the sub-block factor d * (scale - 32) first, rounded to
 * f32, then times the level).
 *
 * Dot products follow the reference build's summation order (llama.cpp's
 * x86 kernels, which its AVX-512 build also runs for these two formats):
 * per 32 elements, 8 exact int32 lanes, lane l holding the products of
 * elements 4l..4l+3; the lanes are folded into 8 f32 accumulators with one
 * fmaf per block and reduced with hsum8 = ((0+4) + (2+6)) + ((1+5) + (3+7)).
 *   IQ4_XS:            lanes summed over the 8 sub-blocks (times their
 *                      scales) in int32, one fmaf(d * y.d) per super-block.
 *   IQ4_NL, one token: blocks 0, 2, 4, ... fold into one accumulator set,
 *                      blocks 1, 3, 5, ... into another; the two are added
 *                      lane by lane and reduced; an odd last block is added
 *                      as fmaf(d, its integer sum, total) (ggml's vec_dot).
 *   IQ4_NL, a batch:   one accumulator set, blocks in order (tinyBLAS_Q0,
 *                      which the reference uses for two or more tokens).
 * fmaf is exact in C whether or not the CPU has FMA. */
#include <math.h>
#include <string.h>
#include "kernels.h"
#include "ref_sum.h"
#include "mm_driver.h"

const int8_t k_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* the 32 signed levels of one IQ4_NL-shaped group of packed nibbles */
static void iq4_levels(const uint8_t qs[16], int8_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = k_iq4nl_values[qs[j] & 15];
        q[j + 16] = k_iq4nl_values[qs[j] >> 4];
    }
}

/* ---- dequantization ---- */

void k_dequant_iq4_nl_ref(const void *src, float *dst, int64_t n) {
    const k_block_iq4_nl *b = (const k_block_iq4_nl *)src;
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float d = k_f16_to_f32(b[i].d);
        int8_t q[32];
        iq4_levels(b[i].qs, q);
        for (int j = 0; j < 32; j++) dst[j] = d * (float)q[j];
    }
}

void k_dequant_iq4_xs_ref(const void *src, float *dst, int64_t n) {
    const k_block_iq4_xs *b = (const k_block_iq4_xs *)src;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = k_f16_to_f32(b[i].d);
        for (int s = 0; s < 8; s++, dst += 32) {
            const float dl = d * (float)k_iq4xs_scale(&b[i], s);
            int8_t q[32];
            iq4_levels(b[i].qs + 16 * s, q);
            for (int j = 0; j < 32; j++) dst[j] = dl * (float)q[j];
        }
    }
}

/* ---- dot products ---- */

/* lane[l] += scale * (products of elements 4l..4l+3) for one group of 32 */
static void iq4_lanes(int32_t lane[8], const uint8_t qs[16], const int8_t *a, int32_t scale) {
    int8_t q[32];
    iq4_levels(qs, q);
    for (int l = 0; l < 8; l++) {
        int32_t s = 0;
        for (int e = 4 * l; e < 4 * l + 4; e++) s += q[e] * a[e];
        lane[l] += scale * s;
    }
}

/* acc[l] = fmaf(d, lane[l], acc[l]) for the 8 lanes of IQ4_NL block i */
static void iq4nl_fold(float acc[8], const k_block_iq4_nl *x, const k_block_q8_0 *y, int64_t i) {
    int32_t lane[8] = {0};
    iq4_lanes(lane, x[i].qs, y[i].qs, 1);
    const float d = k_f16_to_f32(x[i].d) * k_f16_to_f32(y[i].d);
    for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
}

/* one token: ggml's vec_dot order (see the top of the file) */
float k_dot_iq4_nl_q8_0_ref(int64_t n, const void *w, const void *a) {
    const k_block_iq4_nl *x = (const k_block_iq4_nl *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    const int64_t nb = n / K_QK;
    float even[8] = {0}, odd[8] = {0}, both[8];
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        iq4nl_fold(even, x, y, i);
        iq4nl_fold(odd, x, y, i + 1);
    }
    for (int l = 0; l < 8; l++) both[l] = even[l] + odd[l];
    float sum = k_hsum8_ref(both);
    if (i < nb) { /* odd block count: the last block as one scalar term */
        int32_t lane[8] = {0};
        iq4_lanes(lane, x[i].qs, y[i].qs, 1);
        int32_t isum = 0;
        for (int l = 0; l < 8; l++) isum += lane[l];
        const float d = k_f16_to_f32(x[i].d) * k_f16_to_f32(y[i].d);
        sum = fmaf(d, (float)isum, sum);
    }
    return sum;
}

/* a batch of two or more tokens: tinyBLAS_Q0's order */
static float dot_iq4_nl_batch(int64_t n, const void *w, const void *a) {
    const k_block_iq4_nl *x = (const k_block_iq4_nl *)w;
    const k_block_q8_0 *y = (const k_block_q8_0 *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QK; i++) iq4nl_fold(acc, x, y, i);
    return k_hsum8_ref(acc);
}

static void iq4nl_piece_ref(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                            const char *a, size_t a_row_bytes, float *out) {
    const k_dot_fn dot = batch ? dot_iq4_nl_batch : k_dot_iq4_nl_q8_0_ref;
    for (int k = 0; k < toks; k++)
        for (int r = 0; r < rows; r++) out[k * rows + r] = dot(n, w + (size_t)r * row_bytes, a + (size_t)k * a_row_bytes);
}

static const mm_kernel mm_iq4nl_piece_ref = MM_BARE(iq4nl_piece_ref);
void k_mm_iq4_nl_ref(int64_t n, const void *w, size_t row_bytes, int64_t nr,
                     const void *a, size_t a_row_bytes, int64_t ntok,
                     float *y, int64_t y_stride) {
    k_mm_run(&mm_iq4nl_piece_ref, n, w, row_bytes, nr, a, a_row_bytes, ntok, y, y_stride);
}

float k_dot_iq4_xs_q8_k_ref(int64_t n, const void *w, const void *a) {
    const k_block_iq4_xs *x = (const k_block_iq4_xs *)w;
    const k_block_q8_k *y = (const k_block_q8_k *)a;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / K_QKK; i++) {
        int32_t lane[8] = {0};
        for (int s = 0; s < 8; s++) iq4_lanes(lane, x[i].qs + 16 * s, y[i].qs + 32 * s, k_iq4xs_scale(&x[i], s));
        const float d = k_f16_to_f32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
    }
    return k_hsum8_ref(acc);
}
