package runtime

import (
	"errors"
	"fmt"
	"sync"
)

// ErrRequest marks an error caused by what was asked (a prompt that does
// not fit the context, an option out of range), as opposed to a failure of
// the model or the machine. Servers answer it with a client error.
var ErrRequest = errors.New("invalid request")

// requestError is an ErrRequest with its own message.
// It wraps err when there is one (a *SamplerRangeError, say).
type requestError struct {
	msg string
	err error
}

func (e *requestError) Error() string        { return e.msg }
func (e *requestError) Is(target error) bool { return target == ErrRequest }
func (e *requestError) Unwrap() error        { return e.err }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// Validate checks the options that do not depend on a session, before any
// work is done for them: the sampler settings, TopLogprobs, the grammars
// and the context length. Session.Generate calls it first; a server can call it
// before it takes a session. Its errors wrap ErrRequest.
func (o GenerateOptions) Validate() error {
	if err := o.Sampler.Validate(); err != nil {
		return &requestError{err.Error(), err}
	}
	if o.TopLogprobs < 0 || o.TopLogprobs > 20 {
		return badRequest("top logprobs %d: want 0 to 20", o.TopLogprobs)
	}
	if o.Grammar != nil && o.GBNF != nil {
		return badRequest("generate: Grammar and GBNF both set")
	}
	if o.NCtx < 0 {
		return badRequest("context length %d is negative", o.NCtx)
	}
	if o.Tokens != nil && len(o.Tokens) == 0 {
		return badRequest("empty prompt")
	}
	return nil
}

// sessionPool holds the idle sessions of one owner (a Batch): sessions
// whose caches hold a finished conversation, kept so that its next turn
// evaluates only what follows the longest shared prefix. The model's
// prefix cache (LoadOptions.PrefixCache) is the second source Generate
// looks in; both are used only through Acquire, Release and Generate.
type sessionPool struct {
	mu   sync.Mutex
	idle []*Session
}

// Acquire returns a session of the batch with a cache of nctx positions
// (0: the model's default) for the prompt ids: the idle session that can
// keep the longest prefix of ids (for a model with a recurrent state, up to
// its last checkpoint before the divergence), or a new one. Its
// Generate then keeps that prefix, or restores a longer one from the
// model's prefix cache, and evaluates only the rest. It checks what a
// request must satisfy before any work: the model file is whole, nctx is in
// range and the prompt leaves room for at least one generated token
// (errors about the request wrap ErrRequest). Give the session back with
// Release when its Generate succeeded; drop it otherwise.
func (b *Batch) Acquire(ids []int32, nctx int) (*Session, error) {
	m := b.m
	if err := m.CheckFile(); err != nil {
		return nil, err
	}
	if nctx == 0 {
		nctx = m.nCtx
	}
	if nctx < 0 {
		return nil, badRequest("context length %d is negative", nctx)
	}
	if len(ids) == 0 {
		return nil, badRequest("empty prompt")
	}
	if len(ids) >= nctx {
		return nil, badRequest("prompt has %d tokens; the context holds %d", len(ids), nctx)
	}
	p := &b.pool
	p.mu.Lock()
	best, bestN := -1, -1
	for i, s := range p.idle {
		if s.nCtx != nctx {
			continue
		}
		if n := s.reusable(ids); n > bestN {
			best, bestN = i, n
		}
	}
	if best >= 0 {
		s := p.idle[best]
		p.idle = append(p.idle[:best], p.idle[best+1:]...)
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	return b.NewSession(nctx)
}

// Release gives back a session taken with Acquire whose cache is
// consistent (its Generate returned no error): a later Acquire may reuse
// it. A session released twice is kept once.
func (b *Batch) Release(s *Session) {
	if s == nil || s.batch != b {
		return
	}
	p := &b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.idle {
		if t == s {
			return
		}
	}
	p.idle = append(p.idle, s)
}

// Idle is the number of idle sessions Acquire may reuse.
func (b *Batch) Idle() int {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	return len(b.pool.idle)
}

// reusable is the number of positions of prompt the session would keep
// without evaluating (as lookupPrefix does with its own cache).
func (s *Session) reusable(prompt []int32) int {
	n := sharedPrefix(s.tokens[:s.pos], prompt)
	if n == len(prompt) {
		n--
	}
	return s.recPoint(n)
}

// sharedPrefix is the length of the longest common prefix of a and b.
func sharedPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
