/* dispatch.c — the generic part of kernel dispatch: tables of the reference
 * kernels, lookups that ask the per-arch hooks (dispatch_<arch>.c) for SIMD
 * kernels, and the drivers that Go calls once per (op x row range). */
#include <string.h>
#include "attn_common.h"
#include "kernels.h"
#include "mm_driver.h"

/* ---- type facts ---- */

typedef struct { int block_elems, block_bytes, act; } type_info;

static type_info info_of(int type) {
    switch (type) {
    case K_F32:  return (type_info){1, 4, K_F32};
    case K_F16:  return (type_info){1, 2, K_F16};
    case K_BF16: return (type_info){1, 2, K_F32};
    case K_Q4_0: return (type_info){K_QK, sizeof(k_block_q4_0), K_Q8_0};
    case K_Q4_1: return (type_info){K_QK, sizeof(k_block_q4_1), K_Q8_0};
    case K_Q5_0: return (type_info){K_QK, sizeof(k_block_q5_0), K_Q8_0};
    case K_Q5_1: return (type_info){K_QK, sizeof(k_block_q5_1), K_Q8_0};
    case K_Q8_0: return (type_info){K_QK, sizeof(k_block_q8_0), K_Q8_0};
    case K_Q2_K: return (type_info){K_QKK, sizeof(k_block_q2_k), K_Q8_K};
    case K_Q3_K: return (type_info){K_QKK, sizeof(k_block_q3_k), K_Q8_K};
    case K_Q4_K: return (type_info){K_QKK, sizeof(k_block_q4_k), K_Q8_K};
    case K_Q5_K: return (type_info){K_QKK, sizeof(k_block_q5_k), K_Q8_K};
    case K_Q6_K: return (type_info){K_QKK, sizeof(k_block_q6_k), K_Q8_K};
    case K_Q8_K: return (type_info){K_QKK, sizeof(k_block_q8_k), K_Q8_K};
    case K_IQ4_NL: return (type_info){K_QK, sizeof(k_block_iq4_nl), K_Q8_0};
    case K_IQ4_XS: return (type_info){K_QKK, sizeof(k_block_iq4_xs), K_Q8_K};
    case K_MXFP4: return (type_info){K_QK, sizeof(k_block_mxfp4), K_Q8_0};
    default:     return (type_info){0, 0, -1};
    }
}

int k_act_type(int wtype) {
    return wtype == K_Q8_K ? -1 : info_of(wtype).act;
}

int64_t k_row_bytes(int type, int64_t n) {
    type_info ti = info_of(type);
    if (ti.block_elems == 0 || n < 0 || n % ti.block_elems != 0) return -1;
    return n / ti.block_elems * ti.block_bytes;
}

/* ---- reference tables ---- */

/* The ref tile is only there for a batch summed in another order than the
 * one-token dot (IQ4_NL, see kernels.h); it is also the fallback of a SIMD
 * impl without its own tile for such a type. */
#define REF(t, at) {.dequant = k_dequant_##t##_ref, .dot = k_dot_##t##_##at##_ref} /* k_dequant_<t>_ref, k_dot_<t>_<at>_ref */
static const k_type_kernels ref_kernels[K_TYPE_MAX] = {
    /* float formats; F16 is also an activation type */
    [K_F32] = REF(f32, f32), [K_BF16] = REF(bf16, f32),
    [K_F16] = {.dequant = k_dequant_f16_ref, .dot = k_dot_f16_f16_ref, .quantize = k_quantize_f16_ref},
    /* blocks of 32 against Q8_0 activations */
    [K_Q4_0] = REF(q4_0, q8_0), [K_Q4_1] = REF(q4_1, q8_0), [K_Q5_0] = REF(q5_0, q8_0),
    [K_Q5_1] = REF(q5_1, q8_0), [K_MXFP4] = REF(mxfp4, q8_0),
    [K_Q8_0] = {.dequant = k_dequant_q8_0_ref, .dot = k_dot_q8_0_q8_0_ref, .quantize = k_quantize_q8_0_ref},
    [K_IQ4_NL] = {.dequant = k_dequant_iq4_nl_ref, .dot = k_dot_iq4_nl_q8_0_ref, .mm_tile = k_mm_iq4_nl_ref},
    /* super-blocks of 256 against Q8_K activations */
    [K_Q2_K] = REF(q2_k, q8_k), [K_Q3_K] = REF(q3_k, q8_k), [K_Q4_K] = REF(q4_k, q8_k),
    [K_Q5_K] = REF(q5_k, q8_k), [K_Q6_K] = REF(q6_k, q8_k), [K_IQ4_XS] = REF(iq4_xs, q8_k),
    [K_Q8_K] = {.quantize = k_quantize_q8_k_ref},
};
#undef REF

static const k_type_kernels no_kernels; /* all NULL: an unknown type */

static const k_type_kernels *ref_entry(int type) {
    return type >= 0 && type < K_TYPE_MAX ? &ref_kernels[type] : &no_kernels;
}

static int simd_impl(int impl) { return impl > K_IMPL_REF && impl < K_IMPL_MAX; }

/* Entry `layer` of a SIMD impl's tables for `type` (k_arch_get_table: the
 * most specific set first), or NULL past the last layer, for ref and for
 * an unknown type. */
static const k_type_kernels *layer_entry(int impl, int type, int layer) {
    if (!simd_impl(impl) || type < 0 || type >= K_TYPE_MAX) return NULL;
    const k_type_kernels *t = k_arch_get_table(impl, layer);
    return t ? &t[type] : NULL;
}

/* The kernels of a SIMD impl for `type`, each member from the most specific
 * of its sets that has one; NULL members where none has. */
static k_type_kernels simd_kernels(int impl, int type) {
    k_type_kernels k = no_kernels;
    const k_type_kernels *e;
    for (int layer = 0; (e = layer_entry(impl, type, layer)) != NULL; layer++) {
        if (!k.dequant) k.dequant = e->dequant;
        if (!k.dot) k.dot = e->dot;
        if (!k.mm_tile) k.mm_tile = e->mm_tile;
        if (!k.quantize) k.quantize = e->quantize;
    }
    return k;
}

static const k_arch_ops ref_ops = {
    .sgemm = k_sgemm_ref, .attention = k_attention_ref, .rmsnorm = k_rmsnorm_ref,
    .rope = k_rope_ref, .swiglu = k_swiglu_ref,
    .add = k_add_ref, .scale = k_scale_ref, .attention_f16acc = k_attention_f16acc_ref,
    .attention_tiled = k_attention_tiled_ref, .attention_kvq = k_attention_kvq_ref,
};

/* ---- public lookups ---- */

/* SIMD impls: their own kernel or NULL (the drivers then use ref's) */
k_dequant_fn k_get_dequant(int impl, int type) {
    if (!ref_entry(type)->dequant) return NULL;
    return impl == K_IMPL_REF ? ref_entry(type)->dequant : simd_kernels(impl, type).dequant;
}

k_dot_fn k_get_dot(int impl, int wtype) {
    if (!ref_entry(wtype)->dot) return NULL;
    return impl == K_IMPL_REF ? ref_entry(wtype)->dot : simd_kernels(impl, wtype).dot;
}

k_quantize_fn k_get_quantize(int impl, int act_type) {
    if (!ref_entry(act_type)->quantize) return NULL;
    return impl == K_IMPL_REF ? ref_entry(act_type)->quantize : simd_kernels(impl, act_type).quantize;
}

/* with fallback to ref */
static k_dequant_fn dequant_fn(int impl, int type) {
    k_dequant_fn f = k_get_dequant(impl, type);
    return f ? f : ref_entry(type)->dequant;
}
static k_dot_fn dot_fn(int impl, int wtype) {
    k_dot_fn f = k_get_dot(impl, wtype);
    return f ? f : ref_entry(wtype)->dot;
}
static k_quantize_fn quantize_fn(int impl, int act) {
    k_quantize_fn f = k_get_quantize(impl, act);
    return f ? f : ref_entry(act)->quantize;
}
/* the tile kernel of k_matvec / k_matmul_q, or NULL for rows x the dot */
static k_mm_tile_fn mm_tile_fn(int impl, int wtype) {
    k_mm_tile_fn f = simd_kernels(impl, wtype).mm_tile;
    return f ? f : ref_entry(wtype)->mm_tile;
}

/* ops table member `m` of impl, or the ref one */
#define OP(impl, m) \
    ((simd_impl(impl) && k_arch_get_ops(impl) && k_arch_get_ops(impl)->m) ? k_arch_get_ops(impl)->m : ref_ops.m)

/* ---- drivers ---- */

int k_dequant(int impl, int type, const void *src, float *dst, int64_t n) {
    k_dequant_fn f = dequant_fn(impl, type);
    if (!f || k_row_bytes(type, n) < 0) return -1;
    if (n > 0) f(src, dst, n);
    return 0;
}

int k_quantize_act(int impl, int act_type, const float *x, void *dst, int64_t n) {
    if (k_row_bytes(act_type, n) < 0) return -1;
    if (act_type == K_F32) {
        if (n > 0) memcpy(dst, x, (size_t)n * sizeof(float));
        return 0;
    }
    k_quantize_fn f = quantize_fn(impl, act_type);
    if (!f) return -1;
    if (n > 0) f(x, dst, n);
    return 0;
}

int k_matvec(int impl, int wtype, int64_t n, const void *w, size_t row_bytes,
             const void *a, float *y, int64_t r0, int64_t r1) {
    k_dot_fn f = dot_fn(impl, wtype);
    if (!f || k_row_bytes(wtype, n) < 0) return -1;
    const char *wb = (const char *)w;
    k_mm_tile_fn tile = mm_tile_fn(impl, wtype);
    if (r1 <= r0) return 0;
    if (tile) { /* one token: the tile kernel runs several rows at a time */
        tile(n, wb + (size_t)r0 * row_bytes, row_bytes, r1 - r0, a, 0, 1, y + r0, 0);
    } else { /* rows x the dot, through the one driver */
        const mm_kernel k = {.dot = f};
        k_mm_run(&k, n, wb + (size_t)r0 * row_bytes, row_bytes, r1 - r0, a, 0, 1, y + r0, 0);
    }
    return 0;
}

/* Rows are taken in tiles of 16 to 64 rows, as many as fit MM_TILE_BYTES
 * (e.g. 64 x 1.2 KB for a 2048-wide Q4_K row, 32 x 8 KB for a 14336-wide
 * one), so a tile of weight rows stays in L2 while every token streams past
 * it, and the activation data a tile kernel prepares per group of tokens is
 * shared by many rows. 64-row tiles measured 3-10 % faster prompts than 16
 * (TinyLlama- and granite-8b-shaped Q4_K_M, AVX-512 and AVX2, 2 threads);
 * the byte cap keeps a tile within a 512 KB L2. */
#define MM_ROWS_MIN 16
#define MM_ROWS_MAX 64
#define MM_TILE_BYTES (256 * 1024)

/* rows per tile of k_matmul_q for rows of row_bytes bytes */
static int64_t mm_tile_rows(size_t row_bytes) {
    int64_t rows = (int64_t)(MM_TILE_BYTES / (row_bytes ? row_bytes : 1));
    return rows < MM_ROWS_MIN ? MM_ROWS_MIN : rows > MM_ROWS_MAX ? MM_ROWS_MAX : rows & ~(int64_t)3;
}

/* rows [r0, r1) in tiles of `rows` through tile, or rows x f where tile is NULL */
static void mm_rows(k_mm_tile_fn tile, k_dot_fn f, int64_t rows, int64_t n, const char *wb, size_t row_bytes,
                    int64_t r0, int64_t r1, const void *a, size_t a_row_bytes, int64_t ntok, float *y, int64_t y_stride) {
    for (int64_t rt = r0; rt < r1; rt += rows) {
        const int64_t nr = r1 - rt < rows ? r1 - rt : rows;
        const char *wt = wb + (size_t)rt * row_bytes;
        if (tile) {
            tile(n, wt, row_bytes, nr, a, a_row_bytes, ntok, y + rt, y_stride);
        } else {
            const mm_kernel k = {.dot = f};
            k_mm_run(&k, n, wt, row_bytes, nr, a, a_row_bytes, ntok, y + rt, y_stride);
        }
    }
}

int k_matmul_q(int impl, int wtype, int64_t n, const void *w, size_t row_bytes,
               int64_t r0, int64_t r1, const void *a, size_t a_row_bytes, int64_t ntok,
               float *y, int64_t y_stride) {
    k_dot_fn f = dot_fn(impl, wtype);
    if (!f || k_row_bytes(wtype, n) < 0) return -1;
    mm_rows(mm_tile_fn(impl, wtype), f, mm_tile_rows(row_bytes), n, (const char *)w, row_bytes, r0, r1, a, a_row_bytes,
            ntok, y, y_stride);
    return 0;
}

/* ---- packed matrices ---- */

/* The packed members of impl for type, all three from the most specific
 * set that has the type's dot (kernels.h), or none. */
static k_type_kernels packed_kernels(int impl, int type) {
    k_type_kernels k = no_kernels;
    const k_type_kernels *e;
    int layer = 0;
    while ((e = layer_entry(impl, type, layer)) != NULL && !e->dot) layer++;
    if (e && e->pack_rows > 0 && e->pack && e->mm_packed) {
        k.pack_rows = e->pack_rows;
        k.pack = e->pack;
        k.mm_packed = e->mm_packed;
    }
    return k;
}

int k_pack_rows(int impl, int wtype) { return packed_kernels(impl, wtype).pack_rows; }

int k_pack_same(int impl_a, int impl_b, int wtype) {
    const k_type_kernels a = packed_kernels(impl_a, wtype), b = packed_kernels(impl_b, wtype);
    return a.pack && a.pack == b.pack && a.pack_rows == b.pack_rows;
}

int k_pack(int impl, int wtype, int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst) {
    const k_type_kernels k = packed_kernels(impl, wtype);
    const int64_t rb = k_row_bytes(wtype, n);
    if (!k.pack || rb < 0 || (int64_t)row_bytes < rb || nrows < 0 || src == dst) return -1;
    const int64_t g = nrows / k.pack_rows * k.pack_rows;
    if (g > 0) k.pack(n, src, row_bytes, g, dst);
    if (nrows > g) memcpy((char *)dst + (size_t)g * row_bytes, (const char *)src + (size_t)g * row_bytes, (size_t)(nrows - g) * row_bytes);
    return 0;
}

/* checks of a packed product; *gend = the end of the packed rows */
static int packed_range(const k_type_kernels *k, int wtype, int64_t n, size_t row_bytes, int64_t nrows, int64_t r0, int64_t r1,
                        int64_t *gend) {
    const int64_t rb = k_row_bytes(wtype, n);
    if (!k->mm_packed || rb < 0 || (int64_t)row_bytes < rb || r0 < 0 || r1 < r0 || r1 > nrows) return -1;
    const int64_t g = k->pack_rows;
    if (r0 % g != 0 || (r1 % g != 0 && r1 != nrows)) return -1;
    *gend = nrows / g * g;
    return 0;
}

int k_matvec_packed(int impl, int wtype, int64_t n, const void *w, size_t row_bytes, int64_t nrows,
                    const void *a, float *y, int64_t r0, int64_t r1) {
    const k_type_kernels k = packed_kernels(impl, wtype);
    int64_t gend;
    if (packed_range(&k, wtype, n, row_bytes, nrows, r0, r1, &gend) != 0) return -1;
    const int64_t pe = r1 < gend ? r1 : gend;
    const char *wb = (const char *)w;
    if (pe > r0) k.mm_packed(n, wb + (size_t)r0 * row_bytes, row_bytes, pe - r0, a, 0, 1, y + r0, 0);
    if (r1 > pe && r1 > r0) return k_matvec(impl, wtype, n, w, row_bytes, a, y, pe > r0 ? pe : r0, r1);
    return 0;
}

int k_matmul_packed(int impl, int wtype, int64_t n, const void *w, size_t row_bytes, int64_t nrows,
                    int64_t r0, int64_t r1, const void *a, size_t a_row_bytes, int64_t ntok,
                    float *y, int64_t y_stride) {
    const k_type_kernels k = packed_kernels(impl, wtype);
    int64_t gend;
    if (packed_range(&k, wtype, n, row_bytes, nrows, r0, r1, &gend) != 0) return -1;
    const int64_t pe = r1 < gend ? r1 : gend;
    int64_t rows = mm_tile_rows(row_bytes) / k.pack_rows * k.pack_rows;
    if (rows < k.pack_rows) rows = k.pack_rows;
    if (pe > r0) mm_rows(k.mm_packed, NULL, rows, n, (const char *)w, row_bytes, r0, pe, a, a_row_bytes, ntok, y, y_stride);
    if (r1 > pe && r1 > r0) return k_matmul_q(impl, wtype, n, w, row_bytes, pe > r0 ? pe : r0, r1, a, a_row_bytes, ntok, y, y_stride);
    return 0;
}

void k_sgemm(int impl, int trans_b, int64_t m0, int64_t m1, int64_t N, int64_t K,
             const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
    OP(impl, sgemm)(trans_b, m0, m1, N, K, A, lda, B, ldb, C, ldc);
}

/* Software prefetch was measured and does not pay: 8 x 1M-element Q4_K
 * tensors (4.7 MB of blocks, 32 MB of f32 out), AVX2, one thread:
 * prefetch 0 -> 4.0-4.3 GB/s of blocks; 1 KB / 4 KB / 16 KB ahead -> 3.9-4.0
 * (BenchmarkDequantBulk, thread-CPU time). The loop is bound by writing the
 * f32 output, so prefetch_bytes is accepted and ignored. */
int k_dequant_bulk(int impl, const k_dequant_task *tasks, int ntasks, int64_t prefetch_bytes) {
    (void)prefetch_bytes;
    for (int i = 0; i < ntasks; i++) {
        const k_dequant_task *t = &tasks[i];
        k_dequant_fn f = dequant_fn(impl, t->type);
        if (!f || k_row_bytes(t->type, t->n) < 0) return -1;
        if (t->n > 0) f(t->src, t->dst, t->n);
    }
    return 0;
}

void k_attention(int impl, ATTN_F32_PARAMS) { OP(impl, attention)(ATTN_F32_ARGS); }

void k_attention_f16acc(int impl, ATTN_F16_PARAMS) { OP(impl, attention_f16acc)(ATTN_F16_ARGS); }
void k_attention_tiled(int impl, ATTN_F16_PARAMS) { OP(impl, attention_tiled)(ATTN_F16_ARGS); }

/* Scratch of the exact attention kernels, the largest any impl needs:
 * f16acc: per head of a pair, the accumulator plus scores / ms / vs of a
 * 64-position chunk;
 * tiled: a 64-position K tile (transposed) and V tile in f32, plus the
 * accumulators, M and S of a block of 32 query rows and one tile of scores. */
int64_t k_attention_f16acc_scratch(int64_t head_dim) { return 2 * (head_dim + 3 * 64); }
int64_t k_attention_tiled_scratch(int64_t head_dim) { return (2 * 64 + 32) * head_dim + 2 * 32 + 64; }

/* kvq: the accumulator, a dequantized V row and Q in K's vec-dot type (at
 * most head_dim floats: f16 values as f32, or q8_0's 34 bytes per 32) */
int64_t k_attention_kvq_scratch(int64_t head_dim) { return 3 * head_dim; }

static int kv_type(int t) { return t == K_F16 || t == K_Q8_0 || t == K_Q4_0; }

int k_attention_kvq(int impl, ATTN_KVQ_PARAMS_NOFN) {
    if (!kv_type(ktype) || !kv_type(vtype) || (ktype == K_F16 && vtype == K_F16) || head_dim <= 0 || head_dim % K_QK != 0)
        return -1;
    const k_attn_kvq_fns f = {.q8 = quantize_fn(impl, K_Q8_0), .kdot = ktype != K_F16 ? dot_fn(impl, ktype) : NULL,
                              .vdeq = dequant_fn(impl, vtype)};
    OP(impl, attention_kvq)(ATTN_KVQ_ARGS_NOFN, &f);
    return 0;
}

/* k_kv_store: q8_0 through the impl's activation quantizer (the
 * reference's CPU conversion), q4_0 through its scalar one */
int k_kv_store(int impl, int type, const float *x, void *dst, int64_t n) {
    if (type == K_Q4_0) {
        if (n % K_QK != 0) return -1;
        k_quantize_q4_0_ref(x, dst, n);
        return 0;
    }
    if (type != K_F16 && type != K_Q8_0) return -1;
    return k_quantize_act(impl, type, x, dst, n);
}

void k_rmsnorm(int impl, float *out, const float *x, const float *w, int64_t n, float eps) {
    OP(impl, rmsnorm)(out, x, w, n, eps);
}
void k_rope(int impl, float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
            const float *cos_t, const float *sin_t, int neox) {
    OP(impl, rope)(x, n_heads, head_dim, n_rot, cos_t, sin_t, neox);
}
void k_rope_rows(int impl, float *x, int64_t ntok, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                 const float *cos_t, const float *sin_t, int neox) {
    const k_rope_fn f = OP(impl, rope);
    const int64_t half = n_rot / 2, stride = n_heads * head_dim;
    for (int64_t t = 0; t < ntok; t++) f(x + t * stride, n_heads, head_dim, n_rot, cos_t + t * half, sin_t + t * half, neox);
}
void k_swiglu(int impl, float *out, const float *gate, const float *up, int64_t ntok, int64_t n, int64_t i0, int64_t i1) {
    const k_swiglu_fn f = OP(impl, swiglu);
    for (int64_t t = 0; t < ntok; t++) f(out + t * n, gate + t * n, up + t * n, n, i0, i1);
}
void k_add(int impl, float *out, const float *a, const float *b, int64_t n) { OP(impl, add)(out, a, b, n); }
void k_scale(int impl, float *x, float s, int64_t n) { OP(impl, scale)(x, s, n); }

void k_rmsnorm_rows(int impl, float *out, const float *x, const float *w, int64_t rows, int64_t n, float eps) {
    const k_rmsnorm_fn f = OP(impl, rmsnorm);
    for (int64_t r = 0; r < rows; r++) f(out + r * n, x + r * n, w, n, eps);
}
/* The element-wise ops of ffn_ref.c have one portable version for every set. */
void k_geglu(int impl, float *out, const float *gate, const float *up, int64_t ntok, int64_t n, int64_t i0, int64_t i1) {
    (void)impl;
    for (int64_t t = 0; t < ntok; t++) k_geglu_ref(out + t * n, gate + t * n, up + t * n, n, i0, i1);
}
void k_softcap(int impl, float *x, int64_t n, float cap) { (void)impl; k_softcap_ref(x, n, cap); }
void k_softmax_exact(int impl, float *x, int64_t n) { (void)impl; k_softmax_exact_ref(x, n); }
void k_swiglu_oai(int impl, float *out, const float *gate, const float *up, int64_t n, float alpha, float limit) {
    (void)impl;
    k_swiglu_oai_ref(out, gate, up, n, alpha, limit);
}
