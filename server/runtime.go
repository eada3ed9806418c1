package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime"
)

// RuntimeBackend serves models with Woolly's runtime.
type RuntimeBackend struct {
	// ContextLength caps every model's context (0: the runtime's default).
	ContextLength int
}

// Inspect reads the metadata of a GGUF file without loading its weights.
func (b RuntimeBackend) Inspect(path string) (ModelMeta, error) {
	f, err := loader.Open(path)
	if err != nil {
		return ModelMeta{}, err
	}
	defer f.Close()
	arch := f.Architecture()
	meta := ModelMeta{Architecture: arch}
	if n, ok := f.Uint(arch + ".context_length"); ok {
		meta.ContextLength = int(n)
	}
	meta.ChatTemplate, _ = f.String("tokenizer.chat_template")
	_, meta.FileType, _ = f.FileType()
	for _, t := range f.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		meta.NParams += n
	}
	return meta, nil
}

// Load prepares a model for generation.
func (b RuntimeBackend) Load(path string, threads int) (Model, error) {
	m, err := runtime.Load(path, runtime.LoadOptions{Threads: threads, ContextLength: b.ContextLength})
	if err != nil {
		return nil, err
	}
	info, tok := m.Info(), m.Tokenizer()
	meta := ModelMeta{Architecture: info.Architecture, ContextLength: info.ContextLength, NParams: info.NParams,
		FileType: info.FileType, ChatTemplate: info.ChatTemplate, AddBOS: tok.AddBOS()}
	if id := tok.BOS(); id >= 0 {
		meta.BOSText = tok.TokenText(id)
	}
	if id := tok.EOS(); id >= 0 {
		meta.EOSText = tok.TokenText(id)
	}
	return &runtimeModel{m: m, meta: meta}, nil
}

// runtimeModel adapts *runtime.Model. It keeps one session so that a
// conversation's next turn reuses the KV cache of the shared prefix; the
// server never runs two generations on one model at once.
type runtimeModel struct {
	m    *runtime.Model
	meta ModelMeta
	sess *runtime.Session
}

func (r *runtimeModel) Meta() ModelMeta { return r.meta }
func (r *runtimeModel) Close() error    { return r.m.Close() }

func (r *runtimeModel) Generate(ctx context.Context, req GenerateRequest, onText func(string) error) (*GenerateResult, error) {
	tok := r.m.Tokenizer()
	ids, err := tok.Encode(req.Prompt, tok.AddBOS(), true)
	if err != nil {
		return nil, badRequest("tokenizing the prompt: %v", err)
	}
	if len(ids) == 0 {
		return nil, badRequest("empty prompt")
	}
	nctx := req.NumCtx
	if nctx == 0 {
		nctx = r.m.Info().DefaultCtx
	}
	if len(ids) >= nctx {
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("prompt has %d tokens; the context holds %d", len(ids), nctx)}
	}
	if r.sess == nil || r.sess.NCtx() != nctx {
		if r.sess, err = r.m.NewSession(nctx); err != nil {
			return nil, err
		}
	}
	o := runtime.GenerateOptions{Tokens: ids, MaxTokens: req.MaxTokens, Stop: req.Stop,
		Sampler: runtime.SamplerOptions{Temperature: req.Temperature, TopP: req.TopP, MinP: req.MinP,
			RepeatPenalty: req.RepeatPenalty, FrequencyPenalty: req.FrequencyPenalty,
			PresencePenalty: req.PresencePenalty, TopK: req.TopK, RepeatLastN: req.RepeatLastN, Seed: req.Seed}}
	res, err := r.sess.Generate(ctx, o, func(t runtime.Token) error { return onText(t.Text) })
	if err != nil && res == nil {
		r.sess = nil // its cache may be half-written
		return nil, err
	}
	out := &GenerateResult{PromptTokens: len(res.PromptTokens), Tokens: len(res.Tokens), StopReason: res.StopReason,
		PromptDuration: res.PromptDuration, GenDuration: res.GenDuration}
	if err != nil {
		r.sess = nil
	}
	return out, err
}
