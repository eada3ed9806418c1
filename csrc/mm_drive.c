/* mm_drive.c — k_mm_run, the one driver of the quantized matrix products
 * (see mm_driver.h for the piece interface and the order of its phases).
 * Plain C: the pieces carry their ISA's target attribute; each call covers
 * whole rows, so calling them through pointers costs nothing measurable. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdlib.h>
#include <string.h>
#include "mm_driver.h"

/* The calling thread's buffer for decoded weights and side data
 * (MM_WX_BYTES + MM_SIDE_BLOCKS * MM_SIDE_WX), NULL if it cannot be had:
 * allocated on the thread's first use and kept for its life, so worker
 * threads neither allocate per call nor share one. */
static unsigned char *mm_group_buffer(void) {
    static _Thread_local unsigned char *buf;
    if (!buf) {
        void *p = NULL;
        if (posix_memalign(&p, 64, MM_WX_BYTES + MM_SIDE_BLOCKS * MM_SIDE_WX) == 0) buf = (unsigned char *)p;
    }
    return buf;
}

/* A thread's growable buffer: kept for the thread's life, grown (64-byte
 * aligned) when a call needs more than it has. */
typedef struct {
    void *buf;
    size_t cap;
} mm_tls_buffer;

/* b's buffer, at least `bytes`; NULL if it cannot be had */
static void *mm_tls_grow(mm_tls_buffer *b, size_t bytes) {
    if (b->cap < bytes) {
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes) != 0) return NULL;
        free(b->buf);
        b->buf = p;
        b->cap = bytes;
    }
    return b->buf;
}

/* The calling thread's buffer for unpacked rows (at least `bytes`), NULL
 * if it cannot be had. */
static void *mm_pack_buffer(size_t bytes) {
    static _Thread_local mm_tls_buffer b;
    return mm_tls_grow(&b, bytes);
}

/* The calling thread's buffer for prepared tokens (phase 2b, at least
 * `bytes`), NULL if it cannot be had. */
static void *mm_tprep_buffer(size_t bytes) {
    static _Thread_local mm_tls_buffer b;
    return mm_tls_grow(&b, bytes);
}

/* phase 2b: every token in near-equal groups of at most MM_TPREP_TOKS,
 * each prepared once for all rows; returns the number of tokens done */
static int64_t mm_tprep_groups(const mm_kernel *k, K_MM_TILE_PARAMS) {
    unsigned char *side = (unsigned char *)mm_tprep_buffer(k->tprep_bytes(n));
    if (!side) return 0;
    const char *wb = (const char *)w, *ab = (const char *)a;
    const int64_t ng = (ntok + MM_TPREP_TOKS - 1) / MM_TPREP_TOKS;
    int64_t t = 0;
    for (int64_t gi = 0; gi < ng; gi++) {
        const int g = (int)((ntok - t) / (ng - gi)); /* the larger groups last */
        k->tprep(g, n, ab + (size_t)t * a_row_bytes, a_row_bytes, side);
        for (int64_t r = 0; r < nr; r++) {
            float o[MM_TPREP_TOKS];
            k->piece(1, g, 1, n, wb + (size_t)r * row_bytes, row_bytes, (const char *)side, 0, o);
            for (int j = 0; j < g; j++) y[(t + j) * y_stride + r] = o[j];
        }
        t += g;
    }
    return t;
}

/* Whole groups of tokens through grp (rows of 1 to MM_SIDE_BLOCKS blocks),
 * the rows in chunks whose decoded weights fit wx (MM_WX_BYTES), and each
 * row in passes of MM_SEG_BLOCKS blocks, so a group's side data of a pass
 * stays in L1 across the chunk's rows; returns the number of tokens done. */
static int64_t mm_groups(const mm_group *grp, int64_t n, const char *wb, size_t row_bytes, int64_t nr, const char *ab,
                         size_t a_row_bytes, int64_t ntok, float *y, int64_t y_stride, unsigned char *wx, unsigned char *side) {
    _Alignas(64) float st[MM_GROUP_ROWS * MM_ST_FLOATS]; /* 24 KB */
    const int g = grp->nt;
    const int64_t nb = n / K_QKK;
    const size_t wx_row = (size_t)nb * grp->wx_block;
    const int raw = grp->rdot && ntok < (MM_RAW_GROUPS + 1) * g; /* few groups: dot the raw rows (mm_group.rdot) */
    /* raw: the last tokens, at least half a group, as a group padded with
     * zero activations (each token's lanes are its own: the same bits),
     * copied into wx, which raw mode does not use otherwise */
    const int64_t rem = ntok % g, full = ntok - rem;
    const int pad = raw && 2 * rem >= g;
    const size_t pad_row = (size_t)nb * sizeof(k_block_q8_k);
    if (pad) {
        memset(wx, 0, (size_t)g * pad_row);
        for (int64_t k = 0; k < rem; k++) memcpy(wx + (size_t)k * pad_row, ab + (size_t)(full + k) * a_row_bytes, pad_row);
    }
    int64_t chunk = raw ? MM_GROUP_ROWS : (int64_t)(MM_WX_BYTES / wx_row);
    if (chunk > MM_GROUP_ROWS) chunk = MM_GROUP_ROWS;
    if (chunk < nr) { /* equal chunks: each chunk's activation prep serves as many rows */
        const int64_t nchunks = (nr + chunk - 1) / chunk;
        chunk = (nr + nchunks - 1) / nchunks;
    }
    const size_t sb = grp->side_block;
    for (int64_t r0 = 0; r0 < nr; r0 += chunk) {
        const int64_t rn = nr - r0 < chunk ? nr - r0 : chunk;
        const char *wr = wb + (size_t)r0 * row_bytes;
        if (!raw) grp->wprep(n, wr, row_bytes, rn, wx);
        for (int64_t t = 0; t < full + (pad ? g : 0); t += g) {
            const int padded = t == full; /* the padded group */
            const size_t arb = padded ? pad_row : a_row_bytes;
            const char *at = padded ? (const char *)wx : ab + (size_t)t * a_row_bytes;
            const int nk = padded ? (int)rem : g;
            grp->prep(n, at, arb, side);
            for (int64_t i0 = 0; i0 < nb; i0 += MM_SEG_BLOCKS) {
                const int64_t i1 = nb - i0 < MM_SEG_BLOCKS ? nb : i0 + MM_SEG_BLOCKS;
                for (int64_t r = 0; r < rn; r++) {
                    float o[8];
                    const char *at0 = at + (size_t)i0 * sizeof(k_block_q8_k);
                    const unsigned char *sd0 = side + (size_t)i0 * sb;
                    if (raw)
                        grp->rdot(i0, i1, nb, wr + (size_t)r * row_bytes + (size_t)i0 * grp->w_block, at0, arb, sd0,
                                  st + r * grp->st_floats, o);
                    else
                        grp->dot(i0, i1, nb, wx + (size_t)r * wx_row + (size_t)i0 * grp->wx_block, at0, arb, sd0,
                                 st + r * grp->st_floats, o);
                    if (i1 == nb)
                        for (int k = 0; k < nk; k++) y[(t + k) * y_stride + r0 + r] = o[k];
                }
            }
        }
    }
    return pad ? ntok : full;
}

_Static_assert(8 * MM_SIDE_BLOCKS * sizeof(k_block_q8_k) <= MM_WX_BYTES, "a padded group of 8 tokens fits wx");

/* phase 1: a packed tile (nr a multiple of pack_rows) */
static void mm_packed(const mm_kernel *k, K_MM_TILE_PARAMS) {
    const char *wb = (const char *)w, *ab = (const char *)a;
    if (ntok >= 4 && k->unpack && k->unpacked) {
        const int64_t rows = nr < MM_PACK_TILE_ROWS ? nr : MM_PACK_TILE_ROWS;
        void *buf = mm_pack_buffer((size_t)rows * row_bytes);
        if (buf) { /* else the pieces below, same bits */
            for (int64_t r = 0; r < nr; r += rows) {
                const int64_t rn = nr - r < rows ? nr - r : rows;
                k->unpack(n, wb + (size_t)r * row_bytes, row_bytes, rn, buf);
                k->unpacked(n, buf, row_bytes, rn, a, a_row_bytes, ntok, y + r, y_stride);
            }
            return;
        }
    }
    const int g = k->pack_rows, batch = ntok >= 2;
    for (int64_t t = 0; t < ntok; t++)
        for (int64_t r = 0; r + g <= nr; r += g)
            k->piece(g, 1, batch, n, wb + (size_t)r * row_bytes, row_bytes, ab + (size_t)t * a_row_bytes, 0, y + t * y_stride + r);
}

/* phase 1b: a packed tile through pieces that write y (nr a multiple of
 * pack_rows) */
static void mm_packed_y(const mm_kernel *k, K_MM_TILE_PARAMS) {
    const char *wb = (const char *)w, *ab = (const char *)a;
    const int g = k->pack_rows;
    const int64_t nrg = nr / g * g;
    if (ntok < 2) {
        if (ntok == 1 && nrg > 0) k->pack_one((int)nrg, 1, n, wb, row_bytes, ab, a_row_bytes, y, y_stride);
        return;
    }
    const int64_t chunk = k->pack_chunk > 0 ? k->pack_chunk : g;
    for (int64_t r0 = 0; r0 < nrg; r0 += chunk) {
        const int rn = (int)(nrg - r0 < chunk ? nrg - r0 : chunk);
        const char *wr = wb + (size_t)r0 * row_bytes;
        int64_t t = 0;
        for (int i = 0; i < MM_PACK_TOKS && k->pack_toks[i] > 0; i++)
            for (const int T = k->pack_toks[i]; t + T <= ntok; t += T)
                k->pack_pieces[i](rn, T, n, wr, row_bytes, ab + (size_t)t * a_row_bytes, a_row_bytes, y + t * y_stride + r0, y_stride);
        for (; t < ntok; t++) k->pack_one(rn, 1, n, wr, row_bytes, ab + (size_t)t * a_row_bytes, a_row_bytes, y + t * y_stride + r0, y_stride);
    }
}

void k_mm_run(const mm_kernel *k, K_MM_TILE_PARAMS) {
    if (k->pack_one) {
        mm_packed_y(k, K_MM_TILE_ARGS);
        return;
    }
    if (k->pack_rows > 0) {
        mm_packed(k, K_MM_TILE_ARGS);
        return;
    }
    const char *wb = (const char *)w, *ab = (const char *)a;
    const int batch = ntok >= 2;
    int64_t t = 0;
    /* 2: groups on decoded weights */
    const mm_group *grp = k->group;
    if (grp && n >= K_QKK && n / K_QKK <= MM_SIDE_BLOCKS && (ntok >= grp->nt || (grp->rdot && 2 * ntok >= grp->nt))) {
        unsigned char *buf = mm_group_buffer(); /* on failure the tokens go through the pieces below */
        if (buf) t = mm_groups(grp, n, wb, row_bytes, nr, ab, a_row_bytes, ntok, y, y_stride, buf, buf + MM_WX_BYTES);
    }
    /* 2b: prepared token groups */
    if (k->tprep && ntok >= 2 && t == 0) t = mm_tprep_groups(k, K_MM_TILE_ARGS);
    /* 3: token groups x every row */
    for (int g = 8; g >= 4; g -= 4) {
        if (!(k->shapes & (g == 8 ? MM_T8 : MM_T4))) continue;
        if (k->tprep && a_row_bytes == 0) break; /* (1, g) with a_row_bytes 0 means a prepared group to these pieces */
        for (; t + g <= ntok; t += g) {
            const char *at = ab + (size_t)t * a_row_bytes;
            for (int64_t r = 0; r < nr; r++) {
                float o[8];
                k->piece(1, g, batch, n, wb + (size_t)r * row_bytes, row_bytes, at, a_row_bytes, o);
                for (int j = 0; j < g; j++) y[(t + j) * y_stride + r] = o[j];
            }
        }
    }
    /* 4: one token at a time */
    const int rows4 = (k->shapes & MM_R4) && !(batch && (k->shapes & MM_BATCH_1X1));
    for (; t < ntok; t++) {
        const char *at = ab + (size_t)t * a_row_bytes;
        float *yt = y + t * y_stride;
        int64_t r = 0;
        if (rows4)
            for (; r + 4 <= nr; r += 4) k->piece(4, 1, batch, n, wb + (size_t)r * row_bytes, row_bytes, at, 0, yt + r);
        if (k->piece)
            for (; r < nr; r++) k->piece(1, 1, batch, n, wb + (size_t)r * row_bytes, row_bytes, at, 0, yt + r);
        else
            for (; r < nr; r++) yt[r] = k->dot(n, wb + (size_t)r * row_bytes, at);
    }
}
