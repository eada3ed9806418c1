// Package schematest holds the structured-output test set (the schemas of
// ../testdata/schemas.json, and ../testdata/zod-schemas.json: what zod 4
// emits, written by e2e/zod-schemas.mjs) and checks documents against them with an
// independent JSON Schema validator (santhosh-tekuri/jsonschema, with
// ECMAScript regexes by dlclark/regexp2 and formats asserted), for the
// tests of runtime/grammar, runtime and server.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ecmaRegexp matches patterns as ECMAScript does (lookaheads included,
// which Go's regexp lacks), with regexp2, already a dependency of the
// tokenizer.
type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) String() string { return r.re.String() }

func (r ecmaRegexp) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return ok && err == nil
}

func ecmaCompile(pat string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(pat, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	return ecmaRegexp{re}, nil
}

// Case is one schema of the test set.
type Case struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	// Validate, when set, is the schema the validator checks instead
	// (for keywords the validator does not know, e.g. OpenAPI's nullable).
	Validate json.RawMessage `json:"validate"`

	compiled *jsonschema.Schema
}

// Load reads the test set and compiles every schema for the validator.
func Load() ([]*Case, error) {
	_, file, _, _ := goruntime.Caller(0)
	var cases []*Case
	for _, name := range []string{"schemas.json", "zod-schemas.json"} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", name))
		if err != nil {
			return nil, err
		}
		var more []*Case
		if err := json.Unmarshal(data, &more); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cases = append(cases, more...)
	}
	var err error
	for _, c := range cases {
		src := c.Schema
		if c.Validate != nil {
			src = c.Validate
		}
		if c.compiled, err = Compile(src); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return cases, nil
}

// Compile prepares a schema for Check.
func Compile(schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // formats are checked, not only annotations
	c.UseRegexpEngine(ecmaCompile)
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem://schema.json")
}

// Check parses doc (exactly one JSON value) and validates it.
func Check(s *jsonschema.Schema, doc []byte) error {
	if !json.Valid(doc) {
		return fmt.Errorf("not valid JSON: %q", doc)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not valid JSON: %v: %q", err, doc)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%q does not validate: %v", doc, err)
	}
	return nil
}

// Check validates doc against the case's schema.
func (c *Case) Check(doc []byte) error { return Check(c.compiled, doc) }
