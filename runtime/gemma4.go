package runtime

// Gemma 4 (general.architecture "gemma4"), dense, as llama.cpp's graph
// computes it at the reference commit:
//
//	x = embed(tok) * sqrt(n_embd)
//	[per-layer inputs, when embedding_length_per_layer_input > 0:
//	    P = (rmsnorm_chunks(Wplmp x / sqrt(n_embd)) * pl_proj_norm
//	         + per_layer_token_embd[tok] * sqrt(n_pl)) / sqrt(2)
//	    P holds one n_pl-wide slice per layer]
//	for each layer (sliding-window "local" or global, each with its own
//	head count, head size, rotated dims and RoPE base):
//	    h = rmsnorm(x) * attn_norm
//	    q = rmsnorm_heads(Wq h) * q_norm; rope(q)
//	    if the layer has its own KV (the first n_layer - shared_kv_layers):
//	        k = rmsnorm_heads(Wk h) * k_norm; rope(k)
//	        v = rmsnorm_heads(Wv h) (no weight; Wv absent: v from Wk h)
//	    else it reads the cache of the last earlier layer of its kind
//	    a = Wo attention(q, K, V) (scale 1, window on local layers)
//	    x += rmsnorm(a) * post_attention_norm
//	    x += rmsnorm(Wdown(gelu(Wgate h') * Wup h')) * post_ffw_norm,  h' = rmsnorm(x) * ffn_norm
//	    [x += rmsnorm(Wproj(gelu(Winp_gate x) * P[layer])) * post_norm]
//	    [x *= layer_output_scale]
//	logits = cap * tanh((Wout rmsnorm(x) * output_norm) / cap)   (cap: final_logit_softcapping, default 30)
//
// Global layers rotate with rope_freqs (proportional RoPE frequency factors).
// The KV cache of every layer is NHeadKV*HeadDim wide (the largest layer);
// a layer uses the first n_head_kv*head_dim values of each position; shared
// layers alias their source layer's cache.

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unsafe"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// gemma4Params are the per-layer shapes of a gemma4 model.
type gemma4Params struct {
	NHead, NHeadKV, HeadDim, NRot, NFF []int // per layer
	NEmbdPL                            int   // embedding_length_per_layer_input (0: no per-layer inputs)
	KVFrom                             int   // layers [KVFrom, NLayer) reuse an earlier layer's KV cache
	NFFExp                             int   // expert_feed_forward_length (read; MoE layers are refused)
}

// gemma4Layer are a layer's tensors beyond Layer's.
type gemma4Layer struct {
	HasV      bool // attn_v present (else V comes from the K projection)
	InpGate   Mat  // inp_gate [NEmbdPL rows][NEmbd]
	Proj      Mat  // proj [NEmbd rows][NEmbdPL]
	PostNorm  []float32
	OutScale  float32 // layer_output_scale (0: none)
	HasScale  bool
	sharedSrc int // layer whose KV cache this one reads (itself when it has its own)

	// Mixture-of-experts layer (Layer.GateInp set): the router reads
	// rmsnorm(x) / sqrt(n_embd) * GateInpScale; PreNorm2 norms the experts'
	// input, PostNorm1 the dense MLP's output, PostNorm2 the experts'.
	GateInpScale, PreNorm2, PostNorm1, PostNorm2 []float32
}

// gemma4Weights are the model-wide per-layer-input tensors.
type gemma4Weights struct {
	TokPL     Mat // per_layer_token_embd [NEmbdPL*NLayer][n_vocab]
	ModelProj Mat // per_layer_model_proj [NEmbdPL*NLayer rows][NEmbd]
	ProjNorm  []float32
}

// gemma4Scratch is the forward scratch of a gemma4 model.
type gemma4Scratch struct {
	pl, proj   []float32 // [nBatch][NLayer*NEmbdPL]
	plg, plu   []float32 // [nBatch][NEmbdPL]
	cosG, sinG []float32 // global-layer RoPE tables [nBatch][NRot/2]
	cosL, sinL []float32 // local-layer RoPE tables
	moe        []float32 // experts' output [nBatch][NEmbd]
}

// kvSource is the layer whose KV cache layer il reads: il itself, or for
// gemma4's shared layers the last earlier layer of the same kind.
func (c *Config) kvSource(il int) int {
	g := c.G4
	if g == nil || il < g.KVFrom {
		return il
	}
	if c.SWALayers[il] {
		return g.KVFrom - 2
	}
	return g.KVFrom - 1
}

// gemma4Config reads a gemma4 file's hyperparameters with llama.cpp's
// defaults, naming the key of any that is missing or inconsistent.
func gemma4Config(f *loader.File) (*Config, error) {
	const arch = "gemma4"
	c := &Config{Arch: arch, RopeNeox: true}
	key := func(k string) string { return arch + "." + k }
	uintKey := func(k string, def int, required bool) (int, error) {
		return optionalKey(f, arch, key(k), def, required, func(k string) (int, error) {
			v, ok := f.Uint(k)
			if !ok || v > 1<<31 {
				return 0, fmt.Errorf("key %s is not a non-negative integer", k)
			}
			return int(v), nil
		})
	}
	floatKey := func(k string, def float32, required bool) (float32, error) {
		return optionalKey(f, arch, key(k), def, required, func(k string) (float32, error) { return finiteKey(f, k) })
	}
	// perLayer reads a key that is one integer for all layers or one per layer.
	perLayer := func(k string, def []int) ([]int, error) {
		out := make([]int, c.NLayer)
		if _, present := f.Get(key(k)); !present {
			if def == nil {
				return nil, fmt.Errorf("key %s is missing (required for %s)", key(k), arch)
			}
			copy(out, def)
			return out, nil
		}
		if v, ok := f.Uint(key(k)); ok {
			if v > 1<<31 {
				return nil, fmt.Errorf("key %s has invalid value %d", key(k), v)
			}
			for i := range out {
				out[i] = int(v)
			}
			return out, nil
		}
		arr, ok := f.Int32s(key(k))
		if !ok {
			return nil, fmt.Errorf("key %s is neither an integer nor an array of integers", key(k))
		}
		if len(arr) != c.NLayer {
			return nil, fmt.Errorf("key %s has %d entries for %d layers", key(k), len(arr), c.NLayer)
		}
		for i, v := range arr {
			if v < 0 {
				return nil, fmt.Errorf("key %s has a negative entry %d", key(k), v)
			}
			out[i] = int(v)
		}
		return out, nil
	}
	g := &gemma4Params{}
	c.G4 = g
	var err error
	if c.NEmbd, err = uintKey("embedding_length", 0, true); err != nil {
		return nil, err
	}
	if c.NLayer, err = uintKey("block_count", 0, true); err != nil {
		return nil, err
	}
	if c.NEmbd == 0 || c.NLayer == 0 || c.NLayer > 512 {
		return nil, fmt.Errorf("key %s.embedding_length %d or %s.block_count %d is invalid (block_count must be 1..512)", arch, c.NEmbd, arch, c.NLayer)
	}
	if c.NCtxTrain, err = uintKey("context_length", 0, true); err != nil {
		return nil, err
	}
	if g.NHead, err = perLayer("attention.head_count", nil); err != nil {
		return nil, err
	}
	if g.NHeadKV, err = perLayer("attention.head_count_kv", g.NHead); err != nil {
		return nil, err
	}
	if g.NFF, err = perLayer("feed_forward_length", nil); err != nil {
		return nil, err
	}
	for il := 0; il < c.NLayer; il++ {
		switch {
		case g.NHead[il] == 0:
			return nil, fmt.Errorf("key %s.attention.head_count is 0 for layer %d", arch, il)
		case g.NHeadKV[il] == 0 || g.NHead[il]%g.NHeadKV[il] != 0:
			return nil, fmt.Errorf("key %s.attention.head_count_kv %d is not a divisor of head_count %d (layer %d)", arch, g.NHeadKV[il], g.NHead[il], il)
		case g.NFF[il] == 0:
			return nil, fmt.Errorf("key %s.feed_forward_length is 0 for layer %d", arch, il)
		}
	}
	// Head sizes: key_length (default n_embd / head_count of layer 0) for
	// global layers, key_length_swa (required) for local ones; V the same.
	hdFull, err := uintKey("attention.key_length", c.NEmbd/g.NHead[0], false)
	if err != nil {
		return nil, err
	}
	vFull, err := uintKey("attention.value_length", c.NEmbd/g.NHead[0], false)
	if err != nil {
		return nil, err
	}
	if hdFull != vFull {
		return nil, fmt.Errorf("key %s.attention.value_length %d differs from key_length %d (gemma4 requires them equal)", arch, vFull, hdFull)
	}
	hdSWA, err := uintKey("attention.key_length_swa", 0, true)
	if err != nil {
		return nil, err
	}
	vSWA, err := uintKey("attention.value_length_swa", 0, true)
	if err != nil {
		return nil, err
	}
	if hdSWA != vSWA {
		return nil, fmt.Errorf("key %s.attention.value_length_swa %d differs from key_length_swa %d (gemma4 requires them equal)", arch, vSWA, hdSWA)
	}
	rotFull, err := uintKey("rope.dimension_count", hdFull, false)
	if err != nil {
		return nil, err
	}
	rotSWA, err := uintKey("rope.dimension_count_swa", rotFull, false)
	if err != nil {
		return nil, err
	}
	if hdFull == 0 || hdSWA == 0 || hdFull > 4096 || hdSWA > 4096 {
		return nil, fmt.Errorf("key %s.attention.key_length %d or key_length_swa %d is invalid", arch, hdFull, hdSWA)
	}

	// Sliding window: required window and pattern (one boolean per layer,
	// or one value for all layers).
	if c.SlidingWindow, err = uintKey("attention.sliding_window", 0, true); err != nil {
		return nil, err
	}
	pk := key("attention.sliding_window_pattern")
	pv, present := f.Get(pk)
	if !present {
		return nil, fmt.Errorf("key %s is missing (required for %s)", pk, arch)
	}
	c.SWALayers = make([]bool, c.NLayer)
	if arr, isArr := pv.V.(loader.Array); isArr {
		switch vals := arr.Values.(type) {
		case []bool:
			if len(vals) != c.NLayer {
				return nil, fmt.Errorf("key %s has %d entries for %d layers", pk, len(vals), c.NLayer)
			}
			copy(c.SWALayers, vals)
		default:
			ints, ok := f.Int32s(pk)
			if !ok || len(ints) != c.NLayer {
				return nil, fmt.Errorf("key %s must be an array of %d booleans", pk, c.NLayer)
			}
			for i, v := range ints {
				c.SWALayers[i] = v != 0
			}
		}
	} else {
		on, isBool := f.Bool(pk)
		if n, ok := f.Uint(pk); ok {
			on, isBool = n != 0, true
		}
		if !isBool {
			return nil, fmt.Errorf("key %s is neither a boolean array nor a scalar", pk)
		}
		for i := range c.SWALayers {
			c.SWALayers[i] = on
		}
	}
	if c.SlidingWindow == 0 {
		for _, s := range c.SWALayers {
			if s {
				return nil, fmt.Errorf("key %s.attention.sliding_window is 0 but sliding_window_pattern marks local layers", arch)
			}
		}
	}

	g.HeadDim, g.NRot = make([]int, c.NLayer), make([]int, c.NLayer)
	for il := range g.HeadDim {
		g.HeadDim[il], g.NRot[il] = hdFull, rotFull
		if c.SWALayers[il] {
			g.HeadDim[il], g.NRot[il] = hdSWA, rotSWA
		}
		if g.NRot[il] > g.HeadDim[il] || g.NRot[il]%2 != 0 {
			return nil, fmt.Errorf("key %s.rope.dimension_count%s %d is invalid for head size %d (layer %d)",
				arch, map[bool]string{true: "_swa"}[c.SWALayers[il]], g.NRot[il], g.HeadDim[il], il)
		}
	}

	// Shared KV: the last shared_kv_layers layers read the cache of the
	// last layer of their kind before them.
	nShared, err := uintKey("attention.shared_kv_layers", 0, false)
	if err != nil {
		return nil, err
	}
	if nShared > 0 && nShared > c.NLayer-2 {
		return nil, fmt.Errorf("key %s.attention.shared_kv_layers %d leaves fewer than 2 of the %d layers with a KV cache of their own", arch, nShared, c.NLayer)
	}
	g.KVFrom = c.NLayer - nShared
	for il := g.KVFrom; il < c.NLayer; il++ {
		src := c.kvSource(il)
		if c.SWALayers[src] != c.SWALayers[il] || g.HeadDim[src] != g.HeadDim[il] || g.NHeadKV[src] != g.NHeadKV[il] {
			return nil, fmt.Errorf("key %s.attention.shared_kv_layers %d: layer %d (%s, %d KV heads of %d) cannot share the cache of layer %d (%s, %d KV heads of %d)",
				arch, nShared, il, kindName(c.SWALayers[il]), g.NHeadKV[il], g.HeadDim[il], src, kindName(c.SWALayers[src]), g.NHeadKV[src], g.HeadDim[src])
		}
	}

	if g.NEmbdPL, err = uintKey("embedding_length_per_layer_input", 0, true); err != nil {
		return nil, err
	}
	if g.NEmbdPL > 1<<16 {
		return nil, fmt.Errorf("key %s.embedding_length_per_layer_input %d is implausibly large", arch, g.NEmbdPL)
	}
	eps, err := floatKey("attention.layer_norm_rms_epsilon", 0, true)
	if err != nil {
		return nil, err
	}
	c.Eps = eps
	if c.RopeBase, err = floatKey("rope.freq_base", 10000, false); err != nil {
		return nil, err
	}
	if c.RopeBaseSWA, err = floatKey("rope.freq_base_swa", 10000, false); err != nil {
		return nil, err
	}
	if !(c.RopeBase > 0) || !(c.RopeBaseSWA > 0) {
		return nil, fmt.Errorf("key %s.rope.freq_base %v or rope.freq_base_swa %v is not positive", arch, c.RopeBase, c.RopeBaseSWA)
	}
	c.RopeFreqScale, c.RopeFreqScaleSWA = 1, 1
	stype, _ := f.String(key("rope.scaling.type"))
	factor, hasFactor := f.Float(key("rope.scaling.factor"))
	if !hasFactor {
		if factor, hasFactor = f.Float(key("rope.scale_linear")); hasFactor && stype == "" {
			stype = "linear"
		}
	}
	switch stype {
	case "", "none":
	case "linear":
		if hasFactor && factor != 0 {
			if !(factor > 0) {
				return nil, fmt.Errorf("key %s.rope.scaling.factor %v is invalid", arch, factor)
			}
			c.RopeFreqScale = float32(1 / factor) // global layers only, as llama.cpp
		}
	default:
		return nil, fmt.Errorf("key %s.rope.scaling.type %q is not supported for gemma4", arch, stype)
	}
	if c.FinalSoftCap, err = floatKey("final_logit_softcapping", 30, false); err != nil {
		return nil, err
	}
	if c.FinalSoftCap < 0 {
		return nil, fmt.Errorf("key %s.final_logit_softcapping %v is negative", arch, c.FinalSoftCap)
	}
	if c.NExpert, err = uintKey("expert_count", 0, false); err != nil {
		return nil, err
	}
	if c.NExpertUsed, err = uintKey("expert_used_count", 0, false); err != nil {
		return nil, err
	}
	if g.NFFExp, err = uintKey("expert_feed_forward_length", 0, false); err != nil {
		return nil, err
	}
	switch {
	case c.NExpert > 512:
		return nil, fmt.Errorf("key %s.expert_count %d exceeds 512", arch, c.NExpert)
	case c.NExpert > 0 && (c.NExpertUsed == 0 || c.NExpertUsed > c.NExpert):
		return nil, fmt.Errorf("key %s.expert_used_count %d is not in 1..expert_count %d", arch, c.NExpertUsed, c.NExpert)
	case c.NExpert > 0 && g.NFFExp == 0:
		return nil, fmt.Errorf("key %s.expert_feed_forward_length is missing or 0 with expert_count %d", arch, c.NExpert)
	case c.NExpert == 0 && c.NExpertUsed > 0:
		return nil, fmt.Errorf("key %s.expert_used_count is %d without expert_count", arch, c.NExpertUsed)
	}
	if c.NExpert > 0 { // softmax routing, weights renormalized (llama.cpp norm_w)
		c.NFFExp, c.ExpertWeightsNorm = g.NFFExp, true
	}

	// Config's uniform fields hold the largest layer's (scratch and cache sizes).
	for il := 0; il < c.NLayer; il++ {
		c.NHead = max(c.NHead, g.NHead[il])
		c.NHeadKV = max(c.NHeadKV, g.NHeadKV[il])
		c.HeadDim = max(c.HeadDim, g.HeadDim[il])
		c.NRot = max(c.NRot, g.NRot[il])
		c.NFF = max(c.NFF, g.NFF[il])
	}
	c.NFFShexp = c.NFF // the dense MLP beside the experts: scratch of the largest width
	c.EmbeddingScale = float32(math.Sqrt(float64(float32(c.NEmbd))))
	c.ResidualScale, c.LogitScale, c.KQScale = 1, 1, 1 // attention scale 1: q and k are RMS-normed
	c.QKNorm, c.PostNorms, c.GELU = true, true, true
	c.RopeAttnFactor, c.NCtxOrig = 1, c.NCtxTrain
	if c.Pooling, err = poolingFromGGUF(f, arch); err != nil {
		return nil, err
	}
	return c, nil
}

func kindName(swa bool) string {
	if swa {
		return "sliding-window"
	}
	return "global"
}

// gemma4Weights binds a gemma4 file's tensors to the shapes c gives them.
func gemma4WeightsFromGGUF(f *loader.File, c *Config) (*Weights, error) {
	g := c.G4
	b := binder{f, func() string { return gemma4Dims(c) }}
	bind, vec, has := b.bind, b.vec, b.has

	w := &Weights{G4: &gemma4Weights{}}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, fmt.Errorf("tensor token_embd.weight is missing")
	}
	if len(ti.Shape) != 2 || ti.Shape[1] <= 0 || ti.Shape[1] > 1<<31 {
		return nil, fmt.Errorf("tensor token_embd.weight has shape %v, want [%d n_vocab] (%s)", ti.Shape, c.NEmbd, gemma4Dims(c))
	}
	c.NVocab = int(ti.Shape[1])
	d, nv, npl := c.NEmbd, c.NVocab, g.NEmbdPL
	var err error
	if w.TokEmbd, err = bind("token_embd.weight", d, nv); err != nil {
		return nil, err
	}
	w.Output = w.TokEmbd
	if has("output.weight") {
		if w.Output, err = bind("output.weight", d, nv); err != nil {
			return nil, err
		}
	}
	if w.OutNorm, err = vec("output_norm.weight", d); err != nil {
		return nil, err
	}
	if npl > 0 {
		if w.G4.TokPL, err = bind("per_layer_token_embd.weight", npl*c.NLayer, nv); err != nil {
			return nil, err
		}
		if w.G4.ModelProj, err = bind("per_layer_model_proj.weight", d, npl*c.NLayer); err != nil {
			return nil, err
		}
		if w.G4.ProjNorm, err = vec("per_layer_proj_norm.weight", npl); err != nil {
			return nil, err
		}
	}
	w.Layers = make([]Layer, c.NLayer)
	for il := range w.Layers {
		l := &w.Layers[il]
		lg := &gemma4Layer{sharedSrc: c.kvSource(il)}
		l.G4 = lg
		p := fmt.Sprintf("blk.%d.", il)
		hd, qd, kvd, ff := g.HeadDim[il], g.NHead[il]*g.HeadDim[il], g.NHeadKV[il]*g.HeadDim[il], g.NFF[il]
		ownKV := il < g.KVFrom
		steps := []func() error{
			func() (e error) { l.AttnNorm, e = vec(p+"attn_norm.weight", d); return },
			func() (e error) { l.Wq, e = bind(p+"attn_q.weight", d, qd); return },
			func() (e error) { l.QNorm, e = vec(p+"attn_q_norm.weight", hd); return },
			func() (e error) { l.Wo, e = bind(p+"attn_output.weight", qd, d); return },
			func() (e error) { l.PostAttn, e = vec(p+"post_attention_norm.weight", d); return },
			func() (e error) { l.FFNNorm, e = vec(p+"ffn_norm.weight", d); return },
			func() (e error) { l.Wgate, e = bind(p+"ffn_gate.weight", d, ff); return },
			func() (e error) { l.Wup, e = bind(p+"ffn_up.weight", d, ff); return },
			func() (e error) { l.Wdown, e = bind(p+"ffn_down.weight", ff, d); return },
			func() (e error) { l.PostFFN, e = vec(p+"post_ffw_norm.weight", d); return },
		}
		if ownKV {
			steps = append(steps,
				func() (e error) { l.Wk, e = bind(p+"attn_k.weight", d, kvd); return },
				func() (e error) { l.KNorm, e = vec(p+"attn_k_norm.weight", hd); return })
			if has(p + "attn_v.weight") {
				lg.HasV = true
				steps = append(steps, func() (e error) { l.Wv, e = bind(p+"attn_v.weight", d, kvd); return })
			}
		}
		if has(p + "ffn_gate_inp.weight") {
			if c.NExpert == 0 {
				return nil, fmt.Errorf("tensor %sffn_gate_inp.weight is present but key gemma4.expert_count is missing", p)
			}
			steps = append(steps, c.gemma4ExpertSteps(l, lg, p, b)...)
		}
		if has(p + "layer_output_scale.weight") {
			steps = append(steps, func() error {
				s, e := vec(p+"layer_output_scale.weight", 1)
				if e == nil {
					lg.OutScale, lg.HasScale = s[0], true
				}
				return e
			})
		}
		if npl > 0 {
			steps = append(steps,
				func() (e error) { lg.InpGate, e = bind(p+"inp_gate.weight", d, npl); return },
				func() (e error) { lg.Proj, e = bind(p+"proj.weight", npl, d); return },
				func() (e error) { lg.PostNorm, e = vec(p+"post_norm.weight", d); return })
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, err
			}
		}
	}
	// Proportional RoPE of the global layers: rope_freqs [global head size / 2],
	// required when there is a global layer.
	for il := 0; il < c.NLayer; il++ {
		if !c.SWALayers[il] {
			if w.RopeFreqs, err = vec("rope_freqs.weight", g.HeadDim[il]/2); err != nil {
				return nil, err
			}
			break
		}
	}
	return w, nil
}

// gemma4Dims names the hyperparameters that fix gemma4's tensor shapes.
func gemma4Dims(c *Config) string {
	g := c.G4
	var sb strings.Builder
	fmt.Fprintf(&sb, "gemma4.embedding_length %d, attention.head_count %v, head_count_kv %v, head sizes %v, feed_forward_length %v, embedding_length_per_layer_input %d",
		c.NEmbd, g.NHead, g.NHeadKV, g.HeadDim, g.NFF, g.NEmbdPL)
	return sb.String()
}

// gemma4Scratch returns st's gemma4 scratch, made on first use.
func (st *fwdState) gemma4(c *Config) *gemma4Scratch {
	if st.g4 != nil {
		return st.g4
	}
	n, pe, h := st.nBatch, c.NLayer*c.G4.NEmbdPL, c.NRot/2
	s := &gemma4Scratch{
		pl: make([]float32, n*pe), proj: make([]float32, n*pe),
		plg: make([]float32, n*c.G4.NEmbdPL), plu: make([]float32, n*c.G4.NEmbdPL),
		cosG: make([]float32, n*h), sinG: make([]float32, n*h),
		cosL: make([]float32, n*h), sinL: make([]float32, n*h),
		moe: make([]float32, n*c.NEmbd),
	}
	st.g4 = s
	return s
}

// forwardGemma4 is pass.forward for gemma4 (see the top of this file).
func (p *pass) forwardGemma4() {
	c, w, st, ntok := p.m.cfg, p.m.w, p.st, p.ntok
	g, gw := c.G4, w.G4
	gs := st.gemma4(c)
	d, kvs := c.NEmbd, c.KVDim()
	kb, vb := p.m.kvRows() // a position's bytes in a layer's cache (the widest layer's)
	kq := p.m.kvQuant()

	x := st.x[:ntok*d]
	p.embedTokens(x, d)
	kernels.Scale(x, c.EmbeddingScale)

	npl, pe := g.NEmbdPL, c.NLayer*g.NEmbdPL
	if npl > 0 {
		// Per-layer inputs: the token's per-layer rows plus a normed
		// projection of its embedding, over sqrt(2).
		pl, proj := gs.pl[:ntok*pe], gs.proj[:ntok*pe]
		for _, sg := range p.segs {
			for t, tok := range sg.tokens {
				r := sg.r0 + t
				gw.TokPL.embedRow(int(tok), pl[r*pe:(r+1)*pe])
			}
		}
		kernels.Scale(pl, float32(math.Sqrt(float64(float32(npl)))))
		p.matmulF32Exact(&gw.ModelProj, x, ntok, proj)
		kernels.Scale(proj, 1/float32(math.Sqrt(float64(float32(d)))))
		kernels.RMSNormRows(proj, proj, gw.ProjNorm, ntok*c.NLayer, npl, c.Eps)
		kernels.Add(pl, proj, pl)
		kernels.Scale(pl, 1/float32(math.Sqrt(2)))
	}

	// RoPE tables: global layers with rope_freqs and the global base, local
	// ones with the SWA base, each with its own rotated dims.
	var rotG, rotL int
	for il := 0; il < c.NLayer; il++ {
		if c.SWALayers[il] {
			rotL = g.NRot[il]
		} else {
			rotG = g.NRot[il]
		}
	}
	cg, cl := *c, *c
	cg.NRot, cl.NRot = rotG, rotL
	for _, sg := range p.segs {
		n, pos0 := len(sg.tokens), sg.s.pos
		if rotG > 0 {
			o := sg.r0 * rotG / 2
			ropeTables(&cg, c.RopeBase, c.RopeFreqScale, w.RopeFreqs, pos0, n, gs.cosG[o:], gs.sinG[o:])
		}
		if rotL > 0 {
			o := sg.r0 * rotL / 2
			ropeTables(&cl, c.RopeBaseSWA, c.RopeFreqScaleSWA, nil, pos0, n, gs.cosL[o:], gs.sinL[o:])
		}
	}

	xb, xb2 := st.xb[:ntok*d], st.xb2[:ntok*d]
	for li := range w.Layers {
		l := &w.Layers[li]
		lg := l.G4
		nh, nkv, hd := g.NHead[li], g.NHeadKV[li], g.HeadDim[li]
		qd, kvd := nh*hd, nkv*hd
		q, k, v, att := st.q[:ntok*qd], st.k[:ntok*kvd], st.v[:ntok*kvd], st.att[:ntok*qd]
		swa := c.SWALayers[li]
		half := g.NRot[li] / 2
		cs, sn := gs.cosG[:ntok*half], gs.sinG[:ntok*half]
		if swa {
			cs, sn = gs.cosL[:ntok*half], gs.sinL[:ntok*half]
		}
		ownKV := li < g.KVFrom
		kRow64, _ := p.m.kvK.RowBytes(int64(kvd))
		vRow64, _ := p.m.kvV.RowBytes(int64(kvd))
		kRow, vRow := int(kRow64), int(vRow64)

		kernels.RMSNormRows(xb, x, l.AttnNorm, ntok, d, c.Eps)
		ops := []matOp{{&l.Wq, q}}
		if ownKV {
			ops = append(ops, matOp{&l.Wk, k})
			if lg.HasV {
				ops = append(ops, matOp{&l.Wv, v})
			}
		}
		p.matmul(xb, ntok, ops...)
		kernels.RMSNormRows(q, q, l.QNorm, ntok*nh, hd, c.Eps)
		kernels.RoPERows(q, ntok, nh, hd, g.NRot[li], cs, sn, true)
		if ownKV {
			if !lg.HasV {
				copy(v, k) // V is the K projection (before K's norm)
			}
			kernels.RMSNormRows(k, k, l.KNorm, ntok*nkv, hd, c.Eps)
			kernels.RMSNormRows(v, v, nil, ntok*nkv, hd, c.Eps)
			kernels.RoPERows(k, ntok, nkv, hd, g.NRot[li], cs, sn, true)
		}

		var tAttn time.Time
		if p.prof != nil {
			tAttn = time.Now()
		}
		for _, sg := range p.segs {
			n, pos0, r0 := len(sg.tokens), sg.s.pos, sg.r0
			if ownKV {
				// Rows as wide as the widest layer's (kb, vb bytes), this
				// layer's kvd values at their start, in the cache's types.
				kc, vc := sg.s.kcache[li], sg.s.vcache[li]
				for t := 0; t < n; t++ {
					ko, vo := (pos0+t)*kb, (pos0+t)*vb
					kernels.StoreKV(p.m.kvK, k[(r0+t)*kvd:(r0+t+1)*kvd], kc[ko:ko+kRow])
					kernels.StoreKV(p.m.kvV, v[(r0+t)*kvd:(r0+t+1)*kvd], vc[vo:vo+vRow])
				}
			}
			// A quantized cache has one path (kernels.AttentionKVQ), which
			// converts Q itself.
			f16path := (n < 64 || hd%16 != 0) && !kq
			qs, hs := q[r0*qd:(r0+n)*qd], st.f16[r0*qd:(r0+n)*qd]
			if f16path {
				kernels.QuantizeAct(kernels.F16, qs, halfBytes(hs))
				kernels.Dequant(kernels.F16, halfBytes(hs), qs)
			}
			a := kernels.AttnF16Params{
				NTok: n, Pos0: pos0, NHead: nh, NHeadKV: nkv, HeadDim: hd,
				Q: qs, QStride: qd, K: halfs(sg.s.kcache[li]), V: halfs(sg.s.vcache[li]), KVStride: kvs,
				Scale: 1, Out: att[r0*qd : (r0+n)*qd], OutStride: qd,
			}
			if swa {
				a.Window = c.SlidingWindow
			}
			if kq {
				sg.s.attentionKVQ(p, li, &a)
				continue
			}
			sg.s.attentionParams(p, li, f16path, &a)
		}
		if p.prof != nil {
			p.prof.add("attention", time.Since(tAttn))
		}
		p.matmul(att, ntok, matOp{&l.Wo, xb2})
		addResidual(c, x, xb2, l.PostAttn, ntok)
		if li == len(w.Layers)-1 { // only the output rows from here (keepOutputRows)
			ntok = p.keepOutputRows(d)
			x, xb, xb2 = x[:ntok*d], xb[:ntok*d], xb2[:ntok*d]
			if ntok == 0 {
				break
			}
		}

		// GeGLU feed-forward of this layer's width.
		kernels.RMSNormRows(xb, x, l.FFNNorm, ntok, d, c.Eps)
		ff := g.NFF[li]
		hb, hb2 := st.hb[:ntok*ff], st.hb2[:ntok*ff]
		fused := p.matmulOps(xb, ntok, gluGELU, matOp{&l.Wgate, hb}, matOp{&l.Wup, hb2})
		if !fused {
			gluGELU.apply(hb, hb2, ntok, ff, 0, ff)
		}
		p.matmul(hb, ntok, matOp{&l.Wdown, xb2})
		if l.GateInp.Data != nil { // dense MLP (normed) plus the experts (normed)
			p.gemma4Experts(l, xb, xb2, ntok)
		}
		addResidual(c, x, xb2, l.PostFFN, ntok)

		if npl > 0 { // per-layer input: x += norm(Wproj(gelu(Wgate x) * P[li]))
			plg, plu := gs.plg[:ntok*npl], gs.plu[:ntok*npl]
			for t := 0; t < ntok; t++ {
				r := p.srcRow(t)
				copy(plu[t*npl:(t+1)*npl], gs.pl[r*pe+li*npl:r*pe+(li+1)*npl])
			}
			p.matmul(x, ntok, matOp{&lg.InpGate, plg})
			gluGELU.apply(plg, plu, ntok, npl, 0, npl)
			p.matmul(plg, ntok, matOp{&lg.Proj, xb2})
			addResidual(c, x, xb2, lg.PostNorm, ntok)
		}
		if lg.HasScale {
			kernels.Scale(x, lg.OutScale)
		}
	}
	p.output()
}

// attentionParams runs the attention of a (filled in by the caller, with
// this layer's head counts and size) over layer li's cache, query heads
// split across the workers as in Session.attention.
func (s *Session) attentionParams(ps *pass, li int, f16path bool, a *kernels.AttnF16Params) {
	m, st := s.model, ps.st
	nh := a.NHead
	hp := max(1, (nh+4*m.pool.n-1)/(4*m.pool.n))
	m.pool.runChunks((nh+hp-1)/hp, func(wk, ch int) {
		h0, h1 := ch*hp, min((ch+1)*hp, nh)
		if f16path {
			kernels.AttentionF16Acc(a, h0, h1, st.scr[wk])
		} else {
			kernels.AttentionTiled(a, h0, h1, st.scr[wk])
		}
	})
}

// matmulF32Exact is out[t][r] = dot(row r of m, in row t) for an F32 matrix
// (per_layer_model_proj, which llama.cpp never quantizes, and the expert
// router), summed as the reference build does: a sequence of two or more
// rows through llamafile's sgemm on AVX-512 (tinyBLAS, 16 lanes: lane l
// accumulates a[i]*b[i] for i ≡ l mod 16 with fused multiply-adds in
// order, then the lanes are added as _mm512_reduce_add_ps does: halves of
// 8, of 4, then pairs), one row through ggml's vec_dot (the ordinary
// product). Other types, or rows not a multiple of 16 long, go through the
// ordinary product.
func (p *pass) matmulF32Exact(m *Mat, in []float32, ntok int, out []float32) {
	if m.Type != kernels.F32 || m.Cols%16 != 0 {
		p.matmul(in, ntok, matOp{m, out})
		return
	}
	w := unsafe.Slice((*float32)(unsafe.Pointer(&m.Data[0])), m.Rows*m.Cols)
	pl, cols, rows := p.m.pool, m.Cols, m.Rows
	segs := p.rows
	if len(segs) == 0 {
		segs = []int{ntok}
	}
	t0 := 0
	for _, n := range segs {
		if n == 1 {
			p.matmul(in[t0*cols:(t0+1)*cols], 1, matOp{m, out[t0*rows : (t0+1)*rows]})
		} else if n > 1 {
			a0 := t0
			pl.run(func(wk int) {
				r0, r1 := split(rows, wk, pl.n, 1)
				for r := r0; r < r1; r++ {
					a := w[r*cols : (r+1)*cols]
					for t := a0; t < a0+n; t++ {
						out[t*rows+r] = dotTinyBLAS16(a, in[t*cols:(t+1)*cols])
					}
				}
			})
		}
		t0 += n
	}
	if t0 != ntok {
		panic(fmt.Sprintf("matmulF32Exact: sequences of %v rows, want %d", segs, ntok))
	}
}

// dotTinyBLAS16 is one output of tinyBLAS's AVX-512 F32 kernel (len(a) a
// multiple of 16).
func dotTinyBLAS16(a, b []float32) float32 {
	var acc [16]float32
	for i := 0; i < len(a); i += 16 {
		for l := 0; l < 16; l++ {
			acc[l] = fmaf(a[i+l], b[i+l], acc[l])
		}
	}
	var s [8]float32
	for l := 0; l < 8; l++ {
		s[l] = acc[l+8] + acc[l]
	}
	u0, u1, u2, u3 := s[4]+s[0], s[5]+s[1], s[6]+s[2], s[7]+s[3]
	return (u0 + u2) + (u1 + u3)
}

// gemma4ExpertSteps bind the tensors of a gemma4 mixture-of-experts layer
// (prefix p): the router and its input scale, the three extra norms, and
// the experts' gate and up (one fused ffn_gate_up_exps, gate rows first
// per expert, or two tensors) and down matrices.
func (c *Config) gemma4ExpertSteps(l *Layer, lg *gemma4Layer, p string, b binder) []func() error {
	d, ne, fe := c.NEmbd, c.NExpert, c.NFFExp
	bind, vec, has := b.bind, b.vec, b.has
	experts := func(name string, cols, rows int) ([]Mat, error) { return b.experts(name, cols, rows, ne) }
	steps := []func() error{
		func() (e error) { l.GateInp, e = bind(p+"ffn_gate_inp.weight", d, ne); return },
		func() (e error) { lg.GateInpScale, e = vec(p+"ffn_gate_inp.scale", d); return },
		func() (e error) { lg.PreNorm2, e = vec(p+"pre_ffw_norm_2.weight", d); return },
		func() (e error) { lg.PostNorm1, e = vec(p+"post_ffw_norm_1.weight", d); return },
		func() (e error) { lg.PostNorm2, e = vec(p+"post_ffw_norm_2.weight", d); return },
		func() (e error) { l.ExpDown, e = experts(p+"ffn_down_exps.weight", fe, d); return },
	}
	for _, sfx := range []string{"ffn_gate_exps.scale", "ffn_up_exps.scale", "ffn_down_exps.scale"} {
		if has(p + sfx) {
			name := p + sfx
			return []func() error{func() error {
				return fmt.Errorf("tensor %s: per-expert weight scales are not supported", name)
			}}
		}
	}
	if has(p + "ffn_gate_up_exps.weight") {
		return append(steps, func() error {
			gu, err := experts(p+"ffn_gate_up_exps.weight", d, 2*fe)
			if err != nil {
				return err
			}
			l.ExpGate, l.ExpUp = make([]Mat, ne), make([]Mat, ne)
			for e := range gu {
				l.ExpGate[e] = gu[e].rows(fmt.Sprintf("%sffn_gate_up_exps.weight[%d].gate", p, e), 0, fe)
				l.ExpUp[e] = gu[e].rows(fmt.Sprintf("%sffn_gate_up_exps.weight[%d].up", p, e), fe, 2*fe)
			}
			return nil
		})
	}
	return append(steps,
		func() (e error) { l.ExpGate, e = experts(p+"ffn_gate_exps.weight", d, fe); return },
		func() (e error) { l.ExpUp, e = experts(p+"ffn_up_exps.weight", d, fe); return })
}

// gemma4Experts turns the dense MLP's output mlp ([ntok][NEmbd]) of a
// mixture-of-experts layer into the layer's FFN output:
// rmsnorm(mlp) * post_ffw_norm_1 + rmsnorm(experts) * post_ffw_norm_2, the
// experts run on rmsnorm(x) * pre_ffw_norm_2 and routed by
// ffn_gate_inp (rmsnorm(x) / sqrt(n_embd) * ffn_gate_inp.scale). h is
// scratch ([ntok][NEmbd]).
func (p *pass) gemma4Experts(l *Layer, h, mlp []float32, ntok int) {
	c, st, lg := p.m.cfg, p.st, l.G4
	d := c.NEmbd
	x := st.x[:ntok*d]
	kernels.RMSNormRows(mlp, mlp, lg.PostNorm1, ntok, d, c.Eps)
	// Router input and logits.
	ms := st.moe
	kernels.RMSNormRows(h, x, nil, ntok, d, c.Eps)
	kernels.Scale(h, 1/float32(math.Sqrt(float64(float32(d)))))
	for t := 0; t < ntok; t++ {
		row := h[t*d : (t+1)*d]
		for i, s := range lg.GateInpScale {
			row[i] *= s
		}
	}
	p.matmulF32Exact(&l.GateInp, h, ntok, ms.logits[:ntok*c.NExpert])
	// Experts' input.
	kernels.RMSNormRows(h, x, lg.PreNorm2, ntok, d, c.Eps)
	moeOut := st.g4.moe[:ntok*d]
	st.moe.route(c, ntok)
	st.moe.sortRows(c, ntok)
	p.routedExperts(l, h, ntok, moeOut, gluGELU)
	kernels.RMSNormRows(moeOut, moeOut, lg.PostNorm2, ntok, d, c.Eps)
	kernels.Add(mlp, mlp, moeOut)
}
