// Package bench measures a model's prompt-processing and generation speed
// the way llama-bench does: ppN evaluates N random prompt tokens in one
// batch, tgN generates N tokens one at a time (greedy), each after an
// unrecorded warm-up, at a context depth of D tokens already in the cache
// (llama-bench's -d). `woolly bench` is a front end to Run; Serve is the
// serving benchmark of `woolly bench --clients` (many clients streaming
// from an in-process server at once).
package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime"
)

// Options choose what Run measures.
type Options struct {
	Model   string // GGUF path
	Prompts []int  // ppN tests (0s are skipped)
	Gens    []int  // tgN tests (0s are skipped)
	Depths  []int  // context depths to run every test at (nil: just 0)
	Threads []int  // thread counts (nil: the runtime's default)
	Reps    int    // recorded repetitions per test (≥ 1)
	Seed    uint64 // of the random prompt and depth tokens
	Profile bool   // record each test's time per op class (Result.Profile)
	// OnResult, if set, receives each result as it is measured.
	OnResult func(runtime.ModelInfo, Result)
	// Done, if set, runs on each model after its tests, before it closes.
	Done func(*runtime.Model)
}

// Result is one test at one thread count and depth.
type Result struct {
	Threads    int       `json:"threads"`
	Test       string    `json:"test"` // "pp128", "tg64"
	TokensPerS float64   `json:"tokens_per_s"`
	Stddev     float64   `json:"stddev"`
	Samples    []float64 `json:"samples"`
	// Depth is the number of tokens in the context before the test (last,
	// so scripts reading the fields in order keep working).
	Depth int `json:"depth"`
	// With Options.Profile: the recorded runs' time per op class.
	Profile *runtime.Profile `json:"profile,omitempty"`
}

// Name is the test as llama-bench prints it: "pp128", "tg64 @ d1024".
func (r Result) Name() string {
	if r.Depth > 0 {
		return fmt.Sprintf("%s @ d%d", r.Test, r.Depth)
	}
	return r.Test
}

// Report is a whole run.
type Report struct {
	Model     string   `json:"model"`
	FileType  string   `json:"file_type"`
	SizeBytes int64    `json:"size_bytes"`
	Params    int64    `json:"params"`
	Kernels   string   `json:"kernels"`
	Available []string `json:"kernels_available"`
	// BytesPerToken is the weight data one generated token reads (see
	// WeightBytesPerToken).
	BytesPerToken int64    `json:"bytes_per_token"`
	Results       []Result `json:"results"`
	// Notes are caveats of the run for its reader, e.g. tests that reach
	// past the model's trained context.
	Notes []string `json:"notes,omitempty"`
}

// Run measures every test of o at every thread count and depth.
func Run(o Options) (*Report, error) {
	if o.Reps < 1 {
		return nil, fmt.Errorf("repetitions %d: need at least 1", o.Reps)
	}
	maxP, maxN := 0, 0
	for _, p := range o.Prompts {
		maxP = max(maxP, p)
	}
	for _, n := range o.Gens {
		maxN = max(maxN, n)
	}
	if maxP == 0 && maxN == 0 {
		return nil, errors.New("nothing to measure: no prompt or generation length above 0")
	}
	depths := o.Depths
	if len(depths) == 0 {
		depths = []int{0}
	}
	maxD := 0
	for _, d := range depths {
		if d < 0 {
			return nil, fmt.Errorf("depth %d is negative", d)
		}
		maxD = max(maxD, d)
	}
	threads := o.Threads
	if len(threads) == 0 {
		threads = []int{0}
	}
	rep := &Report{Kernels: kernels.Impl(), Available: kernels.Available()}
	var err error
	if rep.BytesPerToken, err = WeightBytesPerToken(o.Model); err != nil {
		return nil, err
	}
	for _, nt := range threads {
		if err := runThreads(o, nt, depths, maxD+max(maxP, maxN)+1, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// runThreads loads the model with nt threads and runs every test.
func runThreads(o Options, nt int, depths []int, nctx int, rep *Report) error {
	m, err := runtime.Load(o.Model, runtime.LoadOptions{Threads: nt, PrefixCache: runtime.Ptr(int64(0))})
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	if train := info.ContextLength; train > 0 && nctx-1 > train {
		// A test's own tokens must fit the trained context; the depth
		// before it may reach past it, as llama-bench allows (its context
		// is sized for the test): the speed is what is measured, and the
		// tokens are random either way. Said in a note.
		if longest := nctx - 1 - slices.Max(depths); longest > train {
			return fmt.Errorf("the longest test needs %d positions (the larger of -p and -n), more than the model's context of %d", longest, train)
		}
		note := fmt.Sprintf("the deepest, longest test needs %d positions (depth + the larger of -p and -n), more than the model's trained context of %d: positions past it are measured for speed only, as llama-bench does", nctx-1, train)
		if !slices.Contains(rep.Notes, note) {
			rep.Notes = append(rep.Notes, note)
		}
	}
	rep.Model, rep.FileType, rep.SizeBytes, rep.Params = info.Name, info.FileType, info.SizeBytes, info.NParams
	// One session sized for the deepest, longest test; Truncate returns it
	// to the depth between runs.
	s, err := m.NewSession(nctx)
	if err != nil {
		return err
	}
	bos := int32(-1)
	if tok := m.Tokenizer(); tok != nil && tok.AddBOS() {
		bos = tok.BOS()
	}
	// One logits buffer for every run: EvalInto copies the last row into it,
	// where Eval would allocate a new vocabulary-sized slice per token (and
	// the garbage collector would run for them while the tokens are timed).
	logits := make([]float32, info.NVocab)
	rng := rand.New(rand.NewPCG(o.Seed, 0))
	randTokens := func(n int, first bool) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(info.NVocab))
		}
		if first && bos >= 0 && n > 0 {
			ids[0] = bos
		}
		return ids
	}
	for _, d := range depths {
		// Fill the context to depth d (not timed), once per depth.
		s.Reset()
		if d > 0 {
			if err := s.EvalInto(randTokens(d, true), logits); err != nil {
				return fmt.Errorf("filling depth %d: %w", d, err)
			}
		}
		type test struct {
			name string
			ntok int
			run  func() (time.Duration, error)
		}
		var tests []test
		for _, p := range o.Prompts {
			if p > 0 {
				tests = append(tests, test{fmt.Sprintf("pp%d", p), p, func() (time.Duration, error) {
					toks := randTokens(p, d == 0)
					if err := s.Truncate(d); err != nil {
						return 0, err
					}
					start := time.Now()
					err := s.EvalInto(toks, logits)
					return time.Since(start), err
				}})
			}
		}
		for _, n := range o.Gens {
			if n > 0 {
				tests = append(tests, test{fmt.Sprintf("tg%d", n), n, func() (time.Duration, error) {
					tok := randTokens(1, d == 0)
					if err := s.Truncate(d); err != nil {
						return 0, err
					}
					start := time.Now()
					for i := 0; i < n; i++ {
						if err := s.EvalInto(tok, logits); err != nil {
							return 0, err
						}
						tok[0] = runtime.Argmax(logits)
					}
					return time.Since(start), nil
				}})
			}
		}
		for _, tc := range tests {
			if _, err := tc.run(); err != nil { // warm-up, not recorded
				return fmt.Errorf("%s: %w", tc.name, err)
			}
			var samples []float64
			if o.Profile {
				m.SetProfiling(true)
			}
			for r := 0; r < o.Reps; r++ {
				dur, err := tc.run()
				if err != nil {
					return fmt.Errorf("%s: %w", tc.name, err)
				}
				samples = append(samples, float64(tc.ntok)/dur.Seconds())
			}
			mean, sd := MeanStddev(samples)
			res := Result{Threads: info.Threads, Test: tc.name, Depth: d, TokensPerS: mean, Stddev: sd,
				Samples: samples}
			if o.Profile {
				p := m.Profile()
				res.Profile = &p
				m.SetProfiling(false)
			}
			rep.Results = append(rep.Results, res)
			if o.OnResult != nil {
				o.OnResult(info, res)
			}
		}
	}
	if o.Done != nil {
		o.Done(m)
	}
	return nil
}

// WeightBytesPerToken sums the tensor bytes a single-token forward pass
// reads: every tensor but the token embedding (one row of it), unless the
// embedding is also the output matrix; of a mixture-of-experts stack
// (ffn_*_exps) only the used experts' share, expert_used_count /
// expert_count.
func WeightBytesPerToken(path string) (int64, error) {
	f, err := loader.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, hasOutput := f.Tensor("output.weight")
	arch := f.Architecture()
	nExp, _ := f.Uint(arch + ".expert_count")
	nUsed, _ := f.Uint(arch + ".expert_used_count")
	var n int64
	for _, t := range f.Tensors {
		switch {
		case t.Name == "token_embd.weight" && hasOutput:
			n += t.RowBytes()
		case strings.HasSuffix(t.Name, "_exps.weight") && nExp > 0 && nUsed <= nExp:
			n += t.Size / int64(nExp) * int64(nUsed)
		default:
			n += t.Size
		}
	}
	return n, nil
}

// MeanStddev returns the mean and the sample standard deviation (n−1).
func MeanStddev(x []float64) (float64, float64) {
	var s float64
	for _, v := range x {
		s += v
	}
	mean := s / float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}
