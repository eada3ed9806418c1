package runtime

import (
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/woolly-llm/woolly/kernels"
)

// A model loaded with packed weights gives the same logits, bit for bit, as
// the same model unpacked: prompts of 1, 3 and 37 tokens (the one-token
// gemv, the per-token path of 2-3 tokens, the unpacked tiles of a batch)
// and generated tokens, on 2 threads, for every shared model that has a
// packable type (dense and mixture of experts).
func TestPackedLogitsMatchUnpacked(t *testing.T) {
	shared := sharedDir(t)
	packedAny := false
	for _, name := range modelNames(t, shared) {
		path := filepath.Join(shared, "models", name+".gguf")
		t.Run(name, func(t *testing.T) {
			load := func(pack PackMode) *Model {
				m, err := Load(path, LoadOptions{Threads: 2, ContextLength: 128, PrefixCache: Ptr(int64(0)), Pack: pack})
				require.NoError(t, err)
				return m
			}
			mu, mp := load(PackOff), load(PackOn)
			defer mu.Close()
			defer mp.Close()
			require.Zero(t, mu.Info().PackedBytes)
			npacked := 0
			for _, m := range append([]*Mat{&mp.w.Output}, mp.w.allLayerMats()...) {
				if m.Pack.Rows() > 0 {
					npacked++
				} else if g := kernels.PackRows(m.Type); g > 0 && m.Rows >= g && (m != &mp.w.Output || m.Name != mp.w.TokEmbd.Name) { // a tied output stays as it is
					t.Errorf("%s (%v, %d rows) left unpacked", m.Name, m.Type, m.Rows)
				}
			}
			if npacked == 0 {
				require.Zero(t, mp.Info().PackedBytes)
				t.Skipf("no packable matrix for kernel set %s", kernels.Impl())
			}
			packedAny = true
			require.Positive(t, mp.Info().PackedBytes)
			nv := int32(mu.cfg.NVocab)
			for _, plen := range []int{1, 3, 37} {
				prompt := make([]int32, plen)
				for i := range prompt {
					prompt[i] = int32(i*7919+13) % nv
				}
				var runs [2]batchRun
				for i, m := range []*Model{mu, mp} {
					s, err := m.NewSession(128)
					require.NoError(t, err)
					runs[i], err = generateRecording(s, prompt, 5)
					require.NoError(t, err)
				}
				require.Equal(t, runs[0].tokens, runs[1].tokens, "prompt %d", plen)
				require.Equal(t, len(runs[0].logits), len(runs[1].logits))
				for k := range runs[0].logits {
					for j, v := range runs[0].logits[k] {
						if math.Float32bits(v) != math.Float32bits(runs[1].logits[k][j]) {
							t.Fatalf("prompt %d, step %d, logit %d: packed %g, unpacked %g", plen, k, j, runs[1].logits[k][j], v)
						}
					}
				}
			}
		})
	}
	if !packedAny && kernels.PackRows(kernels.Q4_K) > 0 {
		t.Error("no shared model was packed")
	}
}

// WOOLLY_PACK=0 keeps the weights as they are, WOOLLY_PACK=1 packs them,
// and LoadOptions.Pack overrides either.
func TestPackSwitch(t *testing.T) {
	shared := sharedDir(t)
	path := filepath.Join(shared, "models", "synth-llama-mini-Q4_K_M.gguf")
	if _, err := os.Stat(path); err != nil || kernels.PackRows(kernels.Q4_K) == 0 {
		t.Skip("no synth-llama-mini-Q4_K_M or no packed Q4_K layout here")
	}
	require.Equal(t, goruntime.GOARCH == "arm64", packDefault, "packing is the default on arm64 only")
	for _, tc := range []struct {
		env    string
		mode   PackMode
		packed bool
	}{{"0", PackDefault, false}, {"1", PackDefault, true}, {"", PackDefault, packDefault},
		{"0", PackOn, true}, {"1", PackOff, false}} {
		t.Setenv("WOOLLY_PACK", tc.env)
		m, err := Load(path, LoadOptions{Threads: 1, ContextLength: 64, Pack: tc.mode})
		require.NoError(t, err)
		n := 0
		for _, mt := range m.w.allLayerMats() {
			if mt.Pack.Rows() > 0 {
				n++
			}
		}
		require.Equal(t, tc.packed, n > 0, "WOOLLY_PACK=%q mode %d: %d packed matrices", tc.env, tc.mode, n)
		require.Equal(t, tc.packed, m.Info().PackedBytes > 0)
		m.Close()
	}
}
