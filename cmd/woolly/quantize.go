package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
)

func init() {
	register("quantize", "quantize a GGUF model (q4_k_m, q5_k_m, q6_k, q8_0, q3_k_m, iq4_xs, ...) like llama-quantize", runQuantize)
}

// quantChunkElems bounds the float32 buffer used per tensor while
// streaming (16M values = 64 MiB), so a 7B model never sits in memory.
const quantChunkElems = 16 << 20

func runQuantize(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("quantize", stderr)
	threads := fs.Int("t", 0, "threads (0 = all CPUs)")
	noBar := fs.Bool("no-progress", false, "do not draw a progress bar")
	allowReq := fs.Bool("allow-requantize", false, "allow quantized input tensors (quality suffers)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: woolly quantize [flags] IN.gguf OUT.gguf TYPE")
		fmt.Fprintln(fs.Output(), "TYPE: q4_k_m q5_k_m q6_k q8_0 q4_0 (also q2_k q3_k_s q3_k_m q3_k_l iq4_nl iq4_xs")
		fmt.Fprintln(fs.Output(), "      q4_k_s q5_k_s q5_0 q5_1 q4_1 f16 bf16 f32; q3_k, q4_k, q5_k = the _m mixes)")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		fs.Usage()
		return errUsage
	}
	inPath, outPath := pos[0], pos[1]
	ft, err := quant.ParseFileType(pos[2])
	if err != nil {
		return err
	}
	if *threads <= 0 {
		*threads = runtime.NumCPU()
	}
	start := time.Now()

	in, err := loader.Open(inPath)
	if err != nil {
		return err
	}
	defer in.Close()

	descs := make([]quant.TensorDesc, len(in.Tensors))
	for i, t := range in.Tensors {
		descs[i] = quant.TensorDesc{Name: t.Name, Type: t.Type, Shape: t.Shape}
	}
	plan, err := quant.Plan(ft, descs, quant.ModelOf(in))
	if err != nil {
		return err
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

	var totalIn, totalOut int64
	var notes []string
	counts := map[kernels.Type]int{}
	var bar *progressbar.ProgressBar // created once the total is known; used at write time
	names := make([]string, len(in.Tensors))
	for i, t := range in.Tensors {
		names[i] = t.Name
	}
	// Tensors are written in llama-quantize's order, so the file can be
	// byte-identical to its output.
	for _, i := range quant.WriteOrder(names) {
		t := &in.Tensors[i]
		c := plan[i]
		counts[c.Type]++
		totalIn += t.Size
		if c.Note != "" {
			notes = append(notes, t.Name+": "+c.Note)
		}
		src := in.Data(t)
		if !c.Quantize || c.Type == t.Type {
			totalOut += t.Size
			err = w.AddTensorFunc(t.Name, t.Type, t.Shape, func(out io.Writer) error {
				_, err := out.Write(src)
				bar.Add64(int64(len(src)))
				return err
			})
		} else {
			if isQuantType(t.Type) && !*allowReq {
				return fmt.Errorf("tensor %s is already %v; pass --allow-requantize to requantize it to %v", t.Name, t.Type, c.Type)
			}
			rb, err := c.Type.RowBytes(t.Shape[0])
			if err != nil {
				return fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			totalOut += rb * t.Rows()
			err = w.AddTensorFunc(t.Name, c.Type, t.Shape, func(out io.Writer) error {
				return convertTensor(out, t, src, c.Type, *threads, bar)
			})
		}
		if err != nil {
			return err
		}
	}
	bar = newBar(stderr, totalOut, "quantizing", *noBar)
	if err := w.WriteFile(outPath); err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintln(stderr)

	// Summary.
	fmt.Fprintf(stdout, "quantized %s -> %s as %s in %.1fs\n", inPath, outPath, ft, time.Since(start).Seconds())
	fmt.Fprintf(stdout, "size: %.2f MiB -> %.2f MiB (tensor data)\n", float64(totalIn)/(1<<20), float64(totalOut)/(1<<20))
	var types []kernels.Type
	for ty := range counts {
		types = append(types, ty)
	}
	sort.Slice(types, func(a, b int) bool { return types[a] < types[b] })
	var parts []string
	for _, ty := range types {
		parts = append(parts, fmt.Sprintf("%v x%d", ty, counts[ty]))
	}
	fmt.Fprintf(stdout, "tensor types: %s\n", strings.Join(parts, ", "))
	if len(notes) > 0 {
		// Group identical reasons: "row length 64 is not a multiple of 256: Q4_K -> Q5_0 (29 tensors)".
		var order []string
		byReason := map[string][]string{}
		for _, n := range notes {
			name, reason, _ := strings.Cut(n, ": ")
			if _, ok := byReason[reason]; !ok {
				order = append(order, reason)
			}
			byReason[reason] = append(byReason[reason], name)
		}
		fmt.Fprintf(stdout, "%d tensors fell back as llama-quantize does (Woolly writes Q5_1/Q4_1 itself; no Q8_0 substitution):\n", len(notes))
		for _, r := range order {
			names := byReason[r]
			ex := strings.Join(names[:min(2, len(names))], ", ")
			if len(names) > 2 {
				ex += ", ..."
			}
			fmt.Fprintf(stdout, "  %s: %d tensors (%s)\n", r, len(names), ex)
		}
	}
	return nil
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

func isQuantType(t kernels.Type) bool { return t.BlockElems() > 1 }

// convertTensor streams tensor t (bytes src) to out as type dst, in chunks
// of whole rows.
func convertTensor(out io.Writer, t *loader.TensorInfo, src []byte, dst kernels.Type, threads int, bar *progressbar.ProgressBar) error {
	rowLen := int(t.Shape[0])
	nrows := int(t.Rows())
	inRB := int(t.RowBytes())
	outRB64, err := dst.RowBytes(int64(rowLen))
	if err != nil {
		return err
	}
	outRB := int(outRB64)
	chunkRows := max(1, quantChunkElems/rowLen)
	f := make([]float32, min(nrows, chunkRows)*rowLen)
	q := make([]byte, min(nrows, chunkRows)*outRB)
	for r0 := 0; r0 < nrows; r0 += chunkRows {
		n := min(chunkRows, nrows-r0)
		fx, qx := f[:n*rowLen], q[:n*outRB]
		if err := toF32(t.Type, src[r0*inRB:(r0+n)*inRB], fx, threads); err != nil {
			return fmt.Errorf("reading %s: %w", t.Name, err)
		}
		if err := quant.Quantize(dst, fx, rowLen, qx, threads); err != nil {
			return err
		}
		if _, err := out.Write(qx); err != nil {
			return err
		}
		bar.Add64(int64(len(qx)))
	}
	return nil
}

// toF32 converts tensor bytes of type t to float32.
func toF32(t kernels.Type, src []byte, dst []float32, threads int) error {
	switch t {
	case kernels.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case kernels.F16:
		for i := range dst {
			dst[i] = quant.F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case kernels.BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	default:
		return kernels.Dequant(t, src, dst)
	}
	return nil
}

// newBar returns a progress bar over n bytes drawn on stderr (invisible
// when hidden is set).
func newBar(stderr io.Writer, n int64, desc string, hidden bool) *progressbar.ProgressBar {
	return progressbar.NewOptions64(n,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetVisibility(!hidden),
		progressbar.OptionSetPredictTime(true),
	)
}

// parseInterspersed parses flags that may appear before, between or after
// positional arguments and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
