package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/runtime/chat"
)

// The Ole desktop client's routes under /api/v1 (shapes in
// docs/server-api.md, "The Ole desktop client's routes").

func (s *Server) oleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "service": "woolly-server", "version": Version,
		"timestamp": time.Now().UTC().Format(time.RFC3339)})
}

// oleClient tells whether the caller wants the wrapped {"success", "data"} form.
func oleClient(r *http.Request) bool {
	return r.Header.Get("X-Ole-Client") != "" || strings.Contains(r.UserAgent(), "Ole")
}

func (s *Server) oleModel(l listing) map[string]any {
	return map[string]any{
		"name": l.Name, "description": nil, "path": l.File, "loaded": s.models.isLoaded(l.Name),
		"size_bytes": l.Size, "parameters": l.Meta.NParams, "architecture": l.Meta.Architecture,
		"context_length": l.Meta.ContextLength, "capabilities": []string{"chat", "completion"},
		"metadata": map[string]any{"quantization": l.Meta.FileType, "modified": l.ModTime.UTC().Format(time.RFC3339)},
	}
}

func (s *Server) oleModels(w http.ResponseWriter, r *http.Request) {
	data, ok := s.listModels(w, r, famOle, func(l listing) any { return s.oleModel(l) })
	if !ok {
		return
	}
	if oleClient(r) {
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": data})
		return
	}
	writeJSON(w, http.StatusOK, data)
}

func (s *Server) oleLoad(w http.ResponseWriter, r *http.Request) {
	var q map[string]json.RawMessage
	if err := decode(r, &q, true); err != nil {
		s.failErr(w, r, famOle, err)
		return
	}
	if _, ok := q["path"]; ok {
		s.fail(w, r, famOle, http.StatusBadRequest, "loading by path is not allowed; name a model of the models directory")
		return
	}
	name := r.PathValue("name")
	ctx, cancel := s.requestContext(r)
	defer cancel()
	l, err := s.models.acquire(ctx, name, 0)
	if err != nil {
		s.failErr(w, r, famOle, err)
		return
	}
	l.release(nil)
	d, err := s.models.describe(name)
	if err != nil {
		s.failErr(w, r, famOle, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true,
		"message": "Model '" + d.Name + "' loaded successfully", "model_info": s.oleModel(d)})
}

type oleRequest struct {
	Model             string         `json:"model"`
	Prompt            *string        `json:"prompt"`
	Messages          []chat.Message `json:"messages"`
	MaxTokens         *int           `json:"max_tokens"`
	Temperature       *float32       `json:"temperature"`
	TopP              *float32       `json:"top_p"`
	TopK              *int           `json:"top_k"`
	RepetitionPenalty *float32       `json:"repetition_penalty"`
	StopSequences     []string       `json:"stop_sequences"`
	Stream            bool           `json:"stream"`
}

// defaultModel is name when a request gives one; else the most recently
// used loaded model, else the only model of the directory.
func (s *Server) defaultModel(name string) (string, error) {
	if name != "" {
		return name, nil
	}
	if rs := s.models.running(); len(rs) > 0 {
		return rs[0].Name, nil
	}
	ls, err := s.models.list()
	if err != nil {
		return "", err
	}
	if len(ls) == 1 {
		return ls[0].Name, nil
	}
	return "", badRequest("no model loaded: name one in \"model\" or load one first")
}

func (s *Server) oleComplete(w http.ResponseWriter, r *http.Request) { s.ole(w, r, false) }
func (s *Server) oleChat(w http.ResponseWriter, r *http.Request)     { s.ole(w, r, true) }

func (s *Server) ole(w http.ResponseWriter, r *http.Request, chatReq bool) {
	var q oleRequest
	err := decode(r, &q, false)
	if err == nil {
		q.Model, err = s.defaultModel(q.Model)
	}
	if err != nil {
		s.failErr(w, r, famOle, err)
		return
	}
	j := &job{model: q.Model, req: defaultRequest()}
	j.req.MaxTokens = 256
	if chatReq {
		if len(q.Messages) == 0 {
			s.fail(w, r, famOle, http.StatusBadRequest, "messages must not be empty")
			return
		}
		j.messages = q.Messages
	} else {
		if q.Prompt == nil || *q.Prompt == "" {
			s.fail(w, r, famOle, http.StatusBadRequest, "prompt is required")
			return
		}
		j.prompt = *q.Prompt
	}
	if q.MaxTokens != nil {
		if *q.MaxTokens < 1 {
			s.fail(w, r, famOle, http.StatusBadRequest, "max_tokens must be >= 1")
			return
		}
		j.req.MaxTokens = *q.MaxTokens
	}
	sampling{Temperature: q.Temperature, TopP: q.TopP, TopK: q.TopK, RepeatPenalty: q.RepetitionPenalty}.apply(&j.req)
	j.req.Stop = q.StopSequences

	created, model := time.Now().Unix(), q.Model
	id, object := newID("cmpl-"), "text_completion"
	if chatReq {
		id, object = newID("chatcmpl-"), "chat.completion"
	}
	chunk := func(delta map[string]any, reason any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": reason}}}
	}
	first := true
	s.serve(w, r, j, q.Stream, shapes{
		fam: famOle, sse: true,
		piece: func(t string) any {
			delta := map[string]any{"content": t}
			if first {
				delta["role"], first = "assistant", false
			}
			return chunk(delta, nil)
		},
		final: func(o *outcome, reason string) []any { return []any{chunk(map[string]any{}, reason)} },
		whole: func(o *outcome, text, reason string) any {
			choice := map[string]any{"index": 0, "text": nil, "message": nil, "finish_reason": reason, "logprobs": nil}
			if chatReq {
				choice["message"] = map[string]any{"role": "assistant", "content": text}
			} else {
				choice["text"] = text
			}
			return map[string]any{"id": id, "object": object, "created": created, "model": model,
				"choices": []any{choice}, "usage": usage(o)}
		},
	})
}
