/* dispatch_amd64.c — x86-64 hooks: which SIMD kernel serves (impl, type).
 * Only called with impl != K_IMPL_REF. Go enables an impl only when the CPU
 * has its features: K_IMPL_AVX2 needs AVX2+FMA+F16C; K_IMPL_AVX512 needs
 * those plus AVX-512 F/BW/VL/VNNI and uses the VNNI integer dots and tiles
 * where they exist, the AVX2 kernels everywhere else. NULL = use ref. */
#include "kernels_avx2_amd64.h"

static const k_type_kernels avx2[K_TYPE_MAX] = {
    [K_F32]    = {.dot = k_dot_f32_f32_avx2, .mm_tile = k_mm_f32_avx2},
    [K_F16]    = {k_dequant_f16_avx2, k_dot_f16_f16_avx2, k_mm_f16_avx2, k_quantize_f16_avx2},
    [K_BF16]   = {.dot = k_dot_bf16_f32_avx2},
    [K_Q4_0]   = {k_dequant_q4_0_avx2, k_dot_q4_0_q8_0_avx2, k_mm_q4_0_avx2},
    [K_Q4_1]   = {.dot = k_dot_q4_1_q8_0_avx2},
    [K_Q5_0]   = {.dot = k_dot_q5_0_q8_0_avx2, .mm_tile = k_mm_q5_0_avx2},
    [K_Q5_1]   = {.dot = k_dot_q5_1_q8_0_avx2},
    [K_Q8_0]   = {k_dequant_q8_0_avx2, k_dot_q8_0_q8_0_avx2, k_mm_q8_0_avx2, k_quantize_q8_0_avx2,
                  .pack_rows = 8, .pack = k_pack_q8_0_x8_avx2, .mm_packed = k_mm_packed_q8_0_x8_avx2},
    [K_Q2_K]   = {k_dequant_q2_k_avx2, k_dot_q2_k_q8_k_avx2, k_mm_q2_k_avx2},
    [K_Q3_K]   = {k_dequant_q3_k_avx2, k_dot_q3_k_q8_k_avx2, k_mm_q3_k_avx2},
    [K_Q4_K]   = {k_dequant_q4_k_avx2, k_dot_q4_k_q8_k_avx2, k_mm_q4_k_avx2,
                  .pack_rows = 8, .pack = k_pack_q4_k_x8_avx2, .mm_packed = k_mm_packed_q4_k_x8_avx2},
    [K_Q5_K]   = {k_dequant_q5_k_avx2, k_dot_q5_k_q8_k_avx2, k_mm_q5_k_avx2},
    [K_Q6_K]   = {k_dequant_q6_k_avx2, k_dot_q6_k_q8_k_avx2, k_mm_q6_k_avx2,
                  .pack_rows = 8, .pack = k_pack_q6_k_x8_avx2, .mm_packed = k_mm_packed_q6_k_x8_avx2},
    [K_Q8_K]   = {.quantize = k_quantize_q8_k_avx2},
    [K_IQ4_NL] = {k_dequant_iq4_nl_avx2, k_dot_iq4_nl_q8_0_avx2, k_mm_iq4_nl_avx2},
    [K_IQ4_XS] = {k_dequant_iq4_xs_avx2, k_dot_iq4_xs_q8_k_avx2, k_mm_iq4_xs_avx2},
    [K_MXFP4]  = {k_dequant_mxfp4_avx2, k_dot_mxfp4_q8_0_avx2, k_mm_mxfp4_avx2},
};

/* the VNNI dots and tiles; the rest is avx2's. VNNI_PACKED adds the packed
 * layout: avx2's pack (one layout for both sets) and the VNNI packed tile. */
#define VNNI(dot_, tile_) {.dot = (dot_), .mm_tile = (tile_)}
#define VNNI_PACKED(dot_, tile_, pack_, packed_) \
    {.dot = (dot_), .mm_tile = (tile_), .pack_rows = 8, .pack = (pack_), .mm_packed = (packed_)}
static const k_type_kernels avx512[K_TYPE_MAX] = {
    [K_Q4_0]   = VNNI(k_dot_q4_0_q8_0_avx512, k_mm_q4_0_avx512),
    [K_Q4_1]   = {.dot = k_dot_q4_1_q8_0_avx512},
    [K_Q5_0]   = VNNI(k_dot_q5_0_q8_0_avx512, k_mm_q5_0_avx512),
    [K_Q5_1]   = {.dot = k_dot_q5_1_q8_0_avx512},
    [K_Q8_0]   = VNNI_PACKED(k_dot_q8_0_q8_0_avx512, k_mm_q8_0_avx512, k_pack_q8_0_x8_avx2, k_mm_packed_q8_0_x8_avx512),
    [K_Q2_K]   = VNNI(k_dot_q2_k_q8_k_avx512, k_mm_q2_k_avx512),
    [K_Q3_K]   = VNNI(k_dot_q3_k_q8_k_avx512, k_mm_q3_k_avx512),
    [K_Q4_K]   = VNNI_PACKED(k_dot_q4_k_q8_k_avx512, k_mm_q4_k_avx512, k_pack_q4_k_x8_avx2, k_mm_packed_q4_k_x8_avx512),
    [K_Q5_K]   = VNNI(k_dot_q5_k_q8_k_avx512, k_mm_q5_k_avx512),
    [K_Q6_K]   = VNNI_PACKED(k_dot_q6_k_q8_k_avx512, k_mm_q6_k_avx512, k_pack_q6_k_x8_avx2, k_mm_packed_q6_k_x8_avx512),
    [K_IQ4_NL] = VNNI(k_dot_iq4_nl_q8_0_avx512, k_mm_iq4_nl_avx512),
    [K_IQ4_XS] = VNNI(k_dot_iq4_xs_q8_k_avx512, k_mm_iq4_xs_avx512),
    [K_MXFP4]  = VNNI(k_dot_mxfp4_q8_0_avx512, k_mm_mxfp4_avx512),
};

const k_type_kernels *k_arch_get_table(int impl, int layer) {
    if (impl == K_IMPL_AVX512) return layer == 0 ? avx512 : layer == 1 ? avx2 : NULL;
    if (impl == K_IMPL_AVX2) return layer == 0 ? avx2 : NULL;
    return NULL;
}

/* the AVX2 ops with the attention drivers (f16acc, tiled, kvq) of a set */
#define X86_OPS(f16acc, tiled, kvq)                                                                                   \
    {.sgemm = k_sgemm_avx2, .attention = k_attention_avx2, .rmsnorm = k_rmsnorm_avx2, .add = k_add_avx2,             \
     .scale = k_scale_avx2, .rope = k_rope_avx2, .swiglu = k_swiglu_avx2, .attention_f16acc = (f16acc),               \
     .attention_tiled = (tiled), .attention_kvq = (kvq)}
static const k_arch_ops avx2_ops = X86_OPS(k_attention_f16acc_avx2, k_attention_tiled_avx2, k_attention_kvq_avx2);
/* the attention drivers built for AVX-512 (32 registers) */
static const k_arch_ops avx512_ops = X86_OPS(k_attention_f16acc_avx512, k_attention_tiled_avx512, k_attention_kvq_avx512);

const k_arch_ops *k_arch_get_ops(int impl) {
    return impl == K_IMPL_AVX512 ? &avx512_ops : impl == K_IMPL_AVX2 ? &avx2_ops : NULL;
}
