/* attn_avx512_amd64.c — k_attention_f16acc_avx512 and
 * k_attention_tiled_avx512: attn_x86.h for the AVX-512 impl — the same
 * 256-bit operations (so the same bits), with the 32 vector registers of
 * AVX-512VL: vblock64x2 keeps both heads' 64 lanes in registers in one pass
 * over the V rows. */
#define ATTN_X86 K_AVX512
#define ATTN_PAIR_LANES 64
#include "attn_x86.h"

K_AVX512 void k_attention_f16acc_avx512(ATTN_F16_PARAMS) { attn_f16acc(ATTN_F16_ARGS); }
K_AVX512 void k_attention_tiled_avx512(ATTN_F16_PARAMS) { attn_tiled(ATTN_F16_ARGS); }
