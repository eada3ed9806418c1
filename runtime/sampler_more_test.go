package runtime

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// logitsOf returns logits whose softmax is p.
func logitsOf(p ...float64) []float32 {
	l := make([]float32, len(p))
	for i, q := range p {
		l[i] = float32(math.Log(q))
	}
	return l
}

// keptCase is a sampler setting and the tokens the chain keeps at it, with
// their probabilities.
type keptCase struct {
	v    float32
	ids  []int32
	prob []float64
}

// checkKept runs the chain (not mirostat) of a sampler with options
// opts(c.v) on logits up to the draw, for each case, and checks the ids it
// keeps and their probabilities (after temperature); name names the
// setting in errors.
func checkKept(t *testing.T, name string, logits []float32, opts func(v float32) SamplerOptions, cases []keptCase) {
	t.Helper()
	for _, tc := range cases {
		s := NewSampler(opts(tc.v))
		c := s.filtered(s.adjusted(logits))
		for i := range c {
			c[i].logit /= s.o.Temperature
		}
		ids := make([]int32, len(c))
		for i := range c {
			ids[i] = c[i].id
		}
		if prob := softmaxOf(c); !slices.Equal(ids, tc.ids) || !near(prob, tc.prob) {
			t.Errorf("%s %g: kept %v %v, want %v %v", name, tc.v, ids, prob, tc.ids, tc.prob)
		}
	}
}

func near(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-6 })
}

// Typical-p on p = (1/2, 1/4, 1/8, 1/8): entropy 1.75 ln 2; surprises
// 1, 2, 3, 3 (× ln 2), so the distances are 0.75, 0.25, 1.25, 1.25 (× ln 2):
// token 1 is the most typical, then 0, then 2 and 3.
func TestTypicalP(t *testing.T) {
	l := logitsOf(0.5, 0.25, 0.125, 0.125)
	checkKept(t, "typical_p", l, func(v float32) SamplerOptions { return SamplerOptions{Temperature: 1, TypicalP: v} }, []keptCase{
		{0.2, []int32{1}, []float64{1}},
		{0.5, []int32{0, 1}, []float64{2.0 / 3, 1.0 / 3}}, // 0.25 is not > 0.5; 0.75 is
		{0.8, []int32{0, 1, 2}, []float64{4.0 / 7, 2.0 / 7, 1.0 / 7}},
		{1, []int32{0, 1, 2, 3}, []float64{0.5, 0.25, 0.125, 0.125}}, // off
	})
	// With temperature 0 the best survivor is picked: token 1, not the
	// argmax 0.
	if got := NewSampler(SamplerOptions{TypicalP: 0.2}).Sample(l); got != 1 {
		t.Errorf("greedy with typical_p 0.2 picked %d, want 1", got)
	}
}

// XTC on p = (0.4, 0.3, 0.2, 0.1): threshold 0.25 reaches tokens 0 and 1,
// so 0 goes and 1, 2, 3 remain (0.3, 0.2, 0.1 renormalised).
func TestXTC(t *testing.T) {
	l := logitsOf(0.4, 0.3, 0.2, 0.1)
	checkKept(t, "xtc threshold", l, func(v float32) SamplerOptions {
		return SamplerOptions{Temperature: 1, XTCProbability: 1, XTCThreshold: v}
	}, []keptCase{
		{0.25, []int32{1, 2, 3}, []float64{0.5, 1.0 / 3, 1.0 / 6}},
		{0.15, []int32{2, 3}, []float64{2.0 / 3, 1.0 / 3}},
		{0.35, []int32{0, 1, 2, 3}, []float64{0.4, 0.3, 0.2, 0.1}}, // one above: kept
		{0.6, []int32{0, 1, 2, 3}, []float64{0.4, 0.3, 0.2, 0.1}},  // > 0.5: off
	})
	// Greedy with XTC always on picks the best survivor.
	if got := NewSampler(SamplerOptions{XTCProbability: 1, XTCThreshold: 0.25}).Sample(l); got != 1 {
		t.Errorf("greedy with xtc picked %d, want 1", got)
	}
	// Probability 0.5: seeded runs repeat, and about half the steps cut.
	run := func(seed int64) ([]int32, int) {
		s := NewSampler(SamplerOptions{Temperature: 0, XTCProbability: 0.5, XTCThreshold: 0.25, Seed: seed})
		var ids []int32
		cut := 0
		for range 400 {
			id := s.Sample(l)
			ids = append(ids, id)
			if id != 0 {
				cut++
			}
		}
		return ids, cut
	}
	a, cut := run(9)
	b, _ := run(9)
	c, _ := run(10)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("xtc draws: same seed equal %v, other seed equal %v", slices.Equal(a, b), slices.Equal(a, c))
	}
	if cut < 150 || cut > 250 {
		t.Errorf("xtc probability 0.5 cut %d of 400 steps", cut)
	}
}

// Mirostat 2 with tau 1.05 starts at mu 2.1: only tokens of surprise <= 2.1
// bits (p >= 1/4 here) stay. With eta 0 mu stays put.
func TestMirostatV2(t *testing.T) {
	l := logitsOf(0.5, 0.25, 0.125, 0.125)
	s := NewSampler(SamplerOptions{Temperature: 1, Mirostat: 2, MirostatTau: 1.05, MirostatEta: 0, Seed: 3})
	n := map[int32]int{}
	for range 3000 {
		n[s.Sample(l)]++
	}
	if len(n) != 2 || n[0]+n[1] != 3000 {
		t.Fatalf("mirostat 2 kept %v, want tokens 0 and 1", n)
	}
	if f := float64(n[0]) / 3000; math.Abs(f-2.0/3) > 0.04 {
		t.Errorf("token 0 drawn %.3f of the time, want 2/3", f)
	}
	// mu moves by eta times (observed surprise - tau) of the renormalised
	// distribution: -log2(2/3) for token 0, -log2(1/3) for token 1.
	s = NewSampler(SamplerOptions{Temperature: 1, Mirostat: 2, MirostatTau: 1.05, MirostatEta: 0.5, Seed: 4})
	id := s.Sample(l)
	q := map[int32]float64{0: 2.0 / 3, 1: 1.0 / 3}[id]
	want := 2.1 - 0.5*(-math.Log2(q)-1.05)
	if math.Abs(float64(s.mu)-want) > 1e-5 {
		t.Errorf("mu after drawing %d = %g, want %g", id, s.mu, want)
	}
	// Seeded determinism over a changing mu.
	draws := func(seed int64) []int32 {
		s := NewSampler(SamplerOptions{Temperature: 0.7, Mirostat: 2, MirostatTau: 2, MirostatEta: 0.3, Seed: seed})
		var ids []int32
		big := make([]float32, 50)
		for i := range big {
			big[i] = float32(math.Sin(float64(i)*1.7)) * 3
		}
		for range 100 {
			ids = append(ids, s.Sample(big))
		}
		return ids
	}
	if !slices.Equal(draws(5), draws(5)) || slices.Equal(draws(5), draws(6)) {
		t.Error("mirostat 2 draws are not a function of the seed")
	}
}

// Mirostat 1 on a Zipf distribution p_i ∝ 1/i² over 4 tokens: the
// estimated exponent is exactly 2, so k = (2^mu / (1 - 4^-1))^(1/2).
// tau 1.5 (mu 3): k = 3.27 → tokens 0..2; tau 0.5 (mu 1): k = 1.63 → 1.
func TestMirostatV1(t *testing.T) {
	l := logitsOf(1, 1.0/4, 1.0/9, 1.0/16)
	for _, tc := range []struct {
		tau  float32
		want []int32
	}{{1.5, []int32{0, 1, 2}}, {0.5, []int32{0}}} {
		s := NewSampler(SamplerOptions{Temperature: 1, Mirostat: 1, MirostatTau: tc.tau, MirostatEta: 0, Seed: 1})
		seen := map[int32]bool{}
		for range 2000 {
			seen[s.Sample(l)] = true
		}
		var got []int32
		for id := range seen {
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("mirostat 1 tau %g drew %v, want %v", tc.tau, got, tc.want)
		}
	}
}

// letterVocab: token i is the i-th character of letters; Encode splits
// text into characters.
type letterVocab string

func (v letterVocab) NumTokens() int { return len(v) }
func (v letterVocab) Piece(id int32) []byte {
	return []byte{v[id]}
}
func (v letterVocab) Encode(text string, _, _ bool) ([]int32, error) {
	var ids []int32
	for i := 0; i < len(text); i++ {
		j := strings.IndexByte(string(v), text[i])
		if j < 0 {
			return nil, errors.New("no token")
		}
		ids = append(ids, int32(j))
	}
	return ids, nil
}

func dryAfter(t *testing.T, o SamplerOptions, v DryVocab, text string) []float32 {
	t.Helper()
	s := NewSampler(o)
	if err := s.UseVocab(v); err != nil {
		t.Fatal(err)
	}
	ids, err := v.Encode(text, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		s.Accept(id)
	}
	l := make([]float32, v.NumTokens())
	out := slices.Clone(s.adjusted(l))
	if l[0] != 0 || slices.Max(l) != 0 || slices.Min(l) != 0 {
		t.Fatal("DRY modified the caller's logits")
	}
	return out
}

func TestDRY(t *testing.T) {
	v := letterVocab("abcx:\n")
	o := SamplerOptions{DryMultiplier: 1, DryBase: 2, DryAllowedLength: 2, DryPenaltyLastN: -1, DryBreakers: &[]string{}}
	want := func(pen map[byte]float32) []float32 {
		w := make([]float32, len(v))
		for ch, p := range pen {
			w[strings.IndexByte(string(v), ch)] = -p
		}
		return w
	}
	for _, tc := range []struct {
		text     string
		breakers []string
		pen      map[byte]float32
	}{
		// "ab" repeats (length 2 = allowed): c would extend it: 1·2^0.
		{"abcxab", []string{}, map[byte]float32{'c': 1}},
		// "abcab" ending at the 5th token matches 5 long: c gets 2^3; the
		// shorter match before it (ab → c) does not add up.
		{"abcabcab", []string{}, map[byte]float32{'c': 8}},
		// One repeated token is within the allowed length.
		{"abxb", []string{}, nil},
		// ":ab" repeats 3 long: c gets 2^1, unless ":" is a breaker: then
		// only the 2 tokens after the last ":" count (2^0).
		{":abc:ab", []string{}, map[byte]float32{'c': 2}},
		{":abc:ab", []string{":"}, map[byte]float32{'c': 1}},
		// A breaker too close to the end (fewer than allowed tokens after
		// it) stops DRY.
		{"abc:abc:a", []string{":"}, nil},
		// A breaker token is never penalised itself: "ab" was followed by
		// ":" before.
		{"ab:ab", []string{":"}, nil},
		{"ab:ab", []string{}, map[byte]float32{':': 1}},
		// A two-token breaker "x:" ("x" ends its first byte; ":" is the
		// rest): caps like a single one, but ":" alone does not.
		{"b:abx:ab", []string{"x:"}, map[byte]float32{'x': 1}},
		{"b:abx:ab", []string{}, map[byte]float32{'x': 2}},
	} {
		o.DryBreakers = &tc.breakers
		got := dryAfter(t, o, v, tc.text)
		if w := want(tc.pen); !slices.Equal(got, w) {
			t.Errorf("DRY after %q with breakers %q: %v, want %v", tc.text, tc.breakers, got, w)
		}
	}
	// The last-n window: with 4 tokens only "b:ab" is seen, no repeat.
	o.DryBreakers, o.DryPenaltyLastN = &[]string{}, 4
	if got := dryAfter(t, o, v, "abcxb:ab"); slices.Min(got) != 0 {
		t.Errorf("DRY over the last 4 tokens penalised: %v", got)
	}
	// nil breakers are llama.cpp's defaults, "\n" among them.
	o.DryBreakers, o.DryPenaltyLastN = nil, -1
	if got, w := dryAfter(t, o, v, "\nabc\nab"), want(map[byte]float32{'c': 1}); !slices.Equal(got, w) {
		t.Errorf("DRY with default breakers: %v, want %v", got, w)
	}
}

// DRY without breakers against a direct count on random sequences: for
// every earlier position, the common suffix of the sequence up to it and
// the whole sequence; the token after it gets the longest such repeat.
func TestDRYRandom(t *testing.T) {
	v := letterVocab("abc")
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		n := 1 + r.IntN(30)
		var b strings.Builder
		for range n {
			b.WriteByte("abc"[r.IntN(3)])
		}
		text := b.String()
		allowed := r.IntN(4)
		o := SamplerOptions{DryMultiplier: 0.5, DryBase: 1.5, DryAllowedLength: allowed, DryPenaltyLastN: -1, DryBreakers: &[]string{}}
		got := dryAfter(t, o, v, text)
		want := make([]float32, 3)
		best := map[int]int{}
		if n > allowed {
			for i := 0; i < n-1; i++ {
				L := 0
				for L <= i && text[i-L] == text[n-1-L] {
					L++
				}
				if L >= allowed {
					tok := strings.IndexByte("abc", text[i+1])
					if old, ok := best[tok]; !ok || L > old {
						best[tok] = L
					}
				}
			}
		}
		for tok, L := range best {
			want[tok] = -0.5 * float32(math.Pow(1.5, float64(L-allowed)))
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-5 {
				t.Fatalf("trial %d: DRY after %q (allowed %d): %v, want %v", trial, text, allowed, got, want)
			}
		}
	}
}

// With every added sampler off (at llama.cpp's defaults), the chain draws
// exactly what it drew before they existed, greedy and seeded.
func TestAddedSamplersOffChangeNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	l := make([]float32, 300)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 2)
	}
	plain := SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, RepeatLastN: 64, Seed: 11}
	full := DefaultSamplerOptions()
	full.RepeatPenalty, full.Seed = 1.1, 11
	for _, temp := range []float32{0, 0.8} {
		plain.Temperature, full.Temperature = temp, temp
		a, b := NewSampler(plain), NewSampler(full)
		for i := range 200 {
			x, y := a.Sample(l), b.Sample(l)
			if x != y {
				t.Fatalf("temp %g step %d: %d without the added samplers, %d with them off", temp, i, x, y)
			}
			a.Accept(x)
			b.Accept(y)
			if temp == 0 && i == 0 && x != argmax(l) {
				t.Fatalf("greedy first pick %d, argmax %d", x, argmax(l))
			}
		}
	}
}

func TestSamplerMoreValidate(t *testing.T) {
	nan := float32(math.NaN())
	for field, o := range map[string]SamplerOptions{
		"typical_p":             {TypicalP: 1.5},
		"mirostat":              {Mirostat: 3},
		"mirostat_tau":          {MirostatTau: -1},
		"mirostat_eta":          {MirostatEta: nan},
		"dry_multiplier":        {DryMultiplier: -0.1},
		"dry_base":              {DryMultiplier: 0.8, DryBase: 0.5},
		"dry_allowed_length":    {DryAllowedLength: -1},
		"dry_penalty_last_n":    {DryPenaltyLastN: -2},
		"dry_sequence_breakers": {DryBreakers: &[]string{"\n", ""}},
		"xtc_probability":       {XTCProbability: 2},
		"xtc_threshold":         {XTCThreshold: -0.1},
	} {
		err := o.Validate()
		var re *SamplerRangeError
		if !errors.As(err, &re) || re.Field != field {
			t.Errorf("%s: Validate() = %v", field, err)
		}
	}
	if err := DefaultSamplerOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestSamplerValidate(t *testing.T) {
	if err := DefaultSamplerOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := (SamplerOptions{}).Validate(); err != nil {
		t.Fatalf("zero value (greedy) invalid: %v", err)
	}
	nan := float32(math.NaN())
	for _, c := range []struct {
		o     SamplerOptions
		field string
	}{
		{SamplerOptions{Temperature: -1}, "temperature"},
		{SamplerOptions{Temperature: nan}, "temperature"},
		{SamplerOptions{TopP: 1.5}, "top_p"},
		{SamplerOptions{MinP: -0.1}, "min_p"},
		{SamplerOptions{TopK: -1}, "top_k"},
		{SamplerOptions{RepeatPenalty: -1}, "repeat_penalty"},
		{SamplerOptions{FrequencyPenalty: 2.5}, "frequency_penalty"},
		{SamplerOptions{PresencePenalty: -3}, "presence_penalty"},
		{SamplerOptions{RepeatLastN: -2}, "repeat_last_n"},
	} {
		var re *SamplerRangeError
		err := c.o.Validate()
		if !errors.As(err, &re) || re.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want a range error naming %s", c.o, err, c.field)
		}
	}
}
