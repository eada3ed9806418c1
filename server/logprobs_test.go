package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

type lpEntry struct {
	Token   string    `json:"token"`
	Logprob float32   `json:"logprob"`
	Bytes   []int     `json:"bytes"`
	Top     []lpEntry `json:"top_logprobs"`
}

// checkEntries: one entry per generated token, each with n alternatives,
// greedy's choice first among them, log-probabilities <= 0.
func checkEntries(t *testing.T, what string, es []lpEntry, tokens, n int) {
	t.Helper()
	if len(es) != tokens {
		t.Fatalf("%s: %d logprob entries for %d tokens", what, len(es), tokens)
	}
	for i, e := range es {
		if e.Logprob > 0 || len(e.Top) != n || len(e.Bytes) != len(e.Token) && !strings.ContainsRune(e.Token, '\uFFFD') {
			t.Fatalf("%s: entry %d = %+v", what, i, e)
		}
		if n > 0 && (e.Top[0].Token != e.Token || e.Top[0].Logprob != e.Logprob) {
			t.Fatalf("%s: entry %d: greedy chose %q (%v), best alternative %q (%v)", what, i, e.Token, e.Logprob, e.Top[0].Token, e.Top[0].Logprob)
		}
	}
}

func TestLogprobsRoutes(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	m := realModel

	// OpenAI chat, whole.
	code, body := post(t, url+"/v1/chat/completions", `{"model":"`+m+`","messages":[{"role":"user","content":"Hi"}],
		"max_tokens":6,"temperature":0,"logprobs":true,"top_logprobs":3}`)
	var chatRes struct {
		Choices []struct {
			Logprobs struct {
				Content []lpEntry `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &chatRes); code != 200 || err != nil {
		t.Fatalf("chat: %d %s %v", code, body, err)
	}
	checkEntries(t, "chat", chatRes.Choices[0].Logprobs.Content, chatRes.Usage.CompletionTokens, 3)

	// OpenAI chat, streamed: the entries arrive across the chunks.
	res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"`+m+`",
		"messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0,"logprobs":true,"top_logprobs":2,
		"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	var streamed []lpEntry
	tokens := 0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if line == "" || line == "[DONE]" || line == sc.Text() {
			continue
		}
		var c struct {
			Choices []struct {
				Logprobs *struct {
					Content []lpEntry `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Logprobs != nil {
			streamed = append(streamed, c.Choices[0].Logprobs.Content...)
		}
		if c.Usage != nil {
			tokens = c.Usage.CompletionTokens
		}
	}
	res.Body.Close()
	checkEntries(t, "chat stream", streamed, tokens, 2)

	// OpenAI completions: the legacy shape.
	code, body = post(t, url+"/v1/completions", `{"model":"`+m+`","prompt":"Once upon","max_tokens":5,"temperature":0,"logprobs":2}`)
	var cmpl struct {
		Choices []struct {
			Text     string `json:"text"`
			Logprobs struct {
				Tokens        []string             `json:"tokens"`
				TokenLogprobs []float32            `json:"token_logprobs"`
				TopLogprobs   []map[string]float32 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &cmpl); code != 200 || err != nil {
		t.Fatalf("completions: %d %s %v", code, body, err)
	}
	lp := cmpl.Choices[0].Logprobs
	if len(lp.Tokens) != 5 || len(lp.TokenLogprobs) != 5 || len(lp.TopLogprobs) != 5 || len(lp.TextOffset) != 5 ||
		lp.TextOffset[0] != 0 || strings.Join(lp.Tokens, "") != cmpl.Choices[0].Text {
		t.Fatalf("completions logprobs %+v for text %q", lp, cmpl.Choices[0].Text)
	}

	// Ollama generate, whole and streamed.
	code, body = post(t, url+"/api/generate", `{"model":"`+m+`","prompt":"Once upon","raw":true,"stream":false,
		"logprobs":true,"top_logprobs":4,"options":{"num_predict":5,"temperature":0}}`)
	var og struct {
		Logprobs  []lpEntry `json:"logprobs"`
		EvalCount int       `json:"eval_count"`
	}
	if err := json.Unmarshal(body, &og); code != 200 || err != nil {
		t.Fatalf("ollama: %d %s %v", code, body, err)
	}
	checkEntries(t, "ollama", og.Logprobs, og.EvalCount, 4)
	code, body = post(t, url+"/api/chat", `{"model":"`+m+`","messages":[{"role":"user","content":"Hi"}],
		"logprobs":true,"options":{"num_predict":4,"temperature":0}}`)
	var n, evals int
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		var c struct {
			Logprobs  []lpEntry `json:"logprobs"`
			EvalCount int       `json:"eval_count"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("ollama chat line %q: %v", line, err)
		}
		n += len(c.Logprobs)
		evals += c.EvalCount
	}
	if code != 200 || n != evals || n == 0 {
		t.Fatalf("ollama chat stream: %d, %d entries for %d tokens", code, n, evals)
	}

	// Range and combination errors name the field.
	for route, b := range map[string]string{
		"/v1/chat/completions": `{"model":"` + m + `","messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`,
		"/v1/completions":      `{"model":"` + m + `","prompt":"x","logprobs":9}`,
		"/api/generate":        `{"model":"` + m + `","prompt":"x","top_logprobs":3}`,
	} {
		code, body := post(t, url+route, b)
		if code != 400 || !strings.Contains(string(body), "logprobs") {
			t.Errorf("%s %s: %d %s", route, b, code, body)
		}
	}
	code, body = post(t, url+"/v1/chat/completions", `{"model":"`+m+`","messages":[{"role":"user","content":"x"}],"top_logprobs":2}`)
	if code != 400 || !strings.Contains(string(body), "top_logprobs needs logprobs") {
		t.Errorf("top_logprobs without logprobs: %d %s", code, body)
	}
}
