package server

// Embeddings: Ollama's POST /api/embed and legacy POST /api/embeddings,
// OpenAI's POST /v1/embeddings. A request takes the model's turn like a
// generation (registry.acquire), so it never runs beside another request on
// the same model's workers.
//
// Pooling: the file's {arch}.pooling_type; a file without one (a causal
// language model) is pooled by its last token, the vector Ollama returns
// for such a model (its runner falls back to the last token's embedding)
// and llama.cpp's --pooling last. llama-server instead refuses
// /v1/embeddings for it ("Pooling type 'none' is not OAI compatible").

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/runtime"
)

// Embedder is a Model that computes embeddings (RuntimeBackend's models do).
// An input longer than the context with Truncate off is a
// *runtime.InputTooLongError.
type Embedder interface {
	Embed(ctx context.Context, req EmbedRequest) (*EmbedResult, error)
}

// EmbedRequest is one embedding request: Inputs tokenized by the model
// (BOS/EOS as its vocabulary says), or Tokens as they are.
type EmbedRequest struct {
	Inputs    []string
	Tokens    [][]int32
	Truncate  bool // keep the first NumCtx tokens of longer inputs; else a 400
	NumCtx    int  // 0: the model's default context
	Normalize bool // L2-normalize each embedding
}

// EmbedResult holds one embedding per input, in order.
type EmbedResult struct {
	Embeddings   [][]float32
	PromptTokens int
}

// Embed computes one pooled embedding per input with the runtime.
func (r *runtimeModel) Embed(ctx context.Context, req EmbedRequest) (*EmbedResult, error) {
	if req.NumCtx > maxCtx(r.meta) { // the server checked; this backend does not rely on it
		return nil, badRequest("num_ctx %d is more than the largest context, %d", req.NumCtx, maxCtx(r.meta))
	}
	pool := r.m.EmbeddingPooling()
	if pool == runtime.PoolingNone {
		pool = runtime.PoolingLast // see the file comment
	}
	res, err := r.m.Embed(ctx, runtime.EmbedOptions{Inputs: req.Inputs, Tokens: req.Tokens, Pooling: pool,
		Truncate: req.Truncate, NCtx: req.NumCtx, Normalize: req.Normalize})
	var tl *runtime.InputTooLongError
	switch {
	case errors.As(err, &tl):
		return nil, tl
	case err != nil && ctx.Err() == nil:
		return nil, badRequest("%v", err)
	case err != nil:
		return nil, err
	}
	out := &EmbedResult{Embeddings: make([][]float32, len(res.Embeddings)), PromptTokens: res.Tokens}
	for i, e := range res.Embeddings {
		out.Embeddings[i] = e.Vector
	}
	return out, nil
}

// embedJob is a decoded embedding request, whichever API it came from.
type embedJob struct {
	model      string
	req        EmbedRequest
	dimensions int // > 0: keep the first dimensions values and normalize again
	threads    int
	keepAlive  *time.Duration
	tooLong    string // the family's advice after "input N has T tokens, more than the context length C"
}

// embedOutcome is a finished embedding request.
type embedOutcome struct {
	res     *EmbedResult
	loadDur time.Duration
	start   time.Time
}

// embed takes the model's turn, computes the embeddings and applies
// dimensions. An empty job only loads the model (as Ollama does).
func (s *Server) embed(r *http.Request, j *embedJob) (*embedOutcome, error) {
	out := &embedOutcome{start: time.Now()}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	l, err := s.models.acquire(ctx, j.model, j.threads)
	if err != nil {
		return nil, err
	}
	defer l.release(j.keepAlive)
	out.loadDur = l.loadDur
	// num_ctx sizes the embedding session: checked before it is made; the
	// inputs' bytes are checked against it before they are tokenized.
	meta := l.model().Meta()
	nctx, err := requestCtx(meta, j.req.NumCtx)
	if err != nil {
		return nil, err
	}
	if err := boundInputs(meta, &j.req, nctx); err != nil {
		return nil, badRequest("%v%s", err, j.tooLong)
	}
	if n, d := len(j.req.Inputs)+len(j.req.Tokens), meta.EmbeddingLength; d > 0 && n > maxEmbedValues/d {
		return nil, badRequest("input has %d inputs of %d values: more than the %d values one request may return (at most %d inputs for this model; send them in several requests)",
			n, d, maxEmbedValues, maxEmbedValues/d)
	}
	if len(j.req.Inputs) == 0 && len(j.req.Tokens) == 0 {
		out.res = &EmbedResult{Embeddings: [][]float32{}}
		return out, nil
	}
	em, ok := l.model().(Embedder)
	if !ok {
		return nil, badRequest("model %q does not compute embeddings", j.model)
	}
	res, err := em.Embed(ctx, j.req)
	var tl *runtime.InputTooLongError
	if errors.As(err, &tl) {
		return nil, badRequest("input %d has %d tokens, more than the context length %d%s", tl.Input, tl.Tokens, tl.NCtx, j.tooLong)
	}
	if err != nil {
		return nil, err
	}
	if j.dimensions > 0 {
		for i, v := range res.Embeddings {
			if j.dimensions > len(v) {
				return nil, badRequest("dimensions %d is more than the model's embedding length %d", j.dimensions, len(v))
			}
			v = v[:j.dimensions:j.dimensions]
			runtime.NormalizeL2(v)
			res.Embeddings[i] = v
		}
	}
	if err := checkNumbers(res.Embeddings); err != nil {
		return nil, err
	}
	out.res = res
	return out, nil
}

// boundInputs refuses an input too long in bytes for the context before it
// is tokenized (see checkPromptBytes), or with truncate on, cuts it to
// twice that many bytes (at a character boundary): its first nctx tokens
// come from text well before the cut, so the truncated input is the same
// unless a single word (or SentencePiece run) spans the cut. An input
// shorter than the cut stays whole: the tokenizer's count decides.
func boundInputs(meta ModelMeta, req *EmbedRequest, nctx int) error {
	for i, in := range req.Inputs {
		err := checkPromptBytes(meta, fmt.Sprintf("input[%d]", i), len(in), nctx)
		if err == nil {
			continue
		}
		if !req.Truncate {
			return err
		}
		cut := 2 * nctx * meta.MaxTokenBytes
		if cut >= len(in) {
			continue
		}
		for cut > 0 && !utf8.RuneStart(in[cut]) {
			cut--
		}
		req.Inputs[i] = in[:cut]
	}
	return nil
}

// checkNumbers refuses embeddings that JSON cannot carry.
func checkNumbers(embs [][]float32) error {
	for _, v := range embs {
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return errors.New("embedding contains NaN or Inf values")
			}
		}
	}
	return nil
}

// ollamaEmbedRequest is /api/embed's and /api/embeddings' body.
type ollamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`  // /api/embed: a string or a list of strings
	Prompt     string          `json:"prompt"` // /api/embeddings
	Truncate   *bool           `json:"truncate"`
	Dimensions int             `json:"dimensions"`
	Options    json.RawMessage `json:"options"`
	KeepAlive  keepAlive       `json:"keep_alive"`
}

// decodeOllamaEmbed reads an Ollama embedding body and makes its job;
// options honoured are num_ctx and num_thread (the sampling options have
// nothing to change in an embedding).
func decodeOllamaEmbed(r *http.Request, fields map[string]fieldRule) (*ollamaEmbedRequest, *embedJob, error) {
	var q ollamaEmbedRequest
	if err := decode(r, &q, false, fieldCheck{fields, false}); err != nil {
		return nil, nil, err
	}
	j := &embedJob{model: q.Model, keepAlive: q.KeepAlive.d, req: EmbedRequest{Truncate: q.Truncate == nil || *q.Truncate}}
	if q.Dimensions < 0 {
		return nil, nil, badRequest("dimensions must be >= 0")
	}
	j.dimensions = q.Dimensions
	if err := checkFields(q.Options, ollamaOptionFields, false); err != nil {
		return nil, nil, badRequest("options.%v", err)
	}
	if len(q.Options) > 0 && string(q.Options) != "null" {
		var o ollamaOptions
		if err := json.Unmarshal(q.Options, &o); err != nil {
			return nil, nil, badRequest("invalid options: %v", err)
		}
		set(&j.req.NumCtx, o.NumCtx)
		set(&j.threads, o.NumThread)
		if j.req.NumCtx < 0 {
			return nil, nil, badRequest("num_ctx %d: must be >= 0", j.req.NumCtx)
		}
		if err := checkThreads(j.threads); err != nil {
			return nil, nil, err
		}
	}
	return &q, j, nil
}

// ollamaInput reads /api/embed's input: a string ("" is no input) or a
// list of strings.
func ollamaInput(raw json.RawMessage, req *EmbedRequest) error {
	switch in := strings.TrimSpace(string(raw)); {
	case in == "" || in == "null" || in == `""`:
	case strings.HasPrefix(in, `"`):
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return badRequest("input: %v", err)
		}
		req.Inputs = []string{one}
	default:
		if err := json.Unmarshal(raw, &req.Inputs); err != nil {
			return badRequest("invalid input type: input must be a string or a list of strings")
		}
	}
	return nil
}

// embedOllama decodes an Ollama embedding body, lets prepare set what its
// route does its own way, and embeds. On a failure it has answered and
// returns false.
func (s *Server) embedOllama(w http.ResponseWriter, r *http.Request, fields map[string]fieldRule,
	prepare func(*ollamaEmbedRequest, *embedJob) error) (*ollamaEmbedRequest, *embedOutcome, bool) {
	q, j, err := decodeOllamaEmbed(r, fields)
	var o *embedOutcome
	if err == nil {
		if err = prepare(q, j); err == nil {
			o, err = s.embed(r, j)
		}
	}
	if err != nil {
		s.failErr(w, r, famOllama, err)
		return nil, nil, false
	}
	return q, o, true
}

// ollamaEmbed is POST /api/embed: L2-normalized embeddings of every input.
func (s *Server) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	q, o, ok := s.embedOllama(w, r, ollamaEmbedFields, func(q *ollamaEmbedRequest, j *embedJob) error {
		j.req.Normalize = true
		j.tooLong = " (truncate is false; true cuts it to the context)"
		return ollamaInput(q.Input, &j.req)
	})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": q.Model, "embeddings": o.res.Embeddings,
		"total_duration": time.Since(o.start).Nanoseconds(), "load_duration": o.loadDur.Nanoseconds(),
		"prompt_eval_count": o.res.PromptTokens})
}

// ollamaEmbeddings is the legacy POST /api/embeddings: one prompt, its
// embedding as the model gives it (not normalized, as Ollama).
func (s *Server) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	_, o, ok := s.embedOllama(w, r, ollamaEmbeddingsFields, func(q *ollamaEmbedRequest, j *embedJob) error {
		j.req.Truncate = false
		j.tooLong = " (num_ctx sets the context)"
		if q.Prompt != "" {
			j.req.Inputs = []string{q.Prompt}
		}
		return nil
	})
	if !ok {
		return
	}
	emb := []float32{}
	if len(o.res.Embeddings) > 0 {
		emb = o.res.Embeddings[0]
	}
	writeJSON(w, http.StatusOK, map[string]any{"embedding": emb})
}

// openaiEmbedRequest is /v1/embeddings' body.
type openaiEmbedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// openaiInput reads input: a string, a list of strings, a list of token
// ids, or a list of such lists. None may be empty (as OpenAI).
func openaiInput(raw json.RawMessage, req *EmbedRequest) error {
	// Each form decodes into a fresh value: a failed decode leaves partial ones.
	var one string
	var many, strs []string
	var ids []int32
	var idLists, lists [][]int32
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return badRequest("input is required")
	case json.Unmarshal(raw, &one) == nil:
		many = []string{one}
	case json.Unmarshal(raw, &strs) == nil:
		many = strs
	case json.Unmarshal(raw, &ids) == nil:
		idLists = [][]int32{ids}
	case json.Unmarshal(raw, &lists) == nil:
		idLists = lists
	default:
		return badRequest("input must be a string, a list of strings, a list of token ids or a list of lists of token ids")
	}
	if many == nil && idLists == nil || len(many)+len(idLists) == 0 {
		return badRequest("input must not be empty")
	}
	for i, s := range many {
		if s == "" {
			return badRequest("input[%d] is an empty string", i)
		}
	}
	for i, l := range idLists {
		if len(l) == 0 {
			return badRequest("input[%d] is an empty list of tokens", i)
		}
	}
	req.Inputs, req.Tokens = many, idLists
	return nil
}

// openaiEmbeddings is POST /v1/embeddings: L2-normalized embeddings, as
// floats or base64 (little-endian float32).
func (s *Server) openaiEmbeddings(w http.ResponseWriter, r *http.Request) {
	var q openaiEmbedRequest
	if err := decode(r, &q, false, fieldCheck{openaiEmbedFields, true}); err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	if q.Model == "" {
		s.failErr(w, r, famOpenAI, badRequest("model is required"))
		return
	}
	j := &embedJob{model: q.Model, req: EmbedRequest{Normalize: true}, tooLong: "; shorten the input"}
	if err := openaiInput(q.Input, &j.req); err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	b64 := false
	if q.EncodingFormat != nil {
		switch *q.EncodingFormat {
		case "float":
		case "base64":
			b64 = true
		default:
			s.failErr(w, r, famOpenAI, badRequest("encoding_format must be float or base64, not %s", quoteShort(*q.EncodingFormat)))
			return
		}
	}
	if q.Dimensions != nil {
		if *q.Dimensions < 1 {
			s.failErr(w, r, famOpenAI, badRequest("dimensions must be at least 1"))
			return
		}
		j.dimensions = *q.Dimensions
	}
	o, err := s.embed(r, j)
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	data := make([]any, len(o.res.Embeddings))
	for i, v := range o.res.Embeddings {
		var emb any = v
		if b64 {
			emb = embeddingBase64(v)
		}
		data[i] = map[string]any{"object": "embedding", "embedding": emb, "index": i}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": q.Model,
		"usage": map[string]any{"prompt_tokens": o.res.PromptTokens, "total_tokens": o.res.PromptTokens}})
}

// embeddingBase64 is OpenAI's base64 encoding: the float32 values'
// little-endian bytes.
func embeddingBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
