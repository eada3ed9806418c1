/*
 * sdot_arm64.h — the one dotprod primitive of the arm64 kernels, SDOT, for
 * the *_neon_dot_arm64.c files of package csrc (impl "neon-dotprod"; the
 * plain-NEON kernels build the same lanes from widening multiplies).
 *
 *   k_sdot(acc, a, b)  acc (int32x4) += the 16 int8 products a[i]*b[i],
 *                      lane l getting the products of elements 4l..4l+3
 *
 * It is inline assembly, so the package needs no -march flag (cgo flags are
 * per package, and the plain-NEON kernels beside these must not use the
 * extension): gcc takes the instruction after an `.arch` line; clang takes it
 * inside functions with target("dotprod"), which the including file gives
 * all its functions with K_DOTPROD_BEGIN / K_DOTPROD_END. dispatch_arm64.c
 * hands these kernels out only when the CPU reports dotprod.
 */
#ifndef WOOLLY_SDOT_ARM64_H
#define WOOLLY_SDOT_ARM64_H

#include <arm_neon.h>

#if defined(__clang__)
#define K_DOTPROD_BEGIN _Pragma("clang attribute push(__attribute__((target(\"dotprod\"))), apply_to = function)")
#define K_DOTPROD_END _Pragma("clang attribute pop")
#define K_SDOT_ASM "sdot %0.4s, %1.16b, %2.16b"
#else
#define K_DOTPROD_BEGIN
#define K_DOTPROD_END
#define K_SDOT_ASM ".arch armv8.2-a+dotprod\n\tsdot %0.4s, %1.16b, %2.16b"
#endif

K_DOTPROD_BEGIN
static inline __attribute__((always_inline)) int32x4_t k_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    __asm__(K_SDOT_ASM : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}

/* SDOT by element: k_sdot_lane<i>(acc, a, b) adds to lane l of acc the
 * products of a[4l..4l+3] with b[4i..4i+3] (the same 4 bytes of b for
 * every lane), i = 0..3. */
#if defined(__clang__)
#define K_SDOT_LANE_ASM(i) "sdot %0.4s, %1.16b, %2.4b[" #i "]"
#else
#define K_SDOT_LANE_ASM(i) ".arch armv8.2-a+dotprod\n\tsdot %0.4s, %1.16b, %2.4b[" #i "]"
#endif
#define K_SDOT_LANE_FN(i)                                                                                 \
    static inline __attribute__((always_inline)) int32x4_t k_sdot_lane##i(int32x4_t acc, int8x16_t a, int8x16_t b) { \
        __asm__(K_SDOT_LANE_ASM(i) : "+w"(acc) : "w"(a), "w"(b));                                         \
        return acc;                                                                                       \
    }
K_SDOT_LANE_FN(0)
K_SDOT_LANE_FN(1)
K_SDOT_LANE_FN(2)
K_SDOT_LANE_FN(3)
#undef K_SDOT_LANE_FN
K_DOTPROD_END

#endif
