/* gdn_row.h — gdn_row of gdn_driver.h for the vector kernel sets, written
 * once over one per-ISA vector pass: the pass covers the first np
 * elements (the whole 64-lane blocks), the lanes after them are done here
 * in scalar code in the order of gdn.h. Included by gdn_<isa>.c before
 * gdn_driver.h, after it defines GDN_FN and
 *
 *   float gdn_vpass(upd, m, k, r, np, c)   over i < np (np > 0, a multiple
 *            of 64): x = upd ? fmaf(k[i], c, m[i]) : m[i] * c, stored to
 *            m[i]; returns dot(x, r) (the 64 slots and the tree of gdn.h)
 *
 * (always_inline; upd a constant). */
#ifndef WOOLLY_GDN_ROW_H
#define WOOLLY_GDN_ROW_H

#include <math.h>
#include "gdn.h"

GDN_FN static inline __attribute__((always_inline)) float gdn_row(float *m, const float *k, const float *q, int64_t S,
                                                                  float decay, float vj, float b, float scale) {
    const int64_t np = S & ~(int64_t)63;
    float d = 0, o = 0;
    if (np > 0) d = gdn_vpass(0, m, k, k, np, decay);
    for (int64_t i = np; i < S; i++) {
        m[i] = m[i] * decay;
        const float p = m[i] * k[i];
        d += p;
    }
    const float dj = (vj - d) * b;
    if (np > 0) o = gdn_vpass(1, m, k, q, np, dj);
    for (int64_t i = np; i < S; i++) {
        m[i] = fmaf(k[i], dj, m[i]);
        const float p = m[i] * q[i];
        o += p;
    }
    return o * scale;
}

#endif
