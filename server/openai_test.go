package server

import (
	"encoding/json"
	"testing"
)

// A string or a list: stop/prompt (stringList) and Anthropic's content.
func TestStringOrList(t *testing.T) {
	for _, c := range []struct {
		in, want string // want: the decoded value as JSON, or the error
	}{
		{`"a"`, `["a"]`}, {`["a","b"]`, `["a","b"]`}, {`[]`, `[]`}, {`null`, `null`},
		{`1`, "expected a string or a list of strings"}, {`[1]`, "expected a string or a list of strings"},
	} {
		var l stringList
		got, err := "", json.Unmarshal([]byte(c.in), &l)
		if err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(l)
			got = string(b)
		}
		if got != c.want {
			t.Errorf("stringList %s: %s, want %s", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`"hi"`, `[{"Type":"text","Text":"hi"}]`},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, `[{"Type":"text","Text":"a"},{"Type":"text","Text":"b"}]`},
		{`{"type":"text"}`, "content must be a string or a list of content blocks"},
	} {
		var blocks anthropicContent
		got, err := "", json.Unmarshal([]byte(c.in), &blocks)
		if err != nil {
			got = err.Error()
		} else {
			var short []struct{ Type, Text string }
			for _, b := range blocks {
				short = append(short, struct{ Type, Text string }{b.Type, b.Text})
			}
			b, _ := json.Marshal(short)
			got = string(b)
		}
		if got != c.want {
			t.Errorf("anthropicContent %s: %s, want %s", c.in, got, c.want)
		}
	}
}
