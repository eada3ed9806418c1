package kernels

/*
#include "../csrc/gdn.h"
*/
import "C"

import "fmt"

// DeltaNetShape is the head layout of a Gated DeltaNet layer (qwen35,
// qwen35moe, qwen3next): S the state size (rows and columns of each value
// head's state, the size of each q, k and v head), NK key heads, NV value
// heads. Value head hv reads key head hv % NK, or hv / (NV/NK) when Grouped
// (qwen3next).
type DeltaNetShape struct {
	S, NK, NV int
	Grouped   bool
}

func (sh DeltaNetShape) check(op string) error {
	if sh.S <= 0 || sh.NK <= 0 || sh.NV <= 0 || (sh.Grouped && sh.NV%sh.NK != 0) {
		return fmt.Errorf("kernels.%s: bad shape S %d, %d key heads, %d value heads (grouped %v)", op, sh.S, sh.NK, sh.NV, sh.Grouped)
	}
	return nil
}

// rowsNeed is the length n rows of width w at stride need (0 for no rows).
func rowsNeed(n, stride, w int) int {
	if n == 0 {
		return 0
	}
	return (n-1)*stride + w
}

// DeltaNetRecur runs the gated delta rule over n tokens for the value heads
// [h0, h1), as llama.cpp's CPU gated_delta_net op rounds it (csrc/gdn.h):
// for each head's state M (state[hv*S*S:], [S rows j][S]) and token t, with
// q, k (its key head) and v (value head hv) from row t of qkv (q heads, then
// k heads, then v heads, at stride qkvStride), d = decay[t*gStride+hv],
// b = beta[t*gStride+hv], each row j:
//
//	M[j] = M[j] * d;  dj = (v[j] - M[j]·k) * b;  M[j] += k * dj (fused)
//	out[t*outStride + hv*S + j] = (M[j]·q) * scale
//
// the dots in the lane order of ggml's AVX-512 vec_dot_f32 on every kernel
// set. Value heads are independent: workers take disjoint ranges.
func DeltaNetRecur(state, qkv []float32, qkvStride int, decay, beta []float32, gStride int,
	out []float32, outStride int, n int, sh DeltaNetShape, h0, h1 int, scale float32) {
	const op = "DeltaNetRecur"
	if err := sh.check(op); err != nil {
		panic(err)
	}
	S, nK, nV := sh.S, sh.NK, sh.NV
	if n < 0 || h0 < 0 || h1 > nV || h0 > h1 {
		panic(fmt.Errorf("kernels.%s: bad range: %d tokens, heads [%d, %d) of %d", op, n, h0, h1, nV))
	}
	if qkvStride < (2*nK+nV)*S || gStride < nV || outStride < nV*S {
		panic(fmt.Errorf("kernels.%s: strides qkv %d / gates %d / out %d below the row widths %d / %d / %d",
			op, qkvStride, gStride, outStride, (2*nK+nV)*S, nV, nV*S))
	}
	if len(state) < nV*S*S || len(qkv) < rowsNeed(n, qkvStride, (2*nK+nV)*S) ||
		len(decay) < rowsNeed(n, gStride, nV) || len(beta) < rowsNeed(n, gStride, nV) ||
		len(out) < rowsNeed(n, outStride, nV*S) {
		panic(fmt.Errorf("kernels.%s: state %d / qkv %d / decay %d / beta %d / out %d shorter than %d tokens of shape %+v",
			op, len(state), len(qkv), len(decay), len(beta), len(out), n, sh))
	}
	if n == 0 || h0 == h1 {
		return
	}
	grouped := C.int(0)
	if sh.Grouped {
		grouped = 1
	}
	C.k_gdn_recur(C.int(implID()), fptr(state), fptr(qkv), C.int64_t(qkvStride), fptr(decay), fptr(beta),
		C.int64_t(gStride), fptr(out), C.int64_t(outStride), C.int64_t(n), C.int64_t(S), C.int64_t(nK),
		C.int64_t(nV), C.int64_t(h0), C.int64_t(h1), grouped, C.float(scale))
}

// DeltaNetConv runs the causal convolution of K taps over n tokens for the
// channels [c0, c1) (csrc/gdn.h): in and out are rows at stride, win the
// rolling window of each channel ([channel][K-1], oldest first, updated),
// w the taps ([channel][K]); each output is K fused multiply-adds in tap
// order, as llama.cpp's ssm_conv op rounds it. out must not overlap in.
func DeltaNetConv(out, in []float32, stride, n int, win, w []float32, K, c0, c1 int) {
	const op = "DeltaNetConv"
	if K < 1 || n < 0 || c0 < 0 || c1 > stride || c0 > c1 {
		panic(fmt.Errorf("kernels.%s: bad shape: %d taps, %d tokens, channels [%d, %d) of rows of %d", op, K, n, c0, c1, stride))
	}
	if len(win) < c1*(K-1) || len(w) < c1*K || len(in) < rowsNeed(n, stride, c1) || len(out) < rowsNeed(n, stride, c1) {
		panic(fmt.Errorf("kernels.%s: win %d / w %d / in %d / out %d shorter than %d tokens of %d channels, %d taps",
			op, len(win), len(w), len(in), len(out), n, c1, K))
	}
	if n == 0 || c0 == c1 {
		return
	}
	C.k_gdn_conv(C.int(implID()), fptr(out), fptr(in), C.int64_t(stride), C.int64_t(n), fptr(win), fptr(w),
		C.int64_t(K), C.int64_t(c0), C.int64_t(c1))
}
