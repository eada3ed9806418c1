/* quant_ref.c — scalar reference dequantization (bit-identical to ggml's
 * to_float) and activation quantization (docs/formats.md, "Activation quantization").
 *
 * Floating-point expressions are split into separate statements where a
 * compiler could otherwise contract a*b+c into an FMA (clang's default
 * -ffp-contract=on works within one expression): the reference must round
 * after the multiply. */
#include <string.h>
#include <math.h>
#include "kernels.h"

#define H2F(h) k_f16_to_f32(h)

/* ---- float formats ---- */

void k_dequant_f32_ref(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void k_dequant_f16_ref(const void *src, float *dst, int64_t n) {
    const k_half *s = (const k_half *)src;
    for (int64_t i = 0; i < n; i++) dst[i] = H2F(s[i]);
}

void k_dequant_bf16_ref(const void *src, float *dst, int64_t n) {
    const k_bf16 *s = (const k_bf16 *)src;
    for (int64_t i = 0; i < n; i++) dst[i] = k_bf16_to_f32(s[i]);
}

/* ---- 32-element formats ---- */

/* The 32 quants of a 32-element block: element j < 16 in the low nibble of
 * qs[j], element j + 16 in its high nibble; with qh (Q5_0, Q5_1: u32 LE),
 * bit j of it is the 5th bit of element j. */
static void q4_quants(const uint8_t qs[16], int q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j]      = qs[j] & 15;
        q[j + 16] = qs[j] >> 4;
    }
}
static void q5_quants(const uint8_t qs[16], const uint8_t qhb[4], int q[32]) {
    uint32_t qh; memcpy(&qh, qhb, 4);
    q4_quants(qs, q);
    for (int j = 0; j < 32; j++) q[j] |= (int)(((qh >> j) & 1) << 4);
}

/* Q4_1 and Q5_1: q*d + m (the product rounded before the add) */
static void affine32(const int q[32], float d, float m, float *dst) {
    for (int j = 0; j < 32; j++) {
        float t = (float)q[j] * d;
        dst[j] = t + m;
    }
}

/* Q4_0: (q-8)*d */
void k_dequant_q4_0_ref(const void *src, float *dst, int64_t n) {
    const k_block_q4_0 *b = (const k_block_q4_0 *)src;
    int q[32];
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float d = H2F(b[i].d);
        q4_quants(b[i].qs, q);
        for (int j = 0; j < 32; j++) dst[j] = (float)(q[j] - 8) * d;
    }
}

void k_dequant_q4_1_ref(const void *src, float *dst, int64_t n) {
    const k_block_q4_1 *b = (const k_block_q4_1 *)src;
    int q[32];
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        q4_quants(b[i].qs, q);
        affine32(q, H2F(b[i].d), H2F(b[i].m), dst);
    }
}

/* Q5_0: (q-16)*d */
void k_dequant_q5_0_ref(const void *src, float *dst, int64_t n) {
    const k_block_q5_0 *b = (const k_block_q5_0 *)src;
    int q[32];
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float d = H2F(b[i].d);
        q5_quants(b[i].qs, b[i].qh, q);
        for (int j = 0; j < 32; j++) dst[j] = (float)(q[j] - 16) * d;
    }
}

void k_dequant_q5_1_ref(const void *src, float *dst, int64_t n) {
    const k_block_q5_1 *b = (const k_block_q5_1 *)src;
    int q[32];
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        q5_quants(b[i].qs, b[i].qh, q);
        affine32(q, H2F(b[i].d), H2F(b[i].m), dst);
    }
}

void k_dequant_q8_0_ref(const void *src, float *dst, int64_t n) {
    const k_block_q8_0 *b = (const k_block_q8_0 *)src;
    for (int64_t i = 0; i < n / K_QK; i++, dst += K_QK) {
        const float d = H2F(b[i].d);
        for (int j = 0; j < K_QK; j++) dst[j] = (float)b[i].qs[j] * d;
    }
}

/* ---- K-quants ---- */

/* k_q4k_scale_min and k_q4k_chunk_dm: static inline in kernels.h */

/* Q4_K (qh NULL) and Q5_K: 4 chunks of 64; chunk c = qs[32c..32c+31], low
 * nibbles sub-block 2c, high nibbles sub-block 2c+1, for Q5_K plus a 5th bit:
 * bit 2c (low half) / 2c+1 (high half) of qh[l]; value = (d*sc)*q - (dmin*m). */
static void dequant_q45k(const uint8_t *scales, float d, float dmin, const uint8_t *q, const uint8_t *qh, float *dst) {
    for (int c = 0; c < 4; c++, q += 32, dst += 64) {
        float dm[4];
        k_q4k_chunk_dm(scales, c, d, dmin, dm);
        for (int half = 0; half < 2; half++) {
            for (int l = 0; l < 32; l++) {
                int v = half ? q[l] >> 4 : q[l] & 15;
                if (qh) v += ((qh[l] >> (2 * c + half)) & 1) << 4;
                float t = dm[2 * half] * (float)v;
                dst[32 * half + l] = t - dm[2 * half + 1];
            }
        }
    }
}

void k_dequant_q4_k_ref(const void *src, float *dst, int64_t n) {
    const k_block_q4_k *b = (const k_block_q4_k *)src;
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK)
        dequant_q45k(b[i].scales, H2F(b[i].d), H2F(b[i].dmin), b[i].qs, NULL, dst);
}

void k_dequant_q5_k_ref(const void *src, float *dst, int64_t n) {
    const k_block_q5_k *b = (const k_block_q5_k *)src;
    for (int64_t i = 0; i < n / K_QKK; i++, dst += K_QKK)
        dequant_q45k(b[i].scales, H2F(b[i].d), H2F(b[i].dmin), b[i].qs, b[i].qh, dst);
}

/* Q6_K: two halves of 128; value = (d * scale[group]) * (q - 32). */
void k_dequant_q6_k_ref(const void *src, float *dst, int64_t n) {
    const k_block_q6_k *b = (const k_block_q6_k *)src;
    for (int64_t i = 0; i < n / K_QKK; i++) {
        const float d = H2F(b[i].d);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *L = b[i].ql + 64 * h, *H = b[i].qh + 32 * h;
            const int8_t *sc = b[i].scales + 8 * h;
            for (int l = 0; l < 32; l++) {
                int g = l / 16;
                int q1 = ((L[l] & 15)      | (((H[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((L[l] >> 4)      | (((H[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32;
                float s1 = d * (float)sc[g + 0], s2 = d * (float)sc[g + 2];
                float s3 = d * (float)sc[g + 4], s4 = d * (float)sc[g + 6];
                dst[l]      = s1 * (float)q1;
                dst[l + 32] = s2 * (float)q2;
                dst[l + 64] = s3 * (float)q3;
                dst[l + 96] = s4 * (float)q4;
            }
        }
    }
}

/* ---- activation quantization ---- */

/* round half to even for |v| < 2^22, independent of the FPU mode flags in
 * practice (the default mode is round-to-nearest-even): ggml's trick. */
static inline int nearest_int(float v) {
    float f = v + 12582912.0f;
    int32_t i; memcpy(&i, &f, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* Q8_K: max = the signed value of largest |x| (first wins); iscale = -127/max;
 * qs = min(127, round(iscale*x)); d = 1/iscale; bsums = sums of 16. */
void k_quantize_q8_k_ref(const float *x, void *dst, int64_t n) {
    k_block_q8_k *y = (k_block_q8_k *)dst;
    for (int64_t i = 0; i < n / K_QKK; i++, x += K_QKK) {
        float amax = 0, max = 0;
        for (int j = 0; j < K_QKK; j++) {
            float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        if (amax == 0) {
            k_q8k_zero_block(&y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < K_QKK; j++) {
            int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++) s += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)s;
        }
        y[i].d = 1 / iscale;
    }
}

/* Q8_0: d = amax/127 stored f16; id = 127/amax (0 if amax == 0); qs = round(x*id). */
void k_quantize_q8_0_ref(const float *x, void *dst, int64_t n) {
    k_block_q8_0 *y = (k_block_q8_0 *)dst;
    for (int64_t i = 0; i < n / K_QK; i++, x += K_QK) {
        float amax = 0;
        for (int j = 0; j < K_QK; j++) {
            float ax = fabsf(x[j]);
            if (ax > amax) amax = ax;
        }
        const float d = amax / 127.f;
        const float id = amax != 0 ? 127.f / amax : 0.f;
        y[i].d = k_f32_to_f16(d);
        for (int j = 0; j < K_QK; j++) y[i].qs[j] = (int8_t)nearest_int(x[j] * id);
    }
}

void k_quantize_f16_ref(const float *x, void *dst, int64_t n) {
    k_half *y = (k_half *)dst;
    for (int64_t i = 0; i < n; i++) y[i] = k_f32_to_f16(x[i]);
}
