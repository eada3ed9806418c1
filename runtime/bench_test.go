package runtime

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkGenerate measures greedy generation (tokens/s) on the Q4_K_M mini.
func BenchmarkGenerate(b *testing.B) {
	m, err := Load(filepath.Join(sharedDir(b), "models", "synth-llama-mini-Q4_K_M.gguf"), LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(512)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		s.Reset()
		res, err := s.Generate(context.Background(), GenerateOptions{Tokens: []int32{1, 9038, 2501, 263, 931}, MaxTokens: 64}, nil)
		if err != nil {
			b.Fatal(err)
		}
		n += len(res.Tokens)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
}
