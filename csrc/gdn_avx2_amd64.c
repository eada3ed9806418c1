/* gdn_avx2_amd64.c — the Gated DeltaNet kernels for the avx2 impl (gdn.h):
 * each 16-lane accumulator of the reference dot as two 256-bit halves
 * (lanes 0-7, 8-15), added lane-wise as gdn_ref.c adds its slots, so the
 * bits are the same. Also the x86-64 hook of the gdn dispatch. */
#include <immintrin.h>
#include <math.h>
#include "gdn.h"
#include "kernels.h"
#include "kernels_avx2_amd64.h"

/* lanes l + l+8 already added: then l + l+4, l + l+2, 0 + 1 */
K_AVX2 static inline __attribute__((always_inline)) float gdn_tree8(__m256 h) {
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    u = _mm_add_ps(u, _mm_movehl_ps(u, u));
    u = _mm_add_ss(u, _mm_shuffle_ps(u, u, 1));
    return _mm_cvtss_f32(u);
}

/* the 64 slots as a[slot/16][half] */
K_AVX2 static inline __attribute__((always_inline)) float gdn_reduce8(__m256 a[4][2]) {
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0][0], a[2][0]), _mm256_add_ps(a[1][0], a[3][0]));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[0][1], a[2][1]), _mm256_add_ps(a[1][1], a[3][1]));
    return gdn_tree8(_mm256_add_ps(lo, hi));
}

/* gdn_row.h's pass: the slots as a[slot/16][half] */
K_AVX2 static inline __attribute__((always_inline)) float gdn_vpass(const int upd, float *m, const float *k, const float *r,
                                                                    int64_t np, float c) {
    const __m256 cv = _mm256_set1_ps(c);
    __m256 a[4][2];
    for (int j = 0; j < 4; j++) a[j][0] = a[j][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++) {
                const int64_t e = i + 16 * j + 8 * h;
                const __m256 x = upd ? _mm256_fmadd_ps(_mm256_loadu_ps(k + e), cv, _mm256_loadu_ps(m + e))
                                     : _mm256_mul_ps(_mm256_loadu_ps(m + e), cv);
                _mm256_storeu_ps(m + e, x);
                a[j][h] = _mm256_fmadd_ps(x, _mm256_loadu_ps(r + e), a[j][h]);
            }
    return gdn_reduce8(a);
}

#define GDN_FN K_AVX2
#include "gdn_row.h"
#include "gdn_driver.h"

K_AVX2 void k_gdn_recur_avx2(K_GDN_RECUR_PARAMS) { gdn_recur(K_GDN_RECUR_ARGS); }
K_AVX2 void k_gdn_conv_avx2(K_GDN_CONV_PARAMS) { gdn_conv(K_GDN_CONV_ARGS); }

k_gdn_recur_kernel *k_gdn_arch_recur(int impl) {
    return impl == K_IMPL_AVX512 ? k_gdn_recur_avx512 : impl == K_IMPL_AVX2 ? k_gdn_recur_avx2 : NULL;
}

k_gdn_conv_kernel *k_gdn_arch_conv(int impl) {
    return impl == K_IMPL_AVX512 ? k_gdn_conv_avx512 : impl == K_IMPL_AVX2 ? k_gdn_conv_avx2 : NULL;
}
