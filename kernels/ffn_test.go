package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gelu32 is the reference's GELU in f32 (no fused operations).
func gelu32(x float32) float32 {
	const sqrt2OverPi = float32(0.79788456080286535587989211986876)
	const coefA = float32(0.044715)
	inner := float32(float32(sqrt2OverPi*x) * float32(1+float32(float32(coefA*x)*x)))
	return float32(float32(0.5*x) * float32(1+Tanhf(inner)))
}

// gegluRef transcribes k_geglu: the f16 table of GELU at f16(x).
func gegluRef(x, u float32) float32 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x * u
	}
	h := F32ToF16(x)
	return F16ToF32(F32ToF16(gelu32(F16ToF32(h)))) * u
}

func TestGeGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n := 300
	gate, up := make([]float32, 2*n), make([]float32, 2*n)
	for i := range gate {
		gate[i] = float32(rng.NormFloat64() * 4)
		up[i] = float32(rng.NormFloat64())
	}
	copy(gate, []float32{-10, 10, -9.999, 9.999, 0, float32(math.Copysign(0, -1)), 1e-8, -1e-8, 65504, -65504, 3.5e-5})
	for _, impl := range Available() {
		if err := Use(impl); err != nil {
			t.Fatal(err)
		}
		out := make([]float32, 2*n)
		copy(out, gate)
		// Two row ranges that meet in the middle, rows of n.
		GeGLU(out, out, up, 2, n, 0, 100)
		GeGLU(out, out, up, 2, n, 100, n)
		for i := range out {
			if want := gegluRef(gate[i], up[i]); math.Float32bits(out[i]) != math.Float32bits(want) {
				t.Fatalf("%s: geglu(%g, %g) = %g, want %g", impl, gate[i], up[i], out[i], want)
			}
		}
	}
	Use(Available()[len(Available())-1])
	// Every half: the table equals the direct evaluation.
	for h := 0; h < 1<<16; h++ {
		x := F16ToF32(uint16(h))
		if x != x || x <= -10 || x >= 10 {
			continue
		}
		out := []float32{x}
		GeGLU(out, out, []float32{1}, 1, 1, 0, 1)
		if want := F16ToF32(F32ToF16(gelu32(x))); math.Float32bits(out[0]) != math.Float32bits(want) {
			t.Fatalf("half %#04x: %g, want %g", h, out[0], want)
		}
	}
	if msg := panicText(func() { GeGLU(make([]float32, 3), make([]float32, 4), make([]float32, 4), 1, 4, 0, 4) }); msg == "" {
		t.Error("short out: no panic")
	}
	if msg := panicText(func() { GeGLU(nil, nil, nil, 1, 4, 3, 2) }); msg == "" {
		t.Error("inverted range: no panic")
	}
}

func TestSoftCap(t *testing.T) {
	x := []float32{0, 1, -1, 7.9, 100, -1e30, 3e-8}
	for _, c := range []float32{8, 30, 3} {
		y := append([]float32(nil), x...)
		SoftCap(y, c)
		for i, v := range x {
			want := Tanhf(v*(1/c)) * c
			if math.Float32bits(y[i]) != math.Float32bits(want) || math.Abs(float64(y[i])) > float64(c) {
				t.Errorf("cap %g: %g -> %g, want %g", c, v, y[i], want)
			}
		}
	}
	for _, c := range []float32{0, -1, float32(math.NaN()), float32(math.Inf(1))} {
		if msg := panicText(func() { SoftCap([]float32{1}, c) }); msg == "" {
			t.Errorf("cap %v: no panic", c)
		}
	}
}

func TestSoftmaxExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 8, 15, 16, 17, 64, 128, 131} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 3)
		}
		y := append([]float32(nil), x...)
		SoftmaxExact(y)
		mx := x[0]
		for _, v := range x {
			mx = max(mx, v)
		}
		var sum float64
		for _, v := range x {
			sum += math.Exp(float64(v - mx))
		}
		var tot float64
		for i, v := range x {
			want := math.Exp(float64(v-mx)) / sum
			if math.Abs(float64(y[i])-want) > 1e-6*want+1e-12 {
				t.Fatalf("n %d: p[%d] = %g, want %g", n, i, y[i], want)
			}
			tot += float64(y[i])
		}
		if math.Abs(tot-1) > 1e-5 {
			t.Errorf("n %d: sum %g", n, tot)
		}
		if n < 16 { // only the expf tail: exactly expf(x - max) * f32(1/sum)
			var s float64
			e := make([]float32, n)
			for i, v := range x {
				e[i] = cExpf(v - mx)
				s += float64(e[i])
			}
			inv := float32(1 / s)
			for i := range e {
				if w := e[i] * inv; math.Float32bits(w) != math.Float32bits(y[i]) {
					t.Fatalf("n %d: p[%d] = %g, want %g (expf tail)", n, i, y[i], w)
				}
			}
		}
	}
}

func TestRMSNormRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows, n := 7, 64
	x, w := make([]float32, rows*n), make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range w {
		w[i] = 1 + float32(rng.NormFloat64())/10
	}
	for _, impl := range Available() {
		Use(impl)
		got := make([]float32, rows*n)
		RMSNormRows(got, x, w, rows, n, 1e-6)
		for r := 0; r < rows; r++ {
			want := make([]float32, n)
			RMSNorm(want, x[r*n:(r+1)*n], w, 1e-6)
			for i := range want {
				if math.Float32bits(got[r*n+i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: row %d elem %d: %g, want %g", impl, r, i, got[r*n+i], want[i])
				}
			}
		}
	}
	Use(Available()[len(Available())-1])
	if msg := panicText(func() { RMSNormRows(make([]float32, 10), x, w, rows, n, 1e-6) }); msg == "" {
		t.Error("short out: no panic")
	}
}
