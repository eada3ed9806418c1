/* dot_kquant_avx2_amd64.c — K-quant x Q8_K dots, AVX2 (instruction choices:
 * simd_avx2_amd64.h). The bodies are the static inline dot_q45k / dot_q6_k_q8_k of
 * dot_kquant_simd.h, shared with the other x86 ISA level. */
#include "simd_avx2_amd64.h"
#include "dot_kquant_simd.h"

K_AVX2 float k_dot_q4_k_q8_k_avx2(int64_t n, const void *w, const void *a) { return dot_q45k(K_Q4_K, n, w, a); }
K_AVX2 float k_dot_q5_k_q8_k_avx2(int64_t n, const void *w, const void *a) { return dot_q45k(K_Q5_K, n, w, a); }
K_AVX2 float k_dot_q6_k_q8_k_avx2(int64_t n, const void *w, const void *a) { return dot_q6_k_q8_k(n, w, a); }
