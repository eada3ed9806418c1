package server

// Reranking: llama-server's POST /v1/rerank (also /rerank, /v1/reranking,
// /reranking) for cross-encoder reranker models (an encoder with a
// classification head, pooling_type rank). Body: model, query (a string),
// documents (a non-empty list of strings; "texts" is llama-server's other
// name for it), top_n (default: all). Answer: results sorted by
// relevance_score, highest first, each with the document's index; usage
// counts the tokens evaluated.

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/woolly-llm/woolly/runtime"
)

// Reranker is a Model that scores documents against a query.
type Reranker interface {
	// Rerank returns one score per document, in order, and the tokens
	// evaluated; a pair longer than nctx (0: the model's default) is a
	// *runtime.InputTooLongError.
	Rerank(ctx context.Context, query string, docs []string, nctx int) ([]float32, int, error)
}

// Rerank implements Reranker with the runtime.
func (r *runtimeModel) Rerank(ctx context.Context, query string, docs []string, nctx int) ([]float32, int, error) {
	if !r.m.CanRerank() {
		return nil, 0, badRequest("model is not a reranker (it has no classification head with pooling_type rank)")
	}
	res, err := r.m.Rerank(ctx, query, docs, nctx)
	var tl *runtime.InputTooLongError
	switch {
	case errors.As(err, &tl):
		return nil, 0, tl
	case err != nil && ctx.Err() == nil:
		return nil, 0, badRequest("%v", err)
	case err != nil:
		return nil, 0, err
	}
	return res.Scores, res.Tokens, nil
}

var rerankFields = map[string]fieldRule{
	"model": honoured, "query": honoured, "documents": honoured, "texts": honoured, "top_n": honoured,
}

// rerankRequest is /v1/rerank's body.
type rerankRequest struct {
	Model     string    `json:"model"`
	Query     *string   `json:"query"`
	Documents *[]string `json:"documents"`
	Texts     *[]string `json:"texts"`
	TopN      *int      `json:"top_n"`
}

// openaiRerank is POST /v1/rerank.
func (s *Server) openaiRerank(w http.ResponseWriter, r *http.Request) {
	var q rerankRequest
	if err := decode(r, &q, false, fieldCheck{rerankFields, true}); err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	docs, err := q.check()
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	topN := len(docs)
	if q.TopN != nil {
		topN = min(*q.TopN, len(docs))
	}
	scores, tokens, err := s.rerank(r, q.Model, *q.Query, docs)
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	results := make([]map[string]any, 0, topN)
	for _, i := range order[:topN] {
		results = append(results, map[string]any{"index": i, "relevance_score": scores[i]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": q.Model, "object": "list", "results": results,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// check validates the body and returns the documents.
func (q *rerankRequest) check() ([]string, error) {
	if q.Model == "" {
		return nil, badRequest("model is required")
	}
	if q.Query == nil {
		return nil, badRequest("query (a string) must be provided")
	}
	if q.Documents != nil && q.Texts != nil {
		return nil, badRequest("give documents or texts, not both")
	}
	docs := q.Documents
	if docs == nil {
		docs = q.Texts
	}
	if docs == nil || len(*docs) == 0 {
		return nil, badRequest("documents must be a non-empty string array")
	}
	if q.TopN != nil && *q.TopN < 0 {
		return nil, badRequest("top_n must not be negative")
	}
	return *docs, nil
}

// rerank takes the model's turn and scores the documents.
func (s *Server) rerank(r *http.Request, model, query string, docs []string) ([]float32, int, error) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	l, err := s.models.acquire(ctx, model, 0)
	if err != nil {
		return nil, 0, err
	}
	defer l.release(nil)
	meta := l.model().Meta()
	nctx := meta.DefaultCtx
	for i, d := range docs {
		// Refuse a pair too long in bytes for the context before tokenizing.
		if err := checkPromptBytes(meta, "the query and document", len(query)+len(d), nctx); err != nil {
			return nil, 0, badRequest("document %d: %v", i, err)
		}
	}
	rr, ok := l.model().(Reranker)
	if !ok {
		return nil, 0, badRequest("model %q does not rerank", model)
	}
	scores, tokens, err := rr.Rerank(ctx, query, docs, 0)
	var tl *runtime.InputTooLongError
	if errors.As(err, &tl) {
		return nil, 0, badRequest("document %d: the query and document have %d tokens, more than the context length %d", tl.Input, tl.Tokens, tl.NCtx)
	}
	if err != nil {
		return nil, 0, err
	}
	for i, v := range scores {
		if v != v || v > 3.4e38 || v < -3.4e38 {
			return nil, 0, badRequest("document %d: the score is not a finite number", i)
		}
	}
	return scores, tokens, nil
}

// errEmbeddingOnly is the 400 of a generation request to an encoder
// embedding model.
func errEmbeddingOnly(model string) error {
	return badRequest("model %q is an embedding model: it computes embeddings (/api/embed, /v1/embeddings) or rerank scores (/v1/rerank), not text", model)
}
