package kernels

import (
	"math"
	"math/rand"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/ggml"
)

// simdImpls are the non-reference kernel sets this CPU can run.
func simdImpls(t *testing.T) []string {
	av := Available()[1:]
	if len(av) == 0 {
		t.Skip("no SIMD kernel set on this CPU")
	}
	return av
}

// Every SIMD dequantizer gives the same bits as ref, on random, all-zero and
// extreme-scale blocks (max f16, subnormal f16, negative scales).
func TestDequantImplsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	for _, impl := range simdImpls(t) {
		for _, ty := range weightTypes {
			for _, n := range blocksFor(ty) {
				for style := 0; style < 3; style++ {
					src := randomRow(ty, n, rng, style)
					want, got := make([]float32, n), make([]float32, n)
					withImpl(t, "ref", func() { Dequant(ty, src, want) })
					withImpl(t, impl, func() { Dequant(ty, src, got) })
					for i := range want {
						if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
							t.Fatalf("%s %v n=%d style=%d elem %d: %g (%#x) != ref %g (%#x)", impl, ty, n, style, i,
								got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}

// Every SIMD activation quantizer gives the same bytes as ref, including f16
// subnormals and overflow for F16.
func TestQuantizeImplsSameBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, impl := range simdImpls(t) {
		for _, act := range []Type{Q8_K, Q8_0, F16} {
			lens := []int{0, 256, 512, 2048}
			if act == F16 {
				lens = vecLens
			}
			for _, n := range lens {
				for name, x := range actInputs(n, rng) {
					if act == F16 && name == "tiny" {
						for i := range x {
							x[i] *= 1e24 // ~1e-6: f16 subnormals
						}
					}
					rb, _ := act.RowBytes(int64(n))
					want, got := make([]byte, rb), make([]byte, rb)
					withImpl(t, "ref", func() { QuantizeAct(act, x, want) })
					withImpl(t, impl, func() { QuantizeAct(act, x, got) })
					require.Equal(t, want, got, "%s %v %s n=%d", impl, act, name, n)
				}
			}
		}
	}
}

// SIMD dots agree with ref: bit for bit on amd64 (ref spells out the x86
// kernels' summation order), elsewhere within a relative tolerance of
// sum |w_i a_i| (exact integer block sums, only the f32 order differs).
func TestDotImplsVsRef(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for _, impl := range simdImpls(t) {
		for _, wt := range weightTypes {
			for _, n := range blocksFor(wt) {
				if n == 0 {
					continue
				}
				for style := 0; style < 3; style++ {
					for name, x := range actInputs(n, rng) {
						w := randomRow(wt, n, rng, style)
						rb, _ := wt.RowBytes(int64(n))
						a, af := actFor(t, wt, x)
						wf := make([]float32, n)
						Dequant(wt, w, wf)
						_, abs := exactDot(wf, af)
						if math.IsInf(abs, 0) || math.IsNaN(abs) || abs > 1e37 {
							continue
						}
						var want, got [1]float32
						withImpl(t, "ref", func() { MatVec(wt, n, w, int(rb), a, want[:], 0, 1) })
						withImpl(t, impl, func() { MatVec(wt, n, w, int(rb), a, got[:], 0, 1) })
						if exactMatMul && math.Float32bits(got[0]) != math.Float32bits(want[0]) {
							t.Fatalf("%s %v n=%d style=%d act=%s: %g != ref %g (x86 kernels and ref share the summation order)", impl, wt, n, style, name, got[0], want[0])
						}
						if d := math.Abs(float64(got[0] - want[0])); d > dotTol(abs) {
							t.Fatalf("%s %v n=%d style=%d act=%s: %g vs ref %g (|diff| %g > %g)", impl, wt, n, style, name, got[0], want[0], d, dotTol(abs))
						}
					}
				}
			}
		}
	}
}

// The child half of TestDispatchFallback: prints the active set.
func TestPrintImplChild(t *testing.T) {
	if os.Getenv("WOOLLY_KERNELS_CHILD") != "1" {
		t.Skip("run by TestDispatchFallback")
	}
	t.Logf("IMPL=%s", Impl())
}

// GODEBUG=cpu.avx2=off and WOOLLY_KERNELS=ref both make init choose ref.
func TestDispatchFallback(t *testing.T) {
	if goruntime.GOARCH != "amd64" {
		t.Skip("GODEBUG=cpu.avx2 applies to amd64 (and the binary may run under an emulator)")
	}
	if Available()[len(Available())-1] == "ref" {
		t.Skip("only ref on this CPU")
	}
	var base []string // the environment without WOOLLY_KERNELS
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "WOOLLY_KERNELS=") {
			base = append(base, e)
		}
	}
	for _, env := range []string{"GODEBUG=cpu.avx2=off", "WOOLLY_KERNELS=ref"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPrintImplChild$", "-test.v")
		cmd.Env = append(append([]string(nil), base...), "WOOLLY_KERNELS_CHILD=1", env)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		require.True(t, strings.Contains(string(out), "IMPL=ref"), "%s: %s", env, out)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrintImplChild$", "-test.v")
	cmd.Env = append(base, "WOOLLY_KERNELS_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "IMPL="+Available()[len(Available())-1])
}

// The VNNI build computes the same integer sums as the AVX2 build, so the
// two give the same bits (a property of the x86 kernels, checked here so a
// change that breaks it is noticed).
func TestAVX512MatchesAVX2Bits(t *testing.T) {
	av := Available()
	has := func(s string) bool {
		for _, a := range av {
			if a == s {
				return true
			}
		}
		return false
	}
	if !has("avx2") || !has("avx512") {
		t.Skip("needs both avx2 and avx512")
	}
	rng := rand.New(rand.NewSource(13))
	for _, wt := range quantTypes {
		n := 8 * max(wt.BlockElems(), 32)
		const rows, ntok = 19, 7
		rb, _ := wt.RowBytes(int64(n))
		var w []byte
		for r := 0; r < rows; r++ {
			w = append(w, randomRow(wt, n, rng, r%3)...)
		}
		ab, _ := wt.ActType().RowBytes(int64(n))
		a := make([]byte, ntok*int(ab))
		for tk := 0; tk < ntok; tk++ {
			QuantizeAct(wt.ActType(), randomF32(n, rng), a[tk*int(ab):])
		}
		var ys [2][]float32
		var yv [2][]float32
		for i, impl := range []string{"avx2", "avx512"} {
			ys[i] = make([]float32, ntok*rows)
			yv[i] = make([]float32, rows)
			withImpl(t, impl, func() {
				MatMulQ(wt, n, w, int(rb), 0, rows, a, int(ab), ntok, ys[i], rows)
				MatVec(wt, n, w, int(rb), a, yv[i], 0, rows)
			})
		}
		for i := range ys[0] {
			require.Equal(t, math.Float32bits(ys[0][i]), math.Float32bits(ys[1][i]), "%v MatMulQ %d", wt, i)
		}
		for i := range yv[0] {
			require.Equal(t, math.Float32bits(yv[0][i]), math.Float32bits(yv[1][i]), "%v MatVec %d", wt, i)
		}
	}
}

// weightTypes (the type list of TestDotImplsVsRef and the other kernel
// tests) is the type table's: every known type but Q8_K, each with a ref
// dot that MatVec runs, and randomRow makes blocks of each.
func TestWeightTypesFromTable(t *testing.T) {
	in := map[Type]bool{}
	for _, wt := range weightTypes {
		in[wt] = true
	}
	for _, ty := range ggml.Types() {
		if ty == Q8_K {
			require.False(t, in[ty], "Q8_K is an activation type, not a weight type")
			continue
		}
		require.True(t, in[ty], "%v is in the type table but not in weightTypes", ty)
	}
	require.Len(t, weightTypes, len(ggml.Types())-1)
	rng := rand.New(rand.NewSource(5))
	for _, wt := range weightTypes {
		n := max(wt.BlockElems(), 32)
		w := randomRow(wt, n, rng, 0)
		a, _ := actFor(t, wt, randomF32(n, rng))
		var y [1]float32
		withImpl(t, "ref", func() {
			MatVec(wt, n, w, len(w), a, y[:], 0, 1)
		})
	}
}
