/* ffn_ref.c — the element-wise ops of the newer architectures, written to
 * give the reference build's bits: GeGLU through ggml's f16 GELU table
 * (Gemma), the tanh soft-cap of the final logits (Gemma 2) and the softmax of
 * a mixture-of-experts router. They are cheap next to the matrix products, so
 * one portable C version serves every kernel set. */
#include <math.h>
#include "attn_common.h"
#include "kernels.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* gelu_tab[h] = f16(gelu(f32(h))) for every half h: the reference evaluates
 * GELU (tanh approximation, in f32) once per half-precision input. */
static k_half gelu_tab[1 << 16];
static int gelu_tab_ready;

static float gelu_tanh(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    const float coef_a = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

void k_init_tables(void) {
    if (gelu_tab_ready) return;
    for (uint32_t h = 0; h < (1u << 16); h++) gelu_tab[h] = k_f32_to_f16(gelu_tanh(k_f16_to_f32((k_half)h)));
    gelu_tab_ready = 1;
}

/* GELU of one f32 the way the reference's GeGLU does it. */
static inline float gelu_f16_table(float x) {
    const k_half h = k_f32_to_f16(x);
    const k_half g = gelu_tab_ready ? gelu_tab[h] : k_f32_to_f16(gelu_tanh(k_f16_to_f32(h)));
    return k_f16_to_f32(g);
}

void k_geglu_ref(float *out, const float *gate, const float *up, int64_t n, int64_t i0, int64_t i1) {
    (void)n;
    for (int64_t i = i0; i < i1; i++) {
        const float x = gate[i];
        if (x <= -10.0f) out[i] = 0.0f;
        else if (x >= 10.0f) out[i] = x * up[i];
        else out[i] = gelu_f16_table(x) * up[i];
    }
}

void k_softcap_ref(float *x, int64_t n, float cap) {
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; i++) x[i] = tanhf(x[i] * inv) * cap;
}

/* The reference's soft_max of one f32 row (AVX-512 build): max, then blocks
 * of 16 lanes through ggml_v_expf whose lanes are summed halving 8, 4, 2, 1
 * and added in double, the tail through expf added in double; every value is
 * then multiplied by (float)(1 / sum). */
void k_softmax_exact_ref(float *x, int64_t n) {
    if (n <= 0) return;
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0;
    int64_t i = 0;
    for (; i + 15 < n; i += 16) {
        float l[16];
        for (int j = 0; j < 16; j++) x[i + j] = l[j] = k_attn_vexpf(x[i + j] - mx);
        for (int w = 8; w >= 1; w /= 2)
            for (int j = 0; j < w; j++) l[j] = l[j] + l[j + w];
        sum += (double)l[0];
    }
    for (; i < n; i++) {
        const float v = k_attn_expf(x[i] - mx);
        sum += (double)v;
        x[i] = v;
    }
    const float s = (float)(1.0 / sum);
    for (int64_t j = 0; j < n; j++) x[j] *= s;
}

/* gpt-oss's SwiGLU with a clamp (ggml's swiglu_oai, scalar in the reference
 * build): the gate capped above at limit, up clamped to [-limit, limit],
 * silu with alpha inside the sigmoid, and up shifted by 1. */
void k_swiglu_oai_ref(float *out, const float *gate, const float *up, int64_t n, float alpha, float limit) {
    for (int64_t i = 0; i < n; i++) {
        const float x = gate[i] < limit ? gate[i] : limit;
        float y = up[i];
        y = y < -limit ? -limit : y;
        y = y > limit ? limit : y;
        const float g = x / (1.0f + k_attn_expf(alpha * -x));
        out[i] = g * (y + 1.0f);
    }
}
