/* gdn_ref.c — the scalar reference of the Gated DeltaNet kernels (gdn.h):
 * the dot emulates the 64 accumulator slots and the reduction tree of the
 * vector code in plain C, so it is the specification every SIMD piece is
 * tested against (kernels/gdn_test.go, csrc/tests). Also the drivers. */
#include <math.h>
#include "gdn.h"
#include "kernels.h"

/* dot of gdn.h: 64 slots of fused multiply-adds, the tree, the rounded tail */
static float gdn_dot_ref(const float *a, const float *b, int64_t n) {
    const int64_t np = n & ~(int64_t)63;
    float sum = 0;
    if (np > 0) {
        float acc[64] = {0}, v[16];
        for (int64_t i = 0; i < np; i += 64)
            for (int l = 0; l < 64; l++) acc[l] = fmaf(a[i + l], b[i + l], acc[l]);
        for (int l = 0; l < 16; l++) {
            const float x = acc[l] + acc[32 + l], y = acc[16 + l] + acc[48 + l];
            v[l] = x + y;
        }
        for (int s = 8; s >= 1; s /= 2)
            for (int l = 0; l < s; l++) v[l] = v[l] + v[l + s];
        sum = v[0];
    }
    for (int64_t i = np; i < n; i++) {
        const float p = a[i] * b[i];
        sum += p;
    }
    return sum;
}

static float gdn_row(float *m, const float *k, const float *q, int64_t S, float decay, float vj, float b,
                     float scale) {
    for (int64_t i = 0; i < S; i++) m[i] = m[i] * decay;
    const float dj = (vj - gdn_dot_ref(m, k, S)) * b;
    for (int64_t i = 0; i < S; i++) m[i] = fmaf(k[i], dj, m[i]);
    return gdn_dot_ref(m, q, S) * scale;
}

#define GDN_FN
#include "gdn_driver.h"

void k_gdn_recur_ref(K_GDN_RECUR_PARAMS) { gdn_recur(K_GDN_RECUR_ARGS); }
void k_gdn_conv_ref(K_GDN_CONV_PARAMS) { gdn_conv(K_GDN_CONV_ARGS); }

static int gdn_simd(int impl) { return impl > K_IMPL_REF && impl < K_IMPL_MAX; }

void k_gdn_recur(int impl, K_GDN_RECUR_PARAMS) {
    k_gdn_recur_kernel *f = gdn_simd(impl) ? k_gdn_arch_recur(impl) : NULL;
    (f ? f : k_gdn_recur_ref)(K_GDN_RECUR_ARGS);
}

void k_gdn_conv(int impl, K_GDN_CONV_PARAMS) {
    k_gdn_conv_kernel *f = gdn_simd(impl) ? k_gdn_arch_conv(impl) : NULL;
    (f ? f : k_gdn_conv_ref)(K_GDN_CONV_ARGS);
}
