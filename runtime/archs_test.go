package runtime

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// variant writes a copy of the shared model name with metadata changed
// (set: key -> value, a nil value deletes the key) and the tensor drop left
// out, and returns its path.
func variant(t *testing.T, name string, set map[string]*loader.Value, drop string) string {
	t.Helper()
	return variantWith(t, name, set, drop, nil)
}

// variantWith is variant with F32 tensors added.
func variantWith(t *testing.T, name string, set map[string]*loader.Value, drop string, add map[string][]float32) string {
	t.Helper()
	return variantEdit(t, name, set, drop, add, nil)
}

// variantEdit is variantWith with edit (when not nil) given each tensor's
// data to return the type and bytes to write.
func variantEdit(t *testing.T, name string, set map[string]*loader.Value, drop string, add map[string][]float32,
	edit func(ti *loader.TensorInfo, data []byte) (kernels.Type, []byte)) string {
	t.Helper()
	return rewriteFile(t, filepath.Join(sharedDir(t), "models", name+".gguf"), name+".gguf", set, drop, add, edit)
}

// rewriteFile writes a copy of the model at path, as file in a temporary
// directory, with metadata changed (set; a nil value deletes the key),
// tensor drop left out, the F32 tensors add added and, when edit is not
// nil, each tensor's type and data replaced by what edit returns.
func rewriteFile(t *testing.T, path, file string, set map[string]*loader.Value, drop string, add map[string][]float32,
	edit func(ti *loader.TensorInfo, data []byte) (kernels.Type, []byte)) string {
	t.Helper()
	f, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := loader.NewWriter()
	for _, kv := range f.KV {
		if v, ok := set[kv.Key]; ok {
			if v != nil {
				w.Set(kv.Key, *v)
			}
			continue
		}
		w.Set(kv.Key, kv.Value)
	}
	for k, v := range set {
		if _, present := f.Get(k); !present && v != nil {
			w.Set(k, *v)
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name == drop {
			continue
		}
		ty, data := ti.Type, f.Data(ti)
		if edit != nil {
			ty, data = edit(ti, data)
		}
		if err := w.AddTensor(ti.Name, ty, ti.Shape, data); err != nil {
			t.Fatal(err)
		}
	}
	for n, vals := range add {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		if err := w.AddTensor(n, kernels.F32, []int64{int64(len(vals))}, b); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), file)
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func u32(v uint32) *loader.Value  { return &loader.Value{Type: loader.TypeUint32, V: v} }
func f32(v float32) *loader.Value { return &loader.Value{Type: loader.TypeFloat32, V: v} }
func str(v string) *loader.Value  { return &loader.Value{Type: loader.TypeString, V: v} }
func deleted() *loader.Value      { return nil }
func loadErr(path string) error {
	m, err := Load(path, LoadOptions{Threads: 1})
	if err == nil {
		m.Close()
	}
	return err
}

// TestArchBadInput: files that contradict their architecture give one clear
// error each, naming the key or tensor.
func TestArchBadInput(t *testing.T) {
	cases := []struct {
		model string
		set   map[string]*loader.Value
		drop  string
		want  string
	}{
		{"synth-qwen3moe-mini-Q4_K_M", map[string]*loader.Value{"qwen3moe.expert_used_count": u32(9)}, "", "expert_used_count 9 exceeds expert_count 8"},
		{"synth-qwen3moe-mini-Q4_K_M", map[string]*loader.Value{"qwen3moe.expert_used_count": u32(0)}, "", "expert_used_count"},
		{"synth-qwen3moe-mini-Q4_K_M", map[string]*loader.Value{"qwen3moe.expert_count": deleted()}, "", "qwen3moe.expert_count is missing"},
		{"synth-qwen3-mini-Q4_K_M", map[string]*loader.Value{"qwen3.block_count": u32(0)}, "", "key qwen3.block_count has invalid value 0"},
		{"synth-qwen3-mini-Q4_K_M", map[string]*loader.Value{"qwen3.block_count": u32(1<<31 + 1)}, "", "key qwen3.block_count has invalid value 2147483649"},
		{"synth-qwen3-mini-Q4_K_M", map[string]*loader.Value{"qwen3.block_count": str("4")}, "", "key qwen3.block_count is not a non-negative integer"},
		{"synth-qwen3moe-mini-Q4_K_M", nil, "blk.2.ffn_down_exps.weight", "tensor blk.2.ffn_down_exps.weight is missing"},
		{"synth-qwen3moe-mini-Q4_K_M", nil, "blk.0.ffn_gate_inp.weight", "tensor blk.0.ffn_gate_inp.weight is missing"},
		{"synth-qwen3moe-mini-Q4_K_M", map[string]*loader.Value{"qwen3moe.expert_count": u32(4)}, "", "ffn_gate_inp.weight has shape [64 8], but the model's hyperparameters give [64 4] (qwen3moe.embedding_length 64"},
		{"synth-mixtral-mini-Q4_K_M", nil, "blk.3.ffn_up_exps.weight", "tensor blk.3.ffn_up_exps.weight is missing"},
		{"synth-mixtral-mini-Q4_K_M", map[string]*loader.Value{"llama.expert_used_count": u32(5)}, "", "expert_used_count 5 exceeds expert_count 4"},
		{"synth-qwen3-mini-Q4_K_M", nil, "blk.1.attn_k_norm.weight", "tensor blk.1.attn_k_norm.weight is missing"},
		{"synth-qwen3-mini-Q4_K_M", map[string]*loader.Value{"qwen3.expert_count": u32(8)}, "", "only as a dense model"},
		{"synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.attn_logit_softcapping": f32(-3)}, "", "soft-capping values must be positive"},
		{"synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.final_logit_softcapping": str("8")}, "", "final_logit_softcapping is not a finite number"},
		{"synth-gemma2-mini-Q4_K_M", nil, "blk.0.post_ffw_norm.weight", "tensor blk.0.post_ffw_norm.weight is missing"},
		{"synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.attention.sliding_window_pattern": str("x")}, "", "sliding_window_pattern is neither"},
		{"synth-gemma3-mini-Q4_K_M", map[string]*loader.Value{"gemma3.rope.freq_base_swa": f32(-1)}, "", "rope.freq_base_swa -1 is invalid"},
		{"synth-phi3-mini-Q4_K_M", map[string]*loader.Value{"phi3.attention.head_count_kv": u32(4)}, "", "attn_qkv.weight has shape [64 128], but the model's hyperparameters give [64 192] (phi3.embedding_length 64, phi3.attention.head_count 4, phi3.attention.head_count_kv 4"},
		{"synth-llama-mini-Q4_K_M", map[string]*loader.Value{"llama.feed_forward_length": u32(512)}, "", "blk.0.ffn_gate.weight has shape [256 768], but the model's hyperparameters give [256 512] ("},
		{"synth-llama-mini-Q4_K_M", map[string]*loader.Value{"llama.feed_forward_length": u32(512)}, "", "llama.feed_forward_length 512)"},
		{"synth-phi3-mini-Q4_K_M", map[string]*loader.Value{"phi3.attention.layer_norm_rms_epsilon": deleted()}, "", "layer_norm_rms_epsilon is missing"},
	}
	for _, c := range cases {
		err := loadErr(variant(t, c.model, c.set, c.drop))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v drop %q: err = %v, want it to name %q", c.model, c.set, c.drop, err, c.want)
		}
	}
}

// TestGemma2SoftCapDefaults: like llama.cpp, a gemma2 file without the
// soft-capping keys gets Gemma 2's values (attention 50, final 30), and
// the caps in the file are read when present.
func TestGemma2SoftCapDefaults(t *testing.T) {
	path := variant(t, "synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{
		"gemma2.attn_logit_softcapping": deleted(), "gemma2.final_logit_softcapping": deleted(),
		"gemma2.attention.sliding_window": deleted()}, "")
	c := loadConfig(t, path)
	if c.AttnSoftCap != 50 || c.FinalSoftCap != 30 || c.SlidingWindow != 4096 {
		t.Errorf("defaults: attention cap %v, final cap %v, window %d; want 50, 30, 4096", c.AttnSoftCap, c.FinalSoftCap, c.SlidingWindow)
	}
	c = loadConfig(t, filepath.Join(sharedDir(t), "models", "synth-gemma2-mini-Q4_K_M.gguf"))
	want := []bool{true, false, true, false}
	if c.AttnSoftCap != 3 || c.FinalSoftCap != 8 || c.SlidingWindow != 16 || c.QScale != 0.125 || c.EmbeddingScale != 8 ||
		len(c.SWALayers) != 4 || c.SWALayers[0] != want[0] || c.SWALayers[1] != want[1] || c.SWALayers[2] != want[2] || c.SWALayers[3] != want[3] {
		t.Errorf("gemma2 mini config %+v", c)
	}
	// A per-layer boolean pattern overrides the period.
	w := boolArray(true, true, false, false)
	c = loadConfig(t, variant(t, "synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.attention.sliding_window_pattern": w}, ""))
	if !c.SWALayers[0] || !c.SWALayers[1] || c.SWALayers[2] || c.SWALayers[3] {
		t.Errorf("boolean pattern: %v", c.SWALayers)
	}
}

func boolArray(b ...bool) *loader.Value {
	return &loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: loader.TypeBool, Values: b}}
}

// TestGemma3Layers: gemma3's local/global pattern (5 local, then global)
// and its two RoPE bases.
func TestGemma3Layers(t *testing.T) {
	c := loadConfig(t, filepath.Join(sharedDir(t), "models", "synth-gemma3-mini-Q4_K_M.gguf"))
	got := ""
	for _, l := range c.SWALayers {
		got += map[bool]string{true: "L", false: "G"}[l]
	}
	if got != "LLLLLG" || c.RopeBase != 1e6 || c.RopeBaseSWA != 1e4 || c.AttnSoftCap != 0 || c.FinalSoftCap != 0 || !c.QKNorm {
		t.Errorf("gemma3 layers %s, bases %v / %v, caps %v %v, qk norm %v", got, c.RopeBase, c.RopeBaseSWA, c.AttnSoftCap, c.FinalSoftCap, c.QKNorm)
	}
}

// TestPhi3LongRoPE: Phi-3-128k's frequency factors, as llama.cpp applies
// them: the short factors up to rope.scaling.original_context_length, the
// long ones for a longer context, and the tables scaled by
// rope.scaling.attn_factor.
func TestPhi3LongRoPE(t *testing.T) {
	const name = "synth-phi3-mini-Q4_K_M" // head_dim 16: 8 factors
	fill := func(v float32) []float32 { return slices.Repeat([]float32{v}, 8) }
	toks := []int32{1, 9038, 2501, 263, 931, 29892, 727, 471}
	logits := func(path string, nCtx int) []float32 {
		m := loadPath(t, path, LoadOptions{Threads: 1})
		return evalAll(t, newSession(t, m, nCtx), toks)
	}
	orig := map[string]*loader.Value{"phi3.rope.scaling.original_context_length": u32(256)}
	base := logits(filepath.Join(sharedDir(t), "models", name+".gguf"), 128)
	// Short factors of 1 at a short context: the same bits as no factors.
	ones := variantWith(t, name, orig, "", map[string][]float32{"rope_factors_short.weight": fill(1), "rope_factors_long.weight": fill(2)})
	if n, d := sameBits(base, logits(ones, 128)); n != 0 {
		t.Fatalf("short factors 1: %d logits differ (max %g)", n, d)
	}
	// Above the original context the long factors (2) apply: the same as
	// short factors of 2 at a short context, and not the same as 1.
	long := logits(ones, 512)
	twos := variantWith(t, name, orig, "", map[string][]float32{"rope_factors_short.weight": fill(2), "rope_factors_long.weight": fill(1)})
	if n, d := sameBits(logits(twos, 128), long); n != 0 {
		t.Fatalf("long factors: %d logits differ from the same factors as short ones (max %g)", n, d)
	}
	if n, _ := sameBits(base, long); n == 0 {
		t.Fatal("factors of 2 changed nothing")
	}
	// attn_factor scales the rotation: not a no-op.
	scaled := map[string]*loader.Value{"phi3.rope.scaling.original_context_length": u32(256), "phi3.rope.scaling.attn_factor": f32(1.19)}
	p := variantWith(t, name, scaled, "", map[string][]float32{"rope_factors_short.weight": fill(1), "rope_factors_long.weight": fill(1)})
	if n, _ := sameBits(base, logits(p, 128)); n == 0 {
		t.Fatal("attn_factor 1.19 changed nothing")
	}
	// Only one of the two factor tensors: an error naming the other.
	half := variantWith(t, name, orig, "", map[string][]float32{"rope_factors_long.weight": fill(2)})
	if err := loadErr(half); err == nil || !strings.Contains(err.Error(), "rope_factors_short.weight is missing") {
		t.Errorf("long factors without short ones: %v", err)
	}
}

// TestExpertTypesCheckedAtLoad: a mixture-of-experts file whose gate and up
// experts take different activation types (here Q5_0 gate: Q8_0 rows, F16
// up: F16 rows) is refused at load with an error naming the layer and
// types, never a panic in the forward pass (which quantizes the input rows
// once for both).
func TestExpertTypesCheckedAtLoad(t *testing.T) {
	path := variantEdit(t, "synth-mixtral-mini-Q4_K_M", nil, "", nil, func(ti *loader.TensorInfo, data []byte) (kernels.Type, []byte) {
		if ti.Name != "blk.1.ffn_up_exps.weight" {
			return ti.Type, data
		}
		if ti.Type.ActType() == kernels.F16 {
			t.Fatalf("%s is already %v: pick another type", ti.Name, ti.Type)
		}
		return kernels.F16, make([]byte, 2*ti.Shape[0]*ti.Shape[1]*ti.Shape[2])
	})
	err := loadErr(path)
	if err == nil || !strings.Contains(err.Error(), "layer 1: expert gate") || !strings.Contains(err.Error(), "different activation types") {
		t.Fatalf("err = %v, want the layer's expert types named", err)
	}
}
