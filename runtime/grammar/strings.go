package grammar

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Formats, as patterns. date, time and date-time follow RFC 3339 as
// llama.cpp's json-schema-to-grammar writes them (time: seconds, an
// optional 3-digit fraction, Z or an offset), with the day also bounded by
// the month and February 29 only in leap years, so every date written is
// a real one. uuid is llama.cpp's (any version: 8-4-4-4-12 hex digits).
// llama.cpp has no email format; ours is a conservative address a
// validator accepts: dot-separated atoms before the @, a hostname after
// it, short enough for RFC 5321.
var formats = map[string]string{
	"date":      "^" + datePat + "$",
	"time":      "^" + timePat + "$",
	"date-time": "^" + datePat + "T" + timePat + "$",
	"uuid":      "^" + uuidPat + "$",
	"email":     `^[A-Za-z0-9_+-]{1,20}(\.[A-Za-z0-9_+-]{1,20}){0,2}@` + hostPat + `$`,
	"hostname":  `^` + hostPat + `$`,
	"ipv4":      `^(` + octetPat + `\.){3}` + octetPat + `$`,
	"uri":       `^https?://` + hostPat + `(/[A-Za-z0-9._~-]{1,20}){0,4}$`,
}

// Beyond llama.cpp: hostname (labels of letters, digits and inner hyphens
// and a letters-only top-level domain, short enough for RFC 1034), ipv4
// (dotted decimal without leading zeros) and uri (an http(s) URL of such a
// host and a few plain path segments).
const (
	hostPat  = `([A-Za-z0-9]([A-Za-z0-9-]{0,20}[A-Za-z0-9])?\.){1,3}[A-Za-z]{2,12}`
	octetPat = `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
)

const (
	datePat = `(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))` +
		`|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)`
	timePat = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{3})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	uuidPat = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`
)

// formatNames lists the supported formats (for errors).
func formatNames() string {
	var names []string
	for k := range formats {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// patternDFA compiles one pattern; errors name the construct.
func patternDFA(pat, path string) (*dfa, error) {
	r, err := parsePattern(pat)
	if err == nil {
		var d *dfa
		if d, err = compileRx(r); err == nil {
			return d, nil
		}
	}
	var ee *emptyError
	if errors.As(err, &ee) {
		return nil, &SchemaError{path, fmt.Sprintf("pattern %q matches no string", pat)}
	}
	return nil, &SchemaError{path, fmt.Sprintf("pattern %q: %v", pat, err)}
}

// stringDFA compiles a string schema's pattern, format, minLength and
// maxLength (and, for propertyNames, enum and const) into one automaton: a
// body must match all of them.
//
// The compiler keeps one automaton per distinct set of these keywords (zod
// repeats its email and date patterns) and bounds the states of all of
// them together.
func (c *compiler) stringDFA(s map[string]any, path string) (*dfa, error) {
	key := make(map[string]any)
	for _, k := range []string{"pattern", "format", "enum", "const", "minLength", "maxLength"} {
		if v, ok := s[k]; ok {
			key[k] = v
		}
	}
	ks := string(literalBytes(key))
	if d, ok := c.dfas[ks]; ok {
		return d, nil
	}
	d, err := buildStringDFA(s, path)
	if err != nil {
		return nil, err
	}
	c.dfaStates += len(d.acc)
	if c.dfaStates > maxSchemaDFAStates {
		return nil, &SchemaError{path, fmt.Sprintf("the schema's patterns and formats are too complex together (over %d automaton states)", maxSchemaDFAStates)}
	}
	c.dfas[ks] = d
	return d, nil
}

// maxSchemaDFAStates bounds the automata of one schema (a few MB).
const maxSchemaDFAStates = 200000

func buildStringDFA(s map[string]any, path string) (*dfa, error) {
	d, err := compileRx(anyStar())
	if err != nil {
		return nil, err
	}
	and := func(e *dfa, what string) error {
		if d, err = combine(d, e, false); err != nil {
			return &SchemaError{path, err.Error()}
		}
		if d == nil {
			return &SchemaError{path, "no string satisfies " + what + " together"}
		}
		return nil
	}
	if v, ok := s["pattern"]; ok {
		pat, ok := v.(string)
		if !ok {
			return nil, &SchemaError{at(path, "pattern"), "must be a string"}
		}
		e, err := patternDFA(pat, at(path, "pattern"))
		if err != nil {
			return nil, err
		}
		d = e
	}
	if v, ok := s["format"]; ok {
		name, _ := v.(string)
		fp, ok := formats[name]
		if name == "uuid1" || name == "uuid2" || name == "uuid3" || name == "uuid4" || name == "uuid5" {
			fp, ok = formats["uuid"], true // llama.cpp's spellings
		}
		_, hasPattern := s["pattern"]
		switch {
		case ok:
			e, err := patternDFA(fp, at(path, "format"))
			if err != nil {
				return nil, err
			}
			if err := and(e, "the pattern and the format"); err != nil {
				return nil, err
			}
		case hasPattern:
			// A format we do not know next to a pattern (zod writes its own:
			// cuid, nanoid, ulid, e164, base64, ...): the pattern defines
			// the string.
		default:
			return nil, &SchemaError{at(path, "format"), fmt.Sprintf("format %s is not supported (supported: %s; any other with a pattern)",
				literalBytes(v), formatNames())}
		}
	}
	var lits []string
	for _, k := range []string{"enum", "const"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		list := []any{v}
		if k == "enum" {
			list, _ = v.([]any)
		}
		for _, x := range list {
			str, ok := x.(string)
			if !ok {
				return nil, &SchemaError{at(path, k), "property names are strings: " + string(literalBytes(x))}
			}
			lits = append(lits, str)
		}
		e, err := literalsDFA(lits)
		if err != nil {
			return nil, &SchemaError{at(path, k), err.Error()}
		}
		if e == nil {
			return nil, &SchemaError{at(path, k), "must be a non-empty list"}
		}
		if err := and(e, k+" and the other keywords"); err != nil {
			return nil, err
		}
	}
	var lo, hi int
	if err := countRange(s, "minLength", "maxLength", path, &lo, &hi); err != nil {
		return nil, err
	}
	// A bound every body already meets costs nothing (a character is 1 to
	// 6 bytes: \u00XX).
	short, long := d.byteSpan()
	if hi >= 0 && long >= 0 && long <= hi {
		hi = -1
	}
	if lo > 0 && short >= 6*lo {
		lo = 0
	}
	if lo > 0 || hi >= 0 {
		if d, err = withLength(d, lo, hi); err != nil {
			return nil, &SchemaError{path, err.Error()}
		}
		if d == nil {
			return nil, &SchemaError{path, "no string of minLength..maxLength characters matches"}
		}
	}
	return d, nil
}

// propertyNames sets the key automaton of object n from the schema pn: the
// declared properties must satisfy it, and extra keys are the strings it
// accepts other than the declared names.
func (c *compiler) propertyNames(n *node, pn any, path string) error {
	var s map[string]any
	var keys []string
	switch v := pn.(type) {
	case bool:
		if v {
			s = map[string]any{}
		} else if len(n.props) > 0 {
			return &SchemaError{path, "false, yet properties are declared"}
		} else {
			n.extra, n.keyNode = nil, nil
			return nil
		}
	case *omap:
		s, keys = v.m, v.keys
	default:
		return &SchemaError{path, "must be a schema"}
	}
	for _, k := range keys {
		switch {
		case annotations[k]:
		case k == "type":
			if t, _ := s[k].(string); t != "string" {
				return &SchemaError{at(path, k), `property names are strings: type must be "string"`}
			}
		case k == "pattern" || k == "format" || k == "minLength" || k == "maxLength" || k == "enum" || k == "const":
		default:
			return &SchemaError{path, fmt.Sprintf("keyword %q in propertyNames is not supported", k)}
		}
	}
	d, err := c.stringDFA(s, path)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range n.props {
		if !d.matches(canonicalBody(p.name)) {
			return &SchemaError{path, fmt.Sprintf("declared property %q does not satisfy propertyNames", p.name)}
		}
		names = append(names, p.name)
	}
	if n.extra == nil {
		return nil
	}
	if len(names) > 0 {
		ex, err := literalsDFA(names)
		if err != nil {
			return &SchemaError{path, err.Error()}
		}
		if d, err = combine(d, ex, true); err != nil {
			return &SchemaError{path, err.Error()}
		}
		if d == nil { // only declared names are allowed: no extra keys
			n.extra = nil
			return nil
		}
	}
	k := c.newNode(kPattern)
	k.dfa = d
	n.keyNode = k
	return nil
}
