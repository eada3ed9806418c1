/* mxfp4_x86.h — the k_mm_run piece and the one-token dot of the MXFP4
 * kernels, the same for both x86 sets: included by mxfp4_<isa>_amd64.c
 * after its tile bodies, which it names
 *   mxfp4_tile(R, T, ...)         R rows x T tokens, R * T <= 4 (one order)
 *   mxfp4_prepped(T, ...)         one row x T (2..8) prepared tokens
 *   mxfp4_tprep, mxfp4_tprep_bytes   the token prep of k_mm_run's phase 2b
 * (always_inline, R and T constants), with MX_TARGET the function
 * attribute of its ISA. */
#ifndef WOOLLY_MXFP4_X86_H
#define WOOLLY_MXFP4_X86_H

#include "mm_driver.h"

/* one order: batch does not matter; a = the prepared group when rows == 1
 * and a_row_bytes == 0 with toks >= 2 (phase 2b) */
MX_TARGET static void mxfp4_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                                  const char *a, size_t a_row_bytes, float *out) {
    (void)batch;
    if (rows == 1 && toks >= 2 && a_row_bytes == 0) {
        const unsigned char *side = (const unsigned char *)a;
        switch (toks) {
        case 2: mxfp4_prepped(2, n, w, side, out); return;
        case 3: mxfp4_prepped(3, n, w, side, out); return;
        case 4: mxfp4_prepped(4, n, w, side, out); return;
        case 5: mxfp4_prepped(5, n, w, side, out); return;
        case 6: mxfp4_prepped(6, n, w, side, out); return;
        case 7: mxfp4_prepped(7, n, w, side, out); return;
        default: mxfp4_prepped(8, n, w, side, out); return;
        }
    }
    if (rows == 4) mxfp4_tile(4, 1, n, w, row_bytes, a, 0, out);
    else if (toks == 4) mxfp4_tile(1, 4, n, w, 0, a, a_row_bytes, out);
    else mxfp4_tile(1, 1, n, w, 0, a, 0, out);
}

/* the one-token dot: the 1 x 1 tile */
MX_TARGET static inline __attribute__((always_inline)) float mxfp4_dot(int64_t n, const void *w, const void *a) {
    float out = 0.0f; /* set by the tile; initialized for -Wmaybe-uninitialized */
    mxfp4_tile(1, 1, n, (const char *)w, 0, (const char *)a, 0, &out);
    return out;
}

static const mm_kernel mm_mxfp4_piece = {.piece = mxfp4_piece,
                                         .shapes = MM_R4 | MM_T4 | MM_BATCH_1X1,
                                         .tprep = mxfp4_tprep,
                                         .tprep_bytes = mxfp4_tprep_bytes};

#endif
