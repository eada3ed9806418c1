package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// The OpenAI API: /v1/chat/completions, /v1/completions, /v1/models.
// Streams are SSE frames ending in "data: [DONE]".

// stringList is a string or a list of strings (OpenAI's stop and prompt).
type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	l, err := stringOrList(b, func(one string) string { return one }, "expected a string or a list of strings")
	if err != nil {
		return err
	}
	*s = l
	return nil
}

// stringOrList decodes b, a JSON string or a list of E: a string s is the
// list of one(s) alone. A failure is the error msg (and a nil list).
func stringOrList[E any](b []byte, one func(string) E, msg string) ([]E, error) {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return []E{one(s)}, nil
	}
	var many []E
	if err := json.Unmarshal(b, &many); err != nil {
		return nil, errors.New(msg)
	}
	return many, nil
}

// completionPrompt is one prompt of /v1/completions: a text, or token
// ids (ids non-nil) evaluated as they are.
type completionPrompt struct {
	text string
	ids  []int32
}

// completionPrompts is /v1/completions' prompt in OpenAI's four forms: a
// string, a list of strings, a list of token ids, a list of such lists.
type completionPrompts []completionPrompt

func (p *completionPrompts) UnmarshalJSON(b []byte) error {
	const msg = "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids"
	if string(b) == "null" {
		*p = nil
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*p = completionPrompts{{text: one}}
		return nil
	}
	var texts []string
	if json.Unmarshal(b, &texts) == nil {
		if len(texts) == 0 {
			return errors.New("prompt must not be empty")
		}
		*p = make(completionPrompts, len(texts))
		for i, t := range texts {
			(*p)[i].text = t
		}
		return nil
	}
	// Token ids: decoded as int64 so that an id past int32 is named, not
	// wrapped; a fraction or a string among them fails the decoding.
	var ids []int64
	var lists [][]int64
	flat := json.Unmarshal(b, &ids) == nil
	switch {
	case flat:
		if len(ids) == 0 {
			return errors.New("prompt must not be empty")
		}
		lists = [][]int64{ids}
	case json.Unmarshal(b, &lists) == nil:
		if len(lists) == 0 {
			return errors.New("prompt must not be empty")
		}
	default:
		return errors.New(msg)
	}
	*p = make(completionPrompts, len(lists))
	for i, l := range lists {
		name := fmt.Sprintf("prompt[%d]", i)
		if flat {
			name = "prompt"
		}
		if len(l) == 0 {
			return fmt.Errorf("%s is an empty list of token ids", name)
		}
		out := make([]int32, len(l))
		for k, id := range l {
			if id < 0 || id > math.MaxInt32 {
				return fmt.Errorf("%s[%d]: token id %d is out of range", name, k, id)
			}
			out[k] = int32(id)
		}
		(*p)[i].ids = out
	}
	return nil
}

// openaiContent is a message's content: a string, or a list of parts of
// which text parts are supported, and in an assistant message refusal
// parts (what it said when it refused: their text joins the content).
type openaiContent struct {
	text    string
	refusal bool // a refusal part was given (only assistant messages may)
}

func (c *openaiContent) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != nil {
			c.text = *s
		}
		return nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("content must be a string or a list of parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			sb.WriteString(p.Text)
		case "refusal":
			sb.WriteString(p.Refusal)
			c.refusal = true
		default:
			return errors.New("only text content parts are supported, not " + p.Type)
		}
	}
	c.text = sb.String()
	return nil
}

type openaiRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string         `json:"role"`
		Content    openaiContent  `json:"content"`
		ToolCalls  []wireToolCall `json:"tool_calls"`
		ToolCallID string         `json:"tool_call_id"`
		Name       string         `json:"name"`
		// An assistant turn's reasoning sent back (llama-server's field).
		ReasoningContent *string `json:"reasoning_content"`
		// An assistant turn's refusal message: what it said.
		Refusal *string `json:"refusal"`
	} `json:"messages"`
	Suffix            *string           `json:"suffix"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	Prompt            completionPrompts `json:"prompt"`
	Stream            bool              `json:"stream"`
	StreamOptions     *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	sampling
	Stop stringList `json:"stop"`
	N    *int       `json:"n"`
	// chat: logprobs true/false and top_logprobs 0..20; completions (the
	// legacy API): logprobs N, the number of alternatives, 0..5.
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	Tools       json.RawMessage `json:"tools"`
	// llama-server's switches for thinking models (Qwen3):
	// chat_template_kwargs {"enable_thinking": false} and reasoning_format
	// ("auto"/"deepseek": the reasoning in reasoning_content; "none": inline).
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningFormat    *string                    `json:"reasoning_format"`
	ReasoningEffort    *string                    `json:"reasoning_effort"`
	// response_format: text, json_object or json_schema (structured output).
	ResponseFormat json.RawMessage `json:"response_format"`
	// grammar: llama-server's GBNF constraint (samplers.go).
	Grammar *string `json:"grammar"`
}

func (q *openaiRequest) job(chatReq bool) (*job, error) {
	if q.Model == "" {
		return nil, badRequest("model is required")
	}
	if q.N != nil && *q.N < 1 {
		return nil, badRequest("n must be >= 1")
	}
	if q.N != nil && *q.N != 1 {
		return nil, badRequest("n must be 1: one choice per prompt is supported")
	}
	if err := openaiRanges(q.Temperature, q.TopP, q.PresencePenalty, q.FrequencyPenalty); err != nil {
		return nil, err
	}
	j := &job{model: q.Model, req: defaultRequest(), splitReasoning: chatReq}
	if err := q.parseTools(j); err != nil {
		return nil, err
	}
	var err error
	if j.req.Grammar, err = openaiResponseFormat(q.ResponseFormat); err != nil {
		return nil, err
	}
	if j.req.GBNF, err = gbnfField(q.Grammar, j.req.Grammar != nil || j.forcedGrammar != nil); err != nil {
		return nil, err
	}
	for k, v := range q.ChatTemplateKwargs {
		if k != "enable_thinking" {
			return nil, badRequest("chat_template_kwargs: %s is not supported (only enable_thinking)", quoteShort(k))
		}
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, badRequest("chat_template_kwargs.enable_thinking must be true or false")
		}
		j.think = &b
	}
	if e := q.ReasoningEffort; e != nil {
		if err := openaiEffort(j, "reasoning_effort", *e); err != nil {
			return nil, err
		}
	}
	if f := q.ReasoningFormat; f != nil {
		switch *f {
		case "auto", "deepseek":
		case "none":
			j.splitReasoning = false
		default:
			return nil, badRequest("reasoning_format must be auto, deepseek or none, not %s", quoteShort(*f))
		}
	}
	if chatReq {
		if len(q.Messages) == 0 {
			return nil, badRequest("messages must not be empty")
		}
		for i, m := range q.Messages {
			role := m.Role
			if role == "developer" {
				role = "system"
			}
			if role == "" {
				return nil, badRequest("message without a role")
			}
			if (m.Content.refusal || m.Refusal != nil) && role != "assistant" {
				return nil, badRequest("messages[%d]: a refusal is only for assistant messages", i)
			}
			cm := chat.Message{Role: role, Content: m.Content.text, ToolCallID: m.ToolCallID, ToolName: m.Name}
			if m.Refusal != nil {
				cm.Content += *m.Refusal
			}
			if m.ReasoningContent != nil {
				cm.Reasoning = *m.ReasoningContent
			}
			var err error
			if cm.ToolCalls, err = historyCalls(i, m.ToolCalls); err != nil {
				return nil, err
			}
			j.messages = append(j.messages, cm)
		}
	} else {
		if err := q.checkPrompts(j); err != nil {
			return nil, err
		}
		if q.Suffix != nil {
			j.suffix = *q.Suffix
		}
		j.req.MaxTokens = 16 // OpenAI's default for completions
	}
	for _, v := range []*int{q.MaxTokens, q.MaxCompletionTokens} {
		if v != nil {
			if *v < 1 {
				return nil, badRequest("max_tokens must be >= 1")
			}
			j.req.MaxTokens = *v
		}
	}
	q.sampling.apply(&j.req)
	j.req.Stop = q.Stop
	if err := q.parseLogprobs(j, chatReq); err != nil {
		return nil, err
	}
	return j, nil
}

// maxPrompts bounds the prompts of one /v1/completions request (each is
// a generation of its own, run one after another).
const maxPrompts = 64

// checkPrompts checks completions' prompts and gives j the first; the
// others are checked against the model with it (job.prompts) before any
// is evaluated.
func (q *openaiRequest) checkPrompts(j *job) error {
	ps := q.Prompt
	switch {
	case len(ps) == 0:
		return badRequest("prompt is required")
	case len(ps) > maxPrompts:
		return badRequest("prompt: %d prompts; at most %d in one request", len(ps), maxPrompts)
	}
	if q.Suffix != nil && *q.Suffix != "" && ps[0].ids != nil {
		return badRequest("suffix needs a text prompt, not token ids")
	}
	if q.Suffix != nil && *q.Suffix != "" && len(ps) > 1 {
		return badRequest("suffix takes one prompt, not %d", len(ps))
	}
	j.prompt, j.promptIDs = ps[0].text, ps[0].ids
	if len(ps) > 1 {
		j.prompts = ps
	}
	return nil
}

// parseTools reads tools, tool_choice and parallel_tool_calls.
func (q *openaiRequest) parseTools(j *job) error {
	tools, err := decodeTools(q.Tools)
	if err != nil {
		return err
	}
	choice := strings.TrimSpace(string(q.ToolChoice))
	switch choice {
	case "", "null", `"auto"`:
	case `"none"`: // the model is not offered the tools
		tools = nil
	case `"required"`: // one call of any of the tools, by constrained sampling
		j.forceTool = new(string)
	default:
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(q.ToolChoice, &named) != nil || named.Function.Name == "" || (named.Type != "" && named.Type != "function") {
			return badRequest("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		j.forceTool = &named.Function.Name
	}
	if j.forceTool != nil {
		formatted := !absent(q.ResponseFormat) && !strings.Contains(string(q.ResponseFormat), `"text"`)
		if err := j.forcedCall(tools, formatted, "response_format"); err != nil {
			return err
		}
	}
	j.tools = tools
	j.noParallel = q.ParallelToolCalls != nil && !*q.ParallelToolCalls
	return nil
}

// parseLogprobs reads logprobs / top_logprobs as OpenAI defines them.
func (q *openaiRequest) parseLogprobs(j *job, chatReq bool) error {
	raw := strings.TrimSpace(string(q.Logprobs))
	if raw == "null" {
		raw = ""
	}
	if chatReq {
		if raw != "" {
			if err := json.Unmarshal(q.Logprobs, &j.logprobs); err != nil {
				return badRequest("logprobs must be true or false")
			}
		}
		if q.TopLogprobs != nil {
			if *q.TopLogprobs < 0 || *q.TopLogprobs > 20 {
				return badRequest("top_logprobs must be in [0, 20]")
			}
			if !j.logprobs {
				return badRequest("top_logprobs needs logprobs: true")
			}
			j.topLogprobs = *q.TopLogprobs
		}
		return nil
	}
	if q.TopLogprobs != nil {
		return badRequest("top_logprobs is a chat completions field; completions take logprobs N")
	}
	if raw != "" {
		var n int
		if err := json.Unmarshal(q.Logprobs, &n); err != nil || n < 0 || n > 5 {
			return badRequest("logprobs must be an integer in [0, 5] for completions")
		}
		j.logprobs, j.topLogprobs = true, n
	}
	return nil
}

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// usage is OpenAI's usage object; prompt_tokens_details.cached_tokens are
// the prompt tokens reused from an earlier request's KV cache (not
// evaluated), as OpenAI and llama-server report them.
func usage(o *outcome) map[string]any {
	return map[string]any{"prompt_tokens": o.res.PromptTokens, "completion_tokens": o.res.Tokens,
		"total_tokens":          o.res.PromptTokens + o.res.Tokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": o.res.CachedTokens}}
}

// openai serves /v1/chat/completions (chatReq) and /v1/completions.
func (s *Server) openai(w http.ResponseWriter, r *http.Request, chatReq bool) {
	q, j := decodeJob[openaiRequest](s, w, r, famOpenAI, chatReq, fieldCheck{pick(chatReq, openaiChatFields, openaiCompletionFields), true})
	if j == nil {
		return
	}
	id, created, model := newID("cmpl-"), time.Now().Unix(), q.Model
	object, chunkObject := "text_completion", "text_completion"
	if chatReq {
		id, object, chunkObject = newID("chatcmpl-"), "chat.completion", "chat.completion.chunk"
	}
	frame := func(choice map[string]any) map[string]any {
		return map[string]any{"id": id, "object": chunkObject, "created": created, "model": model,
			"choices": []any{choice}}
	}
	first := true
	var sp thinkSplitter
	// chatDelta is a streamed chat chunk: reasoning apart when the model's
	// template has a thinking switch (j.thinking, known once the prompt is
	// rendered, before any text), as llama-server returns it.
	chatDelta := func(t string, flush bool) map[string]any {
		delta := map[string]any{}
		if j.thinking {
			var th string
			if flush {
				th, t = sp.flush()
			} else {
				th, t = sp.feed(t)
			}
			if th != "" {
				delta["reasoning_content"] = th
			}
		}
		t, calls := j.toolFeed(t, flush)
		if t != "" || (!j.thinking && j.toolParser == nil && !flush) {
			delta["content"] = t
		}
		if len(calls) > 0 {
			delta["tool_calls"] = openaiToolCalls(calls, j.callsMade-len(calls), true)
		}
		if first && len(delta) > 0 {
			delta["role"], first = "assistant", false
		}
		return delta
	}
	if j.prompts != nil {
		includeUsage := q.StreamOptions != nil && q.StreamOptions.IncludeUsage
		s.completionsMulti(w, r, j, q.Stream, includeUsage, frame, func(choices []any, o *outcome) any {
			return map[string]any{"id": id, "object": object, "created": created, "model": model,
				"choices": choices, "usage": usage(o)}
		})
		return
	}
	textOffset := 0 // completions' text_offset: where each token starts in the text
	s.serve(w, r, j, q.Stream, shapes{
		fam: famOpenAI, sse: true,
		keepAlive: sseComment("keep-alive"), // skipped by SSE clients
		logprobs: func(b any, entries []logprobEntry) {
			choices, _ := b.(map[string]any)["choices"].([]any)
			if len(choices) == 0 {
				return
			}
			choice := choices[0].(map[string]any)
			if chatReq {
				choice["logprobs"] = map[string]any{"content": entries, "refusal": nil}
				return
			}
			choice["logprobs"] = legacyLogprobs(entries, &textOffset)
		},
		piece: func(t string) any {
			if !chatReq {
				return frame(map[string]any{"index": 0, "text": t, "logprobs": nil, "finish_reason": nil})
			}
			delta := chatDelta(t, false)
			if len(delta) == 0 {
				return nil // held back: maybe part of a tag
			}
			return frame(map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": nil})
		},
		final: func(o *outcome, reason string) []any {
			var last map[string]any
			var out []any
			if chatReq {
				if delta := chatDelta("", true); len(delta) > 0 {
					out = append(out, frame(map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": nil}))
				}
				delta := map[string]any{}
				if first {
					delta["role"] = "assistant"
				}
				last = frame(map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finishReason(j, reason)})
			} else {
				last = frame(map[string]any{"index": 0, "text": "", "logprobs": nil, "finish_reason": reason})
			}
			out = append(out, last)
			if q.StreamOptions != nil && q.StreamOptions.IncludeUsage {
				u := frame(nil)
				u["choices"] = []any{}
				u["usage"] = usage(o)
				out = append(out, u)
			}
			return out
		},
		whole: func(o *outcome, text, reason string) any {
			choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": reason}
			if chatReq {
				msg := map[string]any{"role": "assistant", "content": text}
				if j.thinking {
					var th string
					if th, text = splitThinking(text); th != "" {
						msg["reasoning_content"] = th
					}
				}
				text, calls := j.toolFeed(text, true)
				msg["content"] = text
				if len(calls) > 0 {
					msg["tool_calls"] = openaiToolCalls(calls, 0, false)
					if text == "" {
						msg["content"] = nil // as OpenAI answers a turn that only calls tools
					}
				}
				choice["finish_reason"] = finishReason(j, reason)
				choice["message"] = msg
			} else {
				choice["text"] = text
			}
			return map[string]any{"id": id, "object": object, "created": created, "model": model,
				"choices": []any{choice}, "usage": usage(o)}
		},
	})
}

// legacyLogprobs is completions' logprobs object of entries; *offset is
// where the first token starts in the choice's text (advanced past them).
func legacyLogprobs(entries []logprobEntry, offset *int) map[string]any {
	tokens, lps, tops, offsets := []string{}, []float32{}, []map[string]float32{}, []int{}
	for _, e := range entries {
		top := map[string]float32{}
		for _, a := range e.Top {
			top[a.Token] = a.Logprob
		}
		tokens, lps, tops = append(tokens, e.Token), append(lps, e.Logprob), append(tops, top)
		offsets = append(offsets, *offset)
		*offset += len(e.Token)
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
}

// completionsMulti answers a /v1/completions request of several prompts
// (j.prompts): one generation per prompt, one after another, each a choice
// with the prompt's index; usage sums them. Every prompt is checked
// against the model before the first runs (checkJobBytes). Streamed, the
// choices come one after the other, each closed by its finish_reason
// chunk, then the usage chunk (include_usage) and [DONE].
func (s *Server) completionsMulti(w http.ResponseWriter, r *http.Request, j *job, streaming, includeUsage bool,
	frame func(choice map[string]any) map[string]any, body func(choices []any, o *outcome) any) {
	if err := validate(&j.req); err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	if err := checkJob(j); err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	var st *stream
	var sendErr error
	keepAlive := func() {}
	stopKeepAlive := func() { keepAlive(); keepAlive = func() {} }
	defer stopKeepAlive()
	begin := func() error {
		if streaming && st == nil {
			st = newStream(w, true)
			keepAlive = keepStreamAlive(st, sseComment("keep-alive"))
		}
		return nil
	}
	// fail reports an error: a plain status before the stream, else an
	// error frame closing it.
	fail := func(status int, msg string) {
		if st == nil {
			s.fail(w, r, famOpenAI, status, msg)
			return
		}
		stopKeepAlive()
		st.send(errorBody(famOpenAI, status, msg))
		st.done()
	}
	var choices []any
	total := &outcome{res: &GenerateResult{}}
	for i, p := range j.prompts {
		one := *j
		one.prompt, one.promptIDs = p.text, p.ids
		var text strings.Builder
		var entries, pending []logprobEntry
		offset := 0
		if j.logprobs {
			one.req.TopLogprobs = j.topLogprobs
			one.req.OnLogprob = func(chosen runtime.TokenLogprob, top []runtime.TokenLogprob) {
				e := newLogprobEntryTop(chosen, top)
				entries, pending = append(entries, e), append(pending, e)
			}
		}
		// chunk is a streamed chunk of choice i, carrying the
		// log-probabilities of the tokens not sent yet.
		chunk := func(t string, reason any) map[string]any {
			c := map[string]any{"index": i, "text": t, "logprobs": nil, "finish_reason": reason}
			if j.logprobs && len(pending) > 0 {
				c["logprobs"] = legacyLogprobs(pending, &offset)
				pending = nil
			}
			return frame(c)
		}
		out, err := s.run(ctx, &one, begin, func(t string) error {
			if !streaming {
				text.WriteString(t)
				return nil
			}
			if t != "" {
				sendErr = st.send(chunk(t, nil))
			}
			return sendErr
		})
		switch {
		case sendErr != nil || r.Context().Err() != nil:
			return // the client left
		case err != nil:
			s.log.Printf("%s %s: generation failed: %v", r.Method, r.URL.Path, err)
			fail(statusOf(err), err.Error())
			return
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			fail(http.StatusServiceUnavailable, "request timed out")
			return
		}
		total.res.PromptTokens += out.res.PromptTokens
		total.res.Tokens += out.res.Tokens
		total.res.CachedTokens += out.res.CachedTokens
		if streaming {
			if st.send(chunk("", out.res.StopReason)) != nil {
				return
			}
			continue
		}
		choice := map[string]any{"index": i, "text": text.String(), "logprobs": nil, "finish_reason": out.res.StopReason}
		if j.logprobs {
			choice["logprobs"] = legacyLogprobs(entries, &offset)
		}
		choices = append(choices, choice)
	}
	if !streaming {
		writeJSON(w, http.StatusOK, body(choices, total))
		return
	}
	stopKeepAlive()
	if includeUsage {
		u := frame(nil)
		u["choices"] = []any{}
		u["usage"] = usage(total)
		if st.send(u) != nil {
			return
		}
	}
	st.done()
}

// finishReason is "tool_calls" when the model stopped after calling tools.
func finishReason(j *job, reason string) string {
	if j.callsMade > 0 && reason == "stop" {
		return "tool_calls"
	}
	return reason
}

func (s *Server) openaiModels(w http.ResponseWriter, r *http.Request) {
	data, ok := s.listModels(w, r, famOpenAI, func(l listing) any { return openaiModel(l) })
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func openaiModel(l listing) map[string]any {
	return map[string]any{"id": l.Name, "object": "model", "created": l.ModTime.Unix(), "owned_by": "woolly"}
}

func (s *Server) openaiModel(w http.ResponseWriter, r *http.Request) {
	l, err := s.models.describe(r.PathValue("model"))
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	writeJSON(w, http.StatusOK, openaiModel(l))
}
