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
	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
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

// infoOf writes w's file and returns what `woolly info [flags] FILE`
// prints for it, failing the test on a nonzero exit.
func infoOf(t *testing.T, w *loader.Writer, flags ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "info.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := realMain(append(append([]string{"info"}, flags...), path), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out.String()
}

// Short metadata arrays of every element type, and a nested one, appear in
// `info --json` element by element (floats as their shortest text).
func TestInfoJSONShortArrays(t *testing.T) {
	w := loader.NewWriter()
	w.SetString("general.architecture", "llama")
	arr := func(e loader.ValueType, vs any) loader.Value {
		return loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: e, Values: vs}}
	}
	w.Set("a.u8", arr(loader.TypeUint8, []uint8{1, 255}))
	w.Set("a.i8", arr(loader.TypeInt8, []int8{-3, 4}))
	w.Set("a.u16", arr(loader.TypeUint16, []uint16{65535}))
	w.Set("a.i16", arr(loader.TypeInt16, []int16{-32768}))
	w.Set("a.u32", arr(loader.TypeUint32, []uint32{7}))
	w.Set("a.i32", arr(loader.TypeInt32, []int32{-7, 8}))
	w.Set("a.f32", arr(loader.TypeFloat32, []float32{0.1, -2}))
	w.Set("a.bool", arr(loader.TypeBool, []bool{true, false}))
	w.Set("a.str", arr(loader.TypeString, []string{"x", "yz"}))
	w.Set("a.u64", arr(loader.TypeUint64, []uint64{1 << 40}))
	w.Set("a.i64", arr(loader.TypeInt64, []int64{-1 << 40}))
	w.Set("a.f64", arr(loader.TypeFloat64, []float64{0.25}))
	w.Set("a.nested", arr(loader.TypeArray, []loader.Array{
		{Elem: loader.TypeInt32, Values: []int32{1, 2}},
		{Elem: loader.TypeString, Values: []string{"q"}},
	}))
	var got struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(infoOf(t, w, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a.u8": `[1,255]`, "a.i8": `[-3,4]`, "a.u16": `[65535]`, "a.i16": `[-32768]`,
		"a.u32": `[7]`, "a.i32": `[-7,8]`, "a.f32": `[0.1,-2]`, "a.bool": `[true,false]`,
		"a.str": `["x","yz"]`, "a.u64": `[1099511627776]`, "a.i64": `[-1099511627776]`,
		"a.f64": `[0.25]`, "a.nested": `[[1,2],["q"]]`,
	}
	for k, v := range want {
		var g bytes.Buffer
		if err := json.Compact(&g, got.Metadata[k]); err != nil {
			t.Fatalf("%s: %v (%s)", k, err, got.Metadata[k])
		}
		if g.String() != v {
			t.Errorf("%s = %s, want %s", k, g.String(), v)
		}
	}
}

// `woolly info` names MXFP4 tensors and the MXFP4_MOE file type; an MXFP4
// tensor whose rows are not whole blocks is one clear error.
func TestInfoMXFP4(t *testing.T) {
	w := loader.NewWriter()
	w.SetString("general.architecture", "gpt-oss")
	w.SetUint32("general.file_type", 38)
	if err := w.AddTensor("blk.0.ffn_up_exps.weight", kernels.MXFP4, []int64{64, 4, 2}, make([]byte, 8*2*17)); err != nil {
		t.Fatal(err)
	}
	text := infoOf(t, w)
	for _, want := range []string{"MXFP4_MOE (38)", "MXFP4: 1", "blk.0.ffn_up_exps.weight"} {
		if !strings.Contains(text, want) {
			t.Errorf("info output lacks %q:\n%s", want, text)
		}
	}
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "blk.0.ffn_up_exps.weight" && f[1] == "MXFP4" && f[len(f)-1] == "272" {
			found = true
		}
	}
	if !found {
		t.Errorf("no tensor line naming MXFP4 with 272 bytes:\n%s", text)
	}

	// rows of 48 values: not a whole number of 32-element blocks
	bad := loader.NewWriter()
	bad.SetString("general.architecture", "gpt-oss")
	if err := bad.AddTensor("w", kernels.MXFP4, []int64{48, 2}, make([]byte, 51)); err == nil {
		t.Error("the writer accepted an MXFP4 row of 48")
	} else if !strings.Contains(err.Error(), "MXFP4: row length 48 is not a multiple of the block size 32") {
		t.Errorf("writer error %q", err)
	}
}
