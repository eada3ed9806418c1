package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/woolly-llm/woolly/loader"
)

// infoOf writes w's file and returns what `woolly info [flags] FILE`
// prints for it, failing the test on a nonzero exit.
func infoOf(t *testing.T, w *loader.Writer, flags ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "info.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := realMain(append(append([]string{"info"}, flags...), path), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out.String()
}

// Short metadata arrays of every element type, and a nested one, appear in
// `info --json` element by element (floats as their shortest text).
func TestInfoJSONShortArrays(t *testing.T) {
	w := loader.NewWriter()
	w.SetString("general.architecture", "llama")
	arr := func(e loader.ValueType, vs any) loader.Value {
		return loader.Value{Type: loader.TypeArray, V: loader.Array{Elem: e, Values: vs}}
	}
	w.Set("a.u8", arr(loader.TypeUint8, []uint8{1, 255}))
	w.Set("a.i8", arr(loader.TypeInt8, []int8{-3, 4}))
	w.Set("a.u16", arr(loader.TypeUint16, []uint16{65535}))
	w.Set("a.i16", arr(loader.TypeInt16, []int16{-32768}))
	w.Set("a.u32", arr(loader.TypeUint32, []uint32{7}))
	w.Set("a.i32", arr(loader.TypeInt32, []int32{-7, 8}))
	w.Set("a.f32", arr(loader.TypeFloat32, []float32{0.1, -2}))
	w.Set("a.bool", arr(loader.TypeBool, []bool{true, false}))
	w.Set("a.str", arr(loader.TypeString, []string{"x", "yz"}))
	w.Set("a.u64", arr(loader.TypeUint64, []uint64{1 << 40}))
	w.Set("a.i64", arr(loader.TypeInt64, []int64{-1 << 40}))
	w.Set("a.f64", arr(loader.TypeFloat64, []float64{0.25}))
	w.Set("a.nested", arr(loader.TypeArray, []loader.Array{
		{Elem: loader.TypeInt32, Values: []int32{1, 2}},
		{Elem: loader.TypeString, Values: []string{"q"}},
	}))
	var got struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(infoOf(t, w, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a.u8": `[1,255]`, "a.i8": `[-3,4]`, "a.u16": `[65535]`, "a.i16": `[-32768]`,
		"a.u32": `[7]`, "a.i32": `[-7,8]`, "a.f32": `[0.1,-2]`, "a.bool": `[true,false]`,
		"a.str": `["x","yz"]`, "a.u64": `[1099511627776]`, "a.i64": `[-1099511627776]`,
		"a.f64": `[0.25]`, "a.nested": `[[1,2],["q"]]`,
	}
	for k, v := range want {
		var g bytes.Buffer
		if err := json.Compact(&g, got.Metadata[k]); err != nil {
			t.Fatalf("%s: %v (%s)", k, err, got.Metadata[k])
		}
		if g.String() != v {
			t.Errorf("%s = %s, want %s", k, g.String(), v)
		}
	}
}
