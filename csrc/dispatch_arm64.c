/*
 * dispatch_arm64.c — arm64 hooks: which kernel serves (impl, type).
 *
 *   K_IMPL_NEON      plain Advanced SIMD kernels (*_neon_arm64.c), every arm64 CPU
 *   K_IMPL_NEON_DOT  the NEON set with the integer dot products replaced by the
 *                    SDOT kernels (*_neon_dot_arm64.c)
 *
 * Only called with impl != K_IMPL_REF. Package kernels enables
 * K_IMPL_NEON_DOT only when the CPU reports dotprod (x/sys/cpu
 * ARM64.HasASIMDDP): the _neon_dot kernels would fault elsewhere. NULL means
 * "no SIMD kernel for this pair": the driver uses the ref one.
 */
#include "kernels_neon_arm64.h"

static int is_neon(int impl) { return impl == K_IMPL_NEON || impl == K_IMPL_NEON_DOT; }

k_dequant_fn k_arch_get_dequant(int impl, int type) {
    if (!is_neon(impl)) return NULL;
    switch (type) {
    case K_F16:  return k_dequant_f16_neon;
    case K_Q4_0: return k_dequant_q4_0_neon;
    case K_Q8_0: return k_dequant_q8_0_neon;
    case K_Q2_K: return k_dequant_q2_k_neon;
    case K_Q3_K: return k_dequant_q3_k_neon;
    case K_Q4_K: return k_dequant_q4_k_neon;
    case K_Q5_K: return k_dequant_q5_k_neon;
    case K_Q6_K: return k_dequant_q6_k_neon;
    case K_IQ4_NL: return k_dequant_iq4_nl_neon;
    case K_IQ4_XS: return k_dequant_iq4_xs_neon;
    default:     return NULL;
    }
}

k_dot_fn k_arch_get_dot(int impl, int wtype) {
    if (impl == K_IMPL_NEON_DOT) {
        switch (wtype) {
        case K_Q2_K: return k_dot_q2_k_q8_k_neon_dot;
        case K_Q3_K: return k_dot_q3_k_q8_k_neon_dot;
        case K_Q4_K: return k_dot_q4_k_q8_k_neon_dot;
        case K_Q5_K: return k_dot_q5_k_q8_k_neon_dot;
        case K_Q6_K: return k_dot_q6_k_q8_k_neon_dot;
        case K_Q4_0: return k_dot_q4_0_q8_0_neon_dot;
        case K_Q5_0: return k_dot_q5_0_q8_0_neon_dot;
        case K_Q8_0: return k_dot_q8_0_q8_0_neon_dot;
        case K_IQ4_NL: return k_dot_iq4_nl_q8_0_neon_dot;
        case K_IQ4_XS: return k_dot_iq4_xs_q8_k_neon_dot;
        default:     break; /* the float dots are the same in both sets */
        }
    }
    if (!is_neon(impl)) return NULL;
    switch (wtype) {
    case K_Q2_K: return k_dot_q2_k_q8_k_neon;
    case K_Q3_K: return k_dot_q3_k_q8_k_neon;
    case K_Q4_K: return k_dot_q4_k_q8_k_neon;
    case K_Q5_K: return k_dot_q5_k_q8_k_neon;
    case K_Q6_K: return k_dot_q6_k_q8_k_neon;
    case K_Q4_0: return k_dot_q4_0_q8_0_neon;
    case K_Q5_0: return k_dot_q5_0_q8_0_neon;
    case K_Q8_0: return k_dot_q8_0_q8_0_neon;
    case K_IQ4_NL: return k_dot_iq4_nl_q8_0_neon;
    case K_IQ4_XS: return k_dot_iq4_xs_q8_k_neon;
    case K_F16:  return k_dot_f16_f16_neon;
    case K_F32:  return k_dot_f32_f32_neon;
    default:     return NULL;
    }
}

k_quantize_fn k_arch_get_quantize(int impl, int act) {
    if (!is_neon(impl)) return NULL;
    switch (act) {
    case K_Q8_K: return k_quantize_q8_k_neon;
    case K_Q8_0: return k_quantize_q8_0_neon;
    case K_F16:  return k_quantize_f16_neon;
    default:     return NULL;
    }
}

/* k_matmul_q tiles (1 row x 4 tokens, same bits as the dots; IQ4_NL
 * batches in the reference's batch order, see kernels.h); also used by
 * k_matvec with one token, where they run the single-token dot per row. */
k_mm_tile_fn k_arch_get_mm_tile(int impl, int wtype) {
    if (impl == K_IMPL_NEON_DOT) {
        switch (wtype) {
        case K_Q2_K: return k_mm_q2_k_neon_dot;
        case K_Q3_K: return k_mm_q3_k_neon_dot;
        case K_Q4_K: return k_mm_q4_k_neon_dot;
        case K_Q5_K: return k_mm_q5_k_neon_dot;
        case K_Q6_K: return k_mm_q6_k_neon_dot;
        case K_Q4_0: return k_mm_q4_0_neon_dot;
        case K_Q5_0: return k_mm_q5_0_neon_dot;
        case K_Q8_0: return k_mm_q8_0_neon_dot;
        case K_IQ4_NL: return k_mm_iq4_nl_neon_dot;
        case K_IQ4_XS: return k_mm_iq4_xs_neon_dot;
        default:     return NULL;
        }
    }
    if (impl != K_IMPL_NEON) return NULL;
    switch (wtype) {
    case K_Q2_K: return k_mm_q2_k_neon;
    case K_Q3_K: return k_mm_q3_k_neon;
    case K_Q4_K: return k_mm_q4_k_neon;
    case K_Q5_K: return k_mm_q5_k_neon;
    case K_Q6_K: return k_mm_q6_k_neon;
    case K_Q4_0: return k_mm_q4_0_neon;
    case K_Q5_0: return k_mm_q5_0_neon;
    case K_Q8_0: return k_mm_q8_0_neon;
    case K_IQ4_NL: return k_mm_iq4_nl_neon;
    case K_IQ4_XS: return k_mm_iq4_xs_neon;
    default:     return NULL;
    }
}

/* NEON sgemm, exact attention and swiglu; the other ops (f32 attention, norms,
 * softmax, ...) are the ref ones, which gcc/clang vectorize well enough for
 * their share of the time. */
static const k_arch_ops neon_ops = {.sgemm = k_sgemm_neon, .attention_f16acc = k_attention_f16acc_neon,
                                    .attention_tiled = k_attention_tiled_neon, .swiglu = k_swiglu_neon};

const k_arch_ops *k_arch_get_ops(int impl) { return is_neon(impl) ? &neon_ops : NULL; }
