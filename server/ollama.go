package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	modelnames "github.com/woolly-llm/woolly/internal/models"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// The Ollama API: /api/generate, /api/chat, /api/tags, /api/show, /api/ps,
// /api/version. Durations are in nanoseconds; streams are NDJSON.

type ollamaOptions struct {
	NumCtx     *int `json:"num_ctx"`
	NumPredict *int `json:"num_predict"`
	sampling
	Stop        []string `json:"stop"`
	RepeatLastN *int     `json:"repeat_last_n"`
	NumThread   *int     `json:"num_thread"`
}

// keepAlive is Ollama's keep_alive: a duration string ("5m", "0", "-1") or
// a number of seconds. Negative keeps the model loaded.
type keepAlive struct{ d *time.Duration }

func (k *keepAlive) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var d time.Duration
	switch x := v.(type) {
	case nil:
		return nil
	case float64:
		d = time.Duration(x * float64(time.Second))
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			n, err2 := strconv.ParseFloat(x, 64)
			if err2 != nil {
				return fmt.Errorf("keep_alive %s is neither a duration nor a number of seconds", quoteShort(x))
			}
			d = time.Duration(n * float64(time.Second))
		}
	default:
		return fmt.Errorf("keep_alive must be a duration string or seconds")
	}
	if d < 0 {
		d = -1
	}
	k.d = &d
	return nil
}

type ollamaRequest struct {
	Model     string          `json:"model"`
	Name      string          `json:"name"` // older clients
	Prompt    string          `json:"prompt"`
	System    string          `json:"system"`
	Raw       bool            `json:"raw"`
	Messages  []ollamaMessage `json:"messages"`
	Suffix    string          `json:"suffix"`
	Stream    *bool           `json:"stream"`
	Format    json.RawMessage `json:"format"`
	Images    []string        `json:"images"`
	Tools     json.RawMessage `json:"tools"`
	Options   json.RawMessage `json:"options"`
	KeepAlive keepAlive       `json:"keep_alive"`
	Think     json.RawMessage `json:"think"`
	// logprobs: each token's log-probability in the response;
	// top_logprobs: that many alternatives too (0..20).
	Logprobs    bool `json:"logprobs"`
	TopLogprobs *int `json:"top_logprobs"`
	// RawMessages are the messages as sent, for the fields chat.Message
	// does not carry (images, tool_calls), which are refused, not dropped.
	RawMessages []map[string]json.RawMessage `json:"-"`
}

// ollamaMessage is a chat message as Ollama sends it: an assistant turn's
// tool_calls have their arguments as an object; a tool's answer names the
// tool in tool_name.
type ollamaMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls"`
	ToolName   string         `json:"tool_name"`
	ToolCallID string         `json:"tool_call_id"`
	Thinking   string         `json:"thinking"` // an assistant turn's reasoning sent back
}

// UnmarshalJSON decodes the request and keeps the raw messages.
func (q *ollamaRequest) UnmarshalJSON(b []byte) error {
	type plain ollamaRequest
	if err := json.Unmarshal(b, (*plain)(q)); err != nil {
		return err
	}
	var raw struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(b, &raw) == nil {
		q.RawMessages = raw.Messages
	}
	return nil
}

// job checks the request and makes its job (messages nil for generate).
func (q *ollamaRequest) job(chatReq bool) (*job, error) {
	if q.Model == "" {
		q.Model = q.Name
	}
	format, err := ollamaFormat(q.Format)
	if err != nil {
		return nil, err
	}
	if len(q.Images) > 0 {
		return nil, badRequest("images are not supported")
	}
	if q.Raw && q.System != "" {
		return nil, badRequest("system: raw mode does not support system (raw: true sends the prompt as it is)")
	}
	if q.Raw && q.Suffix != "" {
		return nil, badRequest("suffix: raw mode does not support suffix")
	}
	tools, err := decodeTools(q.Tools)
	if err != nil {
		return nil, err
	}
	think, err := parseThink(q.Think)
	if err != nil {
		return nil, err
	}
	j := &job{model: q.Model, prompt: q.Prompt, system: q.System, template: !q.Raw, req: defaultRequest(), keepAlive: q.KeepAlive.d, think: think,
		logprobs: q.Logprobs, tools: tools, suffix: q.Suffix}
	if lvl := thinkLevel(q.Think); lvl != "" {
		j.effort, j.effortField = lvl, "think"
	}
	j.req.Grammar = format
	if q.TopLogprobs != nil {
		if *q.TopLogprobs < 0 || *q.TopLogprobs > 20 {
			return nil, badRequest("top_logprobs must be in [0, 20]")
		}
		if !q.Logprobs && *q.TopLogprobs > 0 {
			return nil, badRequest("top_logprobs needs logprobs: true")
		}
		j.topLogprobs = *q.TopLogprobs
	}
	if chatReq {
		j.messages = []chat.Message{}
		for i, m := range q.Messages {
			cm := chat.Message{Role: m.Role, Content: m.Content, ToolName: m.ToolName, ToolCallID: m.ToolCallID, Reasoning: m.Thinking}
			var err error
			if cm.ToolCalls, err = historyCalls(i, m.ToolCalls); err != nil {
				return nil, err
			}
			j.messages = append(j.messages, cm)
		}
	}
	if err := checkFields(q.Options, ollamaOptionFields, false); err != nil {
		return nil, badRequest("options.%v", strings.TrimPrefix(err.Error(), ""))
	}
	for i, m := range q.RawMessages {
		for _, k := range []string{"images"} {
			if err := unsupported(k)(m[k]); m[k] != nil && err != nil {
				return nil, badRequest("messages[%d].%s is not supported", i, k)
			}
		}
	}
	if len(q.Options) > 0 && string(q.Options) != "null" {
		var o ollamaOptions
		if err := json.Unmarshal(q.Options, &o); err != nil {
			return nil, badRequest("invalid options: %v", err)
		}
		set(&j.req.NumCtx, o.NumCtx)
		set(&j.req.MaxTokens, o.NumPredict)
		set(&j.req.RepeatLastN, o.RepeatLastN)
		set(&j.threads, o.NumThread)
		o.sampling.apply(&j.req)
		if o.Stop != nil {
			j.req.Stop = o.Stop
		}
		if err := checkThreads(j.threads); err != nil {
			return nil, err
		}
	}
	if j.req.MaxTokens == 0 {
		return nil, badRequest("num_predict must not be 0")
	}
	return j, nil
}

func nowStamp() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// ollamaStats are the final chunk's counters.
func ollamaStats(m map[string]any, o *outcome, reason string) map[string]any {
	m["done"] = true
	m["done_reason"] = reason
	m["total_duration"] = time.Since(o.start).Nanoseconds()
	m["load_duration"] = o.loadDur.Nanoseconds()
	m["prompt_eval_count"] = o.res.PromptTokens
	m["prompt_eval_duration"] = o.res.PromptDuration.Nanoseconds()
	m["eval_count"] = o.res.Tokens
	m["eval_duration"] = o.res.GenDuration.Nanoseconds()
	return m
}

// ollama serves /api/chat (chatReq) and /api/generate.
func (s *Server) ollama(w http.ResponseWriter, r *http.Request, chatReq bool) {
	q, j := decodeJob[ollamaRequest](s, w, r, famOllama, chatReq, fieldCheck{pick(chatReq, ollamaChatFields, ollamaGenerateFields), false})
	if j == nil {
		return
	}
	if (chatReq && len(j.messages) == 0) || (!chatReq && j.prompt == "") {
		s.ollamaLoad(w, r, j, chatReq)
		return
	}
	model := q.Model
	thinking := j.think != nil && *j.think // return the reasoning apart, in "thinking"
	body := func(thought, text string, calls []chat.ToolCall) map[string]any {
		m := map[string]any{"model": model, "created_at": nowStamp()}
		if chatReq {
			msg := map[string]any{"role": "assistant", "content": text}
			if thinking {
				msg["thinking"] = thought
			}
			if len(calls) > 0 {
				msg["tool_calls"] = ollamaToolCalls(calls, j.callsMade-len(calls))
			}
			m["message"] = msg
		} else {
			m["response"] = text
			if thinking {
				m["thinking"] = thought
			}
		}
		return m
	}
	var sp thinkSplitter
	s.serve(w, r, j, q.Stream == nil || *q.Stream, shapes{
		fam: famOllama,
		logprobs: func(b any, entries []logprobEntry) {
			if m, ok := b.(map[string]any); ok {
				m["logprobs"] = entries
			}
		},
		piece: func(t string) any {
			th := ""
			if thinking {
				th, t = sp.feed(t)
			}
			t, calls := j.toolFeed(t, false)
			if th == "" && t == "" && len(calls) == 0 {
				return nil // held back: maybe part of a tag or a tool call
			}
			m := body(th, t, calls)
			m["done"] = false
			return m
		},
		final: func(o *outcome, reason string) []any {
			var out []any
			th, t := "", ""
			if thinking {
				th, t = sp.flush()
			}
			t, calls := j.toolFeed(t, true)
			if th != "" || t != "" || len(calls) > 0 {
				m := body(th, t, calls)
				m["done"] = false
				out = append(out, m)
			}
			return append(out, ollamaStats(body("", "", nil), o, reason))
		},
		whole: func(o *outcome, text, reason string) any {
			th := ""
			if thinking {
				th, text = splitThinking(text)
			}
			text, calls := j.toolFeed(text, true)
			return ollamaStats(body(th, text, calls), o, reason)
		},
	})
}

// ollamaLoad answers a request without a prompt: Ollama's way to load a
// model, or to unload it with keep_alive 0.
func (s *Server) ollamaLoad(w http.ResponseWriter, r *http.Request, j *job, chatReq bool) {
	resp := map[string]any{"model": j.model, "created_at": nowStamp(), "done": true}
	if chatReq {
		resp["message"] = map[string]any{"role": "assistant", "content": ""}
	} else {
		resp["response"] = ""
	}
	if j.keepAlive != nil && *j.keepAlive == 0 {
		if err := s.models.unload(j.model); err != nil {
			s.failErr(w, r, famOllama, err)
			return
		}
		resp["done_reason"] = "unload"
		writeJSON(w, http.StatusOK, resp)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	l, err := s.models.acquire(ctx, j.model, j.threads)
	if err != nil {
		s.failErr(w, r, famOllama, err)
		return
	}
	l.release(j.keepAlive)
	resp["done_reason"] = "load"
	writeJSON(w, http.StatusOK, resp)
}

// ollamaDetails is the "details" object of tags, show and ps.
func ollamaDetails(m ModelMeta) map[string]any {
	fam := m.Architecture
	var fams []string
	if fam != "" {
		fams = []string{fam}
	}
	return map[string]any{"parent_model": "", "format": "gguf", "family": fam, "families": fams,
		"parameter_size": paramSize(m.NParams), "quantization_level": m.FileType}
}

// paramSize writes a parameter count the way Ollama shows it: 9.3M, 7.2B.
func paramSize(n int64) string {
	f := float64(n)
	switch {
	case n >= 1e9:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", f/1e9), ".0") + "B"
	case n >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", f/1e6), ".0") + "M"
	case n >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", f/1e3), ".0") + "K"
	}
	return strconv.FormatInt(n, 10)
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	models, ok := s.listModels(w, r, famOllama, func(l listing) any {
		return map[string]any{
			"name": modelnames.Display(l.Name), "model": modelnames.Display(l.Name),
			"modified_at": l.ModTime.UTC().Format(time.RFC3339Nano), "size": l.Size,
			"digest": s.models.digest(l.File), "details": ollamaDetails(l.Meta),
		}
	})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if err := decode(r, &q, false); err != nil {
		s.failErr(w, r, famOllama, err)
		return
	}
	if q.Model == "" {
		q.Model = q.Name
	}
	l, err := s.models.describe(q.Model)
	if err == nil && l.MetaErr != nil {
		err = l.MetaErr
	}
	if err != nil {
		s.failErr(w, r, famOllama, err)
		return
	}
	m := l.Meta
	info := map[string]any{"general.architecture": m.Architecture, "general.parameter_count": m.NParams,
		"general.file_type": m.FileType}
	if m.Architecture != "" {
		info[m.Architecture+".context_length"] = m.ContextLength
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"license": "", "modelfile": "", "parameters": "", "template": m.templateText(),
		"details": ollamaDetails(m), "model_info": info, "capabilities": capabilities(m),
		"modified_at": l.ModTime.UTC().Format(time.RFC3339Nano),
	})
}

// capabilities lists what a model can do, as Ollama's /api/show reports
// it: completion; tools and thinking when its chat template has them;
// insert when it has fill-in-the-middle tokens (suffix works).
func capabilities(m ModelMeta) []string {
	if m.Embedding || m.EmbeddingOnly { // a file with {arch}.pooling_type (as Ollama decides it), or an encoder
		return []string{"embedding"}
	}
	caps := []string{"completion"}
	if t, err := m.template(); err == nil {
		if t.SupportsTools() {
			caps = append(caps, "tools")
		}
		if t.SupportsThinking() {
			caps = append(caps, "thinking")
		}
	}
	if m.FIM != nil {
		caps = append(caps, "insert")
	}
	return caps
}

func (s *Server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	models := []any{}
	for _, m := range s.models.running() {
		l, err := s.models.describe(m.Name)
		if err != nil {
			continue
		}
		exp := m.Expires
		if exp.IsZero() {
			exp = time.Now().AddDate(100, 0, 0) // kept loaded
		}
		models = append(models, map[string]any{
			"name": modelnames.Display(m.Name), "model": modelnames.Display(m.Name), "size": l.Size,
			"digest": s.models.digest(l.File), "details": ollamaDetails(m.Meta),
			"expires_at": exp.UTC().Format(time.RFC3339Nano), "size_vram": 0,
			"slots": m.Slots, // Woolly's: generations the model runs at once
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": OllamaAPIVersion})
}

// ollamaManagement are Ollama's model-management routes, with their
// methods: Woolly serves the GGUF files of its models directory and
// changes none of them over HTTP (a 501 in Ollama's shape: ollamaUnsupportedMsg).
var ollamaManagement = map[string][]string{
	"/api/pull": {"POST"}, "/api/push": {"POST"}, "/api/create": {"POST"},
	"/api/copy": {"POST"}, "/api/delete": {"DELETE"},
}

// ollamaUnsupportedMsg says, per management route, why it is not served
// and how to do the same with the files of the models directory.
var ollamaUnsupportedMsg = map[string]string{
	"/api/pull": "pull: Woolly downloads no models: fetch the GGUF file yourself and bring it into the server's models directory " +
		"(serve --models) with 'woolly import FILE [NAME]', or make a random-weight test model with 'woolly synth'",
	"/api/push": "push: Woolly uploads no models: they are the GGUF files of the server's models directory (serve --models); copy NAME.gguf from there yourself",
	"/api/create": "create: not supported over HTTP (no Modelfiles): put a GGUF file in the server's models directory (serve --models) " +
		"with 'woolly import FILE [NAME]' on the server's machine",
	"/api/copy": "copy: not supported over HTTP: on the server's machine run 'woolly cp SOURCE DESTINATION' " +
		"(or copy SOURCE.gguf to DESTINATION.gguf in the models directory, serve --models)",
	"/api/delete": "delete: not supported over HTTP: on the server's machine run 'woolly rm NAME' " +
		"(or remove NAME.gguf from the models directory, serve --models)",
}
