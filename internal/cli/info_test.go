package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
)

// TestInfoJSON runs `woolly info --json` on every shared model and checks it
// against ref/tensor_types.json (written by llama.cpp's gguf-py).
func TestInfoJSON(t *testing.T) {
	infoOnShared(t, func(path string) []string { return []string{"--json", path} }, func(name string, rf shared.File, out []byte) {
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var got struct {
			Architecture string `json:"architecture"`
			FileSize     int64  `json:"file_size"`
			TensorCount  int    `json:"tensor_count"`
			Tensors      []struct {
				Name       string  `json:"name"`
				Type       string  `json:"type"`
				Shape      []int64 `json:"shape"`
				Bytes      int64   `json:"bytes"`
				DataOffset int64   `json:"data_offset"`
			} `json:"tensors"`
			TypeMix  map[string]int             `json:"type_mix"`
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := dec.Decode(&got); err != nil {
			t.Errorf("%s: output is not JSON: %v", name, err)
			return
		}
		if dec.More() {
			t.Errorf("%s: more than one JSON value on stdout", name)
		}
		if got.FileSize != rf.FileBytes || got.TensorCount != len(rf.Tensors) || len(got.Tensors) != len(rf.Tensors) {
			t.Errorf("%s: file_size %d tensor_count %d (%d listed), want %d and %d", name, got.FileSize, got.TensorCount, len(got.Tensors), rf.FileBytes, len(rf.Tensors))
		}
		mix := map[string]int{}
		for _, rt := range rf.Tensors {
			mix[rt.Type]++
		}
		if !reflect.DeepEqual(got.TypeMix, mix) {
			t.Errorf("%s: type_mix %v, want %v", name, got.TypeMix, mix)
		}
		for _, gt := range got.Tensors {
			rt, ok := rf.Tensors[gt.Name]
			if !ok {
				t.Errorf("%s: unexpected tensor %q", name, gt.Name)
				continue
			}
			if gt.Type != rt.Type || !reflect.DeepEqual(gt.Shape, rt.Ne) || gt.Bytes != rt.NBytes || gt.DataOffset != rt.DataOffset {
				t.Errorf("%s: %s: got %s %v %d bytes at %d, want %s %v %d bytes at %d", name, gt.Name,
					gt.Type, gt.Shape, gt.Bytes, gt.DataOffset, rt.Type, rt.Ne, rt.NBytes, rt.DataOffset)
			}
		}
		var arch string
		if err := json.Unmarshal(got.Metadata["general.architecture"], &arch); err != nil || arch == "" || arch != got.Architecture {
			t.Errorf("%s: architecture %q, metadata general.architecture %q", name, got.Architecture, arch)
		}
		// The vocabulary is longer than 16 entries: {"type": "string", "len": n_vocab},
		// and n_vocab is the row count of token_embd.weight.
		var toks struct {
			Type string `json:"type"`
			Len  int64  `json:"len"`
		}
		if err := json.Unmarshal(got.Metadata["tokenizer.ggml.tokens"], &toks); err != nil ||
			toks.Type != "string" || toks.Len != rf.Tensors["token_embd.weight"].Ne[1] {
			t.Errorf("%s: tokenizer.ggml.tokens is %s, want {type: string, len: %d}", name,
				got.Metadata["tokenizer.ggml.tokens"], rf.Tensors["token_embd.weight"].Ne[1])
		}
		// Scalars appear as they are.
		var ctx int64
		if err := json.Unmarshal(got.Metadata[arch+".context_length"], &ctx); err != nil || ctx <= 0 {
			t.Errorf("%s: %s.context_length = %s", name, arch, got.Metadata[arch+".context_length"])
		}
	})
}

// infoOnShared runs `woolly info` with args(path) on every shared model and
// hands each output to check with the model's reference tensor table.
func infoOnShared(t *testing.T, args func(path string) []string, check func(name string, rf shared.File, out []byte)) {
	dir := shared.Dir(t)
	for name, rf := range shared.TensorTypes(t, dir) {
		var out, errb bytes.Buffer
		if err := runInfo(args(filepath.Join(dir, "models", name)), &out, &errb); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		check(name, rf, out.Bytes())
	}
}

// TestInfoText checks the plain listing: every tensor with its type and
// shape, and the type mix.
func TestInfoText(t *testing.T) {
	// -m form, flag after the path elsewhere
	infoOnShared(t, func(path string) []string { return []string{"-m", path} }, func(name string, rf shared.File, out []byte) {
		text := string(out)
		counts := map[string]int{}
		for tn, rt := range rf.Tensors {
			counts[rt.Type]++
			dims := make([]string, len(rt.Ne))
			for i, d := range rt.Ne {
				dims[i] = fmt.Sprint(d)
			}
			found := false
			for _, line := range strings.Split(text, "\n") {
				f := strings.Fields(line)
				if len(f) >= 3 && f[0] == tn && f[1] == rt.Type &&
					strings.Join(f[2:len(f)-1], " ") == strings.Join(dims, " x ") && f[len(f)-1] == fmt.Sprint(rt.NBytes) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no line for %s %s %v %d", name, tn, rt.Type, rt.Ne, rt.NBytes)
			}
		}
		for ty, n := range counts {
			if !strings.Contains(text, fmt.Sprintf("%s: %d", ty, n)) {
				t.Errorf("%s: type mix lacks %q", name, fmt.Sprintf("%s: %d", ty, n))
			}
		}
		if !strings.Contains(text, "hyperparameters") || !strings.Contains(text, "block_count") {
			t.Errorf("%s: no hyperparameters section", name)
		}
	})
}

func TestInfoArgsAndErrors(t *testing.T) {
	dir := shared.Dir(t)
	model := filepath.Join(dir, "models", "stories260K-Q4_0.gguf")
	var out, errb bytes.Buffer
	if err := runInfo([]string{model, "--json"}, &out, &errb); err != nil || !json.Valid(out.Bytes()) {
		t.Errorf("flag after path: err %v, valid JSON %v", err, json.Valid(out.Bytes()))
	}

	// A truncated file: one-line error, exit status 1.
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, b[:5000], 0o644); err != nil {
		t.Fatal(err)
	}
	notGGUF := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(notGGUF, []byte("hello world, not a model"), 0o644)
	for _, args := range [][]string{{"info", bad}, {"info", "--json", bad}, {"info", notGGUF}, {"info", filepath.Join(dir, "nope.gguf")}} {
		out.Reset()
		errb.Reset()
		if code := realMain(args, &out, &errb); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		if lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n"); len(lines) != 1 || lines[0] == "" {
			t.Errorf("%v: stderr is not one line: %q", args, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote to stdout: %q", args, out.String())
		}
	}
	for _, args := range [][]string{{"info"}, {"info", model, model + "x"}, {"info", "--bogus", model}} {
		if code := realMain(args, &out, &errb); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}

// TestInfoVocabJSON: a vocabulary-only file (no tensors) prints an empty table.
func TestInfoVocabJSON(t *testing.T) {
	dir := shared.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
	sort.Strings(files)
	if len(files) == 0 {
		t.Skip("no vocab files")
	}
	var out, errb bytes.Buffer
	if err := runInfo([]string{"--json", files[0]}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["tensor_count"] != 0.0 || len(got["tensors"].([]any)) != 0 {
		t.Errorf("vocab file: tensor_count %v tensors %v", got["tensor_count"], got["tensors"])
	}
}
