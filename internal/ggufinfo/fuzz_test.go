package ggufinfo

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/loader"
)

// FuzzInfo: whatever GGUF bytes the parser accepts, `woolly info` renders
// (plain and --json) without an error or a panic; the JSON is valid and
// counts every key and tensor; the plain listing is printable UTF-8 (no
// control bytes from the file reach the terminal) with one line per key and
// per tensor. The corpus is testdata/fuzz/FuzzInfo (the shared files cut
// down, as for loader's FuzzParse, plus every input that found a bug):
//
//	go test ./internal/ggufinfo -run '^$' -fuzz '^FuzzInfo$' -fuzztime 60s -parallel 1
func FuzzInfo(f *testing.F) {
	f.Add([]byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := loader.Parse(b)
		if err != nil {
			return
		}
		js, err := json.Marshal(JSON(file))
		if err != nil {
			t.Fatalf("info --json: %v", err)
		}
		var obj struct {
			KVCount     int `json:"kv_count"`
			TensorCount int `json:"tensor_count"`
			Metadata    map[string]any
			Tensors     []map[string]any
		}
		if err := json.Unmarshal(js, &obj); err != nil {
			t.Fatalf("info --json is not JSON: %v\n%s", err, js)
		}
		if obj.KVCount != len(file.KV) || obj.TensorCount != len(file.Tensors) || len(obj.Tensors) != len(file.Tensors) {
			t.Fatalf("info --json counts %d keys, %d tensors (%d listed); the file has %d, %d", obj.KVCount, obj.TensorCount, len(obj.Tensors), len(file.KV), len(file.Tensors))
		}
		var buf bytes.Buffer
		if err := Text(file, &buf); err != nil {
			t.Fatalf("info: %v", err)
		}
		out := buf.String()
		if !utf8.ValidString(out) {
			t.Fatalf("info: the listing is not valid UTF-8:\n%q", out)
		}
		for _, r := range out {
			if r == utf8.RuneError || (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) {
				t.Fatalf("info: control character %U in the listing:\n%q", r, out)
			}
		}
		_, meta, ok := strings.Cut(out, "\nmetadata (")
		if !ok {
			t.Fatalf("info: no metadata section:\n%s", out)
		}
		meta, tensors, _ := strings.Cut(meta, "\n\ntensors:\n")
		if got := len(strings.Split(strings.TrimRight(meta, "\n"), "\n")) - 1; got != len(file.KV) {
			t.Fatalf("info: %d metadata lines for %d keys:\n%s", got, len(file.KV), out)
		}
		if len(file.Tensors) > 0 {
			if got := len(strings.Split(strings.TrimRight(tensors, "\n"), "\n")) - 1; got != len(file.Tensors) {
				t.Fatalf("info: %d tensor lines for %d tensors:\n%s", got, len(file.Tensors), out)
			}
		}
	})
}
