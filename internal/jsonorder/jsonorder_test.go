package jsonorder

import (
	"encoding/json"
	"strings"
	"testing"
)

// pairs records each object as its keys and values in order.
type pairs struct {
	keys []string
	vals []any
}

var keep = Decoder{Object: func(keys []string, vals []any) (any, error) { return pairs{keys, vals}, nil }}

func TestDecodeKeepsOrder(t *testing.T) {
	v, err := keep.Decode([]byte(`{"z": 1, "a": [true, null, "s"], "m": {"y": 2.5, "b": {}}, "z": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := v.(pairs)
	if !ok || strings.Join(p.keys, ",") != "z,a,m,z" {
		t.Fatalf("top object %#v, want keys z,a,m,z", v)
	}
	if n, ok := p.vals[0].(json.Number); !ok || n != "1" {
		t.Errorf("first value %#v, want json.Number 1", p.vals[0])
	}
	arr, ok := p.vals[1].([]any)
	if !ok || len(arr) != 3 || arr[0] != true || arr[1] != nil || arr[2] != "s" {
		t.Errorf("array %#v", p.vals[1])
	}
	inner, ok := p.vals[2].(pairs)
	if !ok || strings.Join(inner.keys, ",") != "y,b" {
		t.Errorf("inner object %#v", p.vals[2])
	}
}

func TestDecodeNumber(t *testing.T) {
	d := keep
	d.Number = func(n json.Number) (any, error) { return n.Float64() }
	v, err := d.Decode([]byte(`[1, -2.5e3]`))
	if err != nil {
		t.Fatal(err)
	}
	if a := v.([]any); a[0] != 1.0 || a[1] != -2500.0 {
		t.Errorf("numbers %#v", a)
	}
}

func TestDecodeErrors(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	for _, in := range []string{``, `{`, `[1,]`, `{"a" 1}`, `{"a": 1} x`, `1 2`, `}`, deep} {
		if v, err := keep.Decode([]byte(in)); err == nil {
			t.Errorf("%.20q: no error (got %#v)", in, v)
		}
	}
}
