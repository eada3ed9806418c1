/* attn_kvq_ref.c — reference of k_attention_kvq (see kernels.h): causal
 * attention over a KV cache with q8_0 / q4_0 (or f16) K and V rows, with
 * the numerics of the reference build's one-row CPU flash attention for
 * such a cache; and the q4_0 row quantizer that stores K / V rows. Scalar,
 * exact: fmaf for the fused steps, every f16 rounding through
 * k_f32_to_f16. */
#include "attn_common.h"

static inline float f16r(float x) { return k_f16_to_f32(k_f32_to_f16(x)); }

/* Q4_0 as the reference stores a row (its scalar quantizer): max = the
 * value of largest magnitude (the first), d = max / -8 (f16), id = 1/d
 * (0 for an all-zero block), q = min(15, (int8)(x * id + 8.5)); element j
 * in the low nibble of qs[j], j + 16 in the high one. */
void k_quantize_q4_0_ref(const float *x, void *dst, int64_t n) {
    k_block_q4_0 *y = (k_block_q4_0 *)dst;
    for (int64_t i = 0; i < n / K_QK; i++, x += K_QK) {
        float amax = 0, max = 0;
        for (int j = 0; j < K_QK; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[i].d = k_f32_to_f16(d);
        for (int j = 0; j < K_QK / 2; j++) {
            const float x0 = x[j] * id + 8.5f, x1 = x[j + K_QK / 2] * id + 8.5f;
            int8_t q0 = (int8_t)x0, q1 = (int8_t)x1;
            q0 = q0 < 15 ? q0 : 15;
            q1 = q1 < 15 ? q1 : 15;
            y[i].qs[j] = (uint8_t)q0 | (uint8_t)(q1 << 4);
        }
    }
}

/* k_attention_kvq_ref: the driver of every kernel set (attn_kvq_driver.h)
 * over scalar primitives that leave every lane to its own scalar loops. */
#define ATTN_FN
static inline float attn_h2f(k_half h) { return k_f16_to_f32(h); }
static inline float attn_f16r1(float x) { return f16r(x); }
static inline float attn_dot_f16(const float *x, const k_half *y, int64_t n, int64_t np) {
    return k_attn_dot_f16_ref(x, y, n, np);
}
static inline int64_t attn_kvq_vscale(float *acc, int64_t n, float ms) { (void)acc, (void)n, (void)ms; return 0; }
static inline int64_t attn_kvq_vmad(float *acc, const float *vf, int64_t n, float vs) {
    (void)acc, (void)vf, (void)n, (void)vs;
    return 0;
}
static inline int64_t attn_kvq_vscale_h(float *acc, int64_t n, float ms) { (void)acc, (void)n, (void)ms; return 0; }
static inline int64_t attn_kvq_vmad_h(float *acc, const k_half *vh, int64_t n, float vs) {
    (void)acc, (void)vh, (void)n, (void)vs;
    return 0;
}
#include "attn_kvq_driver.h"

void k_attention_kvq_ref(ATTN_KVQ_PARAMS) { attn_kvq(ATTN_KVQ_ARGS); }
