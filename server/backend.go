package server

import (
	"context"
	"time"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
	"github.com/woolly-llm/woolly/runtime/gbnf"
	"github.com/woolly-llm/woolly/runtime/grammar"
)

// Backend loads and inspects model files. RuntimeBackend is the real one.
type Backend interface {
	// Load opens a model file for generation; threads 0 means the default.
	Load(path string, threads int) (Model, error)
	// Inspect reads a model file's metadata without preparing it for inference.
	Inspect(path string) (ModelMeta, error)
}

// Model is what the server needs from a loaded model. The server runs up to
// Config.Parallel Generate calls at once per Model; a Model serves them
// together (the runtime's batch) or one after another.
type Model interface {
	Meta() ModelMeta
	// Generate continues req.Prompt; onText receives the generated text piece
	// by piece (pieces may be empty). An error from onText ends the generation.
	Generate(ctx context.Context, req GenerateRequest, onText func(string) error) (*GenerateResult, error)
	Close() error
}

// ModelMeta describes a model file.
type ModelMeta struct {
	Architecture  string
	ContextLength int   // training context
	NParams       int64 // number of weights
	FileType      string
	ChatTemplate  string // "" when the file has none
	// ChatFormat, when set, is a built-in chat format (chat.BuiltinNames)
	// used instead of ChatTemplate: the server's Config.ChatTemplate.
	ChatFormat string
	// Tokenizer facts needed to render chat templates (set by Load, may be
	// empty from Inspect).
	BOSText, EOSText string
	// CountTokens, when set, counts a prompt's tokens (BOS included) and
	// DefaultCtx is the context a request without num_ctx gets: chat
	// requests longer than the context drop their oldest turns to fit.
	CountTokens func(prompt string) (int, error)
	DefaultCtx  int
	// MaxCtx is the largest context (num_ctx) a request may ask for: the
	// server's -c when set, else the model's training context (0: the
	// larger of ContextLength and DefaultCtx). A larger request is a 400
	// before any KV cache is made.
	MaxCtx int
	// MaxTokenBytes is the most prompt bytes one token stands for (the
	// vocabulary's longest token text): a prompt of more than
	// context × MaxTokenBytes bytes cannot fit and is refused before it is
	// tokenized (0: no such check).
	MaxTokenBytes int
	// KVBytesPerPos is the memory one context position of a generation's
	// KV cache takes (0: unknown): the server sizes its slots by it.
	KVBytesPerPos int64
	// NVocab is the vocabulary size (0: unknown): top_k may not exceed it.
	NVocab int
	// EmbeddingLength is the values of one embedding the model computes
	// (0: unknown): it bounds the inputs of one embedding request.
	EmbeddingLength int
	AddBOS          bool
	// FIM holds the texts of the fill-in-the-middle tokens (prefix,
	// suffix, middle) when the model has them: a request's suffix is
	// answered with an infill prompt.
	FIM *[3]string
	// Embedding: the file sets {arch}.pooling_type (an embedding model).
	Embedding bool
	// EmbeddingOnly: an encoder (BERT-style) model that cannot generate
	// text; generation requests get a 400.
	EmbeddingOnly bool
	// Tokenize and Piece, when set (by Load), serve llama-server's
	// /tokenize and /detokenize: text to ids, and one id's bytes (false
	// when out of range).
	Tokenize func(text string, addSpecial, parseSpecial bool) ([]int32, error)
	Piece    func(id int32) ([]byte, bool)
}

// GenerateRequest is one generation with its sampling settings.
type GenerateRequest struct {
	Prompt string
	// PromptIDs, when set, is the prompt as token ids, evaluated as they
	// are (no BOS added); Prompt is then unused.
	PromptIDs []int32
	MaxTokens int // -1: until end of generation or the context is full
	// The sampler settings (temperature, top-k/p, min-p, penalties, seed):
	// runtime's type, so defaults and range checks have one source.
	runtime.SamplerOptions
	Stop   []string
	NumCtx int // 0: the model's default
	// OnLogprob, when set, receives every generated token's log-probability
	// and its TopLogprobs most likely alternatives (runtime.GenerateOptions'
	// Logprobs), just before the token's text goes to onText.
	OnLogprob   func(chosen runtime.TokenLogprob, top []runtime.TokenLogprob)
	TopLogprobs int
	// Grammar, when set, constrains the output to its JSON documents
	// (structured output: Ollama's format, OpenAI's response_format).
	Grammar *grammar.Grammar
	// GBNF, when set, constrains the output to a GBNF grammar
	// (llama-server's grammar field).
	GBNF *gbnf.Grammar
	// Literal: a raw completion (no chat template): the output text stays
	// as the tokens spell it (runtime.GenerateOptions.Literal).
	Literal bool
}

// GenerateResult is the outcome of a generation.
type GenerateResult struct {
	PromptTokens, Tokens int
	StopReason           string // "stop", "length" or "cancel"
	StopString           string // the stop string that ended it ("" for any other end)
	CachedTokens         int    // prompt tokens reused from a cache, not evaluated
	PromptDuration       time.Duration
	GenDuration          time.Duration
}

// defaultRequest holds the sampling defaults (runtime.DefaultSamplerOptions,
// llama.cpp's, as `woolly run`).
func defaultRequest() GenerateRequest {
	return GenerateRequest{MaxTokens: -1, SamplerOptions: runtime.DefaultSamplerOptions()}
}

// template is the chat template requests to this model are rendered with.
func (m ModelMeta) template() (*chat.Template, error) {
	if m.ChatFormat != "" {
		return chat.Builtin(m.ChatFormat, m.BOSText, m.EOSText)
	}
	return chat.New(m.ChatTemplate, m.BOSText, m.EOSText)
}

// templateText is the template as /api/show and /props report it: the
// Jinja text, or the built-in format's name.
func (m ModelMeta) templateText() string {
	if m.ChatFormat != "" {
		return m.ChatFormat
	}
	return m.ChatTemplate
}
