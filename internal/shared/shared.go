// Package shared finds the reference data the tests compare against: the
// directory "shared" beside the repository (models/*.gguf, vocab/, and
// ref/: what llama.cpp produced on each model), read-only. Tests that need
// it skip when it is absent.
package shared

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared directory: ../shared from the repository root (the
// first directory above the working directory holding go.mod). It skips the
// test when that directory or its ref/tensor_types.json is missing.
func Dir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Skipf("shared test data: %v", err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			t.Skipf("shared test data: no go.mod above %s", wd)
		}
		root = up
	}
	dir := filepath.Join(filepath.Dir(root), "shared")
	if _, err := os.Stat(filepath.Join(dir, "ref", "tensor_types.json")); err != nil {
		t.Skipf("shared test data not found at %s (%v); skipping", dir, err)
	}
	return dir
}

// Tensor is one tensor as ref/tensor_types.json describes it (written by
// llama.cpp's gguf-py).
type Tensor struct {
	Type       string  `json:"type"`
	Ne         []int64 `json:"ne"`
	DataOffset int64   `json:"data_offset"`
	NBytes     int64   `json:"n_bytes"`
}

// File is one model file of ref/tensor_types.json.
type File struct {
	FileBytes int64             `json:"file_bytes"`
	Tensors   map[string]Tensor `json:"tensors"`
}

// TensorTypes reads dir/ref/tensor_types.json: every shared model by file
// name. A file that cannot be read or parsed fails the test.
func TensorTypes(t testing.TB, dir string) map[string]File {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ref", "tensor_types.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]File
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// Quantization is one file of models/ that llama-quantize made from
// another: In (F16 or F32), Out, and the type llama-quantize was given
// (Q4_K_M, ...).
type Quantization struct {
	In, Out, Type string
}

// LlamaQuantized lists the models/ files llama-quantize made, each named
// base-TYPE.gguf after its input base-F16.gguf or base-F32.gguf.
func LlamaQuantized() []Quantization {
	var out []Quantization
	for _, m := range []struct {
		base, in string
		types    []string
	}{
		{"synth-llama-mini", "F16", []string{"Q4_K_M", "Q5_K_M", "Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_XS", "IQ4_NL"}},
		{"stories260K", "F32", []string{"Q4_K_M", "Q4_0", "Q6_K", "Q8_0", "F16"}},
	} {
		for _, typ := range m.types {
			out = append(out, Quantization{In: m.base + "-" + m.in + ".gguf", Out: m.base + "-" + typ + ".gguf", Type: typ})
		}
	}
	return out
}
