package kernels

import (
	"strings"
	"testing"
)

func TestRowBytes(t *testing.T) {
	cases := []struct {
		t    Type
		n    int64
		want int64
		ok   bool
	}{
		{F32, 3, 12, true},
		{Q4_K, 512, 288, true},
		{Q4_K, 100, 0, false},
		{Q2_K, 512, 168, true},
		{Q3_K, 768, 330, true},
		{Q3_K, 128, 0, false},
		{Q8_0, 64, 68, true},
		{F32, 1 << 62, 0, false}, // overflows int64 bytes
		{Type(99), 32, 0, false},
		{Q4_0, -32, 0, false},
		{IQ4_NL, 96, 54, true},
		{IQ4_NL, 48, 0, false},
		{IQ4_XS, 512, 272, true},
		{IQ4_XS, 128, 0, false},
		{MXFP4, 96, 51, true},
		{MXFP4, 48, 0, false},
	}
	for _, c := range cases {
		got, err := c.t.RowBytes(c.n)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%v.RowBytes(%d) = %d, %v; want %d, ok=%v", c.t, c.n, got, err, c.want, c.ok)
		}
	}
}

// The IQ4 types and MXFP4 by id and name, with the activation type their
// dots take.
func TestIQ4MXFP4Types(t *testing.T) {
	for _, c := range []struct {
		t         Type
		id        uint32
		name      string
		act       Type
		elems, by int
	}{
		{IQ4_NL, 20, "IQ4_NL", Q8_0, 32, 18},
		{IQ4_XS, 23, "IQ4_XS", Q8_K, 256, 136},
		{MXFP4, 39, "MXFP4", Q8_0, 32, 17},
	} {
		if uint32(c.t) != c.id || !c.t.Known() || c.t.String() != c.name || c.t.ActType() != c.act ||
			c.t.BlockElems() != c.elems || c.t.BlockBytes() != c.by {
			t.Errorf("%v: id %d known %v act %v block %d/%d; want id %d, %s, act %v, block %d/%d", c.t, uint32(c.t),
				c.t.Known(), c.t.ActType(), c.t.BlockElems(), c.t.BlockBytes(), c.id, c.name, c.act, c.elems, c.by)
		}
		for _, name := range []string{c.name, strings.ToLower(c.name)} {
			if got, ok := TypeByName(name); !ok || got != c.t {
				t.Errorf("TypeByName(%q) = %v, %v; want %v", name, got, ok, c.t)
			}
		}
	}
}

// The Go block table (types.go) and the C structs (csrc/kernels.h) agree on
// every type id, element count and byte size: one layout, checked both ways.
func TestBlockSizesMatchC(t *testing.T) {
	for ty, ti := range types {
		e, b := cBlockLayout(ty)
		if e != ti.blockElems || b != ti.blockBytes {
			t.Errorf("%v (id %d): Go %d elements / %d bytes, C %d / %d", ty, uint32(ty), ti.blockElems, ti.blockBytes, e, b)
		}
	}
	for id := 0; id < 40; id++ {
		if e, _ := cBlockLayout(Type(id)); e != 0 && !Type(id).Known() {
			t.Errorf("C has a block for type id %d that Go does not know", id)
		}
	}
}
