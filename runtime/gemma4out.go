package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

// Gemma 4 writes its reasoning and its tool calls with tokens that print
// their text (the GGUF marks them user-defined so that a parser can read
// them, as llama.cpp's converter does):
//
//	<|channel>thought\nREASONING<channel|>ANSWER
//	<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,flag:true,list:[...],obj:{...}}<tool_call|>
//
// gemma4Out rewrites that text the way the server's thinking models
// already look, as harmonyOut does for gpt-oss: a thought channel at the
// start of the answer (only whitespace before it) between <think> and
// </think>, each complete call as
// <tool_call>{"name": "NAME", "arguments": {JSON}}</tool_call>, which the
// server reads as Qwen3's calls (chat.ToolsGemma4). As llama.cpp's gemma4
// parser: empty channels before "thought" are skipped, a <channel|>
// outside a channel is dropped, and a later channel that is empty (Gemma 4
// sometimes writes "<|channel>thought\n<channel|>" after its answer) is
// dropped. A later channel with text, a call whose arguments do not parse
// and anything unfinished when generation ends stay in the text as the
// model wrote them. Matching is on the text, so the tags work whether the
// model wrote them as their single tokens or piece by piece.
type gemma4Out struct {
	state   int    // g4Text, g4Header, g4Thought, g4Channel, g4Call
	buf     string // text not yet decided
	raw     string // the tag text of the channel or call being read
	atStart bool   // nothing but whitespace given out, no thought channel yet
	lead    bool   // in the thought channel, nothing but whitespace after its name yet
}

const (
	g4Text = iota
	g4Header
	g4Thought
	g4Channel
	g4Call
)

const (
	g4ChanOpen  = "<|channel>"
	g4ChanClose = "<channel|>"
	g4CallOpen  = "<|tool_call>"
	g4CallClose = "<tool_call|>"
	g4Quote     = `<|"|>`
)

// newGemma4Out returns the rewriter for a vocabulary of Gemma 4's kind
// (one with <|turn>, <|channel> and <channel|> tokens), else nil.
func newGemma4Out(tok *tokenizer.Tokenizer) *gemma4Out {
	for _, s := range []string{"<|turn>", g4ChanOpen, g4ChanClose} {
		if _, ok := tok.ID(s); !ok {
			return nil
		}
	}
	return &gemma4Out{atStart: true}
}

// piece takes the next generated text and returns what to give out.
func (g *gemma4Out) piece(text string) string {
	g.buf += text
	var out strings.Builder
	for {
		switch g.state {
		case g4Text:
			at, tag := -1, ""
			for _, t := range []string{g4ChanOpen, g4ChanClose, g4CallOpen} {
				if i := strings.Index(g.buf, t); i >= 0 && (at < 0 || i < at) {
					at, tag = i, t
				}
			}
			if at < 0 {
				keep := 0
				for _, t := range []string{g4ChanOpen, g4ChanClose, g4CallOpen} {
					keep = max(keep, heldBack(g.buf, t))
				}
				g.text(&out, g.buf[:len(g.buf)-keep])
				g.buf = g.buf[len(g.buf)-keep:]
				return out.String()
			}
			g.text(&out, g.buf[:at])
			g.buf = g.buf[at+len(tag):]
			switch tag {
			case g4ChanOpen:
				g.state, g.raw = g4Header, tag
			case g4CallOpen:
				g.state, g.raw = g4Call, tag
			} // a stray <channel|> is dropped
		case g4Header:
			for strings.HasPrefix(g.buf, g4ChanOpen) { // empty channels before the name
				g.raw += g4ChanOpen
				g.buf = g.buf[len(g4ChanOpen):]
			}
			if g.buf == "" || strings.HasPrefix(g4ChanOpen, g.buf) {
				return out.String() // perhaps another channel tag
			}
			name := g.buf
			n := strings.IndexAny(g.buf, " \t\r\n<")
			if n >= 0 {
				name = g.buf[:n]
			} else if strings.HasPrefix("thought", name) {
				return out.String() // the name is not complete yet
			}
			if name == "thought" && g.atStart {
				g.atStart = false
				g.state, g.raw, g.lead = g4Thought, "", true
				g.buf = g.buf[len(name):]
				out.WriteString("<think>")
				continue
			}
			g.state = g4Channel
		case g4Thought:
			if g.lead { // the whitespace after the name, in however many pieces
				if g.buf = strings.TrimLeft(g.buf, " \t\r\n"); g.buf == "" {
					return out.String()
				}
				g.lead = false
			}
			if i := strings.Index(g.buf, g4ChanClose); i >= 0 {
				out.WriteString(g.buf[:i] + "</think>")
				g.buf = g.buf[i+len(g4ChanClose):]
				g.state = g4Text
				continue
			}
			keep := heldBack(g.buf, g4ChanClose)
			out.WriteString(g.buf[:len(g.buf)-keep])
			g.buf = g.buf[len(g.buf)-keep:]
			return out.String()
		case g4Channel:
			i := strings.Index(g.buf, g4ChanClose)
			if i < 0 {
				return out.String()
			}
			body := g.buf[:i]
			whole := g.raw + body + g4ChanClose
			g.buf = g.buf[i+len(g4ChanClose):]
			g.state, g.raw = g4Text, ""
			if n := strings.IndexAny(body, " \t\r\n<"); n >= 0 {
				body = body[n:]
			} else {
				body = ""
			}
			if strings.TrimSpace(body) != "" {
				g.text(&out, whole)
			}
		case g4Call:
			i := strings.Index(g.buf, g4CallClose)
			if i < 0 {
				return out.String()
			}
			body := g.buf[:i]
			g.buf = g.buf[i+len(g4CallClose):]
			g.state, g.raw = g4Text, ""
			if call, err := gemma4Call(body); err == nil {
				g.atStart = false
				out.WriteString(call)
			} else {
				g.text(&out, g4CallOpen+body+g4CallClose)
			}
		}
	}
}

// text gives out answer text.
func (g *gemma4Out) text(out *strings.Builder, s string) {
	if strings.TrimSpace(s) != "" {
		g.atStart = false
	}
	out.WriteString(s)
}

// flush gives out what is held when generation ends: an unfinished
// thought's text (the server counts an unclosed <think> block as
// reasoning), anything else as the model wrote it.
func (g *gemma4Out) flush() string {
	out := g.raw + g.buf
	g.raw, g.buf, g.state, g.lead = "", "", g4Text, false
	return out
}

// heldBack is the length of the longest suffix of s that is a proper
// prefix of tag.
func heldBack(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// gemma4Call converts a call's text "call:NAME{...}" into a hermes block.
func gemma4Call(body string) (string, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(body), "call:")
	if !ok {
		return "", errors.New("gemma4 call: no call: prefix")
	}
	i := strings.IndexByte(rest, '{')
	if i < 0 {
		return "", errors.New("gemma4 call: no arguments")
	}
	name := strings.TrimSpace(rest[:i])
	if name == "" {
		return "", errors.New("gemma4 call: no name")
	}
	p := g4Parser{s: rest[i:]}
	var args bytes.Buffer
	if err := p.value(&args, 0); err != nil {
		return "", err
	}
	if !bytes.HasPrefix(args.Bytes(), []byte("{")) {
		return "", errors.New("gemma4 call: arguments are not an object")
	}
	p.space()
	if p.i != len(p.s) {
		return "", errors.New("gemma4 call: text after the arguments")
	}
	var b bytes.Buffer
	b.WriteString(`<tool_call>{"name": `)
	jsonString(&b, name)
	b.WriteString(`, "arguments": `)
	b.Write(args.Bytes())
	b.WriteString("}</tool_call>")
	return b.String(), nil
}

// g4Parser reads Gemma 4's value notation: strings between <|"|> marks
// (taken as written, no escapes), objects {key:value,...} with bare keys
// (keys between marks are accepted too), lists [a,b], JSON numbers, true,
// false and null (and Python's True, False and None, which the template
// itself writes for values it prints as Python does).
type g4Parser struct {
	s string
	i int
}

func (p *g4Parser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// open writes the opening bracket at p.i to b and reads past it; when the
// closing bracket end follows at once (an empty object or list) it writes
// that too and reports true.
func (p *g4Parser) open(b *bytes.Buffer, end byte) bool {
	b.WriteByte(p.s[p.i])
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == end {
		p.i++
		b.WriteByte(end)
		return true
	}
	return false
}

// next reads what follows a member of an object or list (what): its
// closing bracket end, written to b (done), or a comma.
func (p *g4Parser) next(b *bytes.Buffer, end byte, what string) (done bool, err error) {
	p.space()
	if p.i >= len(p.s) {
		return false, errors.New("gemma4 call: unterminated " + what)
	}
	switch p.s[p.i] {
	case end:
		p.i++
		b.WriteByte(end)
		return true, nil
	case ',':
		p.i++
		return false, nil
	}
	article := "a "
	if what == "object" {
		article = "an "
	}
	return false, errors.New("gemma4 call: want , or " + string(end) + " in " + article + what)
}

func (p *g4Parser) value(b *bytes.Buffer, depth int) error {
	if depth > 100 {
		return errors.New("gemma4 call: arguments nested more than 100 deep")
	}
	p.space()
	if p.i >= len(p.s) {
		return errors.New("gemma4 call: a value is missing")
	}
	switch {
	case strings.HasPrefix(p.s[p.i:], g4Quote):
		p.i += len(g4Quote)
		j := strings.Index(p.s[p.i:], g4Quote)
		if j < 0 {
			return errors.New("gemma4 call: unterminated string")
		}
		jsonString(b, p.s[p.i:p.i+j])
		p.i += j + len(g4Quote)
		return nil
	case p.s[p.i] == '{':
		if p.open(b, '}') {
			return nil
		}
		for n := 0; ; n++ {
			p.space()
			var key string
			if strings.HasPrefix(p.s[p.i:], g4Quote) {
				p.i += len(g4Quote)
				j := strings.Index(p.s[p.i:], g4Quote)
				if j < 0 {
					return errors.New("gemma4 call: unterminated key")
				}
				key = p.s[p.i : p.i+j]
				p.i += j + len(g4Quote)
				p.space()
			} else {
				j := strings.IndexAny(p.s[p.i:], ":}")
				if j <= 0 {
					return errors.New("gemma4 call: an object key is missing")
				}
				key = strings.TrimSpace(p.s[p.i : p.i+j])
				p.i += j
			}
			if key == "" || p.i >= len(p.s) || p.s[p.i] != ':' {
				return errors.New("gemma4 call: want key:value in an object")
			}
			p.i++
			if n > 0 {
				b.WriteByte(',')
			}
			jsonString(b, key)
			b.WriteByte(':')
			if err := p.value(b, depth+1); err != nil {
				return err
			}
			if done, err := p.next(b, '}', "object"); done || err != nil {
				return err
			}
		}
	case p.s[p.i] == '[':
		if p.open(b, ']') {
			return nil
		}
		for n := 0; ; n++ {
			if n > 0 {
				b.WriteByte(',')
			}
			if err := p.value(b, depth+1); err != nil {
				return err
			}
			if done, err := p.next(b, ']', "list"); done || err != nil {
				return err
			}
		}
	}
	j := p.i
	for j < len(p.s) && strings.IndexByte(",}] \t\r\n", p.s[j]) < 0 {
		j++
	}
	tok := p.s[p.i:j]
	switch tok {
	case "True":
		tok = "true"
	case "False":
		tok = "false"
	case "None":
		tok = "null"
	}
	if tok == "" || !json.Valid([]byte(tok)) || strings.ContainsAny(tok[:1], `"{[`) {
		return errors.New("gemma4 call: bad value " + strings.TrimSpace(p.s[p.i:j]))
	}
	b.WriteString(tok)
	p.i = j
	return nil
}

// jsonString writes s as a JSON string without HTML escaping.
func jsonString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}
