package server

// Request fields: every field the APIs document is either honoured (decoded
// into the route's request type), accepted because it has nothing to do on
// this server (noted per field), or answered with a 400 that names it. None
// is dropped silently.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// checkEnum checks an optional string field (nil: absent) against the
// values it may take: another is a 400 naming the field and the values.
func checkEnum(field string, v *string, values ...string) error {
	if v == nil || slices.Contains(values, *v) {
		return nil
	}
	q := make([]string, len(values))
	for i, s := range values {
		q[i] = fmt.Sprintf("%q", s)
	}
	return badRequest("%s must be %s or %s, not %q", field, strings.Join(q[:len(q)-1], ", "), q[len(q)-1], *v)
}

// fieldRule says what a route does with one top-level field.
type fieldRule func(raw json.RawMessage) error

var (
	// honoured: decoded into the request type and acted on.
	honoured fieldRule = func(json.RawMessage) error { return nil }
	// noEffect: documented, but there is nothing for it to change here
	// (OpenAI's user / metadata / store, Ollama's GPU placement).
	noEffect fieldRule = func(json.RawMessage) error { return nil }
)

// unsupported refuses a field unless it is absent-like (null, false, "",
// [], {}) or one of the values that ask for nothing (e.g. n 1,
// response_format {"type":"text"}).
func unsupported(what string, harmless ...string) fieldRule {
	return func(raw json.RawMessage) error {
		v := compactJSON(raw)
		switch v {
		case "null", "false", `""`, "[]", "{}", "0":
			return nil
		}
		for _, h := range harmless {
			if v == h {
				return nil
			}
		}
		return fmt.Errorf("%s is not supported", what)
	}
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return strings.TrimSpace(string(raw))
	}
	return b.String()
}

// checkFields applies rules to the top-level fields of body. Unknown
// fields are a 400 naming them when strict (OpenAI answers so); otherwise
// they are left alone (Ollama ignores what it does not know).
func checkFields(body []byte, rules map[string]fieldRule, strict bool) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil // not an object: the typed decode reports it
	}
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		rule, ok := rules[k]
		if !ok {
			if strict {
				return badRequest("unrecognized request argument supplied: %s", k)
			}
			continue
		}
		if err := rule(m[k]); err != nil {
			return badRequest("%s: %v", k, err)
		}
	}
	return nil
}

// The OpenAI routes' fields (chat completions and legacy completions) with
// llama-server's extensions.
var openaiCommonFields = map[string]fieldRule{
	"model": honoured, "stream": honoured, "stream_options": honoured, "max_tokens": honoured,
	"temperature": honoured, "top_p": honoured, "frequency_penalty": honoured, "presence_penalty": honoured,
	"seed": honoured, "stop": honoured, "n": honoured, "logprobs": honoured,
	// llama-server's sampling extensions
	"top_k": honoured, "min_p": honoured, "repeat_penalty": honoured,
	"typical_p": honoured, "mirostat": honoured, "mirostat_tau": honoured, "mirostat_eta": honoured,
	"dry_multiplier": honoured, "dry_base": honoured, "dry_allowed_length": honoured,
	"dry_penalty_last_n": honoured, "dry_sequence_breakers": breakersRule,
	"xtc_probability": honoured, "xtc_threshold": honoured, "grammar": honoured,
	"user": noEffect, "logit_bias": unsupported("logit_bias"),
}

var openaiChatFields = merge(openaiCommonFields, map[string]fieldRule{
	"messages": honoured, "max_completion_tokens": honoured, "top_logprobs": honoured,
	"tools":                honoured, // rendered by the template: a 400 when it takes none
	"chat_template_kwargs": honoured, "reasoning_format": honoured,
	"metadata": noEffect, "store": noEffect, "service_tier": noEffect, "prompt_cache_key": noEffect,
	"safety_identifier":   noEffect,
	"response_format":     honoured,
	"tool_choice":         honoured, // none, auto; required and a named function through constrained sampling
	"parallel_tool_calls": honoured,
	"functions":           unsupported("functions"),
	"function_call":       unsupported("function_call", `"none"`, `"auto"`),
	"audio":               unsupported("audio"),
	"modalities":          unsupported("modalities other than text", `["text"]`),
	"prediction":          unsupported("prediction"),
	"reasoning_effort":    honoured, // gpt-oss's effort; a switch for other thinking models
	"web_search_options":  unsupported("web_search_options"),
	"verbosity":           unsupported("verbosity"),
})

var openaiCompletionFields = merge(openaiCommonFields, map[string]fieldRule{
	"prompt":  honoured,
	"echo":    unsupported("echo"),
	"best_of": unsupported("best_of other than 1", "1"),
	"suffix":  honoured, // with the model's fill-in-the-middle tokens, else a 400
	// llama-server's extension: structured output on completions too
	"response_format": honoured,
})

// Ollama's /api/generate and /api/chat fields.
var ollamaGenerateFields = map[string]fieldRule{
	"model": honoured, "name": honoured, "prompt": honoured, "system": honoured, "raw": honoured,
	"stream": honoured, "format": honoured, "images": honoured, "options": honoured,
	"keep_alive": honoured, "think": honoured, "logprobs": honoured, "top_logprobs": honoured,
	"suffix":   honoured, // with the model's fill-in-the-middle tokens, else a 400
	"template": unsupported("template (a request's own template; the model's is used)"),
	"context":  unsupported("context (deprecated token context; send the text)"),
}

var ollamaChatFields = map[string]fieldRule{
	"model": honoured, "name": honoured, "messages": honoured, "stream": honoured, "format": honoured,
	"tools": honoured, "options": honoured, "keep_alive": honoured, "think": honoured,
	"logprobs": honoured, "top_logprobs": honoured,
}

// ollamaOptionFields: Ollama's options (its Modelfile parameters).
var ollamaOptionFields = map[string]fieldRule{
	"num_ctx": honoured, "num_predict": honoured, "temperature": honoured, "top_k": honoured, "top_p": honoured,
	"min_p": honoured, "seed": honoured, "stop": honoured, "repeat_penalty": honoured, "repeat_last_n": honoured,
	"frequency_penalty": honoured, "presence_penalty": honoured, "num_thread": honoured,
	// placement and memory switches of a GPU engine: nothing to do on the CPU
	"num_gpu": noEffect, "main_gpu": noEffect, "low_vram": noEffect, "use_mmap": noEffect, "use_mlock": noEffect,
	"numa": noEffect, "num_batch": noEffect, "f16_kv": noEffect, "vocab_only": noEffect,
	"typical_p": honoured, "mirostat": honoured, "mirostat_tau": honoured, "mirostat_eta": honoured,
	"dry_sequence_breakers": breakersRule, // llama-server's DRY and XTC names are taken here too
	"tfs_z":                 unsupported("tfs_z", "1"),
	"penalize_newline":      unsupported("penalize_newline"),
	"num_keep":              unsupported("num_keep"),
}

// The embedding routes' fields (embed.go): Ollama's /api/embed and legacy
// /api/embeddings, OpenAI's /v1/embeddings.
var ollamaEmbedFields = map[string]fieldRule{
	"model": honoured, "input": honoured, "truncate": honoured, "dimensions": honoured,
	"options":    honoured, // num_ctx and num_thread; sampling options change nothing in an embedding
	"keep_alive": honoured,
}

var ollamaEmbeddingsFields = map[string]fieldRule{
	"model": honoured, "prompt": honoured, "options": honoured, "keep_alive": honoured,
}

var openaiEmbedFields = map[string]fieldRule{
	"model": honoured, "input": honoured, "encoding_format": honoured, "dimensions": honoured,
	"user": noEffect,
}

func merge(a, b map[string]fieldRule) map[string]fieldRule {
	out := make(map[string]fieldRule, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
