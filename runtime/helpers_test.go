package runtime

import (
	"path/filepath"
	"testing"
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
