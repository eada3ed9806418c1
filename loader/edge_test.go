package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/ggml"
)

func writeBytes(t *testing.T, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hdr builds a GGUF header by hand: magic, version, counts.
func hdr(version uint32, nT, nKV uint64) []byte {
	b := []byte("GGUF")
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, nT)
	return binary.LittleEndian.AppendUint64(b, nKV)
}

func appendStr(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
}

func wantErr(t *testing.T, what string, b []byte, substr string) {
	t.Helper()
	_, err := Parse(b)
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "offset") {
		t.Errorf("%s: error %q does not name an offset", what, err)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Errorf("%s: error %q does not mention %q", what, err, substr)
	}
}

func TestDuplicates(t *testing.T) {
	w := NewWriter()
	w.SetUint32("key.a", 1)
	w.SetUint32("key.b", 2)
	w.AddTensor("ta", ggml.F32, []int64{8}, make([]byte, 32))
	w.AddTensor("tb", ggml.F32, []int64{8}, make([]byte, 32))
	b := writeBytes(t, w)
	if _, err := Parse(b); err != nil {
		t.Fatal(err)
	}
	dupKey := bytes.Replace(b, []byte("key.b"), []byte("key.a"), 1)
	wantErr(t, "duplicate key", dupKey, `duplicate metadata key "key.a"`)
	dupTensor := bytes.Replace(b, []byte("tb"), []byte("ta"), 1)
	wantErr(t, "duplicate tensor", dupTensor, `duplicate tensor name "ta"`)
}

func TestParseEdgeCases(t *testing.T) {
	// Version 2 has the same layout as 3.
	w, _ := buildTestFile(t, 0)
	b := writeBytes(t, w)
	v2 := bytes.Clone(b)
	v2[4] = 2
	if f, err := Parse(v2); err != nil || f.Version != 2 {
		t.Errorf("version 2: %v", err)
	}
	be := bytes.Clone(b)
	binary.BigEndian.PutUint32(be[4:], 3)
	wantErr(t, "big-endian", be, "big-endian")
	wantErr(t, "empty", nil, "too short")
	wantErr(t, "magic only", []byte("GGUF"), "version")

	// An empty file with no tensors and no metadata is valid.
	if f, err := Parse(hdr(3, 0, 0)); err != nil || len(f.KV) != 0 || len(f.Tensors) != 0 {
		t.Errorf("empty GGUF: %v", err)
	}

	kv := func(key string, vt ValueType, val []byte) []byte {
		b := appendStr(hdr(3, 0, 1), key)
		b = binary.LittleEndian.AppendUint32(b, uint32(vt))
		return append(b, val...)
	}
	wantErr(t, "bool 2", kv("k", TypeBool, []byte{2}), `"k": bool byte is 2`)
	wantErr(t, "empty key", kv("", TypeUint64, make([]byte, 8)), "empty")
	wantErr(t, "bool array", kv("k", TypeArray, append(binary.LittleEndian.AppendUint64(
		binary.LittleEndian.AppendUint32(nil, uint32(TypeBool)), 2), 1, 7)), "bool element 1 is 7")

	// MaxArrayDepth+1 levels of arrays (the last one of uint8).
	var nest []byte
	for i := 0; i < MaxArrayDepth; i++ {
		nest = binary.LittleEndian.AppendUint32(nest, uint32(TypeArray))
		nest = binary.LittleEndian.AppendUint64(nest, 1)
	}
	nest = binary.LittleEndian.AppendUint32(nest, uint32(TypeUint8))
	nest = binary.LittleEndian.AppendUint64(nest, 0)
	wantErr(t, "deep nesting", kv("deep", TypeArray, nest), "nested deeper")
	// MaxArrayDepth levels are fine.
	ok := nest[12:]
	if _, err := Parse(kv("deep", TypeArray, ok)); err != nil {
		t.Errorf("nesting %d deep: %v", MaxArrayDepth, err)
	}

	// A string array whose count lies: bounded by the bytes left, no huge allocation.
	lie := binary.LittleEndian.AppendUint32(nil, uint32(TypeString))
	lie = binary.LittleEndian.AppendUint64(lie, 1<<40)
	wantErr(t, "lying string count", kv("tokens", TypeArray, lie), `"tokens": array of 1099511627776 string`)

	tensor := func(name string, dims []uint64, ty uint32, off uint64) []byte {
		b := appendStr(hdr(3, 1, 0), name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(dims)))
		for _, d := range dims {
			b = binary.LittleEndian.AppendUint64(b, d)
		}
		b = binary.LittleEndian.AppendUint32(b, ty)
		b = binary.LittleEndian.AppendUint64(b, off)
		for len(b)%32 != 0 {
			b = append(b, 0)
		}
		return append(b, make([]byte, 1024)...)
	}
	if f, err := Parse(tensor("w", []uint64{256}, 0, 0)); err != nil || f.Tensors[0].Size != 1024 {
		t.Errorf("valid tensor: %v", err)
	}
	junk := tensor("w", []uint64{8}, 0, 0)
	junk[60] = 1 // padding: the tensor info ends at 57, data starts at 64
	wantErr(t, "non-zero padding", junk, "padding")
	wantErr(t, "n_dims 0", tensor("w", nil, 0, 0), `"w": n_dims 0`)
	wantErr(t, "IQ2_XXS", tensor("w", []uint64{256}, 16, 0), "IQ2_XXS (id 16) is not supported")
	if f, err := Parse(tensor("w", []uint64{256}, 10, 0)); err != nil || f.Tensors[0].Size != 84 { // Q2_K
		t.Errorf("Q2_K tensor: %v", err)
	}
	wantErr(t, "row not whole blocks", tensor("w", []uint64{100}, 12, 0), "not a multiple of the block size")
	// MXFP4 (39): 17 bytes per 32; a 3-D expert tensor of 2 x 64 x 3 rows
	if f, err := Parse(tensor("blk.0.ffn_up_exps.weight", []uint64{64, 2, 3}, 39, 0)); err != nil ||
		f.Tensors[0].Size != 6*34 || f.Tensors[0].Type.String() != "MXFP4" {
		t.Errorf("MXFP4 tensor: %v", err)
	}
	wantErr(t, "MXFP4 row not whole blocks", tensor("w", []uint64{48, 2}, 39, 0), "MXFP4: row length 48 is not a multiple of the block size 32")
	wantErr(t, "beyond end", tensor("w", []uint64{257}, 0, 0), "past the end")
	wantErr(t, "misaligned", tensor("w", []uint64{8}, 0, 16), "not a multiple of the alignment")
	wantErr(t, "elements overflow", tensor("w", []uint64{1 << 32, 1 << 32}, 0, 0), "overflows")
	wantErr(t, "long name", tensor(strings.Repeat("n", 64), []uint64{8}, 0, 0), "longer than 63")
}
