package runtime

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Continuous batching. Sessions made by Batch.NewSession evaluate through
// their batch: while several of them generate at once (each in its own
// goroutine, with its own KV cache, positions, sampler and stop rules), one
// scheduler runs the next tokens of all of them through one forward pass per
// step, so the weights are read once per step for every sequence. Sequences
// join and leave between steps. A prompt goes in chunks of PromptChunk
// tokens, one chunk per step beside the others' next tokens, so a long
// prompt holds the running streams up for at most one chunk.
//
// A sequence's numbers do not depend on its company: every op of the pass is
// row-wise (each row keeps its summation order whatever the other rows are)
// except attention, which each sequence runs over its own cache with the
// path its own row count selects, so its logits are the same bits alone in
// the batch or beside others (on one kernel set; see pass.product for the
// types summed per sequence). Against a session outside any batch the
// difference is the prompt chunking only: prompts of at most PromptChunk
// tokens give the same bits too.
//
// Concurrency: a Batch and its sessions may be used from many goroutines,
// but each session by one goroutine at a time (as any Session).

// DefaultPromptChunk is the prompt tokens a sequence evaluates per step.
const DefaultPromptChunk = 128

// BatchOptions configure a Batch.
type BatchOptions struct {
	// PromptChunk is the most prompt tokens one sequence evaluates per step
	// (0: DefaultPromptChunk; at most 512, the rows of one pass).
	PromptChunk int
}

// BatchStats count a batch's steps.
type BatchStats struct {
	Steps   int64 // forward passes run
	Rows    int64 // token rows evaluated in them
	MaxSeqs int   // most sequences in one step
	Shared  int64 // steps with two or more sequences
}

// Batch steps the sessions of one model together.
type Batch struct {
	m     *Model
	chunk int

	mu        sync.Mutex
	queue     []*evalReq        // waiting evaluations, in arrival order
	active    map[*Session]bool // sessions inside Generate: their next token is coming
	running   bool              // the scheduler goroutine is running
	wake      chan struct{}     // capacity 1: a request or a departure
	st        *fwdState         // step scratch (scheduler only), for stCtx positions
	stCtx     int
	lastStep  time.Duration
	stats     BatchStats
	gatherMin time.Duration // tests: wait at least this long for late sessions

	pool sessionPool // idle sessions for Acquire (sessions.go)
}

// evalReq is one Session.eval waiting for the scheduler.
type evalReq struct {
	s         *Session
	tokens    []int32
	allLogits bool
	all       []float32 // [len(tokens)][NVocab] with allLogits
	done      int       // tokens evaluated so far
	err       error
	fin       chan struct{} // closed when done or failed
}

// NewBatch makes a batch for sessions of m.
func (m *Model) NewBatch(o BatchOptions) (*Batch, error) {
	chunk := o.PromptChunk
	if chunk == 0 {
		chunk = DefaultPromptChunk
	}
	if chunk < 1 || chunk > maxBatch {
		return nil, fmt.Errorf("prompt chunk %d: want 1 to %d", chunk, maxBatch)
	}
	return &Batch{m: m, chunk: chunk, active: map[*Session]bool{}, wake: make(chan struct{}, 1)}, nil
}

// NewSession makes a session of the batch with a KV cache of nCtx
// positions (0: the model's default context). It evaluates through the
// batch; Generate calls on several of its sessions at once step together.
func (b *Batch) NewSession(nCtx int) (*Session, error) {
	s, err := b.m.newSession(nCtx, false)
	if err != nil {
		return nil, err
	}
	s.batch = b
	return s, nil
}

// Stats returns the batch's step counters.
func (b *Batch) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// enter marks s as generating: the scheduler waits briefly for its next
// token before running a step without it.
func (b *Batch) enter(s *Session) {
	b.mu.Lock()
	b.active[s] = true
	b.mu.Unlock()
}

// leave marks s as done generating.
func (b *Batch) leave(s *Session) {
	b.mu.Lock()
	delete(b.active, s)
	b.mu.Unlock()
	b.signal()
}

func (b *Batch) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// eval queues tokens of s (already checked by Session.eval) and waits for
// the scheduler to evaluate them.
func (b *Batch) eval(s *Session, tokens []int32, allLogits bool) ([]float32, error) {
	r := &evalReq{s: s, tokens: tokens, allLogits: allLogits, fin: make(chan struct{})}
	if allLogits {
		r.all = make([]float32, len(tokens)*b.m.cfg.NVocab)
	}
	b.mu.Lock()
	b.queue = append(b.queue, r)
	if !b.running {
		b.running = true
		go b.run()
	}
	b.mu.Unlock()
	b.signal()
	<-r.fin
	if wp, ok := r.err.(*workerPanic); ok {
		panic(wp) // a bug in the step's forward pass: raised on each of its callers
	}
	return r.all, r.err
}

// maxGather bounds how long a step waits for generating sessions whose next
// token has not arrived yet (sampling, a slow callback).
const maxGather = 5 * time.Millisecond

// run is the scheduler: it runs steps while evaluations wait, then exits
// (the next eval starts it again).
func (b *Batch) run() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.gather()

		b.mu.Lock()
		segs, reqs := b.takeStep()
		st, err := b.scratch(reqs)
		b.mu.Unlock()

		t0 := time.Now()
		if err == nil {
			err = b.forward(st, segs)
		}
		dt := time.Since(t0)

		b.mu.Lock()
		b.lastStep = dt
		b.finishStep(segs, reqs, err)
		b.mu.Unlock()
	}
}

// forward runs one step's forward pass; a panic in it (a bug) fails the
// step with a *workerPanic, which eval re-raises on every caller of the
// step, so the scheduler goroutine lives on and no caller waits forever.
func (b *Batch) forward(st *fwdState, segs []seg) (err error) {
	defer func() {
		if r := recover(); r != nil {
			wp, ok := r.(*workerPanic)
			if !ok {
				wp = &workerPanic{value: r, stack: debug.Stack()}
			}
			err = wp
		}
	}()
	b.m.forward(st, segs)
	return nil
}

// gather waits until every generating session has its next evaluation
// queued, at most the last step's duration (capped by maxGather): a step
// then carries as many sequences as are ready, without stalling on one that
// is late.
func (b *Batch) gather() {
	b.mu.Lock()
	wait := min(max(b.lastStep, 100*time.Microsecond), maxGather)
	if b.gatherMin > 0 {
		wait = b.gatherMin
	}
	b.mu.Unlock()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ready := b.allQueued()
		b.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-b.wake:
		case <-deadline.C:
			return
		}
	}
}

// allQueued reports whether every active session has a queued request.
func (b *Batch) allQueued() bool {
	queued := 0
	for _, r := range b.queue {
		if b.active[r.s] {
			queued++
		}
	}
	return queued >= len(b.active)
}

// takeStep picks the rows of the next step: in arrival order, the next
// chunk of each waiting request (one token when decoding, up to PromptChunk
// of a prompt), as many as fit in one pass. Each session appears once.
func (b *Batch) takeStep() ([]seg, []*evalReq) {
	nv := b.m.cfg.NVocab
	var segs []seg
	var reqs []*evalReq
	rows := 0
	for _, r := range b.queue {
		n := min(len(r.tokens)-r.done, b.chunk)
		if rows+n > maxBatch {
			break
		}
		sg := seg{s: r.s, tokens: r.tokens[r.done : r.done+n]}
		switch {
		case r.allLogits:
			sg.out = r.all[r.done*nv : (r.done+n)*nv]
		case r.done+n == len(r.tokens):
			sg.from, sg.out = n-1, r.s.last
		default:
			sg.from = n
		}
		segs = append(segs, sg)
		reqs = append(reqs, r)
		rows += n
	}
	return segs, reqs
}

// scratch returns step scratch big enough for the sessions of reqs.
func (b *Batch) scratch(reqs []*evalReq) (*fwdState, error) {
	if len(reqs) == 0 {
		return nil, errors.New("batch: empty step")
	}
	nctx := 0
	for _, r := range reqs {
		nctx = max(nctx, r.s.nCtx)
	}
	if b.st == nil || b.stCtx < nctx {
		b.st = newFwdState(b.m.cfg, maxBatch, nctx, b.m.pool.n)
		b.stCtx = nctx
	}
	return b.st, nil
}

// finishStep advances the sessions of a step and completes the requests
// whose tokens are all evaluated (or fails every request of the step).
func (b *Batch) finishStep(segs []seg, reqs []*evalReq, err error) {
	nv := b.m.cfg.NVocab
	for i, r := range reqs {
		if err != nil {
			r.err = err
			continue
		}
		s, n := r.s, len(segs[i].tokens)
		s.pos += n
		s.tokens = append(s.tokens[:s.pos-n], segs[i].tokens...)
		r.done += n
		if r.done == len(r.tokens) && r.allLogits {
			copy(s.last, r.all[(len(r.tokens)-1)*nv:])
		}
	}
	if err == nil {
		b.stats.Steps++
		for _, sg := range segs {
			b.stats.Rows += int64(len(sg.tokens))
		}
		b.stats.MaxSeqs = max(b.stats.MaxSeqs, len(segs))
		if len(segs) > 1 {
			b.stats.Shared++
		}
	}
	keep := b.queue[:0]
	for _, r := range b.queue {
		if r.err != nil || r.done == len(r.tokens) {
			close(r.fin)
			continue
		}
		keep = append(keep, r)
	}
	clear(b.queue[len(keep):])
	b.queue = keep
}
