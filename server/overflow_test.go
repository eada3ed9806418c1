package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// A chat longer than the context is answered (its oldest turns dropped,
// as Ollama does), not refused; a single message longer than the context
// is still a 400.
func TestChatLongerThanContext(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	turn := strings.Repeat("the cat sat on the mat ", 5) // ~30+ tokens
	var msgs []map[string]string
	msgs = append(msgs, map[string]string{"role": "system", "content": "be brief"})
	for i := 0; i < 8; i++ {
		msgs = append(msgs, map[string]string{"role": "user", "content": turn}, map[string]string{"role": "assistant", "content": turn})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": "and then?"})
	b, _ := json.Marshal(map[string]any{"model": realModel, "messages": msgs, "stream": false,
		"options": map[string]any{"num_ctx": 128, "num_predict": 4, "temperature": 0}})
	code, body := post(t, url+"/api/chat", string(b))
	var res struct {
		PromptEvalCount int `json:"prompt_eval_count"`
		EvalCount       int `json:"eval_count"`
	}
	if err := json.Unmarshal(body, &res); code != 200 || err != nil {
		t.Fatalf("long chat: %d %s", code, body)
	}
	if res.PromptEvalCount >= 128 || res.PromptEvalCount < 20 {
		t.Errorf("prompt_eval_count %d with num_ctx 128: the history should have been cut to fit", res.PromptEvalCount)
	}
	b, _ = json.Marshal(map[string]any{"model": realModel, "stream": false, "options": map[string]any{"num_ctx": 16},
		"messages": []map[string]string{{"role": "user", "content": turn}}})
	code, body = post(t, url+"/api/chat", string(b))
	if code != 400 || !strings.Contains(string(body), "context holds 16") {
		t.Errorf("one message longer than the context: %d %s", code, body)
	}
}
