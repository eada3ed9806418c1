package server

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/synth"
)

// encoderServer writes the bert-mini and bert-rerank-mini synth presets
// (Q8_0, seed 1: the files of runtime/testdata/encoder) into a directory
// and serves it.
func encoderServer(t *testing.T) (url, dir string) {
	t.Helper()
	dir = t.TempDir()
	ft, err := quant.ParseFileType("q8_0")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bert-mini", "bert-rerank-mini"} {
		p, err := synth.FindPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := synth.WriteFile(filepath.Join(dir, name+".gguf"), synth.Options{Preset: p, Type: ft, Seed: 1, Threads: 1}); err != nil {
			t.Fatal(err)
		}
	}
	url, stop, _ := serveOnPort(t, Config{ModelsDir: dir, Threads: 1})
	t.Cleanup(stop)
	return url, dir
}

// TestEncoderRoutes: a BERT model's embeddings through /api/embed and
// /v1/embeddings are the runtime's (mean pooling, normalized); generation
// routes answer 400; /v1/rerank ranks by the runtime's scores.
func TestEncoderRoutes(t *testing.T) {
	url, dir := encoderServer(t)
	m, err := runtime.Load(filepath.Join(dir, "bert-mini.gguf"), runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := []string{"Once upon a time", "The cat sat on the mat."}
	want, err := m.Embed(context.Background(), runtime.EmbedOptions{Inputs: in, Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if want.Pooling != runtime.PoolingMean {
		t.Fatalf("bert-mini pools by %v, want mean (its pooling_type)", want.Pooling)
	}
	code, body := post(t, url+"/api/embed", `{"model":"bert-mini","input":["Once upon a time","The cat sat on the mat."]}`)
	var r apiEmbedResponse
	if err := json.Unmarshal(body, &r); code != 200 || err != nil {
		t.Fatalf("/api/embed: %d %s", code, body)
	}
	if len(r.Embeddings) != 2 || !slices.Equal(r.Embeddings[0], want.Embeddings[0].Vector) ||
		!slices.Equal(r.Embeddings[1], want.Embeddings[1].Vector) || r.PromptEvalCount != want.Tokens {
		t.Fatalf("/api/embed differs from the runtime's embeddings")
	}
	code, body = post(t, url+"/v1/embeddings", `{"model":"bert-mini","input":"Once upon a time"}`)
	var o openAIEmbedResponse
	if json.Unmarshal(body, &o); code != 200 || len(o.Data) != 1 || !slices.Equal(o.Data[0].Embedding, want.Embeddings[0].Vector) {
		t.Fatalf("/v1/embeddings: %d %.200s", code, body)
	}

	for _, c := range []struct{ path, body string }{
		{"/api/generate", `{"model":"bert-mini","prompt":"hi","stream":false}`},
		{"/api/chat", `{"model":"bert-mini","messages":[{"role":"user","content":"hi"}],"stream":false}`},
		{"/v1/chat/completions", `{"model":"bert-mini","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/completions", `{"model":"bert-mini","prompt":"hi"}`},
		{"/v1/responses", `{"model":"bert-mini","input":"hi"}`},
		{"/v1/messages", `{"model":"bert-mini","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		code, body := post(t, url+c.path, c.body)
		if code != 400 || !strings.Contains(string(body), "is an embedding model") {
			t.Errorf("%s on an encoder: %d %s, want a 400 naming it an embedding model", c.path, code, body)
		}
	}

	rm, err := runtime.Load(filepath.Join(dir, "bert-rerank-mini.gguf"), runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	docs := []string{"the cat sat", "a dog ran in the park", "what is an embedding model", "tea"}
	ref, err := rm.Rerank(context.Background(), "what is the little cat doing", docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	order := []int{0, 1, 2, 3}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ref.Scores[a] > ref.Scores[b]:
			return -1
		case ref.Scores[a] < ref.Scores[b]:
			return 1
		}
		return 0
	})
	code, body = post(t, url+"/v1/rerank", `{"model":"bert-rerank-mini","query":"what is the little cat doing","top_n":3,
		"documents":["the cat sat","a dog ran in the park","what is an embedding model","tea"]}`)
	var rr struct {
		Results []struct {
			Index int     `json:"index"`
			Score float32 `json:"relevance_score"`
		} `json:"results"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &rr); code != 200 || err != nil || len(rr.Results) != 3 {
		t.Fatalf("/v1/rerank: %d %s", code, body)
	}
	for i, res := range rr.Results {
		if res.Index != order[i] || res.Score != ref.Scores[order[i]] {
			t.Fatalf("/v1/rerank result %d: %+v, want index %d score %v (%s)", i, res, order[i], ref.Scores[order[i]], body)
		}
	}
	if rr.Usage.PromptTokens != ref.Tokens {
		t.Errorf("/v1/rerank usage %d tokens, want %d", rr.Usage.PromptTokens, ref.Tokens)
	}
	for _, c := range []struct{ body, want string }{
		{`{"model":"bert-rerank-mini","documents":["a"]}`, "query (a string) must be provided"},
		{`{"model":"bert-rerank-mini","query":"q","documents":[]}`, "documents must be a non-empty string array"},
		{`{"model":"bert-rerank-mini","query":"q","documents":["a"],"top_n":-1}`, "top_n must not be negative"},
		{`{"model":"bert-rerank-mini","query":"q","documents":["a"],"return_text":true}`, "return_text"},
		{`{"model":"bert-mini","query":"q","documents":["a"]}`, "not a reranker"},
	} {
		code, body := post(t, url+"/v1/rerank", c.body)
		if code != 400 || !strings.Contains(string(body), c.want) {
			t.Errorf("/v1/rerank %s: %d %s, want a 400 with %q", c.body, code, body, c.want)
		}
	}
}

// TestRerankLikeLlamaServer: /v1/rerank on bert-rerank-mini answers as
// llama.cpp's native llama-server did (runtime/testdata/encoder/native):
// the same order, scores within 1e-6, the same token count.
// rerankResponse is the part of a /v1/rerank answer the test compares.
type rerankResponse struct {
	Results []struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	} `json:"results"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

func TestRerankLikeLlamaServer(t *testing.T) {
	url, _ := encoderServer(t)
	var ref struct {
		Query     string         `json:"query"`
		Documents []string       `json:"documents"`
		Response  rerankResponse `json:"response"`
	}
	b, err := os.ReadFile(filepath.Join("..", "runtime", "testdata", "encoder", "native", "bert-rerank-mini-Q8_0.rerank.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"model": "bert-rerank-mini", "query": ref.Query, "documents": ref.Documents})
	code, out := post(t, url+"/v1/rerank", string(body))
	var got rerankResponse
	if err := json.Unmarshal(out, &got); code != 200 || err != nil {
		t.Fatalf("/v1/rerank: %d %s", code, out)
	}
	if len(got.Results) != len(ref.Response.Results) || got.Usage.PromptTokens != ref.Response.Usage.PromptTokens {
		t.Fatalf("%d results, %d tokens; llama-server: %d, %d", len(got.Results), got.Usage.PromptTokens,
			len(ref.Response.Results), ref.Response.Usage.PromptTokens)
	}
	worst := 0.0
	for i, r := range ref.Response.Results {
		g := got.Results[i]
		worst = math.Max(worst, math.Abs(g.Score-r.Score))
		if g.Index != r.Index || math.Abs(g.Score-r.Score) > 1e-6 {
			t.Errorf("result %d: index %d score %.9f; llama-server: index %d score %.9f", i, g.Index, g.Score, r.Index, r.Score)
		}
	}
	t.Logf("max |score - llama-server's| %.3g", worst)
}
