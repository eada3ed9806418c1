package ggml

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Type is a ggml tensor type id, as stored in GGUF tensor infos.
type Type uint32

// The type ids Woolly reads (facts of the GGUF format).
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
	blockElems int // elements per block
	blockBytes int // bytes per block
	act        Type
}

// layouts holds the types Woolly can read: their block layout and the type
// the activation is converted to for a dot product with one of their rows.
var layouts = map[Type]typeInfo{
	F32:  {1, 4, F32},
	F16:  {1, 2, F16},
	Q4_0: {32, 18, Q8_0},
	Q4_1: {32, 20, Q8_0},
	Q5_0: {32, 22, Q8_0},
	Q5_1: {32, 24, Q8_0},
	Q8_0: {32, 34, Q8_0},
	Q2_K: {256, 84, Q8_K},
	Q3_K: {256, 110, Q8_K},
	Q4_K: {256, 144, Q8_K},
	Q5_K: {256, 176, Q8_K},
	Q6_K: {256, 210, Q8_K},
	Q8_K: {256, 292, Q8_K},

	IQ4_NL: {32, 18, Q8_0},
	IQ4_XS: {256, 136, Q8_K},
	MXFP4:  {32, 17, Q8_0},

	BF16: {1, 2, F32},
}

// byID is layouts as a slice indexed by type id (the zero typeInfo for an id
// Woolly cannot read): the kernels' argument checks look a type up on every
// call, and a slice index is a few instructions where a map access is tens.
var byID = func() []typeInfo {
	s := make([]typeInfo, slices.Max(slices.Collect(maps.Keys(layouts)))+1)
	for t, ti := range layouts {
		s[t] = ti
	}
	return s
}()

// info is t's layout and whether Woolly can read t.
func (t Type) info() (typeInfo, bool) {
	if uint64(t) < uint64(len(byID)) {
		ti := byID[t]
		return ti, ti.blockElems != 0
	}
	return typeInfo{}, false
}

// names names every ggml type id (facts of the format), including the ones
// Woolly cannot read, so that errors can say what a file holds.
var names = map[Type]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
	22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
	29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}

// Known reports whether t is a type Woolly can read.
func (t Type) Known() bool { _, ok := t.info(); return ok }

// String is the ggml name in upper case ("Q4_K"), or "type(N)" for an id
// the format does not name.
func (t Type) String() string {
	if name, ok := names[t]; ok {
		return name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Unsupported is the reason a tensor of type t cannot be read ("tensor type
// Q8_1 (id 9) is not supported", "unknown tensor type id 77").
func (t Type) Unsupported() string {
	if name, ok := names[t]; ok {
		return fmt.Sprintf("tensor type %s (id %d) is not supported", name, uint32(t))
	}
	return fmt.Sprintf("unknown tensor type id %d", uint32(t))
}

// BlockElems is the number of elements in one block (1 for float types, 0
// for a type Woolly cannot read).
func (t Type) BlockElems() int { ti, _ := t.info(); return ti.blockElems }

// BlockBytes is the size in bytes of one block (0 for a type Woolly cannot
// read).
func (t Type) BlockBytes() int { ti, _ := t.info(); return ti.blockBytes }

// ActType is the type the activation vector is converted to before a dot
// product with a weight row of type t: Q8_K for K-quants and IQ4_XS, Q8_0
// for the 32-element quants, IQ4_NL and MXFP4, F16 for F16 weights, F32 for
// F32 and BF16.
func (t Type) ActType() Type { ti, _ := t.info(); return ti.act }

// RowBytes is the byte size of n elements of type t. It fails for unknown
// types and for n that is not a whole number of blocks.
func (t Type) RowBytes(n int64) (int64, error) {
	ti, ok := t.info()
	if !ok {
		return 0, fmt.Errorf("unknown tensor type id %d", uint32(t))
	}
	if n < 0 || n%int64(ti.blockElems) != 0 {
		return 0, fmt.Errorf("%s: row length %d is not a multiple of the block size %d", t, n, ti.blockElems)
	}
	blocks := n / int64(ti.blockElems)
	if blocks > math.MaxInt64/int64(ti.blockBytes) {
		return 0, fmt.Errorf("%s: row length %d overflows the byte size", t, n)
	}
	return blocks * int64(ti.blockBytes), nil
}

// TypeByName returns the readable type whose ggml name is name
// (case-insensitive).
func TypeByName(name string) (Type, bool) {
	for t := range layouts {
		if equalFold(names[t], name) {
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

// fileTypeNames maps general.file_type (llama_ftype) to its llama.cpp name.
var fileTypeNames = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// FileTypeName is the llama.cpp name of a general.file_type value ("Q4_K_M"),
// or "" for an unknown value.
func FileTypeName(ft uint64) string { return fileTypeNames[ft] }

// Types lists the types Woolly can read, in id order.
func Types() []Type {
	ts := slices.Sorted(maps.Keys(layouts))
	return ts
}
