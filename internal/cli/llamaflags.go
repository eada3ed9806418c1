package cli

// llama.cpp's spellings that Woolly takes: the GPU and memory flags a CPU
// engine has no use for (accepted and ignored with one note), and the
// samplers beyond top-k/top-p/min-p (typical-p, mirostat, DRY, XTC).

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/runtime/chat"
	"github.com/woolly-llm/woolly/runtime/gbnf"
	"github.com/woolly-llm/woolly/runtime/grammar"
)

// ignoredFlags are llama.cpp's flags that mean nothing on a CPU engine
// with its own memory handling, by how many values they take: 0 (a
// switch), 1 (always a value), or -1 (an optional on/off/auto).
var ignoredFlags = map[string]int{
	"ngl": 1, "gpu-layers": 1, "n-gpu-layers": 1,
	"b": 1, "batch-size": 1, "ub": 1, "ubatch-size": 1,
	"fa": -1, "flash-attn": -1, "co": -1, "color": -1,
	"mlock": 0, "no-mmap": 0, "mmap": 0, "cnv": 0, "conversation": 0, "jinja": 0,
}

// optionalValues are the values -fa and --color may take.
var optionalValues = map[string]bool{"on": true, "off": true, "auto": true, "true": true, "false": true,
	"1": true, "0": true, "yes": true, "no": true, "enabled": true, "disabled": true}

// stripIgnored removes llama.cpp's GPU/memory flags (and their values) from
// args, up to a "--", and prints one note on w naming what it ignored.
func stripIgnored(w io.Writer, cmd string, args []string) []string {
	var out, gone []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, value, hasValue := "", "", false
		if strings.HasPrefix(a, "-") && a != "-" {
			name = strings.TrimLeft(a, "-")
			if len(a)-len(name) > 2 {
				name = "" // three dashes: not a flag spelling
			}
			if k := strings.IndexByte(name, '='); k >= 0 {
				name, value, hasValue = name[:k], name[k+1:], true
			}
		}
		n, ok := ignoredFlags[name]
		if !ok {
			out = append(out, a)
			continue
		}
		switch {
		case hasValue || n == 0:
		case n == 1 && i+1 < len(args):
			i++
			value = args[i]
		case n == -1 && i+1 < len(args) && optionalValues[strings.ToLower(args[i+1])]:
			i++
			value = args[i]
		}
		if value != "" && !hasValue {
			gone = append(gone, a+" "+value)
		} else {
			gone = append(gone, a)
		}
	}
	if len(gone) > 0 {
		fmt.Fprintf(w, "%s: ignoring %s (GPU and memory settings of llama.cpp; Woolly runs on the CPU and maps the file itself)\n",
			cmd, strings.Join(gone, ", "))
	}
	return out
}

// moreSamplerFlags are llama.cpp's typical-p, mirostat, DRY and XTC flags.
type moreSamplerFlags struct {
	typical, mirLR, mirEnt, dryMult, dryBase, xtcP, xtcT *float64
	mirostat, dryAllowed, dryLastN                       *int
	breakers                                             stringList
}

func addMoreSamplerFlags(fs *flag.FlagSet) *moreSamplerFlags {
	def := runtime.DefaultSamplerOptions()
	m := &moreSamplerFlags{
		typical:    fs.Float64("typical", shortF64(def.TypicalP), "locally typical sampling, in [0, 1] (1: off)"),
		mirostat:   fs.Int("mirostat", def.Mirostat, "Mirostat sampling: 0 off, 1 Mirostat, 2 Mirostat 2.0 (replaces top-k/p, min-p, typical, XTC, penalties and DRY, as in llama.cpp)"),
		mirLR:      fs.Float64("mirostat-lr", shortF64(def.MirostatEta), "Mirostat learning rate, eta"),
		mirEnt:     fs.Float64("mirostat-ent", shortF64(def.MirostatTau), "Mirostat target entropy, tau"),
		dryMult:    fs.Float64("dry-multiplier", 0, "DRY repetition penalty multiplier (0: off)"),
		dryBase:    fs.Float64("dry-base", shortF64(def.DryBase), "DRY penalty base (>= 1)"),
		dryAllowed: fs.Int("dry-allowed-length", def.DryAllowedLength, "DRY: repeats longer than this are penalised"),
		dryLastN:   fs.Int("dry-penalty-last-n", def.DryPenaltyLastN, "DRY: tokens scanned for repeats (-1: all, 0: off)"),
		xtcP:       fs.Float64("xtc-probability", 0, "XTC: chance of removing the top choices at a step, in [0, 1] (0: off)"),
		xtcT:       fs.Float64("xtc-threshold", shortF64(def.XTCThreshold), "XTC: probability a choice needs to be removed, in [0, 1] (> 0.5: off)"),
	}
	fs.Var(&m.breakers, "dry-sequence-breaker", "DRY sequence breaker `string` (repeatable; replaces the defaults \\n : \" *; \"none\": no breakers)")
	fs.Var(fs.Lookup("typical").Value, "typical-p", "same as --typical")
	return m
}

// apply sets the flags' values in o.
func (m *moreSamplerFlags) apply(o *runtime.SamplerOptions) {
	o.TypicalP = float32(*m.typical)
	o.Mirostat, o.MirostatEta, o.MirostatTau = *m.mirostat, float32(*m.mirLR), float32(*m.mirEnt)
	o.DryMultiplier, o.DryBase = float32(*m.dryMult), float32(*m.dryBase)
	o.DryAllowedLength, o.DryPenaltyLastN = *m.dryAllowed, *m.dryLastN
	o.XTCProbability, o.XTCThreshold = float32(*m.xtcP), float32(*m.xtcT)
	if len(m.breakers) > 0 {
		list := []string{}
		for _, b := range m.breakers {
			if b != "none" {
				list = append(list, unescapeBreaker(b))
			}
		}
		o.DryBreakers = &list
	}
}

// unescapeBreaker turns the escapes people type on a command line (\n,
// \t, \\, \") into their characters.
func unescapeBreaker(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, "\"", `\\`, `\`).Replace(s)
}

// moreSamplerFlagNames maps these settings' names to their flags.
var moreSamplerFlagNames = map[string]string{
	"typical_p": "--typical", "mirostat": "--mirostat", "mirostat_eta": "--mirostat-lr",
	"mirostat_tau": "--mirostat-ent", "dry_multiplier": "--dry-multiplier", "dry_base": "--dry-base",
	"dry_allowed_length": "--dry-allowed-length", "dry_penalty_last_n": "--dry-penalty-last-n",
	"dry_sequence_breakers": "--dry-sequence-breaker", "xtc_probability": "--xtc-probability",
	"xtc_threshold": "--xtc-threshold",
}

// templateFlags are --chat-template NAME|TEXT and --chat-template-file FILE:
// the conversation format instead of the GGUF's own template.
type templateFlags struct{ name, file *string }

func addTemplateFlags(fs *flag.FlagSet) *templateFlags {
	return &templateFlags{
		name: fs.String("chat-template", "", "chat format instead of the model's: a built-in `name` ("+strings.Join(chat.BuiltinNames(), ", ")+") or a Jinja template's text"),
		file: fs.String("chat-template-file", "", "read the chat template (Jinja) from `file` instead of the model's"),
	}
}

// template returns the template source to show and the template to use:
// the flags' choice, else the model's src.
func (t *templateFlags) template(fs *flag.FlagSet, src, bos, eos string) (string, *chat.Template, error) {
	if *t.name != "" && *t.file != "" {
		return "", nil, usageError(fs, "--chat-template and --chat-template-file both given: pass one")
	}
	if *t.file != "" {
		b, err := os.ReadFile(*t.file)
		if err != nil {
			return "", nil, fmt.Errorf("--chat-template-file: %w", err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", nil, fmt.Errorf("--chat-template-file %s: the file is empty", *t.file)
		}
		tm, err := chat.New(string(b), bos, eos)
		if err != nil {
			return "", nil, fmt.Errorf("--chat-template-file %s: %w", *t.file, err)
		}
		return string(b), tm, nil
	}
	if n := *t.name; n != "" {
		if slices.Contains(chat.BuiltinNames(), n) {
			tm, err := chat.Builtin(n, bos, eos)
			return "(built-in " + n + ")", tm, err
		}
		if !strings.Contains(n, "{") { // not a template's text: a misspelt name
			return "", nil, usageError(fs, "--chat-template %q: not a built-in name (%s) nor a Jinja template", n, strings.Join(chat.BuiltinNames(), ", "))
		}
		tm, err := chat.New(n, bos, eos)
		if err != nil {
			return "", nil, fmt.Errorf("--chat-template: %w", err)
		}
		return n, tm, nil
	}
	tm, err := chat.New(src, bos, eos)
	return src, tm, err
}

// override is the server's chat template override (server.Config's
// ChatTemplate): a built-in name or a Jinja template's text, "" for none.
// Every problem is a usage error naming the flag, found before any model
// is loaded.
func (t *templateFlags) override(fs *flag.FlagSet) (string, error) {
	if *t.name != "" && *t.file != "" {
		return "", usageError(fs, "--chat-template and --chat-template-file both given: pass one")
	}
	flagName, src := "--chat-template", *t.name
	if *t.file != "" {
		flagName = "--chat-template-file " + *t.file
		b, err := os.ReadFile(*t.file)
		if err != nil {
			return "", usageError(fs, "--chat-template-file: %v", err)
		}
		if strings.TrimSpace(string(b)) == "" {
			return "", usageError(fs, "%s: the file is empty", flagName)
		}
		src = string(b)
	} else if src == "" || slices.Contains(chat.BuiltinNames(), src) {
		return src, nil
	}
	if !strings.Contains(src, "{") {
		if *t.file == "" {
			return "", usageError(fs, "--chat-template %q: not a built-in name (%s) nor a Jinja template", src, strings.Join(chat.BuiltinNames(), ", "))
		}
		return "", usageError(fs, "%s: not a Jinja template", flagName)
	}
	if _, err := chat.New(src, "", ""); err != nil {
		return "", usageError(fs, "%s: %v", flagName, err)
	}
	return src, nil
}

// schemaFlags are llama.cpp's structured-output flags on run: -j/--json-schema
// SCHEMA and -jf/--json-schema-file FILE (the server's JSON-schema
// constraint), and --grammar GBNF / --grammar-file FILE.
type schemaFlags struct{ schema, schemaFile, grammarText, grammarFile *string }

func addSchemaFlags(fs *flag.FlagSet) *schemaFlags {
	s := &schemaFlags{
		schema:      fs.String("json-schema", "", "constrain the output to this JSON `schema` ({} for any JSON object)"),
		schemaFile:  fs.String("json-schema-file", "", "read the JSON schema from `file`"),
		grammarText: fs.String("grammar", "", "constrain the output to this GBNF `grammar` (llama.cpp's format; rule root)"),
		grammarFile: fs.String("grammar-file", "", "read the GBNF grammar from `file`"),
	}
	fs.Var(fs.Lookup("json-schema").Value, "j", "same as --json-schema")
	fs.Var(fs.Lookup("json-schema-file").Value, "jf", "same as --json-schema-file")
	return s
}

// textOrFile is the text given by flag name or read from the file its
// name-file flag gives ("" for neither); both given is a usage error.
func textOrFile(fs *flag.FlagSet, name, text, file string) (string, error) {
	if file == "" {
		return text, nil
	}
	if text != "" {
		return "", usageError(fs, "%s and %s-file both given: pass one", name, name)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s-file: %w", name, err)
	}
	return string(b), nil
}

// gbnf returns the GBNF grammar the flags give (nil: none).
func (s *schemaFlags) gbnf(fs *flag.FlagSet) (*gbnf.Grammar, error) {
	src, err := textOrFile(fs, "--grammar", *s.grammarText, *s.grammarFile)
	if err != nil {
		return nil, err
	}
	name := "--grammar"
	if *s.grammarFile != "" {
		name = "--grammar-file " + *s.grammarFile
	}
	if src == "" {
		return nil, nil
	}
	if *s.schema != "" || *s.schemaFile != "" {
		return nil, usageError(fs, "a GBNF grammar and a JSON schema both given: pass one")
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

// grammar returns the JSON-schema constraint the flags ask for (nil: none).
func (s *schemaFlags) grammar(fs *flag.FlagSet) (*grammar.Grammar, error) {
	src, err := textOrFile(fs, "--json-schema", *s.schema, *s.schemaFile)
	if err != nil {
		return nil, err
	}
	if src == "" {
		return nil, nil
	}
	if strings.TrimSpace(src) == "{}" {
		return grammar.JSONObject(), nil
	}
	g, err := grammar.CompileSchema([]byte(src))
	if err != nil {
		return nil, fmt.Errorf("--json-schema: %w", err)
	}
	return g, nil
}
