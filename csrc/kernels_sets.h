/* kernels_sets.h — the kernel lists every SIMD set (AVX2, AVX-512, NEON,
 * NEON dotprod) has, declared for the set's name suffix s through the
 * function types of kernels.h, one list per op; private to csrc. A set's
 * header (kernels_<isa>.h) names its lists and declares the kernels only
 * it has; each kernel's definition is written out in its .c file. */
#ifndef WOOLLY_KERNELS_SETS_H
#define WOOLLY_KERNELS_SETS_H

#include "kernels.h"

/* the dequantizers and the activation quantizers */
#define K_SET_CONVERT(s)                                                                                              \
    k_dequant_kernel k_dequant_f16_##s, k_dequant_q4_0_##s, k_dequant_q8_0_##s, k_dequant_q2_k_##s,                  \
        k_dequant_q3_k_##s, k_dequant_q4_k_##s, k_dequant_q5_k_##s, k_dequant_q6_k_##s, k_dequant_iq4_nl_##s,        \
        k_dequant_iq4_xs_##s, k_dequant_mxfp4_##s;                                                                    \
    k_quantize_kernel k_quantize_q8_k_##s, k_quantize_q8_0_##s, k_quantize_f16_##s

/* the quantized dots: weights against Q8_0 / Q8_K activations */
#define K_SET_QDOTS(s)                                                                                                \
    k_dot_kernel k_dot_q2_k_q8_k_##s, k_dot_q3_k_q8_k_##s, k_dot_q4_k_q8_k_##s, k_dot_q5_k_q8_k_##s,                 \
        k_dot_q6_k_q8_k_##s, k_dot_q4_0_q8_0_##s, k_dot_q5_0_q8_0_##s, k_dot_q8_0_q8_0_##s, k_dot_iq4_nl_q8_0_##s,   \
        k_dot_iq4_xs_q8_k_##s, k_dot_mxfp4_q8_0_##s

/* the k_matmul_q tiles of the same weight types */
#define K_SET_QTILES(s)                                                                                               \
    k_mm_tile_kernel k_mm_q2_k_##s, k_mm_q3_k_##s, k_mm_q4_k_##s, k_mm_q5_k_##s, k_mm_q6_k_##s, k_mm_q4_0_##s,       \
        k_mm_q5_0_##s, k_mm_q8_0_##s, k_mm_iq4_nl_##s, k_mm_iq4_xs_##s, k_mm_mxfp4_##s

#endif
