package kernels

import (
	"fmt"
	"math"
)

// Type is a ggml tensor type id, as stored in GGUF tensor infos.
type Type uint32

// ggml type ids (facts of the GGUF format).
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q2_K Type = 10
	Q3_K Type = 11
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	Q8_K Type = 15
	BF16 Type = 30

	// Non-linear 4-bit quants (16-entry table kvalues_iq4nl).
	IQ4_NL Type = 20
	IQ4_XS Type = 23

	// OCP microscaling FP4: 32 E2M1 values and one E8M0 exponent.
	MXFP4 Type = 39
)

type typeInfo struct {
	name       string
	blockElems int // elements per block
	blockBytes int // bytes per block
	act        Type
}

var types = map[Type]typeInfo{
	F32:  {"F32", 1, 4, F32},
	F16:  {"F16", 1, 2, F16},
	Q4_0: {"Q4_0", 32, 18, Q8_0},
	Q4_1: {"Q4_1", 32, 20, Q8_0},
	Q5_0: {"Q5_0", 32, 22, Q8_0},
	Q5_1: {"Q5_1", 32, 24, Q8_0},
	Q8_0: {"Q8_0", 32, 34, Q8_0},
	Q2_K: {"Q2_K", 256, 84, Q8_K},
	Q3_K: {"Q3_K", 256, 110, Q8_K},
	Q4_K: {"Q4_K", 256, 144, Q8_K},
	Q5_K: {"Q5_K", 256, 176, Q8_K},
	Q6_K: {"Q6_K", 256, 210, Q8_K},
	Q8_K: {"Q8_K", 256, 292, Q8_K},

	IQ4_NL: {"IQ4_NL", 32, 18, Q8_0},
	IQ4_XS: {"IQ4_XS", 256, 136, Q8_K},
	MXFP4:  {"MXFP4", 32, 17, Q8_0},

	BF16: {"BF16", 1, 2, F32},
}

// Known reports whether t is a type Woolly can read.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// String is the ggml name in upper case ("Q4_K"), or "type(N)" for an unknown id.
func (t Type) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockElems is the number of elements in one block (1 for float types).
func (t Type) BlockElems() int { return types[t].blockElems }

// BlockBytes is the size in bytes of one block.
func (t Type) BlockBytes() int { return types[t].blockBytes }

// ActType is the type the activation vector is converted to before a dot
// product with a weight row of type t: Q8_K for K-quants and IQ4_XS, Q8_0
// for the 32-element quants, IQ4_NL and MXFP4, F16 for F16 weights, F32 for F32 and
// BF16.
func (t Type) ActType() Type { return types[t].act }

// RowBytes is the byte size of n elements of type t. It fails for unknown
// types and for n that is not a whole number of blocks.
func (t Type) RowBytes(n int64) (int64, error) {
	ti, ok := types[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type id %d", uint32(t))
	}
	if n < 0 || n%int64(ti.blockElems) != 0 {
		return 0, fmt.Errorf("%s: row length %d is not a multiple of the block size %d", ti.name, n, ti.blockElems)
	}
	blocks := n / int64(ti.blockElems)
	if blocks > math.MaxInt64/int64(ti.blockBytes) {
		return 0, fmt.Errorf("%s: row length %d overflows the byte size", ti.name, n)
	}
	return blocks * int64(ti.blockBytes), nil
}

// TypeByName returns the type whose ggml name is name (case-insensitive).
func TypeByName(name string) (Type, bool) {
	for t, ti := range types {
		if equalFold(ti.name, name) {
			return t, true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 32
		}
		if 'a' <= y && y <= 'z' {
			y -= 32
		}
		if x != y {
			return false
		}
	}
	return true
}
