package ggml

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
		{Type(9), 32, 0, false}, // Q8_1: named, not readable
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

// Every readable type is named, and names that Woolly cannot read are
// neither Known nor found by TypeByName, but still said in errors.
func TestNames(t *testing.T) {
	for ty := range layouts {
		if _, ok := names[ty]; !ok {
			t.Errorf("readable type id %d has no name", uint32(ty))
		}
	}
	q81 := Type(9)
	if q81.Known() || q81.String() != "Q8_1" || q81.Unsupported() != "tensor type Q8_1 (id 9) is not supported" {
		t.Errorf("Q8_1: known %v, %q, %q", q81.Known(), q81, q81.Unsupported())
	}
	if _, ok := TypeByName("Q8_1"); ok {
		t.Error("TypeByName(Q8_1) found a type Woolly cannot read")
	}
	if got := Type(77).Unsupported(); got != "unknown tensor type id 77" {
		t.Errorf("Type(77).Unsupported() = %q", got)
	}
	if got := Type(77).String(); got != "type(77)" {
		t.Errorf("Type(77).String() = %q", got)
	}
	if FileTypeName(15) != "Q4_K_M" || FileTypeName(4) != "" {
		t.Errorf("FileTypeName(15) = %q, (4) = %q", FileTypeName(15), FileTypeName(4))
	}
}

// The id-indexed lookups answer what the layouts table says, for every id a
// uint32 can hold that is near a table entry, and the largest.
func TestLookupsMatchLayouts(t *testing.T) {
	ids := []Type{1<<32 - 1, 1 << 31, Type(len(byID)), Type(len(byID) + 1)}
	for id := range 300 {
		ids = append(ids, Type(id))
	}
	for _, ty := range ids {
		ti, ok := layouts[ty]
		if ty.Known() != ok || ty.BlockElems() != ti.blockElems || ty.BlockBytes() != ti.blockBytes || ty.ActType() != ti.act {
			t.Errorf("type id %d: known %v, block %d/%d, act %v; the table says %v, %d/%d, %v", uint32(ty), ty.Known(),
				ty.BlockElems(), ty.BlockBytes(), ty.ActType(), ok, ti.blockElems, ti.blockBytes, ti.act)
		}
		if _, err := ty.RowBytes(256); (err == nil) != ok {
			t.Errorf("type id %d: RowBytes(256) error %v, readable %v", uint32(ty), err, ok)
		}
	}
}
