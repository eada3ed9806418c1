package runtime

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/loader"
)

// fuzzFileModels are small shared models of different architectures whose
// metadata FuzzModelMetadata rewrites.
var fuzzFileModels = []string{"stories260K-Q8_0", "synth-gemma2-mini-Q4_K_M", "synth-qwen3moe-mini-Q4_K_M", "synth-phi3-mini-Q4_K_M"}

// fuzzKeySuffixes are the per-architecture keys the configuration reads,
// present in a file or not.
var fuzzKeySuffixes = []string{"embedding_length", "block_count", "attention.head_count", "attention.head_count_kv",
	"feed_forward_length", "context_length", "attention.key_length", "attention.value_length",
	"attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "rope.dimension_count", "rope.freq_base",
	"rope.scaling.type", "rope.scaling.factor", "rope.scale_linear", "rope.scaling.original_context_length",
	"rope.scaling.attn_factor", "rope.dimension_sections", "rope.freq_base_swa", "attention.sliding_window",
	"attention.sliding_window_pattern", "attn_logit_softcapping", "final_logit_softcapping", "expert_count",
	"expert_used_count", "expert_feed_forward_length", "expert_shared_feed_forward_length", "expert_weights_scale",
	"embedding_scale", "residual_scale", "logit_scale", "attention.scale", "full_attention_interval",
	"nextn_predict_layers", "vocab_size"}

// fuzzValue makes the value a mutation writes: kind picks the GGUF type.
func fuzzValue(kind uint8, iv int64, fv float64, sv string) (loader.Value, bool) {
	switch kind % 12 {
	case 0:
		return loader.Value{Type: loader.TypeUint32, V: uint32(iv)}, true
	case 1:
		return loader.Value{Type: loader.TypeInt32, V: int32(iv)}, true
	case 2:
		return loader.Value{Type: loader.TypeUint64, V: uint64(iv)}, true
	case 3:
		return loader.Value{Type: loader.TypeInt64, V: iv}, true
	case 4:
		return loader.Value{Type: loader.TypeFloat32, V: float32(fv)}, true
	case 5:
		return loader.Value{Type: loader.TypeFloat64, V: fv}, true
	case 6:
		return loader.Value{Type: loader.TypeString, V: sv}, true
	case 7:
		return loader.Value{Type: loader.TypeBool, V: iv&1 == 1}, true
	case 8:
		n := int(uint64(iv) % 64)
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(iv >> (i % 32))
		}
		return loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: loader.TypeInt32, Values: a}}, true
	case 9: // e.g. tokens or merges: the words of sv
		w := strings.Split(sv, " ")
		return loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: loader.TypeString, Values: w[:min(len(w), 256)]}}, true
	case 10: // e.g. scores
		a := make([]float32, int(uint64(iv)%300))
		for i := range a {
			a[i] = float32(fv) * float32(i)
		}
		return loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: loader.TypeFloat32, Values: a}}, true
	}
	return loader.Value{}, false // delete the key
}

// FuzzModelMetadata: a shared model whose metadata lies (any key the
// configuration or the tokenizer reads set to any value of any type, or
// removed, two at a time) loads with an error naming the problem, or loads
// and evaluates a few tokens and generates two: never a panic, a hang or a
// huge allocation. The KV cache is kept small (a context of 32).
//
//	go test ./runtime -run '^$' -fuzz '^FuzzModelMetadata$' -fuzztime 60s -parallel 1
func FuzzModelMetadata(f *testing.F) {
	dir := filepath.Join(sharedDir(f), "models")
	var files []*loader.File
	var keys [][]string
	for _, name := range fuzzFileModels {
		b, err := os.ReadFile(filepath.Join(dir, name+".gguf"))
		if err != nil {
			f.Fatal(err)
		}
		file, err := loader.Parse(b)
		if err != nil {
			f.Fatal(err)
		}
		var ks []string
		for _, kv := range file.KV {
			ks = append(ks, kv.Key)
		}
		for _, s := range fuzzKeySuffixes {
			if k := file.Architecture() + "." + s; !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
		files, keys = append(files, file), append(keys, ks)
	}
	for m := range files {
		for k := range keys[m] {
			f.Add(uint8(m), uint16(k), uint8(k%12), int64(0), 0.0, "", uint16(k+1), uint8(3), int64(-1))
			f.Add(uint8(m), uint16(k), uint8(9), int64(5), 1.5, "a b <s> </s> \xff  é", uint16(k+2), uint8(10), int64(7))
			f.Add(uint8(m), uint16(k), uint8(2), int64(1)<<40, math.Inf(1), "x", uint16(0), uint8(0), int64(1))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, k1 uint16, kind1 uint8, iv1 int64, fv1 float64, sv1 string, k2 uint16, kind2 uint8, iv2 int64) {
		m := int(which) % len(files)
		file, ks := files[m], keys[m]
		edits := map[string]loader.Value{}
		drop := map[string]bool{}
		for _, e := range []struct {
			k    uint16
			kind uint8
			iv   int64
		}{{k1, kind1, iv1}, {k2, kind2, iv2}} {
			key := ks[int(e.k)%len(ks)]
			if v, ok := fuzzValue(e.kind, e.iv, fv1, sv1); ok {
				edits[key], drop[key] = v, false
			} else {
				delete(edits, key)
				drop[key] = true
			}
		}
		w := loader.NewWriter()
		for _, kv := range file.KV {
			if v, ok := edits[kv.Key]; ok {
				w.Set(kv.Key, v)
				delete(edits, kv.Key)
			} else if !drop[kv.Key] {
				w.Set(kv.Key, kv.Value)
			}
		}
		for key, v := range edits {
			w.Set(key, v)
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if err := w.AddTensor(ti.Name, ti.Type, ti.Shape, file.Data(ti)); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			return // a value the writer refuses (e.g. a key of the wrong type for general.alignment)
		}
		pf, err := loader.Parse(buf.Bytes())
		if err != nil {
			return
		}
		start := time.Now()
		model, err := newModel(pf, LoadOptions{Threads: 1, ContextLength: 32})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		defer model.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = model.Generate(ctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: 2, NCtx: 32}, nil)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("load and generate took %v", d)
		}
	})
}
