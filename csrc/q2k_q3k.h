/*
 * q2k_q3k.h — scalar facts of the Q2_K / Q3_K block layouts shared by the
 * reference, x86 and NEON kernels of package csrc (private; the dotprod
 * package keeps its own copy, it may not include files from here).
 *
 * Both formats: 256 elements in 2 halves of 128. Half h keeps the two low
 * bits of element 128h + 32k + l (k = 0..3, l = 0..31) at bits 2k, 2k+1 of
 * qs[32h + l]. Element e belongs to 16-element group e / 16, which has its
 * own scale:
 *   Q2_K  scales[g]: low nibble the scale, high nibble the min;
 *         value = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4),  q = 0..3
 *   Q3_K  the third bit of element 128h + 32k + l is bit 4h + k of hmask[l];
 *         q = low2 + 4 * bit - 4 (-4..3); value = d * (s[g] - 32) * q, s[g]
 *         6 bits: low nibble (scales[g % 8] >> 4 * (g / 8)) & 15, top two
 *         bits (scales[8 + g % 4] >> 2 * (g / 4)) & 3.
 * Vector v = 4h + k is the 32 elements 32v .. 32v + 31 (groups 2v, 2v + 1).
 */
#ifndef WOOLLY_Q2K_Q3K_H
#define WOOLLY_Q2K_Q3K_H

#include <string.h>
#include "kernels.h"

/* The 16 signed Q3_K scales (s[g] - 32) in group order, four groups per
 * 32-bit word at a time: word q of the result holds groups 4q .. 4q+3, whose
 * low nibbles come from scales[0..3] (q = 0, 2) or scales[4..7] (q = 1, 3),
 * shifted by 4 for q >= 2, and whose top bits are bits 2q, 2q+1 of
 * scales[8..11]. */
static inline void k_q3k_scales16(const uint8_t *scales, int8_t out[16]) {
    uint32_t w[3], r[4];
    memcpy(w, scales, 12);
    for (int q = 0; q < 4; q++) {
        const uint32_t lo = (w[q & 1] >> (4 * (q >> 1))) & 0x0f0f0f0fu;
        const uint32_t hi = (w[2] >> (2 * q)) & 0x03030303u;
        r[q] = lo | (hi << 4);
    }
    uint8_t u[16];
    memcpy(u, r, 16);
    for (int g = 0; g < 16; g++) out[g] = (int8_t)(u[g] - 32);
}

#endif
