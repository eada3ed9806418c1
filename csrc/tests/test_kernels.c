/*
 * test_kernels.c — every SIMD kernel this CPU can run against its reference.
 *
 *   dequant    exact bits (memcmp) against the _ref kernel
 *   quantize   exact bytes against the _ref kernel
 *   dot        within a bound relative to sum |w_i * a_i| (summation order
 *              differs); the ref itself is checked against a double-precision
 *              dot of the dequantized rows
 *   order      SIMD dots bit-identical to the scalar model of the reference
 *              build's summation order (order_model.h), so every ISA gives
 *              the same bits
 *   drivers    k_matvec / k_matmul_q / k_quantize_act / k_dequant_bulk,
 *              k_sgemm against a naive double product, the small ops
 *   attn       the attention kernels' sliding window and soft-cap (same
 *              bits as ref, window = cut cache, close to a double model)
 *   packed     row-interleaved weights: mm_packed over packed rows gives the
 *              bits of the same set's tile over the unpacked rows
 *   iq4        IQ4_NL / IQ4_XS edge blocks: every nibble and every IQ4_XS
 *              scale, zero / max / negative / subnormal d, dequant against
 *              the format's formula and dots / tiles against the order model
 *   mxfp4      MXFP4 edge blocks: every code in every position, exponents
 *              0, 1 (f32 subnormal scales), 2, 127, 128, 254, 255; dequant
 *              against the E2M1 / E8M0 formula, dots / tiles against the
 *              order model
 *
 * Random inputs plus edge cases (zero blocks, all-0xFF quants, subnormal
 * scales, rounding ties), lengths 1, 2, 3, 5, 7, ... blocks to hit tails.
 * Usage: test_kernels [section]   (section: dequant quantize dot order drivers ops
 * attn iq4 packed mxfp4, ops running attn too; default all). Exit status 1 on any failure.
 */
#include "testutil.h"
#include "order_model.h"
#include "mm_driver.h"

static int failures = 0, checks = 0;

#define FAIL(...) do { failures++; if (failures <= 40) { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); } } while (0)

static const int weight_types[] = {K_F32, K_F16, K_BF16, K_Q4_0, K_Q4_1, K_Q5_0, K_Q5_1,
                                   K_Q8_0, K_Q4_K, K_Q5_K, K_Q6_K,
                                   K_Q2_K, K_Q3_K, K_IQ4_NL, K_IQ4_XS, K_MXFP4};
#define NWT ((int)(sizeof weight_types / sizeof weight_types[0]))
static const int64_t nblocks_list[] = {1, 2, 3, 5, 7, 16, 33};
#define NNB ((int)(sizeof nblocks_list / sizeof nblocks_list[0]))

/* Every weight type of C's type table (a row size and a ref dot) is in
 * weight_types, so a new type cannot skip the tests that range over it. */
static void test_type_list(void) {
    for (int t = 0; t < K_TYPE_MAX; t++) {
        if (k_row_bytes(t, 256) < 0 || !k_get_dot(K_IMPL_REF, t)) continue;
        int listed = 0;
        for (int ti = 0; ti < NWT; ti++) listed |= weight_types[ti] == t;
        checks++;
        if (!listed) FAIL("type %d has a row size and a ref dot but is not in weight_types", t);
    }
}

/* ---------------------------------------------------------------- dequant */

static void test_dequant(int impl) {
    int kernels = 0;
    for (int ti = 0; ti < NWT; ti++) {
        const int t = weight_types[ti];
        k_dequant_fn f = k_get_dequant(impl, t), r = k_get_dequant(K_IMPL_REF, t);
        if (!r) { FAIL("no ref dequant for %s", type_name(t)); continue; }
        if (!f) continue;
        kernels++;
        for (int k = 0; k < NNB; k++) {
            for (int mode = 0; mode < 4; mode++) {
                const int64_t n = nblocks_list[k] * block_elems(t);
                const int64_t nb = n / block_elems(t);
                void *w = malloc((size_t)k_row_bytes(t, n));
                float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
                fill_weights(t, w, nb, mode);
                memset(a, 0x55, (size_t)n * 4); memset(b, 0xAA, (size_t)n * 4);
                r(w, a, n);
                f(w, b, n);
                checks++;
                if (memcmp(a, b, (size_t)n * 4) != 0) {
                    int64_t j = 0;
                    while (j < n && memcmp(&a[j], &b[j], 4) == 0) j++;
                    FAIL("dequant %s/%s n=%lld mode=%d: element %lld is %.9g, ref %.9g",
                         impl_names[impl], type_name(t), (long long)n, mode, (long long)j, b[j], a[j]);
                }
                free(w); free(a); free(b);
            }
        }
    }
    printf("  dequant  %-13s %2d kernels\n", impl_names[impl], kernels);
}

/* --------------------------------------------------------------- quantize */

static const int act_types[] = {K_Q8_K, K_Q8_0, K_F16};

static void quantize_case(int impl, int act, k_quantize_fn f, k_quantize_fn r,
                          const float *x, int64_t n, const char *what) {
    const int64_t bytes = k_row_bytes(act, n);
    uint8_t *a = malloc((size_t)bytes), *b = malloc((size_t)bytes);
    memset(a, 0x11, (size_t)bytes); memset(b, 0x22, (size_t)bytes);
    r(x, a, n);
    f(x, b, n);
    checks++;
    if (memcmp(a, b, (size_t)bytes) != 0) {
        int64_t j = 0;
        while (j < bytes && a[j] == b[j]) j++;
        FAIL("quantize %s/%s %s n=%lld: byte %lld is %02x, ref %02x",
             impl_names[impl], type_name(act), what, (long long)n, (long long)j, b[j], a[j]);
    }
    free(a); free(b);
}

static void test_quantize(int impl) {
    int kernels = 0;
    for (int ai = 0; ai < 3; ai++) {
        const int act = act_types[ai];
        k_quantize_fn f = k_get_quantize(impl, act), r = k_get_quantize(K_IMPL_REF, act);
        if (!r) { FAIL("no ref quantize for %s", type_name(act)); continue; }
        if (!f) continue;
        kernels++;
        const int64_t be = block_elems(act);
        for (int k = 0; k < NNB; k++) {
            int64_t n = nblocks_list[k] * (act == K_F16 ? 37 : be);
            float *x = malloc((size_t)n * 4);
            /* mode 4 (|x| ~ 1e-38) makes Q8_K's iscale = -127/max overflow to
             * inf and Q8_0's id huge: the reference's nearest_int then gives
             * its own well-defined bytes, which a SIMD kernel must repeat */
            static const char *const mode_name[5] = {"random", "random-wide", "zeros", "spikes",
                                                     "subnormal-inputs(scale overflows)"};
            for (int mode = 0; mode < 5; mode++) {
                fill_acts(x, n, mode);
                quantize_case(impl, act, f, r, x, n, mode_name[mode]);
            }
            /* rounding ties: amax = 127 makes id = 1 (Q8_0) and iscale = -1
             * (Q8_K with max = -127), so x = k + 0.5 lands on a tie */
            for (int64_t j = 0; j < n; j++) x[j] = (float)((int)(rng_u64() % 250) - 125) + 0.5f;
            for (int64_t j = 0; j < n; j += be) x[j] = act == K_Q8_K ? -127.f : 127.f;
            quantize_case(impl, act, f, r, x, n, "ties");
            /* sign of max: +a and -a both present, the first one wins */
            for (int64_t j = 0; j < n; j++) x[j] = rng_sym();
            for (int64_t j = 0; j + 9 < n; j += be) { x[j + 3] = -2.f; x[j + 9] = 2.f; }
            quantize_case(impl, act, f, r, x, n, "max-tie");
            for (int64_t j = 0; j + 9 < n; j += be) { x[j + 3] = 2.f; x[j + 9] = -2.f; }
            quantize_case(impl, act, f, r, x, n, "max-tie2");
            /* one zero block between random ones */
            for (int64_t j = 0; j < n; j++) x[j] = rng_sym() * 3;
            for (int64_t j = 0; j < be && j < n; j++) x[j] = (j & 1) ? 0.f : -0.f;
            quantize_case(impl, act, f, r, x, n, "zero-block");
            free(x);
        }
    }
    printf("  quantize %-13s %2d kernels\n", impl_names[impl], kernels);
}

/* -------------------------------------------------------------------- dot */

/* Activations of act type back to f32 (Q8_K has no dequant kernel). */
static void act_to_f32(int act, const void *src, float *dst, int64_t n) {
    if (act == K_Q8_K) {
        const k_block_q8_k *b = (const k_block_q8_k *)src;
        for (int64_t i = 0; i < n; i++) dst[i] = b[i / K_QKK].d * (float)b[i / K_QKK].qs[i % K_QKK];
        return;
    }
    if (k_dequant(K_IMPL_REF, act, src, dst, n) != 0) FAIL("k_dequant(ref, %s) failed", type_name(act));
}

static void test_dot(int impl) {
    int kernels = 0;
    for (int ti = 0; ti < NWT; ti++) {
        const int t = weight_types[ti], act = k_act_type(t);
        k_dot_fn f = k_get_dot(impl, t), r = k_get_dot(K_IMPL_REF, t);
        if (!r) { FAIL("no ref dot for %s", type_name(t)); continue; }
        if (impl != K_IMPL_REF && !f) continue;
        kernels++;
        const int64_t be = block_elems(t) == 1 ? 33 : block_elems(t);
        for (int k = 0; k < NNB; k++) {
            for (int mode = 0; mode < 4; mode++) {
                const int64_t n = nblocks_list[k] * be + (block_elems(t) == 1 ? k : 0);
                void *w = malloc((size_t)k_row_bytes(t, n));
                void *qa = malloc((size_t)k_row_bytes(act, n) + 1);
                float *x = malloc((size_t)n * 4), *wf = malloc((size_t)n * 4), *af = malloc((size_t)n * 4);
                fill_weights(t, w, n / block_elems(t), mode);
                fill_acts(x, n, mode == 2 ? 0 : mode);
                if (k_quantize_act(K_IMPL_REF, act, x, qa, n) != 0) FAIL("quantize_act(ref, %s)", type_name(act));
                k_dequant(K_IMPL_REF, t, w, wf, n);
                act_to_f32(act, qa, af, n);
                double exact = 0, mag = 0;
                for (int64_t j = 0; j < n; j++) { exact += (double)wf[j] * af[j]; mag += fabs((double)wf[j] * af[j]); }
                const double tol = 2e-6 * (double)(n / block_elems(t) + 8) * mag + 1e-30;
                float vr = r(n, w, qa);
                checks++;
                if (!(fabs(vr - exact) <= tol))
                    FAIL("dot ref/%s n=%lld mode=%d: %.9g, exact %.9g (tol %.3g)", type_name(t), (long long)n, mode, vr, exact, tol);
                if (f && impl != K_IMPL_REF) {
                    float vf = f(n, w, qa);
                    checks++;
                    if (!(fabs(vf - vr) <= tol))
                        FAIL("dot %s/%s n=%lld mode=%d: %.9g, ref %.9g (tol %.3g)", impl_names[impl], type_name(t), (long long)n, mode, vf, vr, tol);
                }
                free(w); free(qa); free(x); free(wf); free(af);
            }
        }
    }
    printf("  dot      %-13s %2d kernels\n", impl_names[impl], kernels);
}

/* ------------------------------------------------------------------ order */

static void test_order(int impl) {
    int kernels = 0;
    for (int ti = 0; ti < NWT; ti++) {
        const int t = weight_types[ti], act = k_act_type(t);
        k_dot_fn f = k_get_dot(impl, t);
        int ok;
        om_dot(t, 0, NULL, NULL, &ok);
        if (!f || !ok) continue;
        kernels++;
        const int64_t be = block_elems(t) == 1 ? 64 : block_elems(t);
        for (int k = 0; k < NNB; k++) {
            for (int mode = 0; mode < 4; mode++) {
                const int64_t n = nblocks_list[k] * be + (block_elems(t) == 1 ? 5 * k : 0);
                void *w = malloc((size_t)k_row_bytes(t, n));
                void *qa = malloc((size_t)k_row_bytes(act, n) + 1);
                float *x = malloc((size_t)n * 4);
                fill_weights(t, w, n / block_elems(t), mode);
                fill_acts(x, n, mode == 2 ? 0 : mode);
                k_quantize_act(K_IMPL_REF, act, x, qa, n);
                const float want = om_dot(t, n, w, qa, &ok), got = f(n, w, qa);
                checks++;
                if (memcmp(&want, &got, 4) != 0)
                    FAIL("order %s/%s n=%lld mode=%d: %.9g, the order model gives %.9g", impl_names[impl], type_name(t),
                         (long long)n, mode, got, want);
                free(w); free(qa); free(x);
            }
        }
    }
    printf("  order    %-13s %2d kernels\n", impl_names[impl], kernels);
}

/* Q2_K / Q3_K edge blocks: zero, largest, negative and subnormal d / dmin,
 * quant bytes all 0x00 (Q3_K: q = -4 with scale -32, the largest product)
 * or all 0xFF (every quant and scale at its maximum), 1 to 33 blocks; dots
 * must give the order model's bits (ref included), dequant the ref's. */
static void test_q23_edges(int impl) {
    static const k_half scales[] = {0x0000, 0x7bff, 0xfbff, 0x0001, 0xbc00, 0x3c00};
    static const int64_t nbs[] = {1, 2, 33};
    const int types[] = {K_Q2_K, K_Q3_K};
    for (int ti = 0; ti < 2; ti++) {
        const int t = types[ti];
        const size_t bb = (size_t)k_row_bytes(t, K_QKK);
        const size_t off_d = t == K_Q2_K ? offsetof(k_block_q2_k, d) : offsetof(k_block_q3_k, d);
        k_dot_fn f = k_get_dot(impl, t);
        k_dequant_fn dq = k_get_dequant(impl, t);
        if (!f) f = k_get_dot(K_IMPL_REF, t);
        for (int ni = 0; ni < 3; ni++) {
            const int64_t nb = nbs[ni], n = nb * K_QKK;
            uint8_t *w = malloc(bb * (size_t)nb), *qa = malloc((size_t)k_row_bytes(K_Q8_K, n));
            float *x = malloc((size_t)n * 4), *d1 = malloc((size_t)n * 4), *d2 = malloc((size_t)n * 4);
            for (int fill = 0; fill < 3; fill++)
                for (int si = 0; si < 6; si++)
                    for (int act = 0; act < 3; act++) {
                        if (fill == 2) rng_bytes(w, bb * (size_t)nb);
                        else memset(w, fill ? 0xFF : 0x00, bb * (size_t)nb);
                        for (int64_t i = 0; i < nb; i++) {
                            memcpy(w + i * bb + off_d, &scales[si], 2);
                            if (t == K_Q2_K) memcpy(w + i * bb + offsetof(k_block_q2_k, dmin), &scales[(si + i) % 6], 2);
                        }
                        fill_acts(x, n, act);
                        if (act == 2) /* +-127 after scaling, a negative max first */
                            for (int64_t j = 0; j < n; j++) x[j] = j % K_QKK == 0 ? -127.f : (float)((int)(rng_u64() % 255) - 127);
                        k_quantize_act(K_IMPL_REF, K_Q8_K, x, qa, n);
                        int ok;
                        const float want = om_dot(t, n, w, qa, &ok), got = f(n, w, qa);
                        checks++;
                        if (!ok || memcmp(&want, &got, 4) != 0)
                            FAIL("q23 edges %s/%s n=%lld fill=%d d=%04x act=%d: %.9g, the order model gives %.9g",
                                 impl_names[impl], type_name(t), (long long)n, fill, scales[si], act, got, want);
                        if (dq) {
                            k_get_dequant(K_IMPL_REF, t)(w, d1, n);
                            dq(w, d2, n);
                            checks++;
                            if (memcmp(d1, d2, (size_t)n * 4) != 0)
                                FAIL("q23 edges dequant %s/%s n=%lld fill=%d d=%04x: differs from ref", impl_names[impl],
                                     type_name(t), (long long)n, fill, scales[si]);
                        }
                    }
            free(w); free(qa); free(x); free(d1); free(d2);
        }
    }
    printf("  q23edge  %-13s ok\n", impl_names[impl]);
}

/* ---------------------------------------------------------------- drivers */

static int close_to(float a, float b, float rel, float abs_) {
    return fabsf(a - b) <= abs_ + rel * fmaxf(fabsf(a), fabsf(b));
}

static void test_drivers(int impl) {
    /* k_matvec and k_matmul_q against rows x k_get_dot(ref) */
    /* batches of every prepared group size 2 .. 8 (phase 2b; 9 is 4 + 5,
     * 17 is 5 + 6 + 6), rows of 2 and 5 blocks */
    const int64_t nrows = 37, ntok = 17, mtoks[] = {2, 3, 4, 5, 6, 7, 8, 9, 17};
    for (int ti = 0; ti < 2 * NWT; ti++) {
        const int t = weight_types[ti % NWT], act = k_act_type(t), nbl = ti < NWT ? 2 : 5;
        const int64_t n = block_elems(t) == 1 ? 48 * nbl : nbl * block_elems(t);
        const int64_t rb = k_row_bytes(t, n), ab = k_row_bytes(act, n);
        uint8_t *w = malloc((size_t)(rb * nrows)), *a = malloc((size_t)(ab * ntok));
        float *x = malloc((size_t)(n * ntok) * 4);
        float *y = malloc((size_t)(nrows * ntok) * 4), *yr = malloc((size_t)(nrows * ntok) * 4);
        fill_weights(t, w, n / block_elems(t) * nrows, 0);
        fill_acts(x, n * ntok, ti < NWT ? 0 : ti % 5); /* the second pass: every activation mode */
        for (int64_t tk = 0; tk < ntok; tk++)
            if (k_quantize_act(impl, act, x + tk * n, a + tk * ab, n) != 0) FAIL("k_quantize_act(%s, %s)", impl_names[impl], type_name(act));
        /* k_matvec and k_matmul_q must give exactly the impl's own dot (which
         * the "dot" section compares with ref) */
        k_dot_fn r = k_get_dot(K_IMPL_REF, t), fi = k_get_dot(impl, t);
        if (!fi) fi = r;
        for (int64_t tk = 0; tk < ntok; tk++)
            for (int64_t i = 0; i < nrows; i++) yr[tk * nrows + i] = fi(n, w + i * rb, a + tk * ab);
        /* matvec over a sub-range leaves the rest untouched */
        for (int64_t i = 0; i < nrows; i++) y[i] = -1234.f;
        if (k_matvec(impl, t, n, w, (size_t)rb, a, y, 3, nrows - 2) != 0) FAIL("k_matvec(%s, %s) failed", impl_names[impl], type_name(t));
        for (int64_t i = 0; i < nrows; i++) {
            checks++;
            int inside = i >= 3 && i < nrows - 2;
            if (inside ? memcmp(&y[i], &yr[i], 4) != 0 : y[i] != -1234.f)
                FAIL("k_matvec %s/%s row %lld: %.9g, want %.9g", impl_names[impl], type_name(t), (long long)i, y[i], inside ? yr[i] : -1234.f);
        }
        for (int mi = 0; mi < (int)(sizeof mtoks / sizeof mtoks[0]); mi++) {
            const int64_t mt = mtoks[mi];
            for (int64_t i = 0; i < nrows * ntok; i++) y[i] = -1234.f;
            if (k_matmul_q(impl, t, n, w, (size_t)rb, 0, nrows, a, (size_t)ab, mt, y, nrows) != 0)
                FAIL("k_matmul_q(%s, %s) failed", impl_names[impl], type_name(t));
            /* the tiles promise the same bits as the impl's own dot, token by
             * token; IQ4_NL batches (ntok >= 2) the reference's batch order */
            for (int64_t i = 0; i < nrows * ntok; i++) {
                const int64_t tk = i / nrows, row = i % nrows;
                const float e = tk >= mt ? -1234.f
                                : t == K_IQ4_NL ? om_dot_iq4nl(n, w + row * rb, a + tk * ab, 1) : fi(n, w + row * rb, a + tk * ab);
                checks++;
                if (memcmp(&e, &y[i], 4) != 0)
                    FAIL("k_matmul_q %s/%s n=%lld ntok %lld tok %lld row %lld: %.9g, the impl's dot gives %.9g (not the same bits)",
                         impl_names[impl], type_name(t), (long long)n, (long long)mt, (long long)tk, (long long)row, y[i], e);
            }
        }
        /* bulk dequant equals per-tensor dequant, with and without prefetch */
        float *d1 = malloc((size_t)(n * nrows) * 4), *d2 = malloc((size_t)(n * nrows) * 4);
        k_dequant_task task = {t, w, d2, n * nrows};
        k_dequant(impl, t, w, d1, n * nrows);
        for (int pf = 0; pf < 2; pf++) {
            memset(d2, 0, (size_t)(n * nrows) * 4);
            if (k_dequant_bulk(impl, &task, 1, pf ? 256 : 0) != 0) FAIL("k_dequant_bulk(%s, %s)", impl_names[impl], type_name(t));
            checks++;
            if (memcmp(d1, d2, (size_t)(n * nrows) * 4) != 0) FAIL("k_dequant_bulk %s/%s differs from k_dequant", impl_names[impl], type_name(t));
        }
        free(d1); free(d2); free(w); free(a); free(x); free(y); free(yr);
    }
    /* bad input gives -1, not a crash */
    float dummy[64];
    checks++;
    if (k_dequant(impl, 99, dummy, dummy, 32) != -1) FAIL("k_dequant accepted type 99");
    checks++;
    if (k_dequant(impl, K_Q4_K, dummy, dummy, 100) != -1) FAIL("k_dequant accepted n=100 for Q4_K");
    checks++;
    if (k_matvec(impl, 99, 32, dummy, 4, dummy, dummy, 0, 1) != -1) FAIL("k_matvec accepted type 99");

    /* sgemm, both layouts, against a double product */
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {8, 64, 128}, {13, 16, 9}, {9, 20, 300}, {2, 7, 30}};
    for (int s = 0; s < 7; s++) {
        const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        const int64_t lda = K + 3, ldb_t = K + 1, ldb_n = N + 2, ldc = N + 5;
        float *A = malloc((size_t)(M * lda) * 4), *Bt = malloc((size_t)(N * ldb_t) * 4);
        float *Bn = malloc((size_t)(K * ldb_n) * 4), *C = malloc((size_t)(M * ldc) * 4);
        fill_acts(A, M * lda, 0);
        fill_acts(Bt, N * ldb_t, 0);
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < ldb_n; j++) Bn[k * ldb_n + j] = j < N ? Bt[j * ldb_t + k] : 1e30f;
        for (int tb = 0; tb < 2; tb++) {
            for (int64_t i = 0; i < M * ldc; i++) C[i] = -7.f;
            const int64_t m0 = M > 2 ? 1 : 0, m1 = M;
            k_sgemm(impl, tb, m0, m1, N, K, A, lda, tb ? Bt : Bn, tb ? ldb_t : ldb_n, C, ldc);
            for (int64_t m = 0; m < M; m++)
                for (int64_t j = 0; j < ldc; j++) {
                    checks++;
                    if (m < m0 || j >= N) {
                        if (C[m * ldc + j] != -7.f) FAIL("k_sgemm %s wrote outside rows/cols at (%lld,%lld)", impl_names[impl], (long long)m, (long long)j);
                        continue;
                    }
                    double e = 0, mag = 0;
                    for (int64_t k = 0; k < K; k++) { e += (double)A[m * lda + k] * Bt[j * ldb_t + k]; mag += fabs((double)A[m * lda + k] * Bt[j * ldb_t + k]); }
                    if (!(fabs(C[m * ldc + j] - e) <= 1e-6 * (double)(K + 4) * mag + 1e-30))
                        FAIL("k_sgemm %s transB=%d %lldx%lldx%lld at (%lld,%lld): %.9g, want %.9g", impl_names[impl], tb,
                             (long long)M, (long long)N, (long long)K, (long long)m, (long long)j, C[m * ldc + j], e);
                }
        }
        free(A); free(Bt); free(Bn); free(C);
    }
    printf("  drivers  %-13s ok\n", impl_names[impl]);
}

/* -------------------------------------------------------------- small ops */

static void cmp_vec(const char *what, int impl, const float *a, const float *r, int64_t n, float rel, float abs_) {
    for (int64_t i = 0; i < n; i++) {
        checks++;
        if (!close_to(a[i], r[i], rel, abs_)) {
            FAIL("%s %s n=%lld [%lld]: %.9g, ref %.9g", what, impl_names[impl], (long long)n, (long long)i, a[i], r[i]);
            return;
        }
    }
}

/* k_attention_f16acc / k_attention_tiled as one pointer type */
typedef void (*attn_h_fn)(int, int64_t, int64_t, int64_t, int64_t, int64_t, const float *, int64_t, const k_half *,
                          const k_half *, int64_t, float, int64_t, float, const float *, float *, int64_t, int64_t, int64_t, float *);

static void test_ops(int impl) {
    const int64_t lens[] = {1, 3, 8, 17, 64, 100, 1023};
    for (int li = 0; li < 7; li++) {
        const int64_t n = lens[li];
        float *x = malloc((size_t)n * 4), *w = malloc((size_t)n * 4), *u = malloc((size_t)n * 4);
        float *o1 = malloc((size_t)n * 4), *o2 = malloc((size_t)n * 4);
        fill_acts(x, n, 0); fill_acts(w, n, 0); fill_acts(u, n, 0);
        k_rmsnorm(K_IMPL_REF, o1, x, w, n, 1e-5f); k_rmsnorm(impl, o2, x, w, n, 1e-5f);
        cmp_vec("rmsnorm", impl, o2, o1, n, 1e-5f, 1e-6f);
        k_rmsnorm(K_IMPL_REF, o1, x, NULL, n, 1e-6f); k_rmsnorm(impl, o2, x, NULL, n, 1e-6f);
        cmp_vec("rmsnorm(nil w)", impl, o2, o1, n, 1e-5f, 1e-6f);
        /* swiglu: same bits as ref, whole rows and inner ranges; large
         * |gate| reaches the scalar lanes of the vector exp */
        for (int big = 0; big < 2; big++) {
            float *g = malloc((size_t)n * 4);
            for (int64_t i = 0; i < n; i++) g[i] = big ? x[i] * 300.0f : x[i] * 8.0f;
            if (big && n > 2) { g[0] = 0.0f; g[1] = -0.0f; }
            const int64_t r0[] = {0, 1, n / 3}, r1[] = {n, n - 1, n / 3 + 9};
            for (int k = 0; k < 3; k++) {
                const int64_t a0 = r0[k], a1 = r1[k] < n ? r1[k] : n;
                if (a0 > a1) continue;
                memset(o1, 0, (size_t)n * 4); memset(o2, 0, (size_t)n * 4);
                k_swiglu(K_IMPL_REF, o1, g, u, 1, n, a0, a1); k_swiglu(impl, o2, g, u, 1, n, a0, a1);
                cmp_vec("swiglu", impl, o2, o1, n, 0, 0);
            }
            free(g);
        }
        k_add(K_IMPL_REF, o1, x, u, n); k_add(impl, o2, x, u, n);
        cmp_vec("add", impl, o2, o1, n, 0, 0);
        memcpy(o1, x, (size_t)n * 4); memcpy(o2, x, (size_t)n * 4);
        k_scale(K_IMPL_REF, o1, 0.37f, n); k_scale(impl, o2, 0.37f, n);
        cmp_vec("scale", impl, o2, o1, n, 0, 0);
        free(x); free(w); free(u); free(o1); free(o2);
    }
    /* rope, both pair layouts, full and partial rotation, vector tails: same bits */
    const int64_t rope_rot[] = {32, 64, 40, 6, 2};
    for (int neox = 0; neox < 2; neox++)
        for (int ri = 0; ri < 5; ri++) {
            const int64_t nh = 3, hd = 64, nrot = rope_rot[ri];
            float x1[3 * 64], x2[3 * 64], c[32], s[32];
            fill_acts(x1, nh * hd, 0);
            memcpy(x2, x1, sizeof x1);
            for (int i = 0; i < nrot / 2; i++) { float th = 0.3f * (float)i + 0.1f; c[i] = cosf(th); s[i] = sinf(th); }
            k_rope(K_IMPL_REF, x1, nh, hd, nrot, c, s, neox);
            k_rope(impl, x2, nh, hd, nrot, c, s, neox);
            cmp_vec(neox ? "rope(neox)" : "rope", impl, x2, x1, nh * hd, 0, 0);
        }
    /* attention: GQA, a prefix in the cache, several tokens */
    {
        const int64_t ntok = 3, pos0 = 5, nhead = 4, nkv = 2, hd = 16;
        const int64_t npos = pos0 + ntok, qs = nhead * hd + 3, kvs = nkv * hd + 1, os = nhead * hd + 2;
        float *q = malloc((size_t)(ntok * qs) * 4), *k = malloc((size_t)(npos * kvs) * 4), *v = malloc((size_t)(npos * kvs) * 4);
        float *o1 = calloc((size_t)(ntok * os), 4), *o2 = calloc((size_t)(ntok * os), 4), *scr = malloc((size_t)npos * 4);
        fill_acts(q, ntok * qs, 0); fill_acts(k, npos * kvs, 0); fill_acts(v, npos * kvs, 0);
        k_attention(K_IMPL_REF, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, 0.25f, 0, 0.0f, NULL, o1, os, 0, nhead, scr);
        k_attention(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, 0.25f, 0, 0.0f, NULL, o2, os, 1, nhead, scr);
        k_attention(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, 0.25f, 0, 0.0f, NULL, o2, os, 0, 1, scr);
        cmp_vec("attention", impl, o2, o1, ntok * os, 1e-5f, 1e-6f);
        free(q); free(k); free(v); free(o1); free(o2); free(scr);
    }
    /* exact attention over an f16 cache (same bits as ref): f16acc (q rounded
     * to f16) and tiled, positions crossing 64-position tiles, row blocks of 32 */
    for (int tiled = 0; tiled < 2; tiled++) {
        const int64_t ntok = tiled ? 70 : 3, pos0 = tiled ? 10 : 70, nhead = 8, nkv = 2, hd = tiled ? 32 : 64;
        const int64_t npos = pos0 + ntok, qs = nhead * hd + 3, kvs = nkv * hd + 1, os = nhead * hd + 2;
        const int64_t ns = tiled ? k_attention_tiled_scratch(hd) : k_attention_f16acc_scratch(hd);
        float *q = malloc((size_t)(ntok * qs) * 4), *f = malloc((size_t)(npos * kvs) * 4);
        k_half *k = malloc((size_t)(npos * kvs) * 2), *v = malloc((size_t)(npos * kvs) * 2);
        float *o1 = calloc((size_t)(ntok * os), 4), *o2 = calloc((size_t)(ntok * os), 4), *scr = malloc((size_t)ns * 4);
        fill_acts(q, ntok * qs, 0);
        if (!tiled)
            for (int64_t i = 0; i < ntok * qs; i++) q[i] = k_f16_to_f32(k_f32_to_f16(q[i]));
        fill_acts(f, npos * kvs, 0);
        for (int64_t i = 0; i < npos * kvs; i++) k[i] = k_f32_to_f16(f[i]);
        fill_acts(f, npos * kvs, 1);
        for (int64_t i = 0; i < npos * kvs; i++) v[i] = k_f32_to_f16(f[i]);
        attn_h_fn fn = tiled ? k_attention_tiled : k_attention_f16acc;
        fn(K_IMPL_REF, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, 0.17f, 0, 0.0f, NULL, o1, os, 0, nhead, scr);
        fn(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, 0.17f, 0, 0.0f, NULL, o2, os, 3, nhead, scr);
        fn(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, 0.17f, 0, 0.0f, NULL, o2, os, 0, 3, scr);
        cmp_vec(tiled ? "attention_tiled" : "attention_f16acc", impl, o2, o1, ntok * os, 0, 0);
        free(q); free(f); free(k); free(v); free(o1); free(o2); free(scr);
    }
    printf("  ops      %-13s ok\n", impl_names[impl]);
}

/* ------------------------------------------- sliding window and soft-cap */

/* Double-precision model of k_attention with a window and a soft-cap, one
 * (token, head): out[hd]. */
static void attn_model(const float *qh, const float *k, const float *v, int64_t kvs, int64_t g, int64_t hd,
                       int64_t first, int64_t p, float scale, float cap, const float *sink, double *out) {
    double mx = sink ? *sink : -INFINITY, sum = 0, s[1024];
    for (int64_t j = first; j <= p; j++) {
        double d = 0;
        for (int64_t i = 0; i < hd; i++) d += (double)qh[i] * k[j * kvs + g * hd + i];
        d *= scale;
        if (cap != 0) d = cap * tanh(d / cap);
        s[j - first] = d;
        if (d > mx) mx = d;
    }
    for (int64_t i = 0; i < hd; i++) out[i] = 0;
    for (int64_t j = first; j <= p; j++) sum += exp(s[j - first] - mx);
    if (sink) sum += exp(*sink - mx); /* a sink joins the denominator only */
    for (int64_t j = first; j <= p; j++)
        for (int64_t i = 0; i < hd; i++) out[i] += exp(s[j - first] - mx) / sum * v[j * kvs + g * hd + i];
}

/* The sliding window and the soft-cap of the three attention kernels:
 *   - every impl gives the ref's bits for the exact kernels (f16acc, tiled),
 *     split over head ranges;
 *   - a window equals attention over the cache with its first positions cut
 *     off (bits, same impl): always for f16acc and f32, and for tiled when
 *     the window starts on a 64-position tile boundary;
 *   - a window of at least pos0 + n_tok positions changes no bit;
 *   - the f32 kernel is close to a double model, and the exact kernels to
 *     the f32 kernel (so the cap and the window really apply). */
static void test_attn(int impl) {
    static const struct { int tiled; int64_t ntok, pos0, hd, window; float cap; } cs[] = {
        {0, 3, 70, 64, 5, 0}, {0, 3, 70, 64, 5, 3.0f}, {0, 4, 0, 32, 1, 0}, {0, 5, 60, 64, 64, 2.5f},
        {0, 2, 100, 96, 16, 3.0f}, {0, 3, 10, 64, 200, 0}, {0, 1, 200, 128, 70, 50.0f}, {0, 6, 3, 24, 4, 1.0f},
        {1, 70, 10, 32, 16, 0}, {1, 70, 10, 32, 16, 3.0f}, {1, 80, 100, 64, 70, 0}, {1, 66, 61, 32, 1, 2.0f},
        {1, 64, 0, 16, 64, 3.0f}, {1, 65, 130, 64, 130, 0}, {1, 70, 0, 32, 1000, 3.0f}, {1, 100, 30, 12, 33, 5.0f},
        {1, 64, 200, 32, 100, 0}, {1, 40, 150, 128, 65, 1.0f},
    };
    const int nc = (int)(sizeof cs / sizeof cs[0]);
    /* per-head sinks (gpt-oss): above every score (rescales acc), below, between */
    static const float sinkv[4] = {8.0f, -2.0f, 0.5f, 30.0f};
    for (int ci = 0; ci < 2 * nc; ci++) {
        const float *sk = ci >= nc ? sinkv : NULL;
        const int tiled = cs[ci % nc].tiled;
        const int64_t ntok = cs[ci % nc].ntok, pos0 = cs[ci % nc].pos0, hd = cs[ci % nc].hd, win = cs[ci % nc].window;
        const float cap = cs[ci % nc].cap, scale = 1.0f / sqrtf((float)hd);
        const int64_t nhead = 4, nkv = 2, npos = pos0 + ntok;
        const int64_t qs = nhead * hd + 3, kvs = nkv * hd + 1, os = nhead * hd + 2;
        const int64_t ns = (tiled ? k_attention_tiled_scratch(hd) : k_attention_f16acc_scratch(hd)) + npos;
        float *q = malloc((size_t)(ntok * qs) * 4), *kf = malloc((size_t)(npos * kvs) * 4), *vf = malloc((size_t)(npos * kvs) * 4);
        k_half *k = malloc((size_t)(npos * kvs) * 2), *v = malloc((size_t)(npos * kvs) * 2);
        float *o1 = calloc((size_t)(ntok * os), 4), *o2 = calloc((size_t)(ntok * os), 4), *o3 = calloc((size_t)(ntok * os), 4);
        float *of = calloc((size_t)(ntok * os), 4), *scr = malloc((size_t)ns * 4);
        fill_acts(q, ntok * qs, 0);
        for (int64_t i = 0; i < ntok * qs; i++) q[i] = k_f16_to_f32(k_f32_to_f16(q[i] * 2)); /* sharper scores */
        fill_acts(kf, npos * kvs, 0);
        fill_acts(vf, npos * kvs, 0);
        for (int64_t i = 0; i < npos * kvs; i++) {
            k[i] = k_f32_to_f16(kf[i]), kf[i] = k_f16_to_f32(k[i]);
            v[i] = k_f32_to_f16(vf[i]), vf[i] = k_f16_to_f32(v[i]);
        }
        attn_h_fn fn = tiled ? k_attention_tiled : k_attention_f16acc;
        const char *name = tiled ? "attention_tiled" : "attention_f16acc";
        char what[160];
        snprintf(what, sizeof what, "%s ntok %lld pos0 %lld hd %lld window %lld cap %g%s", name, (long long)ntok,
                 (long long)pos0, (long long)hd, (long long)win, (double)cap, sk ? " sinks" : "");
        fn(K_IMPL_REF, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, scale, win, cap, sk, o1, os, 0, nhead, scr);
        fn(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, scale, win, cap, sk, o2, os, 1, nhead, scr);
        fn(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, scale, win, cap, sk, o2, os, 0, 1, scr);
        cmp_vec(what, impl, o2, o1, ntok * os, 0, 0);
        /* the f32 kernel, and both against the double model */
        k_attention(impl, ntok, pos0, nhead, nkv, hd, q, qs, kf, vf, kvs, scale, win, cap, sk, of, os, 0, nhead, scr);
        for (int64_t t = 0; t < ntok; t++)
            for (int64_t h = 0; h < nhead; h++) {
                const int64_t p = pos0 + t, first = win > 0 && p - win + 1 > 0 ? p - win + 1 : 0;
                double m[128];
                attn_model(q + t * qs + h * hd, kf, vf, kvs, h / (nhead / nkv), hd, first, p, scale, cap, sk ? sk + h : NULL, m);
                for (int64_t i = 0; i < hd; i++) {
                    const float want = (float)m[i], f = of[t * os + h * hd + i], e = o2[t * os + h * hd + i];
                    checks++;
                    if (!close_to(f, want, 1e-4f, 1e-5f) || !close_to(e, want, tiled ? 1e-4f : 1e-2f, tiled ? 1e-5f : 1e-2f)) {
                        FAIL("%s %s t %lld h %lld [%lld]: f32 %.9g exact %.9g, model %.9g", what, impl_names[impl],
                             (long long)t, (long long)h, (long long)i, f, e, want);
                        t = ntok, h = nhead;
                        break;
                    }
                }
            }
        /* a window covering the whole cache is no window */
        if (win >= npos) {
            fn(impl, ntok, pos0, nhead, nkv, hd, q, qs, k, v, kvs, scale, 0, cap, sk, o3, os, 0, nhead, scr);
            cmp_vec(what, impl, o3, o2, ntok * os, 0, 0);
        }
        /* row by row over the cache cut at the window's first position */
        for (int64_t t = 0; t < ntok; t++) {
            const int64_t p = pos0 + t, first = win > 0 && p - win + 1 > 0 ? p - win + 1 : 0;
            if (tiled && first % 64 != 0) continue;
            float r1[4 * 128 + 8], rf[4 * 128 + 8];
            fn(impl, 1, p - first, nhead, nkv, hd, q + t * qs, qs, k + first * kvs, v + first * kvs, kvs, scale, 0, cap,
               sk, r1, os, 0, nhead, scr);
            k_attention(impl, 1, p - first, nhead, nkv, hd, q + t * qs, qs, kf + first * kvs, vf + first * kvs, kvs, scale,
                        0, cap, sk, rf, os, 0, nhead, scr);
            char w2[200];
            snprintf(w2, sizeof w2, "%s, cut cache at t %lld", what, (long long)t);
            cmp_vec(w2, impl, r1, o2 + t * os, nhead * hd, 0, 0);
            cmp_vec(w2, impl, rf, of + t * os, nhead * hd, 0, 0);
        }
        free(q); free(kf); free(vf); free(k); free(v); free(o1); free(o2); free(o3); free(of); free(scr);
    }
    printf("  attn     %-13s ok (window, soft-cap, sinks)\n", impl_names[impl]);
}

/* ------------------------------------------------------------------- iq4 */

/* dst[k] = the format's value of element k, from the layout alone */
static void iq4_formula(int t, const uint8_t *src, float *dst, int64_t n) {
    const int64_t bs = t == K_IQ4_NL ? K_QK : K_QKK, bb = k_row_bytes(t, bs);
    for (int64_t k = 0; k < n; k++) {
        const uint8_t *b = src + k / bs * bb;
        const int e = (int)(k % bs), g = e / 32, j = e % 32;     /* 32-group, element in it */
        const uint8_t *qs = b + (t == K_IQ4_NL ? 2 : 8) + 16 * g;
        const int nib = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
        k_half dh; memcpy(&dh, b, 2);
        float f = k_f16_to_f32(dh);
        if (t == K_IQ4_XS) {
            uint16_t sh; memcpy(&sh, b + 2, 2);
            const int lo = (b[4 + g / 2] >> (4 * (g % 2))) & 15, hi = (sh >> (2 * g)) & 3;
            f = f * (float)((lo | hi << 4) - 32);
        }
        dst[k] = f * (float)om_iq4_levels[nib];
    }
}

static void test_iq4(int impl) {
    static const float dvals[] = {0.0123f, -0.0371f, 0.0f, 65504.0f, -65504.0f, 5.96e-8f /* subnormal */, -2.0f};
    const int nd = (int)(sizeof dvals / sizeof dvals[0]);
    for (int ti = 0; ti < 2; ti++) {
        const int t = ti ? K_IQ4_XS : K_IQ4_NL, act = k_act_type(t);
        /* IQ4_XS: 8 super-blocks x 8 sub-blocks, sub-block j of block i has
         * scale 8i + j: all 64 values; IQ4_NL: 1, 2, 3, 8, 33 blocks */
        const int64_t ns[] = {1, 2, 3, 8, 33}, nn = ti ? 1 : 5;
        for (int64_t ni = 0; ni < nn; ni++) {
            const int64_t nb = ti ? 8 : ns[ni], n = nb * block_elems(t), rb = k_row_bytes(t, n), ab = k_row_bytes(act, n);
            const int64_t nrows = 6, ntok = 5;
            uint8_t *w = malloc((size_t)(rb * nrows)), *a = malloc((size_t)(ab * ntok));
            float *x = malloc((size_t)(n * ntok) * 4), *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
            float *y = malloc((size_t)(nrows * ntok) * 4);
            fill_acts(x, n * ntok, 0);
            for (int64_t k = 0; k < ntok; k++) k_quantize_act(K_IMPL_REF, act, x + k * n, a + k * ab, n);
            for (int di = 0; di < nd; di++) {
                /* rows: every block has d = dvals[di] (row 0) or a random signed
                 * scale (the others); row 0 uses every nibble in each group */
                fill_weights(t, w, nb * nrows, 0);
                for (int64_t b = 0; b < nb * nrows; b++) {
                    uint8_t *blk = w + b * (rb / nb);
                    if (b < nb) {
                        const k_half dh = k_f32_to_f16(dvals[di]);
                        memcpy(blk, &dh, 2);
                        uint8_t *qs = blk + (t == K_IQ4_NL ? 2 : 8);
                        for (int g = 0; g < (t == K_IQ4_NL ? 1 : 8); g++)
                            for (int j = 0; j < 16; j++) qs[16 * g + j] = (uint8_t)(j | (15 - j) << 4);
                    }
                    if (t == K_IQ4_XS) { /* scales 8i + j of sub-block j of block i (i = b % 8) */
                        uint16_t sh = 0;
                        memset(blk + 4, 0, 4);
                        for (int j = 0; j < 8; j++) {
                            const int v = (int)(b % 8) * 8 + j;
                            blk[4 + j / 2] |= (uint8_t)((v & 15) << (4 * (j % 2)));
                            sh |= (uint16_t)((v >> 4) << (2 * j));
                        }
                        memcpy(blk + 2, &sh, 2);
                    }
                }
                for (int64_t r = 0; r < nrows; r++) {
                    const uint8_t *row = w + r * rb;
                    iq4_formula(t, row, want, n);
                    memset(got, 0xAA, (size_t)n * 4);
                    if (k_dequant(impl, t, row, got, n) != 0) FAIL("k_dequant(%s, %s) failed", impl_names[impl], type_name(t));
                    checks++;
                    if (memcmp(want, got, (size_t)n * 4) != 0)
                        FAIL("iq4 dequant %s/%s n=%lld d=%g row %lld differs from the formula", impl_names[impl], type_name(t), (long long)n, dvals[di], (long long)r);
                }
                /* one token (k_matvec) and a batch (k_matmul_q) against the model */
                for (int64_t k = 0; k < ntok; k++) {
                    if (k_matvec(impl, t, n, w, (size_t)rb, a + k * ab, y, 0, nrows) != 0) FAIL("k_matvec(%s, %s)", impl_names[impl], type_name(t));
                    for (int64_t r = 0; r < nrows; r++) {
                        int ok;
                        const float e = om_dot(t, n, w + r * rb, a + k * ab, &ok);
                        checks++;
                        if (memcmp(&e, &y[r], 4) != 0)
                            FAIL("iq4 matvec %s/%s n=%lld d=%g tok %lld row %lld: %.9g, model %.9g", impl_names[impl], type_name(t),
                                 (long long)n, dvals[di], (long long)k, (long long)r, y[r], e);
                    }
                }
                if (k_matmul_q(impl, t, n, w, (size_t)rb, 0, nrows, a, (size_t)ab, ntok, y, nrows) != 0)
                    FAIL("k_matmul_q(%s, %s)", impl_names[impl], type_name(t));
                for (int64_t i = 0; i < nrows * ntok; i++) {
                    const int64_t k = i / nrows, r = i % nrows;
                    int ok;
                    const float e = t == K_IQ4_NL ? om_dot_iq4nl(n, w + r * rb, a + k * ab, 1) : om_dot(t, n, w + r * rb, a + k * ab, &ok);
                    checks++;
                    if (memcmp(&e, &y[i], 4) != 0)
                        FAIL("iq4 matmul_q %s/%s n=%lld d=%g tok %lld row %lld: %.9g, model %.9g", impl_names[impl], type_name(t),
                             (long long)n, dvals[di], (long long)k, (long long)r, y[i], e);
                }
            }
            free(w); free(a); free(x); free(want); free(got); free(y);
        }
    }
    printf("  iq4      %-13s ok\n", impl_names[impl]);
}

/* ----------------------------------------------------------------- packed */

/* Every packed layout of impl's sets (kernels.h, "row-interleaved weights"):
 * random and edge-case rows are packed, and mm_packed over them must give
 * the bits of the same set's tile (or dot) over the unpacked rows, for
 * several token counts, with tight and padded row strides, from the first
 * group and from a later one; outputs outside the tile stay untouched. */
static void test_packed(int impl) {
    static const int64_t ntoks[] = {1, 2, 3, 5, 6, 7, 8, 16}; /* 4, 2 and 1 per pass, mixed */
    /* 10: more blocks than the i8mm tiles rearrange at a time (8) */
    static const int64_t nbks[] = {1, 2, 3, 7, 10};
    const int64_t maxtok = 16;
    int kernels = 0;
    for (int ti = 0; ti < NWT; ti++) {
        const int t = weight_types[ti], act = k_act_type(t);
        const k_type_kernels *set = NULL;
        for (int layer = 0;; layer++) {
            const k_type_kernels *tab = k_arch_get_table(impl, layer);
            if (!tab) break;
            if (tab[t].dot) { set = &tab[t]; break; }
        }
        if (!set || (!set->pack_rows && !set->pack && !set->mm_packed)) continue;
        checks++;
        if (set->pack_rows <= 0 || !set->pack || !set->mm_packed) {
            FAIL("packed %s/%s: pack_rows %d, pack %p, mm_packed %p (all or none)", impl_names[impl], type_name(t),
                 set->pack_rows, (void *)set->pack, (void *)set->mm_packed);
            continue;
        }
        kernels++;
        const int64_t G = set->pack_rows;
        for (int kb = 0; kb < (int)(sizeof nbks / sizeof nbks[0]); kb++) {
            /* 19 groups once: more than a tile's batch of rows (the i8mm tiles take 16 groups) */
            const int64_t nrows = (kb == 1 ? 19 : 3) * G, ys = nrows + 5;
            const int64_t n = nbks[kb] * block_elems(t), nb = nbks[kb];
            const int64_t rb = k_row_bytes(t, n), ab = k_row_bytes(act, n);
            for (int pad = 0; pad < 2; pad++) {
                const int64_t rs = rb + 48 * pad; /* row stride */
                for (int mode = 0; mode < 4; mode++) {
                    uint8_t *w = malloc((size_t)(rs * nrows)), *pk = malloc((size_t)(rs * nrows));
                    uint8_t *a = malloc((size_t)(ab * maxtok));
                    float *x = malloc((size_t)(n * maxtok) * 4);
                    float *y0 = malloc((size_t)(ys * maxtok) * 4), *y1 = malloc((size_t)(ys * maxtok) * 4);
                    memset(w, 0x5A, (size_t)(rs * nrows));
                    for (int64_t r = 0; r < nrows; r++) fill_weights(t, w + r * rs, nb, mode);
                    memset(pk, 0xC3, (size_t)(rs * nrows));
                    set->pack(n, w, (size_t)rs, nrows, pk);
                    fill_acts(x, n * maxtok, (mode + kb) % 5 == 2 ? 0 : (mode + kb) % 5);
                    for (int64_t tk = 0; tk < maxtok; tk++)
                        if (k_quantize_act(impl, act, x + tk * n, a + tk * ab, n) != 0)
                            FAIL("k_quantize_act(%s, %s)", impl_names[impl], type_name(act));
                    for (int k = 0; k < (int)(sizeof ntoks / sizeof ntoks[0]); k++) {
                        const int64_t nt = ntoks[k];
                        for (int64_t i = 0; i < ys * maxtok; i++) y0[i] = y1[i] = -1234.f;
                        if (set->mm_tile) set->mm_tile(n, w, (size_t)rs, nrows, a, (size_t)ab, nt, y0, ys);
                        else {
                            const mm_kernel rows_x_dot = {.dot = set->dot};
                            k_mm_run(&rows_x_dot, n, w, (size_t)rs, nrows, a, (size_t)ab, nt, y0, ys);
                        }
                        /* groups 1.. then group 0 alone: addressing by group offset */
                        set->mm_packed(n, pk + G * rs, (size_t)rs, nrows - G, a, (size_t)ab, nt, y1 + G, ys);
                        set->mm_packed(n, pk, (size_t)rs, G, a, (size_t)ab, nt, y1, ys);
                        int bad = 0;
                        for (int64_t i = 0; i < ys * maxtok; i++) {
                            const int64_t tk = i / ys, row = i % ys;
                            const int inside = tk < nt && row < nrows;
                            checks++;
                            if (memcmp(&y0[i], &y1[i], 4) != 0 || (!inside && y1[i] != -1234.f)) {
                                if (!bad++)
                                    FAIL("packed %s/%s x%lld n=%lld stride=%lld mode=%d ntok=%lld: tok %lld row %lld is %.9g, "
                                         "the unpacked tile gives %.9g",
                                         impl_names[impl], type_name(t), (long long)G, (long long)n, (long long)rs, mode,
                                         (long long)nt, (long long)tk, (long long)row, y1[i], y0[i]);
                            }
                        }
                    }
                    free(w); free(pk); free(a); free(x); free(y0); free(y1);
                }
            }
        }
    }
    printf("  packed   %-13s %2d layouts\n", impl_names[impl], kernels);
}

/* ----------------------------------------------------------------- mxfp4 */

static void test_mxfp4(int impl) {
    static const uint8_t exps[] = {0, 1, 2, 100, 127, 128, 254, 255};
    const int ne = (int)(sizeof exps / sizeof exps[0]);
    /* blocks per row; 90 is gpt-oss's 2880 (the prepared-group kernels
     * step through the row's blocks in pairs: even and odd counts) */
    const int64_t ns[] = {1, 2, 3, 8, 33, 90};
    for (int ni = 0; ni < (int)(sizeof ns / sizeof ns[0]); ni++) {
        const int64_t nb = ns[ni], n = nb * K_QK, rb = k_row_bytes(K_MXFP4, n), ab = k_row_bytes(K_Q8_0, n);
        /* batches of 2 .. 17 tokens: every prepared group size 2 .. 8 (9 is 4 + 5) */
        const int64_t nrows = 6, ntok = 17, ntv = 5, mtoks[] = {2, 3, 4, 5, 6, 7, 8, 9, 16, 17};
        uint8_t *w = malloc((size_t)(rb * nrows)), *a = malloc((size_t)(ab * ntok));
        float *x = malloc((size_t)(n * ntok) * 4), *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
        float *y = malloc((size_t)(nrows * ntok) * 4);
        for (int am = 0; am < 5; am++) {
            fill_acts(x, n * ntok, am);
            for (int64_t k = 0; k < ntok; k++) k_quantize_act(K_IMPL_REF, K_Q8_0, x + k * n, a + k * ab, n);
            if (am == 3) /* the quantizer's extremes, -127 and 127, at varying places */
                for (int64_t k = 0; k < ntok; k++) {
                    k_block_q8_0 *yb = (k_block_q8_0 *)(a + k * ab) + (k % nb);
                    yb->qs[k % 32] = -127;
                    yb->qs[(k + 7) % 32] = 127;
                }
            for (int ei = 0; ei < ne; ei++) {
                /* row 0: every block has exponent exps[ei] and all 16 codes in
                 * both halves (element j: code j, element 16 + j: code 15 - j,
                 * rotated by the block number); rows 1..5 random bytes with
                 * exponent exps[(ei + r) % ne] in every other block */
                rng_bytes(w, (size_t)(rb * nrows));
                for (int64_t b = 0; b < nb * nrows; b++) {
                    k_block_mxfp4 *blk = (k_block_mxfp4 *)w + b;
                    const int64_t r = b / nb;
                    if (r == 0) {
                        blk->e = exps[ei];
                        for (int j = 0; j < 16; j++) blk->qs[j] = (uint8_t)(((j + b) & 15) | ((15 - j + b) & 15) << 4);
                    } else if (b % 2) {
                        blk->e = exps[(ei + r) % ne];
                    }
                }
                for (int64_t r = 0; r < nrows; r++) {
                    const k_block_mxfp4 *row = (const k_block_mxfp4 *)(w + r * rb);
                    for (int64_t k = 0; k < n; k++) {
                        const k_block_mxfp4 *blk = &row[k / K_QK];
                        const int j = (int)(k % K_QK);
                        const int code = j < 16 ? blk->qs[j] & 15 : blk->qs[j - 16] >> 4;
                        want[k] = om_e8m0_half(blk->e) * (float)om_e2m1_x2(code);
                    }
                    memset(got, 0xAA, (size_t)n * 4);
                    if (k_dequant(impl, K_MXFP4, row, got, n) != 0) FAIL("k_dequant(%s, MXFP4) failed", impl_names[impl]);
                    checks++;
                    if (memcmp(want, got, (size_t)n * 4) != 0)
                        FAIL("mxfp4 dequant %s n=%lld e=%d row %lld differs from the formula", impl_names[impl], (long long)n, exps[ei], (long long)r);
                }
                /* one token (k_matvec) and a batch (k_matmul_q), one order */
                for (int64_t k = 0; k < ntv; k++) {
                    if (k_matvec(impl, K_MXFP4, n, w, (size_t)rb, a + k * ab, y, 0, nrows) != 0) FAIL("k_matvec(%s, MXFP4)", impl_names[impl]);
                    for (int64_t r = 0; r < nrows; r++) {
                        const float e = om_dot_mxfp4(n, w + r * rb, a + k * ab);
                        checks++;
                        if (memcmp(&e, &y[r], 4) != 0)
                            FAIL("mxfp4 matvec %s n=%lld e=%d tok %lld row %lld: %.9g, model %.9g", impl_names[impl], (long long)n,
                                 exps[ei], (long long)k, (long long)r, y[r], e);
                    }
                }
                for (int mi = 0; mi < (int)(sizeof mtoks / sizeof mtoks[0]); mi++) {
                    const int64_t mt = mtoks[mi];
                    if (k_matmul_q(impl, K_MXFP4, n, w, (size_t)rb, 0, nrows, a, (size_t)ab, mt, y, nrows) != 0)
                        FAIL("k_matmul_q(%s, MXFP4)", impl_names[impl]);
                    for (int64_t i = 0; i < nrows * mt; i++) {
                        const int64_t k = i / nrows, r = i % nrows;
                        const float e = om_dot_mxfp4(n, w + r * rb, a + k * ab);
                        checks++;
                        if (memcmp(&e, &y[i], 4) != 0)
                            FAIL("mxfp4 matmul_q %s n=%lld e=%d ntok %lld tok %lld row %lld: %.9g, model %.9g", impl_names[impl],
                                 (long long)n, exps[ei], (long long)mt, (long long)k, (long long)r, y[i], e);
                    }
                }
                /* the set's packed layout, if any: rows 0..3 one group (row 0 the
                 * edge exponents), rows 4..5 the unpacked tail */
                if (k_pack_rows(impl, K_MXFP4) > 0) {
                    uint8_t *pw = malloc((size_t)(rb * nrows));
                    if (k_pack(impl, K_MXFP4, n, w, (size_t)rb, nrows, pw) != 0) FAIL("k_pack(%s, MXFP4)", impl_names[impl]);
                    for (int mi = -1; mi < (int)(sizeof mtoks / sizeof mtoks[0]); mi++) {
                        const int64_t mt = mi < 0 ? 1 : mtoks[mi];
                        const int rc = mi < 0 ? k_matvec_packed(impl, K_MXFP4, n, pw, (size_t)rb, nrows, a, y, 0, nrows)
                                              : k_matmul_packed(impl, K_MXFP4, n, pw, (size_t)rb, nrows, 0, nrows, a, (size_t)ab, mt, y, nrows);
                        if (rc != 0) FAIL("k_mat*_packed(%s, MXFP4)", impl_names[impl]);
                        for (int64_t i = 0; i < nrows * mt; i++) {
                            const int64_t k = i / nrows, r = i % nrows;
                            const float e = om_dot_mxfp4(n, w + r * rb, a + k * ab);
                            checks++;
                            if (memcmp(&e, &y[i], 4) != 0)
                                FAIL("mxfp4 packed %s n=%lld e=%d ntok %lld tok %lld row %lld: %.9g, model %.9g", impl_names[impl],
                                     (long long)n, exps[ei], (long long)mt, (long long)k, (long long)r, y[i], e);
                        }
                    }
                    free(pw);
                }
            }
        }
        free(w); free(a); free(x); free(want); free(got); free(y);
    }
    printf("  mxfp4    %-13s ok\n", impl_names[impl]);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    int tested = 0;
    if (!only || !strcmp(only, "dot")) test_type_list();
    for (int impl = 0; impl < K_IMPL_MAX; impl++) {
        if (!impl_available(impl)) {
            if (impl != K_IMPL_REF) printf("  (%s not available on this CPU: skipped)\n", impl_names[impl]);
            continue;
        }
        tested++;
        if (!only || !strcmp(only, "dequant")) { if (impl != K_IMPL_REF) test_dequant(impl); }
        if (!only || !strcmp(only, "quantize")) { if (impl != K_IMPL_REF) test_quantize(impl); }
        if (!only || !strcmp(only, "dot")) test_dot(impl);
        if (!only || !strcmp(only, "order")) { if (impl != K_IMPL_REF) test_order(impl); test_q23_edges(impl); }
        if (!only || !strcmp(only, "drivers")) test_drivers(impl);
        if (!only || !strcmp(only, "ops")) { if (impl != K_IMPL_REF) test_ops(impl); }
        /* the "ops" ctest runs attn too (the ref included) */
        if (!only || !strcmp(only, "ops") || !strcmp(only, "attn")) test_attn(impl);
        if (!only || !strcmp(only, "iq4")) test_iq4(impl);
        if (!only || !strcmp(only, "packed")) { if (impl != K_IMPL_REF) test_packed(impl); }
        if (!only || !strcmp(only, "mxfp4")) test_mxfp4(impl);
    }
    printf("%d impls, %d checks, %d failures\n", tested, checks, failures);
    return failures ? 1 : 0;
}
