//go:build !amd64 && !arm64

/* dispatch_other.c — architectures without SIMD kernels: everything is ref. */
#include "kernels.h"

const k_type_kernels *k_arch_get_table(int impl, int layer) { (void)impl; (void)layer; return NULL; }
const k_arch_ops *k_arch_get_ops(int impl) { (void)impl; return NULL; }

#include "gdn.h"
k_gdn_recur_kernel *k_gdn_arch_recur(int impl) { (void)impl; return NULL; }
k_gdn_conv_kernel *k_gdn_arch_conv(int impl) { (void)impl; return NULL; }
