package loader

import "github.com/woolly-llm/woolly/ggml"

// FileType returns general.file_type and its llama.cpp name ("Q4_K_M", from
// ggml.FileTypeName; "" for an unknown value); ok is false if the key is
// absent or not a non-negative integer.
func (f *File) FileType() (ft uint64, name string, ok bool) {
	ft, ok = f.Uint("general.file_type")
	if !ok {
		return 0, "", false
	}
	return ft, ggml.FileTypeName(ft), true
}
