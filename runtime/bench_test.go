package runtime

import (
	"context"
	"testing"
)

// BenchmarkGenerate measures greedy generation (tokens/s) on the Q4_K_M mini.
func BenchmarkGenerate(b *testing.B) {
	m := loadShared(b, "synth-llama-mini-Q4_K_M", LoadOptions{})
	s := newSession(b, m, 512)
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
