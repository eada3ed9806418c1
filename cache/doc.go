// Package cache holds Woolly's byte-budget caches: a generic LRU with
// statistics and load de-duplication (Cache), the dequantized-weight cache
// (DequantCache) and the prefix KV cache (PrefixCache).
//
// # How the runtime uses them
//
// runtime/caches.go makes one DequantCache and one PrefixCache per loaded
// model (sized by runtime.LoadOptions; ParseSize reads the command-line
// sizes), shared by all the model's sessions and requests, so statistics
// cover the model's lifetime and a request finds an earlier one's entries.
//
// Dequantized weights (off by default). For a forward pass of one sequence
// with at least 32 tokens, runtime's pass.dequantOps asks TryGet for each
// matrix of a product, with kernels.Dequant as the loader; the workers of
// pass.matmulOps then run kernels.Sgemm on the f32 weights it returned and
// the quantized kernels (MatMulQ) on the rest. TryGet never dequantizes a
// tensor the cache will not keep (too large, or outside the stable subset of
// a budget smaller than the model, see below), so a small budget costs
// nothing on the other tensors. Before each layer, pass.prefetchLayer hands
// the next layer's matrices to Prefetch, which runs kernels.DequantBulk in
// the background; a TryGet that arrives while it works waits for it instead
// of dequantizing again. The model key is unique per loaded file. f32
// weights times f32 activations are not bit-identical to MatMulQ (which
// quantizes the activations to Q8) and the cache lost the benchmark, so it
// stays off by default (docs/caches.md has the figures).
//
// Prefix KV reuse. Snapshots are valid only for the model that made them.
// Session.Generate (runtime's Session.lookupPrefix) asks LongestCommon for
// the prompt minus its last token (at least one token is evaluated, for
// logits) and restores the snapshot when it covers more of the prompt than
// the session's own cache; the snapshot may run past the shared prefix, so
// the session is cut back to it. After the generation, Session.storePrefix
// Puts a snapshot of the sequence (prompt and reply) unless Contains finds
// one for exactly these tokens. (Longest is the simpler variant that only
// returns snapshots whose whole sequence is a prefix of the tokens.)
// Snapshots are shared by concurrent requests: a restore copies, never
// aliases.
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
