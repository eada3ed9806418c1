package runtime

import (
	"sync"

	"github.com/woolly-llm/woolly/runtime/gbnf"
	"github.com/woolly-llm/woolly/runtime/grammar"
)

// constraint is a grammar matcher driving one generation: JSON's
// (grammar.TokenMatcher) or GBNF's (gbnf.Matcher).
type constraint interface {
	Mask(logits []float32) error
	Accept(id int32) error
	Finished() bool
}

// gbnfVocabOnce is the model's vocabulary prepared for GBNF grammars,
// built on first use.
type gbnfVocabOnce struct {
	once sync.Once
	v    *gbnf.Vocab
}

func (m *Model) gbnfVocab() *gbnf.Vocab {
	m.gbnf.once.Do(func() {
		t := m.tok
		m.gbnf.v = gbnf.NewVocab(t.NumTokens(), t.Piece, func(id int32) bool { return !t.IsControl(id) }, t.EOGs())
	})
	return m.gbnf.v
}

// grammarVocab is the model's vocabulary prepared for constrained sampling,
// built on first use.
type grammarVocab struct {
	once sync.Once
	v    *grammar.Vocab
}

// GrammarVocab returns the model's vocabulary for grammar.NewTokenMatcher:
// every token's piece (the bytes generation writes), control tokens
// excluded (they print nothing), the end-of-generation tokens.
func (m *Model) GrammarVocab() *grammar.Vocab {
	m.grammar.once.Do(func() {
		t := m.tok
		m.grammar.v = grammar.NewVocab(t.NumTokens(), t.Piece,
			func(id int32) bool { return !t.IsControl(id) }, t.EOGs())
	})
	return m.grammar.v
}

// maskLogits returns logits with every token the grammar forbids at -Inf
// (a copy in *buf; logits itself is left as the model wrote it, for
// logprobs), or logits unchanged without a grammar.
func maskLogits(gm constraint, logits []float32, buf *[]float32) ([]float32, error) {
	if gm == nil {
		return logits, nil
	}
	*buf = append((*buf)[:0], logits...)
	if err := gm.Mask(*buf); err != nil {
		return nil, err
	}
	return *buf, nil
}
