package runtime

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzGemma4Out: any model output, given whole or in pieces of 0-7 bytes,
// is rewritten to the same text, without a panic, and every call block it
// writes holds a JSON object.
//
//	go test ./runtime -run '^$' -fuzz '^FuzzGemma4Out$' -fuzztime 60s -parallel 1
func FuzzGemma4Out(f *testing.F) {
	for _, s := range []string{
		"<|channel>thought\nhmm<channel|>The answer.",
		`<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:[1,2.5,true,None]}<tool_call|>`,
		"<|channel><|channel>thought x<channel|><|channel>thought\n<channel|>done",
		`<|tool_call>call:f{a:{b:{c:[]}}}<tool_call|> and <|tool_call>call:{}<tool_call|>`,
		"text <channel|> more <|chan", "", "<|tool_call>call:f{",
	} {
		f.Add(s, []byte{1, 5, 2})
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		g := &gemma4Out{atStart: true}
		whole := g.piece(text) + g.flush()
		h := &gemma4Out{atStart: true}
		var b strings.Builder
		rest := text
		for _, c := range cuts {
			n := min(int(c)%8, len(rest))
			b.WriteString(h.piece(rest[:n]))
			rest = rest[n:]
		}
		b.WriteString(h.piece(rest))
		b.WriteString(h.flush())
		if b.String() != whole {
			t.Fatalf("%q: in pieces %q, whole %q", text, b.String(), whole)
		}
		// Every call block written (not one the model wrote) holds JSON.
		s := whole
		for {
			i := strings.Index(s, `<tool_call>{"name": `)
			if i < 0 {
				break
			}
			s = s[i+len("<tool_call>"):]
			j := strings.Index(s, "}</tool_call>")
			if j < 0 {
				break
			}
			if body := s[:j+1]; !strings.Contains(text, body) && !json.Valid([]byte(body)) {
				t.Fatalf("%q: call %q is not JSON", text, body)
			}
			s = s[j:]
		}
	})
}
