/* iq4_piece.h — the k_mm_run pieces of the IQ4 tiles, the same for every
 * ISA: included by iq4_<isa>.c after its tile bodies, which it names
 *   iq4nl_rows(R, ...)     IQ4_NL, R rows x one token, vec_dot's order
 *   iq4nl_toks(T, ...)     IQ4_NL, one row x T tokens, the batch order
 *   iq4xs_tile(R, T, ...)  IQ4_XS, R rows x T tokens (one order)
 * (always_inline, R and T constants), with IQ4_TARGET the function
 * attribute of its ISA (empty where the whole file has it). The one-token
 * dots are the 1 x 1 tiles. IQ4_SET, expanded after mm_driver.h, writes
 * out the ISA's kernels under the names it is given: the one-token dots of
 * IQ4_NL and IQ4_XS and their tiles. */

IQ4_TARGET static inline __attribute__((always_inline)) float iq4nl_dot(int64_t n, const void *w, const void *a) {
    float out = 0.0f; /* set by the tile; initialized for -Wmaybe-uninitialized */
    iq4nl_rows(1, n, (const char *)w, 0, a, &out);
    return out;
}

IQ4_TARGET static inline __attribute__((always_inline)) float iq4xs_dot(int64_t n, const void *w, const void *a) {
    float out = 0.0f;
    iq4xs_tile(1, 1, n, (const char *)w, 0, (const char *)a, 0, &out);
    return out;
}

/* 4 rows or 1 x the token, or 1 row x 4 or 1 tokens of a batch */
IQ4_TARGET static void iq4nl_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                                   const char *a, size_t a_row_bytes, float *out) {
    if (!batch) {
        if (rows == 4) iq4nl_rows(4, n, w, row_bytes, a, out);
        else iq4nl_rows(1, n, w, row_bytes, a, out);
    } else if (toks == 4) {
        iq4nl_toks(4, n, w, a, a_row_bytes, out);
    } else {
        iq4nl_toks(1, n, w, a, a_row_bytes, out);
    }
}

/* one order: batch does not matter */
IQ4_TARGET static void iq4xs_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                                   const char *a, size_t a_row_bytes, float *out) {
    (void)batch;
    if (rows == 4) iq4xs_tile(4, 1, n, w, row_bytes, a, 0, out);
    else if (toks == 4) iq4xs_tile(1, 4, n, w, 0, a, a_row_bytes, out);
    else iq4xs_tile(1, 1, n, w, 0, a, 0, out);
}

#define IQ4_SET(DOT_NL, DOT_XS, MM_NL, MM_XS)                                                     \
    IQ4_TARGET float DOT_NL(int64_t n, const void *w, const void *a) { return iq4nl_dot(n, w, a); } \
    IQ4_TARGET float DOT_XS(int64_t n, const void *w, const void *a) { return iq4xs_dot(n, w, a); } \
    static const mm_kernel mm_iq4nl_piece = MM_BARE(iq4nl_piece);                                   \
    static const mm_kernel mm_iq4xs_piece = MM_BARE(iq4xs_piece);                                   \
    void MM_NL(K_MM_TILE_PARAMS) { k_mm_run(&mm_iq4nl_piece, K_MM_TILE_ARGS); }                      \
    void MM_XS(K_MM_TILE_PARAMS) { k_mm_run(&mm_iq4xs_piece, K_MM_TILE_ARGS); }
