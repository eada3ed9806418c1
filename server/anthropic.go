package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/woolly-llm/woolly/runtime/chat"
)

// The Anthropic Messages API: POST /v1/messages and
// /v1/messages/count_tokens. A request becomes the same job as an OpenAI
// or Ollama chat (the model's template renders it; sampling, stop strings,
// tool calls and thinking go through the shared pipeline), answered in
// Anthropic's shapes: content blocks (text, thinking, tool_use), stop
// reasons end_turn / max_tokens / stop_sequence / tool_use, and streams of
// named SSE events (message_start, ping, content_block_start / delta /
// stop, message_delta, message_stop). The anthropic-version header is
// accepted whatever its value; the key may come in x-api-key.

// anthropicErrorTypes are the error types Anthropic names by status
// (errorType: api_error for another 5xx).
var anthropicErrorTypes = map[int]string{
	http.StatusUnauthorized:          "authentication_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	http.StatusServiceUnavailable:    "overloaded_error",
}

// anthropicError is an error in Anthropic's shape, its type from the status.
func anthropicError(status int, msg string) map[string]any {
	typ := errorType(status, anthropicErrorTypes, "api_error")
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// anthropicBlock is one content block of a request (every type's fields;
// which apply depends on Type).
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  string          `json:"thinking"` // a thinking block's text
}

// anthropicContent is a message's content: a string (one text block) or a
// list of blocks.
type anthropicContent []anthropicBlock

func (c *anthropicContent) UnmarshalJSON(b []byte) error {
	text := func(s string) anthropicBlock { return anthropicBlock{Type: "text", Text: s} }
	blocks, err := stringOrList(b, text, "content must be a string or a list of content blocks")
	if err != nil {
		return err
	}
	*c = blocks
	return nil
}

type anthropicRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string           `json:"role"`
		Content anthropicContent `json:"content"`
	} `json:"messages"`
	System        *anthropicContent `json:"system"`
	MaxTokens     *int              `json:"max_tokens"`
	StopSequences []string          `json:"stop_sequences"`
	Stream        bool              `json:"stream"`
	Temperature   *float32          `json:"temperature"`
	TopP          *float32          `json:"top_p"`
	TopK          *int              `json:"top_k"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	Thinking      json.RawMessage   `json:"thinking"`
	OutputConfig  *struct {
		Effort *string         `json:"effort"`
		Format json.RawMessage `json:"format"`
	} `json:"output_config"`
	// countOnly: a count_tokens body (max_tokens not required).
	countOnly bool
	// omitThinking: thinking.display "omitted" (blocks without their text).
	omitThinking bool
}

// The fields of /v1/messages; unknown ones are a 400, as Anthropic answers.
var anthropicFields = map[string]fieldRule{
	"model": honoured, "messages": honoured, "system": honoured, "max_tokens": honoured,
	"stop_sequences": honoured, "stream": honoured, "temperature": honoured, "top_p": honoured,
	"top_k": honoured, "tools": honoured, "tool_choice": honoured, "thinking": honoured,
	"output_config": honoured, // format: structured output; effort: see thinking
	"metadata":      noEffect, // user_id: for Anthropic's abuse detection
	"service_tier":  noEffect, // one tier here
	"speed":         noEffect, // one speed here
	"inference_geo": noEffect, "workspace_id": noEffect, "user_profile_id": noEffect, "diagnostics": noEffect,
	// Prompt caching needs no marker: the server reuses the longest cached
	// prefix of every prompt by itself.
	"cache_control":      noEffect,
	"container":          unsupported("container (code execution)"),
	"mcp_servers":        unsupported("mcp_servers (MCP connector)"),
	"context_management": unsupported("context_management"),
}

var anthropicCountFields = map[string]fieldRule{
	"model": honoured, "messages": honoured, "system": honoured, "tools": honoured,
	"tool_choice": honoured, "thinking": honoured, "output_config": honoured,
	"speed": noEffect, "workspace_id": noEffect, "user_profile_id": noEffect, "cache_control": noEffect,
	"mcp_servers":        unsupported("mcp_servers (MCP connector)"),
	"context_management": unsupported("context_management"),
}

// blockText joins the text blocks of content; other block types are a 400
// naming where they are (what).
func blockText(what string, blocks anthropicContent) (string, error) {
	var parts []string
	for k, b := range blocks {
		if err := textOnly(b.Type); err != nil {
			return "", badRequest("%s[%d]: %v", what, k, err)
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n"), nil
}

// textOnly refuses a block type other than text, images by name.
func textOnly(typ string) error {
	switch typ {
	case "text":
		return nil
	case "image", "document":
		return errors.New(typ + " content blocks are not supported: Woolly serves text-only models (no vision yet)")
	case "":
		return errors.New("content block without a type")
	}
	return errors.New("content block type " + typ + " is not supported here")
}

// toolResultText is a tool_result block's content: a string or text blocks.
func toolResultText(what string, raw json.RawMessage) (string, error) {
	if absent(raw) {
		return "", nil
	}
	var c anthropicContent
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", badRequest("%s.content: %v", what, err)
	}
	return blockText(what+".content", c)
}

// anthropicTool converts a tool definition to the function shape the
// templates and the forced-call grammar read.
func anthropicTool(i int, raw json.RawMessage) (json.RawMessage, error) {
	var t struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, badRequest("tools[%d]: want {\"name\": ..., \"description\": ..., \"input_schema\": {...}}", i)
	}
	if t.Type != "" && t.Type != "custom" {
		return nil, badRequest("tools[%d]: tool type %q is not supported (Anthropic's server tools run on Anthropic's side); only custom tools with an input_schema", i, t.Type)
	}
	if t.Name == "" {
		return nil, badRequest("tools[%d].name is required", i)
	}
	if absent(t.InputSchema) || !bytes.HasPrefix(bytes.TrimSpace(t.InputSchema), []byte("{")) {
		return nil, badRequest("tools[%d].input_schema is required (a JSON schema object)", i)
	}
	// In OpenAI's key order: templates print the tools as they are.
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	return json.Marshal(struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}{"function", function{t.Name, t.Description, t.InputSchema}})
}

// thinking reads thinking: {"type": "enabled", "budget_tokens": N} turns
// the model's reasoning switch on, {"type": "disabled"} off, and
// {"type": "adaptive"} or no field (where Anthropic's models decide) leaves
// the template's default. budget_tokens is checked as Anthropic checks it
// (>= 1024 and below max_tokens) and bounds the reasoning (thinkbudget.go);
// the reasoning and the answer together are bounded by max_tokens. display "omitted" returns thinking blocks with
// their text left out. output_config.effort (how hard to think) is
// gpt-oss's reasoning effort (xhigh and max as high); without it a
// budget picks the effort (budgetEffort). Other templates' switch is only
// on or off.
func (q *anthropicRequest) thinking(j *job) error {
	if q.OutputConfig != nil && q.OutputConfig.Effort != nil {
		switch *q.OutputConfig.Effort {
		case "low", "medium", "high":
			j.effort = *q.OutputConfig.Effort
		case "xhigh", "max":
			j.effort = "high"
		default:
			return badRequest("output_config.effort must be low, medium, high, xhigh or max, not %q", *q.OutputConfig.Effort)
		}
		j.effortField = "output_config.effort"
	}
	if absent(q.Thinking) {
		return nil
	}
	off, on := false, true
	var th struct {
		Type         string  `json:"type"`
		BudgetTokens *int    `json:"budget_tokens"`
		Display      *string `json:"display"`
	}
	if err := decodeStrict(q.Thinking, &th, "thinking"); err != nil {
		return err
	}
	if err := checkEnum("thinking.display", th.Display, "summarized", "omitted"); err != nil {
		return err
	}
	q.omitThinking = th.Display != nil && *th.Display == "omitted"
	switch th.Type {
	case "disabled":
		j.think = &off
		return nil
	case "adaptive":
		return nil
	case "enabled":
	default:
		return badRequest(`thinking.type must be "enabled", "adaptive" or "disabled", not %q`, th.Type)
	}
	if th.BudgetTokens == nil {
		return badRequest("thinking.budget_tokens is required with thinking enabled")
	}
	if *th.BudgetTokens < 1024 {
		return badRequest("thinking.budget_tokens must be >= 1024")
	}
	if q.MaxTokens != nil && *th.BudgetTokens >= *q.MaxTokens {
		return badRequest("thinking.budget_tokens must be less than max_tokens")
	}
	j.think = &on
	j.thinkBudget = *th.BudgetTokens
	if j.effortField == "" { // gpt-oss: the budget picks the effort
		j.effort, j.effortField = budgetEffort(*th.BudgetTokens), "thinking.budget_tokens"
	}
	return nil
}

// toolChoice reads tool_choice: auto (the default), any (one call of any
// tool, by constrained sampling), tool (that tool), none (the tools are not
// offered); disable_parallel_tool_use keeps only the first call.
func (q *anthropicRequest) toolChoice(j *job) error {
	if absent(q.ToolChoice) {
		return nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := decodeStrict(q.ToolChoice, &tc, "tool_choice"); err != nil {
		return err
	}
	j.noParallel = tc.DisableParallelToolUse
	switch tc.Type {
	case "auto":
	case "none":
		j.tools = nil
	case "any":
		j.forceTool = new(string)
	case "tool":
		if tc.Name == "" {
			return badRequest(`tool_choice.name is required with type "tool"`)
		}
		j.forceTool = &tc.Name
	default:
		return badRequest(`tool_choice.type must be "auto", "any", "tool" or "none", not %q`, tc.Type)
	}
	if tc.Type != "tool" && tc.Name != "" {
		return badRequest(`tool_choice.name is only for type "tool"`)
	}
	if j.forceTool == nil {
		return nil
	}
	if len(j.tools) > 0 && j.think != nil && *j.think {
		return badRequest(`tool_choice: "any" and "tool" force a call from the first token, so they cannot be combined with thinking`)
	}
	return j.forcedCall(j.tools, j.req.Grammar != nil, "output_config.format")
}

func (q *anthropicRequest) job(bool) (*job, error) {
	if q.Model == "" {
		return nil, badRequest("model: Field required")
	}
	// As Anthropic's API, a conversation longer than the context is a 400
	// ("prompt is too long"), not cut: agents compact it themselves.
	j := &job{model: q.Model, req: defaultRequest(), splitReasoning: true, countOnly: q.countOnly, keepAllTurns: true}
	if !q.countOnly {
		if q.MaxTokens == nil {
			return nil, badRequest("max_tokens: Field required")
		}
		if *q.MaxTokens < 1 {
			return nil, badRequest("max_tokens must be >= 1")
		}
		j.req.MaxTokens = *q.MaxTokens
	}
	// Anthropic's ranges: temperature and top_p in [0, 1], top_k >= 0.
	if err := checkRange("temperature", q.Temperature, 0, 1); err != nil {
		return nil, err
	}
	if err := checkRange("top_p", q.TopP, 0, 1); err != nil {
		return nil, err
	}
	if q.TopK != nil && *q.TopK < 0 {
		return nil, badRequest("top_k %d is out of range: want a value >= 0", *q.TopK)
	}
	set(&j.req.Temperature, q.Temperature)
	set(&j.req.TopP, q.TopP)
	set(&j.req.TopK, q.TopK)
	j.req.Stop = q.StopSequences
	if err := q.thinking(j); err != nil {
		return nil, err
	}
	if q.OutputConfig != nil && !absent(q.OutputConfig.Format) {
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := decodeStrict(q.OutputConfig.Format, &f, "output_config.format"); err != nil {
			return nil, err
		}
		if f.Type != "json_schema" || absent(f.Schema) {
			return nil, badRequest(`output_config.format must be {"type": "json_schema", "schema": {...}}`)
		}
		g, err := compileSchema("output_config.format.schema", f.Schema)
		if err != nil {
			return nil, err
		}
		j.req.Grammar = g
	}
	for i, raw := range q.Tools {
		t, err := anthropicTool(i, raw)
		if err != nil {
			return nil, err
		}
		j.tools = append(j.tools, t)
	}
	if err := q.toolChoice(j); err != nil {
		return nil, err
	}
	if q.System != nil {
		sys, err := blockText("system", *q.System)
		if err != nil {
			return nil, err
		}
		if sys != "" {
			j.messages = append(j.messages, chat.Message{Role: "system", Content: sys})
		}
	}
	if err := q.conversation(j); err != nil {
		return nil, err
	}
	return j, nil
}

// conversation converts messages: a user turn's tool_result blocks become
// tool messages (named after the tool_use they answer) and its text a user
// message; an assistant turn's text and tool_use blocks one assistant
// message. An assistant turn's thinking blocks become its reasoning
// (message.reasoning_content in the template): Qwen3's renders it for the
// turns after the last user message, the current tool loop, and leaves
// earlier turns' out, as Anthropic keeps thinking in the context only while
// tools are being used.
func (q *anthropicRequest) conversation(j *job) error {
	if len(q.Messages) == 0 {
		return badRequest("messages: at least one message is required")
	}
	toolNames := map[string]string{} // tool_use id -> name
	for i, m := range q.Messages {
		var text []string
		flush := func(role string) {
			if len(text) > 0 {
				j.messages = append(j.messages, chat.Message{Role: role, Content: strings.Join(text, "\n")})
				text = nil
			}
		}
		switch m.Role {
		case "user":
			for k, b := range m.Content {
				where := func() string { return fmt.Sprintf("messages[%d].content[%d]", i, k) }
				if b.Type != "tool_result" {
					if err := textOnly(b.Type); err != nil {
						return badRequest("%s: %v", where(), err)
					}
					text = append(text, b.Text)
					continue
				}
				name, ok := toolNames[b.ToolUseID]
				if !ok {
					return badRequest("%s: tool_use_id %q answers no tool_use block of an earlier assistant message", where(), b.ToolUseID)
				}
				out, err := toolResultText(where(), b.Content)
				if err != nil {
					return err
				}
				if b.IsError {
					out = "Error: " + out
				}
				flush("user")
				j.messages = append(j.messages, chat.Message{Role: "tool", Content: out, ToolCallID: b.ToolUseID, ToolName: name})
			}
			flush("user")
		case "assistant":
			if i == len(q.Messages)-1 && !q.countOnly {
				return badRequest("messages[%d]: a final assistant message (a prefill of the answer) is not supported; end with a user message", i)
			}
			msg := chat.Message{Role: "assistant"}
			var thoughts []string
			for k, b := range m.Content {
				switch b.Type {
				case "thinking":
					if b.Thinking != "" {
						thoughts = append(thoughts, b.Thinking)
					}
				case "redacted_thinking": // encrypted by Anthropic: nothing to read
					continue
				case "tool_use":
					if b.ID == "" || b.Name == "" {
						return badRequest("messages[%d].content[%d]: a tool_use block needs an id and a name", i, k)
					}
					args, err := argumentsObject(b.Input)
					if err != nil || strings.HasPrefix(strings.TrimSpace(string(b.Input)), `"`) {
						return badRequest("messages[%d].content[%d].input must be a JSON object", i, k)
					}
					toolNames[b.ID] = b.Name
					msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
				default:
					if err := textOnly(b.Type); err != nil {
						return badRequest("messages[%d].content[%d]: %v", i, k, err)
					}
					text = append(text, b.Text)
				}
			}
			msg.Content = strings.Join(text, "\n")
			msg.Reasoning = strings.Join(thoughts, "\n")
			j.messages = append(j.messages, msg)
		default:
			return badRequest(`messages[%d].role must be "user" or "assistant", not %q (the system prompt goes in system)`, i, m.Role)
		}
	}
	return nil
}

// anthropicStop is a finished answer's stop_reason and stop_sequence.
func anthropicStop(j *job, res *GenerateResult) (string, any) {
	switch {
	case res.StopReason == "length":
		return "max_tokens", nil
	case j.callsMade > 0:
		return "tool_use", nil
	case res.StopString != "":
		return "stop_sequence", res.StopString
	}
	return "end_turn", nil
}

// anthropicUsage is the usage of a finished generation (res) or, before
// one, of the rendered prompt. As Anthropic counts, input_tokens are the
// prompt tokens evaluated and cache_read_input_tokens those reused from
// the prefix cache (their sum is the prompt).
func anthropicUsage(j *job, res *GenerateResult) map[string]any {
	if res == nil {
		return map[string]any{"input_tokens": j.promptTokens, "output_tokens": 0}
	}
	return map[string]any{"input_tokens": res.PromptTokens - res.CachedTokens, "cache_read_input_tokens": res.CachedTokens,
		"output_tokens": res.Tokens}
}

func toolUseBlock(c chat.ToolCall) map[string]any {
	id := c.ID
	if id == "" {
		id = newID("toolu_")
	}
	return map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": json.RawMessage(c.Arguments)}
}

// anthropicBlocks turns streamed text into content-block events: it keeps
// the open block (thinking or text) and the next block's index.
type anthropicBlocks struct {
	partStream
	omit  bool // thinking blocks without their text
	index int
	open  string // "", "thinking" or "text"
}

func (a *anthropicBlocks) emit(name string, data map[string]any) {
	data["type"] = name
	a.out = append(a.out, sseEvent{name, data})
}

func (a *anthropicBlocks) close() {
	if a.open == "" {
		return
	}
	a.emit("content_block_stop", map[string]any{"index": a.index})
	a.index++
	a.open = ""
}

func (a *anthropicBlocks) delta(typ, text string) {
	if text == "" {
		return
	}
	if a.open != typ {
		a.close()
		block := map[string]any{"type": typ, typ: ""}
		if typ == "thinking" {
			block["signature"] = ""
		}
		a.emit("content_block_start", map[string]any{"index": a.index, "content_block": block})
		a.open = typ
	}
	if typ == "thinking" && a.omit {
		return
	}
	a.emit("content_block_delta", map[string]any{"index": a.index, "delta": map[string]any{"type": typ + "_delta", typ: text}})
}

// call adds a tool call as a whole tool_use block.
func (a *anthropicBlocks) call(c chat.ToolCall) {
	a.close()
	block := toolUseBlock(c)
	args := string(c.Arguments)
	block["input"] = map[string]any{}
	a.emit("content_block_start", map[string]any{"index": a.index, "content_block": block})
	a.emit("content_block_delta", map[string]any{"index": a.index, "delta": map[string]any{"type": "input_json_delta", "partial_json": args}})
	a.emit("content_block_stop", map[string]any{"index": a.index})
	a.index++
}

// anthropicMessages serves POST /v1/messages.
func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	q, j := decodeJob[anthropicRequest](s, w, r, famAnthropic, true, fieldCheck{anthropicFields, true})
	if j == nil {
		return
	}
	id := newID("msg_")
	blocks := &anthropicBlocks{omit: q.omitThinking}
	blocks.partStream = partStream{j: j, ev: blocks, thinkKind: "thinking", textKind: "text"}
	s.serve(w, r, j, q.Stream, shapes{
		fam: famAnthropic, sse: true, noDone: true,
		keepAlive: sseEvent{"ping", map[string]any{"type": "ping"}},
		start: func() []any {
			msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": q.Model, "content": []any{},
				"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(j, nil)}
			return []any{sseEvent{"message_start", map[string]any{"type": "message_start", "message": msg}},
				sseEvent{"ping", map[string]any{"type": "ping"}}}
		},
		streamError: func(status int, msg string) any {
			return sseEvent{"error", anthropicError(status, msg)}
		},
		piece: blocks.piece,
		final: func(o *outcome, _ string) []any {
			ev := blocks.feed("", true)
			reason, seq := anthropicStop(j, o.res)
			ev = append(ev, sseEvent{"message_delta", map[string]any{"type": "message_delta",
				"delta": map[string]any{"stop_reason": reason, "stop_sequence": seq}, "usage": anthropicUsage(j, o.res)}},
				sseEvent{"message_stop", map[string]any{"type": "message_stop"}})
			return []any{ev}
		},
		whole: func(o *outcome, text, _ string) any {
			content := []any{}
			if j.thinking {
				var th string
				if th, text = splitThinking(text); th != "" {
					if q.omitThinking {
						th = ""
					}
					content = append(content, map[string]any{"type": "thinking", "thinking": th, "signature": ""})
				}
			}
			text, calls := j.toolFeed(text, true)
			if text != "" {
				content = append(content, map[string]any{"type": "text", "text": text})
			}
			for _, c := range calls {
				content = append(content, toolUseBlock(c))
			}
			reason, seq := anthropicStop(j, o.res)
			return map[string]any{"id": id, "type": "message", "role": "assistant", "model": q.Model,
				"content": content, "stop_reason": reason, "stop_sequence": seq, "usage": anthropicUsage(j, o.res)}
		},
	})
}

// anthropicCountTokens serves POST /v1/messages/count_tokens: the tokens
// of the prompt the model's template renders for the request (the whole
// conversation, without dropping turns to fit the context).
func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	j := s.jobFrom(w, r, famAnthropic, true, fieldCheck{anthropicCountFields, true}, &anthropicRequest{countOnly: true})
	if j == nil {
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	l, err := s.models.acquire(ctx, j.model, 0)
	if err != nil {
		s.failErr(w, r, famAnthropic, err)
		return
	}
	defer l.release(nil)
	if l.model().Meta().CountTokens == nil {
		s.fail(w, r, famAnthropic, http.StatusNotImplemented, "this model cannot count tokens")
		return
	}
	// Bounded as a generation is: a prompt that could never fit the
	// context is refused before it is tokenized.
	nctx, err := requestCtx(l.model().Meta(), j.req.NumCtx)
	if err == nil {
		err = checkJobBytes(l.model().Meta(), j, nctx)
	}
	if err != nil {
		s.failErr(w, r, famAnthropic, err)
		return
	}
	if _, err := buildPrompt(ctx, l.e, j, nctx); err != nil {
		s.failErr(w, r, famAnthropic, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": j.promptTokens})
}
