package kernels

import "github.com/woolly-llm/woolly/ggml"

// Type is a ggml tensor type id; its facts (names, block sizes, activation
// types) live in package ggml, which builds without cgo. The C tables in
// csrc are checked against it (types_test.go).
type Type = ggml.Type

// The type ids the kernels take (ggml's, under the names callers of the
// kernels use).
const (
	F32    = ggml.F32
	F16    = ggml.F16
	Q4_0   = ggml.Q4_0
	Q4_1   = ggml.Q4_1
	Q5_0   = ggml.Q5_0
	Q5_1   = ggml.Q5_1
	Q8_0   = ggml.Q8_0
	Q2_K   = ggml.Q2_K
	Q3_K   = ggml.Q3_K
	Q4_K   = ggml.Q4_K
	Q5_K   = ggml.Q5_K
	Q6_K   = ggml.Q6_K
	Q8_K   = ggml.Q8_K
	BF16   = ggml.BF16
	IQ4_NL = ggml.IQ4_NL
	IQ4_XS = ggml.IQ4_XS
	MXFP4  = ggml.MXFP4
)

// F32ToF16 is ggml.F32ToF16 (round to nearest even), for callers of the
// kernels that hold f16 data; TestF16ConversionMatchesC holds it to csrc's.
func F32ToF16(f float32) uint16 { return ggml.F32ToF16(f) }

// F16ToF32 is ggml.F16ToF32 (exact).
func F16ToF32(h uint16) float32 { return ggml.F16ToF32(h) }
