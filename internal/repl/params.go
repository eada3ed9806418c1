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

// ParamNames are the settable parameters in the order /show lists them.
var ParamNames = []string{"temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n",
	"frequency_penalty", "presence_penalty", "seed", "num_predict",
	"typical_p", "mirostat", "mirostat_tau", "mirostat_eta", "dry_multiplier", "dry_base", "dry_allowed_length",
	"dry_penalty_last_n", "xtc_probability", "xtc_threshold"}

// Get returns a parameter's value as text.
func (p *Params) Get(name string) (string, bool) {
	f := func(v float32) string { return strconv.FormatFloat(float64(v), 'g', 6, 32) }
	s := &p.Sampler
	switch name {
	case "temperature":
		return f(s.Temperature), true
	case "top_k":
		return strconv.Itoa(s.TopK), true
	case "top_p":
		return f(s.TopP), true
	case "min_p":
		return f(s.MinP), true
	case "repeat_penalty":
		return f(s.RepeatPenalty), true
	case "repeat_last_n":
		return strconv.Itoa(s.RepeatLastN), true
	case "frequency_penalty":
		return f(s.FrequencyPenalty), true
	case "presence_penalty":
		return f(s.PresencePenalty), true
	case "seed":
		return strconv.FormatInt(s.Seed, 10), true
	case "num_predict":
		return strconv.Itoa(p.NumPredict), true
	case "typical_p":
		return f(s.TypicalP), true
	case "mirostat":
		return strconv.Itoa(s.Mirostat), true
	case "mirostat_tau":
		return f(s.MirostatTau), true
	case "mirostat_eta":
		return f(s.MirostatEta), true
	case "dry_multiplier":
		return f(s.DryMultiplier), true
	case "dry_base":
		return f(s.DryBase), true
	case "dry_allowed_length":
		return strconv.Itoa(s.DryAllowedLength), true
	case "dry_penalty_last_n":
		return strconv.Itoa(s.DryPenaltyLastN), true
	case "xtc_probability":
		return f(s.XTCProbability), true
	case "xtc_threshold":
		return f(s.XTCThreshold), true
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
	if _, ok := p.Get(name); !ok {
		return fmt.Errorf("unknown parameter %q; the parameters are %s", name, strings.Join(ParamNames, ", "))
	}
	next := *p
	s := &next.Sampler
	var err error
	switch name {
	case "top_k", "repeat_last_n", "num_predict", "seed", "mirostat", "dry_allowed_length", "dry_penalty_last_n":
		var n int64
		n, err = strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: want an integer, not %q", name, value)
		}
		if name != "seed" && (n > math.MaxInt32 || n < math.MinInt32) {
			return fmt.Errorf("%s %d is out of range", name, n)
		}
		switch name {
		case "top_k":
			s.TopK = int(n)
		case "repeat_last_n":
			s.RepeatLastN = int(n)
		case "seed":
			s.Seed = n
		case "mirostat":
			s.Mirostat = int(n)
		case "dry_allowed_length":
			s.DryAllowedLength = int(n)
		case "dry_penalty_last_n":
			s.DryPenaltyLastN = int(n)
		case "num_predict":
			if n < -1 {
				return fmt.Errorf("num_predict %d is out of range: want -1 (until the end of the turn) or a token count", n)
			}
			next.NumPredict = int(n)
		}
	default:
		var v float64
		v, err = strconv.ParseFloat(value, 32)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: want a number, not %q", name, value)
		}
		f := float32(v)
		switch name {
		case "temperature":
			s.Temperature = f
		case "top_p":
			s.TopP = f
		case "min_p":
			s.MinP = f
		case "repeat_penalty":
			s.RepeatPenalty = f
		case "frequency_penalty":
			s.FrequencyPenalty = f
		case "presence_penalty":
			s.PresencePenalty = f
		case "typical_p":
			s.TypicalP = f
		case "mirostat_tau":
			s.MirostatTau = f
		case "mirostat_eta":
			s.MirostatEta = f
		case "dry_multiplier":
			s.DryMultiplier = f
		case "dry_base":
			s.DryBase = f
		case "xtc_probability":
			s.XTCProbability = f
		case "xtc_threshold":
			s.XTCThreshold = f
		}
	}
	if err := s.Validate(); err != nil {
		return err
	}
	*p = next
	return nil
}
