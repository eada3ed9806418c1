// Package tokenizer turns text into token ids and back exactly as llama.cpp
// does, from the tokenizer.* metadata of a GGUF file: SentencePiece-style
// vocabularies (tokenizer.ggml.model = "llama") and byte-level BPE ones
// ("gpt2") with llama.cpp's pre-tokenizers.
package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// GGUF token types (tokenizer.ggml.token_type).
const (
	TypeUndefined   = 0
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// token attributes (llama.cpp's llama_token_attr bits)
const (
	attrUnknown     uint32 = 1 << 0
	attrUnused      uint32 = 1 << 1
	attrNormal      uint32 = 1 << 2
	attrControl     uint32 = 1 << 3
	attrUserDefined uint32 = 1 << 4
	attrByte        uint32 = 1 << 5
	attrLstrip      uint32 = 1 << 7
	attrRstrip      uint32 = 1 << 8
)

// typeAttrs is the attribute of each tokenizer.ggml.token_type value.
var typeAttrs = map[int32]uint32{
	TypeNormal: attrNormal, TypeUnknown: attrUnknown, TypeControl: attrControl,
	TypeUserDefined: attrUserDefined, TypeUnused: attrUnused, TypeByte: attrByte,
}

// Vocab is the tokenizer description read from GGUF metadata. FromGGUF fills
// it from a file; tests and tools may build one by hand and call New.
type Vocab struct {
	Model  string    // tokenizer.ggml.model: "llama" (SPM) or "gpt2" (BPE)
	Pre    string    // tokenizer.ggml.pre ("" = missing)
	Name   string    // general.name (llama.cpp keys a few attribute fixes on it)
	Tokens []string  // tokenizer.ggml.tokens
	Scores []float32 // tokenizer.ggml.scores (nil = all 0)
	Types  []int32   // tokenizer.ggml.token_type (nil = all normal)
	Merges []string  // tokenizer.ggml.merges (BPE)

	// IDs holds the special token ids present in the metadata, keyed by the
	// part of the key after "tokenizer.ggml." ("bos_token_id", "eos_token_id",
	// "eot_token_id", ...). Values out of range are ignored like llama.cpp does.
	IDs map[string]int64
	// Flags holds the boolean keys present ("add_bos_token", "add_eos_token",
	// "add_sep_token", "add_space_prefix").
	Flags map[string]bool
}

const (
	kindSPM = 1
	kindBPE = 2
	kindWPM = 3 // WordPiece (wpm.go)
)

// Tokenizer encodes and decodes text for one vocabulary. It is safe for
// concurrent use.
type Tokenizer struct {
	kind   int
	model  string
	pre    string
	texts  []string
	scores []float32
	attrs  []uint32
	toID   map[string]int32
	ranks  map[mergeKey]int
	pretok *pretokenizer

	bos, eos, eot, eom, unk, sep, pad int32
	fimPre, fimSuf, fimMid            int32
	fimPad, fimRep, fimSep            int32

	addBOS, addEOS, addSpacePrefix bool
	ignoreMerges, cleanSpaces      bool
	addSEP                         bool          // WordPiece: Encode(addSpecial) ends with SEP
	wpmNorm                        wpmNormalizer // WordPiece: lowercase / strip accents
	rawUTF8                        bool          // gemma4 BPE: raw UTF-8 pieces, spaces as U+2581

	eog     map[int32]bool
	special []int32 // control / user-defined / unknown tokens, longest text first
	pieces  [][]byte

	maxTextLen int // the longest token text, in bytes
}

type mergeKey struct{ a, b string }

const null = int32(-1)

// New builds a tokenizer from a vocabulary description.
func New(v *Vocab) (*Tokenizer, error) {
	if v == nil {
		return nil, fmt.Errorf("tokenizer: nil vocabulary")
	}
	t := &Tokenizer{model: v.Model, pre: v.Pre}
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: vocabulary has no tokens (tokenizer.ggml.tokens)")
	}
	if v.Scores != nil && len(v.Scores) < n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) < n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}

	var pi preInfo
	switch v.Model {
	case "llama":
		t.kind = kindSPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addSpacePrefix = true
		t.addBOS = true
	case "gpt2", "gemma4":
		t.kind = kindBPE
		t.bos, t.eos, t.unk = 11, 11, null
		pre := v.Pre
		if v.Model == "gemma4" { // llama.cpp: no default specials, pre-tokenizer gemma4
			t.bos, t.eos, pre = null, null, "gemma4"
			t.pre = pre
		}
		var err error
		if pi, err = lookupPre(pre); err != nil {
			return nil, err
		}
		t.ignoreMerges = pi.ignoreMerges
		t.addBOS = pi.addBOS
		t.cleanSpaces = pi.cleanSpaces
		t.rawUTF8 = pi.rawUTF8
		if v.Pre == "glm4" || v.Pre == "chatglm-bpe" {
			t.bos = null
		}
		if v.Merges == nil {
			return nil, fmt.Errorf("tokenizer: BPE vocabulary without tokenizer.ggml.merges")
		}
		t.ranks = make(map[mergeKey]int, len(v.Merges))
		for i, m := range v.Merges {
			var k mergeKey
			if len(m) > 1 {
				if p := strings.IndexByte(m[1:], ' '); p >= 0 {
					k = mergeKey{m[:p+1], m[p+2:]}
				}
			}
			if _, dup := t.ranks[k]; !dup {
				t.ranks[k] = i
			}
		}
		if t.pretok, err = newPretokenizer(pi.kind); err != nil {
			return nil, err
		}
	case "bert":
		t.kind = kindWPM
	case "":
		return nil, fmt.Errorf("tokenizer: missing tokenizer.ggml.model")
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q (supported: llama, gpt2, gemma4, bert)", v.Model)
	}
	t.eot, t.eom, t.sep, t.pad = null, null, null, null
	if t.kind == kindWPM {
		// llama.cpp's BERT defaults: [CLS] 101 first, [SEP] 102 last,
		// [UNK] 100, [PAD] 0; no EOS; no lowercasing unless the file says.
		t.bos, t.eos, t.unk, t.sep, t.pad = 101, null, 100, 102, 0
		// llama.cpp adds both whenever special tokens are asked for,
		// whatever add_bos_token / add_sep_token say.
		t.addBOS, t.addSEP, t.cleanSpaces = true, true, true
		t.wpmNorm.lowercase = v.Flags["normalizer.lowercase"]
		t.wpmNorm.stripAccents = t.wpmNorm.lowercase
		if b, ok := v.Flags["normalizer.strip_accents"]; ok {
			t.wpmNorm.stripAccents = b
		}
	}
	t.fimPre, t.fimSuf, t.fimMid, t.fimPad, t.fimRep, t.fimSep = null, null, null, null, null, null
	if b, ok := v.Flags["add_space_prefix"]; ok {
		t.addSpacePrefix = b
	}

	t.texts = make([]string, n)
	t.scores = make([]float32, n)
	t.attrs = make([]uint32, n)
	t.toID = make(map[string]int32, n)
	for i, w := range v.Tokens {
		if w == "" {
			w = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if j, dup := t.toID[w]; dup {
			return nil, fmt.Errorf("tokenizer: duplicate token in vocabulary: %q has ids %d and %d", w, j, i)
		}
		t.toID[w] = int32(i)
		t.texts[i] = w
		t.maxTextLen = max(t.maxTextLen, len(w))
		if v.Scores != nil {
			t.scores[i] = v.Scores[i]
		}
		t.attrs[i] = attrNormal
		if v.Types != nil {
			t.attrs[i] = typeAttrs[v.Types[i]] // 0 for an unknown type, as llama.cpp
		}
	}

	// special token ids: defaults out of range are disabled; keys override
	// when in range
	slots := []struct {
		key string
		id  *int32
	}{
		{"bos_token_id", &t.bos}, {"eos_token_id", &t.eos}, {"eot_token_id", &t.eot}, {"eom_token_id", &t.eom},
		{"unknown_token_id", &t.unk}, {"seperator_token_id", &t.sep}, {"padding_token_id", &t.pad},
		{"mask_token_id", nil},
		{"fim_pre_token_id", &t.fimPre}, {"fim_suf_token_id", &t.fimSuf}, {"fim_mid_token_id", &t.fimMid},
		{"fim_pad_token_id", &t.fimPad}, {"fim_rep_token_id", &t.fimRep}, {"fim_sep_token_id", &t.fimSep},
		{"prefix_token_id", &t.fimPre}, {"suffix_token_id", &t.fimSuf}, {"middle_token_id", &t.fimMid},
	}
	for _, s := range slots {
		if s.id == nil {
			continue
		}
		if *s.id >= 0 && int(*s.id) >= n {
			*s.id = null
		}
		if id, ok := v.IDs[s.key]; ok && id >= 0 && id < int64(n) {
			*s.id = int32(id)
		}
	}
	if b, ok := v.Flags["add_bos_token"]; ok && t.kind != kindWPM {
		t.addBOS = b
	}
	if t.rawUTF8 {
		t.addBOS = true // llama.cpp overrides add_bos_token false for Gemma 4
	}
	if b, ok := v.Flags["add_eos_token"]; ok {
		t.addEOS = b
	}
	if t.addBOS && t.bos == null {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set")
	}
	if t.addEOS && t.eos == null {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set")
	}

	t.detectSpecial()

	// special tokens cache: longest text first
	for id := range t.attrs {
		if t.attrs[id]&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(id))
		}
	}
	sort.SliceStable(t.special, func(i, j int) bool {
		return len(t.texts[t.special[i]]) > len(t.texts[t.special[j]])
	})

	t.pieces = make([][]byte, n)
	for id := range t.pieces {
		t.pieces[id] = t.makePiece(int32(id))
	}

	// per-model attribute fixes (phi-3: strip spaces right of special tokens)
	name := strings.ToLower(v.Name)
	if strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		for _, id := range t.special {
			t.attrs[id] |= attrRstrip
		}
		if id, ok := t.toID["</s>"]; ok {
			t.attrs[id] |= attrRstrip
		}
		for _, w := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.toID[w]; ok {
				t.attrs[id] &^= attrRstrip
			}
		}
	}
	return t, nil
}

var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
		"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
		"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
	renderTexts = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// detectSpecial reproduces llama.cpp's text-based detection of EOT/EOM/FIM
// tokens, the control-type overrides it applies, and the EOG set. Where
// llama.cpp walks a hash map (unspecified order), the first text in
// its candidate list wins here (phi-3: "<|end|>" before "<|endoftext|>").
func (t *Tokenizer) detectSpecial() {
	find := func(slot *int32, texts []string) {
		if *slot != null {
			return
		}
		best := null
		for _, w := range texts {
			if id, ok := t.toID[w]; ok {
				best = id
				break
			}
		}
		if best != null {
			*slot = best
			t.attrs[best] |= attrControl
		}
	}
	find(&t.eot, eotTexts)
	find(&t.eom, eomTexts)
	find(&t.fimPre, fimPreTexts)
	find(&t.fimSuf, fimSufTexts)
	find(&t.fimMid, fimMidTexts)
	find(&t.fimPad, fimPadTexts)
	find(&t.fimRep, fimRepTexts)
	find(&t.fimSep, fimSepTexts)

	for id := range t.attrs {
		if t.attrs[id]&attrControl != 0 && strings.Contains(t.texts[id], "unused") {
			t.attrs[id] |= attrUnused
		}
	}

	t.eog = map[int32]bool{}
	for _, id := range []int32{t.fimPad, t.fimRep, t.fimSep} {
		if id != null {
			t.eog[id] = true
		}
	}
	for _, w := range eogTexts {
		if id, ok := t.toID[w]; ok {
			t.eog[id] = true
			t.attrs[id] |= attrControl
		}
	}
	for _, w := range renderTexts {
		if id, ok := t.toID[w]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != null {
			t.eog[id] = true
		}
	}
	// o200k_harmony / solar-open: "<|end|>" is not an end of generation there
	has := func(w string) (int32, bool) {
		id, ok := t.toID[w]
		return id, ok && t.eog[id]
	}
	_, hasReturn := has("<|return|>")
	_, hasCall := has("<|call|>")
	_, hasCalls := has("<|calls|>")
	_, hasFlush := has("<|flush|>")
	endID, hasEnd := has("<|end|>")
	if hasEnd && ((hasReturn && (hasCall || hasCalls)) || ((hasCall || hasCalls) && hasFlush)) {
		delete(t.eog, endID)
		t.attrs[endID] = attrUserDefined
	}
	_, hasToolResp := has("<|tool_response>")
	if sID, hasS := has("</s>"); hasToolResp && hasS {
		delete(t.eog, sID)
		t.attrs[sID] = attrNormal
	}
}

// Model is tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (BPE).
func (t *Tokenizer) Model() string { return t.model }

// Pre is tokenizer.ggml.pre as stored ("" when missing).
func (t *Tokenizer) Pre() string { return t.pre }

// MaxTokenBytes bounds the input bytes one token of Encode stands for: the
// longest token text of the vocabulary (a text is never shorter than the
// input it matches: SentencePiece writes a space as the 3-byte U+2581,
// byte-level BPE a byte as one or two, byte tokens are "<0xNN>"). So text
// of more than n × MaxTokenBytes bytes has more than n tokens, which lets a
// caller refuse it before tokenizing. Whitespace that a special token with
// the lstrip/rstrip attribute absorbs is the one exception (it yields no
// token at all).
func (t *Tokenizer) MaxTokenBytes() int { return t.maxTextLen }

// NumTokens is the vocabulary size.
func (t *Tokenizer) NumTokens() int { return len(t.texts) }

// BOS is the beginning-of-sequence id, -1 if none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence id, -1 if none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT is the end-of-turn id, -1 if none.
func (t *Tokenizer) EOT() int32 { return t.eot }

// AddBOS tells whether Encode(addSpecial=true) prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// SEP is the separator id ([SEP] of WordPiece vocabularies), -1 if none.
func (t *Tokenizer) SEP() int32 { return t.sep }

// AddSEP tells whether Encode(addSpecial=true) appends SEP (WordPiece).
func (t *Tokenizer) AddSEP() bool { return t.addSEP }

// AddEOS tells whether Encode(addSpecial=true) appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// AddSpacePrefix tells whether SPM text gets a leading space.
func (t *Tokenizer) AddSpacePrefix() bool { return t.addSpacePrefix }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and llama.cpp's
// text-detected end tokens such as "<|im_end|>").
func (t *Tokenizer) IsEOG(id int32) bool { return id != null && t.eog[id] }

// EOGs lists the end-of-generation ids in ascending order.
func (t *Tokenizer) EOGs() []int32 {
	out := make([]int32, 0, len(t.eog))
	for id := range t.eog {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TokenText is the vocabulary string of id as stored ("" if out of range).
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.texts) {
		return ""
	}
	return t.texts[id]
}

// IsControl reports whether id is a control (or unknown) token, i.e. one
// llama.cpp renders only when asked for special tokens.
func (t *Tokenizer) IsControl(id int32) bool {
	if id < 0 || int(id) >= len(t.attrs) {
		return false
	}
	return t.attrs[id]&(attrControl|attrUnknown) != 0
}

// ID returns the id of a vocabulary string.
func (t *Tokenizer) ID(text string) (int32, bool) {
	id, ok := t.toID[text]
	return id, ok
}

// FIMTexts returns the texts of the fill-in-the-middle tokens (prefix,
// suffix, middle: tokenizer.ggml.fim_*_token_id, or found by their text as
// llama.cpp does); ok is false unless the model has all three.
func (t *Tokenizer) FIMTexts() (pre, suf, mid string, ok bool) {
	if t.fimPre == null || t.fimSuf == null || t.fimMid == null {
		return "", "", "", false
	}
	return t.TokenText(t.fimPre), t.TokenText(t.fimSuf), t.TokenText(t.fimMid), true
}
