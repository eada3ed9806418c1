package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/loader"

	"github.com/woolly-llm/woolly/internal/shared"
)

func sharedDir(t *testing.T) string { return shared.Dir(t) }

// TestQuantizeLikeLlamaQuantize quantizes the shared F16/F32 models and
// checks each result against llama-quantize's file: the whole file must be
// byte-identical. On a mismatch it reports what differs: the type of a tensor
// (ref/tensor_types.json), its bytes, the tensor order, metadata keys and
// general.file_type.
func TestQuantizeLikeLlamaQuantize(t *testing.T) {
	for _, c := range shared.LlamaQuantized() {
		t.Run(c.Out, func(t *testing.T) { quantizeLike(t, c.In, c.Out, strings.ToLower(c.Type)) })
	}
}

func quantizeLike(t *testing.T, inName, refName, typ string) {
	sh := sharedDir(t)
	in := filepath.Join(sh, "models", inName)
	out := filepath.Join(t.TempDir(), "q.gguf")
	var so, se bytes.Buffer
	if err := runQuantize([]string{"--no-progress", in, out, typ}, &so, &se); err != nil {
		t.Fatalf("quantize: %v\n%s", err, se.String())
	}
	t.Log(so.String())
	gotBytes, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	refBytes, err := os.ReadFile(filepath.Join(sh, "models", refName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(gotBytes, refBytes) {
		return
	}
	t.Errorf("%s differs from llama-quantize's file (%d bytes, want %d)", typ, len(gotBytes), len(refBytes))

	tt := shared.TensorTypes(t, sh)
	want := tt[refName].Tensors

	got, err := loader.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	ref, err := loader.Open(filepath.Join(sh, "models", refName))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()

	if len(got.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want))
	}
	for i, ti := range got.Tensors {
		if i < len(ref.Tensors) && ti.Name != ref.Tensors[i].Name {
			t.Errorf("tensor %d is %s, llama-quantize wrote %s", i, ti.Name, ref.Tensors[i].Name)
		}
		w, ok := want[ti.Name]
		if !ok {
			t.Errorf("unexpected tensor %s", ti.Name)
			continue
		}
		if ti.Type.String() != w.Type {
			t.Errorf("%s: type %v, llama-quantize %s", ti.Name, ti.Type, w.Type)
		}
		rt, _ := ref.Tensor(ti.Name)
		if !bytes.Equal(got.Data(&got.Tensors[i]), ref.Data(rt)) {
			t.Errorf("%s: bytes differ from llama-quantize's", ti.Name)
		}
	}
	ftype, _ := ref.Uint("general.file_type")
	if ft, ok := got.Uint("general.file_type"); !ok || ft != ftype {
		t.Errorf("general.file_type = %d, llama-quantize wrote %d", ft, ftype)
	}
	for i, kv := range ref.KV {
		if i < len(got.KV) && got.KV[i].Key != kv.Key {
			t.Errorf("metadata key %d is %s, llama-quantize wrote %s", i, got.KV[i].Key, kv.Key)
		}
		g, ok := got.Get(kv.Key)
		if !ok {
			t.Errorf("metadata %s missing", kv.Key)
			continue
		}
		if g.Type != kv.Value.Type {
			t.Errorf("metadata %s: type %v, want %v", kv.Key, g.Type, kv.Value.Type)
		}
	}
	if len(got.KV) != len(ref.KV) {
		t.Errorf("%d metadata keys, llama-quantize wrote %d", len(got.KV), len(ref.KV))
	}
}

func TestQuantizeRejects(t *testing.T) {
	sh := sharedDir(t)
	var so, se bytes.Buffer
	q := filepath.Join(sh, "models", "synth-llama-mini-Q4_K_M.gguf")
	if err := runQuantize([]string{"--no-progress", q, filepath.Join(t.TempDir(), "x.gguf"), "q8_0"}, &so, &se); err == nil {
		t.Error("requantizing a Q4_K_M file without --allow-requantize succeeded")
	}
	if err := runQuantize([]string{q, filepath.Join(t.TempDir(), "x.gguf"), "q3_xx"}, &so, &se); err == nil {
		t.Error("unknown type accepted")
	}
	if err := runQuantize([]string{q}, &so, &se); err == nil {
		t.Error("missing arguments accepted")
	}
}
