/* packed_avx512_amd64.c — packed Q4_K, Q6_K and Q8_0, AVX-512 VNNI: packed_x86.h's
 * layouts (packed by k_pack_*_x8_avx2) with the 512-bit gemv and the set's
 * own tiles for batches. */
#include <stdlib.h>
#include "simd_avx512_amd64.h"
#define PK_ZMM 1
#include "packed_x86.h"

KT void k_mm_packed_q4_k_x8_avx512(K_MM_TILE_PARAMS) { pk_mm(pk_q4k_gemv8, pk_q4k_unpack, k_mm_q4_k_avx512, K_MM_TILE_ARGS); }
KT void k_mm_packed_q6_k_x8_avx512(K_MM_TILE_PARAMS) { pk_mm(pk_q6k_gemv8, pk_q6k_unpack, k_mm_q6_k_avx512, K_MM_TILE_ARGS); }
KT void k_mm_packed_q8_0_x8_avx512(K_MM_TILE_PARAMS) { pk_mm(pk_q8_0_gemv8, pk_q8_0_unpack, k_mm_q8_0_avx512, K_MM_TILE_ARGS); }
