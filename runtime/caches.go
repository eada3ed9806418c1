package runtime

// The model-level cache: prefix KV reuse (cache.PrefixCache of Session
// snapshots), made once per loaded model, shared by all its sessions and
// requests, and living as long as the model; see package cache's
// documentation.

import (
	"fmt"
	"sync"
	"time"

	"github.com/woolly-llm/woolly/cache"
)

// DefaultPrefixCache is the prefix KV cache budget of a model loaded with
// LoadOptions.PrefixCache unset (nil): 256 MiB of snapshots (TinyLlama-1.1B's f16
// KV cache takes 22.5 KiB per token, so about 11,600 tokens, five full
// 2048-token contexts). Memory is only used for what is stored.
const DefaultPrefixCache = 256 << 20

// Ptr returns a pointer to v: options whose unset state differs from their
// zero value are pointers (nil: the default), as in Ollama's API, and Ptr
// sets them inline: LoadOptions{PrefixCache: runtime.Ptr(int64(0))}.
func Ptr[T any](v T) *T { return &v }

// Snapshot is a copy of a session's state after its first Len() tokens:
// the f16 K and V rows of every layer, the tokens and the logits of the last
// position. It is immutable once taken and may be restored into any session
// of the same model (concurrently too: Restore copies out of it).
type Snapshot struct {
	model  *Model
	tokens []int32
	k, v   [][]byte        // per layer len(tokens) rows in the model's cache types
	last   []float32       // logits after the last token
	rec    *recurrentState // the linear layers' state after the last token (nil: none)
	ckpts  []recCheckpoint // the session's earlier states (recsnap.go), shared
}

// Bytes is the memory the snapshot holds (cache.Snapshot).
func (sn *Snapshot) Bytes() int64 {
	var n int64
	for i := range sn.k {
		n += int64(len(sn.k[i]) + len(sn.v[i]))
	}
	if sn.rec != nil {
		n += sn.rec.bytes()
	}
	for _, c := range sn.ckpts {
		n += c.rec.bytes()
	}
	return n + 4*int64(len(sn.tokens)+len(sn.last))
}

// Len is the number of positions in the snapshot.
func (sn *Snapshot) Len() int { return len(sn.tokens) }

// Tokens are the snapshot's token ids (do not modify).
func (sn *Snapshot) Tokens() []int32 { return sn.tokens }

// Snapshot copies the session's state (positions [0, Pos)). It never aliases
// the session's buffers: later Evals do not change it.
func (s *Session) Snapshot() *Snapshot {
	kb, vb := s.model.kvRows()
	sn := &Snapshot{model: s.model, tokens: append([]int32(nil), s.tokens[:s.pos]...),
		k: make([][]byte, len(s.kcache)), v: make([][]byte, len(s.vcache))}
	for i := range s.kcache {
		sn.k[i] = append([]byte(nil), s.kcache[i][:s.pos*kb]...)
		sn.v[i] = append([]byte(nil), s.vcache[i][:s.pos*vb]...)
	}
	if s.pos > 0 {
		sn.last = append([]float32(nil), s.last...)
	}
	if s.rec != nil {
		sn.rec = s.rec.clone()
		sn.ckpts = append([]recCheckpoint(nil), s.ckpts...)
	}
	return sn
}

// Restore replaces the session's state by a copy of the snapshot's: Pos
// becomes sn.Len(), Tokens the snapshot's tokens, and the last logits those
// of the snapshot. The snapshot must come from the same model and fit in the
// session's context.
func (s *Session) Restore(sn *Snapshot) error {
	if sn == nil {
		return fmt.Errorf("restore: nil snapshot")
	}
	return s.restore(sn, sn.Len())
}

// restore copies the first n positions of sn into the session. The last
// logits are restored only when n is the whole snapshot; otherwise the caller
// must evaluate at least one token before reading them.
func (s *Session) restore(sn *Snapshot, n int) error {
	if sn.model != s.model {
		return fmt.Errorf("restore: the snapshot was taken from another model")
	}
	if n < 0 || n > sn.Len() {
		return fmt.Errorf("restore: %d positions asked of a snapshot of %d", n, sn.Len())
	}
	if n > s.nCtx {
		return fmt.Errorf("restore: snapshot of %d positions does not fit the context of %d", n, s.nCtx)
	}
	if s.rec != nil {
		// The recurrent state exists after the snapshot's last token and
		// at its checkpoints (recsnap.go).
		c := lastCheckpoint(sn.ckpts, n)
		switch {
		case n == sn.Len() && sn.rec != nil:
			s.rec.copyFrom(sn.rec)
		case n == 0:
			s.rec.clear()
		case c.pos == n:
			s.rec.copyFrom(c.rec)
		default:
			return fmt.Errorf("restore: %d of the snapshot's %d positions asked, but %s's recurrent state exists only for all of them or a checkpoint", n, sn.Len(), s.model.cfg.Arch)
		}
		s.ckpts = s.ckpts[:0]
		for _, c := range sn.ckpts {
			if c.pos <= n {
				s.ckpts = append(s.ckpts, c)
			}
		}
	}
	kb, vb := s.model.kvRows()
	for i := range s.kcache {
		copy(s.kcache[i][:n*kb], sn.k[i][:n*kb])
		copy(s.vcache[i][:n*vb], sn.v[i][:n*vb])
	}
	s.tokens = append(s.tokens[:0], sn.tokens[:n]...)
	s.pos = n
	if n == sn.Len() && sn.last != nil {
		copy(s.last, sn.last)
	}
	return nil
}

// modelCaches are a model's caches and the counters the runtime adds.
type modelCaches struct {
	prefix *cache.PrefixCache // nil: prefix reuse off

	mu          sync.Mutex
	prefixSaved time.Duration // estimated prompt time saved by prefix reuse
	promptToks  int64         // prompt tokens evaluated by Generate, and the time it took:
	promptTime  time.Duration // the average cost of a prompt token for the estimate
}

func (m *Model) initCaches(o LoadOptions) error {
	budget := int64(DefaultPrefixCache)
	if o.PrefixCache != nil {
		budget = *o.PrefixCache
	}
	if budget < 0 {
		return fmt.Errorf("prefix cache budget %d is negative", budget)
	}
	if budget > 0 {
		pc, err := cache.NewPrefixCache(budget)
		if err != nil {
			return err
		}
		m.caches.prefix = pc
	}
	return nil
}

func (m *Model) closeCaches() {
	if pc := m.caches.prefix; pc != nil {
		pc.Purge()
	}
}

// CacheStats are a model's cache statistics since it was loaded.
type CacheStats struct {
	// PrefixEnabled reports whether prefix KV reuse is on. Prefix.TimeSaved
	// is an estimate: reused tokens times the prompt time per evaluated
	// token of the request that reused them.
	PrefixEnabled bool
	Prefix        cache.PrefixStats
}

// CacheStats returns the statistics of the model's caches.
func (m *Model) CacheStats() CacheStats {
	var cs CacheStats
	if pc := m.caches.prefix; pc != nil {
		cs.PrefixEnabled = true
		cs.Prefix = pc.Stats()
		m.caches.mu.Lock()
		cs.Prefix.TimeSaved = m.caches.prefixSaved
		m.caches.mu.Unlock()
	}
	return cs
}

// lookupPrefix makes the session hold the longest prefix of prompt it can
// get without evaluating: its own cached positions or a stored snapshot,
// whichever is longer, and always leaves at least one prompt token to
// evaluate. It returns the number of positions kept and whether they came
// from the prefix cache.
func (s *Session) lookupPrefix(prompt []int32) (int, bool, error) {
	n := 0
	for n < s.pos && n < len(prompt) && s.tokens[n] == prompt[n] {
		n++
	}
	if n == len(prompt) {
		n--
	}
	// A recurrent state cannot be rolled back: keep all positions or go
	// back to the last checkpoint before the divergence (recsnap.go).
	n = s.recPoint(n)
	if pc := s.model.caches.prefix; pc != nil && n < len(prompt)-1 {
		// Only a longer prefix than the session's own is worth a copy (the
		// cache counts a hit whenever it finds a shared prefix; the time
		// saved counts restores only).
		if c, snap, _ := pc.LongestCommon(prompt[:len(prompt)-1]); c > n {
			sn, ok := snap.(*Snapshot)
			if ok && s.rec != nil && c != sn.Len() {
				c = lastCheckpoint(sn.ckpts, c).pos
			}
			if ok && sn.model == s.model && c > n && c <= s.nCtx {
				if err := s.restore(sn, c); err != nil {
					return 0, false, err
				}
				return c, true, nil
			}
		}
	}
	if err := s.Truncate(n); err != nil {
		return 0, false, err
	}
	return n, false, nil
}

// storePrefix keeps a snapshot of the session's current state for later
// requests, unless one is stored for exactly these tokens.
func (s *Session) storePrefix() {
	pc := s.model.caches.prefix
	if pc == nil || s.pos == 0 || pc.Contains(s.tokens[:s.pos]) {
		return
	}
	sn := s.Snapshot()
	pc.Put(sn.tokens, sn)
}

// notePrompt records that a Generate evaluated evaluated prompt tokens in d
// after reusing reused positions from the prefix cache, and adds the
// estimated time saved: reused tokens at the model's average prompt time per
// token so far (an estimate: attention costs grow with the position, and
// batch sizes change the per-token cost).
func (m *Model) notePrompt(reused, evaluated int, d time.Duration) {
	if m.caches.prefix == nil || evaluated <= 0 {
		return
	}
	m.caches.mu.Lock()
	defer m.caches.mu.Unlock()
	m.caches.promptToks += int64(evaluated)
	m.caches.promptTime += d
	if reused > 0 {
		perTok := float64(m.caches.promptTime) / float64(m.caches.promptToks)
		m.caches.prefixSaved += time.Duration(perTok * float64(reused))
	}
}
