/*
 * dispatch_arm64.c — arm64 hooks: which kernel serves (impl, type).
 *
 *   K_IMPL_NEON      plain Advanced SIMD kernels (*_neon_arm64.c), every arm64 CPU
 *   K_IMPL_NEON_DOT  the NEON set with the integer dot products replaced by the
 *                    SDOT kernels (*_neon_dot_arm64.c)
 *   K_IMPL_NEON_I8MM the NEON_DOT set with prompt tiles of packed weights on
 *                    USMMLA (Q4_K, Q5_K: pack_neon_i8mm_arm64.c), on NEON_DOT's layouts
 *
 * Only called with impl != K_IMPL_REF. Package kernels enables
 * K_IMPL_NEON_DOT only when the CPU reports dotprod (x/sys/cpu
 * ARM64.HasASIMDDP) and K_IMPL_NEON_I8MM only when it reports dotprod and
 * i8mm (ARM64.HasI8MM): the kernels would fault elsewhere. NULL means
 * "no SIMD kernel for this pair": the driver uses the ref one.
 */
#include "kernels_neon_arm64.h"

/* The integer dots and tiles both sets have (kernels_neon_arm64.h), named
 * k_dot_<t>_<act>_<set> and k_mm_<t>_<set>, for set = neon or neon_dot;
 * the tiles run 1 row x 4 tokens (IQ4 and MXFP4 also 4 rows x 1 token)
 * with the dots' bits, IQ4_NL batches in the reference's batch order
 * (kernels.h), and k_matvec uses them with one token too. */
#define NEON_SET(set)                                                                                    \
    [K_Q4_0].dot = k_dot_q4_0_q8_0_##set, [K_Q4_0].mm_tile = k_mm_q4_0_##set,                           \
    [K_Q5_0].dot = k_dot_q5_0_q8_0_##set, [K_Q5_0].mm_tile = k_mm_q5_0_##set,                           \
    [K_Q8_0].dot = k_dot_q8_0_q8_0_##set, [K_Q8_0].mm_tile = k_mm_q8_0_##set,                           \
    [K_Q2_K].dot = k_dot_q2_k_q8_k_##set, [K_Q2_K].mm_tile = k_mm_q2_k_##set,                           \
    [K_Q3_K].dot = k_dot_q3_k_q8_k_##set, [K_Q3_K].mm_tile = k_mm_q3_k_##set,                           \
    [K_Q4_K].dot = k_dot_q4_k_q8_k_##set, [K_Q4_K].mm_tile = k_mm_q4_k_##set,                           \
    [K_Q5_K].dot = k_dot_q5_k_q8_k_##set, [K_Q5_K].mm_tile = k_mm_q5_k_##set,                           \
    [K_Q6_K].dot = k_dot_q6_k_q8_k_##set, [K_Q6_K].mm_tile = k_mm_q6_k_##set,                           \
    [K_IQ4_NL].dot = k_dot_iq4_nl_q8_0_##set, [K_IQ4_NL].mm_tile = k_mm_iq4_nl_##set,                   \
    [K_IQ4_XS].dot = k_dot_iq4_xs_q8_k_##set, [K_IQ4_XS].mm_tile = k_mm_iq4_xs_##set,                   \
    [K_MXFP4].dot = k_dot_mxfp4_q8_0_##set, [K_MXFP4].mm_tile = k_mm_mxfp4_##set

/* plain NEON: the set above, the float dots, dequantization and the
 * activation quantizers */
static const k_type_kernels neon[K_TYPE_MAX] = {
    NEON_SET(neon),
    [K_F32].dot = k_dot_f32_f32_neon, [K_F16].dot = k_dot_f16_f16_neon,
    [K_F16].dequant = k_dequant_f16_neon, [K_Q4_0].dequant = k_dequant_q4_0_neon,
    [K_Q8_0].dequant = k_dequant_q8_0_neon, [K_Q2_K].dequant = k_dequant_q2_k_neon,
    [K_Q3_K].dequant = k_dequant_q3_k_neon, [K_Q4_K].dequant = k_dequant_q4_k_neon,
    [K_Q5_K].dequant = k_dequant_q5_k_neon, [K_Q6_K].dequant = k_dequant_q6_k_neon,
    [K_IQ4_NL].dequant = k_dequant_iq4_nl_neon, [K_IQ4_XS].dequant = k_dequant_iq4_xs_neon,
    [K_MXFP4].dequant = k_dequant_mxfp4_neon,
    [K_F16].quantize = k_quantize_f16_neon, [K_Q8_0].quantize = k_quantize_q8_0_neon,
    [K_Q8_K].quantize = k_quantize_q8_k_neon,
};

/* SDOT: the set above and the packed layouts (pack_neon_dot_arm64.c); the
 * rest is neon's */
static const k_type_kernels neon_dot[K_TYPE_MAX] = {
    NEON_SET(neon_dot),
    [K_Q8_0].pack_rows = 8, [K_Q8_0].pack = k_pack_q8_0_x8_neon_dot, [K_Q8_0].mm_packed = k_mm_packed_q8_0_x8_neon_dot,
    [K_Q4_K].pack_rows = 4, [K_Q4_K].pack = k_pack_q4_k_x4_neon_dot, [K_Q4_K].mm_packed = k_mm_packed_q4_k_x4_neon_dot,
    [K_Q5_K].pack_rows = 4, [K_Q5_K].pack = k_pack_q5_k_x4_neon_dot, [K_Q5_K].mm_packed = k_mm_packed_q5_k_x4_neon_dot,
    [K_Q6_K].pack_rows = 4, [K_Q6_K].pack = k_pack_q6_k_x4_neon_dot, [K_Q6_K].mm_packed = k_mm_packed_q6_k_x4_neon_dot,
    [K_IQ4_XS].pack_rows = 4, [K_IQ4_XS].pack = k_pack_iq4_xs_x4_neon_dot,
    [K_IQ4_XS].mm_packed = k_mm_packed_iq4_xs_x4_neon_dot,
    [K_MXFP4].pack_rows = 4, [K_MXFP4].pack = k_pack_mxfp4_x4_neon_dot,
    [K_MXFP4].mm_packed = k_mm_packed_mxfp4_x4_neon_dot,
};
#undef NEON_SET

/* USMMLA tiles over neon_dot's packed layouts (the same pack kernels, so
 * k_pack_same holds and one packed copy serves both sets); the dots and
 * unpacked tiles are neon_dot's, listed again because the packed members
 * come from the layer that has the type's dot (kernels.h). One token runs
 * neon_dot's packed kernel: USMMLA pairs tokens. */
static const k_type_kernels neon_i8mm[K_TYPE_MAX] = {
    [K_Q4_K]   = {.dot = k_dot_q4_k_q8_k_neon_dot, .mm_tile = k_mm_q4_k_neon_dot,
                  .pack_rows = 4, .pack = k_pack_q4_k_x4_neon_dot, .mm_packed = k_mm_packed_q4_k_x4_neon_i8mm},
    [K_Q5_K]   = {.dot = k_dot_q5_k_q8_k_neon_dot, .mm_tile = k_mm_q5_k_neon_dot,
                  .pack_rows = 4, .pack = k_pack_q5_k_x4_neon_dot, .mm_packed = k_mm_packed_q5_k_x4_neon_i8mm},
};

const k_type_kernels *k_arch_get_table(int impl, int layer) {
    if (impl == K_IMPL_NEON_I8MM) return layer == 0 ? neon_i8mm : layer == 1 ? neon_dot : layer == 2 ? neon : NULL;
    if (impl == K_IMPL_NEON_DOT) return layer == 0 ? neon_dot : layer == 1 ? neon : NULL;
    if (impl == K_IMPL_NEON) return layer == 0 ? neon : NULL;
    return NULL;
}

/* NEON sgemm, exact attention, swiglu, RMS norm, RoPE and add (each with the
 * x86 sets' bits, ops_neon_arm64.c); the other ops (f32 attention, scale,
 * ...) are the ref ones, which gcc/clang vectorize well enough for their
 * share of the time. */
static const k_arch_ops neon_ops = {.sgemm = k_sgemm_neon, .attention_f16acc = k_attention_f16acc_neon,
                                    .attention_tiled = k_attention_tiled_neon, .swiglu = k_swiglu_neon,
                                    .rmsnorm = k_rmsnorm_neon, .rope = k_rope_neon, .add = k_add_neon,
                                    .attention_kvq = k_attention_kvq_neon};

const k_arch_ops *k_arch_get_ops(int impl) {
    return impl == K_IMPL_NEON || impl == K_IMPL_NEON_DOT || impl == K_IMPL_NEON_I8MM ? &neon_ops : NULL;
}
