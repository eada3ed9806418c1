package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/synth"
)

func runSynth(args []string, stdout, stderr io.Writer) error {
	names := strings.Join(synth.PresetNames(), ", ")
	fs := newFlagSet("synth", stderr,
		"usage: woolly synth --preset "+strings.ReplaceAll(names, ", ", "|")+" [--type T] [--vocab VOCAB.gguf] [--seed N] -o FILE",
		"Writes a model with random weights (std 1/sqrt(fan_in)) and a real model's shapes; same flags, same bytes.")
	presetName := fs.String("preset", "", "model shape: "+names)
	typeName := fs.String("type", "q4_k_m", "file type: q4_k_m, q5_k_m, q6_k, q8_0, q4_0, f16, ...")
	vocabPath := fs.String("vocab", "", "copy the tokenizer.* keys from this GGUF (default: a built-in byte-level vocabulary)")
	seed := fs.Uint64("seed", 1, "random seed")
	outPath := fs.String("o", "", "output GGUF file (required)")
	threads := fs.Int("t", 0, "threads (0 = all CPUs)")
	noBar := fs.Bool("no-progress", false, "no progress output (default: a bar on a terminal, a line every 5 s otherwise)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *outPath == "" || *presetName == "" {
		fs.Usage()
		return errUsage
	}
	p, err := synth.FindPreset(*presetName)
	if err != nil {
		return usageError(fs, "--preset: %v", err)
	}
	ft, err := quant.ParseFileType(*typeName)
	if err != nil {
		return usageError(fs, "--type: %v", err)
	}
	if err := checkThreads(fs, *threads); err != nil {
		return err
	}
	if err := checkOutputDir(*outPath); err != nil {
		return fmt.Errorf("-o %s: %v", *outPath, err)
	}
	start := time.Now()
	bar := newProgress(stderr, "synthesizing "+p.Name, *noBar)
	res, err := synth.WriteFile(*outPath, synth.Options{Preset: p, Type: ft, VocabPath: *vocabPath, Seed: *seed,
		Threads: *threads, Progress: bar.update})
	bar.finish()
	if err != nil {
		return err
	}
	if res.Preset.Vocab != p.Vocab {
		fmt.Fprintf(stderr, "synth: vocabulary %s has %d tokens; the model gets %d rows instead of the preset's %d\n",
			*vocabPath, res.Preset.Vocab, res.Preset.Vocab, p.Vocab)
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s, %.3fB parameters, %d tensors (%s), %.1f MiB, seed %d, %.1fs\n",
		*outPath, p.Name, ft, float64(res.Params)/1e9, res.Tensors, typeCounts(res.Types),
		float64(res.Bytes)/(1<<20), *seed, time.Since(start).Seconds())
	return nil
}
