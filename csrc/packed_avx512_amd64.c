/* packed_avx512_amd64.c — packed Q4_K, AVX-512 VNNI: packed_x86.h's layout
 * (packed by k_pack_q4_k_x8_avx2) with the 512-bit gemv and the set's own
 * tile for batches. */
#include <stdlib.h>
#include "simd_avx512_amd64.h"
#define PK_ZMM 1
#include "packed_x86.h"

KT void k_mm_packed_q4_k_x8_avx512(K_MM_TILE_PARAMS) { pk_q4k_mm(k_mm_q4_k_avx512, K_MM_TILE_ARGS); }
