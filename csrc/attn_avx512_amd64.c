/* attn_avx512_amd64.c — k_attention_f16acc_avx512 and
 * k_attention_tiled_avx512: attn_x86.h for the AVX-512 impl — the 256-bit
 * primitives with the 32 vector registers of AVX-512VL, and vblock64x2 (the
 * V rows of a head pair) on 512-bit vectors; every step is lane-wise or the
 * same tree as the AVX2 build, so the bits are the same. */
#define ATTN_X86 K_AVX512
#define ATTN_ZMM 1
#include "attn_x86.h"

K_AVX512 void k_attention_f16acc_avx512(ATTN_F16_PARAMS) { attn_f16acc(ATTN_F16_ARGS); }
K_AVX512 void k_attention_tiled_avx512(ATTN_F16_PARAMS) { attn_tiled(ATTN_F16_ARGS); }
K_AVX512 void k_attention_kvq_avx512(ATTN_KVQ_PARAMS) { attn_kvq(ATTN_KVQ_ARGS); }
