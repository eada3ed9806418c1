/* vexp_body.h — ggml_v_expf, as k_attn_vexpf (attn_common.h) computes it,
 * written once over one ISA's vector operations: included by
 * vexp_neon_arm64.h (4 lanes; vexp_avx2_amd64.h's 8 lanes are the same
 * steps), which defines before including it
 *   VX_T, VX_LANES     the f32 vector type and its lanes
 *   VX_NAME, VX_ATTR   the function's name and attribute (may be empty)
 *   VX_SET1(c)         every lane c
 *   VX_FMA(a, b, c)    a * b + c, fused;  VX_FNMA(a, b, c)  c - a * b, fused
 *   VX_SUB(a, b), VX_MUL(a, b)
 *   VX_NORMAL(n)       nonzero when every lane has -126 <= n <= 127
 *   VX_LOAD(p), VX_STORE(p, v)
 *   VX_SCALE2N(j, n)   j * 2^n for integral n in that range (exponent bits)
 * The f32 FMA steps, then j * 2^n, exact while 2^n is a normal float; a
 * vector with another lane (or a NaN) goes the scalar way lane by lane. */
#include "attn_common.h"

VX_ATTR static inline VX_T VX_NAME(VX_T x) {
    const VX_T r = VX_SET1(0x1.8p23f);
    const VX_T n = VX_SUB(VX_FMA(x, VX_SET1(0x1.715476p+0f), r), r);
    const VX_T b = VX_FNMA(n, VX_SET1(0x1.7f7d1cp-20f), VX_FNMA(n, VX_SET1(0x1.62e4p-1f), x));
    const VX_T u = VX_MUL(b, b);
    const VX_T p1 = VX_FMA(VX_SET1(0x1.0e4020p-7f), b, VX_SET1(0x1.573e2ep-5f));
    const VX_T p2 = VX_FMA(VX_SET1(0x1.555e66p-3f), b, VX_SET1(0x1.fffdb6p-2f));
    const VX_T p3 = VX_FMA(VX_SET1(0x1.ffffecp-1f), b, VX_SET1(1.0f));
    const VX_T j = VX_FMA(VX_FMA(p1, u, p2), u, p3);
    if (VX_NORMAL(n)) return VX_SCALE2N(j, n);
    float v[VX_LANES];
    VX_STORE(v, x);
    for (int l = 0; l < VX_LANES; l++) v[l] = k_attn_vexpf(v[l]);
    return VX_LOAD(v);
}
