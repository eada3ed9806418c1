package quant

import (
	"math"

	"github.com/woolly-llm/woolly/loader"
)

// ModelOf reads the hyperparameters Plan needs from a GGUF file's metadata.
// Head counts given per layer (arrays) are taken from layer 0, as llama.cpp's
// n_gqa() does.
func ModelOf(f *loader.File) Model {
	arch := f.Architecture()
	get := func(key string) int {
		if n, ok := f.Uint(arch + "." + key); ok && n <= math.MaxInt32 {
			return int(n)
		}
		if a, ok := f.Int32s(arch + "." + key); ok && len(a) > 0 && a[0] > 0 {
			return int(a[0])
		}
		return 0
	}
	return Model{
		Arch:    arch,
		NLayer:  get("block_count"),
		NHead:   get("attention.head_count"),
		NHeadKV: get("attention.head_count_kv"),
		NExpert: get("expert_count"),
	}
}
