package runtime

import (
	"fmt"
	"math"

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

	// Granite scales (1, 1, 1/sqrt(HeadDim), 1 for other archs).
	EmbeddingScale float32
	ResidualScale  float32
	KQScale        float32
	LogitScale     float32
}

// archInfo lists the architectures the forward pass implements.
var archInfo = map[string]struct{ neox bool }{
	"llama":   {neox: false},
	"granite": {neox: false},
	"qwen2":   {neox: true},
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
		return nil, fmt.Errorf("unknown architecture %q (supported: llama, qwen2, granite)", arch)
	}
	c := &Config{Arch: arch, RopeNeox: ai.neox}
	req := func(key string) (int, error) {
		v, ok := f.Uint(arch + "." + key)
		if !ok {
			if _, present := f.Get(arch + "." + key); present {
				return 0, fmt.Errorf("key %s.%s is not a non-negative integer", arch, key)
			}
			return 0, fmt.Errorf("key %s.%s is missing", arch, key)
		}
		if v == 0 || v > 1<<31 {
			return 0, fmt.Errorf("key %s.%s has invalid value %d", arch, key, v)
		}
		return int(v), nil
	}
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
	if c.NHead, err = req("attention.head_count"); err != nil {
		return nil, err
	}
	if c.NFF, err = req("feed_forward_length"); err != nil {
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
	return c, nil
}

// KVDim is the width of one position of the K (or V) cache.
func (c *Config) KVDim() int { return c.NHeadKV * c.HeadDim }

// QDim is the width of the query projection.
func (c *Config) QDim() int { return c.NHead * c.HeadDim }
