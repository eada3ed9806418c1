package kernels

import (
	"math"
	"testing"
)

// TestSwiGLUOAI: gpt-oss's clamped SwiGLU against a float64 model, on
// values inside and beyond the clamp (gate capped above at the limit only,
// up clamped on both sides), in place (out = gate) and with bad arguments.
func TestSwiGLUOAI(t *testing.T) {
	const alpha, limit = 1.702, 7.0
	gate := []float32{-20, -7.5, -1, -0.25, 0, 0.5, 3, 6.99, 7, 7.01, 12, 1e30}
	up := []float32{0, -9, -7.01, -1, 2, 7, 7.5, 100, -100, 0.3, -0.3, 1}
	out := make([]float32, len(gate))
	SwiGLUOAI(out, gate, up, alpha, limit)
	for i := range gate {
		x := math.Min(float64(gate[i]), limit)
		y := math.Max(-limit, math.Min(float64(up[i]), limit))
		want := x / (1 + math.Exp(-alpha*x)) * (y + 1)
		if d := math.Abs(float64(out[i]) - want); d > 4e-7*math.Max(1, math.Abs(want)) {
			t.Errorf("gate %g up %g: %g, want %g", gate[i], up[i], out[i], want)
		}
	}
	in := append([]float32(nil), gate...)
	SwiGLUOAI(in, in, up, alpha, limit)
	for i := range in {
		if in[i] != out[i] {
			t.Fatalf("in place [%d]: %g vs %g", i, in[i], out[i])
		}
	}
	if msg := panicText(func() { SwiGLUOAI(out[:3], gate, up, alpha, limit) }); msg == "" {
		t.Error("length mismatch accepted")
	}
	if msg := panicText(func() { SwiGLUOAI(out, gate, up, alpha, 0) }); msg == "" {
		t.Error("limit 0 accepted")
	}
}
