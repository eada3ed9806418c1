package server

// llama-server's own routes (tools/server in llama.cpp): /health,
// /completion, /tokenize, /detokenize and /props, with its request and
// response shapes. Woolly serves a directory of models where llama-server
// serves one: "model" in a body (or ?model= on /props) picks it, and
// without it the loaded model (or the directory's only one) answers.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

func (s *Server) llamaServerRoutes() {
	s.handle(famOpenAI, "/health", false, s.llamaHealth, "GET", "HEAD")
	s.handle(famOpenAI, "/completion", false, s.llamaCompletion, "POST")
	s.handle(famOpenAI, "/tokenize", false, s.llamaTokenize, "POST")
	s.handle(famOpenAI, "/detokenize", false, s.llamaDetokenize, "POST")
	s.handle(famOpenAI, "/props", false, s.llamaProps, "GET", "HEAD")
}

// llamaHealth is {"status": "ok"}: the server takes requests (models load
// on demand).
func (s *Server) llamaHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// llamaCompletionFields: /completion's documented fields.
var llamaCompletionFields = map[string]fieldRule{
	"model": honoured, "prompt": honoured, "n_predict": honoured, "stream": honoured, "stop": honoured,
	"temperature": honoured, "top_k": honoured, "top_p": honoured, "min_p": honoured, "seed": honoured,
	"repeat_penalty": honoured, "repeat_last_n": honoured, "presence_penalty": honoured, "frequency_penalty": honoured,
	"typical_p": honoured, "mirostat": honoured, "mirostat_tau": honoured, "mirostat_eta": honoured,
	"dry_multiplier": honoured, "dry_base": honoured, "dry_allowed_length": honoured,
	"dry_penalty_last_n": honoured, "dry_sequence_breakers": breakersRule,
	"xtc_probability": honoured, "xtc_threshold": honoured, "json_schema": honoured,
	// the prompt cache is always on here; slots are not addressable
	"cache_prompt": noEffect, "id_slot": noEffect,
	"grammar":             honoured,
	"n_probs":             unsupported("n_probs"),
	"n_keep":              unsupported("n_keep"),
	"n_indent":            unsupported("n_indent"),
	"logit_bias":          unsupported("logit_bias"),
	"ignore_eos":          unsupported("ignore_eos"),
	"samplers":            unsupported("samplers (the chain is llama.cpp's default order)"),
	"dynatemp_range":      unsupported("dynatemp_range"),
	"dynatemp_exponent":   unsupported("dynatemp_exponent", "1"),
	"top_n_sigma":         unsupported("top_n_sigma", "-1"),
	"t_max_predict_ms":    unsupported("t_max_predict_ms"),
	"image_data":          unsupported("image_data"),
	"lora":                unsupported("lora"),
	"return_tokens":       unsupported("return_tokens"),
	"post_sampling_probs": unsupported("post_sampling_probs"),
	"response_fields":     unsupported("response_fields"),
}

type llamaCompletionRequest struct {
	Model       string          `json:"model"`
	Prompt      json.RawMessage `json:"prompt"`
	NPredict    *int            `json:"n_predict"`
	Stream      bool            `json:"stream"`
	Stop        []string        `json:"stop"`
	RepeatLastN *int            `json:"repeat_last_n"`
	JSONSchema  json.RawMessage `json:"json_schema"`
	Grammar     *string         `json:"grammar"`
	sampling
}

func (q *llamaCompletionRequest) job(bool) (*job, error) {
	var prompt string
	if err := json.Unmarshal(q.Prompt, &prompt); err != nil || len(q.Prompt) == 0 {
		return nil, badRequest("prompt must be a string")
	}
	j := &job{model: q.Model, req: defaultRequest(), prompt: prompt}
	if q.NPredict != nil {
		if *q.NPredict == 0 || *q.NPredict < -1 {
			return nil, badRequest("n_predict must be -1 (until the end) or a positive count")
		}
		j.req.MaxTokens = *q.NPredict
	}
	q.sampling.apply(&j.req)
	set(&j.req.RepeatLastN, q.RepeatLastN)
	j.req.Stop = q.Stop
	if !absent(q.JSONSchema) {
		g, err := compileSchema("json_schema", q.JSONSchema)
		if err != nil {
			return nil, err
		}
		j.req.Grammar = g
	}
	var err error
	if j.req.GBNF, err = gbnfField(q.Grammar, j.req.Grammar != nil); err != nil {
		return nil, err
	}
	return j, nil
}

// stopType is llama-server's stop_type for a finish reason.
func stopType(reason, word string) string {
	switch {
	case reason == "length":
		return "limit"
	case reason == "stop" && word != "":
		return "word"
	case reason == "stop":
		return "eos"
	}
	return "none"
}

// generationSettings are a request's sampler settings under llama-server's
// names.
func generationSettings(req GenerateRequest, stream bool) map[string]any {
	o := req.SamplerOptions
	breakers := o.DryBreakerList()
	stop := req.Stop
	if stop == nil {
		stop = []string{}
	}
	return map[string]any{
		"n_predict": req.MaxTokens, "seed": o.Seed, "temperature": o.Temperature, "top_k": o.TopK, "top_p": o.TopP,
		"min_p": o.MinP, "typical_p": o.TypicalP, "repeat_last_n": o.RepeatLastN, "repeat_penalty": o.RepeatPenalty,
		"presence_penalty": o.PresencePenalty, "frequency_penalty": o.FrequencyPenalty,
		"mirostat": o.Mirostat, "mirostat_tau": o.MirostatTau, "mirostat_eta": o.MirostatEta,
		"dry_multiplier": o.DryMultiplier, "dry_base": o.DryBase, "dry_allowed_length": o.DryAllowedLength,
		"dry_penalty_last_n": o.DryPenaltyLastN, "dry_sequence_breakers": breakers,
		"xtc_probability": o.XTCProbability, "xtc_threshold": o.XTCThreshold,
		"stop": stop, "stream": stream,
		"samplers": []string{"penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"},
	}
}

// llamaTimings is llama-server's timings object.
func llamaTimings(o *outcome) map[string]any {
	ms := func(n int, d float64) (float64, float64) { // per token ms, per second
		if n <= 0 || d <= 0 {
			return 0, 0
		}
		return d / float64(n), float64(n) / (d / 1000)
	}
	pn := o.res.PromptTokens - o.res.CachedTokens
	pms := float64(o.res.PromptDuration.Microseconds()) / 1000
	gms := float64(o.res.GenDuration.Microseconds()) / 1000
	ppt, pps := ms(pn, pms)
	gpt, gps := ms(o.res.Tokens, gms)
	return map[string]any{"cache_n": o.res.CachedTokens, "prompt_n": pn, "prompt_ms": pms, "prompt_per_token_ms": ppt,
		"prompt_per_second": pps, "predicted_n": o.res.Tokens, "predicted_ms": gms,
		"predicted_per_token_ms": gpt, "predicted_per_second": gps}
}

func (s *Server) llamaCompletion(w http.ResponseWriter, r *http.Request) {
	var q llamaCompletionRequest
	err := decode(r, &q, false, fieldCheck{llamaCompletionFields, false})
	if err == nil {
		q.Model, err = s.defaultModel(q.Model)
	}
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	j, err := q.job(false)
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return
	}
	final := func(o *outcome, content, reason string) map[string]any {
		return map[string]any{"index": 0, "content": content, "tokens": []int32{}, "id_slot": 0, "stop": true,
			"model": j.model, "tokens_predicted": o.res.Tokens, "tokens_evaluated": o.res.PromptTokens,
			"generation_settings": generationSettings(j.req, q.Stream), "prompt": j.prompt,
			"has_new_line": strings.Contains(content, "\n"), "truncated": false,
			"stop_type": stopType(reason, o.res.StopString), "stopping_word": o.res.StopString,
			"tokens_cached": o.res.CachedTokens, "timings": llamaTimings(o)}
	}
	s.serve(w, r, j, q.Stream, shapes{
		fam: famOpenAI, sse: true, noDone: true,
		keepAlive: sseComment("keep-alive"),
		piece: func(t string) any {
			return map[string]any{"index": 0, "content": t, "tokens": []int32{}, "stop": false, "id_slot": 0}
		},
		final: func(o *outcome, reason string) []any { return []any{final(o, "", reason)} },
		whole: func(o *outcome, text, reason string) any { return final(o, text, reason) },
	})
}

// llamaModelFor acquires the model a tokenizer route names (or the default
// one); the caller releases it. It answers the error itself (nil lease).
func (s *Server) llamaModelFor(w http.ResponseWriter, r *http.Request, name string) *lease {
	name, err := s.defaultModel(name)
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return nil
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	l, err := s.models.acquire(ctx, name, 0)
	if err != nil {
		s.failErr(w, r, famOpenAI, err)
		return nil
	}
	return l
}

var llamaTokenizeFields = map[string]fieldRule{
	"model": honoured, "content": honoured, "add_special": honoured, "parse_special": honoured, "with_pieces": honoured,
}

// decodeForModel decodes a body into q and leases the model *model (a field
// of q) then names; nil after the error response.
func (s *Server) decodeForModel(w http.ResponseWriter, r *http.Request, q any, fields map[string]fieldRule, model *string) *lease {
	if err := decode(r, q, false, fieldCheck{fields, true}); err != nil {
		s.failErr(w, r, famOpenAI, err)
		return nil
	}
	return s.llamaModelFor(w, r, *model)
}

func (s *Server) llamaTokenize(w http.ResponseWriter, r *http.Request) {
	q := struct {
		Model        string  `json:"model"`
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}{}
	l := s.decodeForModel(w, r, &q, llamaTokenizeFields, &q.Model)
	if l == nil {
		return
	}
	defer l.release(nil)
	meta := l.model().Meta()
	if meta.Tokenize == nil || meta.Piece == nil {
		s.fail(w, r, famOpenAI, http.StatusNotImplemented, "this model cannot tokenize")
		return
	}
	out := []any{}
	if q.Content != nil {
		// Bounded like a prompt: text that cannot fit the model's largest
		// context is refused before the tokenizer sees it.
		if err := checkPromptBytes(meta, "content", len(*q.Content), maxCtx(meta)); err != nil {
			s.failErr(w, r, famOpenAI, err)
			return
		}
		ids, err := meta.Tokenize(*q.Content, q.AddSpecial, q.ParseSpecial == nil || *q.ParseSpecial)
		if err != nil {
			s.fail(w, r, famOpenAI, http.StatusBadRequest, "content: "+err.Error())
			return
		}
		for _, id := range ids {
			if !q.WithPieces {
				out = append(out, id)
				continue
			}
			p, _ := meta.Piece(id)
			var piece any = string(p)
			if !utf8.Valid(p) { // llama-server gives the bytes then
				b := make([]int, len(p))
				for i, c := range p {
					b[i] = int(c)
				}
				piece = b
			}
			out = append(out, map[string]any{"id": id, "piece": piece})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

var llamaDetokenizeFields = map[string]fieldRule{"model": honoured, "tokens": honoured}

func (s *Server) llamaDetokenize(w http.ResponseWriter, r *http.Request) {
	q := struct {
		Model  string  `json:"model"`
		Tokens []int32 `json:"tokens"`
	}{}
	l := s.decodeForModel(w, r, &q, llamaDetokenizeFields, &q.Model)
	if l == nil {
		return
	}
	defer l.release(nil)
	meta := l.model().Meta()
	if meta.Piece == nil {
		s.fail(w, r, famOpenAI, http.StatusNotImplemented, "this model cannot detokenize")
		return
	}
	// Bounded like /tokenize's content: more ids than the model's largest
	// context could never have come from it, and each may spell many
	// bytes (4M ids in an 8 MB body once made a 550 MB answer).
	if n, limit := len(q.Tokens), maxCtx(meta); n > limit {
		s.fail(w, r, famOpenAI, http.StatusBadRequest, fmt.Sprintf("tokens: %d ids; the model's largest context holds %d", n, limit))
		return
	}
	var b []byte
	for i, id := range q.Tokens {
		p, ok := meta.Piece(id)
		if !ok {
			s.fail(w, r, famOpenAI, http.StatusBadRequest, fmt.Sprintf("tokens[%d]: id %d is not in the vocabulary", i, id))
			return
		}
		b = append(b, p...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": string(b)})
}

func (s *Server) llamaProps(w http.ResponseWriter, r *http.Request) {
	l := s.llamaModelFor(w, r, r.URL.Query().Get("model"))
	if l == nil {
		return
	}
	defer l.release(nil)
	meta := s.models.meta(l.model().Meta())
	req := defaultRequest()
	ctx := meta.DefaultCtx
	if ctx == 0 {
		ctx = meta.ContextLength
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"params": generationSettings(req, false), "n_ctx": ctx},
		"total_slots":                 l.e.slotCount(s.models),
		"model_alias":                 l.e.name,
		"model_ftype":                 meta.FileType,
		"model_path":                  l.e.path,
		"modalities":                  map[string]any{"vision": false, "video": false, "audio": false},
		"chat_template":               meta.templateText(),
		"bos_token":                   meta.BOSText,
		"eos_token":                   meta.EOSText,
		"build_info":                  "woolly " + Version,
	})
}
