package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Serve runs real clients against a loopback server: every client gets its
// tokens, the figures are consistent with each other.
func TestServe(t *testing.T) {
	model := filepath.Join("..", "..", "shared", "models", "stories260K-Q8_0.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared model absent: %v", err)
	}
	res, err := Serve(context.Background(), ServeOptions{Model: model, Clients: []int{1, 3}, Gen: 8, Threads: 1, Reps: 1})
	require.NoError(t, err)
	require.Len(t, res, 2)
	for i, r := range res {
		require.Equal(t, []int{1, 3}[i], r.Clients)
		require.Greater(t, r.Tokens, 0)
		require.LessOrEqual(t, r.Tokens, 8*r.Clients)
		require.Greater(t, r.TokensPerS, 0.0)
		require.Greater(t, r.TTFTMedian, 0.0)
		require.LessOrEqual(t, r.TTFTMedian, r.TTFTMax)
		require.LessOrEqual(t, r.TTFTMax, r.Wall)
	}

	_, err = Serve(context.Background(), ServeOptions{Model: model, Clients: []int{0}, Gen: 8, Reps: 1})
	require.ErrorContains(t, err, "0 clients")
	_, err = Serve(context.Background(), ServeOptions{Model: filepath.Join(t.TempDir(), "none.gguf"), Clients: []int{1}, Gen: 8, Reps: 1})
	require.Error(t, err)
}
