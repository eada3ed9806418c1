package server

import (
	"slices"
	"strings"
	"testing"
)

// The added samplers' fields reach the model from Ollama's options,
// OpenAI's bodies (llama-server's names) and /completion; out of range is
// a 400 naming the field.
func TestSamplerFieldsReachModel(t *testing.T) {
	b, ts := fakeServer(t)
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":2,"typical_p":0.7,"mirostat":2,"mirostat_tau":4,"mirostat_eta":0.2}}`)
	wantStatus(t, r, 200)
	got := b.last().lastReq()
	if got.TypicalP != 0.7 || got.Mirostat != 2 || got.MirostatTau != 4 || got.MirostatEta != 0.2 {
		t.Errorf("Ollama options reached the model as %+v", got.SamplerOptions)
	}
	body := `{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}],"typical_p":0.9,"mirostat":1,"mirostat_tau":3,"mirostat_eta":0.05,` +
		`"dry_multiplier":0.8,"dry_base":2,"dry_allowed_length":3,"dry_penalty_last_n":-1,"dry_sequence_breakers":["\n","###"],"xtc_probability":0.5,"xtc_threshold":0.2}`
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		bd := body
		if path == "/v1/completions" {
			bd = strings.Replace(body, `"messages":[{"role":"user","content":"hi"}]`, `"prompt":"hi"`, 1)
		}
		r = do(t, ts, "POST", path, bd)
		wantStatus(t, r, 200)
		o := b.last().lastReq().SamplerOptions
		if o.TypicalP != 0.9 || o.Mirostat != 1 || o.MirostatTau != 3 || o.MirostatEta != 0.05 || o.DryMultiplier != 0.8 ||
			o.DryBase != 2 || o.DryAllowedLength != 3 || o.DryPenaltyLastN != -1 || o.DryBreakers == nil || !slices.Equal(*o.DryBreakers, []string{"\n", "###"}) ||
			o.XTCProbability != 0.5 || o.XTCThreshold != 0.2 {
			t.Errorf("%s: reached the model as %+v", path, o)
		}
	}
	// Defaults when absent: llama.cpp's.
	r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","max_tokens":1,"prompt":"x"}`)
	wantStatus(t, r, 200)
	if o := b.last().lastReq().SamplerOptions; o.TypicalP != 1 || o.Mirostat != 0 || o.MirostatTau != 5 || o.DryMultiplier != 0 ||
		o.DryBase != 1.75 || o.DryAllowedLength != 2 || o.DryPenaltyLastN != 64 || o.DryBreakers != nil || o.XTCThreshold != 0.1 {
		t.Errorf("defaults %+v", o)
	}
	for field, val := range map[string]string{
		"typical_p": "1.5", "mirostat": "3", "mirostat_tau": "-1", "mirostat_eta": "-0.5", "dry_multiplier": "-1",
		"dry_allowed_length": "-1", "dry_penalty_last_n": "-2", "dry_sequence_breakers": "[]",
		"xtc_probability": "2", "xtc_threshold": "-1",
	} {
		r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","max_tokens":1,"prompt":"x","`+field+`":`+val+`}`)
		if r.status != 400 || !strings.Contains(string(r.body), field) {
			t.Errorf("%s %s: %d %s", field, val, r.status, r.body)
		}
		r = do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"x","stream":false,"options":{"`+field+`":`+val+`}}`)
		if r.status != 400 || !strings.Contains(string(r.body), field) {
			t.Errorf("options.%s %s: %d %s", field, val, r.status, r.body)
		}
	}
}

// llama-server's grammar field on the OpenAI routes: compiled and passed
// to the model; a bad grammar or one beside response_format is a 400.
func TestOpenAIGrammarField(t *testing.T) {
	b, ts := fakeServer(t)
	r := do(t, ts, "POST", "/v1/completions", `{"model":"tiny","max_tokens":2,"prompt":"x","grammar":"root ::= \"a\"+"}`)
	wantStatus(t, r, 200)
	if g := b.last().lastReq().GBNF; g == nil {
		t.Error("grammar did not reach the model")
	} else if ok, _ := g.Match("aaa"); !ok {
		t.Error("the grammar that reached the model does not match aaa")
	}
	for body, want := range map[string]string{
		`{"model":"tiny","prompt":"x","grammar":"root ::= x"}`:                                                                            "grammar",
		`{"model":"tiny","messages":[{"role":"user","content":"x"}],"grammar":"root ::= \"a\"","response_format":{"type":"json_object"}}`: "cannot be combined",
	} {
		path := "/v1/completions"
		if strings.Contains(body, "messages") {
			path = "/v1/chat/completions"
		}
		if r := do(t, ts, "POST", path, body); r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}
