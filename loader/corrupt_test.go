package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// walk is a minimal GGUF walker, independent of the parser, that records
// where each structural field lies so tests can corrupt it.
type walkKV struct {
	key                 string
	keyLenOff, typeOff  int
	vtype               uint32
	strLenOff           int // string values
	elemTypeOff, cntOff int // arrays
	elemType            uint32
	count               uint64
	firstElemOff        int
}

type walkTensor struct {
	name                 string
	nameLenOff, nDimsOff int
	nDims                uint32
	dimOffs              []int
	dims                 []uint64
	typeOff, offOff      int
	typ                  uint32
	offset               uint64
}

type walked struct {
	kvs     []walkKV
	tensors []walkTensor
	infoEnd int
}

func walk(b []byte) (w walked, err error) {
	defer func() {
		if r := recover(); r != nil { // the walker trusts its input; only used on valid files
			err = fmt.Errorf("walker: %v", r)
		}
	}()
	le := binary.LittleEndian
	o := 24
	nT, nKV := le.Uint64(b[8:]), le.Uint64(b[16:])
	// str and u32 read the value at o, returning its offset, and move past it
	str := func() (int, string) {
		at, n := o, int(le.Uint64(b[o:]))
		o += 8 + n
		return at, string(b[at+8 : o])
	}
	u32 := func() (int, uint32) {
		o += 4
		return o - 4, le.Uint32(b[o-4:])
	}
	var skip func(t uint32)
	skip = func(t uint32) {
		switch t {
		case 0, 1, 7:
			o++
		case 2, 3:
			o += 2
		case 4, 5, 6:
			o += 4
		case 10, 11, 12:
			o += 8
		case 8:
			o += 8 + int(le.Uint64(b[o:]))
		case 9:
			et, n := le.Uint32(b[o:]), le.Uint64(b[o+4:])
			o += 12
			for i := uint64(0); i < n; i++ {
				skip(et)
			}
		default:
			panic("bad type")
		}
	}
	for i := uint64(0); i < nKV; i++ {
		var kv walkKV
		kv.keyLenOff, kv.key = str()
		kv.typeOff, kv.vtype = u32()
		switch kv.vtype {
		case 8:
			kv.strLenOff = o
		case 9:
			kv.elemTypeOff, kv.cntOff = o, o+4
			kv.elemType, kv.count = le.Uint32(b[o:]), le.Uint64(b[o+4:])
			kv.firstElemOff = o + 12
		}
		skip(kv.vtype)
		w.kvs = append(w.kvs, kv)
	}
	for i := uint64(0); i < nT; i++ {
		var t walkTensor
		t.nameLenOff, t.name = str()
		t.nDimsOff, t.nDims = u32()
		for d := uint32(0); d < t.nDims; d++ {
			t.dimOffs = append(t.dimOffs, o)
			t.dims = append(t.dims, le.Uint64(b[o:]))
			o += 8
		}
		t.typeOff, t.typ = o, le.Uint32(b[o:])
		t.offOff, t.offset = o+4, le.Uint64(b[o+4:])
		o += 12
		w.tensors = append(w.tensors, t)
	}
	w.infoEnd = o
	return w, nil
}

type mutation struct {
	what string
	off  int
	val  []byte
}

func u32b(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
func u64b(x uint64) []byte { return binary.LittleEndian.AppendUint64(nil, x) }

// mutations lists corruptions of every structural field of b; each must make
// Parse fail.
func mutations(t *testing.T, b []byte) []mutation {
	w, err := walk(b)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	var ms []mutation
	add := func(what string, off int, val []byte) { ms = append(ms, mutation{what, off, val}) }
	for i := 0; i < 4; i++ {
		add(fmt.Sprintf("magic byte %d", i), i, []byte{b[i] ^ 0x20})
	}
	for _, v := range []uint32{0, 1, 4, 0x03000000, math.MaxUint32} {
		add(fmt.Sprintf("version %d", v), 4, u32b(v))
	}
	size := uint64(len(b))
	huge := []uint64{math.MaxUint64, 1 << 63, 1 << 62, size, size / 8}
	nT, nKV := le.Uint64(b[8:]), le.Uint64(b[16:])
	for _, v := range append([]uint64{nT - 1, nT + 1}, huge...) {
		add(fmt.Sprintf("tensor count %d", v), 8, u64b(v))
	}
	for _, v := range append([]uint64{0, nKV - 1, nKV + 1}, huge...) {
		add(fmt.Sprintf("kv count %d", v), 16, u64b(v))
	}
	for _, kv := range w.kvs {
		kl := le.Uint64(b[kv.keyLenOff:])
		for _, v := range append([]uint64{0, kl - 1, kl + 1}, huge...) {
			add(fmt.Sprintf("key %q length %d", kv.key, v), kv.keyLenOff, u64b(v))
		}
		for _, v := range []uint32{13, 99, math.MaxUint32} {
			add(fmt.Sprintf("key %q value type %d", kv.key, v), kv.typeOff, u32b(v))
		}
		switch kv.vtype {
		case 8:
			sl := le.Uint64(b[kv.strLenOff:])
			for _, v := range append([]uint64{sl + 1}, huge...) {
				add(fmt.Sprintf("key %q string length %d", kv.key, v), kv.strLenOff, u64b(v))
			}
		case 9:
			for _, v := range []uint32{9, 13, math.MaxUint32} {
				if v != kv.elemType {
					add(fmt.Sprintf("key %q array element type %d", kv.key, v), kv.elemTypeOff, u32b(v))
				}
			}
			for _, v := range append([]uint64{kv.count + 1}, huge...) {
				add(fmt.Sprintf("key %q array length %d", kv.key, v), kv.cntOff, u64b(v))
			}
			if kv.elemType == 8 && kv.count > 0 {
				sl := le.Uint64(b[kv.firstElemOff:])
				for _, v := range append([]uint64{sl + 1}, huge...) {
					add(fmt.Sprintf("key %q element 0 length %d", kv.key, v), kv.firstElemOff, u64b(v))
				}
			}
		}
	}
	align := uint64(DefaultAlignment)
	for i, tn := range w.tensors {
		nl := le.Uint64(b[tn.nameLenOff:])
		for _, v := range append([]uint64{0, nl + 1}, huge...) {
			add(fmt.Sprintf("tensor %q name length %d", tn.name, v), tn.nameLenOff, u64b(v))
		}
		for _, v := range []uint32{0, 5, tn.nDims + 1, math.MaxUint32} {
			add(fmt.Sprintf("tensor %q n_dims %d", tn.name, v), tn.nDimsOff, u32b(v))
		}
		for d, off := range tn.dimOffs {
			for _, v := range append([]uint64{0, tn.dims[d] * 2, 1 << 63, math.MaxUint64}, huge...) {
				add(fmt.Sprintf("tensor %q ne[%d] = %d", tn.name, d, v), off, u64b(v))
			}
		}
		if tn.typ != 0 {
			// a shorter row than a whole block for quantized types
			add(fmt.Sprintf("tensor %q ne[0]+1", tn.name), tn.dimOffs[0], u64b(tn.dims[0]+1))
		}
		for _, v := range []uint32{4, 5, 10, 16, 31, 99, math.MaxUint32} {
			add(fmt.Sprintf("tensor %q type %d", tn.name, v), tn.typeOff, u32b(v))
		}
		for _, v := range []uint64{tn.offset + 1, tn.offset + align/2, size, math.MaxUint64, 1 << 63, math.MaxUint64 - align + 1} {
			add(fmt.Sprintf("tensor %q offset %d", tn.name, v), tn.offOff, u64b(v))
		}
		if i > 0 {
			add(fmt.Sprintf("tensor %q offset = previous", tn.name), tn.offOff, u64b(w.tensors[i-1].offset))
		}
	}
	return ms
}

func apply(b []byte, m mutation) []byte {
	c := bytes.Clone(b)
	copy(c[m.off:], m.val)
	return c
}

func smallModels(t *testing.T) []string {
	dir := sharedDir(t)
	var out []string
	for _, n := range []string{"stories260K-Q4_0.gguf", "stories260K-Q4_K_M.gguf", "stories260K-F32.gguf", "llama-2-tiny-random-F16.gguf"} {
		out = append(out, filepath.Join(dir, "models", n))
	}
	return out
}

// TestCorruptHeaderFields overwrites every structural field of real files.
func TestCorruptHeaderFields(t *testing.T) {
	for _, path := range smallModels(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ms := mutations(t, b)
		for _, m := range ms {
			// mutate in place and restore: no copy of the whole file per case
			saved := bytes.Clone(b[m.off : m.off+len(m.val)])
			copy(b[m.off:], m.val)
			f, err := Parse(b)
			copy(b[m.off:], saved)
			if err == nil {
				t.Errorf("%s: %s at offset %d: no error (%d tensors)", filepath.Base(path), m.what, m.off, len(f.Tensors))
				continue
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("%s: %s: error %v is not a *FormatError", filepath.Base(path), m.what, err)
			}
		}
		t.Logf("%s: %d corruptions rejected", filepath.Base(path), len(ms))
	}
}

// TestCorruptAlignment corrupts general.alignment in a writer-made file.
func TestCorruptAlignment(t *testing.T) {
	w, _ := buildTestFile(t, 64)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	wk, err := walk(b)
	if err != nil {
		t.Fatal(err)
	}
	var kv *walkKV
	for i := range wk.kvs {
		if wk.kvs[i].key == "general.alignment" {
			kv = &wk.kvs[i]
		}
	}
	if kv == nil || kv.vtype != uint32(TypeUint32) {
		t.Fatal("writer did not store general.alignment as uint32")
	}
	if _, err := Parse(b); err != nil {
		t.Fatal(err)
	}
	valOff := kv.typeOff + 4
	for _, v := range []uint32{0, 3, 48, 96, 1 << 31, 128, math.MaxUint32} {
		if _, err := Parse(apply(b, mutation{off: valOff, val: u32b(v)})); err == nil {
			t.Errorf("alignment %d accepted", v)
		}
	}
	for _, vt := range []ValueType{TypeInt32, TypeFloat32} {
		if _, err := Parse(apply(b, mutation{off: kv.typeOff, val: u32b(uint32(vt))})); err == nil {
			t.Errorf("alignment of type %s accepted", vt)
		}
	}
}

// TestTruncated cuts real files short: at every offset before the data
// section of the smallest model and of a vocabulary, sampled elsewhere.
func TestTruncated(t *testing.T) {
	dir := sharedDir(t)
	files := []string{filepath.Join(dir, "models", "stories260K-Q4_0.gguf"), filepath.Join(dir, "models", "stories260K-F32.gguf"),
		filepath.Join(dir, "vocab", "ggml-vocab-llama-spm.gguf")}
	for fi, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		// The end of the last tensor's data; llama.cpp pads the last tensor, and
		// that trailing padding is optional.
		end := f.DataOffset
		for i := range f.Tensors {
			end = max(end, f.DataOffset+int64(f.Tensors[i].Offset)+f.Tensors[i].Size)
		}
		if len(f.Tensors) == 0 {
			end = int64(len(b))
		}
		var offs []int64
		every := f.DataOffset
		if len(f.Tensors) == 0 || fi > 0 {
			every = 0
		}
		for o := int64(0); o < every; o++ {
			offs = append(offs, o)
		}
		for o := every; o < end; o += 997 {
			offs = append(offs, o)
		}
		offs = append(offs, end-1)
		for _, o := range offs {
			if _, err := Parse(b[:o]); err == nil {
				t.Errorf("%s truncated to %d bytes: no error", filepath.Base(path), o)
			}
		}
		t.Logf("%s: %d truncations rejected", filepath.Base(path), len(offs))
	}
}
