package loader

import "fmt"

// ggmlTypeNames names every ggml type id (facts of the format), including the
// ones Woolly cannot read, so that errors can say what a file holds.
var ggmlTypeNames = map[uint32]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
	22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
	29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}

func unsupportedType(id uint32) string {
	if name, ok := ggmlTypeNames[id]; ok {
		return fmt.Sprintf("tensor type %s (id %d) is not supported", name, id)
	}
	return fmt.Sprintf("unknown tensor type id %d", id)
}

// fileTypeNames maps general.file_type (llama_ftype) to its llama.cpp name.
var fileTypeNames = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// FileTypeName is the llama.cpp name of a general.file_type value ("Q4_K_M"),
// or "" for an unknown value.
func FileTypeName(ft uint64) string { return fileTypeNames[ft] }

// FileType returns general.file_type and its name ("Q4_K_M"); ok is false if
// the key is absent or not a non-negative integer.
func (f *File) FileType() (ft uint64, name string, ok bool) {
	ft, ok = f.Uint("general.file_type")
	if !ok {
		return 0, "", false
	}
	return ft, FileTypeName(ft), true
}
