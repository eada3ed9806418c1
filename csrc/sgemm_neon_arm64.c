/*
 * sgemm_neon_arm64.c — f32 GEMM with a 4x16 register tile, NEON.
 * Specification: k_sgemm_ref in ops_ref.c (rows [m0, m1) of C = A * B or
 * A * B^T; C overwritten).
 *
 * Blocking: K in slices of KC, N in panels of 16 columns; each (KC x 16)
 * panel of B is packed contiguously (zero-padded past N) once and reused by
 * every 4-row strip of A. The micro-kernel keeps the 4x16 tile of C in 16
 * q-register accumulators; per 4 values of k it loads 4 vectors of A (one per
 * row) and 16 vectors of B and issues 64 lane-indexed FMAs.
 */
#include <arm_neon.h>
#include <string.h>
#include "kernels_neon_arm64.h"

#define MR 4
#define NR 16
#define KC 256

/* one k step of the full 4-row tile: B row pb, A values in lane L of av0..av3 */
#define K_STEP(pb, L)                                                                   \
    do {                                                                                \
        const float32x4_t b0 = vld1q_f32(pb), b1 = vld1q_f32((pb) + 4);                 \
        const float32x4_t b2 = vld1q_f32((pb) + 8), b3 = vld1q_f32((pb) + 12);          \
        c00 = vfmaq_laneq_f32(c00, b0, av0, L); c01 = vfmaq_laneq_f32(c01, b1, av0, L); \
        c02 = vfmaq_laneq_f32(c02, b2, av0, L); c03 = vfmaq_laneq_f32(c03, b3, av0, L); \
        c10 = vfmaq_laneq_f32(c10, b0, av1, L); c11 = vfmaq_laneq_f32(c11, b1, av1, L); \
        c12 = vfmaq_laneq_f32(c12, b2, av1, L); c13 = vfmaq_laneq_f32(c13, b3, av1, L); \
        c20 = vfmaq_laneq_f32(c20, b0, av2, L); c21 = vfmaq_laneq_f32(c21, b1, av2, L); \
        c22 = vfmaq_laneq_f32(c22, b2, av2, L); c23 = vfmaq_laneq_f32(c23, b3, av2, L); \
        c30 = vfmaq_laneq_f32(c30, b0, av3, L); c31 = vfmaq_laneq_f32(c31, b1, av3, L); \
        c32 = vfmaq_laneq_f32(c32, b2, av3, L); c33 = vfmaq_laneq_f32(c33, b3, av3, L); \
    } while (0)

/* Write (or add, acc_c) a computed row of up to 16 columns. */
static inline void store_row(float *cr, int cols, int acc_c, float32x4_t v0, float32x4_t v1,
                             float32x4_t v2, float32x4_t v3) {
    if (cols == NR) {
        if (acc_c) {
            v0 = vaddq_f32(v0, vld1q_f32(cr));
            v1 = vaddq_f32(v1, vld1q_f32(cr + 4));
            v2 = vaddq_f32(v2, vld1q_f32(cr + 8));
            v3 = vaddq_f32(v3, vld1q_f32(cr + 12));
        }
        vst1q_f32(cr, v0); vst1q_f32(cr + 4, v1); vst1q_f32(cr + 8, v2); vst1q_f32(cr + 12, v3);
        return;
    }
    float t[NR];
    vst1q_f32(t, v0); vst1q_f32(t + 4, v1); vst1q_f32(t + 8, v2); vst1q_f32(t + 12, v3);
    for (int j = 0; j < cols; j++) cr[j] = acc_c ? cr[j] + t[j] : t[j];
}

/* C tile (rows x cols, rows <= MR, cols <= NR) (+)= A[rows][kc] * P[kc][16]. */
static void micro_4x16(int rows, int cols, int64_t kc, const float *A, int64_t lda,
                       const float *P, float *C, int64_t ldc, int acc_c) {
    const float32x4_t z = vdupq_n_f32(0);
    if (rows == MR) {
        float32x4_t c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
        float32x4_t c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
        const float *a0 = A, *a1 = A + lda, *a2 = A + 2 * lda, *a3 = A + 3 * lda;
        int64_t k = 0;
        for (; k + 4 <= kc; k += 4) {
            const float32x4_t av0 = vld1q_f32(a0 + k), av1 = vld1q_f32(a1 + k);
            const float32x4_t av2 = vld1q_f32(a2 + k), av3 = vld1q_f32(a3 + k);
            const float *pb = P + k * NR;
            K_STEP(pb, 0);
            K_STEP(pb + NR, 1);
            K_STEP(pb + 2 * NR, 2);
            K_STEP(pb + 3 * NR, 3);
        }
        for (; k < kc; k++) {
            const float32x4_t av0 = vdupq_n_f32(a0[k]), av1 = vdupq_n_f32(a1[k]);
            const float32x4_t av2 = vdupq_n_f32(a2[k]), av3 = vdupq_n_f32(a3[k]);
            K_STEP(P + k * NR, 0);
        }
        store_row(C, cols, acc_c, c00, c01, c02, c03);
        store_row(C + ldc, cols, acc_c, c10, c11, c12, c13);
        store_row(C + 2 * ldc, cols, acc_c, c20, c21, c22, c23);
        store_row(C + 3 * ldc, cols, acc_c, c30, c31, c32, c33);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *ar = A + r * lda;
        float32x4_t v0 = z, v1 = z, v2 = z, v3 = z;
        for (int64_t k = 0; k < kc; k++) {
            const float *pb = P + k * NR;
            v0 = vfmaq_n_f32(v0, vld1q_f32(pb), ar[k]);
            v1 = vfmaq_n_f32(v1, vld1q_f32(pb + 4), ar[k]);
            v2 = vfmaq_n_f32(v2, vld1q_f32(pb + 8), ar[k]);
            v3 = vfmaq_n_f32(v3, vld1q_f32(pb + 12), ar[k]);
        }
        store_row(C + r * ldc, cols, acc_c, v0, v1, v2, v3);
    }
}

#define sgemm_micro micro_4x16
#define sgemm_dot k_dot_f32_f32_neon
#define SGEMM_FN
#include "sgemm_driver.h"

void k_sgemm_neon(int trans_b, int64_t m0, int64_t m1, int64_t N, int64_t K,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
    sgemm_blocked(trans_b, m0, m1, N, K, A, lda, B, ldb, C, ldc);
}
