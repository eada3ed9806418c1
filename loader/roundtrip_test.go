package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/ggml"
)

// allValues is one value of every type, arrays of every element type and
// nested arrays, in a fixed order.
func allValues() []KV {
	return []KV{
		{"t.u8", Value{TypeUint8, uint8(200)}},
		{"t.i8", Value{TypeInt8, int8(-100)}},
		{"t.u16", Value{TypeUint16, uint16(60000)}},
		{"t.i16", Value{TypeInt16, int16(-30000)}},
		{"t.u32", Value{TypeUint32, uint32(4000000000)}},
		{"t.i32", Value{TypeInt32, int32(-2000000000)}},
		{"t.f32", Value{TypeFloat32, float32(1e-5)}},
		{"t.bool.true", Value{TypeBool, true}},
		{"t.bool.false", Value{TypeBool, false}},
		{"t.string", Value{TypeString, "héllo ▁wörld\x00\xff"}},
		{"t.string.empty", Value{TypeString, ""}},
		{"t.u64", Value{TypeUint64, uint64(math.MaxUint64)}},
		{"t.i64", Value{TypeInt64, int64(math.MinInt64)}},
		{"t.f64", Value{TypeFloat64, math.Pi}},
		{"a.u8", Value{TypeArray, Array{TypeUint8, []uint8{0, 1, 255}}}},
		{"a.i8", Value{TypeArray, Array{TypeInt8, []int8{-128, 0, 127}}}},
		{"a.u16", Value{TypeArray, Array{TypeUint16, []uint16{0, 65535}}}},
		{"a.i16", Value{TypeArray, Array{TypeInt16, []int16{-32768, 32767}}}},
		{"a.u32", Value{TypeArray, Array{TypeUint32, []uint32{1, 4294967295}}}},
		{"a.i32", Value{TypeArray, Array{TypeInt32, []int32{-1, 7, math.MaxInt32}}}},
		{"a.f32", Value{TypeArray, Array{TypeFloat32, []float32{-1.5, 0, float32(math.Inf(1))}}}},
		{"a.bool", Value{TypeArray, Array{TypeBool, []bool{true, false, true}}}},
		{"a.string", Value{TypeArray, Array{TypeString, []string{"a", "", "▁b", "<0x0A>"}}}},
		{"a.u64", Value{TypeArray, Array{TypeUint64, []uint64{0, math.MaxUint64}}}},
		{"a.i64", Value{TypeArray, Array{TypeInt64, []int64{math.MinInt64, 5}}}},
		{"a.f64", Value{TypeArray, Array{TypeFloat64, []float64{math.E, math.Copysign(0, -1)}}}},
		{"a.empty", Value{TypeArray, Array{TypeFloat32, []float32{}}}},
		{"a.nested", Value{TypeArray, Array{TypeArray, []Array{
			{TypeString, []string{"x", "yz"}},
			{TypeInt32, []int32{1, 2, 3}},
			{TypeArray, []Array{{TypeUint8, []uint8{9}}, {TypeBool, []bool{}}}},
			{TypeArray, []Array{}},
		}}}},
	}
}

func buildTestFile(t testing.TB, align uint32) (*Writer, map[string][]byte) {
	w := NewWriter()
	w.SetString("general.architecture", "llama")
	if align != 0 {
		w.SetUint32("general.alignment", align)
	}
	for _, kv := range allValues() {
		w.Set(kv.Key, kv.Value)
	}
	data := map[string][]byte{}
	add := func(name string, ty ggml.Type, shape []int64, stream bool) {
		t.Helper()
		ti, err := w.tensorInfo(name, ty, shape)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, ti.Size)
		for i := range b {
			b[i] = byte(i*7 + len(name))
		}
		data[name] = b
		if stream {
			err = w.AddTensorFunc(name, ty, shape, func(out io.Writer) error {
				// write in uneven pieces
				for o := 0; o < len(b); o += 7 {
					if _, err := out.Write(b[o:min(o+7, len(b))]); err != nil {
						return err
					}
				}
				return nil
			})
		} else {
			err = w.AddTensor(name, ty, shape, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	add("norm", ggml.F32, []int64{5}, false)
	add("q4k", ggml.Q4_K, []int64{256, 3}, true)
	add("q6k", ggml.Q6_K, []int64{512, 2, 1}, false)
	add("q5_0", ggml.Q5_0, []int64{64, 3, 2, 1}, true)
	add("bf16", ggml.BF16, []int64{3, 1}, false)
	add("q8_0", ggml.Q8_0, []int64{32}, true)
	return w, data
}

func checkTestFile(t *testing.T, f *File, align uint64, data map[string][]byte) {
	t.Helper()
	want := append([]KV{{"general.architecture", Value{TypeString, "llama"}}}, allValues()...)
	if align != DefaultAlignment {
		want = append(want[:1], append([]KV{{"general.alignment", Value{TypeUint32, uint32(align)}}}, want[1:]...)...)
	}
	if f.Version != 3 || f.Alignment != align {
		t.Errorf("version %d alignment %d, want 3 and %d", f.Version, f.Alignment, align)
	}
	if len(f.KV) != len(want) {
		t.Fatalf("%d KVs, want %d", len(f.KV), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(f.KV[i], want[i]) {
			t.Errorf("KV %d: got %#v, want %#v", i, f.KV[i], want[i])
		}
	}
	names := []string{"norm", "q4k", "q6k", "q5_0", "bf16", "q8_0"}
	if len(f.Tensors) != len(names) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(names))
	}
	if f.DataOffset%int64(align) != 0 {
		t.Errorf("data offset %d not aligned to %d", f.DataOffset, align)
	}
	for i, n := range names {
		ti := &f.Tensors[i]
		if ti.Name != n {
			t.Errorf("tensor %d is %q, want %q", i, ti.Name, n)
		}
		if ti.Offset%align != 0 {
			t.Errorf("tensor %q offset %d not aligned", n, ti.Offset)
		}
		if got := f.Data(ti); !bytes.Equal(got, data[n]) {
			t.Errorf("tensor %q: data differs (%d vs %d bytes)", n, len(got), len(data[n]))
		}
		if p, ok := f.Tensor(n); !ok || p != ti {
			t.Errorf("Tensor(%q) lookup failed", n)
		}
	}
	if ti, _ := f.Tensor("q6k"); !reflect.DeepEqual(ti.Shape, []int64{512, 2, 1}) || ti.Type != ggml.Q6_K || ti.Size != 4*210 {
		t.Errorf("q6k info %+v", ti)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 64, 1} {
		w, data := buildTestFile(t, align)
		var buf bytes.Buffer
		n, err := w.WriteTo(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(buf.Len()) {
			t.Errorf("WriteTo returned %d, wrote %d", n, buf.Len())
		}
		b := buf.Bytes()
		// Header fields checked by hand, independent of the parser.
		if string(b[:4]) != "GGUF" || binary.LittleEndian.Uint32(b[4:]) != 3 ||
			binary.LittleEndian.Uint64(b[8:]) != 6 || binary.LittleEndian.Uint64(b[16:]) != uint64(len(allValues())+1)+btoi(align != 0) {
			t.Fatalf("bad header % x", b[:24])
		}
		f, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		a := uint64(align)
		if a == 0 {
			a = DefaultAlignment
		}
		checkTestFile(t, f, a, data)

		// Same through WriteFile and Open (mmap).
		path := filepath.Join(t.TempDir(), "x.gguf")
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		g, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		checkTestFile(t, g, a, data)
		if g.Path != path || g.Size != int64(len(b)) || !bytes.Equal(g.Bytes(), b) {
			t.Errorf("Open: path %q size %d, file differs from WriteTo output", g.Path, g.Size)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		if g.Data(&g.Tensors[0]) != nil {
			t.Error("Data after Close is not nil")
		}
	}
}

func btoi(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func TestAccessors(t *testing.T) {
	w := NewWriter()
	w.SetString("general.architecture", "qwen2")
	w.SetInt32("neg", -3)
	w.SetUint64("big", math.MaxUint64)
	w.SetUint32("u", 7)
	w.SetFloat32("f", 0.5)
	w.SetFloat64("d", 0.25)
	w.SetBool("b", true)
	w.SetStrings("s", []string{"a", "b"})
	w.SetFloat32s("fs", []float32{1, 2})
	w.SetInt32s("is", []int32{-1, 2})
	w.SetArray("us", Array{TypeUint32, []uint32{1, 2, 3}})
	w.SetArray("u64big", Array{TypeUint32, []uint32{1, math.MaxUint32}})
	w.SetArray("f64s", Array{TypeFloat64, []float64{1.5}})
	w.SetUint32("u", 8) // replaces in place
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "qwen2" {
		t.Errorf("arch %q", f.Architecture())
	}
	if f.KV[3].Key != "u" || len(f.KV) != 13 {
		t.Errorf("Set did not replace in place: %v", f.KV)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	u, ok := f.Uint("u")
	check("Uint(u)", []any{u, ok}, []any{uint64(8), true})
	_, ok = f.Uint("neg")
	check("Uint(neg)", ok, false)
	i, ok := f.Int("neg")
	check("Int(neg)", []any{i, ok}, []any{int64(-3), true})
	_, ok = f.Int("big")
	check("Int(big)", ok, false)
	u, ok = f.Uint("big")
	check("Uint(big)", []any{u, ok}, []any{uint64(math.MaxUint64), true})
	x, ok := f.Float("f")
	check("Float(f)", []any{x, ok}, []any{0.5, true})
	x, ok = f.Float("d")
	check("Float(d)", []any{x, ok}, []any{0.25, true})
	x, ok = f.Float("u")
	check("Float(u)", []any{x, ok}, []any{8.0, true})
	_, ok = f.Float("s")
	check("Float(s)", ok, false)
	bv, ok := f.Bool("b")
	check("Bool", []any{bv, ok}, []any{true, true})
	_, ok = f.Bool("u")
	check("Bool(u)", ok, false)
	_, ok = f.String("u")
	check("String(u)", ok, false)
	ss, ok := f.Strings("s")
	check("Strings", []any{ss, ok}, []any{[]string{"a", "b"}, true})
	_, ok = f.Strings("fs")
	check("Strings(fs)", ok, false)
	fs, ok := f.Float32s("fs")
	check("Float32s", []any{fs, ok}, []any{[]float32{1, 2}, true})
	fs, ok = f.Float32s("f64s")
	check("Float32s(f64s)", []any{fs, ok}, []any{[]float32{1.5}, true})
	is, ok := f.Int32s("is")
	check("Int32s", []any{is, ok}, []any{[]int32{-1, 2}, true})
	is, ok = f.Int32s("us")
	check("Int32s(us)", []any{is, ok}, []any{[]int32{1, 2, 3}, true})
	_, ok = f.Int32s("u64big")
	check("Int32s(overflow)", ok, false)
	_, ok = f.Int32s("s")
	check("Int32s(s)", ok, false)
	_, ok = f.Get("missing")
	check("Get(missing)", ok, false)
	_, ok = f.Tensor("missing")
	check("Tensor(missing)", ok, false)
	if f.Data(&TensorInfo{Offset: 1 << 62, Size: 4}) != nil || f.Data(nil) != nil {
		t.Error("Data of a foreign tensor is not nil")
	}
}

func TestWriterErrors(t *testing.T) {
	cases := map[string]func(w *Writer) error{
		"value type mismatch": func(w *Writer) error { w.Set("k", Value{TypeUint32, int32(1)}); return nil },
		"array type mismatch": func(w *Writer) error { w.SetArray("k", Array{TypeString, []int32{1}}); return nil },
		"nested mismatch": func(w *Writer) error {
			w.SetArray("k", Array{TypeArray, []Array{{TypeInt8, []uint8{1}}}})
			return nil
		},
		"unknown value type": func(w *Writer) error { w.Set("k", Value{13, uint8(1)}); return nil },
		"empty key":          func(w *Writer) error { w.SetUint32("", 1); return nil },
		"alignment type":     func(w *Writer) error { w.SetUint64("general.alignment", 32); return nil },
		"alignment value":    func(w *Writer) error { w.SetUint32("general.alignment", 48); return nil },
		"alignment zero":     func(w *Writer) error { w.SetUint32("general.alignment", 0); return nil },
		"duplicate tensor": func(w *Writer) error {
			w.AddTensor("a", ggml.F32, []int64{1}, make([]byte, 4))
			return w.AddTensor("a", ggml.F32, []int64{1}, make([]byte, 4))
		},
		"bad row length": func(w *Writer) error { return w.AddTensor("a", ggml.Q4_K, []int64{128}, make([]byte, 72)) },
		"zero dim":       func(w *Writer) error { return w.AddTensor("a", ggml.F32, []int64{4, 0}, nil) },
		"five dims":      func(w *Writer) error { return w.AddTensor("a", ggml.F32, []int64{1, 1, 1, 1, 1}, make([]byte, 4)) },
		"unknown type":   func(w *Writer) error { return w.AddTensor("a", ggml.Type(16), []int64{256}, make([]byte, 66)) },
		"long name": func(w *Writer) error {
			return w.AddTensor(strings.Repeat("x", 64), ggml.F32, []int64{1}, make([]byte, 4))
		},
		"row overflow": func(w *Writer) error {
			return w.AddTensorFunc("a", ggml.F32, []int64{1 << 62}, func(io.Writer) error { return nil })
		},
		"size overflow": func(w *Writer) error {
			return w.AddTensorFunc("a", ggml.F16, []int64{1 << 31, 1 << 31}, func(io.Writer) error { return nil })
		},
		"short data": func(w *Writer) error { return w.AddTensor("a", ggml.F32, []int64{2}, make([]byte, 4)) },
		"func short": func(w *Writer) error {
			return w.AddTensorFunc("a", ggml.F32, []int64{2}, func(o io.Writer) error { _, err := o.Write(make([]byte, 4)); return err })
		},
		"func long": func(w *Writer) error {
			return w.AddTensorFunc("a", ggml.F32, []int64{2}, func(o io.Writer) error { _, err := o.Write(make([]byte, 12)); return err })
		},
		"func error": func(w *Writer) error {
			return w.AddTensorFunc("a", ggml.F32, []int64{2}, func(o io.Writer) error { return errors.New("boom") })
		},
	}
	for name, fn := range cases {
		w := NewWriter()
		err := fn(w)
		if err == nil {
			_, err = w.WriteTo(io.Discard)
		}
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// CopyWith copies every value and tensor, applies the edit, and refuses to
// write over its source (by path or through a link).
func TestCopyWith(t *testing.T) {
	dir := t.TempDir()
	w, data := buildTestFile(t, 64)
	src := filepath.Join(dir, "src.gguf")
	if err := w.WriteFile(src); err != nil {
		t.Fatal(err)
	}
	copyOf := func(dst string, edit func(f *File, w *Writer)) *File {
		t.Helper()
		if err := CopyWith(src, dst, edit); err != nil {
			t.Fatal(err)
		}
		f, err := Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	checkTestFile(t, copyOf(filepath.Join(dir, "same.gguf"), func(*File, *Writer) {}), 64, data)
	f := copyOf(filepath.Join(dir, "named.gguf"), func(f *File, w *Writer) {
		if f.Architecture() != "llama" {
			t.Errorf("edit sees architecture %q", f.Architecture())
		}
		w.SetString("general.name", "copied")
	})
	if name, _ := f.String("general.name"); name != "copied" {
		t.Errorf("general.name = %q, want the edit's", name)
	}
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(src, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{src, link, filepath.Join(dir, ".", "src.gguf")} {
		if err := CopyWith(src, out, func(*File, *Writer) {}); err == nil || !strings.Contains(err.Error(), "is the input file") {
			t.Errorf("CopyWith onto %s: err = %v, want a refusal", out, err)
		}
	}
	if err := CopyWith(filepath.Join(dir, "absent.gguf"), filepath.Join(dir, "out.gguf"), func(*File, *Writer) {}); err == nil {
		t.Error("CopyWith from a missing file: no error")
	}
}
