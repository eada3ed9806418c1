package quant

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/woolly-llm/woolly/kernels"
)

// FileType is llama.cpp's llama_ftype, stored as general.file_type.
type FileType uint32

// llama_ftype values (facts of the GGUF ecosystem).
const (
	FileF32    FileType = 0
	FileF16    FileType = 1
	FileQ4_0   FileType = 2
	FileQ4_1   FileType = 3
	FileQ8_0   FileType = 7
	FileQ5_0   FileType = 8
	FileQ5_1   FileType = 9
	FileQ4_K_S FileType = 14
	FileQ4_K_M FileType = 15
	FileQ5_K_S FileType = 16
	FileQ5_K_M FileType = 17
	FileQ6_K   FileType = 18
	FileBF16   FileType = 32
)

var fileTypes = []struct {
	ft   FileType
	name string
	def  kernels.Type
}{
	{FileF32, "F32", kernels.F32},
	{FileF16, "F16", kernels.F16},
	{FileBF16, "BF16", kernels.BF16},
	{FileQ4_0, "Q4_0", kernels.Q4_0},
	{FileQ4_1, "Q4_1", kernels.Q4_1},
	{FileQ5_0, "Q5_0", kernels.Q5_0},
	{FileQ5_1, "Q5_1", kernels.Q5_1},
	{FileQ8_0, "Q8_0", kernels.Q8_0},
	{FileQ4_K_S, "Q4_K_S", kernels.Q4_K},
	{FileQ4_K_M, "Q4_K_M", kernels.Q4_K},
	{FileQ5_K_S, "Q5_K_S", kernels.Q5_K},
	{FileQ5_K_M, "Q5_K_M", kernels.Q5_K},
	{FileQ6_K, "Q6_K", kernels.Q6_K},
}

// ParseFileType accepts names like "q4_k_m" or "Q8_0" (case-insensitive).
func ParseFileType(s string) (FileType, error) {
	for _, f := range fileTypes {
		if strings.EqualFold(f.name, s) {
			return f.ft, nil
		}
	}
	names := make([]string, len(fileTypes))
	for i, f := range fileTypes {
		names[i] = strings.ToLower(f.name)
	}
	return 0, fmt.Errorf("unknown file type %q (want one of %s)", s, strings.Join(names, ", "))
}

// String is llama.cpp's name of the file type ("Q4_K_M").
func (f FileType) String() string {
	for _, x := range fileTypes {
		if x.ft == f {
			return x.name
		}
	}
	return "ftype(" + strconv.Itoa(int(f)) + ")"
}

// DefaultType is the tensor type most weights get in a file of this type.
func (f FileType) DefaultType() kernels.Type {
	for _, x := range fileTypes {
		if x.ft == f {
			return x.def
		}
	}
	return kernels.F32
}

// TensorDesc describes an input tensor for type planning.
type TensorDesc struct {
	Name  string
	Type  kernels.Type // current type
	Shape []int64      // ne order: Shape[0] is the row length
}

// Choice is the planned output type of one tensor.
type Choice struct {
	Type     kernels.Type
	Quantize bool   // false: the tensor is copied unchanged (norms, biases, 1-D tensors)
	Note     string // why the type differs from the rule's first pick (row-length fallbacks)
}

// Plan picks every tensor's type the way llama-quantize does with its
// default rules and no importance matrix:
//
//   - only tensors of ≥ 2 dimensions whose name ends in "weight" (and not
//     "_norm.weight") are quantized; everything else keeps its type;
//   - output.weight, and token_embd.weight when there is no output.weight
//     (tied embeddings), become Q6_K (Q8_0 stays Q8_0; rows that are not a
//     whole number of the default type's blocks give Q8_0);
//   - Q4_K_M and Q5_K_M: attn_v and ffn_down are Q6_K on "use_more_bits"
//     layers: i < n/8, i ≥ 7n/8, or (i − n/8) % 3 == 2;
//     Q4_K_S: attn_v Q5_K for the first 4, ffn_down Q5_K for i < n/8;
//   - rows that are not a multiple of the chosen type's block size fall back:
//     Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, and to F16 when even 32 does
//     not divide the row.
//
// nLayer is {arch}.block_count (0: count the ffn_down tensors). Counters run
// in layer order, as llama.cpp's loader sorts tensors by layer number.
func Plan(ft FileType, tensors []TensorDesc, nLayer int) ([]Choice, error) {
	def := ft.DefaultType()
	out := make([]Choice, len(tensors))
	tied := true
	for _, t := range tensors {
		if t.Name == "output.weight" {
			tied = false
		}
	}
	// Layer-ordered counters for attn_v (and attn_qkv) and ffn_down.
	vIndex := layerRank(tensors, isAttnV)
	downIndex := layerRank(tensors, func(n string) bool { return strings.Contains(n, "ffn_down") })
	nV := len(vIndex)
	if nLayer <= 0 {
		nLayer = len(downIndex)
	}
	moreBits := func(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

	for k, t := range tensors {
		if !allowsQuantization(t) {
			out[k] = Choice{Type: t.Type}
			continue
		}
		c := Choice{Type: def, Quantize: true}
		if isQuantized(def) {
			nx := t.Shape[0]
			switch {
			case t.Name == "output.weight" || (tied && t.Name == "token_embd.weight"):
				if nx%int64(def.BlockElems()) != 0 {
					c.Type = kernels.Q8_0
				} else if def != kernels.Q8_0 {
					c.Type = kernels.Q6_K
				}
			case isAttnV(t.Name):
				i := vIndex[k]
				switch {
				case (ft == FileQ4_K_M || ft == FileQ5_K_M) && moreBits(i, nV):
					c.Type = kernels.Q6_K
				case ft == FileQ4_K_S && i < 4:
					c.Type = kernels.Q5_K
				}
			case strings.Contains(t.Name, "ffn_down"):
				i := downIndex[k]
				switch {
				case (ft == FileQ4_K_M || ft == FileQ5_K_M) && moreBits(i, nLayer):
					c.Type = kernels.Q6_K
				case ft == FileQ4_K_S && i < nLayer/8:
					c.Type = kernels.Q5_K
				}
			}
			c = fallback(t, c)
		}
		out[k] = c
	}
	return out, nil
}

func isQuantized(t kernels.Type) bool { return t.BlockElems() > 1 }

func isAttnV(name string) bool {
	return strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight") ||
		strings.Contains(name, "attn_kv_b.weight")
}

// allowsQuantization mirrors llama-quantize's choice of tensors to quantize.
func allowsQuantization(t TensorDesc) bool {
	dims := len(t.Shape)
	for dims > 1 && t.Shape[dims-1] == 1 {
		dims--
	}
	if dims < 2 || !strings.HasSuffix(t.Name, "weight") {
		return false
	}
	for _, s := range []string{"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel",
		"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "attn_rel_b.weight",
		".position_embd", ".rel_pos", ".patch_embd"} {
		if strings.Contains(t.Name, s) {
			return false
		}
	}
	return t.Name != "position_embd.weight" && t.Name != "token_types.weight"
}

// fallback replaces a type whose block size does not divide the row length.
func fallback(t TensorDesc, c Choice) Choice {
	nx := t.Shape[0]
	if nx%int64(c.Type.BlockElems()) == 0 {
		return c
	}
	from := c.Type
	switch c.Type {
	case kernels.Q4_K:
		c.Type = kernels.Q5_0
	case kernels.Q5_K:
		c.Type = kernels.Q5_1
	case kernels.Q6_K:
		c.Type = kernels.Q8_0
	default:
		c.Type = kernels.F16
	}
	if nx%int64(c.Type.BlockElems()) != 0 {
		c.Type = kernels.F16
	}
	c.Note = fmt.Sprintf("row length %d is not a multiple of %d: %v -> %v", nx, from.BlockElems(), from, c.Type)
	return c
}

// layerRank returns, for each tensor index whose name matches, its rank in
// llama-quantize's processing order (see WriteOrder).
func layerRank(tensors []TensorDesc, match func(string) bool) map[int]int {
	var idx []int
	for k, t := range tensors {
		if match(t.Name) {
			idx = append(idx, k)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return loaderLess(tensors[idx[a]].Name, tensors[idx[b]].Name) })
	r := make(map[int]int, len(idx))
	for i, k := range idx {
		r[k] = i
	}
	return r
}

// WriteOrder returns the indices of names in the order llama-quantize
// processes and writes tensors: llama.cpp's model loader keeps them in a map
// ordered by layer number (−1, i.e. first, for tensors outside "blk.N."),
// then by name, so the output file's tensor order is not the input's.
func WriteOrder(names []string) []int {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return loaderLess(names[idx[a]], names[idx[b]]) })
	return idx
}

func loaderLess(a, b string) bool {
	if la, lb := layerOf(a), layerOf(b); la != lb {
		return la < lb
	}
	return a < b
}

// layerOf reads the layer number of "blk.N..." the way llama.cpp's
// sscanf(name, "blk.%d.") does: an optionally signed run of digits after
// "blk." (−1 when there is none).
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	end := 0
	if end < len(rest) && (rest[end] == '-' || rest[end] == '+') {
		end++
	}
	digits := end
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	if end == digits {
		return -1
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return -1
	}
	return n
}
