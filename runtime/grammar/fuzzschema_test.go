package grammar

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/runtime/grammar/schematest"
)

// FuzzSchema: any bytes as a response_format / format schema compile
// within a second to a grammar or to a *SchemaError; a random document of
// a grammar is accepted byte by byte, and (schemas without oneOf, whose
// branches are taken as anyOf's, or OpenAPI's nullable) validates against
// the schema with an independent validator.
//
//	go test ./runtime/grammar -run '^$' -fuzz '^FuzzSchema$' -fuzztime 60s -parallel 1
func FuzzSchema(f *testing.F) {
	cases, err := schematest.Load()
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add([]byte(c.Schema), uint64(1))
	}
	f.Add([]byte(refChain(8, false)), uint64(2))
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}`), uint64(3))
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		if len(schema) > 4096 {
			return
		}
		start := time.Now()
		g, err := CompileSchema(schema)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%q: compiled in %v", schema, d)
		}
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("%q: %T %v", schema, err, err)
			}
			return
		}
		if largeCounts(g.root) {
			return // documents too long to generate here
		}
		gn := gen{r: rand.New(rand.NewPCG(seed, 7)), limit: 1 << 16}
		gn.value(g.root.child, 0)
		if gn.over {
			return
		}
		doc := gn.buf.Bytes()
		start = time.Now()
		if !accepts(g, string(doc)) {
			t.Fatalf("%q: own document %q rejected", schema, doc)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%q: matching %d bytes took %v", schema, len(doc), d)
		}
		if bytes.Contains(schema, []byte("oneOf")) || bytes.Contains(schema, []byte("nullable")) {
			return // oneOf is taken as anyOf; nullable is OpenAPI's, unknown to the validator
		}
		if s, err := schematest.Compile(schema); err == nil {
			if err := schematest.Check(s, doc); err != nil {
				t.Fatalf("%q: own document %q is not valid: %v", schema, doc, err)
			}
		}
	})
}

// largeCounts reports whether some schema of g asks for more than 64
// characters, items or properties.
func largeCounts(root *node) bool {
	seen := map[*node]bool{}
	var walk func(n *node) bool
	walk = func(n *node) bool {
		if n == nil || seen[n] {
			return false
		}
		seen[n] = true
		if n.minLen > 64 || n.minItems > 64 || n.minProps > 64 {
			return true
		}
		for _, a := range n.alts {
			if walk(a) {
				return true
			}
		}
		for _, p := range n.props {
			if walk(p.node) {
				return true
			}
		}
		return walk(n.extra) || walk(n.keyNode) || walk(n.items) || walk(n.child)
	}
	return walk(root)
}
