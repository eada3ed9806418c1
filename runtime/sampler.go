package runtime

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// SamplerOptions choose how the next token is picked from the logits. The
// chain is llama.cpp's: penalties, DRY, top-k, typical-p, top-p, min-p, XTC,
// temperature, then a random draw. With Mirostat 1 or 2 it is llama.cpp's
// mirostat chain instead: temperature, then mirostat (the penalties, DRY
// and the filters do not take part). Temperature <= 0 is greedy: the best
// survivor of the chain (lowest id on ties), which with typical-p and XTC
// off is the argmax after penalties and DRY. Zero values switch a stage
// off, so SamplerOptions{} is plain greedy decoding.
type SamplerOptions struct {
	Temperature      float32 // <= 0: greedy
	TopP             float32 // 0 or >= 1: off
	MinP             float32 // 0: off
	RepeatPenalty    float32 // 0 or 1: off
	FrequencyPenalty float32 // 0: off
	PresencePenalty  float32 // 0: off
	TopK             int     // <= 0: off
	RepeatLastN      int     // tokens the penalties look back on; 0: 64, -1: all
	Seed             int64   // < 0: random

	TypicalP float32 // locally typical sampling; 0 or >= 1: off

	// Mirostat: 0 off, 1 (Mirostat), 2 (Mirostat 2.0); Tau is the target
	// surprise (entropy, in bits), Eta the learning rate.
	Mirostat    int
	MirostatTau float32
	MirostatEta float32

	// DRY ("don't repeat yourself"): a token that would extend a repeat of
	// more than DryAllowedLength tokens of the last DryPenaltyLastN (-1:
	// the whole sequence, 0: off) loses DryMultiplier *
	// DryBase^(length-DryAllowedLength) from its logit. DryBreakers end
	// repeats (nil: llama.cpp's "\n", ":", "\"", "*"; an empty list: none;
	// a pointer so that options stay comparable); they need the
	// vocabulary (Sampler.UseVocab). DryMultiplier 0: off.
	DryMultiplier    float32
	DryBase          float32
	DryAllowedLength int
	DryPenaltyLastN  int
	DryBreakers      *[]string

	// XTC ("exclude top choices"): with probability XTCProbability, the
	// tokens at least XTCThreshold likely are removed except the least
	// likely of them. Threshold > 0.5 switches it off, as in llama.cpp.
	XTCProbability float32
	XTCThreshold   float32
}

// DefaultSamplerOptions are llama.cpp's defaults (temp 0.8, top-k 40,
// top-p 0.95, min-p 0.05, no repetition penalty, random seed; typical-p,
// mirostat, DRY and XTC off, with their parameters at llama.cpp's values:
// mirostat tau 5 and eta 0.1, DRY base 1.75, allowed length 2, last 64
// tokens, XTC threshold 0.1).
func DefaultSamplerOptions() SamplerOptions {
	return SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64, Seed: -1,
		TypicalP: 1, MirostatTau: 5, MirostatEta: 0.1,
		DryBase: 1.75, DryAllowedLength: 2, DryPenaltyLastN: 64, XTCThreshold: 0.1}
}

// SamplerRangeError is a sampler setting outside its range. Field is the
// setting's API name (temperature, top_p, ...); front ends show their own
// spelling of it (the CLI: --temp, --top-p, ...).
type SamplerRangeError struct {
	Field string
	Value float64
	Want  string // the allowed range, e.g. "in [0, 1]"
}

func (e *SamplerRangeError) Error() string {
	return fmt.Sprintf("%s %g is out of range: must be %s", e.Field, e.Value, e.Want)
}

// Validate checks every setting against its range, as llama.cpp's front
// ends and OpenAI's API take them: temperature >= 0, top_p and min_p in
// [0, 1], top_k >= 0, repeat_penalty >= 0, frequency and presence
// penalties in [-2, 2], repeat_last_n >= -1. The first offender is a
// *SamplerRangeError.
func (o SamplerOptions) Validate() error {
	bad := func(field string, v float64, want string) error {
		return &SamplerRangeError{Field: field, Value: v, Want: want}
	}
	isNaN := func(v float32) bool { return v != v }
	switch {
	case o.Temperature < 0 || isNaN(o.Temperature):
		return bad("temperature", float64(o.Temperature), ">= 0")
	case o.TopP < 0 || o.TopP > 1 || isNaN(o.TopP):
		return bad("top_p", float64(o.TopP), "in [0, 1]")
	case o.MinP < 0 || o.MinP > 1 || isNaN(o.MinP):
		return bad("min_p", float64(o.MinP), "in [0, 1]")
	case o.TopK < 0:
		return bad("top_k", float64(o.TopK), ">= 0")
	case o.RepeatPenalty < 0 || isNaN(o.RepeatPenalty):
		return bad("repeat_penalty", float64(o.RepeatPenalty), ">= 0")
	case o.FrequencyPenalty < -2 || o.FrequencyPenalty > 2 || isNaN(o.FrequencyPenalty):
		return bad("frequency_penalty", float64(o.FrequencyPenalty), "in [-2, 2]")
	case o.PresencePenalty < -2 || o.PresencePenalty > 2 || isNaN(o.PresencePenalty):
		return bad("presence_penalty", float64(o.PresencePenalty), "in [-2, 2]")
	case o.RepeatLastN < -1:
		return bad("repeat_last_n", float64(o.RepeatLastN), ">= -1")
	}
	return o.validateMore()
}

// Sampler picks tokens from logits. Feed it every token of the sequence
// (prompt and generated) with Accept so the penalties see them.
type Sampler struct {
	o       SamplerOptions
	rng     *rand.Rand
	history []int32
	work    []float32
	cands   candHeap
	counts  map[int32]int

	xrng     *rand.Rand // XTC's own draws, so they do not shift the token draws
	mu       float32    // mirostat's running surprise bound
	breakers []dryBreaker
	vocabSet bool
	dryCount []int
	dryMax   map[int32]int
}

type cand struct {
	id    int32
	logit float32
}

// NewSampler makes a sampler; with a non-negative seed its draws are
// reproducible.
func NewSampler(o SamplerOptions) *Sampler {
	seed := uint64(o.Seed)
	if o.Seed < 0 {
		seed = uint64(time.Now().UnixNano()) ^ rand.Uint64()
	}
	return &Sampler{o: o, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), counts: map[int32]int{},
		xrng: rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, seed)), mu: 2 * o.MirostatTau}
}

// Accept records a token of the sequence for the penalties.
func (s *Sampler) Accept(id int32) { s.history = append(s.history, id) }

// Reset forgets the history.
func (s *Sampler) Reset() { s.history = s.history[:0]; s.mu = 2 * s.o.MirostatTau }

func (s *Sampler) penaltiesOn() bool {
	o := s.o
	return (o.RepeatPenalty != 0 && o.RepeatPenalty != 1) || o.FrequencyPenalty != 0 || o.PresencePenalty != 0
}

// Sample picks the next token from logits (not modified).
func (s *Sampler) Sample(logits []float32) int32 {
	o := s.o
	if o.Mirostat != 0 {
		return s.sampleMirostat(logits)
	}
	l := s.adjusted(logits)
	if o.Temperature <= 0 && !s.typicalOn() && !s.xtcOn() {
		return argmax(l)
	}
	c := s.filtered(l)
	if o.Temperature <= 0 {
		// llama.cpp's temperature 0 keeps the best survivor of the chain.
		best := c[0]
		for _, x := range c[1:] {
			if better(x, best) {
				best = x
			}
		}
		return best.id
	}
	for i := range c {
		c[i].logit /= o.Temperature
	}
	return c[s.draw(softmaxOf(c), s.rng)].id
}

// adjusted returns the logits after the penalties and DRY (a copy when
// either is on; logits itself otherwise).
func (s *Sampler) adjusted(logits []float32) []float32 {
	o := s.o
	l := logits
	if !s.penaltiesOn() && !s.dryOn() {
		return l
	}
	s.work = append(s.work[:0], logits...)
	l = s.work
	if s.penaltiesOn() {
		n := o.RepeatLastN
		if n == 0 {
			n = 64
		}
		h := s.history
		if n > 0 && len(h) > n {
			h = h[len(h)-n:]
		}
		clear(s.counts)
		for _, id := range h {
			if id >= 0 && int(id) < len(l) {
				s.counts[id]++
			}
		}
		for id, c := range s.counts {
			v := l[id]
			if o.RepeatPenalty != 0 && o.RepeatPenalty != 1 {
				if v <= 0 {
					v *= o.RepeatPenalty
				} else {
					v /= o.RepeatPenalty
				}
			}
			v -= float32(c)*o.FrequencyPenalty + o.PresencePenalty
			l[id] = v
		}
	}
	if s.dryOn() {
		s.applyDRY(l)
	}
	return l
}

// filtered runs top-k, typical-p, top-p, min-p and XTC over adjusted
// logits, in llama.cpp's order, and returns the survivors best first
// (before temperature).
func (s *Sampler) filtered(l []float32) []cand {
	o := s.o
	// top-k: the k best candidates, sorted by logit (ties by id).
	k := o.TopK
	if k <= 0 || k > len(l) {
		k = len(l)
	}
	c := s.topK(l, k)
	if s.typicalOn() {
		c = typicalFilter(c, o.TypicalP)
	}
	// top-p: the smallest prefix whose probability reaches p.
	if o.TopP > 0 && o.TopP < 1 {
		p := softmaxOf(c)
		cum, keep := 0.0, len(c)
		for i, pi := range p {
			cum += pi
			if cum >= float64(o.TopP) {
				keep = i + 1
				break
			}
		}
		c = c[:keep]
	}
	// min-p: drop tokens less likely than min_p times the best one.
	if o.MinP > 0 && o.MinP <= 1 && len(c) > 1 {
		thr := c[0].logit + float32(math.Log(float64(o.MinP)))
		keep := 1
		for keep < len(c) && c[keep].logit >= thr {
			keep++
		}
		c = c[:keep]
	}
	if s.xtcOn() && len(c) >= 2 && s.xrng.Float64() < float64(o.XTCProbability) {
		c = xtcFilter(c, o.XTCThreshold)
	}
	return c
}

// draw picks an index from probabilities p with rng.
func (s *Sampler) draw(p []float64, rng *rand.Rand) int {
	r := rng.Float64()
	cum := 0.0
	for i, pi := range p {
		cum += pi
		if r < cum {
			return i
		}
	}
	return len(p) - 1
}

// Argmax returns the index of the largest value, the lowest on ties: the
// token greedy sampling (temperature 0) picks.
func Argmax(l []float32) int32 { return argmax(l) }

func argmax(l []float32) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}

// better orders candidates by logit descending, then id ascending.
func better(a, b cand) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

// compareCands is better as a sort order (slices.SortFunc).
func compareCands(a, b cand) int {
	if better(a, b) {
		return -1
	}
	if better(b, a) {
		return 1
	}
	return 0
}

// candHeap is a min-heap of the worst kept candidate (for top-k selection).
type candHeap []cand

func (h candHeap) Len() int           { return len(h) }
func (h candHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h candHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)        { *h = append(*h, x.(cand)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// topK returns the k best candidates of l, best first.
func (s *Sampler) topK(l []float32, k int) []cand {
	h := s.cands[:0]
	if k >= len(l) {
		for i, v := range l {
			h = append(h, cand{int32(i), v})
		}
	} else {
		for i, v := range l {
			c := cand{int32(i), v}
			if len(h) < k {
				h = append(h, c)
				if len(h) == k {
					heap.Init(&h)
				}
			} else if better(c, h[0]) {
				h[0] = c
				heap.Fix(&h, 0)
			}
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	s.cands = h
	return h
}

// softmaxOf returns the probabilities of sorted candidates (best first).
func softmaxOf(c []cand) []float64 {
	p := make([]float64, len(c))
	if len(c) == 0 {
		return p
	}
	mx := float64(c[0].logit)
	sum := 0.0
	for i := range c {
		p[i] = math.Exp(float64(c[i].logit) - mx)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}
