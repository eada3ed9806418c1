/* dispatch_amd64.c — x86-64 hooks: which SIMD kernel serves (impl, type).
 * Only called with impl != K_IMPL_REF. Go enables an impl only when the CPU
 * has its features: K_IMPL_AVX2 needs AVX2+FMA+F16C; K_IMPL_AVX512 needs
 * those plus AVX-512 F/BW/VL/VNNI and uses the VNNI integer dots where they
 * exist, the AVX2 kernels everywhere else. NULL = use ref. */
#include "kernels_avx2_amd64.h"

static int is_x86_simd(int impl) { return impl == K_IMPL_AVX2 || impl == K_IMPL_AVX512; }

k_dequant_fn k_arch_get_dequant(int impl, int type) {
    if (!is_x86_simd(impl)) return NULL;
    switch (type) {
    case K_F16:  return k_dequant_f16_avx2;
    case K_Q4_0: return k_dequant_q4_0_avx2;
    case K_Q8_0: return k_dequant_q8_0_avx2;
    case K_Q2_K: return k_dequant_q2_k_avx2;
    case K_Q3_K: return k_dequant_q3_k_avx2;
    case K_Q4_K: return k_dequant_q4_k_avx2;
    case K_Q5_K: return k_dequant_q5_k_avx2;
    case K_Q6_K: return k_dequant_q6_k_avx2;
    case K_IQ4_NL: return k_dequant_iq4_nl_avx2;
    case K_IQ4_XS: return k_dequant_iq4_xs_avx2;
    default:     return NULL;
    }
}

static k_dot_fn dot_avx512(int wtype) {
    switch (wtype) {
    case K_Q4_0: return k_dot_q4_0_q8_0_avx512;
    case K_Q4_1: return k_dot_q4_1_q8_0_avx512;
    case K_Q5_0: return k_dot_q5_0_q8_0_avx512;
    case K_Q5_1: return k_dot_q5_1_q8_0_avx512;
    case K_Q8_0: return k_dot_q8_0_q8_0_avx512;
    case K_Q2_K: return k_dot_q2_k_q8_k_avx512;
    case K_Q3_K: return k_dot_q3_k_q8_k_avx512;
    case K_Q4_K: return k_dot_q4_k_q8_k_avx512;
    case K_Q5_K: return k_dot_q5_k_q8_k_avx512;
    case K_Q6_K: return k_dot_q6_k_q8_k_avx512;
    case K_IQ4_NL: return k_dot_iq4_nl_q8_0_avx512;
    case K_IQ4_XS: return k_dot_iq4_xs_q8_k_avx512;
    default:     return NULL;
    }
}

k_dot_fn k_arch_get_dot(int impl, int wtype) {
    if (!is_x86_simd(impl)) return NULL;
    if (impl == K_IMPL_AVX512 && dot_avx512(wtype)) return dot_avx512(wtype);
    switch (wtype) {
    case K_F32:  return k_dot_f32_f32_avx2;
    case K_F16:  return k_dot_f16_f16_avx2;
    case K_BF16: return k_dot_bf16_f32_avx2;
    case K_Q4_0: return k_dot_q4_0_q8_0_avx2;
    case K_Q4_1: return k_dot_q4_1_q8_0_avx2;
    case K_Q5_0: return k_dot_q5_0_q8_0_avx2;
    case K_Q5_1: return k_dot_q5_1_q8_0_avx2;
    case K_Q8_0: return k_dot_q8_0_q8_0_avx2;
    case K_Q2_K: return k_dot_q2_k_q8_k_avx2;
    case K_Q3_K: return k_dot_q3_k_q8_k_avx2;
    case K_Q4_K: return k_dot_q4_k_q8_k_avx2;
    case K_Q5_K: return k_dot_q5_k_q8_k_avx2;
    case K_Q6_K: return k_dot_q6_k_q8_k_avx2;
    case K_IQ4_NL: return k_dot_iq4_nl_q8_0_avx2;
    case K_IQ4_XS: return k_dot_iq4_xs_q8_k_avx2;
    default:     return NULL;
    }
}

k_quantize_fn k_arch_get_quantize(int impl, int act) {
    if (!is_x86_simd(impl)) return NULL;
    switch (act) {
    case K_Q8_K: return k_quantize_q8_k_avx2;
    case K_Q8_0: return k_quantize_q8_0_avx2;
    case K_F16:  return k_quantize_f16_avx2;
    default:     return NULL;
    }
}

k_mm_tile_fn k_arch_get_mm_tile(int impl, int wtype) {
    if (!is_x86_simd(impl)) return NULL;
    const int v = impl == K_IMPL_AVX512;
    switch (wtype) {
    case K_Q2_K: return v ? k_mm_q2_k_avx512 : k_mm_q2_k_avx2;
    case K_Q3_K: return v ? k_mm_q3_k_avx512 : k_mm_q3_k_avx2;
    case K_Q4_K: return v ? k_mm_q4_k_avx512 : k_mm_q4_k_avx2;
    case K_Q6_K: return v ? k_mm_q6_k_avx512 : k_mm_q6_k_avx2;
    case K_Q8_0: return v ? k_mm_q8_0_avx512 : k_mm_q8_0_avx2;
    case K_Q4_0: return v ? k_mm_q4_0_avx512 : k_mm_q4_0_avx2;
    case K_Q5_K: return v ? k_mm_q5_k_avx512 : k_mm_q5_k_avx2;
    case K_Q5_0: return v ? k_mm_q5_0_avx512 : k_mm_q5_0_avx2;
    case K_IQ4_NL: return v ? k_mm_iq4_nl_avx512 : k_mm_iq4_nl_avx2;
    case K_IQ4_XS: return v ? k_mm_iq4_xs_avx512 : k_mm_iq4_xs_avx2;
    case K_F16:  return k_mm_f16_avx2;
    case K_F32:  return k_mm_f32_avx2;
    default:     return NULL; /* the driver runs rows x the single-token dot */
    }
}

static const k_arch_ops avx2_ops = {
    .sgemm = k_sgemm_avx2, .attention = k_attention_avx2, .rmsnorm = k_rmsnorm_avx2,
    .softmax = k_softmax_avx2, .silu_mul = k_silu_mul_avx2, .add = k_add_avx2, .scale = k_scale_avx2,
    .attention_f16acc = k_attention_f16acc_avx2, .attention_tiled = k_attention_tiled_avx2,
    .rope = k_rope_avx2, .swiglu = k_swiglu_avx2,
};

const k_arch_ops *k_arch_get_ops(int impl) { return is_x86_simd(impl) ? &avx2_ops : NULL; }
