package chat

import (
	_ "embed"
	"encoding/json"
	"os"
	"testing"
)

//go:embed testdata/templates/gemma4.jinja
var tmplGemma4 string

// TestGemma4Builtin: Gemma 4's published template (testdata/templates,
// from google/gemma-4-31B-it) needs recursive macros, so New falls back to
// the built-in renderer, which gives the template's text for every case of
// testdata/gemma4_renders.json (rendered by Python's jinja2 3.1 with
// trim_blocks and lstrip_blocks, bos "<bos>"; see README there).
func TestGemma4Builtin(t *testing.T) {
	tm := mustNew(t, tmplGemma4, "<bos>", "<eos>")
	if tm.Kind() != "gemma4" || !tm.SupportsThinking() {
		t.Fatalf("Kind %q SupportsThinking %v, want the gemma4 built-in with thinking", tm.Kind(), tm.SupportsThinking())
	}
	cases, bt := gemma4Renders(t, tm, "testdata/gemma4_renders.json", 8)
	// Builtin by name gives the same as the fallback (no thinking switch).
	got, err := bt.Render(cases[0].Msgs, cases[0].AddGen)
	if err != nil || got != cases[0].Want {
		t.Errorf("Builtin: %q, %v; want %q", got, err, cases[0].Want)
	}
}

// TestGemma4ToolRenders: conversations with tool declarations, calls and
// their results, with thinking on and off, render as Gemma 4's own
// template does (testdata/gemma4_tool_renders.json, written by
// scripts/gemma4-tool-renders.py with Python's jinja2 and llama.cpp's one
// adjustment of the gemma4 format).
func TestGemma4ToolRenders(t *testing.T) {
	tm := mustNew(t, tmplGemma4, "<bos>", "<eos>")
	if !tm.SupportsTools() || tm.ToolFormat() != ToolsGemma4 {
		t.Fatalf("SupportsTools %v ToolFormat %q", tm.SupportsTools(), tm.ToolFormat())
	}
	cases, bt := gemma4Renders(t, tm, "testdata/gemma4_tool_renders.json", 10)
	// The built-in by name (llama-server's --chat-template gemma4) takes tools too.
	got, err := bt.RenderOptions(cases[4].Msgs, Options{AddGenerationPrompt: true, Tools: cases[4].Tools})
	if err != nil || got != cases[4].Want {
		t.Errorf("Builtin: %q, %v; want %q", got, err, cases[4].Want)
	}
}

// gemma4Renders checks tm against the n cases of file (renderCases,
// checkRenders) and returns them with the gemma4 built-in by name.
func gemma4Renders(t *testing.T, tm *Template, file string, n int) ([]fileRenderCase, *Template) {
	t.Helper()
	cases := renderCases(t, file, n)
	checkRenders(t, tm, cases)
	bt, err := Builtin("gemma4", "<bos>", "<eos>")
	if err != nil {
		t.Fatal(err)
	}
	return cases, bt
}

// fileRenderCase is one conversation of a render-cases file and the text the
// model's own template gives for it.
type fileRenderCase struct {
	Msgs     []Message         `json:"msgs"`
	Tools    []json.RawMessage `json:"tools"`
	AddGen   bool              `json:"addGen"`
	Thinking *bool             `json:"thinking"`
	Want     string            `json:"want"`
}

// renderCases reads file, which must hold at least min cases.
func renderCases(t *testing.T, file string, min int) []fileRenderCase {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []fileRenderCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < min {
		t.Fatalf("%s: %d cases", file, len(cases))
	}
	return cases
}

// checkRenders renders every case with tm and compares the text.
func checkRenders(t *testing.T, tm *Template, cases []fileRenderCase) {
	t.Helper()
	for i, c := range cases {
		got, err := tm.RenderOptions(c.Msgs, Options{AddGenerationPrompt: c.AddGen, EnableThinking: c.Thinking, Tools: c.Tools})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got != c.Want {
			t.Errorf("case %d:\ngot  %q\nwant %q", i, got, c.Want)
		}
	}
}
