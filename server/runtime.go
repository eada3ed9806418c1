package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

// RuntimeBackend serves models with Woolly's runtime.
type RuntimeBackend struct {
	// ContextLength caps every model's context (0: the runtime's default).
	ContextLength int
	// PrefixCache is each model's prefix KV cache budget in bytes (nil: the
	// runtime's default, runtime.DefaultPrefixCache; 0: off). It lets
	// a request that shares a prefix with an earlier one (another
	// conversation's turn, a common system prompt) evaluate only its new
	// tokens.
	PrefixCache *int64
	// Caches, if set, gathers the cache statistics of the models this
	// backend loads, for Server.RegisterStats.
	Caches *CacheStats
	// CacheTypeK and CacheTypeV are the KV cache types of every model
	// (runtime.LoadOptions.CacheTypeK/V: "f16", the default, "q8_0",
	// "q4_0"). A quantized cache takes less memory a position, so the
	// automatic slot count (Config.KVBudget) grows with it.
	CacheTypeK, CacheTypeV string
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
	if n, ok := f.Uint(arch + ".context_length"); ok && n <= 1<<31 {
		meta.ContextLength = int(n)
	}
	meta.ChatTemplate, _ = f.String("tokenizer.chat_template")
	if tok, err := tokenizer.FromGGUF(f); err == nil { // no tokenizer: no infill
		meta.setTokenizer(tok)
	}
	_, meta.Embedding = f.Get(arch + ".pooling_type")
	meta.EmbeddingOnly = runtime.IsEncoderArchitecture(arch)
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

// setTokenizer fills in what meta offers through tok: infill texts,
// tokenizing and token pieces (an id outside the vocabulary has none).
func (meta *ModelMeta) setTokenizer(tok *tokenizer.Tokenizer) {
	meta.FIM = fimTexts(tok)
	meta.Tokenize = tok.Encode
	meta.Piece = func(id int32) ([]byte, bool) {
		if id < 0 || int(id) >= tok.NumTokens() {
			return nil, false
		}
		return tok.Piece(id), true
	}
}

// Load prepares a model for generation.
func (b RuntimeBackend) Load(path string, threads int) (Model, error) {
	lo := runtime.LoadOptions{Threads: threads, ContextLength: b.ContextLength,
		PrefixCache: b.PrefixCache, CacheTypeK: b.CacheTypeK, CacheTypeV: b.CacheTypeV}
	m, err := runtime.Load(path, lo)
	if err != nil {
		return nil, err
	}
	info, tok := m.Info(), m.Tokenizer()
	meta := ModelMeta{Architecture: info.Architecture, ContextLength: info.ContextLength, NParams: info.NParams,
		FileType: info.FileType, ChatTemplate: info.ChatTemplate, AddBOS: tok.AddBOS(), DefaultCtx: info.DefaultCtx,
		Embedding: m.Config().Pooling != runtime.PoolingDefault, MaxCtx: maxContext(b.ContextLength, info.ContextLength, info.DefaultCtx),
		MaxTokenBytes: tok.MaxTokenBytes(), NVocab: info.NVocab, KVBytesPerPos: m.KVBytesPerPosition(),
		EmbeddingLength: m.Config().NEmbd,
		CountTokens: func(p string) (int, error) {
			ids, err := tok.Encode(p, tok.AddBOS(), true)
			return len(ids), err
		}}
	meta.EmbeddingOnly = m.IsEmbeddingOnly()
	meta.setTokenizer(tok)
	if id := tok.BOS(); id >= 0 {
		meta.BOSText = tok.TokenText(id)
	}
	if id := tok.EOS(); id >= 0 {
		meta.EOSText = tok.TokenText(id)
	}
	batch, err := m.NewBatch(runtime.BatchOptions{})
	if err != nil {
		m.Close()
		return nil, err
	}
	b.Caches.add(m)
	return &runtimeModel{m: m, batch: batch, meta: meta, caches: b.Caches}, nil
}

// maxContext is the largest context a request may ask for: the server's
// cap when set, else the model's training context (or its default context
// when that is larger or the file does not say).
func maxContext(cap, train, def int) int {
	if cap > 0 {
		return cap
	}
	return max(train, def)
}

func fimTexts(tok *tokenizer.Tokenizer) *[3]string {
	if pre, suf, mid, ok := tok.FIMTexts(); ok {
		return &[3]string{pre, suf, mid}
	}
	return nil
}

// runtimeModel adapts *runtime.Model. Its generations run as sessions of
// one runtime.Batch, so the server's concurrent requests for the model
// decode together. The batch owns the sessions (Acquire, Release): a
// conversation's next turn, through any API, evaluates only the tokens
// after the longest prefix an idle session or the prefix cache holds.
type runtimeModel struct {
	m      *runtime.Model
	batch  *runtime.Batch
	meta   ModelMeta
	caches *CacheStats

	kvTokens atomic.Int64 // positions the running generations' KV caches hold
}

// KVTokens implements KVReporter.
func (r *runtimeModel) KVTokens() int64 { return r.kvTokens.Load() }

func (r *runtimeModel) Meta() ModelMeta { return r.meta }

func (r *runtimeModel) Close() error {
	r.caches.remove(r.m)
	return r.m.Close()
}

func (r *runtimeModel) Generate(ctx context.Context, req GenerateRequest, onText func(string) error) (*GenerateResult, error) {
	// The request's options, checked before any work (the file, context
	// and prompt checks are the runtime's, in Acquire).
	o := runtime.GenerateOptions{MaxTokens: req.MaxTokens, Stop: req.Stop, NCtx: req.NumCtx,
		Sampler: req.SamplerOptions, Logprobs: req.OnLogprob != nil, TopLogprobs: req.TopLogprobs,
		Grammar: req.Grammar, GBNF: req.GBNF, Literal: req.Literal}
	if err := o.Validate(); err != nil {
		return nil, requestErr(err)
	}
	if r.m.IsEmbeddingOnly() {
		return nil, errEmbeddingOnly(r.m.Info().Name)
	}
	nctx := req.NumCtx
	if nctx == 0 {
		nctx = r.m.Info().DefaultCtx
	}
	ids, err := r.promptIDs(ctx, req, nctx)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The runtime owns the sessions: the idle one sharing the longest
	// prefix with ids, the prefix cache behind it (in Generate).
	sess, err := r.batch.Acquire(ids, nctx)
	if err != nil {
		return nil, requestErr(err)
	}
	held := int64(len(ids))
	r.kvTokens.Add(held)
	defer func() { r.kvTokens.Add(-held) }()
	o.Tokens = ids
	res, err := sess.Generate(ctx, o, func(t runtime.Token) error {
		held++
		r.kvTokens.Add(1)
		if req.OnLogprob != nil && t.Logprob != nil {
			req.OnLogprob(*t.Logprob, t.TopLogprobs)
		}
		return onText(t.Text)
	})
	if err != nil && res == nil {
		return nil, requestErr(err) // the session is dropped: its cache may be half-written
	}
	out := &GenerateResult{PromptTokens: len(res.PromptTokens), Tokens: len(res.Tokens), StopReason: res.StopReason,
		StopString: res.StopString, CachedTokens: res.CachedTokens, PromptDuration: res.PromptDuration, GenDuration: res.GenDuration}
	if err == nil {
		r.batch.Release(sess)
	}
	return out, err
}

// promptIDs is the request's prompt as token ids: its ids (checked against
// the vocabulary), or its text tokenized.
func (r *runtimeModel) promptIDs(ctx context.Context, req GenerateRequest, nctx int) ([]int32, error) {
	if req.PromptIDs != nil {
		if err := checkPrompt(r.meta, "prompt", completionPrompt{ids: req.PromptIDs}, nctx); err != nil {
			return nil, err
		}
		return slices.Clone(req.PromptIDs), nil
	}
	if err := checkPromptBytes(r.meta, "the prompt", len(req.Prompt), nctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tok := r.m.Tokenizer()
	ids, err := tok.Encode(req.Prompt, tok.AddBOS(), true)
	if err != nil {
		return nil, badRequest("tokenizing the prompt: %v", err)
	}
	return ids, nil
}

// requestErr answers an error about the request (runtime.ErrRequest) with
// a 400; others pass as they are.
func requestErr(err error) error {
	if errors.Is(err, runtime.ErrRequest) {
		return badRequest("%v", err)
	}
	return err
}

// CacheStats gathers the cache statistics of every model a RuntimeBackend
// loads: Prefix sums the counters of the loaded models plus
// those of models already unloaded (hits, misses, evictions, time saved ...)
// and report what the loaded models hold now (entries, bytes, budget).
// Register them with Server.RegisterStats. A nil *CacheStats ignores models.
type CacheStats struct {
	mu      sync.Mutex
	live    map[*runtime.Model]struct{}
	retired map[string]float64 // the prefix cache counters of unloaded models
}

// NewCacheStats returns an empty collector.
func NewCacheStats() *CacheStats {
	return &CacheStats{live: map[*runtime.Model]struct{}{},
		retired: map[string]float64{}}
}

func (c *CacheStats) add(m *runtime.Model) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[m] = struct{}{}
}

func (c *CacheStats) remove(m *runtime.Model) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.live[m]; !ok {
		return
	}
	delete(c.live, m)
	for k, v := range prefixStats(m) {
		if cumulativeStat[k] {
			c.retired[k] += v
		}
	}
}

// cumulativeStat marks the counters that keep counting after a model is
// unloaded; the others (entries, bytes, peak_bytes, budget) describe what
// is held now.
var cumulativeStat = map[string]bool{
	"hits": true, "misses": true, "loads": true, "shared": true, "load_errors": true, "evictions": true,
	"rejected": true, "uncacheable": true, "load_time_seconds": true, "time_saved_seconds": true,
	"tokens_looked_up": true, "tokens_reused": true,
}

// prefixStats flattens a model's prefix cache statistics (nil when it is off).
func prefixStats(m *runtime.Model) map[string]float64 {
	if cs := m.CacheStats(); cs.PrefixEnabled {
		return StatsMap(cs.Prefix)
	}
	return nil
}

// Prefix is the prefix KV cache's statistics provider for RegisterStats.
func (c *CacheStats) Prefix() map[string]float64 {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{"models": 0}
	for k, v := range c.retired {
		out[k] += v
	}
	for m := range c.live {
		st := prefixStats(m)
		if st == nil {
			continue
		}
		out["models"]++
		for k, v := range st {
			out[k] += v
		}
	}
	if n := out["hits"] + out["misses"]; n > 0 {
		out["hit_rate"] = out["hits"] / n
	} else {
		out["hit_rate"] = 0
	}
	return out
}
