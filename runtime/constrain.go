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

// lazy is a value built on first use (the model's vocabularies for
// constrained sampling).
type lazy[T any] struct {
	once sync.Once
	v    T
}

func (l *lazy[T]) get(build func() T) T {
	l.once.Do(func() { l.v = build() })
	return l.v
}

// gbnfVocab is the model's vocabulary prepared for GBNF grammars.
func (m *Model) gbnfVocab() *gbnf.Vocab {
	return m.gbnf.get(func() *gbnf.Vocab {
		t := m.tok
		return gbnf.NewVocab(t.NumTokens(), t.Piece, func(id int32) bool { return !t.IsControl(id) }, t.EOGs())
	})
}

// GrammarVocab returns the model's vocabulary for grammar.NewTokenMatcher:
// every token's piece (the bytes generation writes), control tokens
// excluded (they print nothing), the end-of-generation tokens.
func (m *Model) GrammarVocab() *grammar.Vocab {
	return m.grammar.get(func() *grammar.Vocab {
		t := m.tok
		return grammar.NewVocab(t.NumTokens(), t.Piece, func(id int32) bool { return !t.IsControl(id) }, t.EOGs())
	})
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
