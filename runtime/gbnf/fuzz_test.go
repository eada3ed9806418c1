package gbnf

import (
	"testing"
	"time"
)

// FuzzGrammar: any GBNF source (a request's "grammar" field) parses or is
// an error, and a grammar that parses matches any text or errors, quickly
// and without a panic.
//
//	go test ./runtime/gbnf -run '^$' -fuzz '^FuzzGrammar$' -fuzztime 60s -parallel 1
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{
		`root ::= "yes" | "no"`, `root ::= [a-c]+ "!"?`, `root ::= [^0-9]*`,
		"root ::= item (\",\" item)*  # a list\nitem ::= [0-9]{1,3}",
		`root ::= "ab"{2} "c"{0,2} "d"{1,}`, "root ::= \"(\" root \")\" | \"\"",
		`root ::= . "\n" "\x41" [\]] "\u00e9"`, "root ::= a\n  | b\na ::= \"x\"\nb ::= (\n  \"y\" |\n  \"z\"\n)",
		"root ::= object\nobject ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n" +
			"value ::= object | string | number\nstring ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\/bfnrt])* \"\\\"\" ws\n" +
			"number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) ws\nws ::= [ \\t\\n]{0,20}",
	} {
		f.Add(s, "yes")
		f.Add(s, `{"a": "b", "c": -12}`)
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		start := time.Now()
		g, err := Parse(src)
		if err == nil {
			_, _ = g.Match(text)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%.200q on %.80q took %v", src, text, d)
		}
	})
}
