// Package grammar constrains generation to JSON documents: any JSON object
// (Ollama's format "json", OpenAI's json_object) or a document valid against
// a JSON Schema (a subset, see CompileSchema). A Grammar compiles once; a
// Matcher follows one document byte by byte; a TokenMatcher masks, at every
// step, the vocabulary tokens that cannot continue a valid document.
package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// kind is what a node matches.
type kind uint8

const (
	kRoot    kind = iota // the document: one value of child, nothing after it
	kAnyOf               // one of alts
	kObject              // an object with props (in order), extra keys of extra
	kArray               // an array of items
	kString              // a string of minLen..maxLen characters
	kNumber              // a number (integer: no fraction, no exponent)
	kLiteral             // exactly lit (true, false, null, an enum or const value)
	kPattern             // a string whose body dfa accepts (pattern, format, propertyNames)
)

// node is one compiled schema. Nodes form a graph ($ref may recurse).
type node struct {
	id   int32
	kind kind
	// kRoot
	child *node
	// kAnyOf
	alts []*node
	// kObject
	props   []prop
	nextReq []int // nextReq[i]: the first required prop at index >= i (len(props) if none)
	extra   *node // value schema of keys not in props; nil: none allowed
	keyNode *node // the kString (or kPattern) node of extra keys
	// minProperties, maxProperties (-1: none); reqAfter[i]: the required
	// props at index >= i
	minProps, maxProps int
	reqAfter           []int
	// kArray
	items              *node
	minItems, maxItems int // maxItems < 0: unbounded
	// kString
	minLen, maxLen int             // maxLen < 0: unbounded
	exclude        map[string]bool // keys: names an extra key must not take
	// kNumber
	integer bool
	bounds  *numBounds // nil: unbounded
	// kPattern
	dfa *dfa
	// kLiteral
	lit []byte
}

type prop struct {
	name     string
	enc      []byte // the name as a JSON string body (escaped, no quotes)
	node     *node
	required bool
}

// Grammar is a compiled JSON grammar; it is immutable and safe for
// concurrent use.
type Grammar struct {
	root  *node
	nodes int
}

// Limits that keep every document finite and parseable (llama.cpp's
// json-schema-to-grammar bounds numbers the same way).
const (
	maxIntDigits  = 16 // digits of a number's integer part
	maxFracDigits = 16 // digits after the decimal point
	maxExpDigits  = 2  // exponent digits (so every number fits a float64)
	maxIndent     = 20 // spaces or tabs after a newline between tokens
)

type compiler struct {
	g      *Grammar
	doc    any              // the whole schema, for $ref
	refs   map[string]*node // compiled $ref targets (cycles resolve through these)
	any    *node            // any JSON value
	str    *node            // any string
	anyObj *node
	// string automata by their keywords, and their states in all
	dfas      map[string]*dfa
	dfaStates int
}

func (c *compiler) newNode(k kind) *node {
	n := &node{id: int32(c.g.nodes), kind: k, maxItems: -1, maxLen: -1, maxProps: -1}
	c.g.nodes++
	return n
}

func newCompiler() *compiler {
	c := &compiler{g: &Grammar{}, refs: map[string]*node{}, dfas: map[string]*dfa{}}
	c.str = c.newNode(kString)
	c.any = c.newNode(kAnyOf)
	c.anyObj = c.newNode(kObject)
	c.anyObj.extra, c.anyObj.keyNode, c.anyObj.nextReq = c.any, c.str, []int{0}
	arr := c.newNode(kArray)
	arr.items = c.any
	num := c.newNode(kNumber)
	c.any.alts = []*node{c.anyObj, arr, c.str, num, c.literal("true"), c.literal("false"), c.literal("null")}
	return c
}

func (c *compiler) literal(s string) *node {
	n := c.newNode(kLiteral)
	n.lit = []byte(s)
	return n
}

func (c *compiler) finish(v *node) *Grammar {
	r := c.newNode(kRoot)
	r.child = v
	c.g.root = r
	return c.g
}

// JSONObject is the grammar of any JSON object (Ollama's format "json",
// OpenAI's response_format json_object).
func JSONObject() *Grammar {
	c := newCompiler()
	return c.finish(c.anyObj)
}

// SchemaError is a schema the compiler cannot honour; Path is where (a JSON
// pointer into the schema).
type SchemaError struct {
	Path string
	Msg  string
}

func (e *SchemaError) Error() string {
	if e.Path == "" {
		return "schema: " + e.Msg
	}
	return "schema at " + e.Path + ": " + e.Msg
}

// Keywords the compiler honours.
var known = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true, "enum": true,
	"const": true, "anyOf": true, "oneOf": true, "nullable": true, "$ref": true, "format": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "propertyNames": true,
	"minProperties": true, "maxProperties": true}

// The keywords of each type.
var (
	objectKeys = []string{"properties", "required", "additionalProperties", "propertyNames", "minProperties", "maxProperties"}
	arrayKeys  = []string{"items", "minItems", "maxItems"}
	stringKeys = []string{"minLength", "maxLength", "pattern", "format"}
	numberKeys = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
)

// Keywords that only annotate: they change nothing a generated document must
// satisfy.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true, "examples": true,
	"default": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
	// JSON Schema 2020-12 makes these annotations only (zod's z.base64 writes one)
	"contentEncoding": true, "contentMediaType": true,
}

// CompileSchema compiles a JSON Schema. Supported: type (a name or a list,
// e.g. ["string","null"]), properties, required, additionalProperties,
// propertyNames, minProperties, maxProperties, items, minItems, maxItems, minLength, maxLength, pattern,
// format (date, time, date-time, uuid, email), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, enum, const, anyOf,
// oneOf (as anyOf: the branches of the schemas that zod and OpenAI emit do
// not overlap), nullable, $ref to "#" or "#/$defs/..." ("#/definitions/..."),
// and the annotations (title, description, default, ...). Objects list
// their properties in the schema's order, required ones first; without
// additionalProperties (or with false) no other keys are generated, with
// true or a schema other keys may follow. Any other keyword is a
// *SchemaError naming it, never silently dropped.
func CompileSchema(schema []byte) (*Grammar, error) {
	doc, err := decodeOrdered(schema)
	if err != nil {
		return nil, &SchemaError{Msg: "not valid JSON: " + err.Error()}
	}
	c := newCompiler()
	c.doc = doc
	n, err := c.compile(doc, "")
	if err != nil {
		return nil, err
	}
	if err := c.checkLoops(n); err != nil {
		return nil, err
	}
	flattenAnyOf(n)
	return c.finish(n), nil
}

func (c *compiler) compile(v any, path string) (*node, error) {
	switch s := v.(type) {
	case bool:
		if s {
			return c.any, nil
		}
		return nil, &SchemaError{path, "false matches nothing"}
	case *omap:
		return c.compileObject(s.m, s.keys, path)
	}
	return nil, &SchemaError{path, "a schema must be an object or a boolean"}
}

func at(path, key string) string {
	key = strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
	return path + "/" + key
}

func (c *compiler) compileObject(s map[string]any, keys []string, path string) (*node, error) {
	for _, k := range keys {
		if !known[k] && !annotations[k] {
			return nil, &SchemaError{path, fmt.Sprintf("keyword %q is not supported", k)}
		}
	}
	if ref, ok := s["$ref"]; ok {
		for _, k := range keys {
			if k != "$ref" && !annotations[k] {
				return nil, &SchemaError{path, fmt.Sprintf("keyword %q next to $ref is not supported", k)}
			}
		}
		r, ok := ref.(string)
		if !ok {
			return nil, &SchemaError{at(path, "$ref"), "must be a string"}
		}
		return c.ref(r, at(path, "$ref"))
	}
	n, err := c.compileType(s, path)
	if err != nil {
		return nil, err
	}
	if nb, ok := s["nullable"]; ok {
		b, isBool := nb.(bool)
		if !isBool {
			return nil, &SchemaError{at(path, "nullable"), "must be true or false"}
		}
		if b {
			n = c.anyOf([]*node{n, c.literal("null")})
		}
	}
	return n, nil
}

// compileType compiles everything but $ref and nullable.
func (c *compiler) compileType(s map[string]any, path string) (*node, error) {
	for _, k := range []string{"enum", "const", "anyOf", "oneOf"} {
		if _, ok := s[k]; !ok {
			continue
		}
		others := append([]string{"type", "enum", "const", "anyOf", "oneOf"}, objectKeys...)
		others = append(append(append(others, arrayKeys...), stringKeys...), numberKeys...)
		for _, other := range others {
			if _, ok := s[other]; ok && other != k && !(other == "type" && (k == "enum" || k == "const")) {
				return nil, &SchemaError{path, fmt.Sprintf("%s together with %s is not supported", k, other)}
			}
		}
	}
	if e, ok := s["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return nil, &SchemaError{at(path, "enum"), "must be a non-empty list"}
		}
		alts := make([]*node, 0, len(list))
		for _, v := range list {
			if err := checkTypeOf(s, v, at(path, "enum")); err != nil {
				return nil, err
			}
			alts = append(alts, c.literalOf(v))
		}
		return c.anyOf(alts), nil
	}
	if v, ok := s["const"]; ok {
		if err := checkTypeOf(s, v, at(path, "const")); err != nil {
			return nil, err
		}
		return c.literalOf(v), nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := s[k]; ok {
			list, ok := a.([]any)
			if !ok || len(list) == 0 {
				return nil, &SchemaError{at(path, k), "must be a non-empty list of schemas"}
			}
			alts := make([]*node, 0, len(list))
			for i, v := range list {
				n, err := c.compile(v, at(path, k)+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				alts = append(alts, n)
			}
			return c.anyOf(alts), nil
		}
	}
	var types []string
	switch t := s["type"].(type) {
	case nil:
		if _, ok := s["type"]; ok {
			return nil, &SchemaError{at(path, "type"), "must be a type name or a list of them"}
		}
		// No type: what the other keywords say, else any value.
		switch {
		case has(s, objectKeys...):
			types = []string{"object"}
		case has(s, arrayKeys...):
			types = []string{"array"}
		case has(s, stringKeys...):
			types = []string{"string"}
		case has(s, numberKeys...):
			types = []string{"number"}
		default:
			return c.any, nil
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return nil, &SchemaError{at(path, "type"), "must be a type name or a list of them"}
			}
			types = append(types, name)
		}
		if len(types) == 0 {
			return nil, &SchemaError{at(path, "type"), "must not be an empty list"}
		}
	default:
		return nil, &SchemaError{at(path, "type"), "must be a type name or a list of them"}
	}
	alts := make([]*node, 0, len(types))
	for _, t := range types {
		n, err := c.compileOne(t, s, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	// Keywords of a type that is not asked for. format is the exception:
	// it constrains strings only, and OpenAPI-made tool schemas put
	// int32/int64/float/double on numbers (llama.cpp ignores it there too).
	if f, ok := s["format"]; ok && !contains(types, "string") {
		if _, isStr := f.(string); !isStr {
			return nil, &SchemaError{at(path, "format"), "must be a string"}
		}
	}
	for _, group := range []struct {
		t    string
		keys []string
	}{{"object", objectKeys}, {"array", arrayKeys}, {"string", []string{"minLength", "maxLength", "pattern"}}, {"number", numberKeys}} {
		if has(s, group.keys...) && !contains(types, group.t) && !(group.t == "number" && contains(types, "integer")) {
			return nil, &SchemaError{path, fmt.Sprintf("%s keywords (%s) without type %s", group.t,
				strings.Join(group.keys, ", "), group.t)}
		}
	}
	return c.anyOf(alts), nil
}

func has(s map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkTypeOf refuses an enum or const value outside the schema's type.
func checkTypeOf(s map[string]any, v any, path string) error {
	t, ok := s["type"]
	if !ok {
		return nil
	}
	var types []any
	switch x := t.(type) {
	case string:
		types = []any{x}
	case []any:
		types = x
	}
	for _, x := range types {
		name, _ := x.(string)
		if jsonType(v) == name || (name == "number" && jsonType(v) == "integer") {
			return nil
		}
	}
	return &SchemaError{path, fmt.Sprintf("value %s is not of type %v", literalBytes(v), t)}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

func isOmap(v any) bool {
	_, ok := v.(*omap)
	return ok
}

func (c *compiler) compileOne(t string, s map[string]any, path string) (*node, error) {
	switch t {
	case "null":
		return c.literal("null"), nil
	case "boolean":
		return c.anyOf([]*node{c.literal("true"), c.literal("false")}), nil
	case "number", "integer":
		n := c.newNode(kNumber)
		n.integer = t == "integer"
		var err error
		if n.bounds, err = readBounds(s, n.integer, path); err != nil {
			return nil, err
		}
		return n, nil
	case "string":
		if has(s, "pattern", "format") {
			d, err := c.stringDFA(s, path)
			if err != nil {
				return nil, err
			}
			n := c.newNode(kPattern)
			n.dfa = d
			return n, nil
		}
		n := c.newNode(kString)
		if err := countRange(s, "minLength", "maxLength", path, &n.minLen, &n.maxLen); err != nil {
			return nil, err
		}
		return n, nil
	case "array":
		n := c.newNode(kArray)
		err := countRange(s, "minItems", "maxItems", path, &n.minItems, &n.maxItems)
		if err != nil {
			return nil, err
		}
		n.items = c.any
		if it, ok := s["items"]; ok {
			if n.items, err = c.compile(it, at(path, "items")); err != nil {
				return nil, err
			}
		}
		return n, nil
	case "object":
		return c.compileProps(s, path)
	}
	return nil, &SchemaError{at(path, "type"), fmt.Sprintf("unknown type %q", t)}
}

// countRange reads a pair of count keywords into *lo and *hi: minKey (0
// when absent) and maxKey (-1 when absent: no bound), and checks that the
// range is not empty.
func countRange(s map[string]any, minKey, maxKey, path string, lo, hi *int) (err error) {
	if *lo, err = count(s, minKey, 0, path); err != nil {
		return err
	}
	if *hi, err = count(s, maxKey, -1, path); err != nil {
		return err
	}
	if *hi >= 0 && *lo > *hi {
		return &SchemaError{path, minKey + " is more than " + maxKey}
	}
	return nil
}

// count reads the non-negative integer keyword key, def when absent.
func count(s map[string]any, key string, def int, path string) (int, error) {
	v, ok := s[key]
	if !ok {
		return def, nil
	}
	num, isNum := v.(json.Number)
	n, err := strconv.ParseInt(num.String(), 10, 32)
	if !isNum || err != nil || n < 0 {
		return 0, &SchemaError{at(path, key), "must be a non-negative integer"}
	}
	return int(n), nil
}

func (c *compiler) compileProps(s map[string]any, path string) (*node, error) {
	n := c.newNode(kObject)
	props, _ := s["properties"].(*omap)
	if props == nil {
		props = &omap{m: map[string]any{}}
	}
	if _, ok := s["properties"]; ok && !isOmap(s["properties"]) {
		return nil, &SchemaError{at(path, "properties"), "must be an object"}
	}
	required := map[string]bool{}
	var reqOrder []string
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, &SchemaError{at(path, "required"), "must be a list of names"}
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return nil, &SchemaError{at(path, "required"), "must be a list of names"}
			}
			if !required[name] {
				reqOrder = append(reqOrder, name)
			}
			required[name] = true
		}
	}
	// Required properties first, then the optional ones, each in the
	// schema's order (as llama.cpp's json-schema-to-grammar); required
	// names without a schema in properties take any value.
	var ordered []string
	for _, k := range props.keys {
		if required[k] {
			ordered = append(ordered, k)
		}
	}
	for _, k := range reqOrder {
		if _, ok := props.m[k]; !ok {
			ordered = append(ordered, k)
		}
	}
	for _, k := range props.keys {
		if !required[k] {
			ordered = append(ordered, k)
		}
	}
	// A required name without a schema in properties is an additional
	// property: its value follows additionalProperties.
	var apNode *node
	for _, k := range ordered {
		p := prop{name: k, enc: encodeName(k), required: required[k], node: c.any}
		if sch, ok := props.m[k]; ok {
			var err error
			if p.node, err = c.compile(sch, at(at(path, "properties"), k)); err != nil {
				return nil, err
			}
		} else {
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return nil, &SchemaError{at(path, "required"), fmt.Sprintf("%q is required but additionalProperties is false", k)}
				}
			case *omap:
				if apNode == nil {
					var err error
					if apNode, err = c.compile(ap, at(path, "additionalProperties")); err != nil {
						return nil, err
					}
				}
				p.node = apNode
			}
		}
		n.props = append(n.props, p)
	}
	n.nextReq = make([]int, len(n.props)+1)
	n.nextReq[len(n.props)] = len(n.props)
	for i := len(n.props) - 1; i >= 0; i-- {
		n.nextReq[i] = n.nextReq[i+1]
		if n.props[i].required {
			n.nextReq[i] = i
		}
	}
	switch ap := s["additionalProperties"].(type) {
	case nil:
		if _, ok := s["additionalProperties"]; ok {
			return nil, &SchemaError{at(path, "additionalProperties"), "must be a boolean or a schema"}
		}
		if len(n.props) == 0 {
			n.extra = c.any // {"type":"object"}: any object
		}
	case bool:
		if ap {
			n.extra = c.any
		}
	default:
		n.extra = apNode
		if n.extra == nil {
			var err error
			if n.extra, err = c.compile(ap, at(path, "additionalProperties")); err != nil {
				return nil, err
			}
		}
	}
	if err := countRange(s, "minProperties", "maxProperties", path, &n.minProps, &n.maxProps); err != nil {
		return nil, err
	}
	n.reqAfter = make([]int, len(n.props)+1)
	for i := len(n.props) - 1; i >= 0; i-- {
		n.reqAfter[i] = n.reqAfter[i+1]
		if n.props[i].required {
			n.reqAfter[i]++
		}
	}
	if pn, ok := s["propertyNames"]; ok {
		if err := c.propertyNames(n, pn, at(path, "propertyNames")); err != nil {
			return nil, err
		}
	} else if n.extra != nil {
		n.keyNode = c.str
		if len(n.props) > 0 {
			k := c.newNode(kString)
			k.exclude = map[string]bool{}
			for _, p := range n.props {
				k.exclude[p.name] = true
			}
			n.keyNode = k
		}
	}
	if n.maxProps >= 0 && n.reqAfter[0] > n.maxProps {
		return nil, &SchemaError{path, fmt.Sprintf("%d properties are required, more than maxProperties", n.reqAfter[0])}
	}
	if n.extra == nil && len(n.props) < n.minProps {
		return nil, &SchemaError{path, fmt.Sprintf("minProperties is %d but only %d properties are allowed", n.minProps, len(n.props))}
	}
	return n, nil
}

// encodeName is a key as JSON writes it, without the quotes.
func encodeName(s string) []byte {
	b := literalBytes(s)
	return b[1 : len(b)-1]
}

// literalBytes is v as compact JSON (no HTML escaping).
func literalBytes(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return []byte("null") // cannot happen for decoded JSON
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func (c *compiler) literalOf(v any) *node {
	n := c.newNode(kLiteral)
	n.lit = literalBytes(v)
	return n
}

func (c *compiler) anyOf(alts []*node) *node {
	if len(alts) == 1 {
		return alts[0]
	}
	n := c.newNode(kAnyOf)
	n.alts = alts
	return n
}

// ref resolves "#", "#/$defs/name", "#/definitions/name" (or any JSON
// pointer into the document).
func (c *compiler) ref(r, path string) (*node, error) {
	if n, ok := c.refs[r]; ok {
		return n, nil
	}
	if !strings.HasPrefix(r, "#") {
		return nil, &SchemaError{path, fmt.Sprintf("$ref %q: only references inside the schema (#...) are supported", r)}
	}
	var target any = c.doc
	ptr := strings.TrimPrefix(r, "#")
	if ptr != "" {
		if !strings.HasPrefix(ptr, "/") {
			return nil, &SchemaError{path, fmt.Sprintf("$ref %q: anchors are not supported, only JSON pointers", r)}
		}
		for _, part := range strings.Split(ptr[1:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			switch t := target.(type) {
			case *omap:
				v, ok := t.m[part]
				if !ok {
					return nil, &SchemaError{path, fmt.Sprintf("$ref %q: no %q", r, part)}
				}
				target = v
			case []any:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(t) {
					return nil, &SchemaError{path, fmt.Sprintf("$ref %q: no %q", r, part)}
				}
				target = t[i]
			default:
				return nil, &SchemaError{path, fmt.Sprintf("$ref %q: no %q", r, part)}
			}
		}
	}
	// The reference compiles to an anyOf node of one branch, registered
	// before its target is compiled and given that branch after, so that
	// recursive schemas point back at it (this is what breaks cycles).
	ph := c.newNode(kAnyOf)
	c.refs[r] = ph
	n, err := c.compile(target, r)
	if err != nil {
		return nil, err
	}
	ph.alts = []*node{n}
	return ph, nil
}

// checkLoops refuses schemas where a value would contain itself before any
// byte is written (e.g. a $ref whose target is an anyOf with that $ref).
func (c *compiler) checkLoops(root *node) error {
	state := map[*node]int{} // 1: on the path, 2: done
	var visit func(n *node) error
	visit = func(n *node) error {
		switch state[n] {
		case 1:
			return &SchemaError{Msg: "a $ref refers to itself without any object or array in between"}
		case 2:
			return nil
		}
		state[n] = 1
		if n.kind == kAnyOf {
			for _, a := range n.alts {
				if err := visit(a); err != nil {
					return err
				}
			}
		}
		state[n] = 2
		return nil
	}
	seen := map[*node]bool{}
	var all func(n *node) error
	all = func(n *node) error {
		if n == nil || seen[n] {
			return nil
		}
		seen[n] = true
		if err := visit(n); err != nil {
			return err
		}
		for _, a := range n.alts {
			if err := all(a); err != nil {
				return err
			}
		}
		for _, p := range n.props {
			if err := all(p.node); err != nil {
				return err
			}
		}
		if err := all(n.extra); err != nil {
			return err
		}
		return all(n.items)
	}
	return all(root)
}

// flattenAnyOf gives every anyOf node reachable from root, as its
// alternatives, the distinct non-anyOf nodes it leads to through anyOfs
// alone (first occurrence first). The matcher then starts a value in as
// many stacks as there are distinct schemas, not one per path: $defs that
// each name the next one twice are 2^depth paths to one string. Call it
// after checkLoops (anyOfs form no cycle).
func flattenAnyOf(root *node) {
	flat := map[*node][]*node{} // anyOf node -> its leaves, once computed
	var leaves func(n *node) []*node
	leaves = func(n *node) []*node {
		if l, ok := flat[n]; ok {
			return l
		}
		var out []*node
		seen := map[*node]bool{}
		for _, a := range n.alts {
			sub := []*node{a}
			if a.kind == kAnyOf {
				sub = leaves(a)
			}
			for _, x := range sub {
				if !seen[x] {
					seen[x] = true
					out = append(out, x)
				}
			}
		}
		flat[n] = out
		return out
	}
	seen := map[*node]bool{}
	var all []*node
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		all = append(all, n)
		for _, a := range n.alts {
			walk(a)
		}
		for _, p := range n.props {
			walk(p.node)
		}
		walk(n.extra)
		walk(n.keyNode)
		walk(n.items)
		walk(n.child)
	}
	walk(root)
	for _, n := range all { // every list first, from the original alternatives
		if n.kind == kAnyOf {
			leaves(n)
		}
	}
	for n, l := range flat {
		n.alts = l
	}
}
