/* dot_q32_avx2_amd64.c — 32-element-block x Q8_0 dots, AVX2 (instruction
 * choices: simd_avx2_amd64.h). The bodies are the static inline
 * dot_q*_q8_0 of dot_q32_simd.h, shared with the other x86 ISA level. */
#include "simd_avx2_amd64.h"
#include "dot_q32_simd.h"

K_AVX2 float k_dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *a) { return dot_q4_0_q8_0(n, w, a); }
K_AVX2 float k_dot_q4_1_q8_0_avx2(int64_t n, const void *w, const void *a) { return dot_q4_1_q8_0(n, w, a); }
K_AVX2 float k_dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *a) { return dot_q5_0_q8_0(n, w, a); }
K_AVX2 float k_dot_q5_1_q8_0_avx2(int64_t n, const void *w, const void *a) { return dot_q5_1_q8_0(n, w, a); }
K_AVX2 float k_dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *a) { return dot_q8_0_q8_0(n, w, a); }
