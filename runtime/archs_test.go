package runtime

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/loader"
)

// variant writes a copy of the shared model name with metadata changed
// (set: key -> value, a nil value deletes the key) and the tensor drop left
// out, and returns its path.
func variant(t *testing.T, name string, set map[string]*loader.Value, drop string) string {
	t.Helper()
	f, err := loader.Open(filepath.Join(sharedDir(t), "models", name+".gguf"))
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
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape, f.Data(ti)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
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
		{"synth-qwen3moe-mini-Q4_K_M", nil, "blk.2.ffn_down_exps.weight", "tensor blk.2.ffn_down_exps.weight is missing"},
		{"synth-qwen3moe-mini-Q4_K_M", nil, "blk.0.ffn_gate_inp.weight", "tensor blk.0.ffn_gate_inp.weight is missing"},
		{"synth-qwen3moe-mini-Q4_K_M", map[string]*loader.Value{"qwen3moe.expert_count": u32(4)}, "", "ffn_gate_inp.weight has shape [64 8], want [64 4]"},
		{"synth-mixtral-mini-Q4_K_M", nil, "blk.3.ffn_up_exps.weight", "tensor blk.3.ffn_up_exps.weight is missing"},
		{"synth-mixtral-mini-Q4_K_M", map[string]*loader.Value{"llama.expert_used_count": u32(5)}, "", "expert_used_count 5 exceeds expert_count 4"},
		{"synth-qwen3-mini-Q4_K_M", nil, "blk.1.attn_k_norm.weight", "tensor blk.1.attn_k_norm.weight is missing"},
		{"synth-qwen3-mini-Q4_K_M", map[string]*loader.Value{"qwen3.expert_count": u32(8)}, "", "only as a dense model"},
		{"synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.attn_logit_softcapping": f32(-3)}, "", "soft-capping values must be positive"},
		{"synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.final_logit_softcapping": str("8")}, "", "final_logit_softcapping is not a finite number"},
		{"synth-gemma2-mini-Q4_K_M", nil, "blk.0.post_ffw_norm.weight", "tensor blk.0.post_ffw_norm.weight is missing"},
		{"synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.attention.sliding_window_pattern": str("x")}, "", "sliding_window_pattern is neither"},
		{"synth-gemma3-mini-Q4_K_M", map[string]*loader.Value{"gemma3.rope.freq_base_swa": f32(-1)}, "", "rope.freq_base_swa -1 is invalid"},
		{"synth-phi3-mini-Q4_K_M", map[string]*loader.Value{"phi3.attention.head_count_kv": u32(4)}, "", "attn_qkv.weight has shape [64 128], want [64 192]"},
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
	m, err := Load(path, LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	m.Close()
	if c.AttnSoftCap != 50 || c.FinalSoftCap != 30 || c.SlidingWindow != 4096 {
		t.Errorf("defaults: attention cap %v, final cap %v, window %d; want 50, 30, 4096", c.AttnSoftCap, c.FinalSoftCap, c.SlidingWindow)
	}
	m, err = Load(filepath.Join(sharedDir(t), "models", "synth-gemma2-mini-Q4_K_M.gguf"), LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	c = m.Config()
	m.Close()
	want := []bool{true, false, true, false}
	if c.AttnSoftCap != 3 || c.FinalSoftCap != 8 || c.SlidingWindow != 16 || c.QScale != 0.125 || c.EmbeddingScale != 8 ||
		len(c.SWALayers) != 4 || c.SWALayers[0] != want[0] || c.SWALayers[1] != want[1] || c.SWALayers[2] != want[2] || c.SWALayers[3] != want[3] {
		t.Errorf("gemma2 mini config %+v", c)
	}
	// A per-layer boolean pattern overrides the period.
	w := boolArray(true, true, false, false)
	m, err = Load(variant(t, "synth-gemma2-mini-Q4_K_M", map[string]*loader.Value{"gemma2.attention.sliding_window_pattern": w}, ""), LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	c = m.Config()
	m.Close()
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
	m, err := Load(filepath.Join(sharedDir(t), "models", "synth-gemma3-mini-Q4_K_M.gguf"), LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config()
	got := ""
	for _, l := range c.SWALayers {
		got += map[bool]string{true: "L", false: "G"}[l]
	}
	if got != "LLLLLG" || c.RopeBase != 1e6 || c.RopeBaseSWA != 1e4 || c.AttnSoftCap != 0 || c.FinalSoftCap != 0 || !c.QKNorm {
		t.Errorf("gemma3 layers %s, bases %v / %v, caps %v %v, qk norm %v", got, c.RopeBase, c.RopeBaseSWA, c.AttnSoftCap, c.FinalSoftCap, c.QKNorm)
	}
}
