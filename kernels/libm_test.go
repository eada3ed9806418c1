package kernels

import (
	"math"
	"testing"
)

// Expf and Logf are the C library's functions: exact at the known points
// and within an ulp of the float64 results over a sweep.
func TestExpfLogf(t *testing.T) {
	if Expf(0) != 1 || Logf(1) != 0 || !math.IsInf(float64(Expf(200)), 1) || Expf(-200) != 0 {
		t.Fatalf("Expf(0) %v, Logf(1) %v, Expf(200) %v, Expf(-200) %v", Expf(0), Logf(1), Expf(200), Expf(-200))
	}
	for x := float32(-80); x < 80; x += 0.37 {
		want := float32(math.Exp(float64(x)))
		if got := Expf(x); math.Abs(float64(got-want)) > float64(want)*1.2e-7 {
			t.Errorf("Expf(%v) = %v, want %v", x, got, want)
		}
		if x > 0 {
			want := float32(math.Log(float64(x)))
			if got := Logf(x); math.Abs(float64(got-want)) > math.Abs(float64(want))*1.2e-7+1e-30 {
				t.Errorf("Logf(%v) = %v, want %v", x, got, want)
			}
		}
	}
}
