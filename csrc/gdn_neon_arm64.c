/* gdn_neon_arm64.c — the Gated DeltaNet kernels for the NEON impls
 * (gdn.h): each 16-lane accumulator of the reference dot as four 128-bit
 * quarters, added lane-wise as gdn_ref.c adds its slots, then the same
 * tree, so the bits of gdn_ref.c. Also the arm64 hook of the gdn dispatch. */
#include <arm_neon.h>
#include <math.h>
#include "gdn.h"
#include "kernels.h"

#define GDN_NEON __attribute__((always_inline))

/* the 64 slots as a[slot/16][(slot%16)/4] */
static inline GDN_NEON float gdn_reduce4(float32x4_t a[4][4]) {
    float32x4_t v[4];
    for (int r = 0; r < 4; r++) v[r] = vaddq_f32(vaddq_f32(a[0][r], a[2][r]), vaddq_f32(a[1][r], a[3][r]));
    const float32x4_t w0 = vaddq_f32(v[0], v[2]), w1 = vaddq_f32(v[1], v[3]); /* l + l+8 */
    const float32x4_t u = vaddq_f32(w0, w1);                                   /* l + l+4 */
    const float32x4_t x = vaddq_f32(u, vextq_f32(u, u, 2));                    /* l + l+2 */
    return vgetq_lane_f32(x, 0) + vgetq_lane_f32(x, 1);
}

/* gdn_row.h's pass: the slots as a[slot/16][(slot%16)/4] */
static inline GDN_NEON float gdn_vpass(const int upd, float *m, const float *k, const float *r, int64_t np, float c) {
    float32x4_t a[4][4];
    for (int j = 0; j < 4; j++)
        for (int s = 0; s < 4; s++) a[j][s] = vdupq_n_f32(0);
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int s = 0; s < 4; s++) {
                const int64_t e = i + 16 * j + 4 * s;
                const float32x4_t x = upd ? vfmaq_n_f32(vld1q_f32(m + e), vld1q_f32(k + e), c) : vmulq_n_f32(vld1q_f32(m + e), c);
                vst1q_f32(m + e, x);
                a[j][s] = vfmaq_f32(a[j][s], x, vld1q_f32(r + e));
            }
    return gdn_reduce4(a);
}

#define GDN_FN
#include "gdn_row.h"
#include "gdn_driver.h"

void k_gdn_recur_neon(K_GDN_RECUR_PARAMS) { gdn_recur(K_GDN_RECUR_ARGS); }
void k_gdn_conv_neon(K_GDN_CONV_PARAMS) { gdn_conv(K_GDN_CONV_ARGS); }

k_gdn_recur_kernel *k_gdn_arch_recur(int impl) {
    return impl == K_IMPL_NEON || impl == K_IMPL_NEON_DOT || impl == K_IMPL_NEON_I8MM ? k_gdn_recur_neon : NULL;
}

k_gdn_conv_kernel *k_gdn_arch_conv(int impl) {
    return impl == K_IMPL_NEON || impl == K_IMPL_NEON_DOT || impl == K_IMPL_NEON_I8MM ? k_gdn_conv_neon : NULL;
}
