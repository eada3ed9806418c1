/* packed_avx2_amd64.c — packed (row-interleaved) Q4_K, Q6_K and Q8_0, AVX2: the
 * layouts and kernels of packed_x86.h. The AVX-512 set uses the same
 * layouts (its pack functions are these), with its own gemv. */
#include <stdlib.h>
#include "simd_avx2_amd64.h"
#include "packed_x86.h"

void k_pack_q4_k_x8_avx2(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_q4k_pack(n, src, row_bytes, nrows, dst);
}
void k_pack_q6_k_x8_avx2(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_q6k_pack(n, src, row_bytes, nrows, dst);
}
KT void k_mm_packed_q4_k_x8_avx2(K_MM_TILE_PARAMS) { pk_mm(pk_q4k_gemv8, pk_q4k_unpack, k_mm_q4_k_avx2, K_MM_TILE_ARGS); }
KT void k_mm_packed_q6_k_x8_avx2(K_MM_TILE_PARAMS) { pk_mm(pk_q6k_gemv8, pk_q6k_unpack, k_mm_q6_k_avx2, K_MM_TILE_ARGS); }
void k_pack_q8_0_x8_avx2(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    pk_q8_0_pack(n, src, row_bytes, nrows, dst);
}
KT void k_mm_packed_q8_0_x8_avx2(K_MM_TILE_PARAMS) { pk_mm(pk_q8_0_gemv8, pk_q8_0_unpack, k_mm_q8_0_avx2, K_MM_TILE_ARGS); }
