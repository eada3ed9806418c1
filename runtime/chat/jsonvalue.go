package chat

// JSON values for templates: tool definitions and call arguments arrive as
// JSON from the client and go into the Jinja context as Go maps and lists.
// A Go map has no key order, so the order each object had in its JSON text
// is kept aside (keyOrder, keyed by the map's identity while a render may
// use it) and the tojson filter writes objects in that order, as Python's
// json.dumps does with the dicts transformers hands its templates. tojson
// also writes Python's separators (", " and ": "), as transformers' filter
// does; objects a template builds itself are written with sorted keys.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/woolly-llm/woolly/internal/jsonorder"
)

// keyOrder maps a map's identity (reflect pointer) to its keys in JSON order.
var keyOrder sync.Map

// jsonValues converts JSON text into template values, recording the key
// order of every object in reg (released with forget).
type jsonValues struct{ maps []uintptr }

// callArgs is c's arguments as a value ({} when it has none).
func (j *jsonValues) callArgs(c ToolCall) (any, error) {
	if len(c.Arguments) == 0 {
		return map[string]any{}, nil
	}
	v, err := j.decode(c.Arguments)
	if err != nil {
		return nil, fmt.Errorf("tool call %q: arguments: %v", c.Name, err)
	}
	return v, nil
}

// decode converts raw: numbers as int64 when they are integers (float64
// otherwise), objects as maps whose key order is recorded; a repeated key keeps
// its first place and its last value, as Python's json.loads does.
func (j *jsonValues) decode(raw []byte) (any, error) {
	return jsonorder.Decoder{
		Object: func(keys []string, vals []any) (any, error) {
			m := make(map[string]any, len(keys))
			order := make([]string, 0, len(keys))
			for i, k := range keys {
				if _, dup := m[k]; !dup {
					order = append(order, k)
				}
				m[k] = vals[i]
			}
			return j.ordered(m, order...), nil
		},
		Number: func(n json.Number) (any, error) {
			if i, err := n.Int64(); err == nil {
				return i, nil
			}
			return n.Float64()
		},
	}.Decode(raw)
}

// ordered records m's key order (keys, all of m's).
func (j *jsonValues) ordered(m map[string]any, keys ...string) map[string]any {
	p := reflect.ValueOf(m).Pointer()
	keyOrder.Store(p, keys)
	j.maps = append(j.maps, p)
	return m
}

// forget drops the key orders this converter recorded.
func (j *jsonValues) forget() {
	for _, p := range j.maps {
		keyOrder.Delete(p)
	}
	j.maps = nil
}

// pyJSON writes v as Python's json.dumps(v, ensure_ascii=False) with the
// given indent (< 0: none) writes it.
func pyJSON(b *strings.Builder, v any, indent, depth int) error {
	if depth > 200 {
		return errors.New("tojson: value nested too deeply")
	}
	nl := func(d int) {
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*d))
		}
	}
	sep := ", "
	if indent >= 0 {
		sep = ","
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		pyString(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pyFloat(x))
		}
	case *exec.Value:
		return pyJSON(b, x.Interface(), indent, depth)
	case exec.Dict:
		return pyJSON(b, &x, indent, depth)
	case *exec.Dict:
		if len(x.Pairs) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, p := range x.Pairs {
			if i > 0 {
				b.WriteString(sep)
			}
			nl(depth + 1)
			pyString(b, p.Key.String())
			b.WriteString(": ")
			if err := pyJSON(b, p.Value.Interface(), indent, depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		b.WriteByte('}')
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Map:
			if rv.Len() == 0 {
				b.WriteString("{}")
				return nil
			}
			var keys []string
			if o, ok := keyOrder.Load(rv.Pointer()); ok && len(o.([]string)) == rv.Len() {
				keys = o.([]string)
			} else {
				for _, k := range rv.MapKeys() {
					keys = append(keys, fmt.Sprint(k.Interface()))
				}
				sort.Strings(keys)
			}
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteString(sep)
				}
				nl(depth + 1)
				pyString(b, k)
				b.WriteString(": ")
				val := rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key()))
				var iv any
				if val.IsValid() {
					iv = val.Interface()
				}
				if err := pyJSON(b, iv, indent, depth+1); err != nil {
					return err
				}
			}
			nl(depth)
			b.WriteByte('}')
		case reflect.Slice, reflect.Array:
			if rv.Len() == 0 {
				b.WriteString("[]")
				return nil
			}
			b.WriteByte('[')
			for i := 0; i < rv.Len(); i++ {
				if i > 0 {
					b.WriteString(sep)
				}
				nl(depth + 1)
				if err := pyJSON(b, rv.Index(i).Interface(), indent, depth+1); err != nil {
					return err
				}
			}
			nl(depth)
			b.WriteByte(']')
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			b.WriteString(strconv.FormatInt(rv.Int(), 10))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			b.WriteString(strconv.FormatUint(rv.Uint(), 10))
		case reflect.Float32:
			return pyJSON(b, rv.Float(), indent, depth)
		case reflect.String:
			pyString(b, rv.String())
		case reflect.Bool:
			b.WriteString(strconv.FormatBool(rv.Bool()))
		default:
			return fmt.Errorf("tojson: cannot write a %T", v)
		}
	}
	return nil
}

// pyFloat is Python's repr of a finite float: the shortest digits that
// read back as x, in positional notation unless the decimal exponent is
// below -4 or 16 and above (then d.ddde±XX), with ".0" on an integer.
func pyFloat(x float64) string {
	e := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±XX, two exponent digits at least
	_, exp, _ := strings.Cut(e, "e")
	if n, _ := strconv.Atoi(exp); n < -4 || n >= 16 {
		return e
	}
	f := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(f, ".") {
		f += ".0"
	}
	return f
}

// pyString quotes s as json.dumps(ensure_ascii=False).
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// filterToJSON is the tojson filter as transformers defines it for chat
// templates (indent keyword honoured).
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	indent := -1
	for k, v := range params.KwArgs {
		switch k {
		case "indent":
			if !v.IsNil() {
				if !v.IsInteger() {
					return exec.AsValue(errors.New("tojson: indent must be an integer"))
				}
				indent = v.Integer()
			}
		case "ensure_ascii", "separators", "sort_keys":
		default:
			return exec.AsValue(fmt.Errorf("tojson: unexpected keyword %q", k))
		}
	}
	if len(params.Args) > 1 {
		return exec.AsValue(errors.New("tojson: too many arguments"))
	}
	if len(params.Args) == 1 && params.Args[0].IsInteger() {
		indent = params.Args[0].Integer()
	}
	var b strings.Builder
	if err := pyJSON(&b, in.Interface(), indent, 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(b.String())
}
