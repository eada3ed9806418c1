/*
 * testutil.h — shared helpers of the C tests and the microbenchmark:
 * which SIMD impls this CPU can run, a small deterministic RNG, and random
 * but well-formed blocks of every weight format.
 */
#ifndef WOOLLY_TESTUTIL_H
#define WOOLLY_TESTUTIL_H

/* clock_gettime, getauxval and sysctlbyname under -std=c11 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#ifndef _DARWIN_C_SOURCE
#define _DARWIN_C_SOURCE
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

static const char *const impl_names[K_IMPL_MAX] = {
    [K_IMPL_REF] = "ref", [K_IMPL_AVX2] = "avx2", [K_IMPL_NEON] = "neon",
    [K_IMPL_NEON_DOT] = "neon-dotprod", [K_IMPL_AVX512] = "avx512", [K_IMPL_NEON_I8MM] = "neon-i8mm",
};

/* Whether this CPU can run the kernels of impl (the same rule as package
 * kernels; WOOLLY_TEST_IMPLS=ref,neon limits the list). */
static int impl_available(int impl) {
    const char *only = getenv("WOOLLY_TEST_IMPLS");
    if (only && *only && impl != K_IMPL_REF) {
        const char *p = strstr(only, impl_names[impl]);
        size_t l = strlen(impl_names[impl]);
        if (!p || (p[l] != 0 && p[l] != ',')) return 0;
    }
    switch (impl) {
    case K_IMPL_REF: return 1;
#if defined(__x86_64__)
    case K_IMPL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    case K_IMPL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#if defined(__aarch64__)
    case K_IMPL_NEON: return 1;
    case K_IMPL_NEON_DOT: {
#if defined(__linux__)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__APPLE__)
        int v = 0; size_t sz = sizeof v;
        if (sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &sz, NULL, 0) != 0) return 0;
        return v != 0;
#else
        return 0;
#endif
    }
    case K_IMPL_NEON_I8MM: { /* i8mm and dotprod, as package kernels asks */
#if defined(__linux__)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#elif defined(__APPLE__)
        int v = 0, w = 0; size_t sz = sizeof v;
        if (sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &sz, NULL, 0) != 0) return 0;
        sz = sizeof w;
        if (sysctlbyname("hw.optional.arm.FEAT_I8MM", &w, &sz, NULL, 0) != 0) return 0;
        return v != 0 && w != 0;
#else
        return 0;
#endif
    }
#endif
    default: return 0;
    }
}

/* xorshift64*: deterministic across platforms */
/* the ggml name of a type id, for messages */
static const char *type_name(int t) {
    switch (t) {
    case K_F32: return "F32"; case K_F16: return "F16"; case K_BF16: return "BF16";
    case K_Q4_0: return "Q4_0"; case K_Q4_1: return "Q4_1"; case K_Q5_0: return "Q5_0";
    case K_Q5_1: return "Q5_1"; case K_Q8_0: return "Q8_0"; case K_Q4_K: return "Q4_K";
    case K_Q5_K: return "Q5_K"; case K_Q6_K: return "Q6_K"; case K_Q8_K: return "Q8_K";
    case K_Q2_K: return "Q2_K"; case K_Q3_K: return "Q3_K";
    case K_IQ4_NL: return "IQ4_NL"; case K_IQ4_XS: return "IQ4_XS"; case K_MXFP4: return "MXFP4";
    default: return "?";
    }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t rng_u64(void) {
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static inline float rng_unit(void) { return (float)((rng_u64() >> 40) * (1.0 / 16777216.0)); } /* [0,1) */
static inline float rng_sym(void) { return 2 * rng_unit() - 1; }                                  /* [-1,1) */

static inline void rng_bytes(void *p, size_t n) {
    uint8_t *b = (uint8_t *)p;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(rng_u64() >> 56);
}

/* A finite f16 scale in [lo, hi) * random sign (sign only when signed_ok). */
static inline k_half rng_scale(float lo, float hi, int signed_ok) {
    float v = lo + (hi - lo) * rng_unit();
    if (signed_ok && (rng_u64() & 1)) v = -v;
    return k_f32_to_f16(v);
}

/* Fill nb random blocks of weight type t with valid scales. mode 0: random;
 * 1: every quant byte 0xFF (extreme quants); 2: all zero bytes; 3: tiny
 * (subnormal f16) scales. */
static void fill_weights(int t, void *buf, int64_t nb, int mode) {
    int64_t bb = k_row_bytes(t, t == K_Q4_K || t == K_Q5_K || t == K_Q6_K || t == K_Q2_K || t == K_Q3_K || t == K_IQ4_XS ? K_QKK :
                                (t == K_F16 || t == K_F32 || t == K_BF16 ? 1 : K_QK));
    uint8_t *p = (uint8_t *)buf;
    if (mode == 2) { memset(p, 0, (size_t)(bb * nb)); return; }
    if (mode == 1) memset(p, 0xFF, (size_t)(bb * nb));
    else rng_bytes(p, (size_t)(bb * nb));
    for (int64_t i = 0; i < nb; i++, p += bb) {
        k_half d = mode == 3 ? (k_half)(1 + (rng_u64() & 0x3ff)) : rng_scale(1e-4f, 2e-2f, 1);
        k_half m = mode == 3 ? (k_half)(rng_u64() & 0x3ff) : rng_scale(1e-4f, 2e-2f, 0);
        switch (t) {
        case K_F16: { float v = rng_sym() * 4; k_half h = k_f32_to_f16(v); memcpy(p, &h, 2); break; }
        case K_BF16: { float v = rng_sym() * 4; uint32_t u; memcpy(&u, &v, 4); uint16_t h = (uint16_t)(u >> 16); memcpy(p, &h, 2); break; }
        case K_F32: { float v = rng_sym() * 4; memcpy(p, &v, 4); break; }
        case K_Q4_0: case K_Q5_0: case K_Q8_0: case K_IQ4_NL: case K_IQ4_XS: memcpy(p, &d, 2); break;
        case K_Q4_1: case K_Q5_1: memcpy(p, &d, 2); memcpy(p + 2, &m, 2); break;
        case K_Q4_K: case K_Q5_K: memcpy(p, &d, 2); memcpy(p + 2, &m, 2); break;
        case K_Q6_K: memcpy(p + offsetof(k_block_q6_k, d), &d, 2); break;
        case K_Q2_K: memcpy(p + offsetof(k_block_q2_k, d), &d, 2); memcpy(p + offsetof(k_block_q2_k, dmin), &m, 2); break;
        case K_Q3_K: memcpy(p + offsetof(k_block_q3_k, d), &d, 2); break;
        /* the E8M0 byte: 2^-18 .. 2^-9 halved (mode 1: 2^12, finite sums
         * for the tolerance checks; the mxfp4 section covers e = 255);
         * mode 3 the f32-subnormal scales of e = 0 and 1 */
        case K_MXFP4: p[0] = mode == 3 ? (uint8_t)(rng_u64() & 1) : mode == 1 ? 140 : (uint8_t)(110 + rng_u64() % 10); break;
        default: break;
        }
    }
}

/* Random activations: mode 0 normal-ish, 1 wide dynamic range, 2 zeros,
 * 3 a few spikes in noise, 4 tiny values (subnormal region). */
static void fill_acts(float *x, int64_t n, int mode) {
    for (int64_t i = 0; i < n; i++) {
        switch (mode) {
        case 0: x[i] = rng_sym() + rng_sym() + rng_sym(); break;
        case 1: x[i] = rng_sym() * powf(10.f, 6 * rng_unit() - 3); break;
        case 2: x[i] = 0; break;
        case 3: x[i] = (rng_u64() % 97 == 0) ? 50 * rng_sym() : 0.01f * rng_sym(); break;
        default: x[i] = rng_sym() * 1e-38f; break;
        }
    }
}

static int64_t block_elems(int t) {
    switch (t) {
    case K_F32: case K_F16: case K_BF16: return 1;
    case K_Q4_K: case K_Q5_K: case K_Q6_K: case K_Q8_K: case K_IQ4_XS: return K_QKK;
    case K_Q2_K: case K_Q3_K: return K_QKK;
    default: return K_QK;
    }
}

#endif
