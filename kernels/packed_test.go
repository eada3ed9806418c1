package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// packedRows makes nrows random rows of wt with n elements: each row random,
// all-zero or with extreme scales (randomRow's styles), so a group mixes them;
// the first row is always random, so that packing visibly moves bytes.
func packedRows(wt Type, n, nrows int, rng *rand.Rand) []byte {
	var w []byte
	for r := 0; r < nrows; r++ {
		style := rng.Intn(3)
		if r == 0 {
			style = 0
		}
		w = append(w, randomRow(wt, n, rng, style)...)
	}
	return w
}

// Every set with a packed layout: MatVecPacked and MatMulQPacked over the
// packed matrix give, bit for bit, MatVec / MatMulQ of the same set over the
// unpacked rows (and, on amd64, of ref: the scalar reference), for whole
// matrices and G-aligned sub-ranges, row counts with and without tails, 1 to
// 16 tokens, and the packed bytes differ from the source (the layout is
// really used).
func TestPackedMatchesUnpacked(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	tested := 0
	for _, impl := range simdImpls(t) {
		for _, wt := range quantTypes {
			var g int
			withImpl(t, impl, func() { g = PackRows(wt) })
			if g == 0 {
				continue
			}
			tested++
			for _, n := range []int{wt.BlockElems(), 3 * wt.BlockElems(), 8 * wt.BlockElems()} {
				for _, nrows := range []int{g, 2*g + 3, 5*g + g - 1, 8*g + 1, 17 * g} {
					rb, _ := wt.RowBytes(int64(n))
					w := packedRows(wt, n, nrows, rng)
					pw := make([]byte, len(w))
					var p Packing
					withImpl(t, impl, func() {
						var err error
						p, err = Pack(wt, n, w, int(rb), nrows, pw)
						require.NoError(t, err)
					})
					require.Equal(t, g, p.Rows())
					tail := nrows / g * g * int(rb)
					require.Equal(t, w[tail:], pw[tail:], "tail rows are copied")
					if n > 0 {
						require.NotEqual(t, w[:tail], pw[:tail], "%s %v: packed bytes equal the source", impl, wt)
					}
					ab, _ := wt.ActType().RowBytes(int64(n))
					for _, ntok := range []int{1, 2, 3, 4, 5, 6, 7, 8, 16} {
						a := make([]byte, ntok*int(ab))
						for tk := 0; tk < ntok; tk++ {
							x := randomF32(n, rng)
							if tk == 1 {
								clear(x) // an all-zero token
							}
							QuantizeAct(wt.ActType(), x, a[tk*int(ab):])
						}
						ranges := [][2]int{{0, nrows}, {g, nrows}, {0, g}, {nrows / g * g, nrows}}
						for _, rr := range ranges {
							r0, r1 := rr[0], rr[1]
							if r0 > r1 || r1 > nrows {
								continue
							}
							want := make([]float32, ntok*nrows)
							got := make([]float32, ntok*nrows)
							ref := make([]float32, ntok*nrows)
							for i := range got {
								got[i] = float32(math.NaN())
								want[i], ref[i] = got[i], got[i]
							}
							withImpl(t, impl, func() {
								if ntok == 1 {
									MatVec(wt, n, w, int(rb), a, want, r0, r1)
									MatVecPacked(p, wt, n, pw, int(rb), nrows, a, got, r0, r1)
								} else {
									MatMulQ(wt, n, w, int(rb), r0, r1, a, int(ab), ntok, want, nrows)
									MatMulQPacked(p, wt, n, pw, int(rb), nrows, r0, r1, a, int(ab), ntok, got, nrows)
								}
							})
							withImpl(t, "ref", func() {
								MatMulQ(wt, n, w, int(rb), r0, r1, a, int(ab), ntok, ref, nrows)
							})
							for i := range want {
								require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]),
									"%s %v n=%d nrows=%d rows [%d,%d) ntok=%d: token %d row %d: packed %g, unpacked %g",
									impl, wt, n, nrows, r0, r1, ntok, i/nrows, i%nrows, got[i], want[i])
								if exactMatMul && !batchOrder(wt) {
									require.Equal(t, math.Float32bits(ref[i]), math.Float32bits(got[i]),
										"%s %v n=%d nrows=%d ntok=%d: entry %d: packed %g, ref %g", impl, wt, n, nrows, ntok, i, got[i], ref[i])
								}
							}
						}
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no kernel set here packs any type")
	}
}

// Bad packed calls are refused with an error: ranges that split a group,
// a matrix packed by a set with another layout, an unpacked Packing.
func TestPackedErrors(t *testing.T) {
	var impl string
	for _, s := range simdImpls(t) {
		withImpl(t, s, func() {
			if PackRows(Q4_K) > 0 {
				impl = s
			}
		})
	}
	if impl == "" {
		t.Skip("no set packs Q4_K")
	}
	rng := rand.New(rand.NewSource(23))
	const n, nrows = 256, 21
	rb, _ := Q4_K.RowBytes(n)
	w := packedRows(Q4_K, n, nrows, rng)
	pw := make([]byte, len(w))
	a := make([]byte, 292)
	y := make([]float32, 4*nrows)
	withImpl(t, impl, func() {
		p, err := Pack(Q4_K, n, w, int(rb), nrows, pw)
		require.NoError(t, err)
		g := p.Rows()
		require.Panics(t, func() { MatVecPacked(p, Q4_K, n, pw, int(rb), nrows, a, y, 1, nrows) }, "r0 inside a group")
		require.Panics(t, func() { MatVecPacked(p, Q4_K, n, pw, int(rb), nrows, a, y, 0, g+1) }, "r1 inside a group")
		require.Panics(t, func() { MatVecPacked(p, Q4_K, n, pw, int(rb), nrows, a, y, 0, nrows+1) }, "past the matrix")
		require.Panics(t, func() { MatVecPacked(Packing{}, Q4_K, n, pw, int(rb), nrows, a, y, 0, nrows) }, "not packed")
		require.Panics(t, func() { MatMulQPacked(p, Q4_K, n, pw, int(rb), nrows, 0, g+1, a, 292, 1, y, nrows) }, "r1 inside a group")
		_, err = Pack(Q4_K, n, w, int(rb), nrows, w)
		require.Error(t, err, "in place")
		_, err = Pack(Q4_K, n, w, int(rb), nrows, pw[:len(pw)-1])
		require.Error(t, err, "short dst")
		withImpl(t, "ref", func() {
			require.Panics(t, func() { MatVecPacked(p, Q4_K, n, pw, int(rb), nrows, a, y, 0, nrows) }, "ref has no packed layout")
			require.Equal(t, 0, PackRows(Q4_K))
			_, err := Pack(Q4_K, n, w, int(rb), nrows, pw)
			require.Error(t, err)
		})
	})
}
