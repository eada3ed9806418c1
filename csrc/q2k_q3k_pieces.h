/* q2k_q3k_pieces.h — the pieces of the Q2_K / Q3_K tiles (the driver's
 * interface, mm_driver.h) and the one-token dot, the same for AVX2 and
 * AVX-512: included by q2k_q3k_<isa>_amd64.c after its tile body
 * q23_tile(type, R, T, ...) (always_inline; type, R and T constants), with
 * Q23_TARGET its ISA's function attribute and Q23_T8 1 where the tile also
 * runs 8 tokens at a time (AVX-512), else 0. */

Q23_TARGET static inline __attribute__((always_inline)) float q23_dot(const int type, int64_t n, const void *w,
                                                                      const void *a) {
    float o;
    q23_tile(type, 1, 1, n, (const char *)w, 0, (const char *)a, 0, &o);
    return o;
}

/* (1, 8) where Q23_T8, (1, 4), (4, 1) and (1, 1); one order, batch does not matter */
Q23_TARGET static inline __attribute__((always_inline)) void q23_piece(const int type, int rows, int toks, int64_t n,
                                                                       const char *w, size_t row_bytes, const char *a,
                                                                       size_t a_row_bytes, float *out) {
    if (Q23_T8 && toks == 8) q23_tile(type, 1, 8, n, w, 0, a, a_row_bytes, out);
    else if (toks == 4) q23_tile(type, 1, 4, n, w, 0, a, a_row_bytes, out);
    else if (rows == 4) q23_tile(type, 4, 1, n, w, row_bytes, a, 0, out);
    else q23_tile(type, 1, 1, n, w, 0, a, 0, out);
}
Q23_TARGET static void q2k_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *out) {
    (void)batch;
    q23_piece(K_Q2_K, rows, toks, n, w, row_bytes, a, a_row_bytes, out);
}
Q23_TARGET static void q3k_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *out) {
    (void)batch;
    q23_piece(K_Q3_K, rows, toks, n, w, row_bytes, a, a_row_bytes, out);
}
static const mm_kernel q2k_kernel = {.piece = q2k_piece, .shapes = MM_R4 | MM_T4 | (Q23_T8 ? MM_T8 : 0)};
static const mm_kernel q3k_kernel = {.piece = q3k_piece, .shapes = MM_R4 | MM_T4 | (Q23_T8 ? MM_T8 : 0)};
