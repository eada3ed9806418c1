package server

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime/gbnf"
)

// sseNoDone splits llama-server's /completion stream (no [DONE]).
func sseNoDone(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	return ssePayloads(t, strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n"))
}

func TestLlamaServerRoutesFake(t *testing.T) {
	b, ts := fakeServer(t)
	r := do(t, ts, "GET", "/health", "")
	if wantStatus(t, r, 200); r.json(t)["status"] != "ok" {
		t.Errorf("/health %s", r.body)
	}
	r = do(t, ts, "POST", "/completion", `{"model":"tiny","prompt":"Once upon","n_predict":3,"temperature":0,"typical_p":0.5,"dry_multiplier":0.5,"xtc_probability":0.25,"repeat_last_n":32,"cache_prompt":true}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	if m["content"] != fakeText(3) || m["stop"] != true || m["stop_type"] != "limit" || m["tokens_predicted"] != 3.0 ||
		m["tokens_evaluated"] != 2.0 || m["model"] != "tiny" || m["prompt"] != "Once upon" {
		t.Errorf("/completion %s", r.body)
	}
	gs, _ := m["generation_settings"].(map[string]any)
	if gs["n_predict"] != 3.0 || gs["typical_p"] != 0.5 || gs["dry_multiplier"] != 0.5 || gs["repeat_last_n"] != 32.0 {
		t.Errorf("generation_settings %v", gs)
	}
	if tm, _ := m["timings"].(map[string]any); tm["predicted_n"] != 3.0 {
		t.Errorf("timings %v", m["timings"])
	}
	got := b.last().lastReq()
	if got.Prompt != "Once upon" || got.MaxTokens != 3 || got.TypicalP != 0.5 || got.DryMultiplier != 0.5 ||
		got.XTCProbability != 0.25 || got.RepeatLastN != 32 {
		t.Errorf("request reached the model as %+v", got)
	}
	// Streaming: one frame per piece, then the final one; no [DONE].
	r = do(t, ts, "POST", "/completion", `{"model":"tiny","prompt":"x","n_predict":2,"stream":true}`)
	frames := wantStream(t, r, "text/event-stream", sseNoDone, 3)
	t0, _ := frames[0]["content"].(string)
	t1, _ := frames[1]["content"].(string)
	if t0+t1 != fakeText(2) ||
		frames[0]["stop"] != false || frames[2]["stop"] != true || frames[2]["stop_type"] != "limit" || frames[2]["content"] != "" {
		t.Errorf("stream %s", r.body)
	}
	// A stop word: stop_type word.
	b.script = []string{"a", " b", " STOP", " c"}
	r = do(t, ts, "POST", "/completion", `{"model":"tiny","prompt":"x","stop":["STOP"]}`)
	if m := r.json(t); m["stop_type"] != "word" || m["stopping_word"] != "STOP" || m["content"] != "a b" {
		t.Errorf("stop word: %s", r.body)
	}
	b.script = nil
	for body, want := range map[string]string{
		`{"model":"tiny","prompt":"x","grammar":"root ::= nosuch"}`:                 "grammar",
		`{"model":"tiny","prompt":"x","grammar":"root ::= \"a\"","json_schema":{}}`: "cannot be combined",
		`{"model":"tiny","prompt":[1,2]}`:                                           "prompt",
		`{"model":"tiny","prompt":"x","n_predict":0}`:                               "n_predict",
		`{"model":"tiny","prompt":"x","typical_p":3}`:                               "typical_p",
		`{"model":"tiny","prompt":"x","dry_sequence_breakers":[]}`:                  "dry_sequence_breakers",
		`{"model":"tiny","prompt":"x","json_schema":{"type":"nosuch"}}`:             "json_schema",
	} {
		r = do(t, ts, "POST", "/completion", body)
		if r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d %s; want 400 naming %s", body, r.status, r.body, want)
		}
	}
	// No model named: the loaded one answers (several in the directory,
	// none loaded: a 400 saying to name one).
	if r = do(t, ts, "POST", "/completion", `{"prompt":"x","n_predict":1}`); r.status != 200 || r.json(t)["model"] != "tiny" {
		t.Errorf("no model, tiny loaded: %d %s", r.status, r.body)
	}
	_, ts2 := newTestServer(t, Config{}, newFakeBackend())
	if r = do(t, ts2, "POST", "/completion", `{"prompt":"x"}`); r.status != 400 || !strings.Contains(string(r.body), "model") {
		t.Errorf("no model, none loaded: %d %s", r.status, r.body)
	}
	// /props over the fake model.
	r = do(t, ts, "GET", "/props?model=tiny", "")
	wantStatus(t, r, 200)
	p := r.json(t)
	dg, _ := p["default_generation_settings"].(map[string]any)
	if p["total_slots"] != float64(DefaultParallel) || p["model_alias"] != "tiny" || dg["n_ctx"] != 512.0 || p["eos_token"] != "</s>" {
		t.Errorf("/props %s", r.body)
	}
	// The fake model has no tokenizer: 501.
	if r = do(t, ts, "POST", "/tokenize", `{"model":"tiny","content":"x"}`); r.status != 501 {
		t.Errorf("/tokenize on the fake: %d %s", r.status, r.body)
	}
}

func TestLlamaServerRoutesReal(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	st, body := post(t, url+"/tokenize", `{"model":"`+realModel+`","content":"Once upon a time"}`)
	var tok struct {
		Tokens []int32 `json:"tokens"`
	}
	if st != 200 || json.Unmarshal(body, &tok) != nil {
		t.Fatalf("/tokenize %d %s", st, body)
	}
	// The reference prompt ids (shared/ref) without BOS: add_special
	// defaults to false as in llama-server.
	if want := []int32{403, 407, 261, 378}; !slices.Equal(tok.Tokens, want) {
		t.Errorf("/tokenize %v, want %v", tok.Tokens, want)
	}
	st, body = post(t, url+"/tokenize", `{"model":"`+realModel+`","content":"Once upon","add_special":true,"with_pieces":true}`)
	var pieces struct {
		Tokens []struct {
			ID    int32 `json:"id"`
			Piece any   `json:"piece"`
		} `json:"tokens"`
	}
	if st != 200 || json.Unmarshal(body, &pieces) != nil || len(pieces.Tokens) != 3 || pieces.Tokens[0].ID != 1 || pieces.Tokens[1].Piece != " Once" {
		t.Errorf("/tokenize with pieces %d %s", st, body)
	}
	st, body = post(t, url+"/detokenize", `{"model":"`+realModel+`","tokens":[403,407,261,378]}`)
	if st != 200 || !strings.Contains(string(body), `"content":" Once upon a time"`) {
		t.Errorf("/detokenize %d %s", st, body)
	}
	if st, body = post(t, url+"/detokenize", `{"model":"`+realModel+`","tokens":[5,999999]}`); st != 400 || !strings.Contains(string(body), "tokens[1]") {
		t.Errorf("/detokenize bad id: %d %s", st, body)
	}
	// More ids than the largest context are refused before any is spelled.
	many := strings.TrimSuffix(strings.Repeat("1,", 100_000), ",")
	if st, body = post(t, url+"/detokenize", `{"model":"`+realModel+`","tokens":[`+many+`]}`); st != 400 || !strings.Contains(string(body), "tokens: 100000 ids; the model's largest context holds") {
		t.Errorf("/detokenize 100000 ids: %d %.200s", st, body)
	}
	// /completion greedy equals /api/generate greedy (raw prompt).
	st, body = post(t, url+"/completion", `{"model":"`+realModel+`","prompt":"Once upon a time","n_predict":12,"temperature":0}`)
	var c struct {
		Content  string `json:"content"`
		StopType string `json:"stop_type"`
	}
	if st != 200 || json.Unmarshal(body, &c) != nil || c.StopType != "limit" {
		t.Fatalf("/completion %d %s", st, body)
	}
	st, body = post(t, url+"/api/generate", `{"model":"`+realModel+`","prompt":"Once upon a time","raw":true,"stream":false,"options":{"temperature":0,"num_predict":12}}`)
	var g struct {
		Response string `json:"response"`
	}
	if st != 200 || json.Unmarshal(body, &g) != nil || g.Response != c.Content || c.Content == "" {
		t.Errorf("/completion %q, /api/generate %q (%d %s)", c.Content, g.Response, st, body)
	}
	// Seeded XTC and mirostat over HTTP: the same answer twice.
	for _, extra := range []string{`"xtc_probability":0.5,"xtc_threshold":0.05`, `"mirostat":2,"mirostat_tau":3`, `"dry_multiplier":2,"dry_allowed_length":1`} {
		req := `{"model":"` + realModel + `","prompt":"Once upon a time","n_predict":24,"temperature":0.8,"seed":3,` + extra + `}`
		_, a := post(t, url+"/completion", req)
		_, b := post(t, url+"/completion", req)
		var x, y struct{ Content string }
		json.Unmarshal(a, &x)
		json.Unmarshal(b, &y)
		if x.Content == "" || x.Content != y.Content {
			t.Errorf("%s: %q then %q", extra, x.Content, y.Content)
		}
	}
	// A GBNF grammar on /completion: sampled output is a sentence of it.
	src := "root ::= (\"yes\" | \"no\") \", \" [a-z]{3,6} \".\""
	gr, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range 4 {
		req, _ := json.Marshal(map[string]any{"model": realModel, "prompt": "Once upon a time", "temperature": 1, "seed": seed, "grammar": src})
		st, body := post(t, url+"/completion", string(req))
		var c struct {
			Content  string `json:"content"`
			StopType string `json:"stop_type"`
		}
		json.Unmarshal(body, &c)
		if ok, _ := gr.Match(c.Content); st != 200 || !ok || c.StopType != "eos" {
			t.Errorf("grammar seed %d: %d %q (%s)", seed, st, c.Content, body)
		}
	}
	res, err := http.Get(url + "/props")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"model_alias":"`+realModel+`"`) {
		t.Errorf("/props %d %s", res.StatusCode, b)
	}
}

// TestLlamaTokenizeBounded: /tokenize refuses, before tokenizing, text
// that cannot fit the model's largest context (a token is at most
// MaxTokenBytes bytes), as the generation routes do.
func TestLlamaTokenizeBounded(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	big := strings.Repeat("a ", 2<<20)
	st, body := post(t, url+"/tokenize", `{"model":"`+realModel+`","content":"`+big+`"}`)
	if st != http.StatusBadRequest || !strings.Contains(string(body), "content has") {
		t.Fatalf("/tokenize of %d bytes: %d %.200s, want a 400 naming content", len(big), st, body)
	}
}
