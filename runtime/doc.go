// Package runtime runs GGUF language models on the CPU with the numerics of
// llama.cpp's CPU backend: the llama family and its relatives (llama and its
// mixtures of experts, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3,
// granite), the hybrid Gated DeltaNet models (qwen35, qwen35moe, qwen3next;
// deltanet.go), gpt-oss (gptoss.go, harmony.go), gemma4 (gemma4.go) and the
// embedding encoders (bert, nomic-bert, gemma-embedding; encoder.go).
// SupportedArchitectures lists them.
//
// Load maps a file and binds its tensors: weight matrices stay in the
// mapping and are multiplied in their stored format by the kernels package,
// each activation row converted once per op to the weight's activation type
// (Q8_K, Q8_0, F16 or F32) exactly as the reference build does. A Session
// holds the KV cache of one sequence; Eval appends tokens and returns logits.
// Generate samples a continuation (greedy, temperature, top-k, top-p, min-p,
// repetition penalties, stop strings, optionally constrained by a grammar
// from package grammar) and streams it token by token. Embed returns pooled
// hidden states (embed.go); Perplexity reproduces llama-perplexity's figure.
//
// Continuous batching (batch.go): the sessions of one Batch that generate
// at the same time step together, one forward pass per step for all of
// them, each sequence getting the same bits as alone.
//
// The forward pass lives in forward.go, written top to bottom like
// llama2.c's run.c (mixture-of-experts layers in moe.go); architecture
// differences are switches of Config (config.go). Matrix products and
// attention are split across a persistent pool of workers (pool.go: one per
// physical core by default, the caller included) that claim chunks of rows,
// one kernel call per chunk.
//
// Exactness: besides the activation quantization, the places where llama.cpp's
// CPU backend rounds differently from textbook math are reproduced in
// numerics.go and attention.go: f16 K/V cache values, the two flash-attention
// paths (f16 accumulation below 64 query rows, tiled f32 above; see
// AttentionMode), glibc's expf/sinf/cosf, ggml's vectorised exp in SiLU and
// the compiler's fused multiply-adds in RoPE. With kernels that sum in
// ggml's order, logits of the reference models match llama.cpp to ~1e-7.
//
// The prefix cache (caches.go), one per loaded model, shared by its sessions:
// the prefix KV cache (LoadOptions.PrefixCache, default 256 MiB) keeps
// Session.Snapshot copies of recent sequences, and every Generate restores
// the longest one sharing a prefix with its prompt (when longer than what
// the session holds) and evaluates only the rest; the logits are the same
// bits as evaluating the same batches from scratch. Model.CacheStats reports
// it. Weights stay as the file stores them (or packed, LoadOptions.Pack):
// there is no dequantized-weight cache (docs/caches.md says why).
//
// A minimal program:
//
//	m, err := runtime.Load("model.gguf", runtime.LoadOptions{})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer m.Close()
//	res, err := m.Generate(context.Background(), runtime.GenerateOptions{
//		Prompt:    "Once upon a time",
//		MaxTokens: 32,
//		Sampler:   runtime.SamplerOptions{Temperature: 0}, // greedy
//	}, func(t runtime.Token) error {
//		fmt.Print(t.Text)
//		return nil
//	})
package runtime
