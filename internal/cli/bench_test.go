package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/bench"
)

func TestBenchJSON(t *testing.T) {
	sh := sharedDir(t)
	var so, se bytes.Buffer
	args := []string{"-m", filepath.Join(sh, "models", "synth-llama-mini-Q4_K_M.gguf"), "-p", "8,16", "-n", "4", "-t", "1,2", "-r", "2", "--json"}
	if err := runBench(args, &so, &se); err != nil {
		t.Fatalf("bench: %v\n%s", err, se.String())
	}
	var rep benchReport
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, so.String())
	}
	want := []struct {
		threads int
		test    string
	}{{1, "pp8"}, {1, "pp16"}, {1, "tg4"}, {2, "pp8"}, {2, "pp16"}, {2, "tg4"}}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d: %s", len(rep.Results), len(want), so.String())
	}
	for i, r := range rep.Results {
		if r.Threads != want[i].threads || r.Test != want[i].test {
			t.Errorf("result %d is %d/%s, want %d/%s", i, r.Threads, r.Test, want[i].threads, want[i].test)
		}
		if len(r.Samples) != 2 || !(r.TokensPerS > 0) || r.Stddev < 0 {
			t.Errorf("result %d: %+v", i, r)
		}
		m, sd := bench.MeanStddev(r.Samples)
		if math.Abs(m-r.TokensPerS) > 1e-9*m || math.Abs(sd-r.Stddev) > 1e-9*m {
			t.Errorf("result %d: mean/stddev do not match its samples", i)
		}
	}
	if rep.Kernels == "" || rep.Params != 19400960 {
		t.Errorf("report header: %+v", rep)
	}

	// -d: every test again at each depth, named as llama-bench does.
	so.Reset()
	args = []string{"-m", filepath.Join(sh, "models", "synth-llama-mini-Q4_K_M.gguf"), "-p", "8", "-n", "4", "-d", "0,32", "-t", "1", "-r", "1"}
	if err := runBench(args, &so, &se); err != nil {
		t.Fatalf("bench -d: %v\n%s", err, se.String())
	}
	for _, want := range []string{" pp8 |", " tg4 |", " pp8 @ d32 |", " tg4 @ d32 |"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, so.String())
		}
	}
}

func TestParseIntList(t *testing.T) {
	v, err := parseIntList("1, 2,4", "-t", 1)
	if err != nil || len(v) != 3 || v[2] != 4 {
		t.Errorf("got %v, %v", v, err)
	}
	for _, bad := range []string{"0", "a", "1,,2", "-1"} {
		if _, err := parseIntList(bad, "-t", 1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBandwidthProbe(t *testing.T) {
	var so bytes.Buffer
	if err := runBench([]string{"--bandwidth", "--bw-size", "16", "-t", "2", "--json"}, &so, &so); err != nil {
		t.Fatal(err)
	}
	var r struct {
		GBps    float64 `json:"bandwidth_gbps"`
		Threads int     `json:"threads"`
	}
	if err := json.Unmarshal(so.Bytes(), &r); err != nil || !(r.GBps > 0) || r.Threads != 2 {
		t.Errorf("bandwidth output %s (%v)", so.String(), err)
	}
}

// A --bw-size out of range is an error naming the flag, not a panic.
func TestBandwidthSizeRange(t *testing.T) {
	for _, size := range []string{"0", "-5", "1073741824"} {
		var so bytes.Buffer
		err := runBench([]string{"--bandwidth", "--bw-size", size, "-t", "1"}, &so, &so)
		if err == nil || !strings.Contains(err.Error(), "--bw-size") {
			t.Errorf("--bw-size %s: err = %v, want one naming --bw-size", size, err)
		}
	}
}

// --profile prints each test's time per op class; run's --profile needs
// --verbose and prints to stderr.
func TestProfileFlags(t *testing.T) {
	model := filepath.Join(sharedDir(t), "models", "synth-llama-mini-Q4_K_M.gguf")
	var so, se bytes.Buffer
	if err := runBench([]string{"-m", model, "-p", "8", "-n", "4", "-t", "1", "-r", "1", "--profile"}, &so, &se); err != nil {
		t.Fatalf("bench: %v\n%s", err, se.String())
	}
	for _, want := range []string{"profile pp8: 8 tokens in 1 passes", "profile tg4: 4 tokens in 4 passes", "matmul Q4_K", "attention", "pool wait"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("bench --profile output lacks %q:\n%s", want, so.String())
		}
	}
	_, stderr, code := rtMain(t, "run", "-m", model, "-p", "hi", "-n", "2", "--profile")
	if code == 0 || !strings.Contains(stderr, "--verbose") {
		t.Errorf("run --profile without --verbose: exit %d, %q", code, stderr)
	}
	_, stderr, code = rtMain(t, "run", "-m", model, "-p", "hi", "-n", "2", "--verbose", "--profile")
	if code != 0 || !strings.Contains(stderr, "profile run") || !strings.Contains(stderr, "matmul Q6_K") {
		t.Errorf("run --verbose --profile: exit %d, %q", code, stderr)
	}
}
