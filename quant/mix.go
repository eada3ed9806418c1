package quant

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/woolly-llm/woolly/ggml"
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
	FileQ2_K   FileType = 10
	FileQ3_K_S FileType = 11
	FileQ3_K_M FileType = 12
	FileQ3_K_L FileType = 13
	FileQ4_K_S FileType = 14
	FileQ4_K_M FileType = 15
	FileQ5_K_S FileType = 16
	FileQ5_K_M FileType = 17
	FileQ6_K   FileType = 18
	FileIQ4_NL FileType = 25
	FileIQ4_XS FileType = 30
	FileBF16   FileType = 32
	// MXFP4_MOE: expert (3-D) weights MXFP4, every other quantized tensor Q8_0.
	FileMXFP4_MOE FileType = 38
)

// fileTypes are the file types Woolly writes, with the tensor type most
// weights get; their names are ggml.FileTypeName's (the one table).
var fileTypes = []struct {
	ft  FileType
	def ggml.Type
}{
	{FileF32, ggml.F32},
	{FileF16, ggml.F16},
	{FileBF16, ggml.BF16},
	{FileQ4_0, ggml.Q4_0},
	{FileQ4_1, ggml.Q4_1},
	{FileQ5_0, ggml.Q5_0},
	{FileQ5_1, ggml.Q5_1},
	{FileQ8_0, ggml.Q8_0},
	{FileQ2_K, ggml.Q2_K},
	{FileQ3_K_S, ggml.Q3_K},
	{FileQ3_K_M, ggml.Q3_K},
	{FileQ3_K_L, ggml.Q3_K},
	{FileIQ4_NL, ggml.IQ4_NL},
	{FileIQ4_XS, ggml.IQ4_XS},
	{FileQ4_K_S, ggml.Q4_K},
	{FileQ4_K_M, ggml.Q4_K},
	{FileQ5_K_S, ggml.Q5_K},
	{FileQ5_K_M, ggml.Q5_K},
	{FileQ6_K, ggml.Q6_K},
	{FileMXFP4_MOE, ggml.MXFP4},
}

// fileTypeAliases are llama-quantize's short names for the _M mixes, and
// "mxfp4" for MXFP4_MOE (the one file type with MXFP4 tensors).
var fileTypeAliases = map[string]FileType{"Q3_K": FileQ3_K_M, "Q4_K": FileQ4_K_M, "Q5_K": FileQ5_K_M,
	"MXFP4": FileMXFP4_MOE}

// ParseFileType accepts names like "q4_k_m" or "Q8_0" (case-insensitive),
// llama-quantize's aliases q3_k, q4_k and q5_k for the _M mixes, and mxfp4
// for mxfp4_moe.
func ParseFileType(s string) (FileType, error) {
	for _, f := range fileTypes {
		if strings.EqualFold(f.ft.String(), s) {
			return f.ft, nil
		}
	}
	if ft, ok := fileTypeAliases[strings.ToUpper(s)]; ok {
		return ft, nil
	}
	names := make([]string, len(fileTypes))
	for i, f := range fileTypes {
		names[i] = strings.ToLower(f.ft.String())
	}
	return 0, fmt.Errorf("unknown file type %q (want one of %s)", s, strings.Join(names, ", "))
}

// String is llama.cpp's name of the file type ("Q4_K_M").
func (f FileType) String() string {
	if name := ggml.FileTypeName(uint64(f)); name != "" {
		return name
	}
	return "ftype(" + strconv.Itoa(int(f)) + ")"
}

// DefaultType is the tensor type most weights get in a file of this type.
func (f FileType) DefaultType() ggml.Type {
	for _, x := range fileTypes {
		if x.ft == f {
			return x.def
		}
	}
	return ggml.F32
}

// TensorDesc describes an input tensor for type planning.
type TensorDesc struct {
	Name  string
	Type  ggml.Type // current type
	Shape []int64   // ne order: Shape[0] is the row length
}

// Choice is the planned output type of one tensor.
type Choice struct {
	Type     ggml.Type
	Quantize bool   // false: the tensor is copied unchanged (norms, biases, 1-D tensors)
	Note     string // why the type differs from the rule's first pick (row-length fallbacks)
}

// Model holds the hyperparameters llama-quantize's type rules look at.
type Model struct {
	Arch    string // general.architecture
	NLayer  int    // {arch}.block_count (0: count the ffn_down tensors)
	NHead   int    // {arch}.attention.head_count (of layer 0)
	NHeadKV int    // {arch}.attention.head_count_kv (0: absent, = NHead)
	NExpert int    // {arch}.expert_count (0: none)
}

// gqa is llama.cpp's n_gqa(): query heads per KV head (0 when unknown).
func (m Model) gqa() int {
	kv := m.NHeadKV
	if kv <= 0 {
		kv = m.NHead
	}
	if kv <= 0 {
		return 0
	}
	return m.NHead / kv
}

// is70B is llama.cpp's LLM_TYPE_70B, the one model size its rules single
// out (attn_v gets Q5_K instead of Q3_K/Q4_K): 80-layer llama with grouped
// KV heads (and not 8 experts), deci, olmo and qwen2, and 68-layer jais2.
func (m Model) is70B() bool {
	switch m.Arch {
	case "llama":
		return m.NExpert != 8 && m.NLayer == 80 && m.gqa() != 1
	case "deci", "olmo", "qwen2":
		return m.NLayer == 80
	case "jais2":
		return m.NLayer == 68
	}
	return false
}

// category is llama-quantize's tensor_category: the role a tensor's name
// gives it, tested in this order.
type category int

const (
	catOther category = iota
	catOutput
	catTokenEmbd
	catAttnV // attn_v, attn_qkv and attn_kv_b: the "attn_v-like" tensors
	catAttnK
	catAttnQ
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
)

// categoryNames are the name fragments of the categories after output and
// token_embd, in the order llama-quantize tests them.
var categoryNames = []struct {
	sub string
	cat category
}{
	{"attn_qkv.weight", catAttnV}, {"attn_kv_b.weight", catAttnV}, {"attn_v.weight", catAttnV},
	{"attn_k.weight", catAttnK}, {"attn_q.weight", catAttnQ}, {"attn_output.weight", catAttnOutput},
	{"ffn_up", catFFNUp}, {"ffn_gate", catFFNGate}, {"ffn_down", catFFNDown},
}

func categoryOf(name string) category {
	switch name {
	case "output.weight":
		return catOutput
	case "token_embd.weight", "per_layer_token_embd.weight":
		return catTokenEmbd
	}
	for _, c := range categoryNames {
		if strings.Contains(name, c.sub) {
			return c.cat
		}
	}
	return catOther
}

// Plan picks every tensor's type the way llama-quantize does with its
// default rules and no importance matrix (llama_tensor_get_type):
//
//   - only tensors of ≥ 2 dimensions whose name ends in "weight" (and not
//     "_norm.weight", routers and a few other small tensors) are quantized;
//     everything else keeps its type;
//   - output.weight, and token_embd.weight when there is no output.weight
//     (tied embeddings), become Q6_K (Q8_0 stays Q8_0; rows that are not a
//     whole number of the default type's blocks, and falcon, give Q8_0);
//   - attn_v (and attn_qkv, attn_kv_b), counted in layer order i of n:
//     Q2_K: Q4_K with GQA ≥ 4, else Q3_K; Q3_K_M: Q5_K for i < 2, else Q4_K;
//     Q3_K_L: Q5_K; IQ4_NL, IQ4_XS: Q5_K with GQA ≥ 4; Q4_K_M, Q5_K_M: Q6_K
//     on "use_more_bits" layers (i < n/8, i ≥ 7n/8, or (i − n/8) % 3 == 2);
//     Q4_K_S: Q5_K for i < 4; then a 70B model's Q3_K/Q4_K become Q5_K and
//     8-expert models get Q8_0;
//   - attn_k: Q8_0 for 8-expert models;
//   - ffn_down of layer i of n: Q2_K: Q3_K; Q3_K_M: Q5_K for i < n/16, else
//     Q4_K; Q3_K_L: Q5_K; Q4_K_M, Q5_K_M: Q6_K on use_more_bits layers;
//     IQ4_NL, IQ4_XS, Q4_K_S: Q5_K for i < n/8 (falcon has its own rules);
//   - attn_output: Q2_K: Q3_K; Q3_K_M: Q4_K; Q3_K_L: Q5_K; with 8 experts
//     Q5_K for Q2_K, Q3_K_S/M, Q4_K_S/M, IQ4_NL and IQ4_XS;
//   - MXFP4_MOE: output.weight (and tied token_embd) Q8_0; tensors with a
//     third dimension > 1 (the stacked experts) MXFP4 (for bailingmoe3 only
//     its ffn_up/gate/down ones); every other quantized tensor Q8_0; none of
//     the rules above apply;
//   - rows that are not a multiple of the chosen type's block size fall back:
//     IQ4_XS → IQ4_NL, Q2_K/Q3_K → Q4_0, Q4_K → Q5_0, Q5_K → Q5_1,
//     Q6_K → Q8_0, and to F16 when even 32 does not divide the row.
//
// Counters run in llama-quantize's processing order (WriteOrder). With more
// than one expert, ffn_down's layer is read from its name instead.
func Plan(ft FileType, tensors []TensorDesc, m Model) ([]Choice, error) {
	def := ft.DefaultType()
	out := make([]Choice, len(tensors))
	tied := true
	for _, t := range tensors {
		if categoryOf(t.Name) == catOutput {
			tied = false
		}
	}
	// Counters for attn_v-like tensors and ffn_down, in processing order.
	vIndex := layerRank(tensors, func(n string) bool { return categoryOf(n) == catAttnV })
	downIndex := layerRank(tensors, func(n string) bool { return categoryOf(n) == catFFNDown })
	nV := len(vIndex)
	nLayer := m.NLayer
	if nLayer <= 0 {
		nLayer = len(downIndex)
	}
	falcon := m.Arch == "falcon"
	moreBits := func(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

	for k, t := range tensors {
		if !allowsQuantization(t) {
			out[k] = Choice{Type: t.Type}
			continue
		}
		c := Choice{Type: def, Quantize: true}
		if !isQuantized(def) {
			out[k] = c
			continue
		}
		nx := t.Shape[0]
		cat := categoryOf(t.Name)
		switch {
		case ft == FileMXFP4_MOE:
			c.Type = ggml.Q8_0
			expert := len(t.Shape) > 2 && t.Shape[2] > 1
			if m.Arch == "bailingmoe3" && cat != catFFNUp && cat != catFFNGate && cat != catFFNDown {
				expert = false
			}
			if expert && cat != catOutput && !(tied && cat == catTokenEmbd) {
				c.Type = ggml.MXFP4
			}
		case cat == catOutput || (tied && cat == catTokenEmbd):
			if falcon || nx%int64(def.BlockElems()) != 0 {
				c.Type = ggml.Q8_0
			} else if def != ggml.Q8_0 {
				c.Type = ggml.Q6_K
			}
		case cat == catAttnV:
			c.Type = attnVType(ft, c.Type, vIndex[k], nV, m)
		case cat == catAttnK:
			if m.NExpert == 8 {
				c.Type = ggml.Q8_0
			}
		case cat == catFFNDown:
			i, n := downIndex[k], nLayer
			if m.NExpert > 1 {
				i = layerOf(t.Name)
				if i < 0 || i >= n {
					return nil, fmt.Errorf("quant: %s: layer %d outside [0, %d)", t.Name, i, n)
				}
			}
			switch {
			case ft == FileQ2_K:
				c.Type = ggml.Q3_K
			case ft == FileQ3_K_M:
				switch {
				case i < n/16:
					c.Type = ggml.Q5_K
				case !falcon || moreBits(i, n):
					c.Type = ggml.Q4_K
				default:
					c.Type = ggml.Q3_K
				}
			case ft == FileQ3_K_L:
				c.Type = ggml.Q5_K
				if falcon {
					c.Type = ggml.Q4_K
				}
			case ft == FileQ4_K_M && falcon:
				switch {
				case i < n/16:
					c.Type = ggml.Q6_K
				case moreBits(i, n):
					c.Type = ggml.Q5_K
				}
			case (ft == FileQ4_K_M || ft == FileQ5_K_M) && moreBits(i, n):
				c.Type = ggml.Q6_K
			case (ft == FileIQ4_NL || ft == FileIQ4_XS) && i < n/8:
				c.Type = ggml.Q5_K
			case ft == FileQ4_K_S && !falcon && i < n/8:
				c.Type = ggml.Q5_K
			}
		case cat == catAttnOutput:
			switch {
			case falcon:
				if ft == FileQ3_K_L {
					c.Type = ggml.Q4_K
				}
			case m.NExpert == 8:
				switch ft {
				case FileQ2_K, FileQ3_K_S, FileQ3_K_M, FileIQ4_NL, FileQ4_K_S, FileQ4_K_M, FileIQ4_XS:
					c.Type = ggml.Q5_K
				}
			case ft == FileQ2_K:
				c.Type = ggml.Q3_K
			case ft == FileQ3_K_M:
				c.Type = ggml.Q4_K
			case ft == FileQ3_K_L:
				c.Type = ggml.Q5_K
			}
		}
		out[k] = fallback(t, c)
	}
	return out, nil
}

// attnVType is the attn_v rule for the i-th of n attn_v-like tensors.
func attnVType(ft FileType, ty ggml.Type, i, n int, m Model) ggml.Type {
	moreBits := i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
	switch {
	case ft == FileQ2_K:
		ty = ggml.Q3_K
		if m.gqa() >= 4 {
			ty = ggml.Q4_K
		}
	case ft == FileQ3_K_M:
		ty = ggml.Q4_K
		if i < 2 {
			ty = ggml.Q5_K
		}
	case ft == FileQ3_K_L:
		ty = ggml.Q5_K
	case (ft == FileIQ4_NL || ft == FileIQ4_XS) && m.gqa() >= 4:
		ty = ggml.Q5_K
	case (ft == FileQ4_K_M || ft == FileQ5_K_M) && moreBits:
		ty = ggml.Q6_K
	case ft == FileQ4_K_S && i < 4:
		ty = ggml.Q5_K
	}
	if m.is70B() && (ty == ggml.Q3_K || ty == ggml.Q4_K) {
		ty = ggml.Q5_K
	}
	if m.NExpert == 8 {
		ty = ggml.Q8_0
	}
	return ty
}

func isQuantized(t ggml.Type) bool { return t.BlockElems() > 1 }

// allowsQuantization mirrors llama-quantize's choice of tensors to quantize
// (tensor_allows_quantization).
func allowsQuantization(t TensorDesc) bool {
	dims := len(t.Shape)
	for dims > 1 && t.Shape[dims-1] == 1 {
		dims--
	}
	if dims < 2 || !strings.HasSuffix(t.Name, "weight") {
		return false
	}
	for _, s := range []string{"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
		"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
		"indexer.q_proj.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
		"sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"} {
		if strings.Contains(t.Name, s) {
			return false
		}
	}
	for _, s := range []string{"first", "w0", "w1", "w2", "v0", "v1", "v2", "a0", "a1", "a2", "g1", "g2",
		"decay_w1", "decay_w2", "lerp_fused"} {
		if strings.Contains(t.Name, "time_mix_"+s+".weight") {
			return false // RWKV's small 2-D weights
		}
	}
	return t.Name != "position_embd.weight" && t.Name != "token_types.weight"
}

// fallback replaces a type whose block size does not divide the row length
// (llama-quantize's tensor_type_fallback).
func fallback(t TensorDesc, c Choice) Choice {
	nx := t.Shape[0]
	if nx%int64(c.Type.BlockElems()) == 0 {
		return c
	}
	from := c.Type
	switch c.Type {
	case ggml.IQ4_XS:
		c.Type = ggml.IQ4_NL
	case ggml.Q2_K, ggml.Q3_K:
		c.Type = ggml.Q4_0
	case ggml.Q4_K:
		c.Type = ggml.Q5_0
	case ggml.Q5_K:
		c.Type = ggml.Q5_1
	case ggml.Q6_K:
		c.Type = ggml.Q8_0
	default:
		c.Type = ggml.F16
	}
	if nx%int64(c.Type.BlockElems()) != 0 {
		c.Type = ggml.F16
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
