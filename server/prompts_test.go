package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// /v1/completions takes prompt in OpenAI's four forms: a string, a list of
// strings, a list of token ids and a list of such lists.
func TestCompletionsPromptForms(t *testing.T) {
	b, ts := fakeServer(t)
	type choice struct {
		Index        int    `json:"index"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	}
	var got struct {
		Choices []choice
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		}
	}
	post := func(body string) resp {
		t.Helper()
		r := do(t, ts, "POST", "/v1/completions", body)
		wantStatus(t, r, 200)
		got.Choices = nil
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		return r
	}
	reqs := func() []GenerateRequest {
		m := b.last()
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Clone(m.reqs)
	}

	// A list of strings: one choice per prompt, in order.
	r := post(`{"model":"tiny","prompt":["a b","c"],"max_tokens":2}`)
	if len(got.Choices) != 2 || got.Choices[0].Index != 0 || got.Choices[1].Index != 1 ||
		got.Choices[0].Text != fakeText(2) || got.Choices[1].Text != fakeText(2) || got.Choices[1].FinishReason != "length" {
		t.Fatalf("two prompts: %s", r.body)
	}
	if got.Usage.PromptTokens != 3 || got.Usage.CompletionTokens != 4 || got.Usage.TotalTokens != 7 {
		t.Errorf("two prompts: usage %s", r.body)
	}
	rs := reqs()
	if n := len(rs); n < 2 || rs[n-2].Prompt != "a b" || rs[n-1].Prompt != "c" {
		t.Errorf("two prompts: the model saw %+v", rs)
	}

	// Token ids: evaluated as those ids.
	r = post(`{"model":"tiny","prompt":[5,6,7],"max_tokens":1}`)
	last := reqs()[len(reqs())-1]
	if len(got.Choices) != 1 || !slices.Equal(last.PromptIDs, []int32{5, 6, 7}) || got.Usage.PromptTokens != 3 {
		t.Errorf("token ids: %s; the model saw %v", r.body, last.PromptIDs)
	}
	r = post(`{"model":"tiny","prompt":[[1,2],[999]],"max_tokens":1}`)
	rs = reqs()
	if len(got.Choices) != 2 || got.Choices[1].Index != 1 || !slices.Equal(rs[len(rs)-2].PromptIDs, []int32{1, 2}) ||
		!slices.Equal(rs[len(rs)-1].PromptIDs, []int32{999}) || got.Usage.PromptTokens != 3 {
		t.Errorf("lists of token ids: %s", r.body)
	}
	// Streamed token ids (one prompt).
	r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":[[4,4]],"max_tokens":2,"stream":true}`)
	wantStatus(t, r, 200)
	if fr := sse(t, r.body); len(fr) != 3 || !slices.Equal(reqs()[len(reqs())-1].PromptIDs, []int32{4, 4}) {
		t.Errorf("streamed token ids: %s", r.body)
	}

	// Several prompts streamed: each choice's chunks in turn, each closed
	// by its finish_reason, then the usage and [DONE].
	r = do(t, ts, "POST", "/v1/completions", `{"model":"tiny","prompt":[[1,2],[3]],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`)
	wantStatus(t, r, 200)
	fr := sse(t, r.body)
	var got2 []string
	for _, f := range fr[:len(fr)-1] {
		c := f["choices"].([]any)[0].(map[string]any)
		got2 = append(got2, fmt.Sprintf("%v:%v:%v", c["index"], c["text"], c["finish_reason"]))
	}
	if want := "0:w0:<nil> 0: w1:<nil> 0::length 1:w0:<nil> 1: w1:<nil> 1::length"; strings.Join(got2, " ") != want {
		t.Errorf("streamed prompts: %q, want %q", strings.Join(got2, " "), want)
	}
	if u, _ := fr[len(fr)-1]["usage"].(map[string]any); u == nil || u["prompt_tokens"] != float64(3) || u["completion_tokens"] != float64(4) ||
		!strings.HasSuffix(strings.TrimSpace(string(r.body)), "data: [DONE]") {
		t.Errorf("streamed prompts: the end %s", r.body)
	}

	// Refusals, each before any generation.
	before := len(reqs())
	for _, c := range []struct{ body, want string }{
		{`"prompt":[1,1000]`, "prompt[1]: token id 1000 is out of range"},
		{`"prompt":[[1],[2,-1]]`, "prompt[1][1]: token id -1"},
		{`"prompt":[["a"]]`, "prompt must be"},
		{`"prompt":["a",1]`, "prompt must be"},
		{`"prompt":[]`, "prompt must not be empty"},
		{`"prompt":[[]]`, "prompt[0] is an empty list of token ids"},
		{`"prompt":[1.5]`, "prompt must be"},
		{`"prompt":["a","` + strings.Repeat("x ", 5000) + `"],"stream":true`, "prompt[1] has 10000 bytes"},
		{`"prompt":[1],"suffix":"x"`, "suffix"},
		{`"prompt":["a","` + strings.Repeat("x ", 5000) + `"]`, "prompt[1] has 10000 bytes"},
		{`"prompt":[[1],[` + strings.TrimSuffix(strings.Repeat("1,", 600), ",") + `]]`, "prompt[1] has 600 tokens"},
		{`"prompt":[` + strings.TrimSuffix(strings.Repeat(`"a",`, maxPrompts+1), ",") + `]`, fmt.Sprintf("at most %d", maxPrompts)},
	} {
		r := do(t, ts, "POST", "/v1/completions", `{"model":"tiny",`+c.body+`}`)
		if r.status != 400 || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%.60s: %d %s; want 400 with %q", c.body, r.status, r.body, c.want)
		}
	}
	if n := len(reqs()); n != before {
		t.Errorf("refused requests generated %d times", n-before)
	}
}

// Token ids given as the prompt are evaluated as those ids: the same ids
// as a text prompt tokenizes to give the same greedy answer.
func TestCompletionsTokenIDsReal(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	code, body := post(t, url+"/tokenize", `{"model":"`+realModel+`","content":"Once upon a time","add_special":true}`)
	var tk struct{ Tokens []int32 }
	if err := json.Unmarshal(body, &tk); code != 200 || err != nil || len(tk.Tokens) < 3 {
		t.Fatalf("tokenize: %d %s", code, body)
	}
	ids, _ := json.Marshal(tk.Tokens)
	texts := func(prompt string) []string {
		t.Helper()
		code, body := post(t, url+"/v1/completions", `{"model":"`+realModel+`","prompt":`+prompt+`,"max_tokens":8,"temperature":0}`)
		var res struct {
			Choices []struct{ Text string }
			Usage   struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		if err := json.Unmarshal(body, &res); code != 200 || err != nil {
			t.Fatalf("%s: %d %s", prompt, code, body)
		}
		var out []string
		for _, c := range res.Choices {
			out = append(out, c.Text)
		}
		return out
	}
	want := texts(`"Once upon a time"`)
	if got := texts(string(ids)); !slices.Equal(got, want) {
		t.Errorf("token ids %s: %q; the text prompt: %q", ids, got, want)
	}
	short, _ := json.Marshal(tk.Tokens[:len(tk.Tokens)-1])
	two, _ := json.Marshal([][]int32{tk.Tokens, tk.Tokens[:len(tk.Tokens)-1]})
	if got := texts(string(two)); len(got) != 2 || got[0] != want[0] || got[1] != texts(string(short))[0] {
		t.Errorf("two id prompts: %q; want %q and the shorter prompt's", got, want)
	}
	// Logprobs per choice: each choice's own tokens, offsets from 0.
	code, body = post(t, url+"/v1/completions", `{"model":"`+realModel+`","prompt":["Once upon a time","The dog"],"max_tokens":4,"temperature":0,"logprobs":2}`)
	var lp struct {
		Choices []struct {
			Index    int
			Text     string
			Logprobs struct {
				Tokens     []string `json:"tokens"`
				TextOffset []int    `json:"text_offset"`
			}
		}
	}
	if err := json.Unmarshal(body, &lp); code != 200 || err != nil || len(lp.Choices) != 2 {
		t.Fatalf("logprobs of two prompts: %d %s", code, body)
	}
	for i, c := range lp.Choices {
		if c.Index != i || len(c.Logprobs.Tokens) != 4 || c.Logprobs.TextOffset[0] != 0 || strings.Join(c.Logprobs.Tokens, "") != c.Text {
			t.Errorf("choice %d: %+v", i, c)
		}
	}
	if lp.Choices[0].Text != want[0][:len(lp.Choices[0].Text)] {
		t.Errorf("choice 0 %q is not the start of %q", lp.Choices[0].Text, want[0])
	}
	// The same streamed: each choice's text and log-probabilities.
	code, body = post(t, url+"/v1/completions", `{"model":"`+realModel+`","prompt":["Once upon a time","The dog"],"max_tokens":4,"temperature":0,"logprobs":2,"stream":true}`)
	if code != 200 {
		t.Fatalf("streamed logprobs of two prompts: %d %s", code, body)
	}
	texts2, toks := make([]string, 2), make([]string, 2)
	for _, f := range sse(t, body) {
		c := f["choices"].([]any)[0].(map[string]any)
		i := int(c["index"].(float64))
		texts2[i] += c["text"].(string)
		if l, ok := c["logprobs"].(map[string]any); ok {
			for _, tk := range l["tokens"].([]any) {
				toks[i] += tk.(string)
			}
		}
	}
	for i := range 2 {
		if texts2[i] != lp.Choices[i].Text || toks[i] != texts2[i] {
			t.Errorf("streamed choice %d: %q (tokens %q); not streamed %q", i, texts2[i], toks[i], lp.Choices[i].Text)
		}
	}
	code, body = post(t, url+"/v1/completions", `{"model":"`+realModel+`","prompt":[1,99999999]}`)
	if code != 400 || !strings.Contains(string(body), "out of range") {
		t.Errorf("an id past the vocabulary: %d %s", code, body)
	}
}
