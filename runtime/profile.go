package runtime

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Profiling: where the time of the forward passes goes, by op class. Off by
// default; when off every op pays one atomic load. When on, the wall time
// of each op goes to its class:
//
//	matmul <type>  the matrix products by weight type (an op over several
//	               matrices is split between their types by weight bytes)
//	attention      KV cache writes and attention
//	act quant      converting activations to the weights' activation types
//	other          norms, RoPE, activations, residuals, embeddings, output
//	               soft-cap: the pass's wall time not in the classes above
//
// and "pool wait" is the part of the parallel ops' wall time that the
// calling thread spent waiting for the other workers to finish their last
// chunks (it is included in the classes above).

// Profile is the accumulated time per op class.
type Profile struct {
	Passes   int64         // forward passes
	Tokens   int64         // token rows evaluated
	Total    time.Duration // wall time of the passes
	PoolWait time.Duration // of which waiting for workers at the end of parallel ops
	Ops      []ProfileOp   // by class, largest first; they sum to Total
}

// ProfileOp is one class's time.
type ProfileOp struct {
	Class string
	Time  time.Duration
}

type profiler struct {
	mu       sync.Mutex
	passes   int64
	tokens   int64
	total    time.Duration
	classes  map[string]time.Duration
	poolWait atomic.Int64 // ns, added by the pool
}

// SetProfiling turns profiling on (clearing what was gathered) or off.
func (m *Model) SetProfiling(on bool) {
	if !on {
		m.prof.Store(nil)
		m.pool.wait.Store(nil)
		return
	}
	pr := &profiler{classes: map[string]time.Duration{}}
	m.prof.Store(pr)
	m.pool.wait.Store(&pr.poolWait)
}

// Profile returns what profiling gathered since it was turned on (the zero
// Profile when it is off).
func (m *Model) Profile() Profile {
	pr := m.prof.Load()
	if pr == nil {
		return Profile{}
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	p := Profile{Passes: pr.passes, Tokens: pr.tokens, Total: pr.total, PoolWait: time.Duration(pr.poolWait.Load())}
	var sum time.Duration
	for c, d := range pr.classes {
		p.Ops = append(p.Ops, ProfileOp{c, d})
		sum += d
	}
	if other := pr.total - sum; other > 0 {
		p.Ops = append(p.Ops, ProfileOp{"other", other})
	}
	sort.Slice(p.Ops, func(i, j int) bool {
		if p.Ops[i].Time != p.Ops[j].Time {
			return p.Ops[i].Time > p.Ops[j].Time
		}
		return p.Ops[i].Class < p.Ops[j].Class
	})
	return p
}

// add charges d to class.
func (pr *profiler) add(class string, d time.Duration) {
	pr.mu.Lock()
	pr.classes[class] += d
	pr.mu.Unlock()
}

// addPass records one forward pass of ntok rows.
func (pr *profiler) addPass(ntok int, d time.Duration) {
	pr.mu.Lock()
	pr.passes++
	pr.tokens += int64(ntok)
	pr.total += d
	pr.mu.Unlock()
}

// addMatmul splits d between the weight types of ops by weight bytes.
func (pr *profiler) addMatmul(ops []matOp, d time.Duration) {
	var total int64
	for _, op := range ops {
		total += int64(op.m.Rows) * int64(op.m.RowBytes)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, op := range ops {
		share := time.Duration(float64(d) * float64(int64(op.m.Rows)*int64(op.m.RowBytes)) / float64(max(total, 1)))
		pr.classes["matmul "+op.m.Type.String()] += share
	}
}
