package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// A small gpt-oss-shaped f32 file quantized as MXFP4_MOE: the expert
// tensor becomes MXFP4 with the bytes of Quantize over its rows, the 2-D
// weights Q8_0, norms and the router stay f32, and the output reopens with
// general.file_type 38 and dequantizes.
func TestQuantizeFileMXFP4MoE(t *testing.T) {
	rng := rand.New(rand.NewSource(39))
	f32 := func(n int) ([]float32, []byte) {
		x := make([]float32, n)
		b := make([]byte, 4*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 0.02
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x[i]))
		}
		return x, b
	}
	w := loader.NewWriter()
	w.SetString("general.architecture", "gpt-oss")
	w.SetUint32("gpt-oss.block_count", 1)
	w.SetUint32("gpt-oss.expert_count", 4)
	w.SetUint32("general.file_type", 0)
	tensors := []struct {
		name  string
		shape []int64
	}{
		{"token_embd.weight", []int64{64, 50}},
		{"output_norm.weight", []int64{64}},
		{"output.weight", []int64{64, 50}},
		{"blk.0.attn_q.weight", []int64{64, 64}},
		{"blk.0.ffn_gate_inp.weight", []int64{64, 4}},
		{"blk.0.ffn_up_exps.weight", []int64{64, 32, 4}},
	}
	vals := map[string][]float32{}
	for _, tn := range tensors {
		n := 1
		for _, d := range tn.shape {
			n *= int(d)
		}
		x, b := f32(n)
		vals[tn.name] = x
		require.NoError(t, w.AddTensor(tn.name, ggml.F32, tn.shape, b))
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.gguf"), filepath.Join(dir, "out.gguf")
	fh, err := os.Create(in)
	require.NoError(t, err)
	_, err = w.WriteTo(fh)
	require.NoError(t, err)
	require.NoError(t, fh.Close())

	ft, err := ParseFileType("mxfp4")
	require.NoError(t, err)
	_, err = QuantizeFile(in, out, ft, FileOptions{Threads: 2})
	require.NoError(t, err)

	f, err := loader.Open(out)
	require.NoError(t, err)
	defer f.Close()
	want := map[string]ggml.Type{"token_embd.weight": ggml.Q8_0, "output_norm.weight": ggml.F32,
		"output.weight": ggml.Q8_0, "blk.0.attn_q.weight": ggml.Q8_0, "blk.0.ffn_gate_inp.weight": ggml.F32,
		"blk.0.ffn_up_exps.weight": ggml.MXFP4}
	for name, ty := range want {
		ti, ok := f.Tensor(name)
		require.True(t, ok, name)
		require.Equal(t, ty, ti.Type, name)
	}
	fileType, name, ok := f.FileType()
	require.True(t, ok)
	require.Equal(t, uint64(38), fileType)
	require.Equal(t, "MXFP4_MOE", name)

	ti, _ := f.Tensor("blk.0.ffn_up_exps.weight")
	exp := make([]byte, 4*32*34)
	require.NoError(t, Quantize(ggml.MXFP4, vals["blk.0.ffn_up_exps.weight"], 64, exp, 1))
	require.Equal(t, exp, f.Data(ti))
	back := make([]float32, 64*32*4)
	kernels.Dequant(ggml.MXFP4, f.Data(ti), back)
	for i, v := range vals["blk.0.ffn_up_exps.weight"] {
		require.InDelta(t, v, back[i], 0.02, "element %d", i)
	}
}

// A block that would get the reserved exponent 255 stops QuantizeFile with
// an error naming the tensor, as llama-quantize's validation stops it; no
// output is left behind.
func TestQuantizeFileMXFP4ReservedExponent(t *testing.T) {
	x := make([]float32, 64*2*2)
	x[200] = float32(math.Ldexp(1.25, -126)) // expert 1, row 1, block 0
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	w := loader.NewWriter()
	w.SetString("general.architecture", "gpt-oss")
	require.NoError(t, w.AddTensor("blk.0.ffn_down_exps.weight", ggml.F32, []int64{64, 2, 2}, b))
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.gguf"), filepath.Join(dir, "out.gguf")
	require.NoError(t, w.WriteFile(in))
	_, err := QuantizeFile(in, out, FileMXFP4_MOE, FileOptions{Threads: 1})
	require.ErrorContains(t, err, "blk.0.ffn_down_exps.weight")
	require.ErrorContains(t, err, "reserved exponent 255")
	_, statErr := os.Stat(out)
	require.True(t, os.IsNotExist(statErr), "output left behind: %v", statErr)
}

// QuantizeFile as mxfp4 writes llama-quantize's file byte for byte: the
// sha256 of `llama-quantize --allow-requantize SRC OUT MXFP4_MOE 2` (the
// reference commit's quantize tool built against its AVX2 build, see
// testdata/mxfp4/README.md) for two shared MoE models.
func TestQuantizeFileMXFP4MatchesLlamaQuantize(t *testing.T) {
	for _, c := range []struct{ src, sha string }{
		{"synth-qwen3moe-mini-Q4_K_M.gguf", "42233abc0eed8f74989d20a7c327ef5be13fd2dad635cc2b2332d01793b14dea"},
		{"synth-mixtral-mini-Q4_K_M.gguf", "bc564e99e3a4cff8afc2806226ca456da25375d3fb5a7b1cabf2ff6f23c31dbb"},
	} {
		in := sharedModel(t, c.src)
		out := filepath.Join(t.TempDir(), "mxfp4.gguf")
		_, err := QuantizeFile(in, out, FileMXFP4_MOE, FileOptions{Threads: 2, AllowRequantize: true})
		require.NoError(t, err)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		require.Equal(t, c.sha, hex.EncodeToString(sum[:]), "%s as MXFP4_MOE is not llama-quantize's file", c.src)
	}
}
