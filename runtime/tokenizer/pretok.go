package tokenizer

import (
	"fmt"
	"strings"
	"sync"

	"github.com/dlclark/regexp2"
)

// Pre-tokenization for BPE vocabularies. llama.cpp applies a list of regexes
// in sequence; each one splits every piece left by the previous one further
// (matches and the gaps between them both become pieces). Two well-known
// expressions (GPT-2's and Llama 3's) are implemented by hand in llama.cpp
// and here; the others run on a regex engine. Expressions that use \p{..}
// classes run on a "collapsed" copy of the text in which every non-ASCII code
// point is replaced by one marker character per category, exactly as
// llama.cpp does for std::regex (this also reproduces its quirks, e.g. '~' is
// not a symbol there).

const (
	reGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	reLlama3 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen3.5: qwen2's, with combining marks (\p{M}) counted as letters.
	reQwen35 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// GPT-4o / o200k (gpt-oss, llama4): the form llama.cpp runs, in which the
	// tokenizer.json's letter-case classes are written as lookaheads ("a
	// letter that is not a-z / A-Z"); on the collapsed text every non-ASCII
	// letter therefore counts as both cases.
	reGPT4o = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// preRegexes maps a pre-tokenizer type to llama.cpp's regex list.
var preRegexes = map[string][]string{
	"default": {
		`[\p{P}\$\+<=>\^~\|]+`,
		reGPT2,
		`\p{N}+`,
		`[0-9][0-9][0-9]`,
	},
	"gpt2":   {reGPT2},
	"llama3": {reLlama3},
	"qwen2":  {reQwen2},
	"qwen35": {reQwen35},
	"gpt4o":  {reGPT4o},
	"starcoder": {
		`\p{N}`,
		reGPT2,
	},
	"falcon": {
		"[\\p{P}\\$\\+<=>\\^~\\|`]+",
		reGPT2,
		`[0-9][0-9][0-9]`,
	},
	"deepseek-llm": {
		"[\r\n]",
		"\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1F7Dᾀ-ᾴᾶ-ᾼ\u1FBEῂ-ῄῆ-ῌῐ-\u1FD3ῖ-\u1FDBῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212A-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
		`\s?[!-/:-~！-／：-～‘-‟　-。]+`,
		`\s+$`,
		`[一-龥ࠀ-一가-퟿]+`,
		`\p{N}+`,
	},
	"deepseek-coder": {
		"[\r\n]",
		`\s?\p{L}+`,
		`\s?\p{P}+`,
		`[一-龥ࠀ-一가-퟿]+`,
		`\p{N}`,
	},
	"poro": {
		` ?[^(\s|.,!?…。，、।۔،)]+`,
	},
	// Gemma 4: SentencePiece-style BPE over raw UTF-8 with spaces escaped
	// to U+2581 beforehand; only runs of newlines are split off.
	"gemma4": {"[^\n]+|[\n]+"},
}

// preTypeOf maps tokenizer.ggml.pre to a pre-tokenizer type (llama.cpp's
// table, restricted to the expression lists implemented here) and the
// per-type flags llama.cpp sets with it.
type preInfo struct {
	kind         string
	ignoreMerges bool
	addBOS       bool // default for add_bos when the key is missing
	cleanSpaces  bool
	// rawUTF8: tokens are raw UTF-8 with spaces escaped to U+2581 (no GPT-2
	// byte encoding; byte fallback through "<0xNN>" tokens), BOS always added.
	rawUTF8 bool
}

func lookupPre(pre string) (preInfo, error) {
	switch pre {
	case "", "default":
		return preInfo{kind: "default", cleanSpaces: true}, nil
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2":
		return preInfo{kind: "llama3", ignoreMerges: true, addBOS: true, cleanSpaces: true}, nil
	case "dbrx", "smaug-bpe":
		return preInfo{kind: "llama3", cleanSpaces: true}, nil
	case "glm4", "chatglm-bpe":
		return preInfo{kind: "llama3", cleanSpaces: true}, nil
	case "deepseek-llm":
		return preInfo{kind: "deepseek-llm"}, nil
	case "deepseek-coder":
		return preInfo{kind: "deepseek-coder"}, nil
	case "falcon":
		return preInfo{kind: "falcon", cleanSpaces: true}, nil
	case "mpt", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
		"olmo", "jais", "exaone4", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe":
		return preInfo{kind: "gpt2", cleanSpaces: true}, nil
	case "trillion", "granite-docling":
		return preInfo{kind: "gpt2"}, nil
	case "starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2":
		return preInfo{kind: "starcoder", cleanSpaces: true}, nil
	case "command-r", "smollm":
		return preInfo{kind: "starcoder"}, nil
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open":
		return preInfo{kind: "qwen2"}, nil
	case "qwen35":
		return preInfo{kind: "qwen35"}, nil
	case "gpt-4o", "llama4", "kanana2", "talkie":
		return preInfo{kind: "gpt4o"}, nil
	case "stablelm2", "megrez":
		return preInfo{kind: "qwen2", cleanSpaces: true}, nil
	case "gemma4", "granite-embed-multi-311m":
		return preInfo{kind: "gemma4", cleanSpaces: true, rawUTF8: true, addBOS: true}, nil
	case "poro-chat":
		return preInfo{kind: "poro"}, nil
	case "bloom", "gpt3-finnish":
		return preInfo{kind: "poro", cleanSpaces: true}, nil
	}
	return preInfo{}, fmt.Errorf("tokenizer: unsupported pre-tokenizer type %q", pre)
}

// splitter is one compiled step of a pre-tokenizer.
type splitter struct {
	custom    string // "gpt2", "llama3" or "" (regex)
	collapsed bool   // run on the collapsed text
	re        *regexp2.Regexp
}

type pretokenizer struct {
	steps        []splitter
	needCollapse bool
}

var (
	ucatNames = []string{`\p{N}`, `\p{L}`, `\p{P}`, `\p{M}`, `\p{S}`, `\p{Lu}`, `\p{Ll}`, `\p{Lt}`, `\p{Lm}`, `\p{Lo}`}
	// marker code points for the collapsed text, per category
	ucatMarker = map[cptFlags]rune{flagNumber: 0xD1, flagLetter: 0xD2, flagPunct: 0xD3, flagMark: 0xD4, flagSymbol: 0xD5}
	// what each class expands to in the collapsed expression: its marker and
	// its ASCII members (llama.cpp's table, '~' included nowhere)
	ucatExpand = map[string]string{
		`\p{N}`:  "\u00D1" + `0-9`,
		`\p{L}`:  "\u00D2" + `A-Za-z`,
		`\p{Lu}`: "\u00D2" + `A-Za-z`,
		`\p{Ll}`: "\u00D2" + `A-Za-z`,
		`\p{Lt}`: "\u00D2" + `A-Za-z`,
		`\p{Lm}`: "\u00D2" + `A-Za-z`,
		`\p{Lo}`: "\u00D2" + `A-Za-z`,
		`\p{P}`:  "\u00D3" + `!-#%-*,-/:-;?-@\[-\]_\{\}`,
		`\p{M}`:  "\u00D4",
		`\p{S}`:  "\u00D5" + `\$\+<->^` + "`" + `\|`,
	}
)

func usesUcat(expr string) bool {
	for _, n := range ucatNames {
		if strings.Contains(expr, n) {
			return true
		}
	}
	return false
}

// collapseExpr rewrites \p{..} classes for the collapsed text, like llama.cpp.
func collapseExpr(expr string) (string, error) {
	for _, r := range expr {
		if r >= 128 {
			return "", fmt.Errorf("tokenizer: regex mixes unicode classes and non-ASCII characters: %q", expr)
		}
	}
	var b strings.Builder
	inside := false
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c == '[' && (i == 0 || expr[i-1] != '\\') {
			b.WriteByte('[')
			inside = true
			continue
		}
		if inside && c == ']' && expr[i-1] != '\\' {
			b.WriteByte(']')
			inside = false
			continue
		}
		if c == '\\' && i+3 < len(expr) && expr[i+1] == 'p' && expr[i+2] == '{' {
			if end := strings.IndexByte(expr[i+3:], '}'); end >= 0 && i+3+end <= i+10 {
				pat := expr[i : i+3+end+1]
				if exp, ok := ucatExpand[pat]; ok {
					if !inside {
						b.WriteByte('[')
					}
					b.WriteString(exp)
					if !inside {
						b.WriteByte(']')
					}
					i += 3 + end
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// ECMAScript's '$' (no multiline) only matches at the very end; .NET's also
// matches before a final newline. Use \z for an unescaped '$' outside classes.
func ecmaDollar(expr string) string {
	var b strings.Builder
	inside := false
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '\\' && i+1 < len(expr):
			b.WriteByte(c)
			b.WriteByte(expr[i+1])
			i++
			continue
		case c == '[':
			inside = true
		case c == ']':
			inside = false
		case c == '$' && !inside:
			b.WriteString(`\z`)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

var (
	pretokMu    sync.Mutex
	pretokCache = map[string]*pretokenizer{}
)

// newPretokenizer compiles (once per kind, process-wide) the steps of a kind.
func newPretokenizer(kind string) (*pretokenizer, error) {
	pretokMu.Lock()
	defer pretokMu.Unlock()
	if p, ok := pretokCache[kind]; ok {
		return p, nil
	}
	exprs, ok := preRegexes[kind]
	if !ok {
		return nil, fmt.Errorf("tokenizer: no expressions for pre-tokenizer %q", kind)
	}
	p := &pretokenizer{}
	for _, e := range exprs {
		if usesUcat(e) {
			p.needCollapse = true
		}
	}
	for _, e := range exprs {
		switch e {
		case reGPT2:
			p.steps = append(p.steps, splitter{custom: "gpt2"})
			continue
		case reLlama3:
			p.steps = append(p.steps, splitter{custom: "llama3"})
			continue
		}
		st := splitter{collapsed: usesUcat(e)}
		src := e
		if st.collapsed {
			var err error
			if src, err = collapseExpr(e); err != nil {
				return nil, err
			}
		}
		re, err := regexp2.Compile(ecmaDollar(src), regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: compiling pre-tokenizer regex %q: %w", e, err)
		}
		st.re = re
		p.steps = append(p.steps, st)
	}
	pretokCache[kind] = p
	return p, nil
}

// split returns the pre-tokenized words of text as code point slices.
func (p *pretokenizer) split(text string) ([][]uint32, error) {
	cpts := decodeCpts(text)
	var collapsed, wide []rune
	if p.needCollapse {
		collapsed = make([]rune, len(cpts))
		for i, c := range cpts {
			if c < 128 {
				collapsed[i] = rune(c)
				continue
			}
			in := infoOf(c)
			if in.space {
				collapsed[i] = 0x0B
			} else if m, ok := ucatMarker[in.cat]; ok {
				collapsed[i] = m
			} else {
				collapsed[i] = 0xD0
			}
		}
	}
	offsets := []int{len(cpts)}
	for _, st := range p.steps {
		switch {
		case st.custom == "gpt2":
			offsets = splitGPT2(cpts, offsets)
		case st.custom == "llama3":
			offsets = splitLlama3(cpts, offsets)
		default:
			src := collapsed
			if !st.collapsed {
				if wide == nil {
					wide = make([]rune, len(cpts))
					for i, c := range cpts {
						if c > 0x7f && infoOf(c).space {
							wide[i] = 0x0B
						} else {
							wide[i] = rune(c)
						}
					}
				}
				src = wide
			}
			var err error
			if offsets, err = splitRegex(st.re, src, offsets); err != nil {
				return nil, err
			}
		}
	}
	words := make([][]uint32, 0, len(offsets))
	start := 0
	for _, n := range offsets {
		words = append(words, cpts[start:start+n])
		start += n
	}
	return words, nil
}

// splitRegex splits every piece by the matches of re (std::regex_iterator
// over the piece as a whole input).
func splitRegex(re *regexp2.Regexp, text []rune, offsets []int) ([]int, error) {
	out := make([]int, 0, len(offsets))
	start := 0
	for _, n := range offsets {
		seg := text[start : start+n]
		pos := 0
		m, err := re.FindRunesMatch(seg)
		for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
			if m.Index > pos {
				out = append(out, m.Index-pos)
			}
			if m.Length > 0 {
				out = append(out, m.Length)
			}
			pos = m.Index + m.Length
		}
		if err != nil {
			return nil, fmt.Errorf("tokenizer: pre-tokenizer regex: %w", err)
		}
		if pos < n {
			out = append(out, n-pos)
		}
		start += n
	}
	return out, nil
}

// segment helpers shared by the hand-written splitters
type seg struct {
	cpts     []uint32
	ini, end int
	prevEnd  int
	out      []int
}

const outOfRange = 0xFFFFFFFF

func (s *seg) cpt(p int) uint32 {
	if p >= s.ini && p < s.end {
		return s.cpts[p]
	}
	return outOfRange
}

func (s *seg) info(p int) cptInfo {
	if p >= s.ini && p < s.end {
		return infoOf(s.cpts[p])
	}
	return cptInfo{}
}

func (s *seg) add(end int) int {
	n := end - s.prevEnd
	if n > 0 {
		s.out = append(s.out, n)
	}
	s.prevEnd = end
	return n
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at pos (case-insensitively
// with fold, as Llama 3's (?i:...)), adds its split and returns the next
// position and true; otherwise pos and false.
func (s *seg) contraction(pos int, fold bool) (int, bool) {
	if s.cpt(pos) != '\'' || pos+1 >= s.end {
		return pos, false
	}
	at := func(p int) uint32 {
		if fold {
			return toLower(s.cpt(p))
		}
		return s.cpt(p)
	}
	nx := at(pos + 1)
	if nx == 's' || nx == 't' || nx == 'm' || nx == 'd' {
		return pos + s.add(pos+2), true
	}
	if pos+2 < s.end {
		nn := at(pos + 2)
		if (nx == 'r' && nn == 'e') || (nx == 'v' && nn == 'e') || (nx == 'l' && nn == 'l') {
			return pos + s.add(pos+3), true
		}
	}
	return pos, false
}

// splitPieces runs split on each piece of cpts (offsets: the pieces'
// lengths, in order), with s spanning the piece, and returns the lengths of
// the parts split added.
func splitPieces(cpts []uint32, offsets []int, split func(s *seg)) []int {
	s := &seg{cpts: cpts, out: make([]int, 0, len(offsets))}
	start := 0
	for _, n := range offsets {
		s.ini, s.end, s.prevEnd = start, start+n, start
		start += n
		split(s)
	}
	return s.out
}

// splitGPT2 implements 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with llama.cpp's semantics.
func splitGPT2(cpts []uint32, offsets []int) []int {
	return splitPieces(cpts, offsets, func(s *seg) {
		for pos := s.ini; pos < s.end; {
			if next, ok := s.contraction(pos, false); ok {
				pos = next
				continue
			}
			if next, ok := s.spacedRun(pos, cptInfo.isLetter); ok {
				pos = next
				continue
			}
			if next, ok := s.spacedRun(pos, cptInfo.isNumber); ok {
				pos = next
				continue
			}
			if next, ok := s.spacedRun(pos, cptInfo.isOther); ok {
				pos = next
				continue
			}
			nws := 0
			for s.info(pos + nws).isSpace() {
				nws++
			}
			pos = s.spaceRun(pos, nws)
		}
	})
}

// spacedRun matches ` ?X+` at pos, in telling whether a code point is in X:
// when the code point at pos, or after a space at pos the next one, is in X,
// it adds the split after the run and returns the next position and true;
// otherwise pos and false.
func (s *seg) spacedRun(pos int, in func(cptInfo) bool) (int, bool) {
	end := pos
	if s.cpt(end) == ' ' {
		end++
	}
	if !in(s.info(end)) {
		return pos, false
	}
	for in(s.info(end)) {
		end++
	}
	s.add(end)
	return end, true
}

// spaceRun ends the expressions' last three alternatives at pos, where nws
// whitespace characters start: \s+(?!\S) (all but the last space when a
// non-space follows), \s+, or else one character. It adds the split and
// returns the next position.
func (s *seg) spaceRun(pos, nws int) int {
	switch {
	case nws > 1 && s.cpt(pos+nws) != outOfRange:
		pos += nws - 1
	case nws > 0:
		pos += nws
	default:
		pos++
	}
	s.add(pos)
	return pos
}

// splitLlama3 implements Llama 3's expression with llama.cpp's semantics.
func splitLlama3(cpts []uint32, offsets []int) []int {
	return splitPieces(cpts, offsets, func(s *seg) {
		for pos := s.ini; pos < s.end; {
			c := s.cpt(pos)
			f := s.info(pos)
			if next, ok := s.contraction(pos, true); ok {
				pos = next
				continue
			}
			// [^\r\n\p{L}\p{N}]?\p{L}+
			if !(c == '\r' || c == '\n' || f.isNumber()) {
				if f.isLetter() || s.info(pos+1).isLetter() {
					pos++
					for s.info(pos).isLetter() {
						pos++
					}
					s.add(pos)
					continue
				}
			}
			// \p{N}{1,3}
			if f.isNumber() {
				ini := pos
				for s.info(pos).isNumber() {
					pos++
					if pos-ini >= 3 {
						s.add(pos)
						ini = pos
					}
				}
				s.add(pos)
				continue
			}
			// <space>?[^\s\p{L}\p{N}]+[\r\n]*
			f2 := f
			if c == ' ' {
				f2 = s.info(pos + 1)
			}
			if !(f2.isSpace() || f2.isLetter() || f2.isNumber()) && f.any() {
				if c == ' ' {
					pos++
				}
				for !(f2.isSpace() || f2.isLetter() || f2.isNumber()) && f2.any() {
					pos++
					f2 = s.info(pos)
				}
				c2 := s.cpt(pos)
				for c2 == '\r' || c2 == '\n' {
					pos++
					c2 = s.cpt(pos)
				}
				s.add(pos)
				continue
			}
			nws := 0
			lastRN := 0
			for s.info(pos + nws).isSpace() {
				c2 := s.cpt(pos + nws)
				if c2 == '\r' || c2 == '\n' {
					lastRN = pos + nws + 1
				}
				nws++
			}
			if lastRN > 0 {
				pos = lastRN
				s.add(pos)
				continue
			}
			pos = s.spaceRun(pos, nws)
		}
	})
}
