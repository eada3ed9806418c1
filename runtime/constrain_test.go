package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/runtime/grammar"
	"github.com/woolly-llm/woolly/runtime/grammar/schematest"
)

// Constrained generation on real vocabularies with random sampling at a
// high temperature (the shared models are tiny or have random weights, so
// the tokens they favour are arbitrary: a stress test of the masks): every
// output parses, validates against its schema with an independent
// validator, and ends by itself (the document completes) within the
// 512 tokens of context (beyond stories260K's 128: the positions past its
// training only change what it writes). Such models rarely close a
// string, so each schema is tightened first (strings without maxLength get
// one, arrays without maxItems and objects with extra keys without
// maxProperties too): the output must still validate
// against the original. Schemas with free keys (json mode, "any" values,
// additionalProperties) cannot be bounded that way; the byte-level tests of
// runtime/grammar (TestMaskMatchesBruteForce) cover them.
func TestGenerateStructured(t *testing.T) {
	cases, err := schematest.Load()
	if err != nil {
		t.Fatal(err)
	}
	unbounded := map[string]bool{"any-object": true, "additional-typed": true, "additional-true": true,
		"map-of-strings": true, "true-schema": true}
	// The model and the bounds of tighten: stories260K's context is 128 tokens.
	models := []struct {
		name          string
		maxLen, items float64
	}{{"stories260K-Q4_K_M.gguf", 4, 2}, {"synth-qwen3-mini-Q4_K_M.gguf", 8, 3}}
	if testing.Short() {
		models = models[:1]
	}
	for _, mc := range models {
		name := mc.name
		m, err := Load(filepath.Join(sharedDir(t), "models", name), LoadOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		var tokens, docs int
		for _, c := range cases {
			if unbounded[c.Name] {
				continue
			}
			g, err := grammar.CompileSchema(tighten(t, c.Schema, mc.maxLen, mc.items))
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			for _, seed := range []int64{1, 2, 3} {
				var text strings.Builder
				res, err := m.Generate(context.Background(), GenerateOptions{Prompt: "JSON:", MaxTokens: -1, NCtx: 512,
					Grammar: g, Sampler: SamplerOptions{Temperature: 1.5, TopK: 1000, Seed: seed}},
					func(tk Token) error { text.WriteString(tk.Text); return nil })
				if err != nil {
					t.Fatalf("%s %s seed %d: %v", name, c.Name, seed, err)
				}
				tokens += len(res.Tokens)
				if res.StopReason != "stop" {
					t.Errorf("%s %s seed %d: stopped by %s after %d tokens: %q", name, c.Name, seed, res.StopReason, len(res.Tokens), res.Text)
					continue
				}
				if text.String() != res.Text {
					t.Errorf("%s %s seed %d: streamed %q, result %q", name, c.Name, seed, text.String(), res.Text)
				}
				if err := c.Check([]byte(res.Text)); err != nil {
					t.Errorf("%s %s seed %d: %v", name, c.Name, seed, err)
				}
				docs++
			}
		}
		t.Logf("%s: %d valid documents, %d tokens", name, docs, tokens)
		m.Close()
	}
}

// tighten bounds a schema's strings (maxLength) and arrays (maxItems)
// where it does not.
func tighten(t testing.TB, schema []byte, maxLen, items float64) []byte {
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(x any)
	walk = func(x any) {
		switch s := x.(type) {
		case map[string]any:
			typ := fmt.Sprint(s["type"])
			_, isEnum := s["enum"]
			_, isConst := s["const"]
			_, isPattern := s["pattern"]
			_, isFormat := s["format"]
			if strings.Contains(typ, "string") && s["maxLength"] == nil && !isEnum && !isConst {
				n, _ := s["minLength"].(float64)
				if isPattern || isFormat {
					n = max(n, 40) // room for a uuid or a date-time
				}
				s["maxLength"] = max(n, maxLen)
			}
			if m, ok := s["maxItems"].(float64); ok && typ == "array" && m > items && s["minItems"] == nil {
				s["maxItems"] = items
			}
			if ap, ok := s["additionalProperties"]; ok && ap != false && typ == "object" && s["maxProperties"] == nil {
				props, _ := s["properties"].(map[string]any)
				n, _ := s["minProperties"].(float64)
				s["maxProperties"] = max(n, float64(len(props))+items)
			}
			if typ == "array" && s["maxItems"] == nil {
				n, _ := s["minItems"].(float64)
				s["maxItems"] = max(n, items)
			}
			for k, y := range s {
				if k != "enum" && k != "const" {
					walk(y)
				}
			}
		case []any:
			for _, y := range s {
				walk(y)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkGrammarMask measures what constrained sampling adds per token:
// masking the logits and advancing the matcher, on the largest vocabulary
// among the shared models, over documents of a nested schema whose tokens
// are drawn at random from the allowed ones (no forward pass).
//
// The "zod" variant is zod 4's object of the test set (bounded integers,
// patterns, formats, a record), whose strings are matched by automata
// (the general trie walk) rather than the string fast path.
func BenchmarkGrammarMask(b *testing.B) {
	plain := `{"type":"object","properties":{"name":{"type":"string","maxLength":40},
				"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":4},
				"address":{"type":"object","properties":{"street":{"type":"string","maxLength":30},"zip":{"enum":["12345","67890"]}},
				"required":["street","zip"],"additionalProperties":false},"score":{"type":"number"},"ok":{"type":"boolean"}},
				"required":["name","age","tags","address","score","ok"],"additionalProperties":false}`
	cases, err := schematest.Load()
	if err != nil {
		b.Fatal(err)
	}
	var zod []byte
	for _, c := range cases {
		if c.Name == "zod-object" {
			zod = tighten(b, c.Schema, 8, 3)
		}
	}
	for _, name := range []string{"synth-qwen3-mini-Q4_K_M.gguf", "synth-llama-mini-Q4_K_M.gguf"} {
		for _, sc := range []struct{ name, schema string }{{"plain", plain}, {"zod", string(zod)}} {
			b.Run(strings.TrimSuffix(name, ".gguf")+"/"+sc.name, func(b *testing.B) {
				m := loadPath(b, filepath.Join(sharedDir(b), "models", name), LoadOptions{Threads: 1})
				v := m.GrammarVocab()
				g, err := grammar.CompileSchema([]byte(sc.schema))
				if err != nil {
					b.Fatal(err)
				}
				raw := make([]float32, v.Size())
				var logits []float32
				var tm *grammar.TokenMatcher
				seed := uint64(1)
				var spent time.Duration // what Session.Generate adds: maskLogits and Accept
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if tm == nil || tm.Finished() {
						tm = grammar.NewTokenMatcher(g, v)
					}
					t0 := time.Now()
					l, err := maskLogits(tm, raw, &logits)
					if err != nil {
						b.Fatal(err)
					}
					spent += time.Since(t0)
					// a random allowed token (xorshift)
					var allowed []int32
					for j, x := range l {
						if x == 0 {
							allowed = append(allowed, int32(j))
						}
					}
					seed ^= seed << 13
					seed ^= seed >> 7
					seed ^= seed << 17
					t0 = time.Now()
					if err := tm.Accept(allowed[seed%uint64(len(allowed))]); err != nil {
						b.Fatal(err)
					}
					spent += time.Since(t0)
				}
				b.ReportMetric(float64(spent.Microseconds())/float64(b.N), "µs/token")
			})
		}
	}
}
