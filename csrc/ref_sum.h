/* ref_sum.h — the horizontal sums of the scalar references (*_ref.c): the
 * trees in which the reference build's vector code adds the f32 lanes of
 * its accumulators, written once. Private to csrc. */
#ifndef WOOLLY_REF_SUM_H
#define WOOLLY_REF_SUM_H

/* 8 lanes: ((0+4) + (2+6)) + ((1+5) + (3+7)) */
static inline float k_hsum8_ref(const float v[8]) {
    const float r0 = v[0] + v[4], r1 = v[1] + v[5], r2 = v[2] + v[6], r3 = v[3] + v[7];
    return (r0 + r2) + (r1 + r3);
}

/* 4 lanes: (0+2) + (1+3) */
static inline float k_hsum4_ref(const float v[4]) { return (v[0] + v[2]) + (v[1] + v[3]); }

#endif
