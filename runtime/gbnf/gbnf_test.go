package gbnf

import (
	"math"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		src string
		yes []string
		no  []string
	}{
		{`root ::= "yes" | "no"`, []string{"yes", "no"}, []string{"", "y", "yesno", "maybe"}},
		{`root ::= [a-c]+ "!"?`, []string{"a", "abc!", "cccc"}, []string{"", "!", "abd", "a!!"}},
		{`root ::= [^0-9]*`, []string{"", "abc", "é"}, []string{"a1"}},
		{"root ::= item (\",\" item)*  # a list\nitem ::= [0-9]{1,3}", []string{"1", "12,345,6"}, []string{"", "1234", "1,", ",1"}},
		{`root ::= "ab"{2} "c"{0,2} "d"{1,}`, []string{"ababd", "ababccddd"}, []string{"abd", "ababcccd", "abab"}},
		{"root ::= \"(\" root \")\" | \"\"", []string{"", "()", "((()))"}, []string{"(", "())", ")("}},
		{`root ::= . "\n" "\x41" [\]] "\u00e9"`, []string{"z\nA]é"}, []string{"z\nA]e"}},
		{"root ::= a\n  | b\na ::= \"x\"\nb ::= (\n  \"y\" |\n  \"z\"\n)", []string{"x", "y", "z"}, []string{"xy"}},
	} {
		g, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		for _, s := range tc.yes {
			if ok, err := g.Match(s); !ok || err != nil {
				t.Errorf("%q does not match %q (%v)", tc.src, s, err)
			}
		}
		for _, s := range tc.no {
			if ok, _ := g.Match(s); ok {
				t.Errorf("%q matches %q", tc.src, s)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for src, want := range map[string]string{
		`item ::= "a"`:                          "no root",
		`root ::= item`:                         `"item" is used but not defined`,
		`root ::= "a`:                           "unterminated string",
		`root ::= [a-`:                          "unterminated",
		`root ::= ("a"`:                         "missing )",
		`root ::= root "a" | "b"`:               "left-recursive",
		`root ::= x` + "\n" + `x ::= ("" root)`: "left-recursive",
		`root ::= "a"{3,1}`:                     "bad repetition",
		`root ::= "a"{5000}`:                    "above",
		"root ::= \"a\"\nroot ::= \"b\"":        "defined twice",
		`root ::= [z-a]`:                        "backwards",
		`root ::= "\q"`:                         "unknown escape",
		`root = "a"`:                            "expected ::=",
		// 500,000 nested groups (1 MB) once took a 256 MB goroutine stack,
		// 441 MB of allocations and 1.5 s to fail as "ambiguous"
		"root ::= " + strings.Repeat("(", 500_000) + `"a"` + strings.Repeat(")", 500_000): "nested more than 256 deep",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.80q: %v, want an error with %q", src, err, want)
		}
	}
	// As deep as allowed still parses and matches.
	deep := "root ::= " + strings.Repeat("(", maxNesting) + `"a"` + strings.Repeat(")", maxNesting)
	g, err := Parse(deep)
	if err != nil {
		t.Fatalf("%d nested groups: %v", maxNesting, err)
	}
	if ok, err := g.Match("a"); !ok || err != nil {
		t.Errorf("%d nested groups do not match \"a\": %v", maxNesting, err)
	}
}

// Masking over a tiny vocabulary: which tokens stay, step by step.
func TestMask(t *testing.T) {
	pieces := []string{"a", "b", "ab", "ba", "!", "", "<eos>", "\xe2"}
	v := NewVocab(len(pieces), func(id int32) []byte { return []byte(pieces[id]) },
		func(id int32) bool { return id != 6 }, []int32{6})
	g, err := Parse(`root ::= "a" "b"* "!"`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.NewMatcher(v)
	if err != nil {
		t.Fatal(err)
	}
	allowed := func() string {
		l := make([]float32, len(pieces)+1) // one more logit than tokens: masked too
		if err := m.Mask(l); err != nil {
			t.Fatal(err)
		}
		var s []string
		for id, x := range l {
			if !math.IsInf(float64(x), -1) {
				s = append(s, pieces[id])
			}
		}
		return strings.Join(s, " ")
	}
	for _, step := range []struct {
		want string
		take int32
	}{
		{"a ab", 2}, // "ab"
		{"b !", 1},  // "abb"
		{"b !", 4},  // "abb!"
		{"<eos>", 6},
	} {
		if got := allowed(); got != step.want {
			t.Fatalf("allowed %q, want %q", got, step.want)
		}
		if err := m.Accept(step.take); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Finished() {
		t.Error("not finished after the end")
	}
	m, _ = g.NewMatcher(v)
	if err := m.Accept(1); err == nil {
		t.Error("accepted b first")
	}
}
