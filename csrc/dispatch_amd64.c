/* dispatch_amd64.c — x86-64 hooks: which SIMD kernel serves (impl, type).
 * Only called with impl != K_IMPL_REF; Go enables an impl only when the CPU
 * has its features (AVX2+FMA+F16C for K_IMPL_AVX2). */
#include "kernels.h"

k_dequant_fn k_arch_get_dequant(int impl, int type) { (void)impl; (void)type; return NULL; }
k_dot_fn k_arch_get_dot(int impl, int wtype) { (void)impl; (void)wtype; return NULL; }
k_quantize_fn k_arch_get_quantize(int impl, int act) { (void)impl; (void)act; return NULL; }
k_mm_tile_fn k_arch_get_mm_tile(int impl, int wtype) { (void)impl; (void)wtype; return NULL; }
const k_arch_ops *k_arch_get_ops(int impl) { (void)impl; return NULL; }
