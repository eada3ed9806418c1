package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

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

// compileChecked compiles schema and checks that g takes every document of
// good as a whole and none of bad.
func compileChecked(t *testing.T, schema string, good, bad []string) *Grammar {
	t.Helper()
	g := mustCompile(t, schema)
	for _, s := range good {
		if !accepts(g, s) {
			t.Errorf("%s: %q rejected", schema, s)
		}
	}
	for _, s := range bad {
		if accepts(g, s) {
			t.Errorf("%s: %q accepted", schema, s)
		}
	}
	return g
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
		compileChecked(t, c.schema, c.good, c.bad)
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
		`{"type":"string","format":"ipv6"}`:                            `format "ipv6" is not supported`,
		`{"type":"number","minimum":1,"maximum":0.5}`:                  `no number lies between the minimum and the maximum`,
		`{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}`: `no integer lies between`,
		`{"type":"integer","minimum":1e17}`:                            `beyond the largest number written`,
		`{"type":"integer","minimum":"1"}`:                             `schema at /minimum: must be a number`,
		`{"type":"string","pattern":"(?<=a)b"}`:                        `lookbehind (?<=...) is not supported`,
		`{"type":"string","pattern":"(a)\\1"}`:                         `backreference \1 is not supported`,
		`{"type":"string","pattern":"\\bword"}`:                        `word boundary \b is not supported`,
		`{"type":"string","pattern":"\\p{L}"}`:                         `Unicode property escape \p is not supported`,
		`{"type":"string","pattern":"(a(?=b))"}`:                       `lookahead (?=...) inside a group`,
		`{"type":"string","pattern":"^a$b"}`:                           `anchor $ in the middle`,
		`{"type":"string","pattern":"[a-"}`:                            `unbalanced bracket`,
		// Found by FuzzPattern: the closing brace was found by its byte
		// offset and used as a rune offset (a slice out of range).
		`{"type":"string","pattern":"\\u{\u00e9\u00e90}"}`:                                       `bad escape \u{...}`,
		`{"type":"string","pattern":"(ab"}`:                                                      `unbalanced parenthesis '('`,
		`{"type":"string","pattern":"a{2000}"}`:                                                  `repetition count {2000} over 1000`,
		`{"type":"string","pattern":"^a$","minLength":2}`:                                        `no string of minLength..maxLength characters matches`,
		`{"type":"string","pattern":"^(?!a)a$"}`:                                                 `no string matches the pattern`,
		`{"type":"string","pattern":"^[0-9]{3}$","format":"date"}`:                               `no string satisfies the pattern and the format together`,
		`{"type":"object","properties":{"A":{}},"propertyNames":{"pattern":"^[a-z]+$"}}`:         `declared property "A" does not satisfy propertyNames`,
		`{"type":"object","propertyNames":{"type":"integer"}}`:                                   `property names are strings`,
		`{"type":"object","propertyNames":{"items":{}}}`:                                         `keyword "items" in propertyNames is not supported`,
		`{"type":"object","required":["a","b"],"maxProperties":1}`:                               `2 properties are required, more than maxProperties`,
		`{"type":"object","properties":{"a":{}},"additionalProperties":false,"minProperties":2}`: `minProperties is 2 but only 1 properties are allowed`,
		`{"type":"string","minimum":1}`:                                                          `number keywords (minimum, maximum, exclusiveMinimum, exclusiveMaximum) without type number`,
		`{"allOf":[{"type":"string"}]}`:                                                          `keyword "allOf" is not supported`,
		`{"type":"object","properties":{"a":{"type":"strin"}}}`:                                  `schema at /properties/a/type: unknown type "strin"`,
		`{"$ref":"#/$defs/missing"}`:                                                             `no "$defs"`,
		`{"$ref":"http://example.com/s.json"}`:                                                   `only references inside the schema`,
		`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`:                    `refers to itself`,
		`{"type":"array","minItems":3,"maxItems":2}`:                                             `minItems is more than maxItems`,
		`{"enum":[]}`:                      `must be a non-empty list`,
		`{"type":"string","enum":[1]}`:     `is not of type`,
		`false`:                            `false matches nothing`,
		`{"type":"string"`:                 `not valid JSON`,
		`{"minLength":-1}`:                 `must be a non-negative integer`,
		`{"type":"integer","maxLength":3}`: `string keywords (minLength, maxLength, pattern) without type string`,
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
	// limit > 0 (FuzzSchema): give up, setting over, past limit bytes or
	// 48 levels (a schema may have no finite document) or after 100 tries
	// at a string a propertyNames exclusion takes.
	limit int
	over  bool
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
	if g.limit > 0 && (g.over || depth > 48 || g.buf.Len() > g.limit) {
		g.over = true
		return
	}
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
	case kPattern:
		// A random walk that leans towards ending once it may.
		d := nd.dfa
		st := d.start
		g.buf.WriteByte('"')
		for steps := 0; ; steps++ {
			if d.acc[st] && (len(d.edges[st]) == 0 || g.r.IntN(4) == 0 || steps > 40) {
				break
			}
			if g.limit > 0 && steps > g.limit { // a walk that keeps missing acceptance
				g.over = true
				return
			}
			e := d.edges[st][g.r.IntN(len(d.edges[st]))]
			b := e.lo + byte(g.r.IntN(int(e.hi-e.lo)+1))
			g.buf.WriteByte(b)
			st = d.step(st, b)
		}
		g.buf.WriteByte('"')
	case kNumber:
		if nd.bounds != nil {
			g.buf.WriteString(randomInRange(g.r, nd.bounds))
			return
		}
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
		for tries := 0; ; tries++ {
			if g.limit > 0 && tries > 100 {
				g.over = true
				return
			}
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
		// Which members: required ones, some optional ones, some extra
		// keys, within minProperties..maxProperties.
		take := make([]bool, len(nd.props))
		count := 0
		for i, p := range nd.props {
			take[i] = p.required || (depth < 4 && g.r.IntN(2) == 0)
			if take[i] {
				count++
			}
		}
		for i := len(nd.props) - 1; i >= 0 && nd.maxProps >= 0 && count > nd.maxProps; i-- {
			if take[i] && !nd.props[i].required {
				take[i] = false
				count--
			}
		}
		for i := range nd.props {
			if count < nd.minProps && !take[i] {
				take[i] = true
				count++
			}
		}
		for i, p := range nd.props {
			if take[i] {
				member(p.enc, p.node)
			}
		}
		extras := g.r.IntN(3)
		if depth >= 4 {
			extras = 0
		}
		extras = max(extras, nd.minProps-count)
		if nd.maxProps >= 0 {
			extras = min(extras, nd.maxProps-count)
		}
		if nd.extra != nil {
			seen := map[string]bool{}
			for tries := 0; extras > 0 && tries < 100; tries++ {
				k := []byte(sampleChars[g.r.IntN(len(sampleChars))] + fmt.Sprint(g.r.IntN(100)))
				if nd.keyNode.kind == kPattern {
					kb := gen{r: g.r, limit: g.limit}
					kb.value(nd.keyNode, depth)
					if kb.over {
						g.over = true
						return
					}
					k = kb.buf.Bytes()[1 : kb.buf.Len()-1]
				}
				var dk string
				json.Unmarshal([]byte(`"`+string(k)+`"`), &dk)
				if nd.keyNode.exclude[dk] || seen[dk] {
					continue
				}
				seen[dk] = true
				member(k, nd.extra)
				extras--
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

// randomInRange is a random number text of the bounded range (an end point
// now and then).
func randomInRange(r *rand.Rand, nb *numBounds) string {
	top := new(big.Int).Sub(pow10(maxIntDigits+nb.scale), big.NewInt(1))
	lo, hi := new(big.Int).Neg(top), top
	if nb.lo != nil {
		lo = nb.lo
	}
	if nb.hi != nil {
		hi = nb.hi
	}
	var v *big.Int
	switch r.IntN(4) {
	case 0:
		v = lo
	case 1:
		v = hi
	default:
		span := new(big.Int).Sub(hi, lo)
		// Mostly small offsets from an end, so values are short.
		lim := new(big.Int).Add(span, big.NewInt(1))
		if r.IntN(2) == 0 && lim.Cmp(big.NewInt(1000)) > 0 {
			lim = big.NewInt(1000)
		}
		v = new(big.Int).Add(lo, randBelow(r, lim))
	}
	return gridText(v, nb.scale)
}

// randBelow is a random integer in 0..n-1 (n > 0).
func randBelow(r *rand.Rand, n *big.Int) *big.Int {
	v := new(big.Int)
	for range n.BitLen()/32 + 2 {
		v.Lsh(v, 32).Or(v, big.NewInt(int64(r.Uint32())))
	}
	return v.Mod(v, n)
}

// gridText writes v grid units as a number.
func gridText(v *big.Int, scale int) string {
	neg := v.Sign() < 0
	s := new(big.Int).Abs(v).String()
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Integer ranges: every integer of a window around the bounds is accepted
// exactly when it is in range (the digit automaton against arithmetic),
// and no prefix is a dead end.
func TestIntegerRanges(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		schema string
		lo, hi *int64
	}{
		{`{"type":"integer","minimum":9,"maximum":1000}`, p(9), p(1000)},
		{`{"type":"integer","minimum":-120,"maximum":-7}`, p(-120), p(-7)},
		{`{"type":"integer","minimum":-35,"maximum":12}`, p(-35), p(12)},
		{`{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100}`, p(1), p(99)},
		{`{"type":"integer","exclusiveMinimum":-1.5,"maximum":7.9}`, p(-1), p(7)},
		{`{"type":"integer","minimum":0}`, p(0), nil},
		{`{"type":"integer","maximum":-10}`, nil, p(-10)},
		{`{"type":"integer","minimum":5,"exclusiveMinimum":6}`, p(7), nil},
		{`{"type":"integer","minimum":99,"maximum":101}`, p(99), p(101)},
		{`{"type":"integer","minimum":0,"maximum":0}`, p(0), p(0)},
	} {
		g := mustCompile(t, c.schema)
		for v := int64(-1200); v <= 1200; v++ {
			want := (c.lo == nil || v >= *c.lo) && (c.hi == nil || v <= *c.hi)
			if got := accepts(g, strconv.FormatInt(v, 10)); got != want {
				t.Errorf("%s: %d accepted %v, want %v", c.schema, v, got, want)
			}
		}
		for _, bad := range []string{"-0", "007", "1.0", "1e2", "-"} {
			if accepts(g, bad) && bad != "-0" {
				t.Errorf("%s: %q accepted", c.schema, bad)
			}
		}
		checkNoDeadEnds(t, g, "-0123456789", 5)
	}
	// zod's .int(): the safe integer range, 16 digits.
	g := mustCompile(t, `{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991}`)
	for doc, want := range map[string]bool{"9007199254740991": true, "9007199254740992": false, "-9007199254740991": true,
		"-9007199254740992": false, "9999999999999999": false, "1000000000000000": true, "0": true} {
		if accepts(g, doc) != want {
			t.Errorf("safe integers: %s accepted %v", doc, !want)
		}
	}
}

// checkNoDeadEnds: every prefix over alphabet up to depth that the
// matcher takes can still be completed to a document.
func checkNoDeadEnds(t *testing.T, g *Grammar, alphabet string, depth int) {
	t.Helper()
	var walk func(m []*stack, prefix string, d int)
	walk = func(m []*stack, prefix string, d int) {
		if !canFinish(m, alphabet, 24) {
			t.Fatalf("dead end after %q", prefix)
		}
		if d == 0 {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			if next := step(m, []byte{alphabet[i]}); next != nil {
				walk(next, prefix+alphabet[i:i+1], d-1)
			}
		}
	}
	walk(g.NewMatcher().states, "", depth)
}

// canFinish: some string over alphabet of at most n bytes completes m
// (breadth-first over deduplicated states).
func canFinish(m []*stack, alphabet string, n int) bool {
	frontier := [][]*stack{m}
	for range n + 1 {
		var next [][]*stack
		seen := map[string]bool{}
		for _, st := range frontier {
			if (&Matcher{states: st}).Done() {
				return true
			}
			for i := 0; i < len(alphabet); i++ {
				if s := step(st, []byte{alphabet[i]}); s != nil {
					var key []byte
					for _, x := range s {
						key = appendKey(key, x)
						key = append(key, '|')
					}
					if !seen[string(key)] {
						seen[string(key)] = true
						next = append(next, s)
					}
				}
			}
		}
		frontier = next
	}
	return false
}

// Numbers: boundaries to the last grid step, exclusive bounds, fractions.
func TestNumberRanges(t *testing.T) {
	for _, c := range []struct {
		schema    string
		good, bad []string
	}{
		{`{"type":"number","minimum":0,"maximum":1.5}`,
			[]string{"0", "0.0", "1.5", "1.50", "1.4999999999999999", "0.0000000000000001", "1", "-0"},
			[]string{"-0.0000000000000001", "1.5000000000000001", "2", "-1", "1.6", "1e0", "15"}},
		{`{"type":"number","exclusiveMinimum":-2.5,"exclusiveMaximum":10}`,
			[]string{"-2.4999999999999999", "9.9999999999999999", "0", "-2", "9"},
			[]string{"-2.5", "-2.50", "10", "10.0", "-3", "100"}},
		{`{"type":"number","minimum":-1000.25}`,
			[]string{"-1000.25", "-1000", "5", "1234567890123456"},
			[]string{"-1000.2500000000001", "-1001", "-10000"}},
		{`{"type":"number","maximum":-0.5}`, []string{"-0.5", "-1", "-0.51"}, []string{"-0.49", "0", "1", "-0"}},
	} {
		g := compileChecked(t, c.schema, c.good, c.bad)
		checkNoDeadEnds(t, g, "-0159.", 4)
	}
}

// Patterns, formats, lengths and property names.
func TestStringLanguages(t *testing.T) {
	for _, c := range []struct {
		schema    string
		good, bad []string
	}{
		{`{"type":"string","pattern":"^[A-Z]{2}-\\d{3,4}$"}`, []string{`"AB-123"`, `"ZZ-0000"`}, []string{`"AB-12"`, `"ab-123"`, `"AB-12345"`, `"AB123"`}},
		{`{"type":"string","pattern":"ab"}`, []string{`"ab"`, `"xxabyy"`, `"\n ab"`}, []string{`"a"`, `"ba"`, `""`}},
		{`{"type":"string","pattern":"^a\"b\\\\c$"}`, []string{`"a\"b\\c"`}, []string{`"a\u0022b\\c"`, `"ab"`}},
		{`{"type":"string","pattern":"^(cat|dog)s?$"}`, []string{`"cat"`, `"dogs"`}, []string{`"cats?"`, `"cow"`}},
		{`{"type":"string","pattern":"^[^a-z]$"}`, []string{`"A"`, `"é"`, `"😀"`, `"\n"`, `"\""`}, []string{`"a"`, `"AB"`, `""`}},
		{`{"type":"string","pattern":"^.{2}$"}`, []string{`"ab"`, `"☃😀"`}, []string{`"a"`, `"a\n"`, `"abc"`}},
		{`{"type":"string","pattern":"^\\ud83d\\ude00[\\u00e0-\\u00e9]{0,1}x{,2}$"}`, []string{`"😀x{,2}"`, `"😀éx{,2}"`}, []string{`"😀xx"`, `"😀"`}},
		{`{"type":"string","pattern":"^[à-ÿ]+$"}`, []string{`"é"`, `"ÿà"`}, []string{`"a"`, `"Ā"`}},
		{`{"type":"string","pattern":"^x{2,}?$","maxLength":3}`, []string{`"xx"`, `"xxx"`}, []string{`"x"`, `"xxxx"`}},
		{`{"type":"string","pattern":"^[a-z]+$","minLength":3,"maxLength":4}`, []string{`"abc"`, `"abcd"`}, []string{`"ab"`, `"abcde"`}},
		{`{"type":"string","pattern":"^(?!.*\\.\\.)[a-z.]+$"}`, []string{`"a.b"`, `"."`}, []string{`"a..b"`, `".."`}},
		{`{"type":"string","pattern":"^(?=.*[0-9])[a-z0-9]{3}$"}`, []string{`"ab1"`, `"123"`}, []string{`"abc"`}},
		{`{"type":"string","format":"date"}`, []string{`"2024-02-29"`, `"2000-02-29"`, `"2023-12-31"`, `"0000-02-29"`},
			[]string{`"2023-02-29"`, `"1900-02-29"`, `"2023-04-31"`, `"2023-13-01"`, `"2023-1-01"`, `"2023-00-10"`}},
		{`{"type":"string","format":"time"}`, []string{`"23:59:59Z"`, `"00:00:00.123+05:30"`}, []string{`"24:00:00Z"`, `"12:00:00"`, `"12:60:00Z"`, `"12:00:00.1Z"`}},
		{`{"type":"string","format":"date-time"}`, []string{`"2024-01-02T03:04:05Z"`}, []string{`"2024-01-02 03:04:05Z"`, `"2024-01-02"`}},
		{`{"type":"string","format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`, `"123e4567-e89b-12d3-a456-42661417400g"`}},
		{`{"type":"string","format":"email"}`, []string{`"a.b@c.de"`, `"x_y+z@mail.example.org"`}, []string{`"a@b"`, `".a@b.cd"`, `"a..b@c.de"`, `"a@-b.cd"`, `"@b.cd"`}},
		{`{"type":"object","properties":{"n":{"type":"integer","format":"int64"},"x":{"type":"number","format":"double"}},"required":["n","x"]}`,
			[]string{`{"n":-5,"x":1.5}`}, []string{`{"n":"5","x":1}`}},
		{`{"type":"string","format":"ipv4"}`, []string{`"0.0.0.0"`, `"255.249.10.1"`}, []string{`"256.1.1.1"`, `"01.1.1.1"`, `"1.1.1"`}},
		{`{"type":"string","format":"hostname"}`, []string{`"a.io"`, `"x-1.example.com"`}, []string{`"-a.io"`, `"a-.io"`, `"localhost"`, `"a.1"`}},
		{`{"type":"string","format":"uri"}`, []string{`"https://a.io"`, `"http://x.y.org/p/q.r"`}, []string{`"a.io"`, `"ftp://a.io"`, `"https://a.io/ b"`}},
		{`{"type":"string","format":"cuid","pattern":"^c[0-9]{2}$"}`, []string{`"c12"`}, []string{`"c1"`, `"x12"`}},
		{`{"type":"string","pattern":"^(?=.{1,4}$)a+$"}`, []string{`"a"`, `"aaaa"`}, []string{`""`, `"aaaaa"`}},
		{`{"type":"string","pattern":"^(?!ab$|c)[a-c]{2}$"}`, []string{`"aa"`, `"ba"`, `"bc"`}, []string{`"ab"`, `"ca"`}},
		{`{"type":["string","null"],"format":"date"}`, []string{`null`, `"2020-01-01"`}, []string{`"x"`}},
		{`{"type":"object","propertyNames":{"pattern":"^k[0-9]$"},"additionalProperties":{"type":"integer","minimum":0}}`,
			[]string{`{}`, `{"k1":1,"k2":0}`}, []string{`{"x":1}`, `{"k1":-1}`, `{"k12":1}`}},
		{`{"type":"object","properties":{"k1":{"type":"boolean"}},"propertyNames":{"pattern":"^k[0-9]$"},"additionalProperties":{"type":"integer"}}`,
			[]string{`{"k1":true,"k2":3}`, `{"k3":3}`, `{"k2":3,"k1":true}`}, []string{`{"k1":1}`, `{"kk":1}`, `{"k1":true,"k1":true}`}},
		{`{"type":"object","propertyNames":{"enum":["a","b"]},"additionalProperties":{"type":"boolean"}}`,
			[]string{`{"a":true,"b":false}`, `{}`}, []string{`{"c":true}`, `{"ab":true}`}},
		{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"null"}},"required":["b"],"minProperties":2,"maxProperties":2}`,
			[]string{`{"b":true,"a":1}`, `{"b":true,"c":null}`}, []string{`{"b":true}`, `{"b":true,"a":1,"c":null}`, `{}`}},
		{`{"type":"object","additionalProperties":{"type":"boolean"},"minProperties":1,"maxProperties":2}`,
			[]string{`{"x":true}`, `{"x":true,"y":false}`}, []string{`{}`, `{"x":true,"y":true,"z":true}`}},
		{`{"type":"object","propertyNames":{"minLength":2,"maxLength":3}}`, []string{`{"ab":1,"abc":[]}`}, []string{`{"a":1}`, `{"abcd":1}`}},
	} {
		compileChecked(t, c.schema, c.good, c.bad)
	}
}

// All the automata of one schema are bounded together; repeated patterns
// are built once.
func TestPatternBudget(t *testing.T) {
	var props []string
	for i := range 210 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","pattern":"^[a-z]{1,1000}%s$"}`, i, strings.Repeat("0", i)))
	}
	_, err := CompileSchema([]byte(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`))
	if err == nil || !strings.Contains(err.Error(), "too complex together") {
		t.Errorf("210 patterns of 1000 states: %v", err)
	}
	props = props[:0]
	for i := range 210 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"string","pattern":"^[a-z]{1,1000}$"}`, i))
	}
	g := mustCompile(t, `{"type":"object","properties":{`+strings.Join(props, ",")+`}}`)
	if !accepts(g, `{"p0":"ab","p209":"c"}`) || accepts(g, `{"p0":"aB"}`) {
		t.Error("repeated pattern")
	}
}

// Any pattern either compiles to an automaton whose documents the matcher
// takes, or is a *SchemaError: never a panic.
func FuzzPattern(f *testing.F) {
	for _, p := range []string{`^[a-z]{2,4}$`, `(?!\.)(?!.*\.\.)a+@b`, `[^\]\\-]*?x{3}|(?:ab)+$`, `\u{1F600}\ud83d\ude00.`,
		`^(a|b)*a(a|b){3}$`, `(?<n>x)[\w-]{0,}\S`, `a{2,1}`, `[z-a]`, `(?=`, `\`, `\x4`, `((((a))))`, `^$`} {
		f.Add(p, 3)
	}
	f.Fuzz(func(t *testing.T, pat string, maxLen int) {
		if len(pat) > 200 {
			return
		}
		schema, _ := json.Marshal(map[string]any{"type": "string", "pattern": pat, "maxLength": maxLen & 15})
		g, err := CompileSchema(schema)
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("%q: %T %v", pat, err, err)
			}
			return
		}
		// A random document of the grammar is accepted.
		gn := gen{r: rand.New(rand.NewPCG(uint64(len(pat)), 1))}
		gn.value(g.root.child, 0)
		if !accepts(g, gn.buf.String()) {
			t.Fatalf("%q: own document %q rejected", pat, gn.buf.String())
		}
	})
}

// Wide classes repeated many times stay within the automaton bounds; a
// pattern whose automaton explodes is a 400 within about a second.
func TestPatternCost(t *testing.T) {
	g := mustCompile(t, `{"type":"string","pattern":"^.{300}$"}`)
	if !accepts(g, `"`+strings.Repeat("é", 300)+`"`) || accepts(g, `"`+strings.Repeat("é", 299)+`"`) {
		t.Error(".{300}")
	}
	mustCompile(t, `{"type":"string","pattern":"^[^a]{0,1000}$"}`)
	start := time.Now()
	_, err := CompileSchema([]byte(`{"type":"string","pattern":"[^\"]{999}"}`))
	if err == nil || !strings.Contains(err.Error(), "pattern too complex") {
		t.Errorf("unanchored [^\"]{999}: %v", err)
	}
	t.Logf("refused in %v", time.Since(start))
}

// refChain is a schema of n $defs, each an anyOf naming the next one twice
// (or, with single, a plain $ref to it), the last a string: linear in n.
func refChain(n int, single bool) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := 0; i < n; i++ {
		next := `{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"}`
		if single {
			fmt.Fprintf(&b, `"d%d":%s,`, i, next)
		} else {
			fmt.Fprintf(&b, `"d%d":{"anyOf":[%s,%s]},`, i, next, next)
		}
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}},"$ref":"#/$defs/d0"}`, n)
	return b.String()
}

// Alternatives that lead to the same schema are followed once: a request's
// schema of 40 $defs, each anyOf the next one twice, once made the matcher
// expand 2^40 stacks at the first byte (a hang, then the memory of every
// stack). A chain of plain $refs deeper than 64 once lost its string.
func TestAnyOfSharedAlternatives(t *testing.T) {
	for _, c := range []struct {
		n      int
		single bool
	}{{40, false}, {200, true}, {200, false}} {
		g := mustCompile(t, refChain(c.n, c.single))
		start := time.Now()
		if !accepts(g, `"ab"`) || accepts(g, `1`) {
			t.Errorf("%d $defs (single %v): the string is not what is taken", c.n, c.single)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%d $defs (single %v): matching took %v", c.n, c.single, d)
		}
	}
}
