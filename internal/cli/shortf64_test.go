package cli

import (
	"math"
	"math/rand"
	"strconv"
	"testing"
)

// shortF64 must print as the float32's shortest text and convert back to
// exactly the same float32.
func TestShortF64(t *testing.T) {
	if got := strconv.FormatFloat(shortF64(0.8), 'g', -1, 64); got != "0.8" {
		t.Errorf("shortF64(0.8) prints %s", got)
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 10000; i++ {
		v := math.Float32frombits(r.Uint32())
		if v != v || math.IsInf(float64(v), 0) {
			continue
		}
		if back := float32(shortF64(v)); back != v {
			t.Fatalf("float32(shortF64(%g)) = %g", v, back)
		}
	}
}
