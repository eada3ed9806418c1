package runtime

import (
	"math"
	"slices"
	"strings"
)

// The samplers beyond top-k/top-p/min-p that llama.cpp users tune:
// typical-p, XTC, Mirostat (1 and 2) and DRY. Semantics and defaults follow
// llama.cpp's (src/llama-sampler.cpp, common/common.h); the code is ours.

// validateMore checks the settings of these samplers (see Validate).
func (o SamplerOptions) validateMore() error {
	bad := func(field string, v float64, want string) error {
		return &SamplerRangeError{Field: field, Value: v, Want: want}
	}
	fin := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	switch {
	case o.TypicalP < 0 || o.TypicalP > 1 || !fin(o.TypicalP):
		return bad("typical_p", float64(o.TypicalP), "in [0, 1]")
	case o.Mirostat < 0 || o.Mirostat > 2:
		return bad("mirostat", float64(o.Mirostat), "0, 1 or 2")
	case o.MirostatTau < 0 || !fin(o.MirostatTau):
		return bad("mirostat_tau", float64(o.MirostatTau), ">= 0")
	case o.MirostatEta < 0 || !fin(o.MirostatEta):
		return bad("mirostat_eta", float64(o.MirostatEta), ">= 0")
	case o.DryMultiplier < 0 || !fin(o.DryMultiplier):
		return bad("dry_multiplier", float64(o.DryMultiplier), ">= 0")
	case o.DryMultiplier > 0 && (o.DryBase < 1 || !fin(o.DryBase)):
		return bad("dry_base", float64(o.DryBase), ">= 1")
	case o.DryAllowedLength < 0:
		return bad("dry_allowed_length", float64(o.DryAllowedLength), ">= 0")
	case o.DryPenaltyLastN < -1:
		return bad("dry_penalty_last_n", float64(o.DryPenaltyLastN), ">= -1")
	case o.XTCProbability < 0 || o.XTCProbability > 1 || !fin(o.XTCProbability):
		return bad("xtc_probability", float64(o.XTCProbability), "in [0, 1]")
	case o.XTCThreshold < 0 || o.XTCThreshold > 1 || !fin(o.XTCThreshold):
		return bad("xtc_threshold", float64(o.XTCThreshold), "in [0, 1]")
	}
	for i, b := range o.dryBreakers() {
		if b == "" {
			return bad("dry_sequence_breakers", float64(i), "non-empty strings (entry at that index is empty)")
		}
	}
	return nil
}

func (s *Sampler) typicalOn() bool { return s.o.TypicalP > 0 && s.o.TypicalP < 1 }

func (s *Sampler) xtcOn() bool { return s.o.XTCProbability > 0 && s.o.XTCThreshold <= 0.5 }

func (s *Sampler) dryOn() bool {
	return s.o.DryMultiplier != 0 && s.o.DryBase >= 1 && s.o.DryPenaltyLastN != 0
}

// typicalFilter keeps the locally typical candidates: ordered by how far
// each token's surprise (-ln p) is from the distribution's entropy, the
// shortest such prefix whose probability exceeds p. The result is sorted
// best first again.
func typicalFilter(c []cand, p float32) []cand {
	if len(c) == 0 {
		return c
	}
	prob := softmaxOf(c)
	h := 0.0
	for _, q := range prob {
		if q > 0 {
			h -= q * math.Log(q)
		}
	}
	type scored struct {
		c     cand
		p, sc float64
	}
	all := make([]scored, len(c))
	for i := range c {
		sc := math.Inf(1)
		if prob[i] > 0 {
			sc = math.Abs(-math.Log(prob[i]) - h)
		}
		all[i] = scored{c[i], prob[i], sc}
	}
	// Stable on ties: candidates come best first, so equal distances keep
	// the likelier token first.
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case a.sc < b.sc:
			return -1
		case a.sc > b.sc:
			return 1
		}
		return 0
	})
	keep, cum := len(all), 0.0
	for i, x := range all {
		cum += x.p
		if cum > float64(p) {
			keep = i + 1
			break
		}
	}
	out := c[:0]
	kept := make([]cand, keep)
	for i := range kept {
		kept[i] = all[i].c
	}
	out = append(out, kept...)
	slices.SortFunc(out, compareCands)
	return out
}

// xtcFilter removes the candidates at least thr likely except the least
// likely of them; nothing when fewer than two reach thr. c is best first.
func xtcFilter(c []cand, thr float32) []cand {
	p := softmaxOf(c)
	last := 0
	for i, q := range p {
		if q < float64(thr) {
			break
		}
		last = i
	}
	if last > 0 {
		return c[last:]
	}
	return c
}

// sampleMirostat is llama.cpp's mirostat chain: temperature, then Mirostat
// (1: a top-k whose k follows from the estimated Zipf exponent of the 100
// likeliest tokens; 2: the tokens whose surprise is at most mu), a draw,
// and mu moved by eta towards the target surprise tau.
func (s *Sampler) sampleMirostat(logits []float32) int32 {
	o := s.o
	if o.Temperature <= 0 {
		return argmax(logits)
	}
	n := len(logits)
	var c []cand
	if o.Mirostat == 1 {
		const m = 100
		c = s.topK(logits, min(m, n))
		// Least-squares Zipf exponent from ln(p_i/p_{i+1}) against
		// ln((i+2)/(i+1)) over the likeliest m tokens.
		var num, den float64
		for i := 0; i+1 < len(c) && i < m-1; i++ {
			t := math.Log(float64(i+2) / float64(i+1))
			b := float64(c[i].logit-c[i+1].logit) / float64(o.Temperature)
			num += t * b
			den += t * t
		}
		sHat := num / den
		eps := sHat - 1
		k := math.Pow(eps*math.Pow(2, float64(s.mu))/(1-math.Pow(float64(n), -eps)), 1/sHat)
		kk := 1
		if k >= float64(n) {
			kk = n
		} else if k >= 1 {
			kk = int(k)
		}
		c = s.topK(logits, kk)
		for i := range c {
			c[i].logit /= o.Temperature
		}
	} else {
		// Only tokens with p >= 2^-mu survive: find them without sorting
		// the whole vocabulary.
		mx := float32(math.Inf(-1))
		for _, v := range logits {
			if v > mx {
				mx = v
			}
		}
		sum := 0.0
		for _, v := range logits {
			sum += math.Exp(float64((v - mx) / o.Temperature))
		}
		minP := math.Pow(2, -float64(s.mu))
		c = s.cands[:0]
		for i, v := range logits {
			if math.Exp(float64((v-mx)/o.Temperature))/sum >= minP {
				c = append(c, cand{int32(i), v / o.Temperature})
			}
		}
		if len(c) == 0 {
			c = append(c, cand{argmax(logits), mx / o.Temperature})
		}
		slices.SortFunc(c, compareCands)
		s.cands = c
	}
	p := softmaxOf(c)
	i := s.draw(p, s.rng)
	surprise := -math.Log2(p[i])
	s.mu -= o.MirostatEta * float32(surprise-float64(o.MirostatTau))
	return c[i].id
}

// dryBreaker is a sequence breaker as tokens: a head token whose text
// contains the breaker, or ends with its beginning; then tail, the tokens of
// the rest of the breaker.
type dryBreaker struct {
	head int32
	tail []int32
}

// DryVocab is what DRY needs to turn its sequence breakers into tokens
// (*tokenizer.Tokenizer has it).
type DryVocab interface {
	NumTokens() int
	Piece(id int32) []byte
	Encode(text string, addSpecial, parseSpecial bool) ([]int32, error)
}

// llama.cpp's default DRY sequence breakers and its bounds on them.
var defaultDryBreakers = []string{"\n", ":", "\"", "*"}

// dryBreakers is the breaker list in use: the given one, else llama.cpp's.
func (o SamplerOptions) dryBreakers() []string {
	if o.DryBreakers == nil {
		return defaultDryBreakers
	}
	return *o.DryBreakers
}

// DryBreakerList returns the DRY sequence breakers o uses (the defaults
// when none are set).
func (o SamplerOptions) DryBreakerList() []string { return append([]string(nil), o.dryBreakers()...) }

const (
	dryMaxBreakerBytes = 40
	dryMaxTail         = 20
)

// UseVocab prepares DRY's sequence breakers for the vocabulary v; without
// it DRY runs with no breakers. It does nothing when DRY is off.
func (s *Sampler) UseVocab(v DryVocab) error {
	if !s.dryOn() {
		return nil
	}
	list := s.o.dryBreakers()
	s.breakers = s.breakers[:0]
	tails := map[string][]int32{}
	has := func(b dryBreaker) bool {
		for _, x := range s.breakers {
			if x.head == b.head && slices.Equal(x.tail, b.tail) {
				return true
			}
		}
		return false
	}
	for _, str := range list {
		if len(str) > dryMaxBreakerBytes {
			str = str[:dryMaxBreakerBytes]
		}
		if str == "" {
			continue
		}
		for id := 0; id < v.NumTokens(); id++ {
			w := string(v.Piece(int32(id)))
			if strings.Contains(w, str) {
				s.breakers = append(s.breakers, dryBreaker{head: int32(id)})
				continue
			}
			// A token ending with the breaker's beginning: the rest,
			// tokenized, must follow it.
			for pos := strings.IndexByte(w, str[0]); pos >= 0; {
				rest := w[pos:]
				if strings.HasPrefix(str, rest) {
					more := str[len(rest):]
					tail, ok := tails[more]
					if !ok {
						t, err := v.Encode(more, false, false)
						if err != nil {
							return err
						}
						if len(t) > dryMaxTail {
							t = t[:dryMaxTail]
						}
						tail, tails[more] = t, t
					}
					if b := (dryBreaker{int32(id), tail}); !has(b) {
						s.breakers = append(s.breakers, b)
					}
				}
				next := strings.IndexByte(w[pos+1:], str[0])
				if next < 0 {
					break
				}
				pos += 1 + next
			}
		}
	}
	s.vocabSet = true
	return nil
}

// applyDRY lowers, in l, the logits of the tokens that would extend a
// repeat longer than the allowed length within the last tokens.
func (s *Sampler) applyDRY(l []float32) {
	o := s.o
	h := s.history
	if o.DryPenaltyLastN > 0 && len(h) > o.DryPenaltyLastN {
		h = h[len(h)-o.DryPenaltyLastN:]
	}
	n := len(h)
	if n <= o.DryAllowedLength {
		return
	}
	// A breaker limits how far back a repeat may reach: the nearest one
	// to the end, its tokens complete, caps the length at the number of
	// tokens after it.
	limit := n
	for back := 0; back < n; back++ {
		id := h[n-1-back]
		best := -1
		for _, b := range s.breakers {
			if b.head != id || len(b.tail) <= best || len(b.tail) > back {
				continue
			}
			ok := true
			for j, t := range b.tail {
				if h[n-back+j] != t {
					ok = false
					break
				}
			}
			if ok {
				best = len(b.tail)
			}
		}
		if best >= 0 {
			limit = back - best
			break
		}
	}
	if limit < o.DryAllowedLength {
		return
	}
	// z[k]: how many tokens ending at position n-1-k equal the tokens
	// ending at n-1 (the Z-function of the reversed sequence).
	z := s.dryCount[:0]
	for range n {
		z = append(z, 0)
	}
	s.dryCount = z
	rev := func(i int) int32 { return h[n-1-i] }
	lo, hi := 0, 0
	for k := 1; k < n; k++ {
		v := 0
		if k < hi {
			v = min(hi-k, z[k-lo])
		}
		for k+v < n && rev(v) == rev(k+v) {
			v++
		}
		z[k] = v
		if k+v > hi {
			lo, hi = k, k+v
		}
	}
	if s.dryMax == nil {
		s.dryMax = map[int32]int{}
	}
	clear(s.dryMax)
	for k := 1; k < n; k++ {
		r := min(z[k], limit)
		if r < o.DryAllowedLength {
			continue
		}
		next := h[n-k] // the token that followed the earlier occurrence
		if r > s.dryMax[next] {
			s.dryMax[next] = r
		} else if _, seen := s.dryMax[next]; !seen {
			s.dryMax[next] = r
		}
	}
	maxExp := 0
	if o.DryBase > 1.000001 {
		maxExp = int(88.7228391 / math.Log(float64(o.DryBase)))
	}
	for id, r := range s.dryMax {
		if id < 0 || int(id) >= len(l) || s.singleBreaker(id) {
			continue
		}
		e := r - o.DryAllowedLength
		if maxExp > 0 && e > maxExp {
			e = maxExp
		}
		l[id] -= o.DryMultiplier * float32(math.Pow(float64(o.DryBase), float64(e)))
	}
}

// singleBreaker says whether id is a breaker by itself (contains one).
func (s *Sampler) singleBreaker(id int32) bool {
	for _, b := range s.breakers {
		if b.head == id && len(b.tail) == 0 {
			return true
		}
	}
	return false
}
