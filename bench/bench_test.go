package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime"
)

func TestMeanStddev(t *testing.T) {
	m, sd := MeanStddev([]float64{1, 2, 3, 4})
	// sample stddev: sqrt(((1.5²+0.5²)·2)/3) = sqrt(5/3)
	if m != 2.5 || math.Abs(sd-math.Sqrt(5.0/3)) > 1e-12 {
		t.Errorf("mean %v stddev %v", m, sd)
	}
	if _, sd := MeanStddev([]float64{7}); sd != 0 {
		t.Errorf("one sample: stddev %v", sd)
	}
}

// Run through the library: every test at every depth, in order, with its
// samples; a bad option is an error.
func TestRunDepths(t *testing.T) {
	model := filepath.Join("..", "..", "shared", "models", "stories260K-Q8_0.gguf")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("shared model absent: %v", err)
	}
	var seen []string
	rep, err := Run(Options{Model: model, Prompts: []int{8}, Gens: []int{4}, Depths: []int{0, 40}, Threads: []int{1}, Reps: 2,
		OnResult: func(_ runtime.ModelInfo, r Result) { seen = append(seen, r.Name()) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pp8", "tg4", "pp8 @ d40", "tg4 @ d40"}
	if len(rep.Results) != len(want) || len(seen) != len(want) {
		t.Fatalf("results %+v, streamed %v", rep.Results, seen)
	}
	for i, r := range rep.Results {
		if r.Name() != want[i] || seen[i] != want[i] || len(r.Samples) != 2 || !(r.TokensPerS > 0) || r.Threads != 1 {
			t.Errorf("result %d = %+v (%s), want %s", i, r, r.Name(), want[i])
		}
	}
	if rep.BytesPerToken <= 0 || rep.Params <= 0 || rep.Kernels == "" || len(rep.Notes) != 0 {
		t.Errorf("report header %+v", rep)
	}
	// Past the trained context (128): measured, as llama-bench does, with a note.
	rep, err = Run(Options{Model: model, Gens: []int{4}, Depths: []int{510}, Threads: []int{1}, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Name() != "tg4 @ d510" || !(rep.Results[0].TokensPerS > 0) ||
		len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "trained context of 128") {
		t.Errorf("past the context: %+v", rep)
	}
	// A test's own tokens must still fit it, whatever the depth.
	if _, err := Run(Options{Model: model, Gens: []int{200}, Threads: []int{1}, Reps: 1}); err == nil || !strings.Contains(err.Error(), "200 positions") {
		t.Errorf("tg200 on a 128-token model: %v", err)
	}
	for _, o := range []Options{
		{Model: model, Prompts: []int{8}, Reps: 0},
		{Model: model, Reps: 1},
		{Model: model, Prompts: []int{8}, Depths: []int{-1}, Reps: 1},
		{Model: "missing.gguf", Prompts: []int{8}, Reps: 1},
	} {
		if _, err := Run(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
