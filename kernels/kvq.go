package kernels

/*
#include "../csrc/kernels.h"
*/
import "C"

import "fmt"

// KVCacheType reports whether t can be a KV cache type (StoreKV,
// AttentionKVQ): F16, Q8_0 or Q4_0, as llama.cpp's --cache-type-k/-v
// offer them on the CPU.
func KVCacheType(t Type) bool { return t == F16 || t == Q8_0 || t == Q4_0 }

// StoreKV writes the f32 values x as one KV cache row of type t into dst
// (t.RowBytes(len(x)) bytes): F16 rounded to nearest even, Q8_0 as the
// activation quantizer does (the reference's CPU conversion), Q4_0 with the
// reference's scalar rounding (d = max/-8, q = min(15, trunc(x/d + 8.5))).
func StoreKV(t Type, x []float32, dst []byte) {
	if !KVCacheType(t) {
		panic(fmt.Errorf("kernels.StoreKV: %v is not a KV cache type (f16, q8_0, q4_0)", t))
	}
	checkRowDst("StoreKV", t, len(x), dst, "values")
	if len(x) == 0 {
		return
	}
	if C.k_kv_store(C.int(implID()), C.int(t), fptr(x), bptr(dst), C.int64_t(len(x))) != 0 {
		panic(fmt.Errorf("kernels.StoreKV: rejected by the C kernel"))
	}
}

// AttnKVQParams describes one causal attention call over a KV cache whose
// K and V rows are F16, Q8_0 or Q4_0 (not both F16: AttentionF16Acc and
// AttentionTiled serve that):
//
//	Q   [NTok][QStride] f32     head h at Q[t*QStride + h*HeadDim:]
//	K   [Pos0+NTok] rows of KStride bytes, each KVDim values of KType; kv
//	    head g's values start KType.RowBytes(g*HeadDim) bytes into a row
//	V   the same with VStride, VType
//	Out [NTok][OutStride] f32
//
// HeadDim is a multiple of 32 (the quantized block). Scale, Window and
// SoftCap as AttnParamsOf.
type AttnKVQParams struct {
	NTok, Pos0, NHead, NHeadKV, HeadDim int
	Q                                   []float32
	QStride                             int
	KType, VType                        Type
	K, V                                []byte
	KStride, VStride                    int
	Scale                               float32
	Out                                 []float32
	OutStride                           int
	Window                              int
	SoftCap                             float32
}

// AttentionKVQScratch is the scratch (floats) AttentionKVQ needs per call.
func AttentionKVQScratch(headDim int) int {
	return int(C.k_attention_kvq_scratch(C.int64_t(max(headDim, 0))))
}

// AttentionKVQ is causal grouped-query attention for query heads [h0, h1)
// over a quantized KV cache, with the numerics of the reference build's
// one-row CPU flash attention for such a cache (whatever the number of
// query rows): Q converted to K's vec-dot type (f16, or q8_0 for a
// quantized K), the scores by that dot, the online softmax position by
// position with the C library's expf, V accumulated in f16 (F16 V) or in
// f32 after dequantizing its row. The full contract is in csrc/kernels.h
// (k_attention_kvq); every kernel set gives the same bits.
func AttentionKVQ(p *AttnKVQParams, h0, h1 int, scratch []float32) {
	const op = "AttentionKVQ"
	if p == nil {
		panic(fmt.Errorf("kernels.%s: nil params", op))
	}
	if !KVCacheType(p.KType) || !KVCacheType(p.VType) || (p.KType == F16 && p.VType == F16) {
		panic(fmt.Errorf("kernels.%s: cache types K %v V %v: want f16, q8_0 or q4_0, not both f16", op, p.KType, p.VType))
	}
	if err := checkAttnShape(op, p.NTok, p.Pos0, p.NHead, p.NHeadKV, p.HeadDim, h0, h1, p.Window, p.SoftCap); err != nil {
		panic(err)
	}
	if p.HeadDim%32 != 0 {
		panic(fmt.Errorf("kernels.%s: head_dim %d is not a multiple of 32 (the quantized block)", op, p.HeadDim))
	}
	if p.NTok == 0 || h0 == h1 {
		return
	}
	npos := p.Pos0 + p.NTok
	gEnd := (h1-1)/(p.NHead/p.NHeadKV) + 1
	kRow, _ := p.KType.RowBytes(int64(gEnd * p.HeadDim))
	vRow, _ := p.VType.RowBytes(int64(gEnd * p.HeadDim))
	if (p.NTok > 1 && (p.QStride < h1*p.HeadDim || p.OutStride < h1*p.HeadDim)) || int64(p.KStride) < kRow || int64(p.VStride) < vRow {
		panic(fmt.Errorf("kernels.%s: strides q %d k %d v %d out %d too small", op, p.QStride, p.KStride, p.VStride, p.OutStride))
	}
	if int64(len(p.Q)) < need2D(p.NTok, h1*p.HeadDim, p.QStride) ||
		int64(len(p.Out)) < need2D(p.NTok, h1*p.HeadDim, p.OutStride) ||
		int64(len(p.K)) < int64(npos-1)*int64(p.KStride)+kRow ||
		int64(len(p.V)) < int64(npos-1)*int64(p.VStride)+vRow {
		panic(fmt.Errorf("kernels.%s: slices too short (q %d, k %d, v %d, out %d) for %d tokens at pos %d",
			op, len(p.Q), len(p.K), len(p.V), len(p.Out), p.NTok, p.Pos0))
	}
	if need := AttentionKVQScratch(p.HeadDim); len(scratch) < need {
		panic(fmt.Errorf("kernels.%s: scratch has %d floats, need %d", op, len(scratch), need))
	}
	if C.k_attention_kvq(C.int(implID()), C.int64_t(p.NTok), C.int64_t(p.Pos0), C.int64_t(p.NHead), C.int64_t(p.NHeadKV),
		C.int64_t(p.HeadDim), fptr(p.Q), C.int64_t(p.QStride), C.int(p.KType), bptr(p.K), C.int64_t(p.KStride),
		C.int(p.VType), bptr(p.V), C.int64_t(p.VStride), C.float(p.Scale), C.int64_t(p.Window), C.float(p.SoftCap),
		fptr(p.Out), C.int64_t(p.OutStride), C.int64_t(h0), C.int64_t(h1), fptr(scratch)) != 0 {
		panic(fmt.Errorf("kernels.%s: rejected by the C kernel", op))
	}
}
