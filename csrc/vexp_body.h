/* vexp_body.h — ggml_v_expf written once over a set's vector operations
 * (as k_attn_vexpf, attn_common.h: the f32 FMA steps, then j * 2^n, exact
 * in f32 while 2^n is a normal float; other lanes go the scalar way).
 * Included by vexp_avx2_amd64.h and vexp_neon_arm64.h after they define
 *   VX_FN, VX_NAME, VX_F, VX_LANES   the function's attribute and name, the
 *                                    f32 vector type and its lane count
 *   VX_DUP(c), VX_SUB(a, b), VX_MUL(a, b)
 *   VX_FMA(a, b, c) = a * b + c, VX_FNMA(a, b, c) = c - a * b (both fused)
 *   VX_IN_RANGE(n)                   -126 <= n <= 127 in every lane
 *   VX_POW2(n)                       2^n for integral n in that range
 *   VX_LD(p), VX_ST(p, v)            load / store VX_LANES floats
 * (private to csrc), and undefines them at its end. */

VX_FN static inline VX_F VX_NAME(VX_F x) {
    const VX_F r = VX_DUP(0x1.8p23f);
    const VX_F n = VX_SUB(VX_FMA(x, VX_DUP(0x1.715476p+0f), r), r);
    const VX_F b = VX_FNMA(n, VX_DUP(0x1.7f7d1cp-20f), VX_FNMA(n, VX_DUP(0x1.62e4p-1f), x));
    const VX_F u = VX_MUL(b, b);
    const VX_F p1 = VX_FMA(VX_DUP(0x1.0e4020p-7f), b, VX_DUP(0x1.573e2ep-5f));
    const VX_F p2 = VX_FMA(VX_DUP(0x1.555e66p-3f), b, VX_DUP(0x1.fffdb6p-2f));
    const VX_F p3 = VX_FMA(VX_DUP(0x1.ffffecp-1f), b, VX_DUP(1.0f));
    const VX_F j = VX_FMA(VX_FMA(p1, u, p2), u, p3);
    if (!VX_IN_RANGE(n)) {
        float xs[VX_LANES], ys[VX_LANES];
        VX_ST(xs, x);
        for (int l = 0; l < VX_LANES; l++) ys[l] = k_attn_vexpf(xs[l]);
        return VX_LD(ys);
    }
    return VX_MUL(j, VX_POW2(n));
}

#undef VX_FN
#undef VX_NAME
#undef VX_F
#undef VX_LANES
#undef VX_DUP
#undef VX_SUB
#undef VX_MUL
#undef VX_FMA
#undef VX_FNMA
#undef VX_IN_RANGE
#undef VX_POW2
#undef VX_LD
#undef VX_ST
