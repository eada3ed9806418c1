/* gdn.h — the Gated DeltaNet kernels of the Qwen3.5 hybrids (qwen35,
 * qwen35moe, qwen3next; runtime/deltanet.go): the recurrence of the
 * linear-attention layer and its short causal convolution, with the float
 * order of llama.cpp's CPU ops (gated_delta_net and ssm_conv as its AVX-512
 * build computes them), so every kernel set gives the same bits.
 *
 * k_gdn_recur: for value heads hv in [h0, h1) and tokens t < n, with S the
 * state size, key head hk = hv / (nV / nK) when grouped (qwen3next) else
 * hv % nK, row = qkv + t*qkv_stride, kd = nK*S:
 *
 *     q = row + hk*S, k = row + kd + hk*S, v = row + 2*kd + hv*S
 *     M = state + hv*S*S                      ([S rows j][S])
 *     for each row j:  M[j][i] = M[j][i] * decay[t*g_stride + hv]
 *                      dj = (v[j] - dot(M[j], k)) * beta[t*g_stride + hv]
 *                      M[j][i] = fmaf(k[i], dj, M[j][i])
 *                      out[t*out_stride + hv*S + j] = dot(M[j], q) * scale
 *
 * dot is ggml's vec_dot_f32 on AVX-512: the first S &~ 63 elements in
 * 64-element steps, element i+l of a step into slot l of 64 fused
 * multiply-add accumulators (four vectors of 16 lanes); then slot l + slot
 * l+32 and slot l+16 + slot l+48, those two added (16 lanes), the lanes
 * reduced as l + l+8, l + l+4, l + l+2, lane 0 + lane 1; the remaining
 * elements' products (each rounded) added one at a time.
 *
 * k_gdn_conv: for channels ch in [c0, c1) and tokens t < n, the causal
 * convolution of K taps with the rolling window win[ch][K-1] (the channel's
 * last K-1 inputs, oldest first), each tap one fused multiply-add from 0:
 *
 *     sum = fmaf(win[0], w[0], 0); ... sum = fmaf(win[K-2], w[K-2], sum)
 *     out[t*stride + ch] = fmaf(in[t*stride + ch], w[ch*K + K-1], sum)
 *     then win shifts by one and takes in[t*stride + ch].
 *
 * out must not overlap in. */
#ifndef WOOLLY_GDN_H
#define WOOLLY_GDN_H

#include <stdint.h>

#define K_GDN_RECUR_PARAMS                                                                             \
    float *state, const float *qkv, int64_t qkv_stride, const float *decay, const float *beta,         \
        int64_t g_stride, float *out, int64_t out_stride, int64_t n, int64_t S, int64_t nK, int64_t nV, \
        int64_t h0, int64_t h1, int grouped, float scale
#define K_GDN_RECUR_ARGS \
    state, qkv, qkv_stride, decay, beta, g_stride, out, out_stride, n, S, nK, nV, h0, h1, grouped, scale

#define K_GDN_CONV_PARAMS \
    float *out, const float *in, int64_t stride, int64_t n, float *win, const float *w, int64_t K, int64_t c0, int64_t c1
#define K_GDN_CONV_ARGS out, in, stride, n, win, w, K, c0, c1

typedef void k_gdn_recur_kernel(K_GDN_RECUR_PARAMS);
typedef void k_gdn_conv_kernel(K_GDN_CONV_PARAMS);

/* the drivers Go calls (impl: K_IMPL_*; an impl without its own kernel runs ref's) */
void k_gdn_recur(int impl, K_GDN_RECUR_PARAMS);
void k_gdn_conv(int impl, K_GDN_CONV_PARAMS);

/* the kernels */
k_gdn_recur_kernel k_gdn_recur_ref, k_gdn_recur_avx2, k_gdn_recur_avx512, k_gdn_recur_neon;
k_gdn_conv_kernel k_gdn_conv_ref, k_gdn_conv_avx2, k_gdn_conv_avx512, k_gdn_conv_neon;

/* the per-architecture hooks (gdn_*_amd64.c, gdn_neon_arm64.c,
 * dispatch_other.c): impl's kernel or NULL */
k_gdn_recur_kernel *k_gdn_arch_recur(int impl);
k_gdn_conv_kernel *k_gdn_arch_conv(int impl);

#endif
