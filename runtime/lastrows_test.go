package runtime

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The last layer of a pass keeps only the rows whose logits are asked for
// (keepOutputRows). A prompt's last row must come out with the bits it has
// when every row's logits are computed, in a pass of its own and through a
// batch whose prompt chunks skip the last layer's FFN altogether.
func TestLastRowMatchesAllRows(t *testing.T) {
	shared := sharedDir(t)
	paths := map[string]string{}
	for _, name := range modelNames(t, shared) {
		paths[name] = filepath.Join(shared, "models", name+".gguf")
	}
	if !testing.Short() {
		for name := range deltaNetMinis {
			paths[name] = deltaNetMini(t, name)
		}
		for name := range gemma4Minis {
			paths[name] = gemma4MiniNamed(t, name)
		}
		paths["gpt-oss-mini"] = gptOssMini(t)
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			m := loadPath(t, path, LoadOptions{Threads: 2, ContextLength: 256, PrefixCache: Ptr(int64(0))})
			if m.batchOrdered() {
				t.Skip("a type whose product sums a batch in another order than one row (pass.product)")
			}
			nv := m.cfg.NVocab
			for _, n := range []int{1, 7, 40} {
				prompt := batchPrompts(m, n)[2] // n tokens
				s := newSession(t, m, 256)
				all := evalAll(t, s, slices.Clone(prompt))
				want := all[(n-1)*nv:]
				s2 := newSession(t, m, 256)
				got, err := s2.Eval(slices.Clone(prompt), false)
				require.NoError(t, err)
				requireSameBits(t, want, got, fmt.Sprintf("%d tokens, one pass", n))

				// Through a batch: chunks of 16 (the first ones output nothing).
				b, err := m.NewBatch(BatchOptions{PromptChunk: 16})
				require.NoError(t, err)
				s3, err := b.NewSession(256)
				require.NoError(t, err)
				got, err = s3.Eval(slices.Clone(prompt), false)
				require.NoError(t, err)
				requireSameBits(t, want, got, fmt.Sprintf("%d tokens, chunks of 16", n))
				s4, err := b.NewSession(256)
				require.NoError(t, err)
				all4, err := s4.Eval(slices.Clone(prompt), true)
				require.NoError(t, err)
				requireSameBits(t, all, all4, fmt.Sprintf("%d tokens, all rows in chunks of 16", n))
			}
		})
	}
}

// batchOrdered reports whether the last layer's feed-forward has a weight
// type whose product of several rows sums in another order than one row's.
func (m *Model) batchOrdered() bool {
	l := &m.w.Layers[len(m.w.Layers)-1]
	for _, mt := range []*Mat{&l.Wgate, &l.Wup, &l.Wdown} {
		if mt.Data != nil && batchOrder(mt.Type) {
			return true
		}
	}
	return false
}
