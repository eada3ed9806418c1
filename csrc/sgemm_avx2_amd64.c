/* sgemm_avx2_amd64.c — f32 GEMM with a 6x16 FMA register tile, AVX2.
 * Specification: k_sgemm_ref in ops_ref.c (rows [m0, m1) of C = A * B or
 * A * B^T; C overwritten).
 *
 * Blocking: K in slices of KC; N in panels of 16 columns. Each (KC x 16)
 * panel of B is packed contiguously (zero-padded past N) once and reused by
 * every 6-row strip of A. The micro-kernel keeps a 6x16 tile of C in 12 ymm
 * accumulators: per k, two loads of B, six broadcasts of A, twelve FMAs. */
#include <string.h>
#include "kernels_avx2_amd64.h"

#define MR 6
#define NR 16
#define KC 256

/* Full 6x16 tile: C (+)= A[6][kc] * P[kc][16], twelve named accumulators
 * so that they stay in registers. acc_c: add to C instead of overwriting. */
K_AVX2 static void micro_6x16_full(int64_t kc, const float *A, int64_t lda, const float *P,
                                   float *C, int64_t ldc, int acc_c) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *a0 = A, *a1 = A + lda, *a2 = A + 2 * lda, *a3 = A + 3 * lda, *a4 = A + 4 * lda, *a5 = A + 5 * lda;
    for (int64_t k = 0; k < kc; k++, P += NR) {
        const __m256 b0 = _mm256_loadu_ps(P), b1 = _mm256_loadu_ps(P + 8);
        __m256 a;
        a = _mm256_broadcast_ss(a0 + k); c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(a1 + k); c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(a2 + k); c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(a3 + k); c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(a4 + k); c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(a5 + k); c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);
    }
#define STORE_ROW(r, x0, x1)                                                        \
    do {                                                                            \
        float *cr = C + (r) * ldc;                                                  \
        __m256 v0 = x0, v1 = x1;                                                    \
        if (acc_c) {                                                                \
            v0 = _mm256_add_ps(v0, _mm256_loadu_ps(cr));                            \
            v1 = _mm256_add_ps(v1, _mm256_loadu_ps(cr + 8));                        \
        }                                                                           \
        _mm256_storeu_ps(cr, v0);                                                   \
        _mm256_storeu_ps(cr + 8, v1);                                               \
    } while (0)
    STORE_ROW(0, c00, c01); STORE_ROW(1, c10, c11); STORE_ROW(2, c20, c21);
    STORE_ROW(3, c30, c31); STORE_ROW(4, c40, c41); STORE_ROW(5, c50, c51);
#undef STORE_ROW
}

/* Edge tile (rows < MR or cols < NR): one row at a time, through a buffer. */
K_AVX2 static void micro_edge(int rows, int cols, int64_t kc, const float *A, int64_t lda,
                              const float *P, float *C, int64_t ldc, int acc_c) {
    for (int r = 0; r < rows; r++) {
        const float *ar = A + r * lda;
        __m256 c0 = _mm256_setzero_ps(), c1 = c0;
        for (int64_t k = 0; k < kc; k++) {
            const __m256 a = _mm256_broadcast_ss(ar + k);
            c0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(P + k * NR), c0);
            c1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(P + k * NR + 8), c1);
        }
        float t[NR];
        _mm256_storeu_ps(t, c0);
        _mm256_storeu_ps(t + 8, c1);
        float *cr = C + r * ldc;
        for (int j = 0; j < cols; j++) cr[j] = acc_c ? cr[j] + t[j] : t[j];
    }
}

/* the 6x16 tile where it is whole, the edge kernel elsewhere */
K_AVX2 static inline void sgemm_micro(int rows, int cols, int64_t kc, const float *A, int64_t lda, const float *P,
                                      float *C, int64_t ldc, int acc_c) {
    if (rows == MR && cols == NR) micro_6x16_full(kc, A, lda, P, C, ldc, acc_c);
    else micro_edge(rows, cols, kc, A, lda, P, C, ldc, acc_c);
}
#define sgemm_dot k_dot_f32_f32_avx2
#define SGEMM_FN K_AVX2
#include "sgemm_driver.h"

K_AVX2 void k_sgemm_avx2(int trans_b, int64_t m0, int64_t m1, int64_t N, int64_t K,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
    sgemm_blocked(trans_b, m0, m1, N, K, A, lda, B, ldb, C, ldc);
}
