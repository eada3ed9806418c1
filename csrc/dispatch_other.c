//go:build !amd64 && !arm64

/* dispatch_other.c — architectures without SIMD kernels: everything is ref. */
#include "kernels.h"

k_dequant_fn k_arch_get_dequant(int impl, int type) { (void)impl; (void)type; return NULL; }
k_dot_fn k_arch_get_dot(int impl, int wtype) { (void)impl; (void)wtype; return NULL; }
k_quantize_fn k_arch_get_quantize(int impl, int act) { (void)impl; (void)act; return NULL; }
k_mm_tile_fn k_arch_get_mm_tile(int impl, int wtype) { (void)impl; (void)wtype; return NULL; }
const k_arch_ops *k_arch_get_ops(int impl) { (void)impl; return NULL; }
