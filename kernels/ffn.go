package kernels

/*
#include "../csrc/kernels.h"
*/
import "C"

import (
	"fmt"
	"math"
)

func init() { C.k_init_tables() } // GeGLU's f16 GELU table

// RMSNormRows is RMSNorm on each of rows rows of n values of x ([rows][n]),
// with the same weight w (len n, or nil) for every row; one C call. out may
// be x.
func RMSNormRows(out, x, w []float32, rows, n int, eps float32) {
	if rows < 0 || n < 0 {
		panic(fmt.Errorf("kernels.RMSNormRows: bad shape %d rows of %d", rows, n))
	}
	need := need2D(rows, n, n)
	if int64(len(x)) < need || int64(len(out)) < need || (w != nil && len(w) < n) {
		panic(fmt.Errorf("kernels.RMSNormRows: x %d / out %d / w %d too short for %d rows of %d", len(x), len(out), len(w), rows, n))
	}
	if rows == 0 || n == 0 {
		return
	}
	C.k_rmsnorm_rows(C.int(implID()), fptr(out), fptr(x), fptr(w), C.int64_t(rows), C.int64_t(n), C.float(eps))
}

// GeGLU sets out[t*n+i] = gelu(gate[t*n+i]) * up[t*n+i] for ntok rows of n
// values and i in [i0, i1), with the reference build's numerics: GELU is the
// tanh approximation looked up in an f16 table at f16(gate) (0 at or below
// -10, the identity at or above 10). out may be gate.
func GeGLU(out, gate, up []float32, ntok, n, i0, i1 int) {
	glu("GeGLU", out, gate, up, ntok, n, i0, i1, func() {
		C.k_geglu(C.int(implID()), fptr(out), fptr(gate), fptr(up), C.int64_t(ntok), C.int64_t(n), C.int64_t(i0), C.int64_t(i1))
	})
}

// SoftCap replaces each x by tanh(x / cap) * cap, computed as the reference
// graph does: tanhf(x * (1/cap)) * cap. cap must be positive and finite.
func SoftCap(x []float32, cap float32) {
	if !(cap > 0) || math.IsInf(float64(cap), 0) {
		panic(fmt.Errorf("kernels.SoftCap: cap %v is not a positive finite number", cap))
	}
	if len(x) == 0 {
		return
	}
	C.k_softcap(C.int(implID()), fptr(x), C.int64_t(len(x)), C.float(cap))
}

// SoftmaxExact replaces x with softmax(x) with the reference build's numerics
// (ggml's soft_max on its AVX-512 build: ggml's vector exp on 16-lane blocks,
// expf on the tail, the sum in double, then a multiply by f32(1/sum)); the
// same bits on every kernel set. A mixture-of-experts router uses it, where a
// last-bit difference could change which experts are chosen.
func SoftmaxExact(x []float32) {
	if len(x) == 0 {
		return
	}
	C.k_softmax_exact(C.int(implID()), fptr(x), C.int64_t(len(x)))
}

// SwiGLUOAI sets out[i] = x / (1 + expf(-alpha*x)) * (y + 1) with x =
// min(gate[i], limit) and y = up[i] clamped to [-limit, limit]: gpt-oss's
// gated activation (ggml's swiglu_oai; the model uses alpha 1.702 and limit
// 7), with the reference build's scalar numerics (glibc's expf). out may be
// gate; the three have the same length.
func SwiGLUOAI(out, gate, up []float32, alpha, limit float32) {
	if len(gate) != len(out) || len(up) != len(out) {
		panic(fmt.Errorf("kernels.SwiGLUOAI: lengths out %d, gate %d, up %d differ", len(out), len(gate), len(up)))
	}
	if !(limit > 0) || math.IsInf(float64(limit), 0) || math.IsNaN(float64(alpha)) || math.IsInf(float64(alpha), 0) {
		panic(fmt.Errorf("kernels.SwiGLUOAI: alpha %v / limit %v must be finite (limit > 0)", alpha, limit))
	}
	if len(out) == 0 {
		return
	}
	C.k_swiglu_oai(C.int(implID()), fptr(out), fptr(gate), fptr(up), C.int64_t(len(out)), C.float(alpha), C.float(limit))
}
