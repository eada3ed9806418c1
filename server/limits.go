package server

import (
	"fmt"
	"net/http"

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
