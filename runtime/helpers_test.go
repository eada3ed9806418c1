package runtime

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Test helpers shared by the package's tests: loading models and running
// them, failing the test on any error.

// loadPath loads the model file at path; the model is closed when the test
// ends.
func loadPath(t testing.TB, path string, o LoadOptions) *Model {
	t.Helper()
	m, err := Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// loadShared loads the shared model name (models/name.gguf of the shared
// data), or the file name when it is an absolute path.
func loadShared(t testing.TB, name string, o LoadOptions) *Model {
	t.Helper()
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(sharedDir(t), "models", name+".gguf")
	}
	return loadPath(t, path, o)
}

// loadConfig loads the model file at path with one thread and returns its
// configuration; the model is closed at once.
func loadConfig(t testing.TB, path string) Config {
	t.Helper()
	m, err := Load(path, LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return m.Config()
}

// newSession opens a session of nCtx positions on m (0: the model's
// context length).
func newSession(t testing.TB, m *Model, nCtx int) *Session {
	t.Helper()
	s, err := m.NewSession(nCtx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// evalAll evaluates toks in s and returns the logits of every position.
func evalAll(t testing.TB, s *Session, toks []int32) []float32 {
	t.Helper()
	l, err := s.Eval(toks, true)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// followUp runs two turns of a conversation on m, four greedy tokens each:
// seq, then seq, turn 1's reply and extra. Turn 2's reply must be that of
// fresh (a model without a prefix cache); it returns both turns.
func followUp(t *testing.T, m, fresh *Model, seq []int32, extra ...int32) (turn1, turn2 *GenerateResult) {
	t.Helper()
	opts := func(toks []int32) GenerateOptions {
		return GenerateOptions{Tokens: toks, MaxTokens: 4, Sampler: SamplerOptions{Temperature: 0, RepeatPenalty: 1, Seed: 1}}
	}
	turn1, err := m.Generate(context.Background(), opts(seq), nil)
	require.NoError(t, err)
	next := append(append(slices.Clone(seq), turn1.Tokens...), extra...)
	turn2, err = m.Generate(context.Background(), opts(next), nil)
	require.NoError(t, err)
	want, err := fresh.Generate(context.Background(), opts(next), nil)
	require.NoError(t, err)
	require.Equal(t, want.Tokens, turn2.Tokens)
	return turn1, turn2
}
