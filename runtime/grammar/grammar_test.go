package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/runtime/grammar/schematest"
)

func mustCompile(t testing.TB, schema string) *Grammar {
	t.Helper()
	g, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return g
}

// accepts reports whether doc is a complete document of g.
func accepts(g *Grammar, doc string) bool {
	m := g.NewMatcher()
	return m.Advance([]byte(doc)) && m.Done()
}

func TestAcceptReject(t *testing.T) {
	person := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},"required":["name","age"]}`
	cases := []struct {
		schema string
		good   []string
		bad    []string
	}{
		{person,
			[]string{`{"name":"x\u00e9\"\\\/\b\f\n\r\t","age":-12,"tags":["a","b"]}`, "{\n  \"name\": \"é☃😀\", \"age\": 0}", `{"name":"","age":1}`, `{"name":"a","age":1,"tags":[]}`},
			[]string{`{"age":1}`, `{"name":"x","age":1.5}`, `{"name":"x","age":1,"tags":["c"]}`, `{"name":"\ud800","age":1}`,
				`{"name":"x","age":1,"tags":["a","b","a"]}`, `{"name":"x","age":01}`, `{"name":"x","age":1,"other":1}`,
				`{"age":1,"name":"x"}`, `{"name":"x","age":1} `, ` {"name":"x","age":1}`, "{\"name\":\"\x01\",\"age\":1}",
				"{\"name\":\"\xc0\xaf\",\"age\":1}", "{\"name\":\"\xed\xa0\x80\",\"age\":1}", `{"name":"x","age":1,}`,
				`{"name":"\x","age":1}`, `{"name":"x","age":1`, "{" + strings.Repeat(" ", 2) + `"name":"x","age":1}`}},
		{`{"type":"number"}`, []string{"0", "-0", "1.5", "-12.25e+10", "3E-2", "1e99", "12345678901234567"[:16]},
			[]string{"01", "1.", ".5", "+1", "1e", "1e100", "12345678901234567", "-", "1.e5", "NaN"}},
		{`{"type":"integer"}`, []string{"0", "-7", "42"}, []string{"1.0", "1e2", "-"}},
		{`{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3}`, []string{"[1,2]", "[1, 2,3]", "[\n 1,\n 2\n]"},
			[]string{"[]", "[1]", "[1,2,3,4]", "[1,2,]"}},
		{`{"enum":["red",3,null,{"k":[1]}]}`, []string{`"red"`, "3", "null", `{"k":[1]}`}, []string{`"re"`, "4", "30", `{"k": [1]}`}},
		{`{"type":["string","null"],"maxLength":2}`, []string{`"ab"`, `"é\n"`, `"\u00e9x"`, "null", `""`}, []string{`"abc"`, `"\u00e9xy"`}},
		{`{"type":"string","minLength":2}`, []string{`"ab"`, `"😀😀"`}, []string{`"a"`, `"😀"`, `""`}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}}`,
			[]string{`{}`, `{"a":1}`, `{"a":1,"b":true}`, `{"b":false,"c":true}`, `{"x":true,"a":2}`},
			[]string{`{"a":true}`, `{"b":1}`, `{"a":1,"a":2}`, `{"b":true,"\u0061":true}`}},
		{`{"$defs":{"n":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["c"],"additionalProperties":false}},"$ref":"#/$defs/n"}`,
			[]string{`{"c":[]}`, `{"c":[{"c":[]},{"c":[{"c":[]}]}]}`}, []string{`{"c":[{}]}`, `{}`}},
		{`{"type":"object","properties":{"q\"k":{"const":1}},"required":["q\"k"]}`, []string{`{"q\"k":1}`}, []string{`{"q\u0022k":1}`, `{"qk":1}`}},
	}
	for _, c := range cases {
		g := mustCompile(t, c.schema)
		for _, s := range c.good {
			if !accepts(g, s) {
				t.Errorf("%s: %q rejected", c.schema, s)
			}
		}
		for _, s := range c.bad {
			if accepts(g, s) {
				t.Errorf("%s: %q accepted", c.schema, s)
			}
		}
	}
	js := JSONObject()
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}],"c":"d"}`, "{\n\t\"x\": true\n}"} {
		if !accepts(js, s) {
			t.Errorf("json: %q rejected", s)
		}
	}
	for _, s := range []string{`[]`, `"x"`, `1`, `{"a"}`, `{"a":1`} {
		if accepts(js, s) {
			t.Errorf("json: %q accepted", s)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]string{
		`{"type":"string","pattern":"^a"}`:                                    `keyword "pattern" is not supported`,
		`{"type":"string","format":"email"}`:                                  `format email is not supported`,
		`{"type":"number","minimum":1}`:                                       `keyword "minimum" is not supported`,
		`{"allOf":[{"type":"string"}]}`:                                       `keyword "allOf" is not supported`,
		`{"type":"object","properties":{"a":{"type":"strin"}}}`:               `schema at /properties/a/type: unknown type "strin"`,
		`{"$ref":"#/$defs/missing"}`:                                          `no "$defs"`,
		`{"$ref":"http://example.com/s.json"}`:                                `only references inside the schema`,
		`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`: `refers to itself`,
		`{"type":"array","minItems":3,"maxItems":2}`:                          `minItems is more than maxItems`,
		`{"enum":[]}`:                      `must be a non-empty list`,
		`{"type":"string","enum":[1]}`:     `is not of type`,
		`false`:                            `false matches nothing`,
		`{"type":"string"`:                 `not valid JSON`,
		`{"minLength":-1}`:                 `must be a non-negative integer`,
		`{"type":"integer","maxLength":3}`: `string keywords (minLength, maxLength) without type string`,
	}
	for schema, want := range cases {
		_, err := CompileSchema([]byte(schema))
		var se *SchemaError
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", schema, err, want)
		}
	}
}

// gen writes a random document of nd (every choice the grammar allows,
// with random whitespace).
type gen struct {
	r   *rand.Rand
	buf bytes.Buffer
}

func (g *gen) ws() {
	switch g.r.IntN(6) {
	case 0:
		g.buf.WriteByte(' ')
	case 1:
		g.buf.WriteString("\n" + strings.Repeat(" ", g.r.IntN(maxIndent+1)))
	}
}

var sampleChars = []string{"a", "Z", "0", " ", "é", "☃", "😀", "\\n", "\\\"", "\\\\", "\\/", "\\t", "\\u00e9", "\\uFFFD", "\\u0041", "~", "日"}

func (g *gen) value(nd *node, depth int) {
	switch nd.kind {
	case kAnyOf:
		alts := nd.alts
		if depth > 4 { // prefer leaves deep down
			var leaves []*node
			for _, a := range alts {
				if a.kind != kObject && a.kind != kArray && a.kind != kAnyOf {
					leaves = append(leaves, a)
				}
			}
			if len(leaves) > 0 {
				alts = leaves
			}
		}
		g.value(alts[g.r.IntN(len(alts))], depth+1)
	case kLiteral:
		g.buf.Write(nd.lit)
	case kNumber:
		if g.r.IntN(3) == 0 {
			g.buf.WriteByte('-')
		}
		if g.r.IntN(4) == 0 {
			g.buf.WriteByte('0')
		} else {
			g.buf.WriteByte(byte('1' + g.r.IntN(9)))
			for i := g.r.IntN(maxIntDigits); i > 0; i-- {
				g.buf.WriteByte(byte('0' + g.r.IntN(10)))
			}
		}
		if !nd.integer && g.r.IntN(2) == 0 {
			g.buf.WriteString("." + fmt.Sprint(g.r.IntN(1000)))
		}
		if !nd.integer && g.r.IntN(3) == 0 {
			g.buf.WriteString([]string{"e", "E", "e+", "e-"}[g.r.IntN(4)] + fmt.Sprint(g.r.IntN(100)))
		}
	case kString:
		n := nd.minLen + g.r.IntN(8)
		if nd.maxLen >= 0 {
			n = nd.minLen + g.r.IntN(nd.maxLen-nd.minLen+1)
		}
		for {
			var s strings.Builder
			for range n {
				s.WriteString(sampleChars[g.r.IntN(len(sampleChars))])
			}
			if nd.exclude != nil && excluded(nd, s.String()) {
				continue
			}
			g.buf.WriteString(`"` + s.String() + `"`)
			break
		}
	case kArray:
		g.buf.WriteByte('[')
		g.ws()
		hi := nd.minItems + 3
		if nd.maxItems >= 0 {
			hi = min(hi, nd.maxItems)
		}
		if depth > 3 {
			hi = nd.minItems
		}
		n := nd.minItems + g.r.IntN(hi-nd.minItems+1)
		for i := range n {
			if i > 0 {
				g.buf.WriteByte(',')
				g.ws()
			}
			g.value(nd.items, depth+1)
			g.ws()
		}
		g.buf.WriteByte(']')
	case kObject:
		g.buf.WriteByte('{')
		g.ws()
		first := true
		member := func(key []byte, v *node) {
			if !first {
				g.buf.WriteByte(',')
				g.ws()
			}
			first = false
			g.buf.WriteString(`"` + string(key) + `"`)
			g.ws()
			g.buf.WriteByte(':')
			g.ws()
			g.value(v, depth+1)
			g.ws()
		}
		for _, p := range nd.props {
			if p.required || (depth < 4 && g.r.IntN(2) == 0) {
				member(p.enc, p.node)
			}
		}
		if nd.extra != nil && depth < 4 {
			seen := map[string]bool{}
			for range g.r.IntN(3) {
				k := []byte(sampleChars[g.r.IntN(len(sampleChars))] + fmt.Sprint(g.r.IntN(100)))
				var dk string
				json.Unmarshal([]byte(`"`+string(k)+`"`), &dk)
				if nd.keyNode.exclude[dk] || seen[dk] {
					continue
				}
				seen[dk] = true
				member(k, nd.extra)
			}
		}
		g.buf.WriteByte('}')
	}
}

func loadCases(t testing.TB) []*schematest.Case {
	cases, err := schematest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// Random documents of each schema validate and are accepted byte by byte.
func TestRandomDocuments(t *testing.T) {
	for _, c := range loadCases(t) {
		g := mustCompile(t, string(c.Schema))
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 200 {
			gn := gen{r: r}
			gn.value(g.root.child, 0)
			doc := gn.buf.Bytes()
			if err := c.Check(doc); err != nil {
				t.Fatalf("%s: generated document: %v", c.Name, err)
			}
			m := g.NewMatcher()
			for j := range doc {
				if !m.Advance(doc[j : j+1]) {
					t.Fatalf("%s #%d: %q rejected at byte %d", c.Name, i, doc, j)
				}
			}
			if !m.Done() {
				t.Fatalf("%s #%d: %q not complete", c.Name, i, doc)
			}
		}
	}
}

// testVocab: every single byte, pieces that cross JSON's structure, UTF-8
// split across tokens, and an end-of-generation token.
func testVocab() (*Vocab, [][]byte, int32) {
	var pieces [][]byte
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, s := range []string{`"`, `",`, `":`, `"}`, `{"`, `true`, `false`, `null`, `, "`, `": "`, `123`, `-4`, `.5`, `e+`,
		`\n`, `\u00e9`, `\ud83d`, "é", "☃", "😀", "\xe2\x98", "\x83", `name`, `age`, ` `, "\n  ", "\n\t", `}}`, `]}`, `[{`, `"a`,
		`aé"`, `x"}`, `"]`, `],`, `"celsius"`, `cel`, `"drama", "`, `0.`, `1e5`, `\"`, `\\`, `\u`, `00`, `e9`, `"1.0"`,
		`"quote\"d"`, `caf`, `é ☃`, `back\\slash":`, `quote\"key":`, `"zip": "`, `12345"`} {
		pieces = append(pieces, []byte(s))
	}
	eog := int32(len(pieces))
	pieces = append(pieces, []byte("</s>"))
	v := NewVocab(len(pieces), func(id int32) []byte { return pieces[id] }, func(id int32) bool { return id != eog }, []int32{eog})
	return v, pieces, eog
}

// The fast masks (trie walk, string classes, cache) equal the brute force
// answer (each token's bytes through the matcher) at every step of random
// constrained generations, and finished generations validate.
func TestMaskMatchesBruteForce(t *testing.T) {
	v, pieces, eog := testVocab()
	cases := loadCases(t)
	r := rand.New(rand.NewPCG(3, 4))
	finished := 0
	run := func(name string, g *Grammar, check func([]byte) error) {
		for seed := range 6 {
			tm := NewTokenMatcher(g, v)
			var doc []byte
			for step := 0; step < 400 && !tm.Finished(); step++ {
				mask := tm.Allowed()
				var allowed []int32
				for id := range pieces {
					want := false
					if int32(id) == eog {
						want = tm.Done()
					} else if !tm.m.Finished() {
						want = tm.m.Accepts(pieces[id])
					}
					got := mask[id/64]&(1<<(id%64)) != 0
					if got != want {
						t.Fatalf("%s seed %d after %q: token %q allowed %v, brute force %v", name, seed, doc, pieces[id], got, want)
					}
					if got {
						allowed = append(allowed, int32(id))
					}
				}
				if len(allowed) == 0 {
					t.Fatalf("%s: no token allowed after %q", name, doc)
				}
				// Lean towards tokens that close things, so documents end.
				id := allowed[r.IntN(len(allowed))]
				if r.IntN(2) == 0 {
					var closing []int32
					for _, a := range allowed {
						if a == eog || bytes.ContainsAny(pieces[a], `"}],`) || (len(pieces[a]) > 0 && pieces[a][0] >= '0' && pieces[a][0] <= '9') {
							closing = append(closing, a)
						}
					}
					if len(closing) > 0 {
						id = closing[r.IntN(len(closing))]
					}
				}
				if err := tm.Accept(id); err != nil {
					t.Fatal(err)
				}
				if id != eog {
					doc = append(doc, pieces[id]...)
				}
			}
			if tm.Done() {
				finished++
				if err := check(doc); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	}
	for _, c := range cases {
		run(c.Name, mustCompile(t, string(c.Schema)), c.Check)
	}
	run("json", JSONObject(), func(doc []byte) error {
		var m map[string]any
		return json.Unmarshal(doc, &m)
	})
	if finished < len(cases)*3 {
		t.Errorf("only %d of %d generations finished", finished, (len(cases)+1)*6)
	}
	t.Logf("%d of %d generations finished", finished, (len(cases)+1)*6)
}
