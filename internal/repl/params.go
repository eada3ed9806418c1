package repl

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/woolly-llm/woolly/runtime"
)

// Params are the generation settings of a chat that /set parameter
// changes: the sampler and the answer length. Names are Ollama's
// (temperature, top_k, num_predict, ...).
type Params struct {
	Sampler    runtime.SamplerOptions
	NumPredict int // -1: until the end of the turn or the context is full
}

// params are the settable parameters in the order /show lists them, each
// with where its value lives in Params (a *float32, *int or *int64).
var params = []struct {
	name  string
	value func(p *Params) any
}{
	{"temperature", func(p *Params) any { return &p.Sampler.Temperature }},
	{"top_k", func(p *Params) any { return &p.Sampler.TopK }},
	{"top_p", func(p *Params) any { return &p.Sampler.TopP }},
	{"min_p", func(p *Params) any { return &p.Sampler.MinP }},
	{"repeat_penalty", func(p *Params) any { return &p.Sampler.RepeatPenalty }},
	{"repeat_last_n", func(p *Params) any { return &p.Sampler.RepeatLastN }},
	{"frequency_penalty", func(p *Params) any { return &p.Sampler.FrequencyPenalty }},
	{"presence_penalty", func(p *Params) any { return &p.Sampler.PresencePenalty }},
	{"seed", func(p *Params) any { return &p.Sampler.Seed }},
	{"num_predict", func(p *Params) any { return &p.NumPredict }},
	{"typical_p", func(p *Params) any { return &p.Sampler.TypicalP }},
	{"mirostat", func(p *Params) any { return &p.Sampler.Mirostat }},
	{"mirostat_tau", func(p *Params) any { return &p.Sampler.MirostatTau }},
	{"mirostat_eta", func(p *Params) any { return &p.Sampler.MirostatEta }},
	{"dry_multiplier", func(p *Params) any { return &p.Sampler.DryMultiplier }},
	{"dry_base", func(p *Params) any { return &p.Sampler.DryBase }},
	{"dry_allowed_length", func(p *Params) any { return &p.Sampler.DryAllowedLength }},
	{"dry_penalty_last_n", func(p *Params) any { return &p.Sampler.DryPenaltyLastN }},
	{"xtc_probability", func(p *Params) any { return &p.Sampler.XTCProbability }},
	{"xtc_threshold", func(p *Params) any { return &p.Sampler.XTCThreshold }},
}

// ParamNames are the settable parameters in the order /show lists them.
var ParamNames = func() []string {
	names := make([]string, len(params))
	for i, q := range params {
		names[i] = q.name
	}
	return names
}()

// value is where parameter name lives in p; nil for an unknown name.
func (p *Params) value(name string) any {
	for _, q := range params {
		if q.name == name {
			return q.value(p)
		}
	}
	return nil
}

// Get returns a parameter's value as text.
func (p *Params) Get(name string) (string, bool) {
	switch v := p.value(name).(type) {
	case *float32:
		return strconv.FormatFloat(float64(*v), 'g', 6, 32), true
	case *int:
		return strconv.Itoa(*v), true
	case *int64:
		return strconv.FormatInt(*v, 10), true
	}
	return "", false
}

// aliases are other spellings people bring (llama.cpp's flags, OpenAI's
// max_tokens).
var aliases = map[string]string{
	"temp": "temperature", "top-k": "top_k", "top-p": "top_p", "min-p": "min_p",
	"repeat-penalty": "repeat_penalty", "repeat-last-n": "repeat_last_n", "frequency-penalty": "frequency_penalty",
	"presence-penalty": "presence_penalty", "n": "num_predict", "n-predict": "num_predict", "max_tokens": "num_predict",
	"typical": "typical_p", "mirostat-ent": "mirostat_tau", "mirostat-lr": "mirostat_eta",
	"dry-multiplier": "dry_multiplier", "dry-base": "dry_base", "dry-allowed-length": "dry_allowed_length",
	"dry-penalty-last-n": "dry_penalty_last_n", "xtc-probability": "xtc_probability", "xtc-threshold": "xtc_threshold",
}

// Set changes one parameter. An unknown name, a value that does not parse
// or is out of range is an error naming it; p is then unchanged.
func (p *Params) Set(name, value string) error {
	name = strings.ToLower(name)
	if a, ok := aliases[name]; ok {
		name = a
	}
	if name == "num_ctx" {
		return fmt.Errorf("num_ctx cannot change during a chat: start it again with -c %s", value)
	}
	next := *p
	switch v := next.value(name).(type) {
	case *int, *int64:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: want an integer, not %q", name, value)
		}
		if v, ok := v.(*int64); ok {
			*v = n
			break
		}
		if n > math.MaxInt32 || n < math.MinInt32 {
			return fmt.Errorf("%s %d is out of range", name, n)
		}
		if name == "num_predict" && n < -1 {
			return fmt.Errorf("num_predict %d is out of range: want -1 (until the end of the turn) or a token count", n)
		}
		*v.(*int) = int(n)
	case *float32:
		f, err := strconv.ParseFloat(value, 32)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: want a number, not %q", name, value)
		}
		*v = float32(f)
	default:
		return fmt.Errorf("unknown parameter %q; the parameters are %s", name, strings.Join(ParamNames, ", "))
	}
	s := &next.Sampler
	if err := s.Validate(); err != nil {
		return err
	}
	*p = next
	return nil
}
