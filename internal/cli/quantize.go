package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/quant"
)

func runQuantize(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("quantize", stderr,
		"usage: woolly quantize [flags] IN.gguf OUT.gguf TYPE",
		"TYPE: q4_k_m q5_k_m q6_k q8_0 q4_0 (also q2_k q3_k_s q3_k_m q3_k_l iq4_nl iq4_xs",
		"      q4_k_s q5_k_s q5_0 q5_1 q4_1 f16 bf16 f32; q3_k, q4_k, q5_k = the _m mixes;",
		"      mxfp4 = mxfp4_moe: MoE expert tensors MXFP4, the other weights Q8_0)")
	threads := fs.Int("t", 0, "threads (0 = all CPUs)")
	noBar := fs.Bool("no-progress", false, "no progress output (default: a bar on a terminal, a line every 5 s otherwise)")
	allowReq := fs.Bool("allow-requantize", false, "allow quantized input tensors (quality suffers)")
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
		return usageError(fs, "TYPE: %v", err)
	}
	if err := checkThreads(fs, *threads); err != nil {
		return err
	}
	if err := checkOutputDir(outPath); err != nil {
		return fmt.Errorf("OUT %s: %v", outPath, err)
	}
	start := time.Now()
	bar := newProgress(stderr, "quantizing", *noBar)
	sum, err := quant.QuantizeFile(inPath, outPath, ft, quant.FileOptions{
		Threads: *threads, AllowRequantize: *allowReq, Progress: bar.update})
	bar.finish()
	if err != nil {
		return err
	}

	// Summary.
	fmt.Fprintf(stdout, "quantized %s -> %s as %s in %.1fs\n", inPath, outPath, ft, time.Since(start).Seconds())
	fmt.Fprintf(stdout, "size: %.2f MiB -> %.2f MiB (tensor data)\n", float64(sum.BytesIn)/(1<<20), float64(sum.BytesOut)/(1<<20))
	fmt.Fprintf(stdout, "tensor types: %s\n", typeCounts(sum.Types))
	if notes := sum.Notes; len(notes) > 0 {
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

// typeCounts lists the tensors per type ("Q4_K x12, Q6_K x2"), types in order.
func typeCounts(counts map[kernels.Type]int) string {
	var types []kernels.Type
	for ty := range counts {
		types = append(types, ty)
	}
	sort.Slice(types, func(a, b int) bool { return types[a] < types[b] })
	var parts []string
	for _, ty := range types {
		parts = append(parts, fmt.Sprintf("%v x%d", ty, counts[ty]))
	}
	return strings.Join(parts, ", ")
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
