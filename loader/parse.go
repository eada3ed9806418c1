package loader

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"sort"

	"github.com/woolly-llm/woolly/ggml"
)

var le = binary.LittleEndian

// Parse parses a GGUF file held in memory. The File refers to b (tensor data
// is not copied); b must not be modified while the File is in use.
func Parse(b []byte) (*File, error) {
	p := &parser{b: b}
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	return f, nil
}

type parser struct {
	b   []byte
	off int // next byte to read
}

// FormatError is a structural problem in a GGUF file.
type FormatError struct {
	Offset int64  // absolute byte offset of the bad field
	Msg    string // what is wrong, naming the key or tensor
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: offset %d: %s", e.Offset, e.Msg)
}

func (p *parser) errAt(off int, format string, args ...any) error {
	return &FormatError{Offset: int64(off), Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) left() int { return len(p.b) - p.off }

// need fails unless n more bytes are available.
func (p *parser) need(n uint64, what string) error {
	if n > uint64(p.left()) {
		return p.errAt(p.off, "%s: needs %d bytes, only %d left in the file", what, n, p.left())
	}
	return nil
}

func (p *parser) u32(what string) (uint32, error) { return readLE[uint32](p, what) }
func (p *parser) u64(what string) (uint64, error) { return readLE[uint64](p, what) }

// readLE reads a little-endian unsigned integer of T's size.
func readLE[T uint32 | uint64](p *parser, what string) (T, error) {
	var v T
	n := binary.Size(v)
	if err := p.need(uint64(n), what); err != nil {
		return 0, err
	}
	if n == 4 {
		v = T(le.Uint32(p.b[p.off:]))
	} else {
		v = T(le.Uint64(p.b[p.off:]))
	}
	p.off += n
	return v, nil
}

// checked reads a value with read and then fails, at the value's offset,
// with what check says is wrong with it ("" for nothing).
func checked[T any](p *parser, read func(what string) (T, error), what string, check func(T) string) (T, error) {
	off := p.off
	v, err := read(what)
	if err != nil {
		return v, err
	}
	if msg := check(v); msg != "" {
		return v, p.errAt(off, "%s", msg)
	}
	return v, nil
}

// unless is "" when ok, else the formatted complaint.
func unless(ok bool, format string, args ...any) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// str reads a GGUF string (u64 length + bytes).
func (p *parser) str(what string) (string, error) {
	start := p.off
	n, err := p.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(p.left()) {
		return "", p.errAt(start, "%s: string length %d exceeds the %d bytes left in the file", what, n, p.left())
	}
	s := string(p.b[p.off : p.off+int(n)])
	p.off += int(n)
	return s, nil
}

func (p *parser) file() (*File, error) {
	if len(p.b) < 4 {
		return nil, p.errAt(0, "file too short for a GGUF header (%d bytes)", len(p.b))
	}
	if string(p.b[:4]) != Magic {
		return nil, p.errAt(0, "bad magic %q (want %q): not a GGUF file", p.b[:4], Magic)
	}
	p.off = 4
	vOff := p.off
	version, err := p.u32("version")
	if err != nil {
		return nil, err
	}
	if version != 2 && version != 3 {
		if version == 1 {
			return nil, p.errAt(vOff, "GGUF version 1 is not supported (only 2 and 3)")
		}
		if bits.ReverseBytes32(version) == 2 || bits.ReverseBytes32(version) == 3 {
			return nil, p.errAt(vOff, "GGUF version %#x looks big-endian; only little-endian files are supported", version)
		}
		return nil, p.errAt(vOff, "unsupported GGUF version %d (only 2 and 3)", version)
	}
	tcOff := p.off
	nTensors, err := p.u64("tensor count")
	if err != nil {
		return nil, err
	}
	kcOff := p.off
	nKV, err := p.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// Minimum encoded sizes: a KV is a key length (8), a non-empty key (1), a
	// value type (4) and a 1-byte value; a tensor info is a name length (8), a
	// non-empty name (1), n_dims (4), one dimension (8), a type (4) and an offset (8).
	const minKV, minTensor = 8 + 1 + 4 + 1, 8 + 1 + 4 + 8 + 4 + 8
	if nKV > uint64(p.left())/minKV {
		return nil, p.errAt(kcOff, "metadata count %d cannot fit in the %d bytes left in the file", nKV, p.left())
	}
	if nTensors > uint64(p.left())/minTensor {
		return nil, p.errAt(tcOff, "tensor count %d cannot fit in the %d bytes left in the file", nTensors, p.left())
	}
	if nKV*minKV+nTensors*minTensor > uint64(p.left()) {
		return nil, p.errAt(tcOff, "%d tensors and %d metadata entries cannot fit in the %d bytes left in the file", nTensors, nKV, p.left())
	}

	f := &File{
		Version:   version,
		Alignment: DefaultAlignment,
		Size:      int64(len(p.b)),
		data:      p.b,
		KV:        make([]KV, 0, nKV),
		kvIdx:     make(map[string]int, nKV),
		Tensors:   make([]TensorInfo, 0, nTensors),
		tIdx:      make(map[string]int, nTensors),
	}
	alignOff := 0
	for i := uint64(0); i < nKV; i++ {
		key, err := checked(p, p.str, fmt.Sprintf("metadata key #%d", i), func(key string) string {
			if key == "" {
				return fmt.Sprintf("metadata key #%d is empty", i)
			}
			if j, dup := f.kvIdx[key]; dup {
				return fmt.Sprintf("duplicate metadata key %q (entries #%d and #%d)", key, j, i)
			}
			return ""
		})
		if err != nil {
			return nil, err
		}
		if key == "general.alignment" {
			alignOff = p.off
		}
		vt, err := checked(p, p.u32, fmt.Sprintf("metadata %q value type", key), func(vt uint32) string {
			return unless(ValueType(vt).Valid(), "metadata %q: unknown value type %d", key, vt)
		})
		if err != nil {
			return nil, err
		}
		v, err := p.value(ValueType(vt), 0, key)
		if err != nil {
			return nil, err
		}
		f.kvIdx[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	if i, ok := f.kvIdx["general.alignment"]; ok {
		v := f.KV[i].Value
		if v.Type != TypeUint32 {
			return nil, p.errAt(alignOff, "metadata %q has type %s, want uint32", "general.alignment", v.Type)
		}
		a := v.V.(uint32)
		if a == 0 || a&(a-1) != 0 {
			return nil, p.errAt(alignOff+4, "metadata %q = %d is not a non-zero power of two", "general.alignment", a)
		}
		f.Alignment = uint64(a)
	}

	for i := uint64(0); i < nTensors; i++ {
		t, err := p.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if j, dup := f.tIdx[t.Name]; dup {
			return nil, p.errAt(p.off, "duplicate tensor name %q (tensors #%d and #%d)", t.Name, j, i)
		}
		f.tIdx[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}

	// The data section starts at the next multiple of the alignment.
	infoEnd := uint64(p.off)
	dataOff := (infoEnd + f.Alignment - 1) / f.Alignment * f.Alignment
	f.DataOffset = int64(dataOff)
	// Writers (llama.cpp, gguf-py) pad with zero bytes. Requiring that catches
	// a tensor count that was lowered: the dropped tensor infos (which start
	// with a non-zero name length) would otherwise pass for padding.
	for o := infoEnd; o < dataOff && o < uint64(len(p.b)); o++ {
		if p.b[o] != 0 {
			return nil, p.errAt(int(o), "non-zero byte %#x in the padding before the data section at %d (tensor count %d too low?)",
				p.b[o], dataOff, nTensors)
		}
	}
	if len(f.Tensors) == 0 {
		// A file without tensors (a vocabulary) may end right after its metadata.
		return f, nil
	}
	if dataOff > uint64(len(p.b)) {
		return nil, p.errAt(int(infoEnd), "data section would start at %d, beyond the end of the file (%d bytes)", dataOff, len(p.b))
	}
	dataLen := uint64(len(p.b)) - dataOff
	order := make([]int, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return nil, p.errAt(int(dataOff), "tensor %q: data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > dataLen || uint64(t.Size) > dataLen-t.Offset {
			return nil, p.errAt(int(dataOff), "tensor %q: data [%d, +%d) relative to the data section at %d runs past the end of the file (%d bytes)",
				t.Name, t.Offset, t.Size, dataOff, len(p.b))
		}
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if cur.Offset < prev.Offset+uint64(prev.Size) {
			return nil, p.errAt(int(dataOff+cur.Offset), "tensor %q (offset %d) overlaps tensor %q (offset %d, %d bytes)",
				cur.Name, cur.Offset, prev.Name, prev.Offset, prev.Size)
		}
	}
	return f, nil
}

func (p *parser) tensorInfo(i uint64) (TensorInfo, error) {
	var t TensorInfo
	name, err := checked(p, p.str, fmt.Sprintf("tensor #%d name", i), func(name string) string {
		if name == "" {
			return fmt.Sprintf("tensor #%d has an empty name", i)
		}
		return unless(len(name) <= MaxNameLen, "tensor #%d name %.40q... is %d bytes, longer than %d", i, name, len(name), MaxNameLen)
	})
	if err != nil {
		return t, err
	}
	t.Name = name
	dOff := p.off
	nDims, err := checked(p, p.u32, fmt.Sprintf("tensor %q n_dims", name), func(nDims uint32) string {
		return unless(nDims >= 1 && nDims <= MaxDims, "tensor %q: n_dims %d is not in 1..%d", name, nDims, MaxDims)
	})
	if err != nil {
		return t, err
	}
	t.Shape = make([]int64, nDims)
	elems := uint64(1)
	for d := range t.Shape {
		off := p.off
		ne, err := p.u64(fmt.Sprintf("tensor %q ne[%d]", name, d))
		if err != nil {
			return t, err
		}
		if ne == 0 || ne > math.MaxInt64 {
			return t, p.errAt(off, "tensor %q: ne[%d] = %d is not a positive int64", name, d, ne)
		}
		hi, lo := bits.Mul64(elems, ne)
		if hi != 0 || lo > math.MaxInt64 {
			return t, p.errAt(off, "tensor %q: element count overflows at ne[%d] = %d", name, d, ne)
		}
		elems = lo
		t.Shape[d] = int64(ne)
	}
	ty, err := checked(p, p.u32, fmt.Sprintf("tensor %q type", name), func(ty uint32) string {
		return unless(ggml.Type(ty).Known(), "tensor %q: %s", name, ggml.Type(ty).Unsupported())
	})
	if err != nil {
		return t, err
	}
	t.Type = ggml.Type(ty)
	rowBytes, err := rowBytes(t.Type, t.Shape[0])
	if err != nil {
		return t, p.errAt(dOff+4, "tensor %q: %v", name, err)
	}
	hi, lo := bits.Mul64(uint64(rowBytes), elems/uint64(t.Shape[0]))
	if hi != 0 || lo > math.MaxInt64 {
		return t, p.errAt(dOff+4, "tensor %q: byte size overflows", name)
	}
	t.Size = int64(lo)
	t.Offset, err = p.u64(fmt.Sprintf("tensor %q offset", name))
	if err != nil {
		return t, err
	}
	return t, nil
}

// value reads a value of type vt (already validated) for key.
func (p *parser) value(vt ValueType, depth int, key string) (Value, error) {
	start := p.off
	if sz := vt.size(); sz > 0 {
		if err := p.need(uint64(sz), fmt.Sprintf("metadata %q %s value", key, vt)); err != nil {
			return Value{}, err
		}
		if vt == TypeBool && p.b[p.off] > 1 {
			return Value{}, p.errAt(start, "metadata %q: bool byte is %d, not 0 or 1", key, p.b[p.off])
		}
		v := reflect.New(scalarTypes[vt])
		if err := binary.Read(bytes.NewReader(p.b[p.off:p.off+sz]), le, v.Interface()); err != nil {
			return Value{}, p.errAt(start, "metadata %q: %v", key, err)
		}
		p.off += sz
		return Value{Type: vt, V: v.Elem().Interface()}, nil
	}
	switch vt {
	case TypeString:
		s, err := p.str(fmt.Sprintf("metadata %q string", key))
		if err != nil {
			return Value{}, err
		}
		return Value{Type: vt, V: s}, nil
	case TypeArray:
		a, err := p.array(depth, key)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: vt, V: a}, nil
	}
	return Value{}, p.errAt(start, "metadata %q: unknown value type %d", key, uint32(vt))
}

func (p *parser) array(depth int, key string) (Array, error) {
	start := p.off
	if depth >= MaxArrayDepth {
		return Array{}, p.errAt(start, "metadata %q: arrays nested deeper than %d", key, MaxArrayDepth)
	}
	et, err := p.u32(fmt.Sprintf("metadata %q array element type", key))
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	if !elem.Valid() {
		return Array{}, p.errAt(start, "metadata %q: unknown array element type %d", key, et)
	}
	cOff := p.off
	n64, err := p.u64(fmt.Sprintf("metadata %q array length", key))
	if err != nil {
		return Array{}, err
	}
	minSize := uint64(elem.size())
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if n64 > uint64(p.left())/minSize {
		return Array{}, p.errAt(cOff, "metadata %q: array of %d %s needs at least %d bytes, only %d left in the file",
			key, n64, elem, satMul(n64, minSize), p.left())
	}
	n := int(n64)
	a := Array{Elem: elem}
	if sz := elem.size(); sz > 0 {
		b := p.b[p.off : p.off+n*sz]
		if elem == TypeBool {
			for i, x := range b {
				if x > 1 {
					return Array{}, p.errAt(p.off+i, "metadata %q: bool element %d is %d, not 0 or 1", key, i, x)
				}
			}
		}
		v, err := scalars(elem, b, n)
		if err != nil {
			return Array{}, p.errAt(p.off, "metadata %q: %v", key, err)
		}
		a.Values = v
		p.off += len(b)
		return a, nil
	}
	switch elem {
	case TypeString:
		v, err := p.strings(n, key)
		if err != nil {
			return Array{}, err
		}
		a.Values = v
	case TypeArray:
		v := make([]Array, 0, min(n, 1024))
		for i := 0; i < n; i++ {
			sub, err := p.array(depth+1, fmt.Sprintf("%s[%d]", key, i))
			if err != nil {
				return Array{}, err
			}
			v = append(v, sub)
		}
		a.Values = v
	}
	return a, nil
}

// strings reads n strings with two allocations: one string holding the whole
// encoded region, which every element then slices, and the []string itself.
func (p *parser) strings(n int, key string) ([]string, error) {
	start := p.off
	o := p.off
	for i := 0; i < n; i++ {
		if len(p.b)-o < 8 {
			return nil, p.errAt(o, "metadata %q: string %d of %d: length needs 8 bytes, only %d left in the file", key, i, n, len(p.b)-o)
		}
		l := le.Uint64(p.b[o:])
		if l > uint64(len(p.b)-o-8) {
			return nil, p.errAt(o, "metadata %q: string %d of %d: length %d exceeds the %d bytes left in the file", key, i, n, l, len(p.b)-o-8)
		}
		o += 8 + int(l)
	}
	blob := string(p.b[start:o])
	out := make([]string, n)
	q := 0
	for i := range out {
		l := int(le.Uint64(p.b[start+q:]))
		out[i] = blob[q+8 : q+8+l]
		q += 8 + l
	}
	p.off = o
	return out, nil
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// rowBytes is t.RowBytes(n) with an overflow check.
func rowBytes(t ggml.Type, n int64) (int64, error) {
	be := int64(t.BlockElems())
	if be > 0 && n > 0 && n%be == 0 {
		hi, lo := bits.Mul64(uint64(n/be), uint64(t.BlockBytes()))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("row of %d %s elements overflows int64 bytes", n, t)
		}
	}
	return t.RowBytes(n)
}

// scalars decodes the n little-endian scalars of type t in b (n times t's
// size bytes; bools already checked) into a new slice of t's Go type.
func scalars(t ValueType, b []byte, n int) (any, error) {
	v := reflect.MakeSlice(reflect.SliceOf(scalarTypes[t]), n, n).Interface()
	return v, binary.Read(bytes.NewReader(b), le, v)
}
