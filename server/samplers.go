package server

// The sampler settings of a request. Ranges are checked by
// runtime.SamplerOptions.Validate (a 400 naming the field).

import (
	"encoding/json"
	"errors"

	"github.com/woolly-llm/woolly/runtime/gbnf"
)

// sampling are the sampler settings a request names, under the names
// Ollama's options and OpenAI's body share (both embed it; Ole's body spells
// repeat_penalty its own way and fills one in), then the samplers llama.cpp
// users tune beyond top-k/top-p/min-p under llama-server's request names
// (Ollama's options share typical_p and mirostat*): typical-p, mirostat, DRY
// and XTC. nil keeps the default.
type sampling struct {
	Temperature         *float32  `json:"temperature"`
	TopK                *int      `json:"top_k"`
	TopP                *float32  `json:"top_p"`
	MinP                *float32  `json:"min_p"`
	Seed                *int64    `json:"seed"`
	RepeatPenalty       *float32  `json:"repeat_penalty"`
	FrequencyPenalty    *float32  `json:"frequency_penalty"`
	PresencePenalty     *float32  `json:"presence_penalty"`
	TypicalP            *float32  `json:"typical_p"`
	Mirostat            *int      `json:"mirostat"`
	MirostatTau         *float32  `json:"mirostat_tau"`
	MirostatEta         *float32  `json:"mirostat_eta"`
	DryMultiplier       *float32  `json:"dry_multiplier"`
	DryBase             *float32  `json:"dry_base"`
	DryAllowedLength    *int      `json:"dry_allowed_length"`
	DryPenaltyLastN     *int      `json:"dry_penalty_last_n"`
	DrySequenceBreakers *[]string `json:"dry_sequence_breakers"`
	XTCProbability      *float32  `json:"xtc_probability"`
	XTCThreshold        *float32  `json:"xtc_threshold"`
}

// checkRange refuses a value outside [lo, hi]: the range an API documents
// and enforces for field (nil: absent, fine).
func checkRange(field string, v *float32, lo, hi float64) error {
	if v != nil && (float64(*v) < lo || float64(*v) > hi || *v != *v) {
		return badRequest("%s %g is out of range: want a value in [%g, %g]", field, *v, lo, hi)
	}
	return nil
}

// openaiRanges are the ranges OpenAI's API enforces on the sampling fields
// a request names (checked before any work, as OpenAI answers them).
func openaiRanges(temperature, topP, presence, frequency *float32) error {
	for _, c := range []struct {
		field  string
		v      *float32
		lo, hi float64
	}{
		{"temperature", temperature, 0, 2}, {"top_p", topP, 0, 1},
		{"presence_penalty", presence, -2, 2}, {"frequency_penalty", frequency, -2, 2},
	} {
		if err := checkRange(c.field, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	return nil
}

// set stores *v in *dst when the request gave v.
func set[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

func (o sampling) apply(req *GenerateRequest) {
	set(&req.Temperature, o.Temperature)
	set(&req.TopK, o.TopK)
	set(&req.TopP, o.TopP)
	set(&req.MinP, o.MinP)
	set(&req.RepeatPenalty, o.RepeatPenalty)
	set(&req.FrequencyPenalty, o.FrequencyPenalty)
	set(&req.PresencePenalty, o.PresencePenalty)
	set(&req.Seed, o.Seed)
	set(&req.TypicalP, o.TypicalP)
	set(&req.Mirostat, o.Mirostat)
	set(&req.MirostatTau, o.MirostatTau)
	set(&req.MirostatEta, o.MirostatEta)
	set(&req.DryMultiplier, o.DryMultiplier)
	set(&req.DryBase, o.DryBase)
	set(&req.DryAllowedLength, o.DryAllowedLength)
	set(&req.DryPenaltyLastN, o.DryPenaltyLastN)
	if o.DrySequenceBreakers != nil {
		req.DryBreakers = o.DrySequenceBreakers
	}
	set(&req.XTCProbability, o.XTCProbability)
	set(&req.XTCThreshold, o.XTCThreshold)
}

// gbnfField compiles llama-server's grammar field (GBNF); nil or "" is
// none. other says another constraint (a JSON schema, a forced tool call)
// is set already: both is a 400.
func gbnfField(src *string, other bool) (*gbnf.Grammar, error) {
	if src == nil || *src == "" {
		return nil, nil
	}
	if other {
		return nil, badRequest("grammar cannot be combined with another constraint (response_format, json_schema or a forced tool call)")
	}
	g, err := gbnf.Parse(*src)
	if err != nil {
		return nil, badRequest("grammar: %v", err)
	}
	return g, nil
}

// breakersRule refuses what llama-server refuses: an empty list (null is
// absent: the defaults stay).
var breakersRule fieldRule = func(raw json.RawMessage) error {
	var v []string
	if compactJSON(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, &v); err != nil || len(v) == 0 {
		return errors.New("must be a non-empty array of strings")
	}
	return nil
}
