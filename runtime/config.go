package runtime

import (
	"fmt"
	"math"
	"strings"

	"github.com/woolly-llm/woolly/loader"
)

// Config holds the hyperparameters of a model, read from the {arch}.* keys
// of a GGUF file.
type Config struct {
	Arch      string
	NEmbd     int // embedding_length
	NLayer    int // block_count
	NHead     int // attention.head_count
	NHeadKV   int // attention.head_count_kv (default: NHead)
	HeadDim   int // attention.key_length (default: NEmbd / NHead)
	NFF       int // feed_forward_length
	NVocab    int // rows of token_embd.weight
	NCtxTrain int // context_length
	NRot      int // rope.dimension_count (default: HeadDim)

	RopeBase      float32 // rope.freq_base (default 10000)
	RopeFreqScale float32 // 1 / rope.scaling.factor for linear scaling, else 1
	RopeNeox      bool    // rotate (i, i+n/2) pairs instead of (2i, 2i+1)
	Eps           float32 // attention.layer_norm_rms_epsilon

	// Granite scales (1, 1, 1/sqrt(HeadDim), 1 for other archs); gemma's
	// EmbeddingScale is sqrt(NEmbd).
	EmbeddingScale float32
	ResidualScale  float32
	KQScale        float32 // scale of q.k inside attention (1 when QScale is used)
	LogitScale     float32

	// Features of the newer architectures (zero values: off).
	QKNorm       bool    // RMSNorm of every q and k head (attn_q_norm, attn_k_norm) before RoPE: qwen3, qwen3moe, gemma3
	PostNorms    bool    // post_attention_norm and post_ffw_norm on the block outputs: gemma2, gemma3
	GELU         bool    // GeGLU feed-forward (tanh GELU via the f16 table) instead of SwiGLU: gemma
	QScale       float32 // q is multiplied by this after RoPE, KQScale is 1 (gemma, phi3); 0: unused
	AttnSoftCap  float32 // attention-logit soft-cap (gemma2); 0: off
	FinalSoftCap float32 // final-logit soft-cap (gemma2); 0: off

	// Sliding-window attention: layer il attends to the last SlidingWindow
	// positions when SWALayers[il] (gemma2: even layers; gemma3: 5 of 6).
	SlidingWindow int
	SWALayers     []bool
	// RoPE of the sliding-window layers (gemma3: rope.freq_base_swa).
	RopeBaseSWA      float32
	RopeFreqScaleSWA float32
	// RopeAttnFactor multiplies the RoPE tables (rope.scaling.attn_factor,
	// Phi-3 128k's LongRoPE); NCtxOrig chooses its long or short factors
	// (rope.scaling.original_context_length, default the training context).
	RopeAttnFactor float32
	NCtxOrig       int

	// Mixture of experts (qwen3moe; llama with expert_count, Mixtral-style):
	// a softmax router over NExpert experts picks NExpertUsed per token.
	NExpert            int
	NExpertUsed        int
	NFFExp             int     // rows of each expert's gate/up (expert_feed_forward_length, else feed_forward_length)
	NFFShexp           int     // qwen35moe: rows of the shared expert's gate/up (expert_shared_feed_forward_length, else feed_forward_length)
	ExpertWeightsNorm  bool    // renormalize the chosen experts' weights to sum 1
	ExpertWeightsScale float32 // multiply the weights by this (expert_weights_scale; 0 or 1: none)

	// Gated DeltaNet hybrids (qwen35): Recurrent[il] marks a linear-attention
	// layer (the others are gated full attention). The linear layers have
	// SSMGroups key heads and SSMVHeads value heads, all SSMState wide, a
	// causal convolution of SSMConv taps over the q|k|v channels, and a
	// recurrent state of SSMVHeads [SSMState x SSMState] matrices.
	Recurrent    []bool
	SSMConv      int    // ssm.conv_kernel
	SSMInner     int    // ssm.inner_size (= SSMState * SSMVHeads)
	SSMState     int    // ssm.state_size: head size of the linear layers' k and v
	SSMGroups    int    // ssm.group_count: key heads
	SSMVHeads    int    // ssm.time_step_rank: value heads
	RopeSections [4]int // rope.dimension_sections (qwen35: interleaved multi-section RoPE; zero: plain NeoX)
	// DNGroupedHeads: value head h reads key head h / (SSMVHeads/SSMGroups)
	// (qwen3next's repeat-interleave); otherwise h % SSMGroups (qwen35).
	DNGroupedHeads bool
	AttnGate       bool // the q projection carries a sigmoid output gate per head
	NLayerNextN    int  // nextn_predict_layers: trailing MTP blocks, not run

	// gpt-oss (gptoss.go): YaRN RoPE (Yarn, nil otherwise), attention sinks,
	// the clamped SwiGLU of its experts and softmax over the chosen
	// experts' router logits.
	Yarn             *YarnParams
	AttnSinks        bool
	SwiGLUOAI        bool
	MoESoftmaxWeight bool

	// Pooling is {arch}.pooling_type, how Embed pools (PoolingDefault when
	// the key is absent, as in every causal language model).
	Pooling Pooling

	// G4 holds gemma4's per-layer shapes (gemma4.go); nil for other archs.
	G4 *gemma4Params
}

// archSpec is what an architecture's graph does, as llama.cpp builds it.
type archSpec struct {
	neox      bool // NeoX RoPE (rotate (i, i+n/2))
	biases    bool // q/k/v biases (qwen2)
	qkNorm    bool
	postNorms bool
	gelu      bool
	gemma     bool // embedding * sqrt(n_embd), q scaled by 1/sqrt(head_dim) before attention
	moe       int  // 0: dense only, 1: experts when expert_count > 0, 2: experts required
	deltaNet  bool // Gated DeltaNet linear-attention layers beside gated full attention (qwen35)
}

// archInfo lists the architectures the forward pass implements.
var archInfo = map[string]archSpec{
	"llama":     {moe: 1},
	"granite":   {},
	"qwen2":     {neox: true, biases: true},
	"qwen3":     {neox: true, qkNorm: true},
	"qwen3moe":  {neox: true, qkNorm: true, moe: 2},
	"gemma2":    {neox: true, postNorms: true, gelu: true, gemma: true},
	"gemma3":    {neox: true, qkNorm: true, postNorms: true, gelu: true, gemma: true},
	"phi3":      {neox: true},
	"qwen35":    {neox: true, qkNorm: true, deltaNet: true},
	"qwen35moe": {neox: true, qkNorm: true, deltaNet: true, moe: 2},
	"qwen3next": {neox: true, qkNorm: true, deltaNet: true, moe: 2},
	"gpt-oss":   {neox: true, moe: 2},
	"gemma4":    {neox: true, qkNorm: true, postNorms: true, gelu: true, gemma: true}, // gemma4.go
}

// SupportedArchitectures lists the general.architecture values Woolly runs.
func SupportedArchitectures() []string {
	return []string{"llama", "granite", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "qwen35", "qwen35moe", "qwen3next", "gpt-oss", "bert", "nomic-bert", "gemma-embedding", "gemma4"}
}

// ConfigFromGGUF reads the hyperparameters of f. It fails on an unknown
// architecture and on missing or inconsistent keys, naming them.
func ConfigFromGGUF(f *loader.File) (*Config, error) {
	arch := f.Architecture()
	if arch == "" {
		return nil, fmt.Errorf("general.architecture is missing")
	}
	ai, ok := archInfo[arch]
	if !ok {
		return nil, fmt.Errorf("unknown architecture %q (supported: %s)", arch, strings.Join(SupportedArchitectures(), ", "))
	}
	if arch == "gemma4" {
		return gemma4Config(f)
	}
	c := &Config{Arch: arch, RopeNeox: ai.neox}
	req := requiredInt(f, arch, 1<<31)
	opt := func(key string, def int) (int, error) {
		if _, present := f.Get(arch + "." + key); !present {
			return def, nil
		}
		return req(key)
	}
	var err error
	if c.NEmbd, err = req("embedding_length"); err != nil {
		return nil, err
	}
	if c.NLayer, err = req("block_count"); err != nil {
		return nil, err
	}
	if ai.deltaNet {
		// Trailing multi-token-prediction blocks are counted in block_count
		// but not run by the main pass.
		if _, present := f.Get(arch + ".nextn_predict_layers"); present {
			v, ok := f.Uint(arch + ".nextn_predict_layers")
			if !ok || v >= uint64(c.NLayer) {
				return nil, fmt.Errorf("key %s.nextn_predict_layers must be a non-negative integer less than block_count %d", arch, c.NLayer)
			}
			c.NLayerNextN = int(v)
		}
		if c.NLayerNextN >= c.NLayer {
			return nil, fmt.Errorf("key %s.nextn_predict_layers %d is not less than block_count %d", arch, c.NLayerNextN, c.NLayer)
		}
		c.NLayer -= c.NLayerNextN
	}
	if c.NHead, err = req("attention.head_count"); err != nil {
		return nil, err
	}
	if arch == "gpt-oss" { // llama.cpp reads it as optional; the experts use expert_feed_forward_length
		c.NFF, err = opt("feed_forward_length", 0)
	} else {
		c.NFF, err = req("feed_forward_length")
	}
	if err != nil {
		return nil, err
	}
	if c.NCtxTrain, err = opt("context_length", 2048); err != nil {
		return nil, err
	}
	if c.NHeadKV, err = opt("attention.head_count_kv", c.NHead); err != nil {
		return nil, err
	}
	if c.NHead%c.NHeadKV != 0 {
		return nil, fmt.Errorf("attention.head_count %d is not a multiple of attention.head_count_kv %d", c.NHead, c.NHeadKV)
	}
	if c.NEmbd%c.NHead != 0 {
		if _, ok := f.Get(arch + ".attention.key_length"); !ok {
			return nil, fmt.Errorf("embedding_length %d is not a multiple of head_count %d and attention.key_length is missing", c.NEmbd, c.NHead)
		}
	}
	if c.HeadDim, err = opt("attention.key_length", c.NEmbd/max(c.NHead, 1)); err != nil {
		return nil, err
	}
	vlen, err := opt("attention.value_length", c.HeadDim)
	if err != nil {
		return nil, err
	}
	if vlen != c.HeadDim {
		return nil, fmt.Errorf("attention.value_length %d differs from attention.key_length %d (unsupported)", vlen, c.HeadDim)
	}
	if c.NRot, err = opt("rope.dimension_count", c.HeadDim); err != nil {
		return nil, err
	}
	if c.NRot > c.HeadDim || c.NRot%2 != 0 {
		return nil, fmt.Errorf("rope.dimension_count %d is invalid for head dimension %d", c.NRot, c.HeadDim)
	}

	c.RopeBase = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		c.RopeBase = float32(v)
	}
	if !(c.RopeBase > 0) {
		return nil, fmt.Errorf("rope.freq_base %v is invalid", c.RopeBase)
	}
	c.RopeFreqScale = 1
	stype, _ := f.String(arch + ".rope.scaling.type")
	factor, hasFactor := f.Float(arch + ".rope.scaling.factor")
	if !hasFactor {
		factor, hasFactor = f.Float(arch + ".rope.scale_linear")
		if hasFactor && stype == "" {
			stype = "linear"
		}
	}
	switch stype {
	case "", "none", "llama3":
		// llama3 scaling is carried by rope_freqs.weight.
	case "yarn": // frequencies scaled by 1/factor, blended per dimension (gptoss.go, readYarn)
		if hasFactor && factor != 0 {
			if !(factor > 0) || math.IsInf(factor, 0) {
				return nil, fmt.Errorf("rope.scaling.factor %v is invalid", factor)
			}
			c.RopeFreqScale = 1 / float32(factor) // llama.cpp: 1.0f/ropescale in f32
		}
	case "linear":
		if hasFactor && factor != 0 {
			if !(factor > 0) {
				return nil, fmt.Errorf("rope.scaling.factor %v is invalid", factor)
			}
			c.RopeFreqScale = float32(1 / factor)
		}
	default:
		return nil, fmt.Errorf("rope scaling type %q is not supported", stype)
	}

	eps, ok := f.Float(arch + ".attention.layer_norm_rms_epsilon")
	if !ok {
		return nil, fmt.Errorf("key %s.attention.layer_norm_rms_epsilon is missing (required for %s)", arch, arch)
	}
	c.Eps = float32(eps)

	c.EmbeddingScale, c.ResidualScale, c.LogitScale = 1, 1, 1
	c.KQScale = 1 / float32(math.Sqrt(float64(c.HeadDim)))
	if arch == "granite" {
		if v, ok := f.Float(arch + ".embedding_scale"); ok {
			c.EmbeddingScale = float32(v)
		}
		if v, ok := f.Float(arch + ".residual_scale"); ok {
			c.ResidualScale = float32(v)
		}
		if v, ok := f.Float(arch + ".attention.scale"); ok && v != 0 {
			c.KQScale = float32(v)
		}
		if v, ok := f.Float(arch + ".logit_scale"); ok && v != 0 {
			c.LogitScale = float32(v)
		}
	}
	if err := c.readArchFeatures(f, ai, req, opt); err != nil {
		return nil, err
	}
	if ai.deltaNet {
		if err := c.readDeltaNet(f, req, opt); err != nil {
			return nil, err
		}
	}
	if c.Pooling, err = poolingFromGGUF(f, arch); err != nil {
		return nil, err
	}
	return c, nil
}

// optionalKey reads f's key k with read, or gives def when the file lacks
// it; a missing key that is required is an error naming it.
func optionalKey[T any](f *loader.File, arch, k string, def T, required bool, read func(string) (T, error)) (T, error) {
	if _, present := f.Get(k); !present {
		if required {
			var zero T
			return zero, fmt.Errorf("key %s is missing (required for %s)", k, arch)
		}
		return def, nil
	}
	return read(k)
}

// finiteKey reads key k of f as a finite number.
func finiteKey(f *loader.File, k string) (float32, error) {
	v, ok := f.Float(k)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("key %s is not a finite number", k)
	}
	return float32(v), nil
}

// readArchFeatures reads the keys of the newer architectures' features
// (see Config), with llama.cpp's defaults.
func (c *Config) readArchFeatures(f *loader.File, ai archSpec, req func(string) (int, error), opt func(string, int) (int, error)) error {
	arch := c.Arch
	c.QKNorm, c.PostNorms, c.GELU = ai.qkNorm, ai.postNorms, ai.gelu
	optFloat := func(key string, def float32) (float32, error) {
		return optionalKey(f, arch, arch+"."+key, def, false, func(k string) (float32, error) { return finiteKey(f, k) })
	}
	var err error
	if c.RopeAttnFactor, err = optFloat("rope.scaling.attn_factor", 1); err != nil {
		return err
	}
	if c.NCtxOrig, err = opt("rope.scaling.original_context_length", c.NCtxTrain); err != nil {
		return err
	}
	c.RopeBaseSWA, c.RopeFreqScaleSWA = 10000, 1

	switch arch {
	case "gemma2", "gemma3":
		c.EmbeddingScale = float32(math.Sqrt(float64(c.NEmbd)))
		// Q is scaled before attention by 1/sqrt(head_dim), or for the
		// 27B models (46 / 62 layers) by 1/sqrt(n_embd/n_head).
		big := (arch == "gemma2" && c.NLayer == 46) || (arch == "gemma3" && c.NLayer == 62)
		if big {
			c.QScale = 1 / float32(math.Sqrt(float64(float32(c.NEmbd/c.NHead))))
		} else {
			c.QScale = 1 / float32(math.Sqrt(float64(float32(c.HeadDim))))
		}
		c.KQScale = 1
	case "phi3":
		c.QScale = 1 / float32(math.Sqrt(float64(float32(c.HeadDim))))
		c.KQScale = 1
	}

	switch arch {
	case "gemma2":
		// Sliding window on every other layer (default window 4096), soft
		// caps 50 and 30 unless the file says otherwise (llama.cpp's defaults).
		if c.SlidingWindow, err = opt("attention.sliding_window", 4096); err != nil {
			return err
		}
		if c.SWALayers, err = c.swaPattern(f, 2); err != nil {
			return err
		}
		c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, c.RopeFreqScale
		if c.RopeBaseSWA, err = optFloat("rope.freq_base_swa", c.RopeBaseSWA); err != nil {
			return err
		}
		if c.AttnSoftCap, err = optFloat("attn_logit_softcapping", 50); err != nil {
			return err
		}
		if c.FinalSoftCap, err = optFloat("final_logit_softcapping", 30); err != nil {
			return err
		}
		if !(c.AttnSoftCap > 0) || !(c.FinalSoftCap > 0) {
			return fmt.Errorf("gemma2 soft-capping values must be positive (attn_logit_softcapping %v, final_logit_softcapping %v)", c.AttnSoftCap, c.FinalSoftCap)
		}
	case "gemma3":
		// A sliding window only when the file gives one (local layers: 5 of 6).
		if c.SlidingWindow, err = opt("attention.sliding_window", 0); err != nil {
			return err
		}
		if c.SlidingWindow > 0 {
			if c.SWALayers, err = c.swaPattern(f, 6); err != nil {
				return err
			}
			if c.RopeBaseSWA, err = optFloat("rope.freq_base_swa", 10000); err != nil {
				return err
			}
		}
		if c.FinalSoftCap, err = optFloat("final_logit_softcapping", 0); err != nil {
			return err
		}
		if c.FinalSoftCap < 0 {
			return fmt.Errorf("key gemma3.final_logit_softcapping %v is negative", c.FinalSoftCap)
		}
	}
	if c.SWALayers != nil && !(c.RopeBaseSWA > 0) {
		return fmt.Errorf("rope.freq_base_swa %v is invalid", c.RopeBaseSWA)
	}

	// Experts.
	if c.NExpert, err = opt("expert_count", 0); err != nil {
		return err
	}
	if c.NExpertUsed, err = opt("expert_used_count", 0); err != nil {
		return err
	}
	switch {
	case c.NExpert == 0 && ai.moe == 2:
		return fmt.Errorf("key %s.expert_count is missing (required for %s)", arch, arch)
	case c.NExpert > 0 && ai.moe == 0:
		return fmt.Errorf("key %s.expert_count is %d, but Woolly runs %s only as a dense model", arch, c.NExpert, arch)
	}
	if c.NExpert > 0 {
		if c.NExpert > 512 {
			return fmt.Errorf("key %s.expert_count %d exceeds 512", arch, c.NExpert)
		}
		if c.NExpertUsed == 0 {
			return fmt.Errorf("key %s.expert_used_count is missing or 0 with expert_count %d", arch, c.NExpert)
		}
		if c.NExpertUsed > c.NExpert {
			return fmt.Errorf("key %s.expert_used_count %d exceeds expert_count %d", arch, c.NExpertUsed, c.NExpert)
		}
		defFFExp := c.NFF
		if arch == "qwen35moe" || arch == "qwen3next" { // llama.cpp: n_ff / n_expert_used when the key is absent
			defFFExp = c.NFF / c.NExpertUsed
		}
		if c.NFFExp, err = opt("expert_feed_forward_length", defFFExp); err != nil {
			return err
		}
		if c.NFFExp == 0 {
			return fmt.Errorf("key %s.expert_feed_forward_length is missing and feed_forward_length %d / expert_used_count %d is 0", arch, c.NFF, c.NExpertUsed)
		}
		if arch == "qwen35moe" || arch == "qwen3next" {
			if c.NFFShexp, err = opt("expert_shared_feed_forward_length", c.NFF); err != nil {
				return err
			}
		}
		c.ExpertWeightsNorm = true // every MoE graph Woolly runs renormalizes (llama.cpp norm_w)
		if c.ExpertWeightsScale, err = optFloat("expert_weights_scale", 0); err != nil {
			return err
		}
	} else if c.NExpertUsed > 0 {
		return fmt.Errorf("key %s.expert_used_count is %d without expert_count", arch, c.NExpertUsed)
	}
	if stype, _ := f.String(arch + ".rope.scaling.type"); stype == "yarn" {
		c.readYarn()
	}
	if arch == "gpt-oss" {
		return c.readGptOss(f, opt, optFloat)
	}
	return nil
}

// swaPattern reads {arch}.attention.sliding_window_pattern, a period n (layer
// il is local when il % n < n-1) or one boolean per layer, with default
// period def.
func (c *Config) swaPattern(f *loader.File, def int) ([]bool, error) {
	key := c.Arch + ".attention.sliding_window_pattern"
	out := make([]bool, c.NLayer)
	period := def
	if v, present := f.Get(key); present {
		arr, isArr := v.V.(loader.Array)
		bools, isBools := arr.Values.([]bool)
		if n, ok := f.Uint(key); ok && n <= 1<<20 {
			period = int(n)
		} else if isArr && isBools {
			if len(bools) != c.NLayer {
				return nil, fmt.Errorf("key %s has %d entries for %d layers", key, len(bools), c.NLayer)
			}
			copy(out, bools)
			return out, nil
		} else {
			return nil, fmt.Errorf("key %s is neither a layer period nor an array of booleans", key)
		}
	}
	for il := range out {
		out[il] = period == 0 || il%period < period-1
	}
	return out, nil
}

// KVDim is the width of one position of the K (or V) cache.
func (c *Config) KVDim() int { return c.NHeadKV * c.HeadDim }

// denseFF is the width of the dense feed-forward (0 for a mixture of
// experts, whose layers have no dense FFN).
func (c *Config) denseFF() int {
	if c.NExpert > 0 {
		return c.NFFShexp // the shared expert's width (0: none)
	}
	return c.NFF
}

// QDim is the width of the query projection.
func (c *Config) QDim() int { return c.NHead * c.HeadDim }

// dims lists the hyperparameters that fix the tensor shapes, by their GGUF
// keys, for errors about a tensor that contradicts them.
func (c *Config) dims() string {
	a := c.Arch
	s := fmt.Sprintf("%s.embedding_length %d, %s.attention.head_count %d, %s.attention.head_count_kv %d, head dim %d, %s.feed_forward_length %d",
		a, c.NEmbd, a, c.NHead, a, c.NHeadKV, c.HeadDim, a, c.NFF)
	if c.NExpert > 0 {
		s += fmt.Sprintf(", %s.expert_count %d, %s.expert_feed_forward_length %d", a, c.NExpert, a, c.NFFExp)
	}
	if c.NFFShexp > 0 {
		s += fmt.Sprintf(", %s.expert_shared_feed_forward_length %d", a, c.NFFShexp)
	}
	if c.hasRecurrent() {
		s += fmt.Sprintf(", %s.ssm.conv_kernel %d, ssm.state_size %d, ssm.group_count %d, ssm.time_step_rank %d",
			a, c.SSMConv, c.SSMState, c.SSMGroups, c.SSMVHeads)
	}
	return s
}

// requiredInt reads arch's integer key (after the architecture's prefix):
// present, an unsigned integer, and from 1 to max.
func requiredInt(f *loader.File, arch string, max uint64) func(key string) (int, error) {
	return func(key string) (int, error) {
		v, ok := f.Uint(arch + "." + key)
		if !ok {
			if _, present := f.Get(arch + "." + key); present {
				return 0, fmt.Errorf("key %s.%s is not a non-negative integer", arch, key)
			}
			return 0, fmt.Errorf("key %s.%s is missing", arch, key)
		}
		if v == 0 || v > max {
			return 0, fmt.Errorf("key %s.%s has invalid value %d", arch, key, v)
		}
		return int(v), nil
	}
}

// intKey is an integer metadata key (after the architecture's prefix) and
// the field it fills.
type intKey struct {
	key string
	dst *int
}

// readInts fills each key's field with what read gives for the key,
// stopping at the first error.
func readInts(read func(key string) (int, error), keys ...intKey) error {
	for _, k := range keys {
		v, err := read(k.key)
		if err != nil {
			return err
		}
		*k.dst = v
	}
	return nil
}

// readDeltaNet reads the keys of a Gated DeltaNet hybrid (qwen35) as
// llama.cpp does: the ssm.* sizes and rope.dimension_sections are required;
// attention.recurrent_layers (one boolean per block) says which layers are
// linear, else every full_attention_interval-th layer (default 4) is full
// attention and the others are linear.
func (c *Config) readDeltaNet(f *loader.File, req func(string) (int, error), opt func(string, int) (int, error)) error {
	arch := c.Arch
	err := readInts(req, intKey{"ssm.conv_kernel", &c.SSMConv}, intKey{"ssm.inner_size", &c.SSMInner},
		intKey{"ssm.state_size", &c.SSMState}, intKey{"ssm.time_step_rank", &c.SSMVHeads},
		intKey{"ssm.group_count", &c.SSMGroups})
	if err != nil {
		return err
	}
	if c.SSMConv > 64 || c.SSMState > 4096 || c.SSMVHeads > 4096 {
		return fmt.Errorf("key %s.ssm.conv_kernel %d, ssm.state_size %d or ssm.time_step_rank %d is implausibly large", arch, c.SSMConv, c.SSMState, c.SSMVHeads)
	}
	if c.SSMInner != c.SSMState*c.SSMVHeads {
		return fmt.Errorf("key %s.ssm.inner_size %d differs from ssm.state_size %d x ssm.time_step_rank %d", arch, c.SSMInner, c.SSMState, c.SSMVHeads)
	}
	if c.SSMVHeads%c.SSMGroups != 0 {
		return fmt.Errorf("key %s.ssm.time_step_rank %d is not a multiple of ssm.group_count %d", arch, c.SSMVHeads, c.SSMGroups)
	}

	if arch == "qwen3next" { // plain NeoX RoPE; grouped key heads
		c.DNGroupedHeads = true
		return c.readLayerKinds(f, opt)
	}
	// rope.dimension_sections: up to 4 integers (or one, repeated).
	key := arch + ".rope.dimension_sections"
	v, present := f.Get(key)
	if !present {
		return fmt.Errorf("key %s is missing (required for %s)", key, arch)
	}
	if n, ok := f.Uint(key); ok && n <= 1<<20 {
		c.RopeSections = [4]int{int(n), int(n), int(n), int(n)}
	} else if secs, ok := f.Int32s(key); ok && len(secs) <= 4 {
		for i, s := range secs {
			if s < 0 {
				return fmt.Errorf("key %s has a negative section %d", key, s)
			}
			c.RopeSections[i] = int(s)
		}
	} else {
		_ = v
		return fmt.Errorf("key %s is not an integer or an array of at most 4 integers", key)
	}
	sum := c.RopeSections[0] + c.RopeSections[1] + c.RopeSections[2] + c.RopeSections[3]
	if c.RopeSections[0]+c.RopeSections[1]+c.RopeSections[2] == 0 || sum > c.HeadDim {
		return fmt.Errorf("key %s %v is invalid for head dimension %d", key, c.RopeSections, c.HeadDim)
	}

	return c.readLayerKinds(f, opt)
}

// readLayerKinds reads which layers are linear attention:
// attention.recurrent_layers (one boolean per block), else every
// full_attention_interval-th layer (default 4) is full attention.
func (c *Config) readLayerKinds(f *loader.File, opt func(string, int) (int, error)) error {
	arch := c.Arch
	c.Recurrent = make([]bool, c.NLayer)
	nAll := c.NLayer + c.NLayerNextN
	rkey := arch + ".attention.recurrent_layers"
	if rv, present := f.Get(rkey); present {
		arr, isArr := rv.V.(loader.Array)
		bools, isBools := arr.Values.([]bool)
		if !isArr || !isBools || len(bools) != nAll {
			return fmt.Errorf("key %s must be an array of %d booleans (one per block)", rkey, nAll)
		}
		copy(c.Recurrent, bools[:c.NLayer])
	} else {
		interval, err := opt("full_attention_interval", 4)
		if err != nil {
			return err
		}
		for il := range c.Recurrent {
			c.Recurrent[il] = (il+1)%interval != 0
		}
	}
	c.AttnGate = true
	return nil
}

// isRecurrent reports whether layer il is a Gated DeltaNet layer.
func (c *Config) isRecurrent(il int) bool { return c.Recurrent != nil && c.Recurrent[il] }

// hasRecurrent reports whether the model keeps a recurrent state.
func (c *Config) hasRecurrent() bool { return c.Recurrent != nil }

// convChannels is the width of the linear layers' q|k|v stream.
func (c *Config) convChannels() int { return 2*c.SSMGroups*c.SSMState + c.SSMInner }
