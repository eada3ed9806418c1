package quant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
)

type refTensor struct {
	Type   string  `json:"type"`
	Ne     []int64 `json:"ne"`
	Offset int64   `json:"data_offset"`
}

func loadTensorTypes(t *testing.T) map[string]map[string]refTensor {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "ref", "tensor_types.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("shared reference data not available (%v)", err)
	}
	var raw map[string]struct {
		Tensors map[string]refTensor `json:"tensors"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]refTensor{}
	for k, v := range raw {
		out[k] = v.Tensors
	}
	return out
}

// descs lists a model's tensors in file order.
func descs(t *testing.T, m map[string]refTensor) []TensorDesc {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool { return m[names[a]].Offset < m[names[b]].Offset })
	var out []TensorDesc
	for _, n := range names {
		ty, ok := kernels.TypeByName(m[n].Type)
		if !ok {
			t.Fatalf("unknown type %q", m[n].Type)
		}
		out = append(out, TensorDesc{Name: n, Type: ty, Shape: m[n].Ne})
	}
	return out
}

// TestPlanMatchesLlamaQuantize checks the planned type of every tensor
// against the files llama-quantize made from the same inputs.
func TestPlanMatchesLlamaQuantize(t *testing.T) {
	tt := loadTensorTypes(t)
	cases := []struct {
		in, out string
		ft      FileType
		nLayer  int
	}{
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-Q4_K_M.gguf", FileQ4_K_M, 4},
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-Q5_K_M.gguf", FileQ5_K_M, 4},
		{"stories260K-F32.gguf", "stories260K-Q4_K_M.gguf", FileQ4_K_M, 5},
		{"stories260K-F32.gguf", "stories260K-Q4_0.gguf", FileQ4_0, 5},
		{"stories260K-F32.gguf", "stories260K-Q6_K.gguf", FileQ6_K, 5},
		{"stories260K-F32.gguf", "stories260K-Q8_0.gguf", FileQ8_0, 5},
		{"stories260K-F32.gguf", "stories260K-F16.gguf", FileF16, 5},
	}
	for _, c := range cases {
		in := descs(t, tt[c.in])
		want := tt[c.out]
		plan, err := Plan(c.ft, in, c.nLayer)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, d := range in {
			w, ok := want[d.Name]
			if !ok {
				t.Errorf("%s: %s missing from reference", c.out, d.Name)
				continue
			}
			if got := plan[i].Type.String(); got != w.Type {
				bad++
				t.Errorf("%s: %s planned %s, llama-quantize wrote %s", c.out, d.Name, got, w.Type)
			}
		}
		if len(in) != len(want) {
			t.Errorf("%s: %d tensors in, %d in reference", c.out, len(in), len(want))
		}
		t.Logf("%s: %d tensors, %d mismatches", c.out, len(in), bad)
	}
}

// TestPlanTied: with no output.weight the token embedding is quantized like
// an output tensor (Q6_K in a Q4_K_M file), as in synth-qwen2/granite-mini.
func TestPlanTied(t *testing.T) {
	tt := loadTensorTypes(t)
	for _, name := range []string{"synth-qwen2-mini-Q4_K_M.gguf", "synth-granite-mini-Q4_K_M.gguf"} {
		ref := tt[name]
		in := descs(t, ref)
		for i := range in { // pretend the input was F16/F32 as converted
			if in[i].Type != kernels.F32 {
				in[i].Type = kernels.F16
			}
		}
		plan, err := Plan(FileQ4_K_M, in, 4)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range in {
			if got := plan[i].Type.String(); got != ref[d.Name].Type {
				t.Errorf("%s: %s planned %s, want %s", name, d.Name, got, ref[d.Name].Type)
			}
		}
	}
}

func TestUseMoreBitsLayers(t *testing.T) {
	// 22 layers (TinyLlama): llama.cpp gives Q6_K to layers 0,1 (i < 2),
	// 19,20,21 (i >= 19) and every third from 4: (i-2)%3 == 2.
	var in []TensorDesc
	for l := 0; l < 22; l++ {
		in = append(in, TensorDesc{Name: "blk." + itoa(l) + ".attn_v.weight", Type: kernels.F16, Shape: []int64{2048, 256}})
	}
	plan, _ := Plan(FileQ4_K_M, in, 22)
	var got []int
	for i, c := range plan {
		if c.Type == kernels.Q6_K {
			got = append(got, i)
		}
	}
	want := []int{0, 1, 4, 7, 10, 13, 16, 19, 20, 21}
	if len(got) != len(want) {
		t.Fatalf("Q6_K layers %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Q6_K layers %v, want %v", got, want)
		}
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestWriteOrder: llama-quantize's files list their tensors in the order
// WriteOrder gives for the input's tensors.
func TestWriteOrder(t *testing.T) {
	tt := loadTensorTypes(t)
	for _, c := range [][2]string{
		{"synth-llama-mini-F16.gguf", "synth-llama-mini-Q4_K_M.gguf"},
		{"stories260K-F32.gguf", "stories260K-Q8_0.gguf"},
	} {
		in, out := descs(t, tt[c[0]]), descs(t, tt[c[1]])
		names := make([]string, len(in))
		for i, d := range in {
			names[i] = d.Name
		}
		order := WriteOrder(names)
		if len(order) != len(out) {
			t.Fatalf("%s: %d tensors, reference has %d", c[1], len(order), len(out))
		}
		for i, k := range order {
			if names[k] != out[i].Name {
				t.Fatalf("%s: tensor %d is %s, llama-quantize wrote %s", c[1], i, names[k], out[i].Name)
			}
		}
	}
	if got := layerOf("blk.12.attn_q.weight"); got != 12 {
		t.Errorf("layerOf(blk.12.attn_q.weight) = %d", got)
	}
	if got := layerOf("blk.x.attn_q.weight"); got != -1 {
		t.Errorf("layerOf(blk.x.attn_q.weight) = %d", got)
	}
}
