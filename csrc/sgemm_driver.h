/* sgemm_driver.h — the blocking of k_sgemm_<isa> written once: K in slices
 * of KC, N in panels of NR columns; each (KC x NR) panel of B is packed
 * contiguously (zero-padded past N) once and reused by every MR-row strip of
 * A. Included by sgemm_avx2_amd64.c and sgemm_neon_arm64.c after they define
 *
 *   SGEMM_FN        function attribute of the driver (the target ISA)
 *   MR, NR, KC      the register tile and the K slice
 *   void sgemm_micro(rows, cols, kc, A, lda, P, C, ldc, acc_c)
 *                   C[rows][cols] (+= when acc_c) A[rows][kc] * P[kc][NR]
 *   float sgemm_dot(K, a, b)   the set's f32 dot product
 *
 * Specification: k_sgemm_ref in ops_ref.c (rows [m0, m1) of C = A * B or
 * A * B^T; C overwritten). Private to csrc. */
#ifndef WOOLLY_SGEMM_DRIVER_H
#define WOOLLY_SGEMM_DRIVER_H

#include <string.h>

/* Pack B[k0 .. k0+kc) x [j0 .. j0+cols) into P[kc][NR], zero-padding. */
SGEMM_FN static void pack_b(int trans_b, const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int cols,
                            float *P) {
    if (cols < NR) memset(P, 0, (size_t)kc * NR * sizeof(float));
    if (!trans_b) {
        for (int64_t k = 0; k < kc; k++) memcpy(P + k * NR, B + (k0 + k) * ldb + j0, (size_t)cols * sizeof(float));
        return;
    }
    /* B is N x K: column j of the panel is row j0+j of B */
    for (int j = 0; j < cols; j++) {
        const float *b = B + (j0 + j) * ldb + k0;
        for (int64_t k = 0; k < kc; k++) P[k * NR + j] = b[k];
    }
}

SGEMM_FN static inline __attribute__((always_inline)) void sgemm_blocked(int trans_b, int64_t m0, int64_t m1, int64_t N,
                                                                        int64_t K, const float *A, int64_t lda,
                                                                        const float *B, int64_t ldb, float *C,
                                                                        int64_t ldc) {
    if (m1 <= m0 || N <= 0) return;
    if (K == 0) {
        for (int64_t m = m0; m < m1; m++) memset(C + m * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    /* one or two rows against B^T: plain dots read B once, no packing */
    if (trans_b && m1 - m0 <= 2) {
        for (int64_t m = m0; m < m1; m++)
            for (int64_t j = 0; j < N; j++) C[m * ldc + j] = sgemm_dot(K, A + m * lda, B + j * ldb);
        return;
    }
    float P[KC * NR] __attribute__((aligned(64)));
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = K - k0 < KC ? K - k0 : KC;
        for (int64_t j0 = 0; j0 < N; j0 += NR) {
            const int cols = N - j0 < NR ? (int)(N - j0) : NR;
            pack_b(trans_b, B, ldb, k0, kc, j0, cols, P);
            for (int64_t m = m0; m < m1; m += MR) {
                const int rows = m1 - m < MR ? (int)(m1 - m) : MR;
                sgemm_micro(rows, cols, kc, A + m * lda + k0, lda, P, C + m * ldc + j0, ldc, k0 > 0);
            }
        }
    }
}

#endif
