/* attn_avx2_amd64.c — k_attention_f16acc_avx2 and k_attention_tiled_avx2:
 * attn_x86.h for AVX2+FMA+F16C (16 vector registers). */
#define ATTN_X86 K_AVX2
#define ATTN_ZMM 0
#include "attn_x86.h"

K_AVX2 void k_attention_f16acc_avx2(ATTN_F16_PARAMS) { attn_f16acc(ATTN_F16_ARGS); }
K_AVX2 void k_attention_tiled_avx2(ATTN_F16_PARAMS) { attn_tiled(ATTN_F16_ARGS); }
K_AVX2 void k_attention_kvq_avx2(ATTN_KVQ_PARAMS) { attn_kvq(ATTN_KVQ_ARGS); }
