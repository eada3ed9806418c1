package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

func TestPhysicalCores(t *testing.T) {
	if n := PhysicalCores(); n < 1 {
		t.Fatalf("PhysicalCores() = %d", n)
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ n, nw, align int }{{100, 3, 16}, {7, 4, 1}, {1, 8, 16}, {512, 2, 16}} {
		covered := 0
		prev := 0
		for w := 0; w < c.nw; w++ {
			r0, r1 := split(c.n, w, c.nw, c.align)
			if r0 != prev && r0 < r1 {
				t.Fatalf("%+v: worker %d starts at %d, want %d", c, w, r0, prev)
			}
			if r0 < r1 {
				covered += r1 - r0
				prev = r1
			}
		}
		if covered != c.n {
			t.Fatalf("%+v: covered %d rows", c, covered)
		}
	}
}

func TestSamplerGreedyTies(t *testing.T) {
	s := NewSampler(SamplerOptions{})
	if got := s.Sample([]float32{1, 3, 2, 3}); got != 1 {
		t.Fatalf("greedy picked %d, want 1 (lowest id among ties)", got)
	}
}

func TestSamplerSeed(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i))) * 2
	}
	run := func(seed int64) []int32 {
		s := NewSampler(SamplerOptions{Temperature: 1, Seed: seed})
		var ids []int32
		for i := 0; i < 50; i++ {
			ids = append(ids, s.Sample(logits))
		}
		return ids
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different draws")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same 50 draws")
	}
}

func TestSamplerFilters(t *testing.T) {
	logits := []float32{0, 5, 1, 4.9, -3}
	for _, o := range []SamplerOptions{
		{Temperature: 1, TopK: 1, Seed: 1},
		{Temperature: 1, TopP: 0.01, Seed: 1},
		{Temperature: 1, MinP: 0.99, Seed: 1},
	} {
		s := NewSampler(o)
		for i := 0; i < 20; i++ {
			if got := s.Sample(logits); got != 1 {
				t.Fatalf("%+v: sampled %d, want 1", o, got)
			}
		}
	}
	// top-k 2 never yields anything outside {1, 3}.
	s := NewSampler(SamplerOptions{Temperature: 5, TopK: 2, Seed: 7})
	seen := map[int32]bool{}
	for i := 0; i < 200; i++ {
		seen[s.Sample(logits)] = true
	}
	if len(seen) != 2 || !seen[1] || !seen[3] {
		t.Fatalf("top-k 2 sampled %v", seen)
	}
}

func TestSamplerPenalties(t *testing.T) {
	logits := []float32{2, 1.5, -1}
	s := NewSampler(SamplerOptions{RepeatPenalty: 2})
	s.Accept(0)
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("repeat penalty: picked %d, want 1", got)
	}
	if logits[0] != 2 {
		t.Fatal("Sample modified the logits")
	}
	s = NewSampler(SamplerOptions{FrequencyPenalty: 0.3})
	s.Accept(0)
	s.Accept(0)
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("frequency penalty: picked %d, want 1", got)
	}
	s = NewSampler(SamplerOptions{PresencePenalty: 0.4, RepeatLastN: 1})
	s.Accept(0)
	s.Accept(2) // only the last token counts
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("presence penalty over the last 1 token: picked %d, want 0", got)
	}
}

func TestStopMatcher(t *testing.T) {
	m := stopMatcher{stops: []string{"User:", "\n\n"}}
	var out strings.Builder
	for _, piece := range []string{"Hello", " wor", "ld U", "s"} {
		o, hit := m.add(piece)
		if hit {
			t.Fatalf("early hit at %q", piece)
		}
		out.WriteString(o)
	}
	if out.String() != "Hello world " || m.pending != "Us" {
		t.Fatalf("emitted %q, pending %q", out.String(), m.pending)
	}
	o, hit := m.add("er: hi")
	if !hit || o != "" {
		t.Fatalf("add = %q, %v; want hit with nothing emitted", o, hit)
	}
	m = stopMatcher{stops: []string{"User:"}}
	o, _ = m.add("a Use")
	if o != "a " || m.flush("") != "Use" {
		t.Fatalf("partial match handling: %q", o)
	}
}

func TestNumerics(t *testing.T) {
	// roundF16 agrees with the kernels' f32 -> f16 -> f32 conversion.
	for i := 0; i < 200000; i++ {
		x := float32(math.Sin(float64(i)*0.37)) * float32(math.Pow(2, float64(i%40-24)))
		want := kernels.F16ToF32(kernels.F32ToF16(x))
		if got := roundF16(x); got != want && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
			t.Fatalf("roundF16(%g) = %g, want %g", x, got, want)
		}
	}
	for _, x := range []float32{65504, 65519, 65520, 1e9, -1e9, 6e-8, 2.9e-8, 3e-8} {
		if got, want := roundF16(x), kernels.F16ToF32(kernels.F32ToF16(x)); got != want {
			t.Fatalf("roundF16(%g) = %g, want %g", x, got, want)
		}
	}
	// expf and vexpf stay within 2.5 ulp (vexpf: 1.95 documented) of the exact exp.
	for i := 0; i < 100000; i++ {
		x := float32(i)/100000*160 - 100
		e := math.Exp(float64(x))
		for name, f := range map[string]func(float32) float32{"expf": expf, "vexpf": vexpf} {
			got := float64(f(x))
			ulp := float64(math.Nextafter32(float32(e), float32(math.Inf(1))) - float32(e))
			if math.Abs(got-e) > 2.5*ulp {
				t.Fatalf("%s(%g) = %g, exact %g", name, x, got, e)
			}
		}
	}
}

// writeGGUF writes a small model file with the given tensors (F32 zeros).
func writeGGUF(t *testing.T, arch string, tensors map[string][]int64) string {
	t.Helper()
	w := loader.NewWriter()
	w.SetString("general.architecture", arch)
	w.SetUint32(arch+".embedding_length", 8)
	w.SetUint32(arch+".block_count", 1)
	w.SetUint32(arch+".attention.head_count", 2)
	w.SetUint32(arch+".feed_forward_length", 16)
	w.SetUint32(arch+".context_length", 32)
	w.SetFloat32(arch+".attention.layer_norm_rms_epsilon", 1e-5)
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		shape := tensors[n]
		cnt := int64(1)
		for _, d := range shape {
			cnt *= d
		}
		data := make([]byte, 4*cnt)
		binary.LittleEndian.PutUint32(data, math.Float32bits(1))
		if err := w.AddTensor(n, kernels.F32, shape, data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadErrors(t *testing.T) {
	full := map[string][]int64{
		"token_embd.weight": {8, 4}, "output_norm.weight": {8},
		"blk.0.attn_norm.weight": {8}, "blk.0.attn_q.weight": {8, 8}, "blk.0.attn_k.weight": {8, 8},
		"blk.0.attn_v.weight": {8, 8}, "blk.0.attn_output.weight": {8, 8}, "blk.0.ffn_norm.weight": {8},
		"blk.0.ffn_gate.weight": {8, 16}, "blk.0.ffn_up.weight": {8, 16}, "blk.0.ffn_down.weight": {16, 8},
	}
	_, err := Load(writeGGUF(t, "gptj", full), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `unknown architecture "gptj"`) {
		t.Fatalf("unknown arch: err = %v", err)
	}
	missing := maps(full)
	delete(missing, "blk.0.attn_v.weight")
	_, err = Load(writeGGUF(t, "llama", missing), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "blk.0.attn_v.weight is missing") {
		t.Fatalf("missing tensor: err = %v", err)
	}
	bad := maps(full)
	bad["blk.0.ffn_up.weight"] = []int64{8, 15}
	_, err = Load(writeGGUF(t, "llama", bad), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "blk.0.ffn_up.weight has shape") {
		t.Fatalf("bad shape: err = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.gguf"), LoadOptions{}); err == nil {
		t.Fatal("loading a missing file succeeded")
	}
}

func maps(m map[string][]int64) map[string][]int64 {
	out := map[string][]int64{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func loadStories(t *testing.T) *Model {
	t.Helper()
	return loadShared(t, "stories260K-F32", LoadOptions{})
}

func TestBadInput(t *testing.T) {
	m := loadStories(t)
	long := strings.Repeat("Once upon a time there was a dog. ", 10)
	_, err := m.Generate(context.Background(), GenerateOptions{Prompt: long, NCtx: 16}, nil)
	if err == nil || !strings.Contains(err.Error(), "more than the context length 16") {
		t.Fatalf("long prompt: err = %v", err)
	}
	s := newSession(t, m, 4)
	if _, err := s.Eval([]int32{1, 2, 3, 4, 5}, false); err == nil || !strings.Contains(err.Error(), "context full") {
		t.Fatalf("overfull eval: err = %v", err)
	}
	if _, err := s.Eval([]int32{1, 512}, false); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("bad token id: err = %v", err)
	}
	if s.Pos() != 0 {
		t.Fatalf("failed evals moved the position to %d", s.Pos())
	}
	if err := s.Truncate(1); err == nil {
		t.Fatal("truncating beyond the cache succeeded")
	}
	if _, err := s.Eval(nil, false); err == nil {
		t.Fatal("evaluating no tokens succeeded")
	}
}

func TestGenerateStopsAndReuse(t *testing.T) {
	m := loadStories(t)
	ctx := context.Background()
	// Reference greedy: ", there was a little girl named Lily. She loved to play"
	full, err := m.Generate(ctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if full.StopReason != "length" || len(full.Tokens) != 16 {
		t.Fatalf("stop %q after %d tokens", full.StopReason, len(full.Tokens))
	}
	i := strings.Index(full.Text, "Lily")
	if i < 0 {
		t.Fatalf("greedy text %q has no Lily", full.Text)
	}
	var streamed strings.Builder
	res, err := m.Generate(ctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: 16, Stop: []string{"no such text", "Lily"}},
		func(tk Token) error { streamed.WriteString(tk.Text); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "stop" || res.Text != full.Text[:i] || streamed.String() != res.Text {
		t.Fatalf("stop string: reason %q text %q streamed %q, want %q", res.StopReason, res.Text, streamed.String(), full.Text[:i])
	}
	if res.StopString != "Lily" || full.StopString != "" {
		t.Fatalf("stop string reported %q (want Lily), without a stop string %q", res.StopString, full.StopString)
	}

	// Cancellation is checked every token.
	cctx, cancel := context.WithCancel(ctx)
	n := 0
	res, err = m.Generate(cctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: 16}, func(Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || res.StopReason != "cancel" || len(res.Tokens) != 3 {
		t.Fatalf("cancel: err %v reason %q tokens %d", err, res.StopReason, len(res.Tokens))
	}

	// A full context ends generation with "length".
	res, err = m.Generate(ctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: -1, NCtx: 8}, nil)
	if err != nil || res.StopReason != "length" || len(res.Tokens) != 8-len(res.PromptTokens)+1 {
		t.Fatalf("context full: err %v reason %q tokens %d", err, res.StopReason, len(res.Tokens))
	}
	if !slices.Equal(res.Tokens, full.Tokens[:len(res.Tokens)]) {
		t.Fatalf("context-limited run diverged: %v vs %v", res.Tokens, full.Tokens)
	}

	// A session reuses the cached prefix and gives the same tokens.
	s := newSession(t, m, 64)
	if _, err := s.Generate(ctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: 4}, nil); err != nil {
		t.Fatal(err)
	}
	res, err = s.Generate(ctx, GenerateOptions{Prompt: "Once upon a time", MaxTokens: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedTokens != len(res.PromptTokens)-1 || !slices.Equal(res.Tokens, full.Tokens) {
		t.Fatalf("reuse: cached %d, tokens %v want %v", res.CachedTokens, res.Tokens, full.Tokens)
	}
}

func TestBatchMatchesTokenByToken(t *testing.T) {
	m := loadStories(t)
	ids := []int32{1, 403, 407, 261, 378, 432, 383, 286, 261, 376}
	s := newSession(t, m, 0)
	all := evalAll(t, s, ids)
	s.Reset()
	nv := m.Info().NVocab
	for i, id := range ids {
		row, err := s.Eval([]int32{id}, false)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range row {
			if d := math.Abs(float64(v - all[i*nv+j])); d > 5e-3 { // F32 batch and vector products sum in different orders
				t.Fatalf("pos %d id %d: batch %g, token by token %g", i, j, all[i*nv+j], v)
			}
		}
	}
	// Truncate and re-evaluate gives the same last row.
	if err := s.Truncate(5); err != nil {
		t.Fatal(err)
	}
	row, err := s.Eval(ids[5:], false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(row, all[(len(ids)-1)*nv:]) && math.Abs(float64(row[0]-all[(len(ids)-1)*nv])) > 1e-3 {
		t.Fatal("re-evaluation after Truncate differs")
	}
}

// glibc 2.36 (x86-64, FMA) sinf/cosf results for angles where they differ
// from the correctly rounded value: {x, sinf(x), cosf(x)} as float32 bits.
var glibcSinCos = [][3]uint32{
	{0x3f1e5af8, 0x3f1472b4, 0x3f509086}, {0x3e328278, 0x3e319b5d, 0x3f7c1eb7},
	{0x3fa5f4d3, 0x3f766e9b, 0x3e8aab25}, {0x3eb28278, 0x3eaeea3f, 0x3f7098f9},
	{0x3f47ae17, 0x3f340a20, 0x3f35fe6c}, {0x3f08c2ed, 0x3f025933, 0x3f5c5477},
	{0x3e36188b, 0x3e35233e, 0x3f7bf683}, {0x41a22dd8, 0x3f7d33df, 0x3e16f76f},
	{0x3f9d70a4, 0x3f7146f2, 0x3eab2135}, {0x42a0d462, 0xbf743f16, 0x3e995bb0},
	{0x40ad0a35, 0xbf449aad, 0x3f23f5b0}, {0x4199999a, 0x3eafc712, 0x3f7070ba},
	{0x3f245656, 0x3f1947d4, 0x3f4d0a07}, {0x3e00696a, 0x3e001353, 0x3f7dfd60},
	{0x3ed99ac2, 0x3ed31cc4, 0x3f693998}, {0x4025c291, 0x3f0627bf, 0xbf5a086f},
	{0xbeb39cfa, 0xbeaff3a7, 0x3f706893}, {0xbf31440e, 0xbf236f8b, 0x3f450a3f},
	{0xce314c46, 0xbf557701, 0x3f0d4f93}, {0xc783df01, 0x3f6452a5, 0x3ee78ea5},
	{0xbdc47f25, 0xbdc43201, 0x3f7ed295},
}

func TestSinCosfMatchesGlibc(t *testing.T) {
	for _, e := range glibcSinCos {
		x := math.Float32frombits(e[0])
		s, c := sincosf(x)
		if math.Float32bits(s) != e[1] || math.Float32bits(c) != e[2] {
			t.Errorf("sincosf(%g) = %g, %g; glibc %g, %g", x, s, c, math.Float32frombits(e[1]), math.Float32frombits(e[2]))
		}
	}
}

func TestConcurrentGenerate(t *testing.T) {
	m := loadStories(t)
	ref, err := m.Generate(context.Background(), GenerateOptions{Prompt: "Lily wanted to", MaxTokens: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			res, err := m.Generate(context.Background(), GenerateOptions{Prompt: "Lily wanted to", MaxTokens: 12}, nil)
			if err == nil && !slices.Equal(res.Tokens, ref.Tokens) {
				err = fmt.Errorf("concurrent run gave %v, want %v", res.Tokens, ref.Tokens)
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestHalfConversions(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		want := kernels.F16ToF32(uint16(h))
		got := halfTab[h]
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("halfTab[%#04x] = %g, want %g", h, got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		x := float32(math.Sin(float64(i)*0.37)) * float32(math.Pow(2, float64(i%44-26)))
		if got, want := toHalf(x), kernels.F32ToF16(x); got != want {
			t.Fatalf("toHalf(%g) = %#04x, want %#04x", x, got, want)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65519, 65520, -1e9, float32(math.Inf(1)), 5.96e-8, 2.9e-8} {
		if got, want := toHalf(x), kernels.F32ToF16(x); got != want {
			t.Fatalf("toHalf(%g) = %#04x, want %#04x", x, got, want)
		}
	}
}

// A session larger than the machine's memory (or than can be counted) is
// an error, not the fatal out-of-memory of a plain make.
func TestSessionKVSizeChecked(t *testing.T) {
	m := loadStories(t)
	for _, n := range []int{1 << 31, 1<<62 + 5} {
		if _, err := m.NewSession(n); err == nil || !strings.Contains(err.Error(), "KV cache") {
			t.Errorf("NewSession(%d): err = %v", n, err)
		}
	}
	c := &Config{NLayer: 2, NHeadKV: 1, HeadDim: 4}
	if err := checkKVSize(c, 1000, 2*2*4, 1<<20); err != nil {
		t.Errorf("32000 bytes in 1 MiB: %v", err)
	}
	if err := checkKVSize(c, 1<<20, 2*2*4, 1<<20); err == nil || !strings.Contains(err.Error(), "more than the machine's 1 MiB") {
		t.Errorf("32 MiB in 1 MiB: %v", err)
	}
}

// errAfter is a context whose Err turns Canceled after n calls.
type errAfter struct {
	context.Context
	n int
}

func (c *errAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A prompt stops being evaluated between chunks when the context ends
// (the issue: the server's work went on long after the client left).
func TestPromptEvalCancels(t *testing.T) {
	m := loadStories(t)
	s := newSession(t, m, 2048)
	ids := make([]int32, 1500)
	for i := range ids {
		ids[i] = int32(100 + i%50)
	}
	// Err calls: before the prompt, then one per chunk of 512.
	res, err := s.Generate(&errAfter{Context: context.Background(), n: 2}, GenerateOptions{Tokens: ids, MaxTokens: 4}, nil)
	if err != nil || res.StopReason != "cancel" || s.Pos() != 512 || len(res.Tokens) != 0 {
		t.Fatalf("err %v, stop %q, %d positions evaluated, %d tokens: want cancel after one chunk of 512", err, res.StopReason, s.Pos(), len(res.Tokens))
	}
}
