package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// batchRun is what one sequence of the batch test saw: the logits every
// token was drawn from, and the tokens.
type batchRun struct {
	logits [][]float32
	tokens []int32
}

// generateRecording runs a greedy Generate on s and records, at every
// generated token, the logits it was drawn from.
func generateRecording(s *Session, prompt []int32, n int) (batchRun, error) {
	var r batchRun
	o := GenerateOptions{Tokens: prompt, MaxTokens: n, Sampler: SamplerOptions{Temperature: 0, RepeatPenalty: 1, Seed: 1}}
	res, err := s.Generate(context.Background(), o, func(Token) error {
		r.logits = append(r.logits, append([]float32(nil), s.last...))
		return nil
	})
	if err != nil {
		return r, err
	}
	r.tokens = res.Tokens
	return r, nil
}

// batchPrompts are prompts of several lengths: shorter than the chunk, a
// chunk and more (so prompt chunks interleave with the others' tokens).
func batchPrompts(m *Model, chunk int) [][]int32 {
	nv := int32(m.cfg.NVocab)
	lens := []int{1, 5, chunk, 2*chunk + 3}
	var out [][]int32
	for i, n := range lens {
		p := make([]int32, n)
		for j := range p {
			p[j] = int32((j*7919 + i*104729 + 13) % int(nv))
		}
		out = append(out, p)
	}
	return out
}

// A sequence's logits are the same bits whether it runs alone in a batch or
// beside others, on every shared model; and the same as a session outside
// any batch when its prompt fits in one chunk.
func TestBatchLogitsMatchAlone(t *testing.T) {
	shared := sharedDir(t)
	const chunk, gen = 16, 6
	for _, name := range modelNames(t, shared) {
		t.Run(name, func(t *testing.T) {
			m, err := Load(filepath.Join(shared, "models", name+".gguf"), LoadOptions{Threads: 2, ContextLength: 256, PrefixCache: Ptr(int64(0))})
			require.NoError(t, err)
			defer m.Close()
			batchMatchesAlone(t, m, chunk, gen)
		})
	}
}

// batchTogetherMatchesAlone runs batchPrompts(m, chunk) one after another in
// a batch, then together in the same batch (their rows in shared passes),
// and requires the same tokens and the same logits' bits. It returns the
// prompts and the runs alone.
func batchTogetherMatchesAlone(t *testing.T, m *Model, chunk, gen int) ([][]int32, []batchRun) {
	t.Helper()
	b, err := m.NewBatch(BatchOptions{PromptChunk: chunk})
	require.NoError(t, err)
	b.gatherMin = 200 * time.Millisecond // the concurrent run must share its steps
	prompts := batchPrompts(m, chunk)

	alone := make([]batchRun, len(prompts))
	for i, p := range prompts {
		s, err := b.NewSession(256)
		require.NoError(t, err)
		alone[i], err = generateRecording(s, p, gen)
		require.NoError(t, err)
		require.NotEmpty(t, alone[i].logits)
	}
	require.Zero(t, b.Stats().Shared, "sequential runs shared a step")

	together := make([]batchRun, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, p := range prompts {
		s, err := b.NewSession(256)
		require.NoError(t, err)
		b.enter(s) // as if generating already: the first step waits for every prompt
		wg.Go(func() {
			<-start
			together[i], errs[i] = generateRecording(s, p, gen)
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	st := b.Stats()
	require.Greater(t, st.Shared, int64(0), "no step carried two sequences: %+v", st)
	require.GreaterOrEqual(t, st.MaxSeqs, 2)

	for i := range prompts {
		require.Equal(t, alone[i].tokens, together[i].tokens, "prompt %d", i)
		require.Equal(t, len(alone[i].logits), len(together[i].logits), "prompt %d", i)
		for k := range alone[i].logits {
			requireSameBits(t, alone[i].logits[k], together[i].logits[k], fmt.Sprintf("prompt %d token %d", i, k))
		}
	}
	return prompts, alone
}

// batchMatchesAlone runs batchPrompts(m, chunk) alone, then together in one
// batch, then outside any batch, and requires the same logits' bits.
func batchMatchesAlone(t *testing.T, m *Model, chunk, gen int) {
	prompts, alone := batchTogetherMatchesAlone(t, m, chunk, gen)

	// Outside any batch: same bits for prompts within one chunk.
	for i, p := range prompts {
		if len(p) > chunk {
			continue
		}
		s, err := m.NewSession(256)
		require.NoError(t, err)
		plain, err := generateRecording(s, p, gen)
		require.NoError(t, err)
		for k := range plain.logits {
			requireSameBits(t, plain.logits[k], alone[i].logits[k], fmt.Sprintf("plain prompt %d token %d", i, k))
		}
	}
}

func requireSameBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	for j := range want {
		if math.Float32bits(want[j]) != math.Float32bits(got[j]) {
			t.Fatalf("%s: logit %d is %g alone, %g in the batch", what, j, want[j], got[j])
		}
	}
}

// Eval through a batch (no Generate) gives the logits of a plain session,
// all rows too, and the batch checks what a session checks.
func TestBatchEvalAndErrors(t *testing.T) {
	shared := sharedDir(t)
	m, err := Load(filepath.Join(shared, "models", "stories260K-Q4_K_M.gguf"), LoadOptions{Threads: 2})
	require.NoError(t, err)
	defer m.Close()

	for _, c := range []int{-1, maxBatch + 1} {
		_, err := m.NewBatch(BatchOptions{PromptChunk: c})
		require.ErrorContains(t, err, "prompt chunk")
	}
	b, err := m.NewBatch(BatchOptions{PromptChunk: 8})
	require.NoError(t, err)
	bs, err := b.NewSession(32)
	require.NoError(t, err)
	ps, err := m.NewSession(32)
	require.NoError(t, err)

	toks := []int32{1, 400, 30, 7, 99}
	want, err := ps.Eval(toks, true)
	require.NoError(t, err)
	got, err := bs.Eval(toks, true)
	require.NoError(t, err)
	requireSameBits(t, want, got, "all logits")
	require.Equal(t, ps.Tokens(), bs.Tokens())
	require.Equal(t, 5, bs.Pos())

	_, err = bs.Eval(make([]int32, 28), false)
	require.ErrorContains(t, err, "context full")
	_, err = bs.Eval([]int32{int32(m.cfg.NVocab)}, false)
	require.ErrorContains(t, err, "out of range")
	require.Equal(t, 5, bs.Pos(), "a refused eval moved the session")

	// A cancelled generation in a batch stops and leaves the batch idle.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := bs.Generate(ctx, GenerateOptions{Tokens: toks, MaxTokens: 20, Sampler: SamplerOptions{RepeatPenalty: 1}}, func(Token) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "cancel", res.StopReason)
	require.Len(t, res.Tokens, 2)
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.active)
	require.Empty(t, b.queue)
}

// A bug that panics inside a batch step (here a session whose KV cache was
// cut short) is re-raised on the goroutine that asked for the evaluation,
// with the scheduler still running: the next session evaluates normally.
func TestBatchStepPanicReachesCaller(t *testing.T) {
	shared := sharedDir(t)
	m, err := Load(filepath.Join(shared, "models", "stories260K-Q4_K_M.gguf"), LoadOptions{Threads: 2})
	require.NoError(t, err)
	defer m.Close()
	b, err := m.NewBatch(BatchOptions{PromptChunk: 8})
	require.NoError(t, err)
	bad, err := b.NewSession(32)
	require.NoError(t, err)
	bad.kcache[0] = bad.kcache[0][:1]
	toks := []int32{1, 400, 30, 7, 99}
	var got any
	func() {
		defer func() { got = recover() }()
		_, _ = bad.Eval(toks, false)
	}()
	wp, ok := got.(*workerPanic)
	require.True(t, ok, "recovered %T %v, want *workerPanic", got, got)
	require.Regexp(t, "too short|out of range", wp.Error())

	good, err := b.NewSession(32)
	require.NoError(t, err)
	want, err := m.NewSession(32)
	require.NoError(t, err)
	lw, err := want.Eval(toks, false)
	require.NoError(t, err)
	lg, err := good.Eval(toks, false)
	require.NoError(t, err)
	requireSameBits(t, lw, lg, "logits after a panicked step")
}

// A cancelled context stops a batch session's prompt after the step under
// way, not at the end of a 512-token piece: a client that disconnects during
// a long prompt frees the model's steps at once (the server cancels the
// request's context). Seen on woolly serve: a 1,800-token prompt on
// TinyLlama ran ~10 s past its client's disconnect.
func TestBatchPromptCancelsBetweenChunks(t *testing.T) {
	m := loadShared(t, "stories260K-Q8_0", LoadOptions{Threads: 1, PrefixCache: Ptr(int64(0))})
	const chunk, n = 8, 120 // 15 steps for the whole prompt
	b, err := m.NewBatch(BatchOptions{PromptChunk: chunk})
	require.NoError(t, err)
	b.gatherMin = 20 * time.Millisecond
	idle, err := b.NewSession(0)
	require.NoError(t, err)
	b.enter(idle) // never queues: each step waits gatherMin for it
	defer b.leave(idle)
	s, err := b.NewSession(0)
	require.NoError(t, err)
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(1 + (i*37)%(m.cfg.NVocab-1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for b.Stats().Steps < 1 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := s.Generate(ctx, GenerateOptions{Tokens: prompt, MaxTokens: 4, Sampler: SamplerOptions{Temperature: 0, RepeatPenalty: 1, Seed: 1}}, nil)
	require.NoError(t, err)
	require.Equal(t, "cancel", res.StopReason)
	require.LessOrEqual(t, b.Stats().Steps, int64(3), "steps run for a %d-token prompt cancelled after the first (%d chunks in all)", n, n/chunk)
}
