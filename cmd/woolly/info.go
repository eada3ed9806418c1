package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// infoMaxArray is the longest array printed in full; longer ones become
// {"type": ..., "len": N}.
const infoMaxArray = 16

// infoMaxText is the longest string shown in full in the plain listing
// (chat templates run to kilobytes); --json always prints them whole.
const infoMaxText = 120

func runInfo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("info", stderr, "usage: woolly info [--json] MODEL   (or -m MODEL)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	model := fs.String("m", "", "GGUF model `path`")
	// Flags may come before or after the model path.
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	path := *model
	switch {
	case len(pos) > 1 || (len(pos) == 1 && path != "" && pos[0] != path):
		return fmt.Errorf("expected one model path, got %q", append(pos, path))
	case len(pos) == 1:
		path = pos[0]
	case path == "":
		fs.Usage()
		return errUsage
	}

	f, err := loader.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if *asJSON {
		b, err := json.Marshal(infoJSON(f))
		if err != nil {
			return err
		}
		b = append(b, '\n')
		_, err = stdout.Write(b)
		return err
	}
	return infoText(f, stdout)
}

// infoTypeMix counts tensors per type, heaviest type (by bytes) first.
func infoTypeMix(f *loader.File) []infoTypeCount {
	m := map[kernels.Type]*infoTypeCount{}
	var order []kernels.Type
	for i := range f.Tensors {
		t := &f.Tensors[i]
		c, ok := m[t.Type]
		if !ok {
			c = &infoTypeCount{Type: t.Type}
			m[t.Type] = c
			order = append(order, t.Type)
		}
		c.Count++
		c.Bytes += t.Size
	}
	out := make([]infoTypeCount, len(order))
	for i, t := range order {
		out[i] = *m[t]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}

type infoTypeCount struct {
	Type  kernels.Type
	Count int
	Bytes int64
}

func infoTypeMixString(mix []infoTypeCount) string {
	parts := make([]string, len(mix))
	for i, c := range mix {
		parts[i] = fmt.Sprintf("%s: %d", c.Type, c.Count)
	}
	return strings.Join(parts, ", ")
}

func infoParams(f *loader.File) int64 {
	var n int64
	for i := range f.Tensors {
		n += f.Tensors[i].Elements()
	}
	return n
}

// infoHyper lists the {arch}.* keys in file order with the prefix removed.
func infoHyper(f *loader.File) []loader.KV {
	arch := f.Architecture()
	if arch == "" {
		return nil
	}
	var out []loader.KV
	for _, kv := range f.KV {
		if rest, ok := strings.CutPrefix(kv.Key, arch+"."); ok {
			out = append(out, loader.KV{Key: rest, Value: kv.Value})
		}
	}
	return out
}

// infoVocabSize is the length of tokenizer.ggml.tokens (-1 if absent).
func infoVocabSize(f *loader.File) int {
	v, ok := f.Get("tokenizer.ggml.tokens")
	if !ok {
		return -1
	}
	if a, ok := v.V.(loader.Array); ok {
		return a.Len()
	}
	return -1
}

// infoField and infoObject keep JSON object keys in a fixed order.
type infoField struct {
	Key   string
	Value any
}

type infoObject []infoField

func (o infoObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, fld := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(fld.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(fld.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fld.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func infoJSON(f *loader.File) infoObject {
	o := infoObject{
		{"path", f.Path},
		{"file_size", f.Size},
		{"version", f.Version},
		{"alignment", f.Alignment},
		{"data_offset", f.DataOffset},
		{"architecture", f.Architecture()},
	}
	if name, ok := f.String("general.name"); ok {
		o = append(o, infoField{"name", name})
	}
	if ft, name, ok := f.FileType(); ok {
		o = append(o, infoField{"file_type", ft})
		if name != "" {
			o = append(o, infoField{"file_type_name", name})
		}
	}
	o = append(o, infoField{"n_params", infoParams(f)})
	hyper := infoObject{}
	for _, kv := range infoHyper(f) {
		hyper = append(hyper, infoField{kv.Key, infoJSONValue(kv.Value)})
	}
	o = append(o, infoField{"hyperparameters", hyper})
	tok := infoObject{}
	if m, ok := f.String("tokenizer.ggml.model"); ok {
		tok = append(tok, infoField{"model", m})
	}
	if p, ok := f.String("tokenizer.ggml.pre"); ok {
		tok = append(tok, infoField{"pre", p})
	}
	if n := infoVocabSize(f); n >= 0 {
		tok = append(tok, infoField{"n_tokens", n})
	}
	o = append(o, infoField{"tokenizer", tok})
	o = append(o, infoField{"kv_count", len(f.KV)}, infoField{"tensor_count", len(f.Tensors)})
	mix := infoObject{}
	for _, c := range infoTypeMix(f) {
		mix = append(mix, infoField{c.Type.String(), c.Count})
	}
	o = append(o, infoField{"type_mix", mix})
	tensors := make([]infoObject, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		tensors[i] = infoObject{
			{"name", t.Name},
			{"type", t.Type.String()},
			{"shape", t.Shape},
			{"bytes", t.Size},
			{"data_offset", f.DataOffset + int64(t.Offset)}, // absolute
		}
	}
	o = append(o, infoField{"tensors", tensors})
	meta := make(infoObject, len(f.KV))
	for i, kv := range f.KV {
		meta[i] = infoField{kv.Key, infoJSONValue(kv.Value)}
	}
	return append(o, infoField{"metadata", meta})
}

// infoJSONValue converts a metadata value for JSON: scalars as they are
// (non-finite floats as strings, which JSON cannot hold otherwise), arrays
// of up to 16 elements as JSON arrays, longer ones as {"type","len"}.
func infoJSONValue(v loader.Value) any {
	switch x := v.V.(type) {
	case float32:
		return infoFloat(float64(x), 32)
	case float64:
		return infoFloat(x, 64)
	case loader.Array:
		return infoJSONArray(x)
	}
	return v.V
}

func infoFloat(x float64, bitSize int) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, bitSize)
	}
	if bitSize == 32 {
		return float32(x)
	}
	return x
}

func infoJSONArray(a loader.Array) any {
	n := a.Len()
	if n > infoMaxArray {
		return infoObject{{"type", a.Elem.String()}, {"len", n}}
	}
	out := make([]any, n)
	for i := range out {
		switch x := a.Index(i).(type) {
		case float32:
			out[i] = infoFloat(float64(x), 32)
		case float64:
			out[i] = infoFloat(x, 64)
		case loader.Array:
			out[i] = infoJSONArray(x)
		default:
			out[i] = x
		}
	}
	return out
}

// infoTextValue formats a value for the plain listing on one line.
func infoTextValue(v loader.Value) string {
	switch x := v.V.(type) {
	case string:
		if len(x) > infoMaxText {
			return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(strings.ToValidUTF8(x[:infoMaxText], "")), len(x))
		}
		return strconv.Quote(x)
	case loader.Array:
		return infoTextArray(x)
	}
	if s, ok := infoJSONValue(v).(string); ok { // non-finite float
		return s
	}
	return fmt.Sprint(v.V)
}

func infoTextArray(a loader.Array) string {
	if n := a.Len(); n > infoMaxArray {
		return fmt.Sprintf("[%s × %d]", a.Elem, n)
	}
	b, err := json.Marshal(infoJSONArray(a))
	if err != nil {
		return fmt.Sprintf("[%s × %d]", a.Elem, a.Len())
	}
	return string(b)
}

// infoLabel is a name from the file (a key, a tensor name, the
// architecture) as printed: as it is when it is printable UTF-8, quoted
// otherwise, so that no control byte of a file reaches the terminal and
// every key stays on its line.
func infoLabel(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func infoText(f *loader.File, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("file:\t%s\n", f.Path)
	if len(f.Tensors) > 0 {
		p("size:\t%d bytes (GGUF v%d, alignment %d, data at %d)\n", f.Size, f.Version, f.Alignment, f.DataOffset)
	} else {
		p("size:\t%d bytes (GGUF v%d, alignment %d, no tensor data)\n", f.Size, f.Version, f.Alignment)
	}
	p("architecture:\t%s\n", infoLabel(f.Architecture()))
	if name, ok := f.String("general.name"); ok {
		p("name:\t%s\n", infoLabel(name))
	}
	if ft, name, ok := f.FileType(); ok {
		if name == "" {
			name = "unknown"
		}
		p("file type:\t%s (%d)\n", name, ft)
	}
	p("parameters:\t%d\n", infoParams(f))
	if m, ok := f.String("tokenizer.ggml.model"); ok || infoVocabSize(f) >= 0 {
		if pre, ok := f.String("tokenizer.ggml.pre"); ok {
			m += " (pre: " + infoLabel(pre) + ")"
		}
		p("tokenizer:\t%s, %d tokens\n", infoLabel(m), max(infoVocabSize(f), 0))
	}
	if len(f.Tensors) > 0 {
		p("tensors:\t%d (%s)\n", len(f.Tensors), infoTypeMixString(infoTypeMix(f)))
	} else {
		p("tensors:\t0\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if hyper := infoHyper(f); len(hyper) > 0 {
		fmt.Fprintf(w, "\nhyperparameters (%s.*):\n", infoLabel(f.Architecture()))
		for _, kv := range hyper {
			p("  %s\t%s\n", infoLabel(kv.Key), infoTextValue(kv.Value))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nmetadata (%d keys):\n", len(f.KV))
	for _, kv := range f.KV {
		p("  %s\t%s\t%s\n", infoLabel(kv.Key), kv.Value.Type, infoTextValue(kv.Value))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(f.Tensors) > 0 {
		fmt.Fprintf(w, "\ntensors:\n")
		p("  NAME\tTYPE\tSHAPE\tBYTES\n")
		for i := range f.Tensors {
			t := &f.Tensors[i]
			dims := make([]string, len(t.Shape))
			for j, d := range t.Shape {
				dims[j] = strconv.FormatInt(d, 10)
			}
			p("  %s\t%s\t%s\t%d\n", infoLabel(t.Name), t.Type, strings.Join(dims, " x "), t.Size)
		}
	}
	return tw.Flush()
}
