// Package ggufinfo renders what a GGUF file holds, as `woolly info` prints
// it: a plain listing for a terminal (Text: the model's summary, every
// metadata key, every tensor; control bytes from the file never reach the
// terminal) and one JSON object (JSON: every key and tensor, long arrays
// summarized).
package ggufinfo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/woolly-llm/woolly/ggml"
	"github.com/woolly-llm/woolly/loader"
)

// maxArray is the longest array printed in full; longer ones become
// {"type": ..., "len": N}.
const maxArray = 16

// maxText is the longest string shown in full in the plain listing (chat
// templates run to kilobytes); JSON always prints them whole.
const maxText = 120

// typeMix counts tensors per type, heaviest type (by bytes) first.
func typeMix(f *loader.File) []typeCount {
	m := map[ggml.Type]*typeCount{}
	var order []ggml.Type
	for i := range f.Tensors {
		t := &f.Tensors[i]
		c, ok := m[t.Type]
		if !ok {
			c = &typeCount{Type: t.Type}
			m[t.Type] = c
			order = append(order, t.Type)
		}
		c.Count++
		c.Bytes += t.Size
	}
	out := make([]typeCount, len(order))
	for i, t := range order {
		out[i] = *m[t]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}

type typeCount struct {
	Type  ggml.Type
	Count int
	Bytes int64
}

func typeMixString(mix []typeCount) string {
	parts := make([]string, len(mix))
	for i, c := range mix {
		parts[i] = fmt.Sprintf("%s: %d", c.Type, c.Count)
	}
	return strings.Join(parts, ", ")
}

func paramCount(f *loader.File) int64 {
	var n int64
	for i := range f.Tensors {
		n += f.Tensors[i].Elements()
	}
	return n
}

// hyperparameters lists the {arch}.* keys in file order with the prefix removed.
func hyperparameters(f *loader.File) []loader.KV {
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

// vocabSize is the length of tokenizer.ggml.tokens (-1 if absent).
func vocabSize(f *loader.File) int {
	v, ok := f.Get("tokenizer.ggml.tokens")
	if !ok {
		return -1
	}
	if a, ok := v.V.(loader.Array); ok {
		return a.Len()
	}
	return -1
}

// field and Object keep JSON object keys in a fixed order.
type field struct {
	Key   string
	Value any
}

// Object is a JSON object whose keys keep their order.
type Object []field

func (o Object) MarshalJSON() ([]byte, error) {
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

// JSON is `woolly info --json`: the file's summary, hyperparameters,
// tokenizer, every metadata key and every tensor, keys in a fixed order.
func JSON(f *loader.File) Object {
	o := Object{
		{"path", f.Path},
		{"file_size", f.Size},
		{"version", f.Version},
		{"alignment", f.Alignment},
		{"data_offset", f.DataOffset},
		{"architecture", f.Architecture()},
	}
	if name, ok := f.String("general.name"); ok {
		o = append(o, field{"name", name})
	}
	if ft, name, ok := f.FileType(); ok {
		o = append(o, field{"file_type", ft})
		if name != "" {
			o = append(o, field{"file_type_name", name})
		}
	}
	o = append(o, field{"n_params", paramCount(f)})
	hyper := Object{}
	for _, kv := range hyperparameters(f) {
		hyper = append(hyper, field{kv.Key, jsonValue(kv.Value)})
	}
	o = append(o, field{"hyperparameters", hyper})
	tok := Object{}
	if m, ok := f.String("tokenizer.ggml.model"); ok {
		tok = append(tok, field{"model", m})
	}
	if p, ok := f.String("tokenizer.ggml.pre"); ok {
		tok = append(tok, field{"pre", p})
	}
	if n := vocabSize(f); n >= 0 {
		tok = append(tok, field{"n_tokens", n})
	}
	o = append(o, field{"tokenizer", tok})
	o = append(o, field{"kv_count", len(f.KV)}, field{"tensor_count", len(f.Tensors)})
	mix := Object{}
	for _, c := range typeMix(f) {
		mix = append(mix, field{c.Type.String(), c.Count})
	}
	o = append(o, field{"type_mix", mix})
	tensors := make([]Object, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		tensors[i] = Object{
			{"name", t.Name},
			{"type", t.Type.String()},
			{"shape", t.Shape},
			{"bytes", t.Size},
			{"data_offset", f.DataOffset + int64(t.Offset)}, // absolute
		}
	}
	o = append(o, field{"tensors", tensors})
	meta := make(Object, len(f.KV))
	for i, kv := range f.KV {
		meta[i] = field{kv.Key, jsonValue(kv.Value)}
	}
	return append(o, field{"metadata", meta})
}

// jsonValue converts a metadata value for JSON: scalars as they are
// (non-finite floats as strings, which JSON cannot hold otherwise), arrays
// of up to 16 elements as JSON arrays, longer ones as {"type","len"}.
func jsonValue(v loader.Value) any {
	switch x := v.V.(type) {
	case float32:
		return jsonFloat(float64(x), 32)
	case float64:
		return jsonFloat(x, 64)
	case loader.Array:
		return jsonArray(x)
	}
	return v.V
}

func jsonFloat(x float64, bitSize int) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, bitSize)
	}
	if bitSize == 32 {
		return float32(x)
	}
	return x
}

func jsonArray(a loader.Array) any {
	n := a.Len()
	if n > maxArray {
		return Object{{"type", a.Elem.String()}, {"len", n}}
	}
	out := make([]any, n)
	for i := range out {
		switch x := a.Index(i).(type) {
		case float32:
			out[i] = jsonFloat(float64(x), 32)
		case float64:
			out[i] = jsonFloat(x, 64)
		case loader.Array:
			out[i] = jsonArray(x)
		default:
			out[i] = x
		}
	}
	return out
}

// textValue formats a value for the plain listing on one line.
func textValue(v loader.Value) string {
	switch x := v.V.(type) {
	case string:
		if len(x) > maxText {
			return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(strings.ToValidUTF8(x[:maxText], "")), len(x))
		}
		return strconv.Quote(x)
	case loader.Array:
		return textArray(x)
	}
	if s, ok := jsonValue(v).(string); ok { // non-finite float
		return s
	}
	return fmt.Sprint(v.V)
}

func textArray(a loader.Array) string {
	if n := a.Len(); n > maxArray {
		return fmt.Sprintf("[%s × %d]", a.Elem, n)
	}
	b, err := json.Marshal(jsonArray(a))
	if err != nil {
		return fmt.Sprintf("[%s × %d]", a.Elem, a.Len())
	}
	return string(b)
}

// keyLabel is a name from the file (a key, a tensor name, the
// architecture) as printed: as it is when it is printable UTF-8, quoted
// otherwise, so that no control byte of a file reaches the terminal and
// every key stays on its line.
func keyLabel(s string) string {
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

// Text is `woolly info`'s plain listing, for a terminal.
func Text(f *loader.File, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("file:\t%s\n", f.Path)
	if len(f.Tensors) > 0 {
		p("size:\t%d bytes (GGUF v%d, alignment %d, data at %d)\n", f.Size, f.Version, f.Alignment, f.DataOffset)
	} else {
		p("size:\t%d bytes (GGUF v%d, alignment %d, no tensor data)\n", f.Size, f.Version, f.Alignment)
	}
	p("architecture:\t%s\n", keyLabel(f.Architecture()))
	if name, ok := f.String("general.name"); ok {
		p("name:\t%s\n", keyLabel(name))
	}
	if ft, name, ok := f.FileType(); ok {
		if name == "" {
			name = "unknown"
		}
		p("file type:\t%s (%d)\n", name, ft)
	}
	p("parameters:\t%d\n", paramCount(f))
	if m, ok := f.String("tokenizer.ggml.model"); ok || vocabSize(f) >= 0 {
		if pre, ok := f.String("tokenizer.ggml.pre"); ok {
			m += " (pre: " + keyLabel(pre) + ")"
		}
		p("tokenizer:\t%s, %d tokens\n", keyLabel(m), max(vocabSize(f), 0))
	}
	if len(f.Tensors) > 0 {
		p("tensors:\t%d (%s)\n", len(f.Tensors), typeMixString(typeMix(f)))
	} else {
		p("tensors:\t0\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if hyper := hyperparameters(f); len(hyper) > 0 {
		fmt.Fprintf(w, "\nhyperparameters (%s.*):\n", keyLabel(f.Architecture()))
		for _, kv := range hyper {
			p("  %s\t%s\n", keyLabel(kv.Key), textValue(kv.Value))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nmetadata (%d keys):\n", len(f.KV))
	for _, kv := range f.KV {
		p("  %s\t%s\t%s\n", keyLabel(kv.Key), kv.Value.Type, textValue(kv.Value))
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
			p("  %s\t%s\t%s\t%d\n", keyLabel(t.Name), t.Type, strings.Join(dims, " x "), t.Size)
		}
	}
	return tw.Flush()
}
