/* attn_x86.h — the attention primitives for x86-64 over AVX2+FMA+F16C
 * intrinsics, and the drivers of attn_driver.h over them, included once per
 * target by attn_avx2_amd64.c (ATTN_X86 = K_AVX2) and attn_avx512_amd64.c
 * (K_AVX512: the same code with 32 vector registers, and the V rows of a head
 * pair on 512-bit vectors, 64 lanes of both heads in one pass). The same bits as
 * k_attention_f16acc_ref / k_attention_tiled_ref (attn_f16_ref.c,
 * attn_tiled_ref.c): the same FMAs, the same reduction trees, f16 rounding
 * by vcvtps2ph (round to nearest even). The V accumulations hold 64 head
 * lanes in registers across a chunk / tile; the tiled scores are 8 vectors
 * of independent FMA chains over the head dimension (lane j = position j);
 * its exponentials are ggml_v_expf on 8 lanes.
 *
 * Before including: ATTN_X86 (the target attribute) and ATTN_ZMM (1: the V
 * accumulations of 64 lanes on 512-bit vectors; 0: on 256-bit ones). */
#include "attn_common.h"
#include "kernels_avx2_amd64.h"
#include "vexp_avx2_amd64.h"

#define RNE _MM_FROUND_TO_NEAREST_INT
#define AI __attribute__((always_inline))

ATTN_X86 static inline __m256 f16r8(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, RNE)); }
ATTN_X86 static inline __m256 ldh8(const k_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
ATTN_X86 static inline AI float attn_f16r1(float x) { return _cvtsh_ss(_cvtss_sh(x, RNE)); }
ATTN_X86 static inline AI float attn_h2f(k_half h) { return _cvtsh_ss(h); }

/* 8 lanes: (l + l+4), then (0+2) + (1+3) — the tail of the 16-lane trees */
ATTN_X86 static inline AI float tree8(__m256 v) {
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* w = 4 */
    u = _mm_add_ps(u, _mm_movehl_ps(u, u));                                         /* w = 2 */
    u = _mm_add_ss(u, _mm_movehdup_ps(u));                                          /* w = 1 */
    return _mm_cvtss_f32(u);
}

/* ---- k_attention_f16acc ---- */

/* the vector part of dot_f16 (attn_driver.h) before its last tree8: accumulator j lanes 0..7 / 8..15 = a[j]l / a[j]h */
ATTN_X86 static inline AI __m256 attn_dot64_lanes(const float *x, const k_half *y, int64_t np) {
    __m256 a0l = _mm256_setzero_ps(), a0h = a0l, a1l = a0l, a1h = a0l, a2l = a0l, a2h = a0l, a3l = a0l, a3h = a0l;
    for (int64_t i = 0; i < np; i += 64) {
        a0l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i),      ldh8(y + i),      a0l);
        a0h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8),  ldh8(y + i + 8),  a0h);
        a1l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), ldh8(y + i + 16), a1l);
        a1h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), ldh8(y + i + 24), a1h);
        a2l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 32), ldh8(y + i + 32), a2l);
        a2h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 40), ldh8(y + i + 40), a2h);
        a3l = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 48), ldh8(y + i + 48), a3l);
        a3h = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 56), ldh8(y + i + 56), a3h);
    }
    a0l = _mm256_add_ps(a0l, a2l); a0h = _mm256_add_ps(a0h, a2h);   /* a0 += a2 */
    a1l = _mm256_add_ps(a1l, a3l); a1h = _mm256_add_ps(a1h, a3h);   /* a1 += a3 */
    a0l = _mm256_add_ps(a0l, a1l); a0h = _mm256_add_ps(a0h, a1h);   /* a0 += a1 */
    return _mm256_add_ps(a0l, a0h);                                 /* w = 8 */
}
ATTN_X86 static inline AI float attn_dot64(const float *x, const k_half *y, int64_t np) {
    return tree8(attn_dot64_lanes(x, y, np)); /* then 4, 2, 1 */
}
/* attn_dot64_lanes for np == 64: one pass, each accumulator one FMA onto
 * zero (no loop, no accumulators to clear) */
ATTN_X86 static inline AI __m256 attn_dot64_lanes64(const float *x, const k_half *y) {
    const __m256 z = _mm256_setzero_ps();
    __m256 a0l = _mm256_fmadd_ps(_mm256_loadu_ps(x), ldh8(y), z), a0h = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8), ldh8(y + 8), z);
    __m256 a1l = _mm256_fmadd_ps(_mm256_loadu_ps(x + 16), ldh8(y + 16), z), a1h = _mm256_fmadd_ps(_mm256_loadu_ps(x + 24), ldh8(y + 24), z);
    const __m256 a2l = _mm256_fmadd_ps(_mm256_loadu_ps(x + 32), ldh8(y + 32), z), a2h = _mm256_fmadd_ps(_mm256_loadu_ps(x + 40), ldh8(y + 40), z);
    const __m256 a3l = _mm256_fmadd_ps(_mm256_loadu_ps(x + 48), ldh8(y + 48), z), a3h = _mm256_fmadd_ps(_mm256_loadu_ps(x + 56), ldh8(y + 56), z);
    a0l = _mm256_add_ps(a0l, a2l); a0h = _mm256_add_ps(a0h, a2h);
    a1l = _mm256_add_ps(a1l, a3l); a1h = _mm256_add_ps(a1h, a3h);
    a0l = _mm256_add_ps(a0l, a1l); a0h = _mm256_add_ps(a0h, a1h);
    return _mm256_add_ps(a0l, a0h);
}

/* The scores of a chunk when the head size is a multiple of 64 (dot_f16 has
 * no scalar tail): sc[j] = attn_dot64(x, k + j*kv_stride, hd) * ksc. Eight
 * positions at a time, their tree8s done together: lane i of a vector is
 * one position, so every add is tree8's, on the same operands in the same
 * order. */
#define ATTN_SCORES_F16 1
ATTN_X86 static inline AI void attn_scores_f16(float *sc, const float *x, const k_half *k, const k_half *v, int64_t kv_stride,
                                              int64_t cn, int64_t hd, float ksc) {
    const __m256 vk = _mm256_set1_ps(ksc);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t j = 0;
    for (; j + 8 <= cn; j += 8) {
        __m256 u[4], w[2];
        /* the cache rows come from memory at depth: ask for this chunk's V
         * rows while the scores are computed (prefetches never fault) */
        if (v)
            for (int p = 0; p < 8; p++)
                for (int64_t b = 0; b < 2 * hd; b += 64) _mm_prefetch((const char *)(v + (j + p) * kv_stride) + b, _MM_HINT_T0);
        for (int p = 0; p < 8; p += 2) { /* u = lo + hi: [position p | position p+1] */
            const k_half *k0 = k + (j + p) * kv_stride, *k1 = k0 + kv_stride;
            const __m256 a = hd == 64 ? attn_dot64_lanes64(x, k0) : attn_dot64_lanes(x, k0, hd);
            const __m256 b = hd == 64 ? attn_dot64_lanes64(x, k1) : attn_dot64_lanes(x, k1, hd);
            u[p / 2] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
        }
        for (int p = 0; p < 2; p++) /* lanes 0+2, 1+3: [p0 p2 | p1 p3] of each pair of pairs */
            w[p] = _mm256_add_ps(_mm256_shuffle_ps(u[2 * p], u[2 * p + 1], 0x44), _mm256_shuffle_ps(u[2 * p], u[2 * p + 1], 0xEE));
        /* then 0+1: positions 0 2 4 6 | 1 3 5 7, put in order */
        const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(w[0], w[1], 0x88), _mm256_shuffle_ps(w[0], w[1], 0xDD));
        _mm256_storeu_ps(sc + j, _mm256_mul_ps(_mm256_permutevar8x32_ps(r, order), vk));
    }
    for (; j < cn; j++) sc[j] = attn_dot64(x, k + j * kv_stride, hd) * ksc;
}

/* k_attn_expf on 4 lanes whose inputs are in its own range (the double
 * steps on 4 doubles, table entries gathered). */
ATTN_X86 static inline AI __m128 attn_expf4(__m128 x) {
    const __m256d shift = _mm256_set1_pd(K_ATTN_EXP_SHIFT);
    const __m256d z = _mm256_mul_pd(_mm256_set1_pd(K_ATTN_EXP_INVLN2N), _mm256_cvtps_pd(x));
    __m256d kd = _mm256_add_pd(z, shift);
    const __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    const __m256d r = _mm256_sub_pd(z, kd);
    const __m256i t = _mm256_i64gather_epi64((const long long *)k_attn_exp_tab, _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
    const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64(ki, 47)));
    const __m256d p = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(K_ATTN_EXP_C0), r), _mm256_set1_pd(K_ATTN_EXP_C1));
    __m256d y = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(K_ATTN_EXP_C2), r), _mm256_set1_pd(1));
    const __m256d rr = _mm256_mul_pd(r, r);
    const __m256d prr = _mm256_mul_pd(p, rr);
    y = _mm256_add_pd(prr, y);
    return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

/* The online-softmax recurrence of attn_f16acc over a chunk of scores
 * s[0..cn): at position j with the running max m before it, s > m gives
 * ms = expf(m - s) and m = s, else vs = expf(s - m); S = fmaf(S, ms, vs).
 * The running maxima first (kept in msv), then the exponentials 8 lanes at
 * a time (k_attn_expf; lanes out of its range through it one by one), then
 * the S chain: every value as the scalar recurrence computes it. */
#define ATTN_SOFTMAX_CHUNK 1
ATTN_X86 static inline AI void attn_softmax_chunk(const float *s, int64_t cn, float *M, float *S, float *msv, float *vsv) {
    float m = *M;
    for (int64_t j = 0; j < cn; j++) {
        msv[j] = m;
        m = s[j] > m ? s[j] : m;
    }
    *M = m;
    const __m256 one = _mm256_set1_ps(1), lo = _mm256_set1_ps(-103.0f), hi = _mm256_set1_ps(88.0f);
    int64_t j = 0;
    for (; j + 8 <= cn; j += 8) {
        const __m256 sv = _mm256_loadu_ps(s + j), mp = _mm256_loadu_ps(msv + j);
        const __m256 gt = _mm256_cmp_ps(sv, mp, _CMP_GT_OQ);
        const __m256 x = _mm256_blendv_ps(_mm256_sub_ps(sv, mp), _mm256_sub_ps(mp, sv), gt);
        __m256 e = _mm256_set_m128(attn_expf4(_mm256_extractf128_ps(x, 1)), attn_expf4(_mm256_castps256_ps128(x)));
        const __m256 fast = _mm256_andnot_ps(_mm256_cmp_ps(x, hi, _CMP_GT_OQ), _mm256_cmp_ps(x, lo, _CMP_GT_OQ));
        if (_mm256_movemask_ps(fast) != 0xff) {
            float xs[8], es[8];
            _mm256_storeu_ps(xs, x);
            _mm256_storeu_ps(es, e);
            for (int i = 0; i < 8; i++)
                if (!k_attn_expf_fast(xs[i])) es[i] = k_attn_expf(xs[i]);
            e = _mm256_loadu_ps(es);
        }
        _mm256_storeu_ps(msv + j, _mm256_blendv_ps(one, e, gt));
        _mm256_storeu_ps(vsv + j, _mm256_blendv_ps(e, one, gt));
    }
    for (; j < cn; j++) {
        const float mp = msv[j];
        float ms = 1, vs = 1;
        if (s[j] > mp)
            ms = k_attn_expf(mp - s[j]);
        else
            vs = k_attn_expf(s[j] - mp);
        msv[j] = ms, vsv[j] = vs;
    }
    float sum = *S;
    for (j = 0; j < cn; j++) sum = fmaf(sum, msv[j], vsv[j]);
    *S = sum;
}

#pragma GCC push_options
#pragma GCC optimize("unroll-loops")
/* V accumulation of one chunk for nv vectors of 8 head lanes at acc / v:
 *   acc = f16(acc * ms[j]) when ms[j] != 1 (ms == 1 leaves f16 values as
 *   they are), then acc = f16(fmaf(v[j], vs[j], acc)), j = 0 .. cn-1. */
ATTN_X86 static inline AI void vblock(const int nv, float *acc, const k_half *v, int64_t kv_stride, int64_t cn,
                                    const float *ms, const float *vs) {
    __m256 a[8];
    for (int r = 0; r < nv; r++) a[r] = _mm256_loadu_ps(acc + 8 * r);
    for (int64_t j = 0; j < cn; j++) {
        const k_half *vp = v + j * kv_stride;
        if (ms[j] != 1.0f) {
            const __m256 vm = _mm256_set1_ps(ms[j]);
            for (int r = 0; r < nv; r++) a[r] = f16r8(_mm256_mul_ps(a[r], vm));
        }
        const __m256 vv = _mm256_set1_ps(vs[j]);
        for (int r = 0; r < nv; r++) a[r] = f16r8(_mm256_fmadd_ps(ldh8(vp + 8 * r), vv, a[r]));
    }
    for (int r = 0; r < nv; r++) _mm256_storeu_ps(acc + 8 * r, a[r]);
}
#define VBLOCK_PARAMS float *acc, const k_half *v, int64_t kvs, int64_t cn, const float *ms, const float *vs
ATTN_X86 static void vblock64(VBLOCK_PARAMS) { vblock(8, acc, v, kvs, cn, ms, vs); }
ATTN_X86 static void vblock32(VBLOCK_PARAMS) { vblock(4, acc, v, kvs, cn, ms, vs); }
ATTN_X86 static void vblock16(VBLOCK_PARAMS) { vblock(2, acc, v, kvs, cn, ms, vs); }
ATTN_X86 static void vblock8(VBLOCK_PARAMS) { vblock(1, acc, v, kvs, cn, ms, vs); }

/* vblock for two heads over the same V rows: each row's lanes are widened
 * once and accumulated into both, each head with its own ms / vs. */
ATTN_X86 static inline AI void vblock2(const int nv, float *acc0, float *acc1, const k_half *v, int64_t kv_stride,
                                     int64_t cn, const float *ms0, const float *vs0, const float *ms1, const float *vs1) {
    __m256 a[4], b[4];
    for (int r = 0; r < nv; r++) a[r] = _mm256_loadu_ps(acc0 + 8 * r), b[r] = _mm256_loadu_ps(acc1 + 8 * r);
    for (int64_t j = 0; j < cn; j++) {
        const k_half *vp = v + j * kv_stride;
        if (ms0[j] != 1.0f) {
            const __m256 vm = _mm256_set1_ps(ms0[j]);
            for (int r = 0; r < nv; r++) a[r] = f16r8(_mm256_mul_ps(a[r], vm));
        }
        if (ms1[j] != 1.0f) {
            const __m256 vm = _mm256_set1_ps(ms1[j]);
            for (int r = 0; r < nv; r++) b[r] = f16r8(_mm256_mul_ps(b[r], vm));
        }
        const __m256 vv0 = _mm256_set1_ps(vs0[j]), vv1 = _mm256_set1_ps(vs1[j]);
        for (int r = 0; r < nv; r++) {
            const __m256 x = ldh8(vp + 8 * r);
            a[r] = f16r8(_mm256_fmadd_ps(x, vv0, a[r]));
            b[r] = f16r8(_mm256_fmadd_ps(x, vv1, b[r]));
        }
    }
    for (int r = 0; r < nv; r++) _mm256_storeu_ps(acc0 + 8 * r, a[r]), _mm256_storeu_ps(acc1 + 8 * r, b[r]);
}
#if ATTN_ZMM
/* 64 lanes of two heads on 512-bit vectors (AVX-512 build): the same
 * lane-wise steps as vblock2, 16 lanes per instruction, so the same bits */
ATTN_X86 static inline __m512 f16r16(__m512 x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, RNE)); }
ATTN_X86 static void vblock64x2(float *acc0, float *acc1, const k_half *v, int64_t kv_stride, int64_t cn, const float *ms0,
                              const float *vs0, const float *ms1, const float *vs1) {
    __m512 a[4], b[4];
    for (int r = 0; r < 4; r++) a[r] = _mm512_loadu_ps(acc0 + 16 * r), b[r] = _mm512_loadu_ps(acc1 + 16 * r);
    for (int64_t j = 0; j < cn; j++) {
        const k_half *vp = v + j * kv_stride;
        if (ms0[j] != 1.0f) {
            const __m512 vm = _mm512_set1_ps(ms0[j]);
            for (int r = 0; r < 4; r++) a[r] = f16r16(_mm512_mul_ps(a[r], vm));
        }
        if (ms1[j] != 1.0f) {
            const __m512 vm = _mm512_set1_ps(ms1[j]);
            for (int r = 0; r < 4; r++) b[r] = f16r16(_mm512_mul_ps(b[r], vm));
        }
        const __m512 vv0 = _mm512_set1_ps(vs0[j]), vv1 = _mm512_set1_ps(vs1[j]);
        for (int r = 0; r < 4; r++) {
            const __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vp + 16 * r)));
            a[r] = f16r16(_mm512_fmadd_ps(x, vv0, a[r]));
            b[r] = f16r16(_mm512_fmadd_ps(x, vv1, b[r]));
        }
    }
    for (int r = 0; r < 4; r++) _mm512_storeu_ps(acc0 + 16 * r, a[r]), _mm512_storeu_ps(acc1 + 16 * r, b[r]);
}
#else
/* 64 lanes of two heads in passes of 32 (8 accumulators fit the 16 ymm registers) */
ATTN_X86 static void vblock64x2(float *acc0, float *acc1, const k_half *v, int64_t kvs, int64_t cn, const float *ms0,
                              const float *vs0, const float *ms1, const float *vs1) {
    vblock2(4, acc0, acc1, v, kvs, cn, ms0, vs0, ms1, vs1);
    vblock2(4, acc0 + 32, acc1 + 32, v + 32, kvs, cn, ms0, vs0, ms1, vs1);
}
#endif

/* acc[0..8*nv) = fmaf(kq[j], vf[j*hd + ...], acc) for j < n, in registers. */
ATTN_X86 static inline AI void vacc(const int nv, float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) {
    __m256 a[8];
    for (int r = 0; r < nv; r++) a[r] = _mm256_loadu_ps(acc + 8 * r);
    for (int64_t j = 0; j < n; j++) {
        const __m256 w = _mm256_broadcast_ss(kq + j);
        for (int r = 0; r < nv; r++) a[r] = _mm256_fmadd_ps(w, _mm256_loadu_ps(vf + j * hd + 8 * r), a[r]);
    }
    for (int r = 0; r < nv; r++) _mm256_storeu_ps(acc + 8 * r, a[r]);
}
#if ATTN_ZMM
/* vacc for 64 lanes on 512-bit vectors (AVX-512 build): lane-wise, the same bits */
ATTN_X86 static void vacc64(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) {
    __m512 a[4];
    for (int r = 0; r < 4; r++) a[r] = _mm512_loadu_ps(acc + 16 * r);
    for (int64_t j = 0; j < n; j++) {
        const __m512 w = _mm512_set1_ps(kq[j]);
        for (int r = 0; r < 4; r++) a[r] = _mm512_fmadd_ps(w, _mm512_loadu_ps(vf + j * hd + 16 * r), a[r]);
    }
    for (int r = 0; r < 4; r++) _mm512_storeu_ps(acc + 16 * r, a[r]);
}
#else
ATTN_X86 static void vacc64(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(8, acc, vf, hd, kq, n); }
#endif
ATTN_X86 static void vacc32(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(4, acc, vf, hd, kq, n); }
ATTN_X86 static void vacc16(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(2, acc, vf, hd, kq, n); }
ATTN_X86 static void vacc8(float *acc, const float *vf, int64_t hd, const float *kq, int64_t n) { vacc(1, acc, vf, hd, kq, n); }
#pragma GCC pop_options

/* ---- k_attention_tiled ---- */

/* Transposes the 8x8 block r[0..7] in place: r[i] lane j <- r[j] lane i. */
ATTN_X86 static inline void transpose8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* the tile's lanes [n0, n): K transposed (other lanes 0), V as is */
ATTN_X86 static inline AI void attn_widen_tile(float *kt, float *vf, const k_half *kh, const k_half *vh, int64_t kv_stride,
                                             int64_t ic, int64_t n0, int64_t n, int64_t hd) {
    for (int64_t j0 = 0; j0 < K_ATTN_TILE; j0 += 8) {
        for (int64_t d0 = 0; d0 < hd; d0 += 8) {
            __m256 b[8];
            for (int jj = 0; jj < 8; jj++)
                b[jj] = j0 + jj >= n0 && j0 + jj < n ? ldh8(kh + (ic + j0 + jj) * kv_stride + d0) : _mm256_setzero_ps();
            transpose8(b);
            for (int dd = 0; dd < 8; dd++) _mm256_storeu_ps(kt + (d0 + dd) * K_ATTN_TILE + j0, b[dd]);
        }
    }
    for (int64_t j = n0; j < n; j++)
        for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(vf + j * hd + d, ldh8(vh + (ic + j) * kv_stride + d));
}

/* scores: lane j of vector c is position 8c + j */
ATTN_X86 static inline AI void attn_scores(float *kq, const float *kt, const float *qh, int64_t hd, float sc) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (int64_t d = 0; d < hd; d++) {
        const __m256 qd = _mm256_broadcast_ss(qh + d);
        const float *kd = kt + d * K_ATTN_TILE;
        s0 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd), s0);
        s1 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 8), s1);
        s2 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 16), s2);
        s3 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 24), s3);
        s4 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 32), s4);
        s5 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 40), s5);
        s6 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 48), s6);
        s7 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kd + 56), s7);
    }
    const __m256 vsc = _mm256_set1_ps(sc);
    _mm256_storeu_ps(kq, _mm256_mul_ps(s0, vsc));
    _mm256_storeu_ps(kq + 8, _mm256_mul_ps(s1, vsc));
    _mm256_storeu_ps(kq + 16, _mm256_mul_ps(s2, vsc));
    _mm256_storeu_ps(kq + 24, _mm256_mul_ps(s3, vsc));
    _mm256_storeu_ps(kq + 32, _mm256_mul_ps(s4, vsc));
    _mm256_storeu_ps(kq + 40, _mm256_mul_ps(s5, vsc));
    _mm256_storeu_ps(kq + 48, _mm256_mul_ps(s6, vsc));
    _mm256_storeu_ps(kq + 56, _mm256_mul_ps(s7, vsc));
}

ATTN_X86 static inline AI void attn_rescale(float *acc, int64_t hd, float ms) {
    const __m256 vm = _mm256_set1_ps(ms);
    for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(acc + d, _mm256_mul_ps(_mm256_loadu_ps(acc + d), vm));
}

ATTN_X86 static inline AI double attn_exp_sum(float *kq, int64_t jlo, int64_t jhi, float M) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 vM = _mm256_set1_ps(M);
    double sum = 0;
    for (int64_t b = jlo - jlo % 16; b < jhi; b += 16) {
        const __m256i lo = _mm256_set1_epi32((int)(jlo - b) - 1), hi = _mm256_set1_epi32((int)(jhi - b));
        const __m256i lane1 = _mm256_add_epi32(lane, _mm256_set1_epi32(8));
        const __m256 m0 = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(hi, lane), _mm256_cmpgt_epi32(lane, lo)));
        const __m256 m1 = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(hi, lane1), _mm256_cmpgt_epi32(lane1, lo)));
        const __m256 e0 = _mm256_and_ps(m0, vexpf8(_mm256_sub_ps(_mm256_loadu_ps(kq + b), vM)));
        const __m256 e1 = _mm256_and_ps(m1, vexpf8(_mm256_sub_ps(_mm256_loadu_ps(kq + b + 8), vM)));
        _mm256_storeu_ps(kq + b, e0);
        _mm256_storeu_ps(kq + b + 8, e1);
        sum += (double)tree8(_mm256_add_ps(e0, e1));
    }
    return sum;
}

ATTN_X86 static inline AI void attn_vacc(float *acc, const float *vfj, int64_t hd, const float *kqj, int64_t nj) {
    int64_t d = 0;
    for (; d + 64 <= hd; d += 64) vacc64(acc + d, vfj + d, hd, kqj, nj);
    if (d + 32 <= hd) { vacc32(acc + d, vfj + d, hd, kqj, nj); d += 32; }
    if (d + 16 <= hd) { vacc16(acc + d, vfj + d, hd, kqj, nj); d += 16; }
    if (d + 8 <= hd) { vacc8(acc + d, vfj + d, hd, kqj, nj); d += 8; }
}

/* ---- k_attention_kvq: the V steps, 8 lanes at a time ---- */

ATTN_X86 static inline AI int64_t attn_kvq_vscale(float *acc, int64_t n, float ms) {
    const __m256 vm = _mm256_set1_ps(ms);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), vm));
    return i;
}
ATTN_X86 static inline AI int64_t attn_kvq_vmad(float *acc, const float *vf, int64_t n, float vs) {
    const __m256 vv = _mm256_set1_ps(vs);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(_mm256_loadu_ps(vf + i), vv, _mm256_loadu_ps(acc + i)));
    return i;
}
ATTN_X86 static inline AI int64_t attn_kvq_vscale_h(float *acc, int64_t n, float ms) {
    const __m256 vm = _mm256_set1_ps(ms);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, f16r8(_mm256_mul_ps(_mm256_loadu_ps(acc + i), vm)));
    return i;
}
ATTN_X86 static inline AI int64_t attn_kvq_vmad_h(float *acc, const k_half *vh, int64_t n, float vs) {
    const __m256 vv = _mm256_set1_ps(vs);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, f16r8(_mm256_fmadd_ps(ldh8(vh + i), vv, _mm256_loadu_ps(acc + i))));
    return i;
}

#define ATTN_FN ATTN_X86
#define ATTN_LANES 8
#include "attn_driver.h"
