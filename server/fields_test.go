package server

import (
	"strings"
	"testing"
)

// Documented fields this server cannot honour are a 400 naming them, in the
// route family's error shape; fields with nothing to do are accepted;
// unknown fields are a 400 on OpenAI's routes (as OpenAI answers) and left
// alone on Ollama's (as Ollama does).
func TestRequestFieldsNeverIgnored(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	m := `"model":"` + realModel + `"`
	chatMsgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct {
		route, body string
		code        int
		want        string
	}{
		{"/v1/chat/completions", `{` + m + `,` + chatMsgs + `,"response_format":{"type":"json_object","strict":true}}`, 400, "response_format"},
		{"/v1/chat/completions", `{` + m + `,` + chatMsgs + `,"logit_bias":{"50":-100}}`, 400, "logit_bias"},
		{"/v1/chat/completions", `{` + m + `,` + chatMsgs + `,"frobnicate":1}`, 400, "unrecognized request argument supplied: frobnicate"},
		{"/v1/chat/completions", `{` + m + `,` + chatMsgs + `,"tool_choice":"required"}`, 400, "tool_choice"},
		{"/v1/completions", `{` + m + `,"prompt":"x","echo":true}`, 400, "echo"},
		{"/v1/completions", `{` + m + `,"prompt":"x","suffix":"end"}`, 400, "suffix"},
		{"/api/generate", `{` + m + `,"prompt":"x","suffix":"end","stream":false}`, 400, "suffix"},
		{"/api/generate", `{` + m + `,"prompt":"x","template":"{{ .Prompt }}","stream":false}`, 400, "template"},
		{"/api/generate", `{` + m + `,"prompt":"x","options":{"tfs_z":0.5},"stream":false}`, 400, "options.tfs_z"},
		{"/api/chat", `{` + m + `,"messages":[{"role":"user","content":"x","images":["aGk="]}],"stream":false}`, 400, "messages[0].images"},
		// accepted: asking for nothing, or nothing to do here
		{"/v1/chat/completions", `{` + m + `,` + chatMsgs + `,"max_tokens":2,"response_format":{"type":"text"},"user":"u","store":false,"tool_choice":"none"}`, 200, ""},
		{"/v1/completions", `{` + m + `,"prompt":"x","max_tokens":2,"echo":false,"best_of":1}`, 200, ""},
		{"/api/generate", `{` + m + `,"prompt":"x","stream":false,"options":{"num_predict":2,"num_gpu":99,"use_mmap":true,"typical_p":1},"whatever":1}`, 200, ""},
	} {
		code, body := post(t, url+c.route, c.body)
		if code != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s %s: %d %s; want %d naming %q", c.route, c.body, code, body, c.code, c.want)
		}
		if code == 400 && strings.HasPrefix(c.route, "/v1/") && !strings.Contains(string(body), `"error":{`) {
			t.Errorf("%s: OpenAI error shape expected, got %s", c.route, body)
		}
		if code == 400 && strings.HasPrefix(c.route, "/api/") && !strings.Contains(string(body), `"error":"`) {
			t.Errorf("%s: Ollama error shape expected, got %s", c.route, body)
		}
	}
}

// checkEnum: absent or one of the values is fine; another is a 400 naming
// the field, the values and what was sent.
func TestCheckEnum(t *testing.T) {
	ok, bad := "omitted", "full"
	for _, v := range []*string{nil, &ok} {
		if err := checkEnum("thinking.display", v, "summarized", "omitted"); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
	for _, c := range []struct {
		values []string
		want   string
	}{
		{[]string{"summarized", "omitted"}, `thinking.display must be "summarized" or "omitted", not "full"`},
		{[]string{"a", "b", "c"}, `thinking.display must be "a", "b" or "c", not "full"`},
	} {
		err := checkEnum("thinking.display", &bad, c.values...)
		if he, isHTTP := err.(*httpError); !isHTTP || he.status != 400 || he.msg != c.want {
			t.Errorf("%v: %v, want a 400 %q", c.values, err, c.want)
		}
	}
}
