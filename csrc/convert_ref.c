/* convert_ref.c — exact scalar f16 / bf16 conversions (no FPU mode or ISA
 * assumptions; bit manipulation only). */
#include <string.h>
#include "kernels.h"

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float k_f16_to_f32(k_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    if (e == 0) {
        /* zero or subnormal: m * 2^-24, exact in f32 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13)); /* inf / nan */
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* IEEE round-to-nearest-even, subnormal halves produced, overflow -> inf,
 * NaN stays NaN (quiet bit set). Same bits as F16C's _cvtss_sh(x, 0). */
k_half k_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (k_half)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x477ff000u) /* >= 65520 rounds to inf */
        return (k_half)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* below 2^-14: subnormal half or zero */
        uint32_t e = ax >> 23;
        if (e < 102) return (k_half)sign; /* < 2^-25: rounds to zero */
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24: units of 2^-24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (k_half)(sign | q); /* q == 0x400 is the smallest normal: right */
    }
    uint32_t h = (ax - 0x38000000u) >> 13; /* rebias exponent 127 -> 15 */
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* carry may reach inf: right */
    return (k_half)(sign | h);
}

float k_bf16_to_f32(k_bf16 h) { return bits_f32((uint32_t)h << 16); }
