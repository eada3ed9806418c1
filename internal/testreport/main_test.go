package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stream with a passing, a failing and a skipped test and a build
// failure: the failing test's output and the package lines are printed,
// the passing test's verbose lines are not, the skip goes to the log with
// its reason, and the report fails.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestOK"}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestOK"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"    x_test.go:9: want 2, got 3\n"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBad"}`,
		`{"Action":"output","Package":"p","Test":"TestNoNode","Output":"=== RUN   TestNoNode\n"}`,
		`{"Action":"output","Package":"p","Test":"TestNoNode","Output":"    web_test.go:33: node is not installed\n"}`,
		`{"Action":"output","Package":"p","Test":"TestNoNode","Output":"--- SKIP: TestNoNode (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestNoNode"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`{"ImportPath":"q","Action":"build-output","Output":"q/x.go:1:1: syntax error\n"}`,
		`{"ImportPath":"q","Action":"build-fail"}`,
		`{"Action":"output","Package":"r","Output":"ok  \tr\t0.02s\n"}`,
		`{"Action":"pass","Package":"r"}`,
	}, "\n")
	var out strings.Builder
	r := &report{out: &out, held: map[string][]string{}}
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "skips")
	if err := r.writeSkips(log); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"want 2, got 3", "--- FAIL: TestBad", "FAIL\tp", "syntax error", "ok  \tr", "1 tests skipped"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestOK") {
		t.Errorf("output shows the passing test:\n%s", got)
	}
	if !r.failed {
		t.Error("report did not fail")
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "test-go: p TestNoNode: web_test.go:33: node is not installed\n" {
		t.Errorf("skip log = %q", b)
	}
}

// Only passes: the report does not fail and writes no skip log.
func TestReportPasses(t *testing.T) {
	var out strings.Builder
	r := &report{out: &out, held: map[string][]string{}}
	in := `{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"pass","Package":"p"}`
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if r.failed || len(r.skips) != 0 {
		t.Errorf("failed %v, skips %v", r.failed, r.skips)
	}
}
