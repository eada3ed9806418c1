package gbnf

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMaskWide masks a 50,000-token vocabulary of lowercase words
// under a grammar that allows nearly all of them (the walk's worst case).
func BenchmarkMaskWide(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	pieces := make([][]byte, 50000)
	for i := range pieces {
		w := make([]byte, 1+r.IntN(8))
		for j := range w {
			w[j] = "abcdefghijklmnopqrstuvwxyz "[r.IntN(27)]
		}
		pieces[i] = w
	}
	v := NewVocab(len(pieces), func(id int32) []byte { return pieces[id] }, func(int32) bool { return true }, nil)
	g, err := Parse(`root ::= [a-z ]{40,60} "."`)
	if err != nil {
		b.Fatal(err)
	}
	m, err := g.NewMatcher(v)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, len(pieces))
	b.ResetTimer()
	for range b.N {
		if err := m.Mask(logits); err != nil {
			b.Fatal(err)
		}
	}
}
