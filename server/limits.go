package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	goruntime "runtime"

	"github.com/woolly-llm/woolly/runtime/chat"
)

// Per-request bounds. Every one is checked before the work it bounds and
// answered with a 400 naming the field and the limit; docs/server-limits.md
// lists them with their defaults.

// maxCtx is the largest context a request may ask of the model (see
// ModelMeta.MaxCtx).
func maxCtx(m ModelMeta) int {
	if m.MaxCtx > 0 {
		return m.MaxCtx
	}
	return max(m.ContextLength, m.DefaultCtx)
}

// requestCtx checks a request's num_ctx (0: the model's default) against
// the model and returns the context the request runs in.
func requestCtx(m ModelMeta, numCtx int) (int, error) {
	limit := maxCtx(m)
	switch {
	case numCtx < 0:
		return 0, badRequest("num_ctx %d: must be >= 0", numCtx)
	case numCtx > limit && limit > 0:
		return 0, badRequest("num_ctx %d is more than this server's largest context, %d (the model's training context, or serve -c)", numCtx, limit)
	case numCtx > 0:
		return numCtx, nil
	case m.DefaultCtx > 0:
		return m.DefaultCtx, nil
	}
	return limit, nil
}

// checkPromptBytes refuses a prompt that cannot fit the context before it
// is tokenized: no token stands for more than m.MaxTokenBytes bytes, so a
// prompt of more than nctx × that many bytes has more than nctx tokens.
func checkPromptBytes(m ModelMeta, field string, n, nctx int) error {
	if m.MaxTokenBytes <= 0 || nctx <= 0 {
		return nil
	}
	if limit := int64(nctx) * int64(m.MaxTokenBytes); int64(n) > limit {
		return &httpError{http.StatusBadRequest, fmt.Sprintf(
			"%s has %d bytes: more than the context of %d tokens can hold (at most %d bytes, %d per token)",
			field, n, nctx, limit, m.MaxTokenBytes)}
	}
	return nil
}

// checkJobBytes refuses a generation whose text cannot fit the context,
// before the template or the tokenizer sees it: a completion's prompt
// (with its system prompt and suffix), or the messages a chat always
// keeps when it drops old turns to fit (the system messages and the last).
func checkJobBytes(m ModelMeta, j *job, nctx int) error {
	if j.prompts != nil { // several completion prompts: each one checked before any runs
		for i, p := range j.prompts {
			if err := checkPrompt(m, fmt.Sprintf("prompt[%d]", i), p, nctx); err != nil {
				return err
			}
		}
		return nil
	}
	if j.promptIDs != nil {
		return checkPrompt(m, "prompt", completionPrompt{ids: j.promptIDs}, nctx)
	}
	if j.messages == nil {
		return checkPromptBytes(m, "prompt", len(j.prompt)+len(j.system)+len(j.suffix), nctx)
	}
	n := 0
	for i, msg := range j.messages {
		if msg.Role == "system" || i == len(j.messages)-1 {
			n += chat.MinContentBytes(msg)
		}
	}
	return checkPromptBytes(m, "messages (the system messages and the last message, which are always kept)", n, nctx)
}

// checkPrompt checks one completion prompt against the model: a text's
// bytes, or token ids' count against the context and each id against the
// vocabulary.
func checkPrompt(m ModelMeta, field string, p completionPrompt, nctx int) error {
	if p.ids == nil {
		return checkPromptBytes(m, field, len(p.text), nctx)
	}
	if nctx > 0 && len(p.ids) >= nctx {
		return badRequest("%s has %d tokens: the context of %d tokens has no room left to generate", field, len(p.ids), nctx)
	}
	for k, id := range p.ids {
		if id < 0 || m.NVocab > 0 && int(id) >= m.NVocab {
			return badRequest("%s[%d]: token id %d is out of range: the model's vocabulary has %d tokens (ids 0 to %d)", field, k, id, m.NVocab, m.NVocab-1)
		}
	}
	return nil
}

// maxEmbedValues bounds the values of the embeddings one request returns
// (inputs × the model's embedding length): 64 MiB of float32, a few times
// that as JSON. A variable for the tests.
var maxEmbedValues = 1 << 24

// The fixed bounds of a request (docs/server-limits.md).
const (
	maxMessages    = 10_000   // messages of a chat
	maxStops       = 16       // stop strings
	maxStopBytes   = 1024     // bytes of one stop string
	maxSchemaBytes = 64 << 10 // a structured-output or tool-call schema
	maxEnum        = 1024     // values of one enum in a schema
)

// roles are the chat roles a message may have (OpenAI's developer is
// taken as system before this check).
var roles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

// checkJob applies the bounds that need no model: message count and roles,
// stop strings, threads.
func checkJob(j *job) error {
	if n := len(j.messages); n > maxMessages {
		return badRequest("messages: %d messages; at most %d", n, maxMessages)
	}
	for i, m := range j.messages {
		if !roles[m.Role] {
			return badRequest("messages[%d].role %s: want system, user, assistant or tool", i, quoteShort(m.Role))
		}
	}
	if n := len(j.req.Stop); n > maxStops {
		return badRequest("stop: %d stop strings; at most %d", n, maxStops)
	}
	for i, s := range j.req.Stop {
		if len(s) > maxStopBytes {
			return badRequest("stop[%d] has %d bytes; at most %d", i, len(s), maxStopBytes)
		}
	}
	return checkThreads(j.threads)
}

// checkThreads bounds num_thread by the machine's cores: more threads
// than cores only slow a model down, and each one is a worker kept for
// as long as the model is loaded.
func checkThreads(n int) error {
	if cores := goruntime.NumCPU(); n > cores {
		return badRequest("num_thread %d is more than this machine's %d cores", n, cores)
	}
	if n < 0 {
		return badRequest("num_thread %d: must be >= 0", n)
	}
	return nil
}

// checkModelBounds applies the bounds that need the loaded model.
func checkModelBounds(m ModelMeta, req *GenerateRequest) error {
	if m.NVocab > 0 && req.TopK > m.NVocab {
		return badRequest("top_k %d is more than the model's vocabulary of %d tokens", req.TopK, m.NVocab)
	}
	return nil
}

// checkSchema bounds a schema before it is compiled: its size and the
// values of each enum (a grammar with a 100,000-value enum cost seconds
// per token).
func checkSchema(field string, raw json.RawMessage) error {
	if len(raw) > maxSchemaBytes {
		return badRequest("%s: the schema has %d bytes; at most %d", field, len(raw), maxSchemaBytes)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil // the compiler reports it
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["enum"].([]any); ok && len(e) > maxEnum {
				return badRequest("%s: an enum has %d values; at most %d", field, len(e), maxEnum)
			}
			for _, c := range x {
				if err := walk(c); err != nil {
					return err
				}
			}
		case []any:
			for _, c := range x {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}
