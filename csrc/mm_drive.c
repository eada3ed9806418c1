/* mm_drive.c — the row and token loops of a k_matmul_q tile kernel built
 * from a per-format piece (see k_mm_drive in kernels.h). The rows of the
 * tile (16 to 64, from k_matmul_q) stay in cache while each group of 4
 * tokens streams past them; with one token (k_matvec) 4 rows share each
 * activation load. A piece covers whole rows, so calling it through a
 * pointer costs nothing measurable. */
#include "kernels.h"

void k_mm_drive(k_mm_piece_fn piece, int64_t n, const void *w, size_t row_bytes, int64_t nr,
                const void *a, size_t a_row_bytes, int64_t ntok, float *y, int64_t y_stride) {
    const char *wb = (const char *)w, *ab = (const char *)a;
    const int batch = ntok >= 2;
    int64_t t = 0;
    if (!batch) {
        int64_t r = 0;
        for (; r + 4 <= nr; r += 4) piece(4, 1, 0, n, wb + (size_t)r * row_bytes, row_bytes, ab, 0, y + r);
        for (; r < nr; r++) piece(1, 1, 0, n, wb + (size_t)r * row_bytes, row_bytes, ab, 0, y + r);
        return;
    }
    for (; t + 4 <= ntok; t += 4) {
        const char *at = ab + (size_t)t * a_row_bytes;
        for (int64_t r = 0; r < nr; r++) {
            float o[4];
            piece(1, 4, 1, n, wb + (size_t)r * row_bytes, row_bytes, at, a_row_bytes, o);
            for (int k = 0; k < 4; k++) y[(t + k) * y_stride + r] = o[k];
        }
    }
    for (; t < ntok; t++)
        for (int64_t r = 0; r < nr; r++)
            piece(1, 1, 1, n, wb + (size_t)r * row_bytes, row_bytes, ab + (size_t)t * a_row_bytes, 0, y + t * y_stride + r);
}
