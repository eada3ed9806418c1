package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// Acquire hands out the idle session sharing the longest prefix with the
// prompt, Release keeps it (once), and the checks of a request come before
// any work: a prompt that leaves no room, options out of range.
func TestAcquireRelease(t *testing.T) {
	m := loadShared(t, "stories260K-Q8_0", LoadOptions{Threads: 1, PrefixCache: Ptr(int64(0))})
	defer m.Close()
	b, err := m.NewBatch(BatchOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	gen := func(s *Session, ids []int32) *GenerateResult {
		res, err := s.Generate(ctx, GenerateOptions{Tokens: ids, MaxTokens: 2}, nil)
		require.NoError(t, err)
		return res
	}
	a := []int32{1, 10, 20, 30, 40, 50, 60, 70}
	c := []int32{1, 11, 21, 31}
	sa, err := b.Acquire(a, 64)
	require.NoError(t, err)
	gen(sa, a)
	sc, err := b.Acquire(c, 64)
	require.NoError(t, err)
	require.NotSame(t, sa, sc, "a session in use is not handed out twice")
	gen(sc, c)
	b.Release(sa)
	b.Release(sc)
	b.Release(sc)
	require.Equal(t, 2, b.Idle())

	// The follow-up of a takes a's session and evaluates only its new tokens.
	next := append(append([]int32(nil), sa.Tokens()...), 80, 90)
	s, err := b.Acquire(next, 64)
	require.NoError(t, err)
	require.Same(t, sa, s)
	res := gen(s, next)
	require.Equal(t, len(next)-2, res.CachedTokens)
	// Another context size is another session.
	s2, err := b.Acquire(c, 32)
	require.NoError(t, err)
	require.NotSame(t, sc, s2)

	_, err = b.Acquire(make([]int32, 64), 64)
	require.ErrorIs(t, err, ErrRequest)
	_, err = b.Acquire(nil, 64)
	require.ErrorIs(t, err, ErrRequest)
	_, err = b.Acquire(a, -1)
	require.ErrorIs(t, err, ErrRequest)

	// TopLogprobs out of range: refused before the prompt is evaluated.
	pos := sc.Pos()
	_, err = sc.Generate(ctx, GenerateOptions{Tokens: []int32{1, 5, 6, 7, 8}, Logprobs: true, TopLogprobs: 21}, nil)
	require.ErrorIs(t, err, ErrRequest)
	require.Equal(t, pos, sc.Pos(), "nothing evaluated")
	var re *SamplerRangeError
	err = GenerateOptions{Sampler: SamplerOptions{TopP: 2}}.Validate()
	require.ErrorIs(t, err, ErrRequest)
	require.True(t, errors.As(err, &re), "the sampler's error stays inspectable")
}
