package server

import "github.com/woolly-llm/woolly/runtime"

// MaxAutoParallel caps the slots chosen from the KV budget: past it a
// step of the batch grows without serving more clients than a small
// server sees at once, and the queue takes the rest.
const MaxAutoParallel = 16

// assumedMemory stands in for the machine's memory where the runtime
// cannot read it (runtime.TotalMemory is 0).
const assumedMemory = 8 << 30

// DefaultKVBudget is the memory the KV caches of one model's slots may
// take together when Config.KVBudget is unset: a quarter of the machine's
// memory (of 8 GiB where it is unknown).
func DefaultKVBudget() int64 {
	mem := runtime.TotalMemory()
	if mem == 0 {
		mem = assumedMemory
	}
	return int64(mem / 4)
}

// autoSlots is the number of generations a model runs at once when
// --parallel is unset: as many KV caches of nctx positions (perPos bytes a
// position; every session allocates its whole context when it is made) as
// fit in budget bytes, at least 1 and at most maxSlots. A model that does
// not report its KV size (perPos or nctx 0) gets DefaultParallel.
func autoSlots(budget, perPos int64, nctx, maxSlots int) int {
	if perPos <= 0 || nctx <= 0 {
		return min(DefaultParallel, maxSlots)
	}
	per := perPos * int64(nctx)
	if per <= 0 || per/int64(nctx) != perPos { // overflow: one slot at most
		return 1
	}
	n := budget / per
	return int(max(1, min(n, int64(maxSlots))))
}
