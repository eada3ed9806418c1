// Package kernels is Woolly's compute layer: dequantization, activation
// quantization, quantized dot products and matrix products, f32 GEMM,
// attention and the small per-vector ops. The work is done by the C kernels
// in ../csrc (package csrc); this package checks every argument, so no nil or
// short slice ever reaches C, and crosses the cgo boundary once per call.
//
// Misuse panics. The row kernels (MatVec, MatMulQ, Attention, RMSNorm, ...)
// return nothing: a wrong length, stride, range or type is a bug in the
// caller, not bad input (the runtime checks shapes and types once, when it
// loads a model), so they panic with an error naming the kernel and the
// argument, as a Go slice index out of range does. The checks are a few
// comparisons per call, before the one cgo call. Use, Pack and DequantBulk,
// whose arguments come from outside, return errors.
//
// Functions are safe to call concurrently on disjoint outputs.
//
// Kernel sets (Impl, Available, Use; WOOLLY_KERNELS=ref forces ref): "ref"
// (portable C), "avx2" (AVX2+FMA+F16C), "avx512" (adds AVX-512 VL/BW/VNNI
// integer dots), "neon" / "neon-dotprod" / "neon-i8mm" on arm64. The best one is chosen at
// init from golang.org/x/sys/cpu (GODEBUG=cpu.avx2=off disables the x86 sets).
//
// Numerics: dequantization is bit-identical to ggml on every set. Activation
// quantization (Q8_K, Q8_0, F16) follows docs/formats.md and gives the
// same bytes on every set. Dot products (MatVec, MatMulQ) sum in the
// reference build's order (llama.cpp x86: ggml vec_dot / tinyBLAS_Q0), so on
// amd64 ref, avx2 and avx512 give the same bits, and MatMulQ equals MatVec
// bit for bit — except IQ4_NL, which the reference sums in one order for one
// token (vec_dot) and in another for two or more (tinyBLAS_Q0): MatVec and
// MatMulQ with one token follow the first, MatMulQ of a batch the second
// (csrc/kernels.h). AttentionF16Acc and AttentionTiled reproduce the reference's
// two CPU flash-attention paths over an f16 KV cache, with the same bits on
// every set, and so do RoPERows and SwiGLU (the reference's roundings and
// exponentials); Attention (f32 cache, the tests' reference) on SIMD sets
// uses a vector exp (about 1 ulp) and differs from ref in the last bits.
package kernels

/*
#include <math.h>
#include "../csrc/kernels.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	_ "github.com/woolly-llm/woolly/csrc" // the C kernels
)

// f16ToF32C and f32ToF16C are csrc's conversions, for the test that holds
// package ggml's to the same bits.
func f16ToF32C(h uint16) float32 { return float32(C.k_f16_to_f32(C.k_half(h))) }
func f32ToF16C(f float32) uint16 { return uint16(C.k_f32_to_f16(C.float(f))) }

// bf16ToF32C is csrc's bf16 widening, for the test that holds ggml's to it.
func bf16ToF32C(h uint16) float32 { return float32(C.k_bf16_to_f32(C.k_bf16(h))) }

// cActType is C's activation type for weights of type t (-1: none).
func cActType(t Type) int { return int(C.k_act_type(C.int(t))) }

// cBlockLayout is C's (elements, bytes) per block of type t (0, 0: none),
// read from its row-size function (csrc/dispatch.c's type table), for the
// test that holds package ggml's table to C's.
func cBlockLayout(t Type) (int, int) {
	for _, elems := range []int{1, 32, 256} {
		if b := C.k_row_bytes(C.int(t), C.int64_t(elems)); b >= 0 {
			return elems, int(b)
		}
	}
	return 0, 0
}

func bptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func fptr(f []float32) *C.float {
	if len(f) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&f[0]))
}

func hasDequant(t Type) bool { return t.Known() && t != Q8_K }

// Dequant converts len(dst) elements of type t from src to f32.
func Dequant(t Type, src []byte, dst []float32) {
	if !hasDequant(t) {
		panic(fmt.Errorf("kernels.Dequant: no dequantizer for %v", t))
	}
	need, err := t.RowBytes(int64(len(dst)))
	if err != nil {
		panic(fmt.Errorf("kernels.Dequant: %w", err))
	}
	if int64(len(src)) < need {
		panic(fmt.Errorf("kernels.Dequant: %v source has %d bytes, %d elements need %d", t, len(src), len(dst), need))
	}
	if len(dst) == 0 {
		return
	}
	if C.k_dequant(C.int(implID()), C.int(t), bptr(src), fptr(dst), C.int64_t(len(dst))) != 0 {
		panic(fmt.Errorf("kernels.Dequant: %v rejected by the C kernel", t))
	}
}

// checkRowDst panics unless dst holds the t.RowBytes(n) bytes of a row of
// n values of t (what they are, for the message).
func checkRowDst(op string, t Type, n int, dst []byte, what string) {
	need, err := t.RowBytes(int64(n))
	if err != nil {
		panic(fmt.Errorf("kernels.%s: %w", op, err))
	}
	if int64(len(dst)) < need {
		panic(fmt.Errorf("kernels.%s: dst has %d bytes, %d %v %s need %d", op, len(dst), n, t, what, need))
	}
}

// QuantizeAct converts the activations x to act (Q8_K, Q8_0, F16, or F32 = copy)
// into dst, which must hold act.RowBytes(len(x)) bytes.
func QuantizeAct(act Type, x []float32, dst []byte) {
	switch act {
	case Q8_K, Q8_0, F16, F32:
	default:
		panic(fmt.Errorf("kernels.QuantizeAct: %v is not an activation type", act))
	}
	checkRowDst("QuantizeAct", act, len(x), dst, "activations")
	if len(x) == 0 {
		return
	}
	if C.k_quantize_act(C.int(implID()), C.int(act), fptr(x), bptr(dst), C.int64_t(len(x))) != 0 {
		panic(fmt.Errorf("kernels.QuantizeAct: %v rejected by the C kernel", act))
	}
}

// checkWeights validates a row range of a weight matrix and returns the
// bytes of one row and of its activation vector.
func checkWeights(op string, wt Type, n int, w []byte, rowBytes, r0, r1 int) (rb, ab int64, err error) {
	if !wt.Known() || wt == Q8_K {
		return 0, 0, fmt.Errorf("kernels.%s: no dot product for weight type %v", op, wt)
	}
	if n < 0 {
		return 0, 0, fmt.Errorf("kernels.%s: negative row length %d", op, n)
	}
	if rb, err = wt.RowBytes(int64(n)); err != nil {
		return 0, 0, fmt.Errorf("kernels.%s: %w", op, err)
	}
	if ab, err = wt.ActType().RowBytes(int64(n)); err != nil {
		return 0, 0, fmt.Errorf("kernels.%s: activations: %w", op, err)
	}
	if int64(rowBytes) < rb {
		return 0, 0, fmt.Errorf("kernels.%s: row stride %d bytes < %d bytes of a %d-element %v row", op, rowBytes, rb, n, wt)
	}
	if r0 < 0 || r1 < r0 {
		return 0, 0, fmt.Errorf("kernels.%s: bad row range [%d, %d)", op, r0, r1)
	}
	if need := need2D(r1, int(rb), rowBytes); r1 > r0 && int64(len(w)) < need {
		return 0, 0, fmt.Errorf("kernels.%s: weights have %d bytes, rows [%d, %d) need %d", op, len(w), r0, r1, need)
	}
	return rb, ab, nil
}

// MatVec computes y[r] = dot(row r of w, a) for r in [r0, r1). Rows are n
// elements of wt, rowBytes apart; a holds n activations in wt.ActType()
// (see QuantizeAct); y is indexed by the global row number.
func MatVec(wt Type, n int, w []byte, rowBytes int, a []byte, y []float32, r0, r1 int) {
	matVec("MatVec", nil, 0, wt, n, w, rowBytes, a, y, r0, r1)
}

// MatMulQ computes y[t*yStride + r] = dot(row r of w, a[t*aRowBytes:]) for
// r in [r0, r1) and t < ntok, reusing each tile of weight rows across all tokens.
func MatMulQ(wt Type, n int, w []byte, rowBytes int, r0, r1 int, a []byte, aRowBytes int, ntok int, y []float32, yStride int) {
	matMul("MatMulQ", nil, 0, wt, n, w, rowBytes, r0, r1, a, aRowBytes, ntok, y, yStride)
}

// matVec checks and runs MatVec, or MatVecPacked when p is not nil (a
// matrix of nrows rows packed by Pack).
func matVec(op string, p *Packing, nrows int, wt Type, n int, w []byte, rowBytes int, a []byte, y []float32, r0, r1 int) {
	_, ab, err := checkWeights(op, wt, n, w, rowBytes, r0, r1)
	if err == nil && p != nil {
		err = checkPacked(op, *p, wt, nrows, r0, r1)
	}
	if err != nil {
		panic(err)
	}
	if int64(len(a)) < ab {
		panic(fmt.Errorf("kernels.%s: activations have %d bytes, need %d (%d x %v)", op, len(a), ab, n, wt.ActType()))
	}
	if len(y) < r1 {
		panic(fmt.Errorf("kernels.%s: y has %d entries, rows up to %d", op, len(y), r1))
	}
	if r0 == r1 {
		return
	}
	impl, cw, cn, rb, ca, cy, c0, c1 := C.int(implID()), C.int(wt), C.int64_t(n), C.size_t(rowBytes), bptr(a), fptr(y), C.int64_t(r0), C.int64_t(r1)
	var rc C.int
	if p == nil {
		rc = C.k_matvec(impl, cw, cn, bptr(w), rb, ca, cy, c0, c1)
	} else {
		rc = C.k_matvec_packed(impl, cw, cn, bptr(w), rb, C.int64_t(nrows), ca, cy, c0, c1)
	}
	if rc != 0 {
		panic(fmt.Errorf("kernels.%s: %v rejected by the C kernel", op, wt))
	}
}

// matMul checks and runs MatMulQ, or MatMulQPacked when p is not nil (a
// matrix of nrows rows packed by Pack).
func matMul(op string, p *Packing, nrows int, wt Type, n int, w []byte, rowBytes int, r0, r1 int, a []byte, aRowBytes int, ntok int,
	y []float32, yStride int) {
	_, ab, err := checkWeights(op, wt, n, w, rowBytes, r0, r1)
	if err == nil && p != nil {
		err = checkPacked(op, *p, wt, nrows, r0, r1)
	}
	if err != nil {
		panic(err)
	}
	if ntok < 0 {
		panic(fmt.Errorf("kernels.%s: negative token count %d", op, ntok))
	}
	if r0 == r1 || ntok == 0 {
		return
	}
	if int64(aRowBytes) < ab && ntok > 1 {
		panic(fmt.Errorf("kernels.%s: activation stride %d < %d bytes per token", op, aRowBytes, ab))
	}
	if need := need2D(ntok, int(ab), aRowBytes); int64(len(a)) < need {
		panic(fmt.Errorf("kernels.%s: activations have %d bytes, %d tokens need %d", op, len(a), ntok, need))
	}
	if ntok > 1 && yStride < r1 {
		panic(fmt.Errorf("kernels.%s: y stride %d < row end %d", op, yStride, r1))
	}
	if need := need2D(ntok, r1, yStride); int64(len(y)) < need {
		panic(fmt.Errorf("kernels.%s: y has %d entries, need %d", op, len(y), need))
	}
	impl, cw, cn, rb, c0, c1 := C.int(implID()), C.int(wt), C.int64_t(n), C.size_t(rowBytes), C.int64_t(r0), C.int64_t(r1)
	ca, ars, nt, cy, ys := bptr(a), C.size_t(aRowBytes), C.int64_t(ntok), fptr(y), C.int64_t(yStride)
	var rc C.int
	if p == nil {
		rc = C.k_matmul_q(impl, cw, cn, bptr(w), rb, c0, c1, ca, ars, nt, cy, ys)
	} else {
		rc = C.k_matmul_packed(impl, cw, cn, bptr(w), rb, C.int64_t(nrows), c0, c1, ca, ars, nt, cy, ys)
	}
	if rc != 0 {
		panic(fmt.Errorf("kernels.%s: %v rejected by the C kernel", op, wt))
	}
}

// need2D is the number of elements a row-major matrix of rows x cols with
// leading dimension ld spans (0 when empty); MaxInt64 when that overflows or
// ld is negative, so a length check against it fails.
func need2D(rows, cols, ld int) int64 {
	if rows <= 0 || cols <= 0 {
		return 0
	}
	if ld < 0 || cols < 0 || (rows > 1 && int64(rows-1) > (math.MaxInt64-int64(cols))/max(int64(ld), 1)) {
		return math.MaxInt64
	}
	return int64(rows-1)*int64(ld) + int64(cols)
}

// Sgemm computes rows [m0, m1) of C = A * B (transB: B is N x K and
// C[m][j] = sum_k A[m*lda+k]*B[j*ldb+k]; else B is K x N, B[k*ldb+j]).
// A is M x K, C is M x N; C is overwritten.
func Sgemm(transB bool, m0, m1, N, K int, A []float32, lda int, B []float32, ldb int, C_ []float32, ldc int) {
	if m0 < 0 || m1 < m0 || N < 0 || K < 0 {
		panic(fmt.Errorf("kernels.Sgemm: bad shape m [%d, %d), N %d, K %d", m0, m1, N, K))
	}
	if m0 == m1 || N == 0 {
		return
	}
	if (K > 0 && lda < K) || ldc < N || (transB && K > 0 && ldb < K) || (!transB && ldb < N) {
		panic(fmt.Errorf("kernels.Sgemm: leading dimensions lda %d ldb %d ldc %d too small for N %d K %d", lda, ldb, ldc, N, K))
	}
	nb := need2D(K, N, ldb)
	if transB {
		nb = need2D(N, K, ldb)
	}
	if int64(len(A)) < need2D(m1, K, lda) || int64(len(B)) < nb || int64(len(C_)) < need2D(m1, N, ldc) {
		panic(fmt.Errorf("kernels.Sgemm: slices too short (A %d, B %d, C %d) for rows up to %d, N %d, K %d", len(A), len(B), len(C_), m1, N, K))
	}
	C.k_sgemm(C.int(implID()), boolInt(transB), C.int64_t(m0), C.int64_t(m1), C.int64_t(N), C.int64_t(K),
		fptr(A), C.int64_t(lda), fptr(B), C.int64_t(ldb), fptr(C_), C.int64_t(ldc))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// DequantTask is one tensor for DequantBulk: len(Dst) elements of Type from Src.
type DequantTask struct {
	Type Type
	Src  []byte
	Dst  []float32
}

// DequantBulk dequantizes several tensors in one cgo call. prefetchBytes is
// accepted for the API's sake and ignored: software prefetch was measured not
// to help (the loop is bound by writing the f32 output; see csrc/dispatch.c).
func DequantBulk(tasks []DequantTask, prefetchBytes int) error {
	if len(tasks) == 0 {
		return nil
	}
	if prefetchBytes < 0 {
		return fmt.Errorf("kernels.DequantBulk: negative prefetch distance %d", prefetchBytes)
	}
	ct := make([]C.k_dequant_task, 0, len(tasks))
	var pin runtime.Pinner
	defer pin.Unpin()
	for i, t := range tasks {
		if !hasDequant(t.Type) {
			return fmt.Errorf("kernels.DequantBulk: task %d: no dequantizer for %v", i, t.Type)
		}
		need, err := t.Type.RowBytes(int64(len(t.Dst)))
		if err != nil {
			return fmt.Errorf("kernels.DequantBulk: task %d: %w", i, err)
		}
		if int64(len(t.Src)) < need {
			return fmt.Errorf("kernels.DequantBulk: task %d: %v source has %d bytes, need %d", i, t.Type, len(t.Src), need)
		}
		if len(t.Dst) == 0 {
			continue
		}
		pin.Pin(&t.Src[0])
		pin.Pin(&t.Dst[0])
		ct = append(ct, C.k_dequant_task{_type: C.int(t.Type), src: bptr(t.Src), dst: fptr(t.Dst), n: C.int64_t(len(t.Dst))})
	}
	if len(ct) == 0 {
		return nil
	}
	if C.k_dequant_bulk(C.int(implID()), &ct[0], C.int(len(ct)), C.int64_t(prefetchBytes)) != 0 {
		return errors.New("kernels.DequantBulk: rejected by the C kernel")
	}
	return nil
}

// AttnParams describes one causal attention call; see Attention.
type AttnParams = AttnParamsOf[float32]

// AttnF16Params describes one causal attention call over an f16 KV cache:
// K and V hold IEEE half-precision bits (the layout of a llama.cpp-style f16
// cache, read in place); see AttentionF16Acc and AttentionTiled.
type AttnF16Params = AttnParamsOf[uint16]

// AttnParamsOf describes one causal attention call over a KV cache of f32
// (AttnParams) or f16 bits (AttnF16Params):
//
//	Q   [NTok][QStride]      head h at Q[t*QStride + h*HeadDim:]
//	K,V [Pos0+NTok][KVStride] kv head g at K[p*KVStride + g*HeadDim:]
//	Out [NTok][OutStride]    head h written at Out[t*OutStride + h*HeadDim:]
//
// Window > 0 is a sliding window (llama.cpp's standard SWA): the query at
// position p attends only to the positions p' with p-Window < p' <= p
// (Window keys including its own); 0 attends to every earlier position.
// SoftCap > 0 caps the scores as the reference does (Gemma 2), folding the
// cap into the scale: s = SoftCap * tanhf(q.k * (Scale/SoftCap)), with
// Scale/SoftCap one f32 division and tanhf the C library's; 0 is off.
// Sinks, when not nil, holds one learned logit per query head ([NHead],
// gpt-oss's attention sinks): it joins each softmax's denominator without a
// value row, applied after the last position as the reference does (see
// k_attn_sink in csrc/attn_common.h).
// The zero values of all three keep plain causal attention.
type AttnParamsOf[KV float32 | uint16] struct {
	NTok, Pos0, NHead, NHeadKV, HeadDim int
	Q                                   []float32
	QStride                             int
	K, V                                []KV
	KVStride                            int
	Scale                               float32
	Out                                 []float32
	OutStride                           int
	Window                              int
	SoftCap                             float32
	Sinks                               []float32
}

// checkAttnShape validates what every attention call shares: the shape
// (ntok query rows at pos0, nhead query heads over nheadKV kv heads of
// headDim), the head range [h0, h1), the sliding window and the soft-cap.
func checkAttnShape(op string, ntok, pos0, nhead, nheadKV, headDim, h0, h1, window int, softCap float32) error {
	if ntok < 0 || pos0 < 0 || headDim <= 0 || nhead <= 0 || nheadKV <= 0 || nhead%nheadKV != 0 {
		return fmt.Errorf("kernels.%s: bad shape ntok %d pos0 %d heads %d/%d head_dim %d", op, ntok, pos0, nhead, nheadKV, headDim)
	}
	if headDim > 1<<20 || nhead > 1<<20 || ntok > 1<<30 || pos0 > 1<<30 {
		return fmt.Errorf("kernels.%s: implausible shape ntok %d pos0 %d heads %d head_dim %d", op, ntok, pos0, nhead, headDim)
	}
	if h0 < 0 || h1 < h0 || h1 > nhead {
		return fmt.Errorf("kernels.%s: bad head range [%d, %d) of %d", op, h0, h1, nhead)
	}
	if window < 0 {
		return fmt.Errorf("kernels.%s: negative sliding window %d (0 = no window)", op, window)
	}
	if c := float64(softCap); !(c >= 0) || math.IsInf(c, 1) {
		return fmt.Errorf("kernels.%s: soft-cap %g must be finite and >= 0 (0 = off)", op, c)
	}
	return nil
}

// check validates p and the head range; the caller handles the empty case.
func (p *AttnParamsOf[KV]) check(op string, h0, h1 int, scratch []float32, scratchNeed int) error {
	if p == nil {
		return fmt.Errorf("kernels.%s: nil params", op)
	}
	if err := checkAttnShape(op, p.NTok, p.Pos0, p.NHead, p.NHeadKV, p.HeadDim, h0, h1, p.Window, p.SoftCap); err != nil {
		return err
	}
	if p.Sinks != nil {
		if len(p.Sinks) < p.NHead {
			return fmt.Errorf("kernels.%s: %d sinks for %d heads", op, len(p.Sinks), p.NHead)
		}
		for h, s := range p.Sinks[:p.NHead] {
			if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				return fmt.Errorf("kernels.%s: sink of head %d is %g (must be finite)", op, h, s)
			}
		}
	}
	if p.NTok == 0 || h0 == h1 {
		return nil
	}
	npos := p.Pos0 + p.NTok
	group := p.NHead / p.NHeadKV
	gEnd := (h1-1)/group + 1
	if (p.NTok > 1 && (p.QStride < h1*p.HeadDim || p.OutStride < h1*p.HeadDim)) || p.KVStride < gEnd*p.HeadDim {
		return fmt.Errorf("kernels.%s: strides q %d kv %d out %d too small", op, p.QStride, p.KVStride, p.OutStride)
	}
	if int64(len(p.Q)) < need2D(p.NTok, h1*p.HeadDim, p.QStride) ||
		int64(len(p.Out)) < need2D(p.NTok, h1*p.HeadDim, p.OutStride) ||
		int64(len(p.K)) < need2D(npos, gEnd*p.HeadDim, p.KVStride) ||
		int64(len(p.V)) < need2D(npos, gEnd*p.HeadDim, p.KVStride) {
		return fmt.Errorf("kernels.%s: slices too short (q %d, k %d, v %d, out %d) for %d tokens at pos %d",
			op, len(p.Q), len(p.K), len(p.V), len(p.Out), p.NTok, p.Pos0)
	}
	if len(scratch) < scratchNeed {
		return fmt.Errorf("kernels.%s: scratch has %d floats, need %d", op, len(scratch), scratchNeed)
	}
	return nil
}

// Attention runs causal grouped-query attention for query heads [h0, h1):
// token t (position Pos0+t) attends to cache positions 0..Pos0+t (only the
// last Window of them with a window), query head h uses kv head
// h/(NHead/NHeadKV); scores soft-capped when SoftCap > 0. Softmax and the V
// sum are in f32. scratch needs Pos0+NTok floats.
func Attention(p *AttnParams, h0, h1 int, scratch []float32) {
	if p == nil {
		panic(p.check("Attention", h0, h1, scratch, 0))
	}
	if err := p.check("Attention", h0, h1, scratch, p.Pos0+p.NTok); err != nil {
		panic(err)
	}
	if p.NTok == 0 || h0 == h1 {
		return
	}
	C.k_attention(C.int(implID()), C.int64_t(p.NTok), C.int64_t(p.Pos0), C.int64_t(p.NHead), C.int64_t(p.NHeadKV),
		C.int64_t(p.HeadDim), fptr(p.Q), C.int64_t(p.QStride), fptr(p.K), fptr(p.V), C.int64_t(p.KVStride),
		C.float(p.Scale), C.int64_t(p.Window), C.float(p.SoftCap), fptr(p.Sinks), fptr(p.Out), C.int64_t(p.OutStride),
		C.int64_t(h0), C.int64_t(h1), fptr(scratch))
}

func hptr(h []uint16) *C.k_half {
	if len(h) == 0 {
		return nil
	}
	return (*C.k_half)(unsafe.Pointer(&h[0]))
}

// AttentionF16AccScratch is the scratch AttentionF16Acc needs (floats).
func AttentionF16AccScratch(headDim int) int {
	return int(C.k_attention_f16acc_scratch(C.int64_t(max(headDim, 0))))
}

// AttentionTiledScratch is the scratch AttentionTiled needs (floats).
func AttentionTiledScratch(headDim int) int {
	return int(C.k_attention_tiled_scratch(C.int64_t(max(headDim, 0))))
}

// AttentionF16Acc is causal grouped-query attention over an f16 KV cache
// with the numerics of the reference build's CPU flash attention for fewer
// than 64 query rows (llama.cpp, f16 KV cache): K.Q in a fixed 4x16-lane FMA
// order, online softmax with glibc's expf, and the V accumulator rounded to
// f16 after every update (the exact rule is in csrc/kernels.h,
// k_attention_f16acc); positions outside the sliding window are skipped as
// the reference skips its -inf mask entries, and SoftCap follows the
// reference's order (scale, then cap * tanhf, then the mask). Q must hold
// f16-representable values (the caller rounds them). Every kernel set gives
// the same bits (tanhf is the C library's: glibc's is the reference's).
// scratch needs AttentionF16AccScratch(HeadDim) floats.
func AttentionF16Acc(p *AttnF16Params, h0, h1 int, scratch []float32) {
	attentionF16("AttentionF16Acc", false, p, h0, h1, scratch)
}

// AttentionTiled is causal grouped-query attention over an f16 KV cache with
// the numerics of the reference build's tiled CPU flash attention (64 or
// more query rows): Q in f32, positions in tiles of 64, f32 FMA chains for
// the scores and the V sums, ggml's vector exp inside a tile (the exact rule
// is in csrc/kernels.h, k_attention_tiled); with a sliding window the
// positions outside it are masked lanes of their tiles, and tiles with no
// position in the window are skipped. Every kernel set gives the same bits.
// scratch needs AttentionTiledScratch(HeadDim) floats.
func AttentionTiled(p *AttnF16Params, h0, h1 int, scratch []float32) {
	attentionF16("AttentionTiled", true, p, h0, h1, scratch)
}

// attentionF16 checks p and runs k_attention_tiled (tiled) or
// k_attention_f16acc.
func attentionF16(op string, tiled bool, p *AttnF16Params, h0, h1 int, scratch []float32) {
	if p == nil {
		panic(p.check(op, h0, h1, scratch, 0))
	}
	need := AttentionF16AccScratch(p.HeadDim)
	if tiled {
		need = AttentionTiledScratch(p.HeadDim)
	}
	if err := p.check(op, h0, h1, scratch, need); err != nil {
		panic(err)
	}
	if p.NTok == 0 || h0 == h1 {
		return
	}
	impl, q, k, v, out := C.int(implID()), fptr(p.Q), hptr(p.K), hptr(p.V), fptr(p.Out)
	ntok, pos0, nh, nkv, hd := C.int64_t(p.NTok), C.int64_t(p.Pos0), C.int64_t(p.NHead), C.int64_t(p.NHeadKV), C.int64_t(p.HeadDim)
	qs, kvs, outs, win := C.int64_t(p.QStride), C.int64_t(p.KVStride), C.int64_t(p.OutStride), C.int64_t(p.Window)
	if tiled {
		C.k_attention_tiled(impl, ntok, pos0, nh, nkv, hd, q, qs, k, v, kvs, C.float(p.Scale), win, C.float(p.SoftCap),
			fptr(p.Sinks), out, outs, C.int64_t(h0), C.int64_t(h1), fptr(scratch))
	} else {
		C.k_attention_f16acc(impl, ntok, pos0, nh, nkv, hd, q, qs, k, v, kvs, C.float(p.Scale), win, C.float(p.SoftCap),
			fptr(p.Sinks), out, outs, C.int64_t(h0), C.int64_t(h1), fptr(scratch))
	}
}

// cExpf is the C library's expf (tests compare the kernels' expf with it).
func cExpf(x float32) float32 { return float32(C.expf(C.float(x))) }

// Tanhf is the C library's tanhf, the one the attention kernels soft-cap
// with (and ggml's tanh op calls): on glibc the reference build's function,
// so Go code can reproduce a capped score or logit bit for bit. One cgo
// call per value; meant for tests and scalar use.
func Tanhf(x float32) float32 { return float32(C.tanhf(C.float(x))) }

// Logf is the C library's logf (the reference's YaRN RoPE parameters use it;
// glibc's is the reference build's).
func Logf(x float32) float32 { return float32(C.logf(C.float(x))) }

// RMSNorm sets out = x / sqrt(mean(x^2) + eps) * w (w may be nil); the sum of
// squares is accumulated in double. out may be x.
func RMSNorm(out, x, w []float32, eps float32) {
	if len(out) < len(x) || (w != nil && len(w) < len(x)) {
		panic(fmt.Errorf("kernels.RMSNorm: out %d / w %d shorter than x %d", len(out), len(w), len(x)))
	}
	if len(x) == 0 {
		return
	}
	C.k_rmsnorm(C.int(implID()), fptr(out), fptr(x), fptr(w), C.int64_t(len(x)), C.float(eps))
}

// RoPERows rotates the first nRot dims of each of nHeads heads of each of
// ntok rows of x ([ntok][nHeads*headDim]); row t uses the cos/sin tables
// cos[t*nRot/2:] and sin[t*nRot/2:] (nRot/2 entries for its own position).
// neox=false: pairs (2i, 2i+1); neox=true: pairs (i, i+nRot/2). Each output
// is one FMA with the other product rounded, as the reference build computes
// it: x0' = fma(x0, cos, -(x1*sin)), x1' = fma(x0, sin, x1*cos). One call
// into C for all rows.
func RoPERows(x []float32, ntok, nHeads, headDim, nRot int, cos, sin []float32, neox bool) {
	if ntok < 0 || nHeads < 0 || headDim < 0 || nRot < 0 || nRot%2 != 0 || nRot > headDim {
		panic(fmt.Errorf("kernels.RoPE: bad shape rows %d heads %d head_dim %d n_rot %d", ntok, nHeads, headDim, nRot))
	}
	rowLen := need2D(nHeads, headDim, headDim)
	if int64(len(x)) < need2D(ntok, int(rowLen), int(rowLen)) ||
		int64(len(cos)) < need2D(ntok, nRot/2, nRot/2) || int64(len(sin)) < need2D(ntok, nRot/2, nRot/2) {
		panic(fmt.Errorf("kernels.RoPE: slices too short for %d rows (x %d, cos %d, sin %d)", ntok, len(x), len(cos), len(sin)))
	}
	if ntok == 0 || nHeads == 0 || nRot == 0 {
		return
	}
	C.k_rope_rows(C.int(implID()), fptr(x), C.int64_t(ntok), C.int64_t(nHeads), C.int64_t(headDim), C.int64_t(nRot), fptr(cos), fptr(sin), boolInt(neox))
}

// SwiGLU sets out[t*n+i] = silu(gate[t*n+i]) * up[t*n+i] for ntok rows of n
// values and i in [i0, i1), with the reference build's numerics: silu(g) =
// g / (1 + exp(-g)), exp being ggml's vector exp on the row's 16-lane blocks
// (i < n &^ 15) and glibc's expf on the tail. out may be gate.
func SwiGLU(out, gate, up []float32, ntok, n, i0, i1 int) {
	glu("SwiGLU", out, gate, up, ntok, n, i0, i1, func() {
		C.k_swiglu(C.int(implID()), fptr(out), fptr(gate), fptr(up), C.int64_t(ntok), C.int64_t(n), C.int64_t(i0), C.int64_t(i1))
	})
}

// Add sets out[i] = a[i] + b[i] for i < len(out).
func Add(out, a, b []float32) {
	elementwise("Add", "a", "b", out, a, b, func() {
		C.k_add(C.int(implID()), fptr(out), fptr(a), fptr(b), C.int64_t(len(out)))
	})
}

// elementwise runs kernel, an element-wise op writing out[:len(out)] from a
// and b (called an and bn in the error), after checking that a and b cover out.
func elementwise(op, an, bn string, out, a, b []float32, kernel func()) {
	if len(a) < len(out) || len(b) < len(out) {
		panic(fmt.Errorf("kernels.%s: %s %d / %s %d shorter than out %d", op, an, len(a), bn, len(b), len(out)))
	}
	if len(out) > 0 {
		kernel()
	}
}

// Scale multiplies x by s in place.
func Scale(x []float32, s float32) {
	if len(x) == 0 {
		return
	}
	C.k_scale(C.int(implID()), fptr(x), C.float(s), C.int64_t(len(x)))
}

// glu runs kernel, a gated activation over elements [i0, i1) of ntok rows of
// n, after checking its arguments.
func glu(op string, out, gate, up []float32, ntok, n, i0, i1 int, kernel func()) {
	if ntok < 0 || n < 0 || i0 < 0 || i1 > n || i0 > i1 {
		panic(fmt.Errorf("kernels.%s: bad range [%d, %d) of %d rows of %d", op, i0, i1, ntok, n))
	}
	if ntok == 0 || i0 == i1 {
		return
	}
	need := (ntok-1)*n + i1
	if len(out) < need || len(gate) < need || len(up) < need {
		panic(fmt.Errorf("kernels.%s: out %d / gate %d / up %d shorter than %d rows of %d", op, len(out), len(gate), len(up), ntok, n))
	}
	kernel()
}
