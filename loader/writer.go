package loader

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/woolly-llm/woolly/ggml"
)

// Writer builds a GGUF v3 file. Metadata keys and tensors are written in
// insertion order; setting an existing key replaces its value in place.
// Problems found by Set* are reported by WriteTo. A Writer is not safe for
// concurrent use.
type Writer struct {
	kv      []KV
	kvIdx   map[string]int
	tensors []wtensor
	tIdx    map[string]int
	err     error
}

type wtensor struct {
	info  TensorInfo
	data  []byte
	write func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{kvIdx: map[string]int{}, tIdx: map[string]int{}}
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// WriterFrom returns a Writer holding f's metadata and tensors, in f's
// order, to be changed and written as a new file (a rewritten copy). The
// tensor data is read from f's mapping when the Writer writes: keep f open
// until then.
func WriterFrom(f *File) (*Writer, error) {
	w := NewWriter()
	for _, kv := range f.KV {
		w.Set(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape, f.Data(ti)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// CopyWith writes dst as a copy of the GGUF file src with the changes edit
// makes to its Writer (a new chat template, a metadata fix, a tensor left
// out); f is src, open while edit runs. dst is written through a temporary
// file renamed at the end, and may not be src.
func CopyWith(src, dst string, edit func(f *File, w *Writer)) error {
	if err := CheckNotSameFile(src, dst); err != nil {
		return err
	}
	f, err := Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := WriterFrom(f)
	if err != nil {
		return err
	}
	edit(f, w)
	return w.WriteFile(dst)
}

// CheckNotSameFile refuses an output that would replace the input: the same
// path once cleaned, or the same file reached another way (a symlink, a
// hard link).
func CheckNotSameFile(inPath, outPath string) error {
	if filepath.Clean(inPath) == filepath.Clean(outPath) {
		return fmt.Errorf("output %s is the input file: write to another path", outPath)
	}
	si, err := os.Stat(inPath)
	if err != nil {
		return err
	}
	so, err := os.Stat(outPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil && os.SameFile(si, so) {
		return fmt.Errorf("output %s is the input file %s (a link to it): write to another path", outPath, inPath)
	}
	return nil
}

// Set stores v under key.
func (w *Writer) Set(key string, v Value) {
	if key == "" {
		w.fail(errors.New("gguf writer: empty metadata key"))
		return
	}
	if err := checkValue(v, 0); err != nil {
		w.fail(fmt.Errorf("gguf writer: metadata %q: %w", key, err))
		return
	}
	if i, ok := w.kvIdx[key]; ok {
		w.kv[i].Value = v
		return
	}
	w.kvIdx[key] = len(w.kv)
	w.kv = append(w.kv, KV{Key: key, Value: v})
}

// SetString stores a string.
func (w *Writer) SetString(key, s string) { w.Set(key, Value{TypeString, s}) }

// SetUint32 stores a uint32.
func (w *Writer) SetUint32(key string, x uint32) { w.Set(key, Value{TypeUint32, x}) }

// SetInt32 stores an int32.
func (w *Writer) SetInt32(key string, x int32) { w.Set(key, Value{TypeInt32, x}) }

// SetUint64 stores a uint64.
func (w *Writer) SetUint64(key string, x uint64) { w.Set(key, Value{TypeUint64, x}) }

// SetInt64 stores an int64.
func (w *Writer) SetInt64(key string, x int64) { w.Set(key, Value{TypeInt64, x}) }

// SetFloat32 stores a float32.
func (w *Writer) SetFloat32(key string, x float32) { w.Set(key, Value{TypeFloat32, x}) }

// SetFloat64 stores a float64.
func (w *Writer) SetFloat64(key string, x float64) { w.Set(key, Value{TypeFloat64, x}) }

// SetBool stores a bool.
func (w *Writer) SetBool(key string, x bool) { w.Set(key, Value{TypeBool, x}) }

// SetStrings stores an array of strings.
func (w *Writer) SetStrings(key string, s []string) { w.SetArray(key, Array{TypeString, s}) }

// SetFloat32s stores an array of float32.
func (w *Writer) SetFloat32s(key string, x []float32) { w.SetArray(key, Array{TypeFloat32, x}) }

// SetInt32s stores an array of int32.
func (w *Writer) SetInt32s(key string, x []int32) { w.SetArray(key, Array{TypeInt32, x}) }

// SetArray stores an array (Values must be the typed slice matching Elem).
func (w *Writer) SetArray(key string, a Array) { w.Set(key, Value{TypeArray, a}) }

// checkValue reports whether v.V has the Go type that v.Type requires.
func checkValue(v Value, depth int) error {
	ok := false
	switch v.Type {
	case TypeUint8:
		_, ok = v.V.(uint8)
	case TypeInt8:
		_, ok = v.V.(int8)
	case TypeUint16:
		_, ok = v.V.(uint16)
	case TypeInt16:
		_, ok = v.V.(int16)
	case TypeUint32:
		_, ok = v.V.(uint32)
	case TypeInt32:
		_, ok = v.V.(int32)
	case TypeFloat32:
		_, ok = v.V.(float32)
	case TypeBool:
		_, ok = v.V.(bool)
	case TypeString:
		_, ok = v.V.(string)
	case TypeUint64:
		_, ok = v.V.(uint64)
	case TypeInt64:
		_, ok = v.V.(int64)
	case TypeFloat64:
		_, ok = v.V.(float64)
	case TypeArray:
		a, isArr := v.V.(Array)
		if !isArr {
			break
		}
		return checkArray(a, depth)
	default:
		return fmt.Errorf("unknown value type %d", uint32(v.Type))
	}
	if !ok {
		return fmt.Errorf("value of Go type %T does not match value type %s", v.V, v.Type)
	}
	return nil
}

func checkArray(a Array, depth int) error {
	if depth >= MaxArrayDepth {
		return fmt.Errorf("arrays nested deeper than %d", MaxArrayDepth)
	}
	ok := false
	switch a.Elem {
	case TypeUint8:
		_, ok = a.Values.([]uint8)
	case TypeInt8:
		_, ok = a.Values.([]int8)
	case TypeUint16:
		_, ok = a.Values.([]uint16)
	case TypeInt16:
		_, ok = a.Values.([]int16)
	case TypeUint32:
		_, ok = a.Values.([]uint32)
	case TypeInt32:
		_, ok = a.Values.([]int32)
	case TypeFloat32:
		_, ok = a.Values.([]float32)
	case TypeBool:
		_, ok = a.Values.([]bool)
	case TypeString:
		_, ok = a.Values.([]string)
	case TypeUint64:
		_, ok = a.Values.([]uint64)
	case TypeInt64:
		_, ok = a.Values.([]int64)
	case TypeFloat64:
		_, ok = a.Values.([]float64)
	case TypeArray:
		sub, isArr := a.Values.([]Array)
		if !isArr {
			break
		}
		for i, s := range sub {
			if err := checkArray(s, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	default:
		return fmt.Errorf("unknown array element type %d", uint32(a.Elem))
	}
	if !ok {
		return fmt.Errorf("array values of Go type %T do not match element type %s", a.Values, a.Elem)
	}
	return nil
}

// tensorInfo validates a tensor description and computes its size.
func (w *Writer) tensorInfo(name string, t ggml.Type, shape []int64) (TensorInfo, error) {
	if name == "" || len(name) > MaxNameLen {
		return TensorInfo{}, fmt.Errorf("gguf writer: tensor name %q must be 1..%d bytes", name, MaxNameLen)
	}
	if _, dup := w.tIdx[name]; dup {
		return TensorInfo{}, fmt.Errorf("gguf writer: duplicate tensor %q", name)
	}
	if !t.Known() {
		return TensorInfo{}, fmt.Errorf("gguf writer: tensor %q: %s", name, t.Unsupported())
	}
	if len(shape) < 1 || len(shape) > MaxDims {
		return TensorInfo{}, fmt.Errorf("gguf writer: tensor %q: %d dimensions, want 1..%d", name, len(shape), MaxDims)
	}
	elems := int64(1)
	for i, d := range shape {
		if d <= 0 || elems > math.MaxInt64/d {
			return TensorInfo{}, fmt.Errorf("gguf writer: tensor %q: bad dimension ne[%d] = %d", name, i, d)
		}
		elems *= d
	}
	rb, err := rowBytes(t, shape[0])
	if err != nil {
		return TensorInfo{}, fmt.Errorf("gguf writer: tensor %q: %w", name, err)
	}
	rows := elems / shape[0]
	if rb > 0 && rows > math.MaxInt64/rb {
		return TensorInfo{}, fmt.Errorf("gguf writer: tensor %q: byte size overflows", name)
	}
	return TensorInfo{Name: name, Type: t, Shape: append([]int64(nil), shape...), Size: rb * rows}, nil
}

// AddTensor adds a tensor whose bytes are data (kept by reference until
// WriteTo; len(data) must be the tensor's byte size).
func (w *Writer) AddTensor(name string, t ggml.Type, shape []int64, data []byte) error {
	ti, err := w.tensorInfo(name, t, shape)
	if err != nil {
		return err
	}
	if int64(len(data)) != ti.Size {
		return fmt.Errorf("gguf writer: tensor %q: %d data bytes, want %d for %s %v", name, len(data), ti.Size, t, shape)
	}
	w.tIdx[name] = len(w.tensors)
	w.tensors = append(w.tensors, wtensor{info: ti, data: data})
	return nil
}

// AddTensorFunc adds a tensor whose bytes are produced at write time by
// write, which must write exactly the tensor's byte size.
func (w *Writer) AddTensorFunc(name string, t ggml.Type, shape []int64, write func(io.Writer) error) error {
	if write == nil {
		return fmt.Errorf("gguf writer: tensor %q: nil write func", name)
	}
	ti, err := w.tensorInfo(name, t, shape)
	if err != nil {
		return err
	}
	w.tIdx[name] = len(w.tensors)
	w.tensors = append(w.tensors, wtensor{info: ti, write: write})
	return nil
}

// alignment is general.alignment if set, else DefaultAlignment.
func (w *Writer) alignment() (uint64, error) {
	i, ok := w.kvIdx["general.alignment"]
	if !ok {
		return DefaultAlignment, nil
	}
	v := w.kv[i].Value
	a, isU32 := v.V.(uint32)
	if v.Type != TypeUint32 || !isU32 {
		return 0, fmt.Errorf("gguf writer: general.alignment must be a uint32, not %s", v.Type)
	}
	if a == 0 || a&(a-1) != 0 {
		return 0, fmt.Errorf("gguf writer: general.alignment %d is not a non-zero power of two", a)
	}
	return uint64(a), nil
}

// header encodes the header, metadata and tensor infos padded to the
// alignment, and sets each tensor's offset relative to the data section.
func (w *Writer) header() ([]byte, uint64, error) {
	if w.err != nil {
		return nil, 0, w.err
	}
	align, err := w.alignment()
	if err != nil {
		return nil, 0, err
	}
	var h bytes.Buffer
	h.WriteString(Magic)
	put32(&h, 3)
	put64(&h, uint64(len(w.tensors)))
	put64(&h, uint64(len(w.kv)))
	for _, kv := range w.kv {
		putString(&h, kv.Key)
		put32(&h, uint32(kv.Value.Type))
		encodeValue(&h, kv.Value)
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		putString(&h, t.Name)
		put32(&h, uint32(len(t.Shape)))
		for _, d := range t.Shape {
			put64(&h, uint64(d))
		}
		put32(&h, uint32(t.Type))
		put64(&h, t.Offset)
		off = alignUp(off+uint64(t.Size), align)
	}
	// The data section starts aligned. A file without tensors has no data
	// section and ends after its metadata (as llama.cpp's vocab files do).
	if len(w.tensors) > 0 {
		h.Write(make([]byte, alignUp(uint64(h.Len()), align)-uint64(h.Len())))
	}
	return h.Bytes(), align, nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// WriteTo writes the GGUF file to out and returns the number of bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	hdr, align, err := w.header()
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: out}
	bw := bufio.NewWriterSize(cw, 1<<20)
	if _, err := bw.Write(hdr); err != nil {
		return cw.n, err
	}
	var zeros [256]byte
	for i := range w.tensors {
		t := &w.tensors[i]
		if t.write != nil {
			lw := &limitWriter{w: bw, left: t.info.Size}
			if err := t.write(lw); err != nil {
				return cw.n, fmt.Errorf("gguf writer: tensor %q: %w", t.info.Name, err)
			}
			if lw.err != nil {
				return cw.n, fmt.Errorf("gguf writer: tensor %q: %w", t.info.Name, lw.err)
			}
			if lw.left != 0 {
				return cw.n, fmt.Errorf("gguf writer: tensor %q: write func wrote %d bytes, want %d", t.info.Name, t.info.Size-lw.left, t.info.Size)
			}
		} else if _, err := bw.Write(t.data); err != nil {
			return cw.n, err
		}
		pad := alignUp(uint64(t.info.Size), align) - uint64(t.info.Size)
		for pad > 0 {
			n := min(pad, uint64(len(zeros)))
			if _, err := bw.Write(zeros[:n]); err != nil {
				return cw.n, err
			}
			pad -= n
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// WriteFile writes the file to path atomically (a temporary file in the same
// directory renamed into place).
func (w *Writer) WriteFile(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = w.WriteTo(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// limitWriter refuses to write more than left bytes.
type limitWriter struct {
	w    io.Writer
	left int64
	err  error
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.left {
		l.err = fmt.Errorf("write func wrote more than the tensor's size")
		return 0, l.err
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}

func put32(b *bytes.Buffer, x uint32) {
	b.Write(binary.LittleEndian.AppendUint32(b.AvailableBuffer(), x))
}

func put64(b *bytes.Buffer, x uint64) {
	b.Write(binary.LittleEndian.AppendUint64(b.AvailableBuffer(), x))
}
func putString(b *bytes.Buffer, s string) {
	put64(b, uint64(len(s)))
	b.WriteString(s)
}

// encodeValue writes a value already checked by checkValue.
func encodeValue(b *bytes.Buffer, v Value) {
	switch x := v.V.(type) {
	case string:
		putString(b, x)
	case Array:
		encodeArray(b, x)
	default:
		// A number or a bool: binary.Write lays it out as GGUF stores it
		// (little-endian, IEEE 754 floats, a bool as one byte 0 or 1).
		writeFixed(b, x)
	}
}

func encodeArray(b *bytes.Buffer, a Array) {
	put32(b, uint32(a.Elem))
	put64(b, uint64(a.Len()))
	switch vs := a.Values.(type) {
	case []uint8:
		b.Write(vs)
	case []string:
		for _, s := range vs {
			putString(b, s)
		}
	case []Array:
		for _, s := range vs {
			encodeArray(b, s)
		}
	default:
		writeFixed(b, vs) // numbers or bools, element by element as encodeValue
	}
}

// writeFixed writes a fixed-size value or slice of them little-endian.
// binary.Write fails only on a type that is not fixed-size, which
// checkValue has refused before; writing to a bytes.Buffer cannot fail.
func writeFixed(b *bytes.Buffer, v any) {
	_ = binary.Write(b, binary.LittleEndian, v)
}
