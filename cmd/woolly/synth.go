package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
)

func init() {
	register("synth", "write a random-weight model with a real model's shapes (for benchmarks)", runSynth)
}

// synthPreset is the shape of a real model.
type synthPreset struct {
	name     string
	arch     string
	dim      int // embedding length
	layers   int
	heads    int
	kvHeads  int
	ffn      int // feed-forward length
	vocab    int
	ctx      int // context_length written to the file
	tied     bool
	ropeBase float32
	eps      float32
	granite  bool // granite scales

	headDim    int  // attention head size (0: dim / heads)
	qkNorm     bool // per-head q/k norms (qwen3, gemma3)
	postNorms  bool // gemma's post-attention and post-FFN norms
	fused      bool // phi3: attn_qkv and a gate+up ffn_up
	experts    int  // mixture of experts: expert count (0: dense)
	expertsUse int  // experts used per token
	expertFF   int  // rows of each expert's gate/up
	window     int  // sliding window (gemma3)
	ropeSWA    float32
}

var synthPresets = []synthPreset{
	{name: "tinyllama-1.1b", arch: "llama", dim: 2048, layers: 22, heads: 32, kvHeads: 4, ffn: 5632, vocab: 32000, ctx: 2048, ropeBase: 10000, eps: 1e-5},
	{name: "llama-7b", arch: "llama", dim: 4096, layers: 32, heads: 32, kvHeads: 32, ffn: 11008, vocab: 32000, ctx: 4096, ropeBase: 10000, eps: 1e-5},
	// Granite-3.3-8B: tied embeddings, granite scales (embedding 12, residual
	// 0.22, attention 1/128, logits 16). Its real context is 128K; the file
	// says 4096 so a default session does not allocate a 40 GB KV cache.
	{name: "granite-8b", arch: "granite", dim: 4096, layers: 40, heads: 32, kvHeads: 8, ffn: 12800, vocab: 49159, ctx: 4096, tied: true, ropeBase: 10000000, eps: 1e-5, granite: true},
	// The shared synthetic minis' shape (../shared/ref/README.md §1a).
	{name: "mini", arch: "llama", dim: 256, layers: 4, heads: 8, kvHeads: 2, ffn: 768, vocab: 32000, ctx: 512, ropeBase: 10000, eps: 1e-5},
	// Qwen3-0.6B: head size 128 (q width 2048 > n_embd), q/k norms, tied.
	{name: "qwen3-0.6b", arch: "qwen3", dim: 1024, layers: 28, heads: 16, kvHeads: 8, headDim: 128, ffn: 3072, vocab: 151936, ctx: 40960, tied: true, ropeBase: 1000000, eps: 1e-6, qkNorm: true},
	// Gemma-3-1B: 5 local (window 512, RoPE base 10^4) then 1 global layer (10^6), GeGLU, post-norms.
	{name: "gemma3-1b", arch: "gemma3", dim: 1152, layers: 26, heads: 4, kvHeads: 1, headDim: 256, ffn: 6912, vocab: 262144, ctx: 32768, tied: true, ropeBase: 1000000, eps: 1e-6, qkNorm: true, postNorms: true, window: 512, ropeSWA: 10000},
	// Phi-3-mini-4k: fused attn_qkv and gate+up, NeoX RoPE.
	{name: "phi3-mini", arch: "phi3", dim: 3072, layers: 32, heads: 32, kvHeads: 32, ffn: 8192, vocab: 32064, ctx: 4096, ropeBase: 10000, eps: 1e-5, fused: true},
	// A Qwen3-MoE with 7B weights of which ~1B are read per token: 64
	// experts of which 8 are used, each 1024 wide.
	{name: "qwen3moe-7b-a1b", arch: "qwen3moe", dim: 2048, layers: 16, heads: 16, kvHeads: 4, headDim: 128, ffn: 6144, vocab: 151936, ctx: 40960, ropeBase: 1000000, eps: 1e-6, qkNorm: true, experts: 64, expertsUse: 8, expertFF: 1024},
}

// hd is the attention head size.
func (p synthPreset) hd() int {
	if p.headDim > 0 {
		return p.headDim
	}
	return p.dim / p.heads
}

// synthTensor is one tensor of a synthesized model.
type synthTensor struct {
	name  string
	shape []int64 // ne order
	norm  bool    // 1 + 0.1·N(0,1) instead of N(0,1)/sqrt(fan_in)
}

// tensors lists the model's tensors in the order llama.cpp's converters
// write them.
func (p synthPreset) tensors() []synthTensor {
	hd := int64(p.hd())
	d, q, kv, f, v := int64(p.dim), hd*int64(p.heads), hd*int64(p.kvHeads), int64(p.ffn), int64(p.vocab)
	ts := []synthTensor{{"token_embd.weight", []int64{d, v}, false}}
	for l := 0; l < p.layers; l++ {
		b := fmt.Sprintf("blk.%d.", l)
		ts = append(ts, synthTensor{b + "attn_norm.weight", []int64{d}, true})
		if p.fused {
			ts = append(ts, synthTensor{b + "attn_qkv.weight", []int64{d, q + 2*kv}, false})
		} else {
			ts = append(ts,
				synthTensor{b + "attn_q.weight", []int64{d, q}, false},
				synthTensor{b + "attn_k.weight", []int64{d, kv}, false},
				synthTensor{b + "attn_v.weight", []int64{d, kv}, false})
		}
		if p.qkNorm {
			ts = append(ts,
				synthTensor{b + "attn_q_norm.weight", []int64{hd}, true},
				synthTensor{b + "attn_k_norm.weight", []int64{hd}, true})
		}
		ts = append(ts, synthTensor{b + "attn_output.weight", []int64{q, d}, false})
		if p.postNorms {
			ts = append(ts, synthTensor{b + "post_attention_norm.weight", []int64{d}, true})
		}
		ts = append(ts, synthTensor{b + "ffn_norm.weight", []int64{d}, true})
		switch {
		case p.experts > 0:
			ne, fe := int64(p.experts), int64(p.expertFF)
			ts = append(ts,
				synthTensor{b + "ffn_gate_inp.weight", []int64{d, ne}, false},
				synthTensor{b + "ffn_gate_exps.weight", []int64{d, fe, ne}, false},
				synthTensor{b + "ffn_up_exps.weight", []int64{d, fe, ne}, false},
				synthTensor{b + "ffn_down_exps.weight", []int64{fe, d, ne}, false})
		case p.fused:
			ts = append(ts,
				synthTensor{b + "ffn_up.weight", []int64{d, 2 * f}, false},
				synthTensor{b + "ffn_down.weight", []int64{f, d}, false})
		default:
			ts = append(ts,
				synthTensor{b + "ffn_gate.weight", []int64{d, f}, false},
				synthTensor{b + "ffn_up.weight", []int64{d, f}, false},
				synthTensor{b + "ffn_down.weight", []int64{f, d}, false})
		}
		if p.postNorms {
			ts = append(ts, synthTensor{b + "post_ffw_norm.weight", []int64{d}, true})
		}
	}
	ts = append(ts, synthTensor{"output_norm.weight", []int64{d}, true})
	if !p.tied {
		ts = append(ts, synthTensor{"output.weight", []int64{d, v}, false})
	}
	return ts
}

func synthPresetNames() string {
	var names []string
	for _, p := range synthPresets {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("synth", stderr)
	presetName := fs.String("preset", "", "model shape: "+synthPresetNames())
	typeName := fs.String("type", "q4_k_m", "file type: q4_k_m, q5_k_m, q6_k, q8_0, q4_0, f16, ...")
	vocabPath := fs.String("vocab", "", "copy the tokenizer.* keys from this GGUF (default: a built-in byte-level vocabulary)")
	seed := fs.Uint64("seed", 1, "random seed")
	outPath := fs.String("o", "", "output GGUF file (required)")
	threads := fs.Int("t", 0, "threads (0 = all CPUs)")
	noBar := fs.Bool("no-progress", false, "no progress output (default: a bar on a terminal, a line every 5 s otherwise)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: woolly synth --preset "+strings.ReplaceAll(synthPresetNames(), ", ", "|")+" [--type T] [--vocab VOCAB.gguf] [--seed N] -o FILE")
		fmt.Fprintln(fs.Output(), "Writes a model with random weights (std 1/sqrt(fan_in)) and a real model's shapes; same flags, same bytes.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *outPath == "" || *presetName == "" {
		fs.Usage()
		return errUsage
	}
	var p synthPreset
	var names []string
	for _, q := range synthPresets {
		names = append(names, q.name)
		if strings.EqualFold(q.name, *presetName) {
			p = q
		}
	}
	if p.name == "" {
		return fmt.Errorf("unknown preset %q (want one of %s)", *presetName, strings.Join(names, ", "))
	}
	ft, err := quant.ParseFileType(*typeName)
	if err != nil {
		return err
	}
	if *vocabPath != "" {
		if err := checkNotSameFile(*vocabPath, *outPath); err != nil {
			return err
		}
	}
	if *threads <= 0 {
		*threads = runtime.NumCPU()
	}
	start := time.Now()

	w := loader.NewWriter()
	nVocab, err := synthMetadata(w, &p, ft, *vocabPath, stderr)
	if err != nil {
		return err
	}
	p.vocab = nVocab

	ts := p.tensors()
	descs := make([]quant.TensorDesc, len(ts))
	for i, t := range ts {
		descs[i] = quant.TensorDesc{Name: t.name, Type: kernels.F32, Shape: t.shape}
	}
	plan, err := quant.Plan(ft, descs, quant.Model{Arch: p.arch, NLayer: p.layers, NHead: p.heads, NHeadKV: p.kvHeads})
	if err != nil {
		return err
	}
	var total, nParams int64
	counts := map[kernels.Type]int{}
	bar := newProgress(stderr, "synthesizing "+p.name, *noBar)
	var done int64
	advance := func(n int) {
		done += int64(n)
		bar.update(done, total)
	}
	for i, t := range ts {
		ty := plan[i].Type
		counts[ty]++
		rows := int64(1)
		for _, d := range t.shape[1:] {
			rows *= d
		}
		rb, err := ty.RowBytes(t.shape[0])
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		total += rb * rows
		nParams += t.shape[0] * rows
		tseed := splitmix64(*seed ^ splitmix64(uint64(i)+0x5eed))
		err = w.AddTensorFunc(t.name, ty, t.shape, func(out io.Writer) error {
			return synthTensorData(out, t, ty, tseed, *threads, advance)
		})
		if err != nil {
			return err
		}
	}
	// WriteFile writes a temporary file beside the output and renames it at
	// the end: a crash leaves no half file under the final name.
	err = w.WriteFile(*outPath)
	bar.finish()
	if err != nil {
		return err
	}

	var types []kernels.Type
	for ty := range counts {
		types = append(types, ty)
	}
	sort.Slice(types, func(a, b int) bool { return types[a] < types[b] })
	var parts []string
	for _, ty := range types {
		parts = append(parts, fmt.Sprintf("%v x%d", ty, counts[ty]))
	}
	st, err := os.Stat(*outPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s, %.3fB parameters, %d tensors (%s), %.1f MiB, seed %d, %.1fs\n",
		*outPath, p.name, ft, float64(nParams)/1e9, len(ts), strings.Join(parts, ", "),
		float64(st.Size())/(1<<20), *seed, time.Since(start).Seconds())
	return nil
}

// synthMetadata writes the model's metadata and tokenizer and returns the
// vocabulary size.
func synthMetadata(w *loader.Writer, p *synthPreset, ft quant.FileType, vocabPath string, stderr io.Writer) (int, error) {
	a := p.arch
	w.SetString("general.architecture", a)
	w.SetString("general.name", "synth-"+p.name)
	w.SetUint32(a+".context_length", uint32(p.ctx))
	w.SetUint32(a+".embedding_length", uint32(p.dim))
	w.SetUint32(a+".block_count", uint32(p.layers))
	w.SetUint32(a+".feed_forward_length", uint32(p.ffn))
	w.SetUint32(a+".attention.head_count", uint32(p.heads))
	w.SetUint32(a+".attention.head_count_kv", uint32(p.kvHeads))
	hd := uint32(p.hd())
	w.SetUint32(a+".attention.key_length", hd)
	w.SetUint32(a+".attention.value_length", hd)
	w.SetUint32(a+".rope.dimension_count", hd)
	w.SetFloat32(a+".rope.freq_base", p.ropeBase)
	w.SetFloat32(a+".attention.layer_norm_rms_epsilon", p.eps)
	if p.granite {
		w.SetFloat32(a+".embedding_scale", 12)
		w.SetFloat32(a+".residual_scale", 0.22)
		w.SetFloat32(a+".attention.scale", 1/float32(hd))
		w.SetFloat32(a+".logit_scale", 16)
	}
	if p.experts > 0 {
		w.SetUint32(a+".expert_count", uint32(p.experts))
		w.SetUint32(a+".expert_used_count", uint32(p.expertsUse))
		w.SetUint32(a+".expert_feed_forward_length", uint32(p.expertFF))
	}
	if p.window > 0 {
		w.SetUint32(a+".attention.sliding_window", uint32(p.window))
		w.SetFloat32(a+".rope.freq_base_swa", p.ropeSWA)
	}
	w.SetUint32("general.file_type", uint32(ft))
	if ft.DefaultType().BlockElems() > 1 {
		w.SetUint32("general.quantization_version", 2)
	}
	n := p.vocab
	if vocabPath != "" {
		vf, err := loader.Open(vocabPath)
		if err != nil {
			return 0, err
		}
		defer vf.Close()
		toks, ok := vf.Strings("tokenizer.ggml.tokens")
		if !ok {
			return 0, fmt.Errorf("%s has no tokenizer.ggml.tokens", vocabPath)
		}
		for _, kv := range vf.KV {
			if strings.HasPrefix(kv.Key, "tokenizer.") {
				w.Set(kv.Key, kv.Value)
			}
		}
		if len(toks) != n {
			fmt.Fprintf(stderr, "synth: vocabulary %s has %d tokens; the model gets %d rows instead of the preset's %d\n", vocabPath, len(toks), len(toks), n)
		}
		n = len(toks)
	} else {
		toks, scores, types := byteVocab(n)
		w.SetString("tokenizer.ggml.model", "llama")
		w.SetStrings("tokenizer.ggml.tokens", toks)
		w.SetFloat32s("tokenizer.ggml.scores", scores)
		w.SetInt32s("tokenizer.ggml.token_type", types)
		w.SetUint32("tokenizer.ggml.bos_token_id", 1)
		w.SetUint32("tokenizer.ggml.eos_token_id", 2)
		w.SetUint32("tokenizer.ggml.unknown_token_id", 0)
		w.SetBool("tokenizer.ggml.add_bos_token", true)
		w.SetBool("tokenizer.ggml.add_eos_token", false)
	}
	w.SetUint32(a+".vocab_size", uint32(n))
	return n, nil
}

// byteVocab builds an SPM-style ("llama") vocabulary of n tokens: <unk>,
// <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then filler pieces
// ("▁a", "a", "▁ab", ...) with descending scores so the tokenizer merges
// common letter pairs first.
func byteVocab(n int) ([]string, []float32, []int32) {
	const (
		normal  = 1
		unknown = 2
		control = 3
		byteTok = 6
	)
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{unknown, control, control}
	for b := 0; b < 256; b++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, byteTok)
	}
	seen := map[string]bool{}
	add := func(s string) bool {
		if len(toks) >= n || seen[s] {
			return len(toks) < n
		}
		seen[s] = true
		toks = append(toks, s)
		types = append(types, normal)
		return len(toks) < n
	}
	letters := "etaoinshrdlcumwfgypbvkjxqz"
	all := letters + strings.ToUpper(letters) + "0123456789.,!?'\"-:;()"
	add("▁")
	for _, c := range all {
		add("▁" + string(c))
		add(string(c))
	}
	// Longer pieces: lower-case strings of growing length, in a fixed order.
	for length := 2; len(toks) < n; length++ {
		idx := make([]int, length)
		for {
			var sb strings.Builder
			for _, i := range idx {
				sb.WriteByte(letters[i])
			}
			if !add("▁"+sb.String()) || !add(sb.String()) {
				break
			}
			k := length - 1
			for k >= 0 {
				idx[k]++
				if idx[k] < len(letters) {
					break
				}
				idx[k] = 0
				k--
			}
			if k < 0 {
				break
			}
		}
	}
	toks, types = toks[:n], types[:n]
	scores := make([]float32, n)
	for i := range scores {
		if types[i] == normal {
			scores[i] = -float32(i)
		}
	}
	return toks, scores, types
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// synthTensorData generates tensor t row by row (each row from its own
// seed, so the bytes do not depend on the thread count), converts it to ty
// and streams it to out in chunks.
func synthTensorData(out io.Writer, t synthTensor, ty kernels.Type, seed uint64, threads int, advance func(int)) error {
	rowLen := int(t.shape[0])
	nrows := 1
	for _, d := range t.shape[1:] {
		nrows *= int(d)
	}
	rb64, err := ty.RowBytes(int64(rowLen))
	if err != nil {
		return err
	}
	rb := int(rb64)
	chunkRows := max(1, (8<<20)/rowLen)
	buf := make([]byte, min(nrows, chunkRows)*rb)
	std := float32(1 / math.Sqrt(float64(rowLen)))
	for r0 := 0; r0 < nrows; r0 += chunkRows {
		n := min(chunkRows, nrows-r0)
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, threads)
		for g := 0; g < min(threads, n); g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				row := make([]float32, rowLen)
				src := rand.NewPCG(0, 0)
				rng := rand.New(src)
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					r := r0 + i
					src.Seed(seed, uint64(r))
					if t.norm {
						for j := range row {
							row[j] = 1 + 0.1*float32(rng.NormFloat64())
						}
					} else {
						for j := range row {
							row[j] = std * float32(rng.NormFloat64())
						}
					}
					if err := quant.QuantizeRow(ty, row, buf[i*rb:(i+1)*rb]); err != nil {
						errs[g] = err
						return
					}
				}
			}(g)
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		if _, err := out.Write(buf[:n*rb]); err != nil {
			return err
		}
		advance(n * rb)
	}
	return nil
}
