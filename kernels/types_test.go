package kernels

import (
	"math"
	"testing"

	"github.com/woolly-llm/woolly/ggml"
)

// Package ggml's type table and the C tables (csrc/kernels.h's block structs
// through k_row_bytes, dispatch.c's k_act_type) agree on every type id,
// element count, byte size and activation type: one layout, checked both
// ways.
func TestTypesMatchC(t *testing.T) {
	known := 0
	for id := 0; id < 256; id++ {
		ty := Type(id)
		e, b := cBlockLayout(ty)
		if !ty.Known() {
			if e != 0 {
				t.Errorf("C has a block for type id %d (%v) that ggml cannot read", id, ty)
			}
			continue
		}
		known++
		if e != ty.BlockElems() || b != ty.BlockBytes() {
			t.Errorf("%v (id %d): ggml %d elements / %d bytes, C %d / %d", ty, id, ty.BlockElems(), ty.BlockBytes(), e, b)
		}
		// C has no dot for Q8_K weights (an activation type only): -1.
		if want, got := int(ty.ActType()), cActType(ty); got != want && !(ty == Q8_K && got == -1) {
			t.Errorf("%v: ggml activation type %v, C %d", ty, ty.ActType(), got)
		}
	}
	if known != 17 {
		t.Errorf("ggml knows %d types, want the 17 the kernels have", known)
	}
}

// ggml's bf16 widening is csrc's, bit for bit.
func TestBF16MatchesC(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		g, c := ggml.BF16ToF32(uint16(h)), bf16ToF32C(uint16(h))
		if math.Float32bits(g) != math.Float32bits(c) {
			t.Fatalf("BF16ToF32(%#04x) = %#08x, C %#08x", h, math.Float32bits(g), math.Float32bits(c))
		}
	}
}
