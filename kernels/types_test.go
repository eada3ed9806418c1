package kernels

import "testing"

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
	}
	for _, c := range cases {
		got, err := c.t.RowBytes(c.n)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%v.RowBytes(%d) = %d, %v; want %d, ok=%v", c.t, c.n, got, err, c.want, c.ok)
		}
	}
}
