/* mxfp4_neon_tile.h — the MXFP4 tile of the two arm64 kernel sets, included
 * by mxfp4_neon_arm64.c (widening multiplies) and mxfp4_neon_dot_arm64.c
 * (SDOT), which define before including it
 *   MX_DOT16(q, a)  int32x4_t lane l = the products of elements 4l..4l+3
 *                   of 16 int8 codes' values q and 16 activations a
 *   MX_TARGET       the function attribute of the set (may be empty)
 * and get mxfp4_tile and mxfp4_piece (static).
 *
 * The values of a block's 16 low nibbles (elements 0..15) and 16 high ones
 * (16..31) come from one vqtbl1q_s8 each (k_mxfp4_values); their lanes are
 * x86's lanes 0..3 and 4..7, so the int32 lanes are mxfp4_ref.c's and the
 * f32 steps (even and odd blocks in two lane sets, FMA per block, the sets
 * added, hsum8 = (l + l+4), then (0+2) + (1+3); an odd last block by fmaf)
 * are the same: these kernels give ref's bits. */

#define MX_INLINE static inline __attribute__((always_inline))

MX_TARGET MX_INLINE float mx_hsum8(float32x4_t lo, float32x4_t hi) {
    const float32x4_t t = vaddq_f32(lo, hi);
    return (vgetq_lane_f32(t, 0) + vgetq_lane_f32(t, 2)) + (vgetq_lane_f32(t, 1) + vgetq_lane_f32(t, 3));
}

MX_TARGET MX_INLINE float mx_h2f(k_half h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

/* the values of elements 0..15 and 16..31 of block x */
struct mx_lv { int8x16_t lo, hi; };
MX_TARGET MX_INLINE struct mx_lv mx_levels(int8x16_t table, const k_block_mxfp4 *x) {
    const uint8x16_t b = vld1q_u8(x->qs);
    struct mx_lv v = {vqtbl1q_s8(table, vandq_u8(b, vdupq_n_u8(15))), vqtbl1q_s8(table, vshrq_n_u8(b, 4))};
    return v;
}

/* R rows (row_bytes apart) x T tokens (a_row_bytes apart), R * T <= 4:
 * out[k * R + r] = dot(row r, token k), vec_dot's order */
MX_TARGET MX_INLINE void mxfp4_tile(const int R, const int T, int64_t n, const char *w, size_t row_bytes,
                                    const char *a, size_t a_row_bytes, float *out) {
    const int8x16_t table = vld1q_s8(k_mxfp4_values);
    const int64_t nb = n / K_QK;
    float32x4_t acc[4][4][2][2]; /* [row][token][even/odd block][lanes 0..3 / 4..7] */
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++)
            acc[r][k][0][0] = acc[r][k][0][1] = acc[r][k][1][0] = acc[r][k][1][1] = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        _Pragma("GCC unroll 8")
        for (int h = 0; h < 2; h++) {
            _Pragma("GCC unroll 8")
            for (int r = 0; r < R; r++) {
                const k_block_mxfp4 *x = (const k_block_mxfp4 *)(w + (size_t)r * row_bytes) + i + h;
                const struct mx_lv q = mx_levels(table, x);
                const float e = k_e8m0_half(x->e);
                _Pragma("GCC unroll 8")
                for (int k = 0; k < T; k++) {
                    const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i + h;
                    const int32x4_t lo = MX_DOT16(q.lo, vld1q_s8(y->qs)), hi = MX_DOT16(q.hi, vld1q_s8(y->qs + 16));
                    const float32x4_t d = vdupq_n_f32(mx_h2f(y->d) * e);
                    acc[r][k][h][0] = vfmaq_f32(acc[r][k][h][0], vcvtq_f32_s32(lo), d);
                    acc[r][k][h][1] = vfmaq_f32(acc[r][k][h][1], vcvtq_f32_s32(hi), d);
                }
            }
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8")
        for (int k = 0; k < T; k++)
            out[k * R + r] = mx_hsum8(vaddq_f32(acc[r][k][0][0], acc[r][k][1][0]), vaddq_f32(acc[r][k][0][1], acc[r][k][1][1]));
    if (i < nb) { /* odd block count: the last block as one scalar term */
        _Pragma("GCC unroll 8")
        for (int r = 0; r < R; r++) {
            const k_block_mxfp4 *x = (const k_block_mxfp4 *)(w + (size_t)r * row_bytes) + i;
            const struct mx_lv q = mx_levels(table, x);
            const float e = k_e8m0_half(x->e);
            _Pragma("GCC unroll 8")
            for (int k = 0; k < T; k++) {
                const k_block_q8_0 *y = (const k_block_q8_0 *)(a + (size_t)k * a_row_bytes) + i;
                const int32x4_t s = vaddq_s32(MX_DOT16(q.lo, vld1q_s8(y->qs)), MX_DOT16(q.hi, vld1q_s8(y->qs + 16)));
                out[k * R + r] = fmaf(mx_h2f(y->d) * e, (float)vaddvq_s32(s), out[k * R + r]);
            }
        }
    }
}

/* one order: batch does not matter */
MX_TARGET static void mxfp4_piece(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                                  const char *a, size_t a_row_bytes, float *out) {
    (void)batch;
    if (rows == 4) mxfp4_tile(4, 1, n, w, row_bytes, a, 0, out);
    else if (toks == 4) mxfp4_tile(1, 4, n, w, 0, a, a_row_bytes, out);
    else mxfp4_tile(1, 1, n, w, 0, a, 0, out);
}

MX_TARGET MX_INLINE float mxfp4_dot(int64_t n, const void *w, const void *a) {
    float out = 0.0f; /* set by the tile; initialized for -Wmaybe-uninitialized */
    mxfp4_tile(1, 1, n, (const char *)w, 0, (const char *)a, 0, &out);
    return out;
}
