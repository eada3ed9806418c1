package runtime

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Profiling splits the passes' time into classes that sum to the total,
// counts passes and tokens, and leaves the numbers unchanged.
func TestProfile(t *testing.T) {
	m := loadShared(t, "synth-llama-mini-Q4_K_M", LoadOptions{Threads: 2})
	require.Zero(t, m.Profile().Passes, "off by default")

	toks := []int32{1, 300, 22, 4000, 5}
	s, err := m.NewSession(64)
	require.NoError(t, err)
	want, err := s.Eval(toks, false)
	require.NoError(t, err)

	m.SetProfiling(true)
	s.Reset()
	got, err := s.Eval(toks, false)
	require.NoError(t, err)
	requireSameBits(t, want, got, "profiled logits")
	_, err = s.Eval([]int32{7}, false)
	require.NoError(t, err)

	p := m.Profile()
	require.Equal(t, int64(2), p.Passes)
	require.Equal(t, int64(6), p.Tokens)
	require.Greater(t, p.Total, int64(0))
	var sum int64
	classes := map[string]bool{}
	for _, op := range p.Ops {
		require.GreaterOrEqual(t, op.Time, int64(0), op.Class)
		sum += int64(op.Time)
		classes[strings.Fields(op.Class)[0]] = true
	}
	require.InDelta(t, int64(p.Total), sum, float64(p.Total)*0.01+1, "classes sum to the total")
	for _, c := range []string{"matmul", "attention", "act"} {
		require.True(t, classes[c], "class %s missing from %+v", c, p.Ops)
	}
	require.LessOrEqual(t, p.PoolWait, p.Total)

	m.SetProfiling(false)
	_, err = s.Eval([]int32{8}, false)
	require.NoError(t, err)
	require.Zero(t, m.Profile().Passes, "off again")
}
