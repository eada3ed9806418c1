package server

// The samplers llama.cpp users tune beyond top-k/top-p/min-p, under
// llama-server's request names (Ollama's options share typical_p and
// mirostat*): typical-p, mirostat, DRY and XTC. Ranges are checked by
// runtime.SamplerOptions.Validate (a 400 naming the field).

import (
	"encoding/json"
	"errors"

	"github.com/woolly-llm/woolly/runtime/gbnf"
)

type moreSampling struct {
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

func (o moreSampling) apply(req *GenerateRequest) {
	setF(&req.TypicalP, o.TypicalP)
	setInt(&req.Mirostat, o.Mirostat)
	setF(&req.MirostatTau, o.MirostatTau)
	setF(&req.MirostatEta, o.MirostatEta)
	setF(&req.DryMultiplier, o.DryMultiplier)
	setF(&req.DryBase, o.DryBase)
	setInt(&req.DryAllowedLength, o.DryAllowedLength)
	setInt(&req.DryPenaltyLastN, o.DryPenaltyLastN)
	if o.DrySequenceBreakers != nil {
		req.DryBreakers = o.DrySequenceBreakers
	}
	setF(&req.XTCProbability, o.XTCProbability)
	setF(&req.XTCThreshold, o.XTCThreshold)
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
