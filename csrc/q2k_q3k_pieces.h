/* q2k_q3k_pieces.h — the pieces q23_mm_tile (q2k_q3k_x86.h) runs and the
 * one-token dot, the same for AVX2 and AVX-512: included by
 * q2k_q3k_<isa>_amd64.c after its tile body q23_tile(type, R, T, ...)
 * (always_inline; type, R and T constants), with Q23_TARGET its ISA's
 * function attribute. */

Q23_TARGET static inline __attribute__((always_inline)) float q23_dot(const int type, int64_t n, const void *w,
                                                                      const void *a) {
    float o;
    q23_tile(type, 1, 1, n, (const char *)w, 0, (const char *)a, 0, &o);
    return o;
}

/* one row x 4 tokens, 4 rows x one token */
Q23_TARGET static void q2k_tokens4(int64_t n, const char *w, const char *a, size_t a_row_bytes, float *out) {
    q23_tile(K_Q2_K, 1, 4, n, w, 0, a, a_row_bytes, out);
}
Q23_TARGET static void q3k_tokens4(int64_t n, const char *w, const char *a, size_t a_row_bytes, float *out) {
    q23_tile(K_Q3_K, 1, 4, n, w, 0, a, a_row_bytes, out);
}
Q23_TARGET static void q2k_rows4(int64_t n, const char *w, size_t row_bytes, const char *a, float out[4]) {
    q23_tile(K_Q2_K, 4, 1, n, w, row_bytes, a, 0, out);
}
Q23_TARGET static void q3k_rows4(int64_t n, const char *w, size_t row_bytes, const char *a, float out[4]) {
    q23_tile(K_Q3_K, 4, 1, n, w, row_bytes, a, 0, out);
}
