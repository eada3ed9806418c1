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

	"github.com/stretchr/testify/require"

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

// Argmax: the first of the largest, whatever the position, -Inf and NaN
// rows included (a NaN is never larger), 0 for an empty row.
func TestArgmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		l    []float32
		want int32
	}{
		{nil, 0},
		{[]float32{5}, 0},
		{[]float32{1, 3, 2, 3}, 1},
		{[]float32{-3, -1, -2, -1}, 1},
		{[]float32{1, 2, 3, 9}, 3},
		{[]float32{-inf, -inf, -5}, 2},
		{[]float32{2, nan, 7, nan, 7}, 2},
		{[]float32{nan, 1, 2}, 0},
		{[]float32{0, inf, inf}, 1},
	} {
		if got := Argmax(c.l); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.l, got, c.want)
		}
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

// EvalInto gives Eval's last row, bit for bit, into the caller's buffer,
// allocating less than Eval (no new vocabulary-sized slice), and refuses a
// buffer of the wrong size before evaluating anything.
func TestEvalInto(t *testing.T) {
	m := loadShared(t, "stories260K-F32", LoadOptions{Threads: 1}) // one thread: the same allocations every run
	nv := m.Config().NVocab
	a, b := newSession(t, m, 32), newSession(t, m, 32)
	buf := make([]float32, nv)
	for _, toks := range [][]int32{{1, 400, 30, 7}, {99}, {5}, {17, 23}} {
		want, err := a.Eval(toks, false)
		require.NoError(t, err)
		require.NoError(t, b.EvalInto(toks, buf))
		for j := range want {
			if math.Float32bits(want[j]) != math.Float32bits(buf[j]) {
				t.Fatalf("%v: logit %d is %g from Eval, %g from EvalInto", toks, j, want[j], buf[j])
			}
		}
	}
	for _, n := range []int{0, nv - 1, nv + 1} {
		err := b.EvalInto([]int32{1}, make([]float32, n))
		require.ErrorContains(t, err, fmt.Sprintf("logits buffer of %d values: the vocabulary has %d", n, nv))
	}
	require.Equal(t, 8, b.Pos(), "a refused EvalInto moved the session")
	require.ErrorContains(t, b.EvalInto([]int32{int32(nv)}, buf), "out of range")

	one := []int32{3}
	viaEval := testing.AllocsPerRun(5, func() {
		require.NoError(t, a.Truncate(8))
		_, err := a.Eval(one, false)
		require.NoError(t, err)
	})
	viaInto := testing.AllocsPerRun(5, func() {
		require.NoError(t, b.Truncate(8))
		require.NoError(t, b.EvalInto(one, buf))
	})
	require.Less(t, viaInto, viaEval, "EvalInto allocates %v times a token, Eval %v", viaInto, viaEval)
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

// A control token generated mid-answer prints nothing (llama.cpp renders
// pieces without special tokens unless asked), while its id stays in the
// result. The stories260K model's greedy continuation is run twice: as
// shipped, and with its third generated token re-typed as a control token.
func TestGeneratedControlTokenHasNoText(t *testing.T) {
	const name = "stories260K-Q8_0"
	shipped := filepath.Join(sharedDir(t), "models", name+".gguf")
	gen := func(path string) *GenerateResult {
		m := loadPath(t, path, LoadOptions{Threads: 1})
		var streamed strings.Builder
		res, err := m.Generate(context.Background(), GenerateOptions{Prompt: "Once upon a time", MaxTokens: 6},
			func(tk Token) error { streamed.WriteString(tk.Text); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if streamed.String() != res.Text {
			t.Fatalf("streamed %q but the result says %q", streamed.String(), res.Text)
		}
		return res
	}
	plain := gen(shipped)
	if len(plain.Tokens) < 4 {
		t.Fatalf("only %d tokens generated", len(plain.Tokens))
	}
	ctrl := plain.Tokens[2]

	m, err := Load(shipped, LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	tok := m.Tokenizer()
	concat := func(ids []int32) string {
		var b strings.Builder
		for _, id := range ids {
			b.Write(tok.Piece(id))
		}
		return b.String()
	}
	if concat(plain.Tokens) != plain.Text {
		t.Fatalf("plain answer %q is not its pieces %q", plain.Text, concat(plain.Tokens))
	}
	want := concat(plain.Tokens[:2]) + concat(plain.Tokens[3:])
	m.Close()
	f, err := loader.Open(shipped)
	if err != nil {
		t.Fatal(err)
	}
	types, ok := f.Int32s("tokenizer.ggml.token_type")
	f.Close()
	if !ok {
		t.Fatal("no tokenizer.ggml.token_type")
	}
	types = slices.Clone(types)
	types[ctrl] = 3 // CONTROL
	path := variant(t, name, map[string]*loader.Value{"tokenizer.ggml.token_type": {Type: loader.TypeArray,
		V: loader.Array{Elem: loader.TypeInt32, Values: types}}}, "")
	got := gen(path)
	if !slices.Equal(got.Tokens, plain.Tokens) {
		t.Fatalf("ids changed: %v vs %v", got.Tokens, plain.Tokens)
	}
	if got.Text != want {
		t.Fatalf("answer with token %d as control = %q, want %q (the plain answer %q without that piece)", ctrl, got.Text, want, plain.Text)
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
		if err := w.AddTensor(n, kernels.F32, []int64{int64(len(vals))}, f32Bytes(vals)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), file)
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// f32Bytes is v as little-endian float32s (a GGUF F32 tensor's data).
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
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
