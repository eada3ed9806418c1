package tokenizer

import (
	"fmt"

	"github.com/woolly-llm/woolly/loader"
)

// VocabFromGGUF reads the tokenizer.* metadata of a GGUF file.
func VocabFromGGUF(f *loader.File) (*Vocab, error) {
	if f == nil {
		return nil, fmt.Errorf("tokenizer: nil GGUF file")
	}
	v := &Vocab{IDs: map[string]int64{}, Flags: map[string]bool{}}
	var ok bool
	if v.Model, ok = f.String("tokenizer.ggml.model"); !ok {
		return nil, fmt.Errorf("tokenizer: %s: missing or non-string tokenizer.ggml.model", f.Path)
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	v.Name, _ = f.String("general.name")
	if _, present := f.Get("tokenizer.ggml.tokens"); !present {
		return nil, fmt.Errorf("tokenizer: %s: cannot find tokenizer vocab (tokenizer.ggml.tokens)", f.Path)
	}
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, fmt.Errorf("tokenizer: %s: tokenizer.ggml.tokens is not a string array", f.Path)
	}
	if _, present := f.Get("tokenizer.ggml.scores"); present {
		if v.Scores, ok = f.Float32s("tokenizer.ggml.scores"); !ok {
			return nil, fmt.Errorf("tokenizer: %s: tokenizer.ggml.scores is not a numeric array", f.Path)
		}
	}
	if _, present := f.Get("tokenizer.ggml.token_type"); present {
		if v.Types, ok = f.Int32s("tokenizer.ggml.token_type"); !ok {
			return nil, fmt.Errorf("tokenizer: %s: tokenizer.ggml.token_type is not an int32 array", f.Path)
		}
	}
	if _, present := f.Get("tokenizer.ggml.merges"); present {
		if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return nil, fmt.Errorf("tokenizer: %s: tokenizer.ggml.merges is not a string array", f.Path)
		}
	}
	for _, k := range []string{"bos_token_id", "eos_token_id", "eot_token_id", "eom_token_id", "unknown_token_id",
		"seperator_token_id", "padding_token_id", "mask_token_id", "fim_pre_token_id", "fim_suf_token_id",
		"fim_mid_token_id", "fim_pad_token_id", "fim_rep_token_id", "fim_sep_token_id", "prefix_token_id",
		"suffix_token_id", "middle_token_id"} {
		if _, present := f.Get("tokenizer.ggml." + k); !present {
			continue
		}
		// llama.cpp reads these as uint32; a negative or huge value is a
		// "bad special token" and keeps the default, as does -1 here.
		if id, ok := f.Int("tokenizer.ggml." + k); ok {
			v.IDs[k] = id
		} else {
			v.IDs[k] = -1
		}
	}
	for _, k := range []string{"add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix",
		"normalizer.lowercase", "normalizer.strip_accents"} {
		if b, ok := f.Bool("tokenizer.ggml." + k); ok {
			v.Flags[k] = b
		}
	}
	return v, nil
}

// FromGGUF builds the tokenizer described by a GGUF file's metadata.
func FromGGUF(f *loader.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, f.Path)
	}
	return t, nil
}
