package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/synth"
)

// TestSynthCLI: woolly synth writes what synth.WriteFile writes for the
// flags given (preset, type, seed), says so on stdout, and refuses an
// unknown preset by name. The generator itself is tested in package synth.
func TestSynthCLI(t *testing.T) {
	dir := t.TempDir()
	cli, lib := filepath.Join(dir, "cli.gguf"), filepath.Join(dir, "lib.gguf")
	var so, se bytes.Buffer
	if err := runSynth([]string{"--preset", "MINI", "--type", "q8_0", "--seed", "7", "-t", "1", "--no-progress", "-o", cli}, &so, &se); err != nil {
		t.Fatalf("synth: %v\n%s", err, se.String())
	}
	if !strings.Contains(so.String(), "wrote "+cli+": mini") || se.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", so.String(), se.String())
	}
	p, _ := synth.FindPreset("mini")
	ft, _ := quant.ParseFileType("q8_0")
	if _, err := synth.WriteFile(lib, synth.Options{Preset: p, Type: ft, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(cli)
	b, errB := os.ReadFile(lib)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Errorf("the CLI's file (%d bytes, %v) differs from synth.WriteFile's (%d bytes, %v)", len(a), errA, len(b), errB)
	}

	err := runSynth([]string{"--preset", "llama-9000", "-o", filepath.Join(dir, "x.gguf")}, &so, &se)
	if err == nil || !strings.Contains(err.Error(), "llama-9000") {
		t.Errorf("unknown preset: %v, want an error naming it", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gguf")); err == nil {
		t.Error("a file was written for an unknown preset")
	}
}
