package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// RerankResult is the outcome of Rerank: one relevance score per document,
// in the documents' order.
type RerankResult struct {
	Scores   []float32
	Tokens   int // tokens evaluated, all documents
	Duration time.Duration
}

// CanRerank reports whether the model is a reranker: an encoder with a
// classification head (cls.weight or cls.output.weight).
func (m *Model) CanRerank() bool {
	return m.enc != nil && (m.enc.cls.Rows > 0 || m.enc.clsOut.Rows > 0)
}

// rerankTokens builds the input of one (query, document) pair as
// llama-server does: the file's tokenizer.chat_template.rerank with
// {query} and {document} replaced, tokenized with special tokens parsed;
// without one, [BOS] query [EOS] [SEP] document [EOS], each marker only
// where the vocabulary adds it (EOS falls back to SEP) — for BERT,
// [CLS] query [SEP] document.
func (m *Model) rerankTokens(query, doc string) ([]int32, error) {
	t := m.tok
	if tmpl, ok := m.file.String("tokenizer.chat_template.rerank"); ok {
		p := strings.ReplaceAll(tmpl, "{query}", query)
		p = strings.ReplaceAll(p, "{document}", doc)
		return t.Encode(p, false, true)
	}
	q, err := t.Encode(query, false, false)
	if err != nil {
		return nil, err
	}
	d, err := t.Encode(doc, false, false)
	if err != nil {
		return nil, err
	}
	eos := t.EOS()
	if eos < 0 {
		eos = t.SEP()
	}
	var out []int32
	if t.AddBOS() {
		out = append(out, t.BOS())
	}
	out = append(out, q...)
	if t.AddEOS() {
		out = append(out, eos)
	}
	if t.AddSEP() {
		out = append(out, t.SEP())
	}
	out = append(out, d...)
	if t.AddEOS() {
		out = append(out, eos)
	}
	return out, nil
}

// Rerank scores each document's relevance to query with the model's
// classification head (the first output of rank pooling, as llama-server's
// /v1/rerank). nctx bounds each pair's tokens (0: the model's default
// context); a longer pair is an *InputTooLongError.
func (m *Model) Rerank(ctx context.Context, query string, docs []string, nctx int) (*RerankResult, error) {
	start := time.Now()
	if !m.CanRerank() {
		return nil, errors.New("this model is not a reranker (no classification head with rank pooling)")
	}
	toks := make([][]int32, len(docs))
	for i, d := range docs {
		ids, err := m.rerankTokens(query, d)
		if err != nil {
			return nil, fmt.Errorf("document %d: tokenize: %w", i, err)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("document %d: the query and document give no tokens", i)
		}
		toks[i] = ids
	}
	res, err := m.Embed(ctx, EmbedOptions{Tokens: toks, Pooling: PoolingRank, NCtx: nctx})
	if err != nil {
		return nil, err
	}
	out := &RerankResult{Scores: make([]float32, len(docs)), Tokens: res.Tokens}
	for i, e := range res.Embeddings {
		if len(e.Vector) == 0 {
			return nil, fmt.Errorf("document %d: the classifier gave no score", i)
		}
		out.Scores[i] = e.Vector[0]
	}
	out.Duration = time.Since(start)
	return out, nil
}
