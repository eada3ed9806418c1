package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/runtime/chat"
	"github.com/woolly-llm/woolly/runtime/grammar"
)

// The OpenAI Responses API: POST /v1/responses. Stateless: nothing is
// stored, so previous_response_id is a 400 and a conversation is sent whole
// in input (messages, function_call and function_call_output items). The
// request becomes the same job as a chat completion (template, sampling,
// tool-call parser, forced-call and structured-output grammars); the answer
// is a response object whose output holds reasoning, message and
// function_call items, streamed as Responses events (response.created,
// response.output_item.added, response.output_text.delta,
// response.function_call_arguments.delta, response.completed, ...), each
// with its sequence_number.

type responsesRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float32          `json:"temperature"`
	TopP               *float32          `json:"top_p"`
	Stream             bool              `json:"stream"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Truncation         *string           `json:"truncation"`
	Include            []string          `json:"include"`
	Text               *struct {
		Format    json.RawMessage `json:"format"`
		Verbosity *string         `json:"verbosity"`
	} `json:"text"`
	Reasoning *struct {
		Effort          *string `json:"effort"`
		Summary         *string `json:"summary"`
		GenerateSummary *string `json:"generate_summary"`
	} `json:"reasoning"`
}

var responsesFields = map[string]fieldRule{
	"model": honoured, "input": honoured, "instructions": honoured, "tools": honoured,
	"tool_choice": honoured, "parallel_tool_calls": honoured, "max_output_tokens": honoured,
	"temperature": honoured, "top_p": honoured, "stream": honoured, "truncation": honoured,
	"include": honoured, "text": honoured, "reasoning": honoured,
	"previous_response_id": func(raw json.RawMessage) error {
		if absent(raw) {
			return nil
		}
		return errors.New("responses are not stored here (the server is stateless); send the whole conversation in input")
	},
	// Nothing is stored (the response says store: false); the rest only
	// label or route a request.
	"store": noEffect, "metadata": noEffect, "user": noEffect, "safety_identifier": noEffect,
	"prompt_cache_key": noEffect, "prompt_cache_retention": noEffect, "service_tier": noEffect, "stream_options": noEffect,
	"context_management": unsupported("context_management (server-side compaction)"),
	"background":         unsupported("background"),
	"conversation":       unsupported("conversation (stored conversations; send the whole conversation in input)"),
	"prompt":             unsupported("prompt (stored prompt templates)"),
	"top_logprobs":       unsupported("top_logprobs"),
	"max_tool_calls":     unsupported("max_tool_calls"),
}

// responsesContent is a message item's text: a string or a list of
// input_text / output_text parts.
func responsesContent(what string, raw json.RawMessage) (string, error) {
	if absent(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("%s.content must be a string or a list of content parts", what)
	}
	var sb strings.Builder
	for k, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			sb.WriteString(p.Text)
		case "refusal":
			sb.WriteString(p.Refusal)
		case "input_image", "input_file", "input_audio":
			return "", badRequest("%s.content[%d]: %s is not supported: Woolly serves text-only models", what, k, p.Type)
		default:
			return "", badRequest("%s.content[%d]: content part type %q is not supported", what, k, p.Type)
		}
	}
	return sb.String(), nil
}

// responsesItem is one input item (every type's fields).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// reasoningText is a reasoning item's text: its reasoning_text parts (the
// summary is not the reasoning; encrypted_content is for OpenAI's models).
func reasoningText(what string, raw json.RawMessage) (string, error) {
	if absent(raw) {
		return "", nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("%s.content must be a list of reasoning_text parts", what)
	}
	var texts []string
	for k, p := range parts {
		if p.Type != "reasoning_text" {
			return "", badRequest("%s.content[%d]: part type %q is not reasoning_text", what, k, p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// conversation converts input: a string is one user message; items are
// messages (developer is system), function_call items (the assistant's
// calls, joined to the assistant turn before them) and
// function_call_output items (tool messages). A reasoning item's text
// becomes the reasoning of the assistant turn after it
// (message.reasoning_content in the template: Qwen3's renders it for the
// turns after the last user message, the current tool loop).
func (q *responsesRequest) conversation(j *job) error {
	if q.Instructions != nil && *q.Instructions != "" {
		j.messages = append(j.messages, chat.Message{Role: "system", Content: *q.Instructions})
	}
	if absent(q.Input) {
		return badRequest("input is required")
	}
	var s string
	if json.Unmarshal(q.Input, &s) == nil {
		j.messages = append(j.messages, chat.Message{Role: "user", Content: s})
		return nil
	}
	var items []responsesItem
	if err := json.Unmarshal(q.Input, &items); err != nil {
		return badRequest("input must be a string or a list of items")
	}
	if len(items) == 0 {
		return badRequest("input must not be empty")
	}
	names := map[string]string{} // call_id -> function name
	reasoning := ""              // a reasoning item's, for the next assistant turn
	for i, it := range items {
		what := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			text, err := responsesContent(what, it.Content)
			if err != nil {
				return err
			}
			role := it.Role
			switch role {
			case "developer":
				role = "system"
			case "user", "assistant", "system":
			default:
				return badRequest("%s.role must be user, assistant, system or developer, not %q", what, it.Role)
			}
			msg := chat.Message{Role: role, Content: text}
			if role == "assistant" {
				msg.Reasoning, reasoning = reasoning, ""
			}
			j.messages = append(j.messages, msg)
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return badRequest("%s: a function_call needs call_id and name", what)
			}
			args, err := argumentsObject(it.Arguments)
			if err != nil {
				return badRequest("%s.arguments: %v", what, err)
			}
			names[it.CallID] = it.Name
			call := chat.ToolCall{ID: it.CallID, Name: it.Name, Arguments: args}
			if n := len(j.messages); n > 0 && j.messages[n-1].Role == "assistant" && reasoning == "" {
				j.messages[n-1].ToolCalls = append(j.messages[n-1].ToolCalls, call)
			} else {
				j.messages = append(j.messages, chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{call}, Reasoning: reasoning})
				reasoning = ""
			}
		case "function_call_output":
			name, ok := names[it.CallID]
			if !ok {
				return badRequest("%s: call_id %q answers no function_call item before it", what, it.CallID)
			}
			out, err := responsesContent(what+".output", it.Output)
			if err != nil {
				return err
			}
			j.messages = append(j.messages, chat.Message{Role: "tool", Content: out, ToolCallID: it.CallID, ToolName: name})
		case "reasoning":
			text, err := reasoningText(what, it.Content)
			if err != nil {
				return err
			}
			reasoning = text
		case "item_reference":
			return badRequest("%s: item_reference is not supported (nothing is stored here); send the items themselves", what)
		default:
			return badRequest("%s: item type %q is not supported", what, it.Type)
		}
	}
	return nil
}

// tools converts function tools to the chat-completions shape the
// templates and the forced-call grammar read.
func (q *responsesRequest) tools(j *job) error {
	for i, raw := range q.Tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return badRequest("tools[%d]: want {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}", i)
		}
		if t.Type != "function" {
			return badRequest("tools[%d]: tool type %q is not supported (only function tools)", i, t.Type)
		}
		if t.Name == "" {
			return badRequest("tools[%d].name is required", i)
		}
		params := t.Parameters
		if absent(params) {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		type function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		b, err := json.Marshal(struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}{"function", function{t.Name, t.Description, params}})
		if err != nil {
			return badRequest("tools[%d]: %v", i, err)
		}
		j.tools = append(j.tools, b)
	}
	choice := strings.TrimSpace(string(q.ToolChoice))
	switch choice {
	case "", "null", `"auto"`:
	case `"none"`:
		j.tools = nil
	case `"required"`:
		j.forceTool = new(string)
	default:
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(q.ToolChoice, &named) != nil || named.Type != "function" || named.Name == "" {
			return badRequest(`tool_choice must be "none", "auto", "required" or {"type": "function", "name": ...}`)
		}
		j.forceTool = &named.Name
	}
	j.noParallel = q.ParallelToolCalls != nil && !*q.ParallelToolCalls
	if j.forceTool == nil {
		return nil
	}
	return j.forcedCall(j.tools, j.req.Grammar != nil, "text.format")
}

// textFormat reads text.format: text, json_object or json_schema (name,
// schema, strict, description: the output follows the schema).
func textFormat(raw json.RawMessage) (*grammar.Grammar, error) {
	if absent(raw) {
		return nil, nil
	}
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
		Description string          `json:"description"`
	}
	if err := decodeStrict(raw, &f, "text.format"); err != nil {
		return nil, err
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return grammar.JSONObject(), nil
	case "json_schema":
		if absent(f.Schema) {
			return nil, badRequest("text.format.schema is required with type json_schema")
		}
		return compileSchema("text.format.schema", f.Schema)
	}
	return nil, badRequest(`text.format.type must be "text", "json_object" or "json_schema", not %q`, f.Type)
}

func (q *responsesRequest) job(bool) (*job, error) {
	if q.Model == "" {
		return nil, badRequest("model is required")
	}
	j := &job{model: q.Model, req: defaultRequest(), splitReasoning: true}
	if q.MaxOutputTokens != nil {
		if *q.MaxOutputTokens < 1 {
			return nil, badRequest("max_output_tokens must be >= 1")
		}
		j.req.MaxTokens = *q.MaxOutputTokens
	}
	if err := openaiRanges(q.Temperature, q.TopP, nil, nil); err != nil {
		return nil, err
	}
	set(&j.req.Temperature, q.Temperature)
	set(&j.req.TopP, q.TopP)
	// OpenAI's default truncation is "disabled": an input longer than the
	// context is a 400; "auto" drops the oldest turns.
	if err := checkEnum("truncation", q.Truncation, "auto", "disabled"); err != nil {
		return nil, err
	}
	j.keepAllTurns = q.Truncation == nil || *q.Truncation == "disabled"
	for _, inc := range q.Include {
		// Reasoning items carry their text, and earlier reasoning is not
		// sent back to the model: there is nothing to encrypt.
		if inc != "reasoning.encrypted_content" {
			return nil, badRequest("include: %q is not supported", inc)
		}
	}
	if q.Text != nil {
		if v := q.Text.Verbosity; v != nil && *v != "medium" {
			return nil, badRequest("text.verbosity %q is not supported (only medium)", *v)
		}
		g, err := textFormat(q.Text.Format)
		if err != nil {
			return nil, err
		}
		j.req.Grammar = g
	}
	if q.Reasoning != nil {
		if q.Reasoning.Effort != nil {
			if err := openaiEffort(j, "reasoning.effort", *q.Reasoning.Effort); err != nil {
				return nil, err
			}
		}
		for _, s := range []*string{q.Reasoning.Summary, q.Reasoning.GenerateSummary} {
			if s != nil && *s != "auto" && *s != "concise" && *s != "detailed" {
				return nil, badRequest("reasoning.summary must be auto, concise or detailed, not %q", *s)
			}
		}
	}
	if err := q.tools(j); err != nil {
		return nil, err
	}
	if err := q.conversation(j); err != nil {
		return nil, err
	}
	return j, nil
}

// responsesOutput builds the output items of an answer and streams their
// events: it keeps the items so far, the open text item (reasoning or
// message) and the event sequence number.
type responsesOutput struct {
	partStream
	items []map[string]any
	open  string // "", "reasoning" or "message": the last item takes text
	text  strings.Builder
	seq   int
	// last is the status the last message item closes with: "incomplete"
	// when the answer was cut (max_output_tokens), as OpenAI marks it
	// ("": completed).
	last string
}

// messageStatus is the status of a message item closing now: a message
// closed before the answer ends is complete.
func (o *responsesOutput) messageStatus() string {
	if o.last != "" {
		return o.last
	}
	return "completed"
}

func (o *responsesOutput) emit(typ string, data map[string]any) {
	data["type"] = typ
	data["sequence_number"] = o.seq
	o.seq++
	o.out = append(o.out, sseEvent{typ, data})
}

// clone copies an item for an event (the item changes after it is sent).
func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var c map[string]any
	json.Unmarshal(b, &c)
	return c
}

func textPart(kind, text string) map[string]any {
	if kind == "reasoning" {
		return map[string]any{"type": "reasoning_text", "text": text}
	}
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func (o *responsesOutput) close() {
	if o.open == "" {
		return
	}
	i := len(o.items) - 1
	item, text := o.items[i], o.text.String()
	id := item["id"]
	if o.open == "reasoning" {
		o.emit("response.reasoning_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
	} else {
		o.emit("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
	}
	o.emit("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": textPart(o.open, text)})
	item["content"] = []any{textPart(o.open, text)}
	if o.open == "message" {
		item["status"] = o.messageStatus()
	}
	o.emit("response.output_item.done", map[string]any{"output_index": i, "item": clone(item)})
	o.open = ""
	o.text.Reset()
}

func (o *responsesOutput) delta(kind, t string) {
	if t == "" {
		return
	}
	if o.open != kind {
		o.close()
		var item map[string]any
		if kind == "reasoning" {
			item = map[string]any{"type": "reasoning", "id": newID("rs_"), "summary": []any{}, "content": []any{}}
		} else {
			item = map[string]any{"type": "message", "id": newID("msg_"), "status": "in_progress", "role": "assistant", "content": []any{}}
		}
		o.items = append(o.items, item)
		i := len(o.items) - 1
		o.emit("response.output_item.added", map[string]any{"output_index": i, "item": clone(item)})
		o.emit("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "part": textPart(kind, "")})
		o.open = kind
	}
	i := len(o.items) - 1
	ev := map[string]any{"item_id": o.items[i]["id"], "output_index": i, "content_index": 0, "delta": t}
	if kind == "reasoning" {
		o.emit("response.reasoning_text.delta", ev)
	} else {
		ev["logprobs"] = []any{}
		o.emit("response.output_text.delta", ev)
	}
	o.text.WriteString(t)
}

func (o *responsesOutput) call(c chat.ToolCall) {
	o.close()
	callID := c.ID
	if callID == "" {
		callID = newID("call_")
	}
	item := map[string]any{"type": "function_call", "id": newID("fc_"), "call_id": callID, "name": c.Name, "arguments": "", "status": "in_progress"}
	o.items = append(o.items, item)
	i := len(o.items) - 1
	args := string(c.Arguments)
	o.emit("response.output_item.added", map[string]any{"output_index": i, "item": clone(item)})
	o.emit("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": args})
	o.emit("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": i, "name": c.Name, "arguments": args})
	item["arguments"], item["status"] = args, "completed"
	o.emit("response.output_item.done", map[string]any{"output_index": i, "item": clone(item)})
}

// responses serves POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	q, j := decodeJob[responsesRequest](s, w, r, famOpenAI, true, fieldCheck{responsesFields, true})
	if j == nil {
		return
	}
	id, created := newID("resp_"), time.Now().Unix()
	out := &responsesOutput{}
	out.partStream = partStream{j: j, ev: out, thinkKind: "reasoning", textKind: "message"}
	// response is the response object with the given status, output and
	// outcome (nil while in progress).
	response := func(status string, o *outcome) map[string]any {
		items := make([]any, len(out.items))
		for i, it := range out.items {
			items[i] = it
		}
		format := map[string]any{"type": "text"}
		if q.Text != nil && !absent(q.Text.Format) {
			var f map[string]any
			json.Unmarshal(q.Text.Format, &f)
			format = f
		}
		tools := []any{}
		for _, t := range q.Tools {
			tools = append(tools, t)
		}
		toolChoice := any("auto")
		if !absent(q.ToolChoice) {
			toolChoice = q.ToolChoice
		}
		truncation := "disabled"
		if q.Truncation != nil {
			truncation = *q.Truncation
		}
		reasoning := map[string]any{"effort": nil, "summary": nil}
		if q.Reasoning != nil {
			reasoning["effort"], reasoning["summary"] = q.Reasoning.Effort, q.Reasoning.Summary
		}
		resp := map[string]any{"id": id, "object": "response", "created_at": created, "status": status, "error": nil,
			"incomplete_details": nil, "instructions": q.Instructions, "max_output_tokens": q.MaxOutputTokens, "model": q.Model,
			"output": items, "parallel_tool_calls": !j.noParallel, "previous_response_id": nil, "reasoning": reasoning,
			"store": false, "temperature": j.req.Temperature, "top_p": j.req.TopP, "text": map[string]any{"format": format},
			"tool_choice": toolChoice, "tools": tools, "truncation": truncation, "usage": nil, "metadata": map[string]any{}}
		if o != nil {
			u := map[string]any{"input_tokens": o.res.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": o.res.CachedTokens},
				"output_tokens": o.res.Tokens, "total_tokens": o.res.PromptTokens + o.res.Tokens}
			if !j.thinking { // else the reasoning's share of the output is not counted apart
				u["output_tokens_details"] = map[string]any{"reasoning_tokens": 0}
			}
			resp["usage"] = u
			if o.res.StopReason == "length" {
				resp["status"] = "incomplete"
				resp["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
			}
		}
		return resp
	}
	s.serve(w, r, j, q.Stream, shapes{
		fam: famOpenAI, sse: true, noDone: true,
		keepAlive: sseComment("keep-alive"), // no Responses event: a comment, which clients skip
		start: func() []any {
			out.emit("response.created", map[string]any{"response": response("in_progress", nil)})
			out.emit("response.in_progress", map[string]any{"response": response("in_progress", nil)})
			ev := out.out
			out.out = nil
			return []any{ev}
		},
		streamError: func(status int, msg string) any {
			out.out = nil
			code := errorBody(famOpenAI, status, msg).(map[string]any)["error"].(map[string]any)["type"]
			out.emit("error", map[string]any{"code": code, "message": msg, "param": nil})
			failed := response("failed", nil)
			failed["error"] = map[string]any{"code": code, "message": msg}
			out.emit("response.failed", map[string]any{"response": failed})
			return out.out
		},
		piece: out.piece,
		final: func(o *outcome, _ string) []any {
			if o.res.StopReason == "length" {
				out.last = "incomplete"
			}
			ev := out.feed("", true)
			out.out = nil
			resp := response("completed", o)
			typ := "response.completed"
			if resp["status"] == "incomplete" {
				typ = "response.incomplete"
			}
			out.emit(typ, map[string]any{"response": resp})
			return []any{append(ev, out.out...)}
		},
		whole: func(o *outcome, text, _ string) any {
			if o.res.StopReason == "length" {
				out.last = "incomplete"
			}
			out.feed(text, true)
			// An answer with neither text nor calls is an empty message.
			if !hasMessage(out.items) && j.callsMade == 0 {
				out.items = append(out.items, map[string]any{"type": "message", "id": newID("msg_"), "status": out.messageStatus(),
					"role": "assistant", "content": []any{textPart("message", "")}})
			}
			return response("completed", o)
		},
	})
}

func hasMessage(items []map[string]any) bool {
	for _, it := range items {
		if it["type"] == "message" {
			return true
		}
	}
	return false
}
