package quant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/ggml"
	sharedref "github.com/woolly-llm/woolly/internal/shared" // "shared" names the data's path here
	"github.com/woolly-llm/woolly/loader"
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
		ty, ok := ggml.TypeByName(m[n].Type)
		if !ok {
			t.Fatalf("unknown type %q", m[n].Type)
		}
		out = append(out, TensorDesc{Name: n, Type: ty, Shape: m[n].Ne})
	}
	return out
}

// modelOf reads Plan's hyperparameters from a shared model's metadata.
func modelOf(t *testing.T, name string) Model {
	t.Helper()
	f, err := loader.Open(filepath.Join(shared, "models", name))
	if err != nil {
		t.Skipf("model not available: %v", err)
	}
	defer f.Close()
	return ModelOf(f)
}

// TestPlanMatchesLlamaQuantize checks the planned type of every tensor
// against the files llama-quantize made from the same inputs.
func TestPlanMatchesLlamaQuantize(t *testing.T) {
	tt := loadTensorTypes(t)
	for _, c := range sharedref.LlamaQuantized() {
		ft, err := ParseFileType(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		in := descs(t, tt[c.In])
		want := tt[c.Out]
		if want == nil {
			t.Errorf("%s missing from tensor_types.json", c.Out)
			continue
		}
		plan, err := Plan(ft, in, modelOf(t, c.In))
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, d := range in {
			w, ok := want[d.Name]
			if !ok {
				t.Errorf("%s: %s missing from reference", c.Out, d.Name)
				continue
			}
			if got := plan[i].Type.String(); got != w.Type {
				bad++
				t.Errorf("%s: %s planned %s, llama-quantize wrote %s", c.Out, d.Name, got, w.Type)
			}
		}
		if len(in) != len(want) {
			t.Errorf("%s: %d tensors in, %d in reference", c.Out, len(in), len(want))
		}
		t.Logf("%s: %d tensors, %d mismatches", c.Out, len(in), bad)
	}
}

// TestPlanTied: with no output.weight the token embedding is quantized like
// an output tensor (Q6_K in a Q4_K_M file), as in synth-qwen2/granite-mini;
// the architecture minis also cover 64-wide rows (Q4_K → Q5_0, Q6_K → Q8_0)
// and the 8-expert rules (qwen3moe: attn_k, attn_v Q8_0, attn_output Q5_K).
func TestPlanTied(t *testing.T) {
	tt := loadTensorTypes(t)
	for _, name := range []string{"synth-qwen2-mini-Q4_K_M.gguf", "synth-granite-mini-Q4_K_M.gguf",
		"synth-qwen3-mini-Q4_K_M.gguf", "synth-qwen3moe-mini-Q4_K_M.gguf", "synth-mixtral-mini-Q4_K_M.gguf",
		"synth-gemma2-mini-Q4_K_M.gguf", "synth-gemma3-mini-Q4_K_M.gguf", "synth-phi3-mini-Q4_K_M.gguf"} {
		ref := tt[name]
		if ref == nil {
			t.Errorf("%s missing from tensor_types.json", name)
			continue
		}
		in := descs(t, ref)
		for i := range in { // pretend the input was F16/F32 as converted
			if in[i].Type != ggml.F32 {
				in[i].Type = ggml.F16
			}
		}
		plan, err := Plan(FileQ4_K_M, in, modelOf(t, name))
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
		in = append(in, TensorDesc{Name: "blk." + itoa(l) + ".attn_v.weight", Type: ggml.F16, Shape: []int64{2048, 256}})
	}
	plan, _ := Plan(FileQ4_K_M, in, Model{Arch: "llama", NLayer: 22, NHead: 32, NHeadKV: 4})
	var got []int
	for i, c := range plan {
		if c.Type == ggml.Q6_K {
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

// miniTensors is synth-llama-mini's tensor list at a given width (n_embd),
// with or without output.weight (n_ff = max(3·n_embd, 256)).
func miniTensors(nEmbd int64, layers int, tied bool) []TensorDesc {
	kv, ff := nEmbd/4, max(3*nEmbd, 256)
	ts := []TensorDesc{{Name: "token_embd.weight", Type: ggml.F16, Shape: []int64{nEmbd, 32000}}}
	for l := range layers {
		p := "blk." + itoa(l) + "."
		ts = append(ts,
			TensorDesc{Name: p + "attn_norm.weight", Type: ggml.F32, Shape: []int64{nEmbd}},
			TensorDesc{Name: p + "attn_q.weight", Type: ggml.F16, Shape: []int64{nEmbd, nEmbd}},
			TensorDesc{Name: p + "attn_k.weight", Type: ggml.F16, Shape: []int64{nEmbd, kv}},
			TensorDesc{Name: p + "attn_v.weight", Type: ggml.F16, Shape: []int64{nEmbd, kv}},
			TensorDesc{Name: p + "attn_output.weight", Type: ggml.F16, Shape: []int64{nEmbd, nEmbd}},
			TensorDesc{Name: p + "ffn_gate.weight", Type: ggml.F16, Shape: []int64{nEmbd, ff}},
			TensorDesc{Name: p + "ffn_up.weight", Type: ggml.F16, Shape: []int64{nEmbd, ff}},
			TensorDesc{Name: p + "ffn_down.weight", Type: ggml.F16, Shape: []int64{ff, nEmbd}})
	}
	if !tied {
		ts = append(ts, TensorDesc{Name: "output.weight", Type: ggml.F16, Shape: []int64{nEmbd, 32000}})
	}
	return ts
}

// planTypes returns "name=TYPE" for every tensor whose name contains one
// of the given fragments.
func planTypes(t *testing.T, ft FileType, ts []TensorDesc, m Model, frags ...string) map[string]string {
	t.Helper()
	plan, err := Plan(ft, ts, m)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, d := range ts {
		for _, f := range frags {
			if strings.Contains(d.Name, f) {
				out[d.Name] = plan[i].Type.String()
			}
		}
	}
	return out
}

// TestPlanRules checks the rules of the new mixes that the shared files do
// not exercise: Q3_K_L, the row-length fallbacks of Q2_K/Q3_K/IQ4_XS, the
// GQA < 4 branches, the 70B rule and 16 layers' Q3_K_M/IQ4 ffn_down rule.
func TestPlanRules(t *testing.T) {
	gqa4 := Model{Arch: "llama", NLayer: 4, NHead: 8, NHeadKV: 2}
	mha := Model{Arch: "llama", NLayer: 4, NHead: 8}
	expect := func(name string, got map[string]string, want map[string]string) {
		t.Helper()
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s planned %s, want %s", name, k, got[k], w)
			}
		}
	}
	mini := miniTensors(256, 4, false)
	expect("Q3_K_L", planTypes(t, FileQ3_K_L, mini, gqa4, "blk.1.", "output.", "token_embd"), map[string]string{
		"blk.1.attn_q.weight": "Q3_K", "blk.1.attn_v.weight": "Q5_K", "blk.1.attn_output.weight": "Q5_K",
		"blk.1.ffn_down.weight": "Q5_K", "blk.1.ffn_up.weight": "Q3_K", "output.weight": "Q6_K",
		"token_embd.weight": "Q3_K", "blk.1.attn_norm.weight": "F32",
	})
	expect("Q2_K without GQA", planTypes(t, FileQ2_K, mini, mha, "blk.0.attn_v"), map[string]string{"blk.0.attn_v.weight": "Q3_K"})
	expect("IQ4_XS without GQA", planTypes(t, FileIQ4_XS, mini, mha, "blk.0.attn_v"), map[string]string{"blk.0.attn_v.weight": "IQ4_XS"})

	// 64-wide rows (tied): 256-blocks fall back; 256-wide ffn_down rows do not.
	small := miniTensors(64, 4, true)
	expect("Q2_K n_embd 64", planTypes(t, FileQ2_K, small, gqa4, "blk.2.", "token_embd"), map[string]string{
		"blk.2.attn_q.weight": "Q4_0", "blk.2.attn_v.weight": "Q5_0", "blk.2.attn_output.weight": "Q4_0",
		"blk.2.ffn_down.weight": "Q3_K", "token_embd.weight": "Q8_0",
	})
	expect("IQ4_XS n_embd 64", planTypes(t, FileIQ4_XS, small, gqa4, "blk.2.", "token_embd"), map[string]string{
		"blk.2.attn_q.weight": "IQ4_NL", "blk.2.attn_v.weight": "Q5_1", "blk.2.ffn_down.weight": "IQ4_XS",
		"token_embd.weight": "Q8_0",
	})
	expect("IQ4_NL n_embd 64", planTypes(t, FileIQ4_NL, small, gqa4, "blk.2.attn_q"), map[string]string{"blk.2.attn_q.weight": "IQ4_NL"})

	// 16 layers: ffn_down of layer 0 (< 16/16) is Q5_K in Q3_K_M; layers 0, 1
	// (< 16/8) are Q5_K in IQ4_XS.
	deep := miniTensors(256, 16, false)
	m16 := Model{Arch: "llama", NLayer: 16, NHead: 8, NHeadKV: 2}
	expect("Q3_K_M 16 layers", planTypes(t, FileQ3_K_M, deep, m16, "ffn_down"), map[string]string{
		"blk.0.ffn_down.weight": "Q5_K", "blk.1.ffn_down.weight": "Q4_K", "blk.15.ffn_down.weight": "Q4_K",
	})
	expect("IQ4_XS 16 layers", planTypes(t, FileIQ4_XS, deep, m16, "ffn_down"), map[string]string{
		"blk.0.ffn_down.weight": "Q5_K", "blk.1.ffn_down.weight": "Q5_K", "blk.2.ffn_down.weight": "IQ4_XS",
	})

	// A 70B llama (80 layers, GQA 8): attn_v Q3_K/Q4_K become Q5_K.
	m70 := Model{Arch: "llama", NLayer: 80, NHead: 64, NHeadKV: 8}
	v := []TensorDesc{{Name: "blk.0.attn_v.weight", Type: ggml.F16, Shape: []int64{8192, 1024}}}
	for _, ft := range []FileType{FileQ2_K, FileQ3_K_S, FileQ3_K_M} {
		expect("70B "+ft.String(), planTypes(t, ft, v, m70, "attn_v"), map[string]string{"blk.0.attn_v.weight": "Q5_K"})
	}
	m65 := Model{Arch: "llama", NLayer: 80, NHead: 64, NHeadKV: 64}
	expect("65B Q3_K_S", planTypes(t, FileQ3_K_S, v, m65, "attn_v"), map[string]string{"blk.0.attn_v.weight": "Q3_K"})
}

func TestParseFileTypeNewNames(t *testing.T) {
	for s, want := range map[string]FileType{"q2_k": FileQ2_K, "Q3_K_S": FileQ3_K_S, "q3_k_m": FileQ3_K_M,
		"q3_k_l": FileQ3_K_L, "iq4_nl": FileIQ4_NL, "IQ4_XS": FileIQ4_XS, "q3_k": FileQ3_K_M, "Q4_K": FileQ4_K_M, "q5_k": FileQ5_K_M} {
		got, err := ParseFileType(s)
		if err != nil || got != want {
			t.Errorf("ParseFileType(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for ft, want := range map[FileType]string{FileQ2_K: "Q2_K", FileQ3_K_M: "Q3_K_M", FileIQ4_XS: "IQ4_XS"} {
		if ft.String() != want {
			t.Errorf("%d.String() = %s, want %s", ft, ft, want)
		}
	}
	for ft, want := range map[FileType]ggml.Type{FileQ2_K: ggml.Q2_K, FileQ3_K_S: ggml.Q3_K, FileQ3_K_L: ggml.Q3_K,
		FileIQ4_NL: ggml.IQ4_NL, FileIQ4_XS: ggml.IQ4_XS} {
		if ft.DefaultType() != want {
			t.Errorf("%v.DefaultType() = %v, want %v", ft, ft.DefaultType(), want)
		}
	}
	if _, err := ParseFileType("q2_k_xl"); err == nil {
		t.Error("q2_k_xl accepted")
	}
}

// MXFP4_MOE as llama-quantize plans it: stacked experts (ne[2] > 1) MXFP4,
// output and tied embeddings Q8_0, every other quantized tensor Q8_0 (the
// attn_v / ffn_down rules do not apply), norms, routers and sinks kept.
func TestPlanMXFP4MoE(t *testing.T) {
	f32, f16 := ggml.F32, ggml.F16
	moe := []TensorDesc{
		{"token_embd.weight", f16, []int64{2880, 201088}},
		{"output.weight", f16, []int64{2880, 201088}},
		{"output_norm.weight", f32, []int64{2880}},
		{"blk.0.attn_q.weight", f16, []int64{2880, 4096}},
		{"blk.0.attn_v.weight", f16, []int64{2880, 512}},
		{"blk.0.attn_output.weight", f16, []int64{4096, 2880}},
		{"blk.0.attn_sinks.weight", f32, []int64{64}},
		{"blk.0.ffn_gate_inp.weight", f32, []int64{2880, 32}},
		{"blk.0.ffn_gate_exps.weight", f16, []int64{2880, 2880, 32}},
		{"blk.0.ffn_up_exps.weight", f16, []int64{2880, 2880, 32}},
		{"blk.0.ffn_down_exps.weight", f16, []int64{2880, 2880, 32}},
		{"blk.0.ffn_down.weight", f16, []int64{2880, 2880}},
		{"blk.0.ffn_up_exps.bias", f32, []int64{2880, 32}},
		{"blk.0.ffn_up_shexp.weight", f16, []int64{2880, 2880, 1}},
		{"blk.0.ffn_gate_exps.weight.odd", f16, []int64{2880, 100, 2}}, // 3-D, not a ".weight" name: kept
		{"blk.0.ffn_norm_exps.weight", f16, []int64{40, 2880, 4}},      // rows of 40: F16 fallback
	}
	m := Model{Arch: "gpt-oss", NLayer: 1, NHead: 64, NHeadKV: 8, NExpert: 32}
	plan, err := Plan(FileMXFP4_MOE, moe, m)
	require.NoError(t, err)
	want := []string{"Q8_0", "Q8_0", "F32", "Q8_0", "Q8_0", "Q8_0", "F32", "F32", "MXFP4", "MXFP4", "MXFP4", "Q8_0",
		"F32", "Q8_0", "F16", "F16"}
	for i, c := range plan {
		require.Equal(t, want[i], c.Type.String(), moe[i].Name)
	}
	require.Contains(t, plan[15].Note, "not a multiple of 32")

	// tied embeddings: token_embd is the output, Q8_0; bailingmoe3 keeps its
	// non-FFN 3-D tensors at Q8_0
	plan, err = Plan(FileMXFP4_MOE, []TensorDesc{moe[0], moe[8]}, m)
	require.NoError(t, err)
	require.Equal(t, []ggml.Type{ggml.Q8_0, ggml.MXFP4}, []ggml.Type{plan[0].Type, plan[1].Type})
	b3 := []TensorDesc{{"blk.0.attn_kv_b.weight", f16, []int64{512, 128, 4}}, moe[9]}
	plan, err = Plan(FileMXFP4_MOE, b3, Model{Arch: "bailingmoe3", NLayer: 1, NExpert: 32})
	require.NoError(t, err)
	require.Equal(t, []ggml.Type{ggml.Q8_0, ggml.MXFP4}, []ggml.Type{plan[0].Type, plan[1].Type})
	plan, err = Plan(FileMXFP4_MOE, b3[:1], m)
	require.NoError(t, err)
	require.Equal(t, ggml.MXFP4, plan[0].Type)

	for _, s := range []string{"mxfp4", "MXFP4_MOE", "mxfp4_moe"} {
		ft, err := ParseFileType(s)
		require.NoError(t, err)
		require.Equal(t, FileMXFP4_MOE, ft)
	}
	require.Equal(t, "MXFP4_MOE", FileMXFP4_MOE.String())
	require.Equal(t, ggml.MXFP4, FileMXFP4_MOE.DefaultType())
}
