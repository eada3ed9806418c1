/* mm_driver.h — the one driver of the quantized matrix products: the loops
 * over the rows and tokens of a k_matmul_q / k_matvec tile, written once
 * (k_mm_run, csrc/mm_drive.c) over per-(type, ISA) pieces, as attn_driver.h
 * is for attention. Every x86 tile kernel (mm_<isa>_amd64.c,
 * packed_<isa>_amd64.c, q2k_q3k_<isa>_amd64.c, iq4_*, mxfp4_*, the float
 * tiles) and the generic driver's rows-x-dot fallback (dispatch.c, which
 * the ref set runs) is one k_mm_run call with its mm_kernel. A file that
 * writes tile kernels includes this header, defines its pieces (static
 * functions with its ISA's target attribute) and one mm_kernel per type.
 *
 * ---- The piece interface (k_mm_piece_fn, kernels.h) ----
 *   piece(rows, toks, batch, n, w, row_bytes, a, a_row_bytes, out)
 * computes `rows` weight rows (w, w + row_bytes, ...) times `toks` tokens
 * (a, a + a_row_bytes, ...) of n elements into out[k * rows + r]; batch is 1
 * when the tile call has two or more tokens. k_mm_run calls it only with
 * the shapes its mm_kernel names:
 *   (1, 1)        always (one row x one token: the set's dot)
 *   (4, 1)        MM_R4: four rows x one token (k_matvec's shape)
 *   (1, 4)        MM_T4: one row x a group of 4 tokens
 *   (1, 8)        MM_T8: one row x a group of 8 tokens
 *   (G, 1)        pack_rows = G: one packed group of G rows x one token
 *                 (w at the group, in the set's interleaved layout; these
 *                 kernels see packed weights only, in no other shape;
 *                 the arm64 packed sets use mm_pack_piece_fn instead)
 * Each shape gives, per (row, token), the bits of the (1, 1) piece with the
 * same batch flag; only IQ4_NL's pieces depend on batch (kernels.h).
 *
 * ---- What k_mm_run does with them, in this order ----
 * 1. packed (pack_rows > 0): four or more tokens unpack the tile in chunks
 *    of up to MM_PACK_TILE_ROWS rows into a per-thread buffer and run the
 *    set's unpacked tile kernel (`unpacked`) over them; fewer tokens (or no
 *    buffer) run the (G, 1) piece per token and group.
 *    1b. packed with pack_one (arm64): one token is one call of pack_one
 *    over every row; a batch walks the rows in chunks of pack_chunk rows
 *    and, per chunk, the tokens in pieces of pack_toks[0] tokens
 *    (pack_pieces[0]) as long as they fit, then pack_toks[1], ..., then
 *    the rest one at a time through pack_one over the chunk.
 * 2. group (decoded weights, mm_group below): whole groups of group->nt
 *    tokens, for K-quant rows of 1 to MM_SIDE_BLOCKS blocks (up to
 *    MM_RAW_GROUPS groups on the raw rows where the group has rdot; there
 *    the last nt/2 to nt-1 tokens go as a group padded with zeros).
 * 2b. token prep (tprep, a batch only): the tokens in ceil(ntok / 8)
 *    groups of near-equal size (2 to 8 tokens; 9 tokens are 5 + 4), each
 *    group converted once by tprep into the calling thread's buffer, then
 *    the (1, g) piece per row with a = that buffer (a_row_bytes 0): the
 *    piece reads the prepared form, not activation rows. Every token is
 *    done here unless the buffer cannot be had (then phases 3 and 4).
 * 3. token groups: the tokens left, in groups of 8 (MM_T8) then 4 (MM_T4),
 *    each group against every row of the tile (rows stay in L2, the group's
 *    activations in L1).
 * 4. the tokens left one at a time: four rows per call (MM_R4; in a batch
 *    only without MM_BATCH_1X1), then row by row: the (1, 1) piece, or
 *    `dot` for a kernel without a piece.
 *
 * The arm64 tiles are on it too: dot_body_arm64.h's pieces (the (1, 4),
 * (4, 1) and (1, 1) shapes, for both NEON sets), q2k_q3k_neon_arm64.c's,
 * the IQ4 / MXFP4 ones (MM_BARE), and the packed sets of
 * pack_neon_dot_arm64.c and pack_neon_i8mm_arm64.c through phase 1b's
 * packed pieces (mm_pack_piece_fn below). No other file loops over the
 * rows and tokens of a tile. */
#ifndef WOOLLY_MM_DRIVER_H
#define WOOLLY_MM_DRIVER_H

#include "kernels.h"

/* shapes of a piece besides (1, 1) */
#define MM_R4 1        /* (4, 1) */
#define MM_T4 2        /* (1, 4) */
#define MM_T8 4        /* (1, 8) */
#define MM_BATCH_1X1 8 /* a batch's leftover tokens row by row, never (4, 1) (IQ4_NL's batch order) */

/* A group kernel on decoded weights (Q4_K and Q6_K on x86): wprep decodes
 * what depends on the weights alone (per block, wx_block bytes; row r of
 * the chunk at r * blocks * wx_block) once per chunk of rows; prep writes
 * what depends on the activations alone (per block, side_block bytes) once
 * per group of nt tokens and chunk; dot then runs one decoded row against
 * the group with them, a range of blocks at a time: out[k] = dot(row,
 * token k), k < nt, after the last range. Rows are K-quant rows (blocks of
 * K_QKK) against Q8_K activations. The chunk's rows stay in L2 (decoded,
 * so no group of tokens unpacks nibbles and scales again), each pass of
 * MM_SEG_BLOCKS blocks keeps a group's side data in L1 across the rows. */
#define MM_SIDE_WX 2560          /* side_block at most */
#define MM_SIDE_BLOCKS 64        /* rows up to 64 blocks (16384 K-quant elements); longer ones skip the group kernel */
#define MM_WX_BYTES (384 * 1024) /* decoded weights of a chunk of rows */
#define MM_SEG_BLOCKS 8          /* blocks per pass over a chunk's rows: 8 tokens' side data of 8 blocks stay in L1 */
#define MM_GROUP_ROWS 64         /* rows per chunk at most (their accumulators are on the stack) */
#define MM_ST_FLOATS 96          /* st_floats at most */
/* Groups of tokens per tile up to which a group with rdot dots the raw
 * rows instead of decoding them (AVX-512 Q4_K / Q6_K, out-of-cache rows,
 * one thread, BenchmarkMatMulQSmall: 16 tokens 41-43 -> 53 cpu-GB/s Q4_K,
 * 46-48 -> 68 Q6_K; at 64 tokens the decoded copy is ahead, 53-55 vs 50). */
#define MM_RAW_GROUPS 2
/* Bytes ahead of the block it reads a raw-row group kernel prefetches:
 * the loop is compute bound, and without it every new line of the tile
 * stalls it (AVX-512 Q4_K, 8 tokens: 31 cpu-GB/s without, 44 at 512
 * bytes, 50 at 1 KB, 53 at 2 KB, 48-50 at 4 KB). */
#define MM_PF_RAW 2048
typedef struct {
    int nt; /* tokens per group, at most 8 */
    size_t side_block;
    void (*prep)(int64_t n, const char *a, size_t a_row_bytes, void *side);
    /* blocks [i0, i1) of nb (w, a, side point at block i0); st: the row's
     * st_floats f32 accumulators, carried from one range to the next (read
     * when i0 > 0, written when i1 < nb); out written when i1 == nb */
    void (*dot)(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes, const void *side,
                float *st, float *out);
    int st_floats; /* at most MM_ST_FLOATS, a multiple of 16 (aligned loads) */
    size_t wx_block;
    void (*wprep)(int64_t n, const void *w, size_t row_bytes, int64_t nr, void *wx);
    /* optional: dot on the raw rows (w at block i0 of the row, blocks of
     * w_block bytes), the same bits; used instead of wprep + dot when the
     * tile has at most MM_RAW_GROUPS groups of tokens, where the decoded
     * copy of a chunk would be shared by too few groups to pay */
    void (*rdot)(int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes, const void *side,
                 float *st, float *out);
    size_t w_block;
} mm_group;
/* the parameters of mm_group.dot and .rdot and their names as arguments,
 * for the pieces' definitions */
#define MM_GDOT_PARAMS                                                                                         \
    int64_t i0, int64_t i1, int64_t nb, const void *w, const char *a, size_t a_row_bytes, const void *side,   \
        float *st, float *out
#define MM_GDOT_ARGS i0, i1, nb, w, a, a_row_bytes, side, st, out

/* A packed piece that writes the tile itself (the arm64 packed sets):
 * `rows` rows (a multiple of G; w at the first group, groups G * row_bytes
 * apart) x `toks` tokens (a_row_bytes apart) into y[k * y_stride + r].
 * Writing y directly, one function per shape (no dispatch inside) and the
 * one-token piece over many groups keep the calls' cost off the Apple
 * proxy's figures: a packed group is short (4 rows x 1 token of a
 * 2048-element Q4_K row is ~2600 instructions). */
typedef void (*mm_pack_piece_fn)(int rows, int toks, int64_t n, const char *w, size_t row_bytes, const char *a,
                                 size_t a_row_bytes, float *y, int64_t y_stride);
#define MM_PACK_TOKS 4 /* batch pieces of a packed set at most */

/* Token prep (phase 2b): writes what the (1, g) piece needs of g tokens
 * (a, a_row_bytes apart) of n elements into side (tprep_bytes(n) bytes at
 * most for any g <= MM_TPREP_TOKS; 64-byte aligned). */
typedef void (*mm_tprep_fn)(int g, int64_t n, const char *a, size_t a_row_bytes, void *side);
#define MM_TPREP_TOKS 8

/* rows per unpacked chunk of a packed tile (a multiple of every G) */
#define MM_PACK_TILE_ROWS 64

/* One tile kernel: its pieces and what they cover (see above). */
typedef struct {
    k_mm_piece_fn piece;   /* NULL: every (row, token) through dot */
    k_dot_fn dot;          /* the one-token dot, where piece is NULL */
    int shapes;            /* MM_R4 | MM_T4 | MM_T8 | MM_BATCH_1X1 */
    const mm_group *group; /* NULL: none */
    int pack_rows;         /* G > 0: w is packed in groups of G rows (nr a multiple of G) */
    k_pack_fn unpack;      /* packed -> rows (k_pack_kernel's form), for batches */
    k_mm_tile_fn unpacked; /* the set's tile over the unpacked rows */
    /* packed pieces writing y (phase 1b, where pack_one is set) */
    mm_pack_piece_fn pack_one;                    /* (any multiple of G rows, 1 token) */
    int pack_chunk;                               /* rows per chunk of a batch, a multiple of G (0: G) */
    int pack_toks[MM_PACK_TOKS];                  /* token counts, descending; 0 ends the list early */
    mm_pack_piece_fn pack_pieces[MM_PACK_TOKS];   /* (chunk rows, pack_toks[i]) */
    /* phase 2b (NULL: none): the prep, and its buffer size for n elements */
    mm_tprep_fn tprep;
    size_t (*tprep_bytes)(int64_t n);
} mm_kernel;

/* The mm_kernel of a bare piece of the four shapes (1, 1), (4, 1), (1, 4)
 * and a batch's leftover tokens row by row (the IQ4 and MXFP4 tiles). */
#define MM_BARE(p) {.piece = (p), .shapes = MM_R4 | MM_T4 | MM_BATCH_1X1}

/* the tile y[t * y_stride + r] = dot(row r, token t), r < nr, t < ntok */
void k_mm_run(const mm_kernel *k, K_MM_TILE_PARAMS);

#endif
