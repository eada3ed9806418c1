// Package cache holds Woolly's byte-budget caches: a generic LRU with
// statistics and load de-duplication (Cache), the dequantized-weight cache
// (DequantCache) and the prefix KV cache (PrefixCache).
//
// # Integration (for the runtime)
//
// Dequantized weights. Make one DequantCache per loaded model (in Load, kept
// in the Model, closed in Model.Close) when --dequant-cache SIZE > 0 (parse
// it with ParseSize), and share it between all sessions and requests: the
// statistics then cover the model's lifetime and a second request finds the
// first one's tensors. Use it on the prompt path only (ntok ≥ a threshold
// set by benchmark; MatVec stays for single tokens). In Session.matmul, per
// matOp, before the worker pool runs:
//
//	w, ok, err := dc.TryGet(modelID, m.Name, m.Rows*m.Cols, func(dst []float32) error {
//		return kernels.Dequant(m.Type, m.Data, dst)
//	})
//
// and in each worker, for its weight rows [r0, r1):
//
//	if ok { // f32 weights: out[t][r] = dot(w row r, in row t)
//		err = kernels.Sgemm(true, 0, ntok, r1-r0, cols, in, cols, w[r0*cols:], cols, out[r0:], m.Rows)
//	} else { // not kept by the cache: the quantized kernels, as today
//		err = kernels.MatMulQ(...)
//	}
//
// TryGet never dequantizes a tensor the cache will not keep (too large, or
// outside the stable subset of a budget smaller than the model), so a small
// budget costs nothing on the other tensors. modelID must be unique per
// loaded file (e.g. its path plus a load counter). Before layer L's matmuls,
// call dc.Prefetch(modelID, items of layer L+1), one PrefetchItem{Tensor:
// m.Name, Type: m.Type, Data: m.Data, N: m.Rows*m.Cols} per matrix: it runs
// kernels.DequantBulk in the background and a TryGet that arrives while it
// works waits for it instead of dequantizing again. Note that f32 weights
// times f32 activations are not bit-identical to MatMulQ (which quantizes
// the activations to Q8): measure parity before the cache is turned on by
// default (contracts.md), and keep it off by default unless it wins the
// benchmark within the RSS bound (an f32 copy is ~7x a Q4_K tensor).
//
// Prefix KV reuse. Make one PrefixCache per loaded model (snapshots are only
// valid for the model that made them). The runtime supplies the snapshot
// type: Session.Snapshot() returns a value holding a copy of the KV rows
// [0, Pos) of every layer plus the tokens, with Bytes() = its memory;
// Session.Restore(snap) copies them back and sets Pos and Tokens. A request
// with prompt tokens p does
//
//	n, snap, _ := pc.LongestCommon(p[:len(p)-1]) // keep ≥ 1 token to evaluate for logits
//	if n > 0 {
//		s.Restore(snap)  // the snapshot may run past n: it diverges from p there
//		s.Truncate(n)
//	} else {
//		s.Reset()
//	}
//	logits, err := s.Eval(p[n:], false)
//
// (Longest is the simpler variant that only returns snapshots whose whole
// sequence is a prefix of p: no Truncate needed.) At a turn boundary, after
// the prompt and after the reply when the conversation goes on, call
// pc.Put(s.Tokens(), s.Snapshot()). Snapshots are shared by concurrent
// requests: Restore must copy, never alias. A session that already holds a
// prefix of p (runtime.Session.Generate's own common-prefix reuse) needs no
// lookup; the cache serves other conversations and new sessions.
//
// # Cache concurrency rules
//
// One mutex per Cache guards its LRU list, byte count, counters, ghost list
// and in-flight table. OnEvicted runs under it and must never call back into
// the cache. Loads run outside it; concurrent loads of one key run once.
// Values are shared between callers and must be treated as read-only; an
// evicted value stays valid for whoever still holds it (the cache only drops
// its own reference; the garbage collector frees the buffer).
//
// # Byte budget
//
// The sum of the sizes of the stored entries never exceeds the budget. An
// entry larger than the whole budget is returned to the caller and not stored
// (Stats.Uncacheable); a failed load stores nothing.
//
// # Scan resistance (ScanResistant option, on in DequantCache)
//
// The prompt path reads every weight tensor once per batch, layer after
// layer: a cyclic scan. With a budget below the working set, plain LRU evicts
// every tensor just before it is needed again and never hits. The policy
// here keeps a stable subset instead:
//
//   - The cache remembers the keys it evicted for space (a "ghost" list of
//     keys only, bounded by Options.GhostEntries).
//   - A new key, or one not in the ghost list, is admitted as in plain LRU,
//     evicting the least recently used entries.
//   - A key that is in the ghost list was evicted and is wanted again: its
//     reuse distance is larger than the cache, and admitting it would only
//     evict another member of the same cycle. If it fits without evicting it
//     is stored; otherwise it is served uncached (Stats.Rejected) and the
//     resident entries stay.
//   - The subset is not kept forever: if the resident entries get no hit
//     during a run of misses longer than 2×(ghost keys) + (entries) + 16
//     (longer than any cycle the ghost list can describe), the working set has
//     moved on and ghost keys are admitted LRU-style again.
//
// A cyclic scan over N equal tensors with a budget for N/4 thus hits 25% of
// the time from its second pass on (plain LRU: 0%), and a budget at least as
// large as the working set behaves exactly like LRU (nothing is ever evicted,
// so every key is admitted).
package cache
