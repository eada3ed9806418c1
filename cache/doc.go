// Package cache holds Woolly's byte-budget caches: a generic LRU with
// statistics (Cache, a concurrency-safe wrapper of groupcache's lru) and the
// prefix KV cache (PrefixCache) built on it.
//
// # How the runtime uses them
//
// runtime/caches.go makes one PrefixCache per loaded model (sized by
// runtime.LoadOptions.PrefixCache; ParseSize reads the command-line sizes),
// shared by all the model's sessions and requests, so statistics cover the
// model's lifetime and a request finds an earlier one's entries.
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
// One mutex per Cache guards its LRU list, byte count and counters.
// OnEvicted runs under it and must never call back into the cache. Values
// are shared between callers and must be treated as read-only; an evicted
// value stays valid for whoever still holds it (the cache only drops its own
// reference; the garbage collector frees the buffer).
//
// # Byte budget
//
// The sum of the sizes of the stored entries never exceeds the budget. An
// entry larger than the whole budget is not stored (Stats.Uncacheable).
package cache
