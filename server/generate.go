package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/runtime/chat"
	"github.com/woolly-llm/woolly/runtime/grammar"

	"github.com/woolly-llm/woolly/runtime"
)

// job is one decoded generation request, whichever API it came from.
type job struct {
	model    string
	messages []chat.Message // a chat: rendered with the model's template
	prompt   string         // a completion
	// promptIDs, when set, is a completion's prompt as token ids, evaluated
	// as they are (OpenAI's prompt of ids); prompts, when set, are all the
	// prompts of a request of several (checked together before any runs).
	promptIDs []int32
	prompts   completionPrompts
	system    string // Ollama generate's system prompt
	template  bool   // wrap prompt in the model's own chat template, if it has one
	req       GenerateRequest
	threads   int
	keepAlive *time.Duration
	think     *bool // Ollama's think: the template's enable_thinking (nil: its default)
	// splitReasoning asks for a thinking model's reasoning apart (OpenAI
	// chat); thinking is set when the prompt is rendered with a template
	// that has the switch, before any text is generated.
	splitReasoning bool
	thinking       bool
	// logprobs asks for each token's log-probability and topLogprobs
	// alternatives; the shape's logprobs puts them in a body.
	logprobs    bool
	topLogprobs int
	// tools are rendered by the template and the answer is read for calls
	// (toolParser, set when the prompt is rendered); noParallel keeps
	// only the first call; callsMade counts the calls given out.
	tools      []json.RawMessage
	noParallel bool
	toolParser *chat.ToolParser
	// forceTool, when set, asks for one call (of the named tool, or any
	// when ""): forcedGrammar constrains the answer to it.
	forceTool     *string
	forcedGrammar *grammar.Grammar
	callsMade     int
	// suffix: the text after the insertion point (infill, with the
	// model's FIM tokens).
	suffix string
	// promptTokens is the rendered chat prompt's token count when the
	// model counts tokens (set with the prompt, before generation).
	// keepAllTurns renders the whole chat and refuses one longer than the
	// context (a 400 saying "prompt is too long"), where others drop the
	// oldest turns; countOnly renders the whole chat for its token count.
	promptTokens int
	keepAllTurns bool
	countOnly    bool
	// thinkBudget, when > 0, bounds the tokens of a thinking model's
	// reasoning (thinkbudget.go).
	thinkBudget int
	// effort is gpt-oss's reasoning effort (low, medium, high) from the
	// request field effortField (reasoning_effort, think, reasoning.effort,
	// output_config.effort, thinking.budget_tokens); only the harmony
	// format takes it, other thinking templates read the field as a switch.
	effort, effortField string
	// kind is the chat template's kind (chat.Template.Kind): gpt-oss's
	// "harmony" and "gemma4" close a cut reasoning in their own format.
	kind string
	// forceCall: the harmony prompt opens the turn as a call of this tool.
	forceCall string
}

// outcome is what a finished generation reports.
type outcome struct {
	model   string
	res     *GenerateResult
	loadDur time.Duration
	start   time.Time
}

// run waits for the model, renders the prompt, calls begin (once the request
// is known to be servable: the place to send headers) and generates, passing
// each text piece to onText. An error returned before begin was called has
// its HTTP status (see statusOf); after, it is for the stream.
func (s *Server) run(ctx context.Context, j *job, begin func() error, onText func(string) error) (*outcome, error) {
	out := &outcome{start: time.Now()}
	l, err := s.models.acquire(ctx, j.model, j.threads)
	if err != nil {
		return nil, err
	}
	defer l.release(j.keepAlive)
	out.model, out.loadDur = l.e.name, l.loadDur
	if l.model().Meta().EmbeddingOnly {
		return nil, errEmbeddingOnly(j.model)
	}
	// num_ctx is checked against the model before anything is sized by it.
	nctx, err := requestCtx(l.model().Meta(), j.req.NumCtx)
	if err != nil {
		return nil, err
	}
	if err := checkJobBytes(l.model().Meta(), j, nctx); err != nil {
		return nil, err
	}
	if err := checkModelBounds(l.model().Meta(), &j.req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prompt, err := buildPrompt(ctx, l.e, j, nctx)
	if err != nil {
		return nil, err
	}
	if err := begin(); err != nil {
		return nil, err
	}
	req := j.req
	req.Prompt, req.PromptIDs = prompt, j.promptIDs
	res, err := generate(ctx, l.model(), j, req, onText)
	s.metrics.generation(out.model, res)
	out.res = res
	if err != nil && res != nil && ctx.Err() != nil {
		err = nil // canceled or timed out: the partial result stands
	}
	if res == nil && err == nil {
		err = errors.New("generation returned no result")
	}
	return out, err
}

func buildPrompt(ctx context.Context, e *entry, j *job, nctx int) (string, error) {
	var msgs []chat.Message
	if j.promptIDs != nil && j.messages == nil {
		j.req.Literal = true // ids: a raw completion
		return "", nil
	}
	if j.suffix != "" && j.messages == nil {
		j.req.Literal = true // a raw completion: the format's own text out
		return infillPrompt(e, j)
	}
	switch {
	case j.messages != nil:
		if e.tmplErr != nil {
			return "", &httpError{http.StatusInternalServerError, e.tmplErr.Error()}
		}
		msgs = j.messages
	case j.template && e.tmpl != nil && !e.tmpl.Default:
		if j.system != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: j.system})
		}
		msgs = append(msgs, chat.Message{Role: "user", Content: j.prompt})
	default:
		if j.prompt == "" {
			return "", badRequest("empty prompt")
		}
		if j.system != "" {
			return "", badRequest("system: %q has no chat template to put a system prompt in", j.model)
		}
		j.req.Literal = true // a raw completion: the format's own text out
		return j.prompt, nil
	}
	if len(j.tools) > 0 {
		if !e.tmpl.SupportsTools() {
			return "", badRequest("tools: %q does not support tools", j.model)
		}
		j.toolParser = chat.NewToolParser(e.tmpl.ToolFormat())
		if j.forcedGrammar != nil {
			j.toolParser = chat.NewToolParser(chat.ToolsForced)
			j.req.Grammar = j.forcedGrammar
			if e.tmpl.Kind() == "harmony" && j.forceTool != nil && *j.forceTool != "" {
				// gpt-oss: the turn opens as the call in harmony's own
				// header; the model writes the arguments only.
				g, err := forcedArgsGrammar(j.tools, *j.forceTool)
				if err != nil {
					return "", err
				}
				j.req.Grammar, j.forceCall = g, *j.forceTool
				j.toolParser = chat.NewForcedArgsParser(*j.forceTool)
			}
		}
	}
	if j.think != nil && *j.think && !e.tmpl.SupportsThinking() {
		return "", badRequest("%q does not support thinking", j.model)
	}
	if j.req.Grammar != nil && e.tmpl.SupportsThinking() {
		// Structured output constrains the reply from its first token, so
		// a thinking model answers without thinking (its template's
		// enable_thinking false).
		if j.think != nil && *j.think {
			return "", badRequest("structured output (format, response_format) cannot be combined with thinking: the reply is constrained from its first token; turn thinking off")
		}
		off := false
		j.think = &off
	}
	effort := ""
	if j.effortField != "" && e.tmpl.Kind() == "harmony" {
		if j.effort == "" { // "none": gpt-oss has no switch to stop reasoning
			return "", badRequest("%s: gpt-oss always reasons; use low, medium or high", j.effortField)
		}
		effort = j.effort
	}
	j.thinking = j.splitReasoning && e.tmpl.SupportsThinking()
	j.kind = e.tmpl.Kind()
	meta := e.model.Meta()
	// The tokenizer adds BOS itself; a template that writes it would double it.
	trimBOS := func(p string) string {
		if meta.AddBOS && meta.BOSText != "" {
			return strings.TrimPrefix(p, meta.BOSText)
		}
		return p
	}
	o := chat.Options{AddGenerationPrompt: true, EnableThinking: j.think, Tools: j.tools, ReasoningEffort: effort, ForceCall: j.forceCall}
	if j.messages != nil && meta.CountTokens != nil {
		// A chat longer than the context drops its oldest turns (system
		// messages and the last message stay), as Ollama does.
		limit := nctx
		fitLimit := limit
		if j.countOnly || j.keepAllTurns {
			fitLimit = math.MaxInt
		}
		// The prompt's token count is kept (usage, the too-long check):
		// the last prompt counted is usually the one returned.
		var lastP string
		var lastN int
		count := func(p string) (int, error) {
			n, err := meta.CountTokens(trimBOS(p))
			lastP, lastN = p, n
			return n, err
		}
		p, _, err := e.tmpl.FitContext(ctx, msgs, o, count, fitLimit, meta.MaxTokenBytes)
		if err == nil && lastP != p {
			_, err = count(p)
		}
		j.promptTokens = lastN
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", badRequest("%v", err)
		}
		if j.keepAllTurns && !j.countOnly && j.promptTokens >= limit {
			return "", &codedError{&httpError{http.StatusBadRequest, fmt.Sprintf("prompt is too long: %d tokens > %d maximum (the model's context on this server)",
				j.promptTokens, limit-1)}, "context_length_exceeded"}
		}
		return trimBOS(p), nil
	}
	p, err := e.tmpl.RenderOptions(msgs, o)
	if err != nil {
		return "", badRequest("%v", err)
	}
	return trimBOS(p), nil
}

// infillPrompt is the fill-in-the-middle prompt of a completion with a
// suffix, in llama.cpp's order: prefix token, prompt, suffix token,
// suffix, middle token (the tokenizer adds BOS as the model says).
func infillPrompt(e *entry, j *job) (string, error) {
	fim := e.model.Meta().FIM
	if fim == nil {
		return "", badRequest("suffix: %q does not support insert (infill: the model has no fill-in-the-middle tokens)", j.model)
	}
	if j.system != "" {
		return "", badRequest("system cannot be used with suffix (an infill prompt has no system prompt)")
	}
	return fim[0] + j.prompt + fim[1] + j.suffix + fim[2], nil
}

// validate checks sampling settings common to every API.
func validate(r *GenerateRequest) error {
	if err := r.SamplerOptions.Validate(); err != nil {
		return badRequest("%v", err)
	}
	switch {
	case r.NumCtx < 0:
		return badRequest("num_ctx %d: must be >= 0", r.NumCtx)
	}
	stops := r.Stop[:0:0]
	for _, s := range r.Stop {
		if s != "" { // an empty stop string would end every answer at once
			stops = append(stops, s)
		}
	}
	r.Stop = stops
	if r.MaxTokens < -1 { // Ollama's -2 (fill the context) is -1 here
		r.MaxTokens = -1
	}
	return nil
}

// shapes turns a generation into one API's bodies.
type shapes struct {
	fam family
	sse bool // SSE frames ending in [DONE] (unless noDone), else NDJSON lines
	// start, when set, gives the frames that open a stream (sent once the
	// request is known to be servable, before generation).
	start func() []any
	// noDone leaves out the closing [DONE] frame of an SSE stream.
	noDone bool
	// streamError, when set, is the frame reporting an error mid-stream
	// (else errorBody).
	streamError func(status int, msg string) any
	// keepAlive, when set, is sent when a stream has been silent for
	// keepAliveEvery (a long prompt evaluation writes nothing, and
	// clients and proxies drop connections idle for minutes).
	keepAlive any
	piece     func(text string) any                 // a streamed chunk
	final     func(o *outcome, reason string) []any // the chunks closing a stream
	whole     func(o *outcome, text, reason string) any
	// logprobs adds the entries of the tokens a body carries to it (nil:
	// the API has no logprobs).
	logprobs func(body any, entries []logprobEntry)
}

// logprobEntry is one generated token's log-probability, with its text
// (the token's bytes, which need not be whole UTF-8) and alternatives.
type logprobEntry struct {
	Token   string         `json:"token"`
	Logprob float32        `json:"logprob"`
	Bytes   []int          `json:"bytes"`
	Top     []logprobEntry `json:"top_logprobs,omitempty"`
}

func newLogprobEntry(t runtime.TokenLogprob) logprobEntry {
	b := make([]int, len(t.Piece))
	for i, c := range t.Piece {
		b[i] = int(c)
	}
	return logprobEntry{Token: string(t.Piece), Logprob: t.Logprob, Bytes: b}
}

// newLogprobEntryTop is a token's entry with its top alternatives (an
// empty list, not null, when there are none).
func newLogprobEntryTop(chosen runtime.TokenLogprob, top []runtime.TokenLogprob) logprobEntry {
	e := newLogprobEntry(chosen)
	e.Top = make([]logprobEntry, 0, len(top))
	for _, a := range top {
		e.Top = append(e.Top, newLogprobEntry(a))
	}
	return e
}

// keepAliveEvery is how long a stream with a keep-alive frame may stay
// silent.
var keepAliveEvery = 10 * time.Second

// keepStreamAlive sends frame whenever st has been silent for
// keepAliveEvery, until the returned stop is called.
func keepStreamAlive(st *stream, frame any) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(keepAliveEvery / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if st.idle() >= keepAliveEvery && st.send(frame) != nil {
					return // the client is gone
				}
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// serve runs j and answers with sh, streaming or not.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, j *job, streaming bool, sh shapes) {
	if err := validate(&j.req); err != nil {
		s.failErr(w, r, sh.fam, err)
		return
	}
	if err := checkJob(j); err != nil {
		s.failErr(w, r, sh.fam, err)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	var st *stream
	var text strings.Builder
	var sendErr error
	// Log-probabilities: every token's entry, and those not yet sent.
	var allLP, pendingLP []logprobEntry
	if j.logprobs && sh.logprobs != nil {
		j.req.TopLogprobs = j.topLogprobs
		j.req.OnLogprob = func(chosen runtime.TokenLogprob, top []runtime.TokenLogprob) {
			e := newLogprobEntryTop(chosen, top)
			allLP = append(allLP, e)
			pendingLP = append(pendingLP, e)
		}
	}
	attach := func(b any) {
		if j.req.OnLogprob != nil && len(pendingLP) > 0 {
			sh.logprobs(b, pendingLP)
			pendingLP = nil
		}
	}
	stopKeepAlive := func() {}
	begin := func() error {
		if streaming {
			st = newStream(w, sh.sse)
			if sh.start != nil {
				for _, f := range sh.start() {
					if sendErr = st.send(f); sendErr != nil {
						return sendErr
					}
				}
			}
			if sh.keepAlive != nil {
				stopKeepAlive = keepStreamAlive(st, sh.keepAlive)
			}
		}
		return nil
	}
	onText := func(t string) error {
		if t == "" {
			return nil
		}
		if !streaming {
			text.WriteString(t)
			return nil
		}
		if b := sh.piece(t); b != nil { // nil: the shape holds the text back for now
			attach(b)
			sendErr = st.send(b)
		}
		return sendErr
	}
	out, err := s.run(ctx, j, begin, onText)
	stopKeepAlive()
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	if st == nil { // nothing sent yet: a plain status
		switch {
		case err != nil:
			s.failErr(w, r, sh.fam, err)
		case timedOut:
			s.fail(w, r, sh.fam, http.StatusServiceUnavailable, "request timed out")
		case r.Context().Err() != nil: // the client left
		default:
			b := sh.whole(out, text.String(), out.res.StopReason)
			if j.req.OnLogprob != nil {
				sh.logprobs(b, allLP)
			}
			writeJSON(w, http.StatusOK, b)
		}
		return
	}
	if sendErr != nil || r.Context().Err() != nil {
		return // the client is gone
	}
	streamError := func(status int, msg string) any { return errorBody(sh.fam, status, msg) }
	if sh.streamError != nil {
		streamError = sh.streamError
	}
	switch {
	case err != nil:
		st.send(streamError(statusOf(err), err.Error()))
		s.log.Printf("%s %s: generation failed: %v", r.Method, r.URL.Path, err)
	case timedOut:
		st.send(streamError(http.StatusServiceUnavailable, "request timed out"))
	default:
		for i, f := range sh.final(out, out.res.StopReason) {
			if i == 0 {
				attach(f)
			}
			if st.send(f) != nil {
				return
			}
		}
	}
	if sh.sse && !sh.noDone {
		st.done()
	}
}
