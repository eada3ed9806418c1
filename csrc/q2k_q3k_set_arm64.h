/* q2k_q3k_set_arm64.h — the Q2_K / Q3_K kernels of one arm64 set, written
 * once over the set's body, for q2k_q3k_neon_arm64.c (widening multiplies)
 * and q2k_q3k_neon_dot_arm64.c (SDOT). The including file defines
 *   Q23_BODY(type, T, n, w, a, a_row_bytes, out)  out[t] = dot(row w,
 *            token t) for T = 1 or 4 tokens a_row_bytes apart
 *            (always_inline; type K_Q2_K or K_Q3_K and T constants)
 * and then expands Q23_SET with the names of the set's kernels: the
 * one-token dots of Q2_K and Q3_K and their tiles, which are k_mm_run (mm_driver.h) over pieces that run tokens in groups of 4
 * against every row of the tile (each weight block decoded once for the
 * 4), the remaining tokens (k_matvec's single one) row by row; the 4-token
 * body gives the bits of the one-token body token by token. */
#ifndef WOOLLY_Q2K_Q3K_SET_ARM64_H
#define WOOLLY_Q2K_Q3K_SET_ARM64_H

#include "kernels_neon_arm64.h"
#include "mm_driver.h"

static void q2k_dot4(int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[4]) {
    Q23_BODY(K_Q2_K, 4, n, (const char *)w, (const char *)a, a_row_bytes, out);
}

static void q3k_dot4(int64_t n, const void *w, const void *a, size_t a_row_bytes, float out[4]) {
    Q23_BODY(K_Q3_K, 4, n, (const char *)w, (const char *)a, a_row_bytes, out);
}

#define Q23_SET(DOT_Q2_K, DOT_Q3_K, MM_Q2_K, MM_Q3_K)                                                    \
    float DOT_Q2_K(int64_t n, const void *w, const void *a) {                                            \
        float o;                                                                                        \
        Q23_BODY(K_Q2_K, 1, n, (const char *)w, (const char *)a, 0, &o);                               \
        return o;                                                                                       \
    }                                                                                                   \
    float DOT_Q3_K(int64_t n, const void *w, const void *a) {                                            \
        float o;                                                                                        \
        Q23_BODY(K_Q3_K, 1, n, (const char *)w, (const char *)a, 0, &o);                               \
        return o;                                                                                       \
    }                                                                                                   \
    K_NEON_PIECE_T4(q2k_piece, q2k_dot4, DOT_Q2_K)                                                      \
    K_NEON_PIECE_T4(q3k_piece, q3k_dot4, DOT_Q3_K)                                                      \
    static const mm_kernel mm_q2k = {.piece = q2k_piece, .shapes = MM_T4};                              \
    static const mm_kernel mm_q3k = {.piece = q3k_piece, .shapes = MM_T4};                              \
    void MM_Q2_K(K_MM_TILE_PARAMS) { k_mm_run(&mm_q2k, K_MM_TILE_ARGS); }                               \
    void MM_Q3_K(K_MM_TILE_PARAMS) { k_mm_run(&mm_q3k, K_MM_TILE_ARGS); }

#endif
