/*
 * kernels.h — the one public header of Woolly's C kernels.
 *
 * Naming: k_<op>_<type(s)>_<impl>, impl in {ref, avx2, avx512, neon, neon_dot}.
 *   ref       portable scalar C, the reference every SIMD kernel is tested against
 *   avx2      x86-64 AVX2 + FMA + F16C, enabled per function with target attributes
 *   avx512    x86-64 AVX-512 F/BW/VL + VNNI: VNNI integer dots and k_matmul_q
 *             tiles, the avx2 kernels for everything else
 *   neon      arm64 Advanced SIMD (every arm64 CPU)
 *   neon_dot  arm64 with the dotprod extension: SDOT through k_sdot, one
 *             inline-assembly primitive (sdot_arm64.h), no -march flag
 *
 * Generic drivers (k_matvec, k_matmul_q, k_sgemm, ...) take an impl id and pick
 * the per-format function from a table, so Go crosses the cgo boundary once
 * per (op x row range x worker). All functions are pure: no globals are
 * written, so concurrent calls on disjoint outputs are safe.
 *
 * Block layouts are facts of the GGUF/ggml format (see docs/formats.md).
 */
#ifndef WOOLLY_KERNELS_H
#define WOOLLY_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tensor type ids (ggml) ---- */
enum {
    K_F32 = 0, K_F16 = 1, K_Q4_0 = 2, K_Q4_1 = 3, K_Q5_0 = 6, K_Q5_1 = 7,
    K_Q8_0 = 8, K_Q4_K = 12, K_Q5_K = 13, K_Q6_K = 14, K_Q8_K = 15, K_BF16 = 30,
    K_Q2_K = 10, K_Q3_K = 11, K_IQ4_NL = 20, K_IQ4_XS = 23, K_MXFP4 = 39,
    K_TYPE_MAX = 40
};

/* ---- implementation ids ---- */
enum { K_IMPL_REF = 0, K_IMPL_AVX2 = 1, K_IMPL_NEON = 2, K_IMPL_NEON_DOT = 3, K_IMPL_AVX512 = 4,
       K_IMPL_NEON_I8MM = 5, K_IMPL_MAX = 6 };

#define K_QK 32    /* elements per block of the 32-element formats */
#define K_QKK 256  /* elements per super-block of the K-quants */

typedef uint16_t k_half; /* IEEE binary16 bits */
typedef uint16_t k_bf16; /* bfloat16 bits */

typedef struct { k_half d; uint8_t qs[16]; } k_block_q4_0;
typedef struct { k_half d; k_half m; uint8_t qs[16]; } k_block_q4_1;
typedef struct { k_half d; uint8_t qh[4]; uint8_t qs[16]; } k_block_q5_0;
typedef struct { k_half d; k_half m; uint8_t qh[4]; uint8_t qs[16]; } k_block_q5_1;
typedef struct { k_half d; int8_t qs[32]; } k_block_q8_0;
/* Q2_K: 16 groups of 16; scales[g] low nibble = scale, high nibble = min of group g */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; k_half d; k_half dmin; } k_block_q2_k;
/* Q3_K: 2 low bits in qs, the 3rd bit in hmask; 16 6-bit scales (offset 32) packed in scales[12] */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; k_half d; } k_block_q3_k;
typedef struct { k_half d; k_half dmin; uint8_t scales[12]; uint8_t qs[128]; } k_block_q4_k;
typedef struct { k_half d; k_half dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } k_block_q5_k;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; k_half d; } k_block_q6_k;
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } k_block_q8_k;
/* IQ4_NL: 32 elements, qs as in Q4_0 (element j < 16: low nibble of qs[j],
 * j+16: its high nibble); value = d * k_iq4nl_values[nibble]. */
typedef struct { k_half d; uint8_t qs[16]; } k_block_iq4_nl;
/* IQ4_XS: 256 elements in 8 sub-blocks of 32, each laid out like an IQ4_NL
 * block in qs[16j .. 16j+15]; sub-block j has the 6-bit scale
 * (scales_l[j/2] >> 4*(j%2) & 15) | (scales_h >> 2j & 3) << 4, and
 * value = d * (scale - 32) * k_iq4nl_values[nibble]. */
typedef struct { k_half d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } k_block_iq4_xs;
/* MXFP4 (OCP microscaling FP4): 32 elements, one E8M0 exponent byte e, qs
 * as in Q4_0 (element j < 16: low nibble of qs[j], j+16: its high nibble).
 * Each nibble is an E2M1 code; ggml stores its value doubled as an integer
 * (k_mxfp4_values) and halves the scale instead: value =
 * k_e8m0_half(e) * k_mxfp4_values[nibble]. */
typedef struct { uint8_t e; uint8_t qs[16]; } k_block_mxfp4;

_Static_assert(sizeof(k_block_q4_0) == 18, "q4_0 block is 18 bytes");
_Static_assert(sizeof(k_block_q4_1) == 20, "q4_1 block is 20 bytes");
_Static_assert(sizeof(k_block_q5_0) == 22, "q5_0 block is 22 bytes");
_Static_assert(sizeof(k_block_q5_1) == 24, "q5_1 block is 24 bytes");
_Static_assert(sizeof(k_block_q8_0) == 34, "q8_0 block is 34 bytes");
_Static_assert(sizeof(k_block_q2_k) == 84, "q2_K block is 84 bytes");
_Static_assert(sizeof(k_block_q3_k) == 110, "q3_K block is 110 bytes");
_Static_assert(sizeof(k_block_q4_k) == 144, "q4_K block is 144 bytes");
_Static_assert(sizeof(k_block_q5_k) == 176, "q5_K block is 176 bytes");
_Static_assert(sizeof(k_block_q6_k) == 210, "q6_K block is 210 bytes");
_Static_assert(sizeof(k_block_q8_k) == 292, "q8_K block is 292 bytes");
_Static_assert(sizeof(k_block_iq4_nl) == 18, "iq4_nl block is 18 bytes");
_Static_assert(sizeof(k_block_iq4_xs) == 136, "iq4_xs block is 136 bytes");
_Static_assert(sizeof(k_block_mxfp4) == 17, "mxfp4 block is 17 bytes");

/* The 16 levels of IQ4_NL / IQ4_XS quants (ggml's kvalues_iq4nl). */
extern const int8_t k_iq4nl_values[16];

/* The 16 E2M1 codes times 2 (ggml's kvalues_mxfp4): code c has sign bit
 * c >> 3 and magnitude {0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7]. */
extern const int8_t k_mxfp4_values[16];

/* Half the value of an E8M0 exponent byte, 2^(e - 128), as ggml computes
 * it: e = 0 and 1 give the f32 subnormals 2^-128 and 2^-127; e = 255, which
 * the OCP format reserves for NaN, gives 2^127 (ggml does not special-case
 * it; its tensor validation rejects such blocks instead). Never NaN or inf. */
static inline float k_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (uint32_t)0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Scale of IQ4_XS sub-block j (0..7), already minus 32: -32 .. 31. */
static inline int k_iq4xs_scale(const k_block_iq4_xs *b, int j) {
    return (((b->scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b->scales_h >> (2 * j)) & 3) << 4)) - 32;
}

/* All 8 scales of an IQ4_XS block at once: byte j of the result is the
 * 6-bit scale of sub-block j (0..63, not yet minus 32). The nibbles of
 * scales_l and the 2-bit fields of scales_h are spread to one per byte. */
static inline uint64_t k_iq4xs_scales8(const k_block_iq4_xs *b) {
    uint64_t l = (uint64_t)b->scales_l[0] | (uint64_t)b->scales_l[1] << 8 | (uint64_t)b->scales_l[2] << 16 |
                 (uint64_t)b->scales_l[3] << 24;
    l = (l | l << 16) & 0x0000FFFF0000FFFFull;
    l = (l | l << 8) & 0x00FF00FF00FF00FFull;
    l = (l | l << 4) & 0x0F0F0F0F0F0F0F0Full;
    uint64_t h = b->scales_h;
    h = (h | h << 24) & 0x000000FF000000FFull;
    h = (h | h << 12) & 0x000F000F000F000Full;
    h = (h | h << 6) & 0x0303030303030303ull;
    return l | h << 4;
}

/* ---- scalar conversions (portable, exact) ---- */
float  k_f16_to_f32(k_half h);
k_half k_f32_to_f16(float f);           /* round to nearest even, subnormals kept */
float  k_bf16_to_f32(k_bf16 h);

/* ---- per-format kernels ------------------------------------------------
 * n is always the number of elements and a whole number of blocks of the
 * weight format (callers check). Each exists as _ref and, where listed in the
 * dispatch tables, _avx2 / _neon / _neon_dot with the same signature.
 *
 *   void  k_dequant_<t>_<impl>(const void *src, float *dst, int64_t n);
 *   float k_dot_<w>_<a>_<impl>(int64_t n, const void *w, const void *a);
 *   void  k_quantize_<a>_<impl>(const float *x, void *dst, int64_t n);
 *
 * <t>  in f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k iq4_nl iq4_xs mxfp4
 * <w>_<a> pairs: q4_k_q8_k q5_k_q8_k q6_k_q8_k q4_0_q8_0 q4_1_q8_0 q5_0_q8_0
 *               q5_1_q8_0 q8_0_q8_0 iq4_nl_q8_0 iq4_xs_q8_k mxfp4_q8_0 f16_f16 f32_f32 bf16_f32
 * <a>  in q8_k (with bsums) q8_0 f16
 * and q2_k q3_k (<t>) with q2_k_q8_k q3_k_q8_k (<w>_<a>).
 */
typedef void  k_dequant_kernel(const void *src, float *dst, int64_t n);
typedef float k_dot_kernel(int64_t n, const void *w, const void *a);
typedef void  k_quantize_kernel(const float *x, void *dst, int64_t n);
typedef k_dequant_kernel  *k_dequant_fn;
typedef k_dot_kernel      *k_dot_fn;
typedef k_quantize_kernel *k_quantize_fn;

/* Table lookups; return NULL where the (impl, type) pair has no kernel.
 * The drivers below fall back to the ref kernel for a NULL entry. */
k_dequant_fn  k_get_dequant(int impl, int type);
k_dot_fn      k_get_dot(int impl, int wtype);           /* paired with k_act_type(wtype) */
k_quantize_fn k_get_quantize(int impl, int act_type);  /* act_type in Q8_K, Q8_0, F16 */
int           k_act_type(int wtype);                     /* -1 for an unknown type */
int64_t       k_row_bytes(int type, int64_t n);          /* -1 when not a whole number of blocks */

/* ---- drivers (one cgo call each) ---------------------------------------- */

/* Dequantize n elements of type `type` to f32. Returns 0, or -1 for an unknown type. */
int k_dequant(int impl, int type, const void *src, float *dst, int64_t n);

/* Convert n activations to act_type (Q8_K, Q8_0, F16 or F32 = copy).
 * dst holds k_row_bytes(act_type, n) bytes. Returns 0 or -1. */
int k_quantize_act(int impl, int act_type, const float *x, void *dst, int64_t n);

/* Matrix-vector product over rows [r0, r1):
 *   y[r] = dot(w row r, a)    w: rows of row_bytes bytes, each n elements of wtype
 *                             a: n activations already in k_act_type(wtype)
 * y is indexed by the global row number. Returns 0 or -1. */
int k_matvec(int impl, int wtype, int64_t n, const void *w, size_t row_bytes,
             const void *a, float *y, int64_t r0, int64_t r1);

/* Quantized matrix x many-token product over rows [r0, r1), tiled so each
 * weight block is reused across all ntok tokens while it is in cache:
 *   y[t * y_stride + r] = dot(w row r, a + t * a_row_bytes)   for t < ntok
 * Returns 0 or -1. */
int k_matmul_q(int impl, int wtype, int64_t n, const void *w, size_t row_bytes,
               int64_t r0, int64_t r1, const void *a, size_t a_row_bytes, int64_t ntok,
               float *y, int64_t y_stride);

/* Blocked f32 matmul with a register-tiled micro-kernel, rows [m0, m1) of C:
 *   trans_b = 1:  C[m][j] = sum_k A[m][k] * B[j][k]     (B is N x K, row-major)
 *   trans_b = 0:  C[m][j] = sum_k A[m][k] * B[k][j]     (B is K x N, row-major)
 * A is M x K (lda), C is M x N (ldc). C is overwritten. */
void k_sgemm(int impl, int trans_b, int64_t m0, int64_t m1, int64_t N, int64_t K,
             const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc);

/* Bulk dequantization of several tensors in one call. prefetch_bytes was a
 * software-prefetch distance; measured not to help (see dispatch.c), it is
 * accepted and ignored. */
typedef struct { int type; const void *src; float *dst; int64_t n; } k_dequant_task;
int k_dequant_bulk(int impl, const k_dequant_task *tasks, int ntasks, int64_t prefetch_bytes);

/* Causal multi-head attention with grouped KV heads, for query heads [h0, h1).
 * Query token t (t < n_tok) sits at position p = pos0 + t and attends to the
 * cache positions first(p) .. p, where
 *   first(p) = window > 0 ? max(0, p - window + 1) : 0
 * (llama.cpp's standard sliding window: p' is seen when p - p' < window;
 * window <= 0 = no window).
 *   q   [n_tok][q_stride]       head h at q + t*q_stride + h*head_dim
 *   k,v [n_pos][kv_stride]      kv head g at k + p*kv_stride + g*head_dim
 *   out [n_tok][out_stride]     head h written at out + t*out_stride + h*head_dim
 *   scratch: at least (pos0 + n_tok) floats per call
 * Query head h uses kv head h / (n_head / n_head_kv). Scores: with
 * softcap == 0, s = scale * q.k; otherwise the reference's soft-cap with
 * the cap folded into the scale: s = softcap * tanhf(q.k * (scale / softcap))
 * (scale / softcap one f32 division, tanhf the C library's). Softmax in f32
 * (max subtracted), out = sum p * v. sinks: NULL, or one logit per query
 * head [n_head] (gpt-oss) that joins the softmax's denominator without a
 * value row; the exact kernels below apply it after the last position as
 * the reference does (k_attn_sink in attn_common.h). */
void k_attention(int impl, int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                 int64_t head_dim, const float *q, int64_t q_stride,
                 const float *k, const float *v, int64_t kv_stride,
                 float scale, int64_t window, float softcap, const float *sinks, float *out, int64_t out_stride,
                 int64_t h0, int64_t h1, float *scratch);

/* Causal GQA attention over an f16 KV cache (k_half bits) with the numerics
 * of the reference build's CPU flash attention for fewer than 64 query rows
 * (llama.cpp AVX-512 build, f16 KV): arguments as k_attention, but k and v
 * are f16 and q must hold f16-representable values (the caller rounds them).
 * Window and soft-cap as k_attention. Per (token t, head), p = pos0 + t,
 * with sc = softcap != 0 ? scale / softcap : scale (one f32 division):
 *   s   = dot_f16(q, k[p']) * sc, where dot_f16 sums the first
 *         np = head_dim & ~63 elements in 4 accumulators x 16 lanes of f32 FMA
 *         (element i + 16j of each 64-step goes to accumulator j, lane i),
 *         reduced as a0+a2, a1+a3, then their sum, then lanes halving 8,4,2,1;
 *         the remaining elements' products are added in double; rounded to f32
 *   if softcap != 0: s = softcap * tanhf(s)
 *   online softmax over p' = first(p) .. p in order (the reference skips the
 *   -inf entries of its mask, i.e. the positions outside the window and
 *   after p, without touching M, S or acc; it adds the mask's 0 to the other
 *   scores, which changes only the sign of a zero score, and nothing after
 *   it sees that sign): M (running max), S (f32 sum):
 *     s > M:  ms = expf(M_old - s), M = s, acc = f16(acc * ms), vs = 1
 *     else:   ms = 1, vs = expf(s - M)
 *     acc[i] = f16(fmaf(v[i], vs, acc[i]))
 *     S = fmaf(S, ms, vs)
 *   out = acc * (S != 0 ? 1/S : 0)        f16(x) = x rounded to f16 and back
 * expf is glibc's algorithm (csrc/attn_common.h); tanhf is the C library's
 * (on glibc the function the reference build calls; another libm, e.g.
 * macOS's, may differ in the last bit, and so may the capped results).
 * scratch: k_attention_f16acc_scratch(head_dim) floats. Every impl gives the
 * same bits. K_ATTN_H_PARAMS: the arguments after impl, which
 * k_attention_tiled and the per-impl kernels (k_attn_h_kernel) share. */
#define K_ATTN_H_PARAMS                                                                                        \
    int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim, const float *q,         \
        int64_t q_stride, const k_half *k, const k_half *v, int64_t kv_stride, float scale, int64_t window,   \
        float softcap, const float *sinks, float *out, int64_t out_stride, int64_t h0, int64_t h1, float *scratch
void k_attention_f16acc(int impl, K_ATTN_H_PARAMS);
int64_t k_attention_f16acc_scratch(int64_t head_dim);

/* Causal GQA attention over an f16 KV cache with the numerics of the
 * reference build's tiled CPU flash attention (64 or more query rows): same
 * arguments as k_attention_f16acc (window and soft-cap as k_attention), q in
 * f32. Per (token t, head), p = pos0 + t: cache positions in tiles of 64
 * aligned at position 0; lane j of the tile at ic is position ic + j and is
 * unmasked when first(p) <= ic + j <= p. Tiles without an unmasked lane are
 * skipped (the reference skips them too when its whole block of query rows
 * is masked, and otherwise finds the row's max -inf and leaves M and S
 * alone). For the others, with sc = softcap != 0 ? scale / softcap : scale:
 *   kq[j] = (fmaf chain over d = 0..head_dim-1 of q[d] * k[j][d], from 0) * sc
 *   if softcap != 0: kq[j] = tanhf(kq[j]) * softcap
 *   tmax = max of the unmasked kq[j]
 *   if tmax > M: ms = expf(M - tmax), acc *= ms, S *= ms, M = tmax
 *   kq[j] = vexpf(kq[j] - M) (ggml_v_expf) on the unmasked lanes, 0 on the
 *           masked ones (the reference's exp of -inf); per group of 16 lanes
 *           the lanes are reduced halving 8,4,2,1 in f32 and the group sums
 *           added in double: S = (float)((double)S + sum)
 *   acc[d] = fmaf(kq[j], v[j][d], acc[d]) for the unmasked j in order (the
 *           reference also adds 0 * v for the masked lanes, which changes
 *           nothing but, at most, the sign of an accumulator that is zero)
 * out = acc * (S != 0 ? 1/S : 0). tanhf as in k_attention_f16acc. scratch:
 * k_attention_tiled_scratch(head_dim) floats. Every impl gives the same bits. */
void k_attention_tiled(int impl, K_ATTN_H_PARAMS);
int64_t k_attention_tiled_scratch(int64_t head_dim);

/* Causal GQA attention over a KV cache whose K and V rows are each f16,
 * q8_0 or q4_0 (ktype, vtype: K_F16, K_Q8_0, K_Q4_0; not both f16, which
 * k_attention_f16acc / k_attention_tiled serve), with the numerics of the
 * reference build's one-row flash attention for such a cache, for any
 * number of query rows. Position p's K row is k_stride bytes from p-1's,
 * head g's elements start k_row_bytes(ktype, g * head_dim) bytes into it
 * (V the same); head_dim a multiple of 32. Per (token, head):
 *   Q is converted to K's vec-dot type: rounded to f16 for an f16 K, else
 *   quantized to q8_0 (k_quantize_act's q8_0); s = dot(K row, Q) * scale
 *   (the f16 dot of k_attention_f16acc, or the impl's q8_0 / q4_0 dot),
 *   soft-capped as k_attention; then per position in order the online
 *   softmax: s > M: M = s, ms = expf(M_old - M), acc *= ms; else
 *   vs = expf(s - M); acc += V row * vs; S = fmaf(S, ms, vs). An f16 V
 *   keeps acc in f16 (each step rounded, as k_attention_f16acc); a
 *   quantized V is dequantized to f32 and acc is f32 (one FMA a lane).
 *   out = acc * (S != 0 ? 1/S : 0). Every impl gives the same bits.
 * scratch: k_attention_kvq_scratch(head_dim) floats. Returns 0, or -1 for
 * a type pair or head size it does not take. */
int k_attention_kvq(int impl, int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                    int64_t head_dim, const float *q, int64_t q_stride,
                    int ktype, const void *k, int64_t k_stride, int vtype, const void *v, int64_t v_stride,
                    float scale, int64_t window, float softcap, float *out, int64_t out_stride,
                    int64_t h0, int64_t h1, float *scratch);
int64_t k_attention_kvq_scratch(int64_t head_dim);

/* Store n f32 values as a KV cache row of type (K_F16, K_Q8_0 with the
 * impl's q8_0 quantizer, K_Q4_0 with the reference's q4_0 rounding:
 * d = max / -8, q = min(15, (int8)(x / d + 8.5))). Returns 0 or -1. */
int k_kv_store(int impl, int type, const float *x, void *dst, int64_t n);

/* ---- small ops ---------------------------------------------------------- */
/* out = x * (1 / sqrtf(mean(x^2) + eps)) * w   (w may be NULL: no weight).
 * The sum of squares is accumulated in double, as the reference build does:
 * in order by the ref set, in k_rmsnorm_avx2's eight lanes by every SIMD set
 * (x86-64 and arm64 alike, so both give the same bits). */
void k_rmsnorm(int impl, float *out, const float *x, const float *w, int64_t n, float eps);
/* Rotate the first n_rot dims of each of n_heads heads of x [n_heads][head_dim]
 * with cos/sin tables of n_rot/2 entries for this position.
 * neox = 0: pairs (2i, 2i+1) ("normal");  neox = 1: pairs (i, i + n_rot/2).
 * Rounding as the reference build (its compiler contracts each output into
 * one FMA with the other product rounded): for a pair (x0, x1),
 *   x0' = fma(x0, cos, -(x1 * sin)),  x1' = fma(x0, sin, x1 * cos);
 * every impl gives the same bits. */
void k_rope(int impl, float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
            const float *cos_t, const float *sin_t, int neox);
/* k_rope on ntok rows of x ([ntok][n_heads * head_dim]), row t with the
 * tables cos_t / sin_t + t * (n_rot / 2) (its position's). */
void k_rope_rows(int impl, float *x, int64_t ntok, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                 const float *cos_t, const float *sin_t, int neox);
/* The reference build's SwiGLU on elements [i0, i1) of each of ntok rows of
 * n values ([ntok][n] arrays):
 *   out[i] = gate[i] / (1 + e) * up[i],  e = vexpf(-gate[i]) for i < n & ~15
 * (ggml_v_expf, the 16-lane blocks) and glibc's expf(-gate[i]) for the tail
 * (attn_common.h). Every impl gives the same bits; out may be gate. */
void k_swiglu(int impl, float *out, const float *gate, const float *up, int64_t ntok, int64_t n, int64_t i0, int64_t i1);
void k_add(int impl, float *out, const float *a, const float *b, int64_t n);
void k_scale(int impl, float *x, float s, int64_t n);             /* in place */
/* k_rmsnorm on each of rows rows of n values ([rows][n] arrays; the per-head
 * q/k norms of qwen3 and gemma3 are rows of head_dim). */
void k_rmsnorm_rows(int impl, float *out, const float *x, const float *w, int64_t rows, int64_t n, float eps);
/* The reference's GeGLU on elements [i0, i1) of each of ntok rows of n values:
 *   out[i] = 0 for gate[i] <= -10,  gate[i] * up[i] for gate[i] >= 10,  else
 *   f32(G[f16(gate[i])]) * up[i],  G[h] = f16(0.5x(1 + tanhf(sqrt(2/pi) x (1 + 0.044715 x^2)))), x = f32(h)
 * (ggml's f16 GELU table; tanhf from the C library). out may be gate. */
void k_geglu(int impl, float *out, const float *gate, const float *up, int64_t ntok, int64_t n, int64_t i0, int64_t i1);
/* Soft-capping as the reference's graph does it: x = tanhf(x * (1/cap)) * cap. */
void k_softcap(int impl, float *x, int64_t n, float cap);
/* Softmax of one row with the reference build's numerics (ggml soft_max,
 * AVX-512 build): see k_softmax_exact_ref in ffn_ref.c. In place. */
void k_softmax_exact(int impl, float *x, int64_t n);
/* gpt-oss's clamped SwiGLU (ggml's swiglu_oai) on n elements, the reference
 * build's scalar loop: x = min(gate, limit), y = clamp(up, -limit, limit),
 * out = x / (1 + expf(alpha * -x)) * (y + 1), expf glibc's (k_attn_expf).
 * out may be gate. One portable version for every impl. */
void k_swiglu_oai(int impl, float *out, const float *gate, const float *up, int64_t n, float alpha, float limit);
/* Fills the GELU table of k_geglu (idempotent; call once before use, as
 * package kernels does in init: without it k_geglu evaluates the same values
 * element by element, slowly). */
void k_init_tables(void);

/* ---- reference kernels (portable scalar C, csrc/..._ref.c) ----------------- */
/* Declared through their function types (above), one list per op; each
 * kernel's definition is written out in its .c file. */
k_dequant_kernel k_dequant_f32_ref, k_dequant_f16_ref, k_dequant_bf16_ref,
    k_dequant_q4_0_ref, k_dequant_q4_1_ref, k_dequant_q5_0_ref, k_dequant_q5_1_ref, k_dequant_q8_0_ref,
    k_dequant_q2_k_ref, k_dequant_q3_k_ref, k_dequant_q4_k_ref, k_dequant_q5_k_ref, k_dequant_q6_k_ref,
    k_dequant_iq4_nl_ref, k_dequant_iq4_xs_ref, k_dequant_mxfp4_ref;
k_quantize_kernel k_quantize_q8_k_ref, k_quantize_q8_0_ref, k_quantize_f16_ref;
k_dot_kernel k_dot_q2_k_q8_k_ref, k_dot_q3_k_q8_k_ref, k_dot_q4_k_q8_k_ref, k_dot_q5_k_q8_k_ref,
    k_dot_q6_k_q8_k_ref, k_dot_q4_0_q8_0_ref, k_dot_q4_1_q8_0_ref, k_dot_q5_0_q8_0_ref, k_dot_q5_1_q8_0_ref,
    k_dot_q8_0_q8_0_ref, k_dot_iq4_nl_q8_0_ref, k_dot_iq4_xs_q8_k_ref, k_dot_mxfp4_q8_0_ref,
    k_dot_f16_f16_ref, k_dot_f32_f32_ref, k_dot_bf16_f32_ref;

/* Q8_K helpers of the quantizers: the all-zero block (amax == 0), and the
 * signed max of a block, the first element in index order with |x| == amax
 * (the ref's first-wins scan), given amax. */
static inline void k_q8k_zero_block(k_block_q8_k *y) {
    y->d = 0;
    memset(y->qs, 0, sizeof y->qs);
    memset(y->bsums, 0, sizeof y->bsums);
}
static inline float k_q8k_signed_max(const float *x, float amax) {
    for (int j = 0; j < K_QKK; j++)
        if (x[j] == amax || x[j] == -amax) return x[j];
    return 0;
}

/* 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block: j < 4
 * in the low 6 bits of bytes j and j + 4; j >= 4 the low / high nibble of
 * byte j + 4 plus, as bits 4..5, the top two bits of byte j - 4 / j.
 * Inline (not in quant_ref.c): the SIMD dots call it per block, and cgo
 * does no inlining across files. */
static inline void k_q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}
/* All 8 at once: byte j of *sc / *m is the scale / min of sub-block j (the
 * same numbers as k_q4k_scale_min), four bytes per 32-bit word. */
static inline void k_q4k_scales_mins8(const uint8_t *q, uint64_t *sc, uint64_t *m) {
    const uint32_t a = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    const uint32_t b = (uint32_t)q[4] | (uint32_t)q[5] << 8 | (uint32_t)q[6] << 16 | (uint32_t)q[7] << 24;
    const uint32_t c = (uint32_t)q[8] | (uint32_t)q[9] << 8 | (uint32_t)q[10] << 16 | (uint32_t)q[11] << 24;
    const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
    const uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
    *sc = (uint64_t)(a & 0x3F3F3F3Fu) | (uint64_t)sc_hi << 32;
    *m = (uint64_t)(b & 0x3F3F3F3Fu) | (uint64_t)m_hi << 32;
}
/* dm = {d*sc, dmin*m} of sub-block 2c, then of sub-block 2c+1 (chunk c of
 * 64 elements of a Q4_K / Q5_K block) */
static inline void k_q4k_chunk_dm(const uint8_t *scales, int c, float d, float dmin, float dm[4]) {
    uint8_t sc0, m0, sc1, m1;
    k_q4k_scale_min(2 * c, scales, &sc0, &m0);
    k_q4k_scale_min(2 * c + 1, scales, &sc1, &m1);
    dm[0] = d * sc0, dm[1] = dmin * m0;
    dm[2] = d * sc1, dm[3] = dmin * m1;
}

/* Signatures of the non-table ops without the impl argument: the function
 * types declare the kernels (k_sgemm_kernel k_sgemm_ref; ...), the _fn
 * pointers hold them. */
typedef void k_sgemm_kernel(int trans_b, int64_t m0, int64_t m1, int64_t N, int64_t K,
                            const float *A, int64_t lda, const float *B, int64_t ldb,
                            float *C, int64_t ldc);
typedef void k_attention_kernel(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                                int64_t head_dim, const float *q, int64_t q_stride,
                                const float *k, const float *v, int64_t kv_stride,
                                float scale, int64_t window, float softcap, const float *sinks, float *out, int64_t out_stride,
                                int64_t h0, int64_t h1, float *scratch);
/* the same over an f16 KV cache (k_attention_f16acc, k_attention_tiled) */
typedef void k_attn_h_kernel(K_ATTN_H_PARAMS);
/* the same over a KV cache of any of f16, q8_0, q4_0 for K and V
 * (k_attention_kvq); fn carries the impl's quantizer, K dot and V dequant */
typedef struct {
    k_quantize_fn q8;   /* Q -> q8_0, the vec-dot type of a q8_0 / q4_0 K */
    k_dot_fn      kdot; /* K row (ktype) . Q (q8_0) */
    k_dequant_fn  vdeq; /* V row (vtype) -> f32 */
} k_attn_kvq_fns;
typedef void k_attn_kvq_kernel(int64_t n_tok, int64_t pos0, int64_t n_head, int64_t n_head_kv,
                               int64_t head_dim, const float *q, int64_t q_stride,
                               int ktype, const void *k, int64_t k_stride, int vtype, const void *v, int64_t v_stride,
                               float scale, int64_t window, float softcap, float *out, int64_t out_stride,
                               int64_t h0, int64_t h1, float *scratch, const k_attn_kvq_fns *fn);
typedef k_attn_kvq_kernel *k_attn_kvq_fn;
typedef void k_rmsnorm_kernel(float *out, const float *x, const float *w, int64_t n, float eps);
typedef void k_rope_kernel(float *x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                           const float *cos_t, const float *sin_t, int neox);
typedef void k_softmax_kernel(float *x, int64_t n);
typedef void k_swiglu_kernel(float *out, const float *gate, const float *up, int64_t n, int64_t i0, int64_t i1);
typedef void k_add_kernel(float *out, const float *a, const float *b, int64_t n);
typedef void k_scale_kernel(float *x, float s, int64_t n);
typedef k_sgemm_kernel     *k_sgemm_fn;
typedef k_attention_kernel *k_attention_fn;
typedef k_attn_h_kernel    *k_attn_h_fn;
typedef k_rmsnorm_kernel   *k_rmsnorm_fn;
typedef k_rope_kernel      *k_rope_fn;
typedef k_swiglu_kernel    *k_swiglu_fn;
typedef k_add_kernel       *k_add_fn;
typedef k_scale_kernel     *k_scale_fn;
/* Tile kernel of k_matmul_q: nr weight rows starting at w, times ntok tokens:
 *   y[t * y_stride + r] = dot(w + r * row_bytes, a + t * a_row_bytes),  r < nr, t < ntok
 * (y points at row 0 of the tile). */
typedef void k_mm_tile_kernel(int64_t n, const void *w, size_t row_bytes, int64_t nr,
                              const void *a, size_t a_row_bytes, int64_t ntok,
                              float *y, int64_t y_stride);
typedef k_mm_tile_kernel *k_mm_tile_fn;
/* Its parameters and their names as arguments, for the files that write out
 * many tile kernels as calls of one driver (mm_driver.h, dot_neon*_arm64.c). */
#define K_MM_TILE_PARAMS \
    int64_t n, const void *w, size_t row_bytes, int64_t nr, const void *a, size_t a_row_bytes, int64_t ntok, float *y, int64_t y_stride
#define K_MM_TILE_ARGS n, w, row_bytes, nr, a, a_row_bytes, ntok, y, y_stride

/* IQ4_NL is the one format that the reference build sums in two orders: one
 * token at a time with ggml's vec_dot (k_dot_iq4_nl_q8_0_*: even and odd
 * blocks in two accumulators), two or more tokens with llamafile's
 * tinyBLAS_Q0 (one accumulator, blocks in order; see iq4_ref.c). Its tile
 * kernels follow the first order when ntok == 1 (k_matvec) and the second
 * when ntok >= 2 (k_matmul_q of a batch), so their results equal the dot
 * only for one token. The generic drivers use this ref tile where an impl
 * has none. */
k_mm_tile_kernel k_mm_iq4_nl_ref;

/* A piece of a tile kernel: `rows` weight rows (row_bytes apart) x `toks`
 * tokens (a_row_bytes apart) into out[k * rows + r]; batch = (the tile
 * call's ntok >= 2), which selects IQ4_NL's batch order (above). The one
 * driver, k_mm_run (mm_driver.h, csrc/mm_drive.c), runs every tile kernel
 * of every ISA over its pieces. */
typedef void (*k_mm_piece_fn)(int rows, int toks, int batch, int64_t n, const char *w, size_t row_bytes,
                              const char *a, size_t a_row_bytes, float *out);

k_sgemm_kernel k_sgemm_ref;
k_attention_kernel k_attention_ref;
k_attn_h_kernel k_attention_f16acc_ref, k_attention_tiled_ref;
k_attn_kvq_kernel k_attention_kvq_ref;
k_quantize_kernel k_quantize_q4_0_ref;
k_rmsnorm_kernel k_rmsnorm_ref;
k_rope_kernel k_rope_ref;
k_softmax_kernel k_softmax_exact_ref;
k_swiglu_kernel k_swiglu_ref, k_geglu_ref;
k_add_kernel k_add_ref;
k_scale_kernel k_scale_ref;
void k_softcap_ref(float *x, int64_t n, float cap);
void k_swiglu_oai_ref(float *out, const float *gate, const float *up, int64_t n, float alpha, float limit);

/* ---- per-architecture hooks ---------------------------------------------
 * csrc/dispatch.c (generic) owns the tables of ref kernels and the drivers.
 * Exactly one of csrc/dispatch_amd64.c, csrc/dispatch_arm64.c,
 * csrc/dispatch_other.c is compiled per target and defines the hooks below
 * for the SIMD impls of that arch. They are only called with
 * impl != K_IMPL_REF; a NULL answer (or a NULL member of k_arch_ops) means
 * "no kernel": the driver uses the ref one. Hooks must be pure lookups. */
typedef struct {
    k_sgemm_fn     sgemm;
    k_attention_fn attention;
    k_rmsnorm_fn   rmsnorm;
    k_rope_fn      rope;
    k_swiglu_fn    swiglu;
    k_add_fn       add;
    k_scale_fn     scale;
    k_attn_h_fn    attention_f16acc;
    k_attn_h_fn    attention_tiled;
    k_attn_kvq_fn  attention_kvq;
} k_arch_ops;


/* ---- row-interleaved ("packed") weights ---------------------------------
 * A kernel set may keep a type's matrices in groups of pack_rows (G) rows
 * whose blocks are interleaved in a layout of its own (block b of the G rows
 * side by side), so that one activation load feeds G rows and each worker
 * reads one sequential stream. A packed group occupies exactly the
 * G * row_bytes bytes of the rows it replaces, at the same offset, so row
 * addressing is unchanged for whole groups; rows past the last whole group
 * stay unpacked and go through the set's mm_tile / dot.
 *   pack       nrows (a multiple of G) rows, row_bytes apart -> dst, the same
 *              number of bytes (dst != src)
 *   mm_packed  a k_mm_tile_kernel over packed rows: w at the start of a group,
 *              nr a multiple of G, row_bytes the unpacked row size; its
 *              results equal, bit for bit, those of the same set's mm_tile
 *              (or dot) over the unpacked rows, for every ntok.
 * A layout belongs to one set: the three members are taken together, from
 * the layer that has the type's dot. */
typedef void k_pack_kernel(int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst);
typedef k_pack_kernel *k_pack_fn;

/* Drivers of packed matrices (dispatch.c). A matrix of nrows rows is packed
 * as whole groups of G = k_pack_rows(impl, wtype) rows, rows from
 * nrows / G * G on left as they are. Its products run over [r0, r1) with r0
 * a multiple of G and r1 a multiple of G or nrows, and equal, bit for bit,
 * k_matvec / k_matmul_q over the unpacked rows with the same impl.
 *   k_pack_rows   G, or 0 where impl keeps wtype unpacked
 *   k_pack_same   1 when impls a and b share wtype's layout (data packed by
 *                 one can be multiplied by the other), else 0
 *   k_pack        the whole matrix src -> dst (dst != src, same size)
 * Each returns 0, or -1 for a type without a layout or a bad row range. */
int k_pack_rows(int impl, int wtype);
int k_pack_same(int impl_a, int impl_b, int wtype);
int k_pack(int impl, int wtype, int64_t n, const void *src, size_t row_bytes, int64_t nrows, void *dst);
int k_matvec_packed(int impl, int wtype, int64_t n, const void *w, size_t row_bytes, int64_t nrows,
                    const void *a, float *y, int64_t r0, int64_t r1);
int k_matmul_packed(int impl, int wtype, int64_t n, const void *w, size_t row_bytes, int64_t nrows,
                    int64_t r0, int64_t r1, const void *a, size_t a_row_bytes, int64_t ntok,
                    float *y, int64_t y_stride);

/* One type's kernels in a kernel set; the sets are tables of these indexed
 * by type id (K_TYPE_MAX entries), any member NULL where the set has none:
 *   dequant   k_dequant_<t>_<impl>
 *   dot       k_dot_<w>_<a>_<impl>, a = k_act_type(type)
 *   mm_tile   the k_matmul_q tile (optional: NULL = rows x dot)
 *   quantize  k_quantize_<t>_<impl>, in the entries of the activation types
 *   pack_rows, pack, mm_packed  the packed layout (above; 0/NULL = none):
 *             k_pack_<t>_x<G>_<impl>, k_mm_packed_<t>_x<G>_<impl> */
typedef struct {
    k_dequant_fn  dequant;
    k_dot_fn      dot;
    k_mm_tile_fn  mm_tile;
    k_quantize_fn quantize;
    int           pack_rows;
    k_pack_fn     pack;
    k_mm_tile_fn  mm_packed;
} k_type_kernels;

/* The tables of impl's kernel sets, most specific first: layer 0 is impl's
 * own, layer 1 the set it falls back to member by member (AVX-512 on AVX2,
 * NEON_DOT on NEON, NEON_I8MM on NEON_DOT then NEON); NULL past the last. A set that replaces a type's dot
 * replaces its tile too, so that a tile never mixes in another set's bits. */
const k_type_kernels *k_arch_get_table(int impl, int layer);
const k_arch_ops     *k_arch_get_ops(int impl);             /* may return NULL */

#ifdef __cplusplus
}
#endif
#endif
