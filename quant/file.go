package quant

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// FileOptions control QuantizeFile.
type FileOptions struct {
	// Threads quantizing each chunk (0: every CPU).
	Threads int
	// AllowRequantize permits already-quantized input tensors (quality
	// suffers: the second rounding compounds the first).
	AllowRequantize bool
	// Progress, if set, is called as tensor data is written, with the bytes
	// written so far and the total; from the writing goroutine.
	Progress func(done, total int64)
}

// FileSummary describes what QuantizeFile wrote.
type FileSummary struct {
	BytesIn, BytesOut int64             // tensor data
	Types             map[ggml.Type]int // tensors written per type
	// Notes are llama-quantize's type fallbacks, "tensor: reason".
	Notes []string
}

// ChunkElems bounds the float32 buffer used per tensor while streaming
// (16M values = 64 MiB), so a 7B model never sits in memory.
const ChunkElems = 16 << 20

// QuantizeFile writes inPath requantized to ft at outPath the way
// llama-quantize does (no importance matrix): the same tensor types, order,
// metadata and bytes. The output is written to a temporary file in the same
// directory and renamed at the end, so a crash leaves no half file under
// outPath; an output that is the input file (same path, a link to it) is
// refused.
func QuantizeFile(inPath, outPath string, ft FileType, o FileOptions) (*FileSummary, error) {
	if err := loader.CheckNotSameFile(inPath, outPath); err != nil {
		return nil, err
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	in, err := loader.Open(inPath)
	if err != nil {
		return nil, err
	}
	defer in.Close()

	descs := make([]TensorDesc, len(in.Tensors))
	names := make([]string, len(in.Tensors))
	for i, t := range in.Tensors {
		descs[i] = TensorDesc{Name: t.Name, Type: t.Type, Shape: t.Shape}
		names[i] = t.Name
	}
	plan, err := Plan(ft, descs, ModelOf(in))
	if err != nil {
		return nil, err
	}

	w := loader.NewWriter()
	for _, kv := range in.KV {
		if !replacedKeys[kv.Key] {
			w.Set(kv.Key, kv.Value)
		}
	}
	// llama-quantize sets these two by removing the key and appending it, so
	// they come last, in this order, whatever their place in the input.
	w.SetUint32("general.quantization_version", 2)
	w.SetUint32("general.file_type", uint32(ft))

	sum := &FileSummary{Types: map[ggml.Type]int{}}
	var done int64
	progress := func(n int) {
		done += int64(n)
		if o.Progress != nil {
			o.Progress(done, sum.BytesOut)
		}
	}
	// Tensors are written in llama-quantize's order, so the file can be
	// byte-identical to its output.
	for _, i := range WriteOrder(names) {
		t := &in.Tensors[i]
		c := plan[i]
		sum.Types[c.Type]++
		sum.BytesIn += t.Size
		if c.Note != "" {
			sum.Notes = append(sum.Notes, t.Name+": "+c.Note)
		}
		src := in.Data(t)
		if !c.Quantize || c.Type == t.Type {
			sum.BytesOut += t.Size
			err = w.AddTensorFunc(t.Name, t.Type, t.Shape, func(out io.Writer) error {
				_, err := out.Write(src)
				progress(len(src))
				return err
			})
		} else {
			if t.Type.BlockElems() > 1 && !o.AllowRequantize {
				return nil, fmt.Errorf("tensor %s is already %v; allow requantizing (--allow-requantize) to make it %v", t.Name, t.Type, c.Type)
			}
			rb, rerr := c.Type.RowBytes(t.Shape[0])
			if rerr != nil {
				return nil, fmt.Errorf("tensor %s: %w", t.Name, rerr)
			}
			sum.BytesOut += rb * t.Rows()
			err = w.AddTensorFunc(t.Name, c.Type, t.Shape, func(out io.Writer) error {
				return convertTensor(out, t, src, c.Type, threads, progress)
			})
		}
		if err != nil {
			return nil, err
		}
	}
	if err := w.WriteFile(outPath); err != nil {
		return nil, err
	}
	return sum, nil
}

// replacedKeys are the input's metadata keys llama-quantize does not copy
// as they are: the two it rewrites at the end and the split keys it drops
// (Woolly writes a single file).
var replacedKeys = map[string]bool{
	"general.quantization_version": true,
	"general.file_type":            true,
	"split.no":                     true,
	"split.count":                  true,
	"split.tensors.count":          true,
}

// convertTensor streams tensor t (bytes src) to out as type dst, in chunks
// of whole rows.
func convertTensor(out io.Writer, t *loader.TensorInfo, src []byte, dst ggml.Type, threads int, progress func(int)) error {
	rowLen := int(t.Shape[0])
	nrows := int(t.Rows())
	inRB := int(t.RowBytes())
	outRB64, err := dst.RowBytes(int64(rowLen))
	if err != nil {
		return err
	}
	outRB := int(outRB64)
	chunkRows := max(1, ChunkElems/rowLen)
	f := make([]float32, min(nrows, chunkRows)*rowLen) // [chunk rows][rowLen]
	q := make([]byte, min(nrows, chunkRows)*outRB)     // [chunk rows][outRB]
	for r0 := 0; r0 < nrows; r0 += chunkRows {
		n := min(chunkRows, nrows-r0)
		fx, qx := f[:n*rowLen], q[:n*outRB]
		if err := ToF32(t.Type, src[r0*inRB:(r0+n)*inRB], fx); err != nil {
			return fmt.Errorf("reading %s: %w", t.Name, err)
		}
		if err := Quantize(dst, fx, rowLen, qx, threads); err != nil {
			return fmt.Errorf("quantizing %s (rows %d..%d): %w", t.Name, r0, r0+n-1, err)
		}
		if _, err := out.Write(qx); err != nil {
			return err
		}
		progress(len(qx))
	}
	return nil
}

// ToF32 converts tensor bytes of type t to float32 (F32, F16 and BF16
// exactly; the block types through their dequantization). A type with no
// conversion or a source shorter than dst's elements is an error.
func ToF32(t ggml.Type, src []byte, dst []float32) error {
	if !t.Known() || t == ggml.Q8_K {
		return fmt.Errorf("no conversion from %v to f32", t)
	}
	if need, err := t.RowBytes(int64(len(dst))); err != nil {
		return err
	} else if int64(len(src)) < need {
		return fmt.Errorf("%v source has %d bytes, %d elements need %d", t, len(src), len(dst), need)
	}
	switch t {
	case ggml.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case ggml.F16:
		for i := range dst {
			dst[i] = ggml.F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case ggml.BF16:
		for i := range dst {
			dst[i] = ggml.BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	default:
		kernels.Dequant(t, src, dst)
	}
	return nil
}
