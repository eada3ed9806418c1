package chat

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var fuzzToolFormats = []string{ToolsHermes, ToolsLlama3, ToolsMistral, ToolsGranite, ToolsHarmony, ToolsGemma4, ToolsForced, ""}

// FuzzToolParser: any model output, in any format, streamed in any pieces,
// splits into the same content and calls as the whole answer at once; no
// panic; every call's arguments are JSON.
//
//	go test ./runtime/chat -run '^$' -fuzz '^FuzzToolParser$' -fuzztime 60s -parallel 1
func FuzzToolParser(f *testing.F) {
	for _, s := range []string{
		"Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>",
		"<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> and <tool_call>{\"name\":\"b\"",
		"<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}",
		"{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {}}",
		"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": [1,2]}}]",
		"<|tool_call|>[{\"name\": \"f\", \"arguments\": {}}]",
		"{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}",
		"plain text with <tool_ and [TOOL and <|py", "", "   ", "<tool_call></tool_call>",
	} {
		for i := range fuzzToolFormats {
			f.Add(uint8(i), s, []byte{3, 7, 1})
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, text string, cuts []byte) {
		format := fuzzToolFormats[int(which)%len(fuzzToolFormats)]
		mk := func() *ToolParser {
			if format == ToolsForced {
				return NewForcedArgsParser("f")
			}
			return NewToolParser(format)
		}
		p := mk()
		c1, k1 := p.Feed(text)
		c2, k2 := p.Flush()
		whole, calls := c1+c2, append(k1, k2...)
		q := mk()
		var streamed bytes.Buffer
		var scalls []ToolCall
		rest := text
		for _, c := range cuts {
			n := min(int(c)%8, len(rest))
			c, k := q.Feed(rest[:n])
			streamed.WriteString(c)
			scalls = append(scalls, k...)
			rest = rest[n:]
		}
		c, k := q.Feed(rest)
		streamed.WriteString(c)
		scalls = append(scalls, k...)
		c, k = q.Flush()
		streamed.WriteString(c)
		scalls = append(scalls, k...)
		if streamed.String() != whole {
			t.Fatalf("%s %q: streamed content %q, whole %q", format, text, streamed.String(), whole)
		}
		if len(calls) != len(scalls) {
			t.Fatalf("%s %q: streamed %d calls, whole %d", format, text, len(scalls), len(calls))
		}
		for i := range calls {
			a, b := calls[i], scalls[i]
			a.ID, b.ID = "", ""
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s %q: call %d streamed %+v, whole %+v", format, text, i, b, a)
			}
			if !json.Valid(a.Arguments) {
				t.Fatalf("%s %q: call %d arguments %q are not JSON", format, text, i, a.Arguments)
			}
		}
	})
}
