// Package loader reads and writes GGUF files.
//
// Open maps a file read-only (or reads it into memory where mmap is not
// available) and validates every structural field before it is used: magic,
// version, counts, string and array lengths, tensor dimensions, type ids,
// alignment and tensor extents. A File is immutable after Open and safe for
// concurrent use by many goroutines. Tensor data is returned as slices of the
// mapping, without copying; those slices are valid until Close.
//
// Writer produces GGUF v3 files, streaming tensor data at write time so that
// files larger than memory can be synthesized.
package loader

import (
	"fmt"
	"math"
	"os"
	"reflect"

	"github.com/woolly-llm/woolly/ggml"
)

// Magic is the 4-byte signature at the start of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the largest number of tensor dimensions (GGML_MAX_DIMS).
const MaxDims = 4

// MaxNameLen is the longest tensor name in bytes (GGML_MAX_NAME - 1).
const MaxNameLen = 63

// MaxArrayDepth bounds the levels of arrays in one value (an array of
// arrays of int32 has 2).
const MaxArrayDepth = 8

// ValueType is a GGUF metadata value type.
type ValueType uint32

// GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64",
}

// String is the lower-case GGUF name of the type ("uint32", "string", "array").
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value_type(%d)", uint32(t))
}

// Valid reports whether t is one of the 13 GGUF value types.
func (t ValueType) Valid() bool { return t <= TypeFloat64 }

// scalarTypes is the Go type a scalar of each value type decodes to, in
// value-type order (nil for string and array); its size is the encoded size.
var scalarTypes = [...]reflect.Type{
	reflect.TypeFor[uint8](), reflect.TypeFor[int8](), reflect.TypeFor[uint16](), reflect.TypeFor[int16](),
	reflect.TypeFor[uint32](), reflect.TypeFor[int32](), reflect.TypeFor[float32](), reflect.TypeFor[bool](),
	nil, nil, reflect.TypeFor[uint64](), reflect.TypeFor[int64](), reflect.TypeFor[float64](),
}

// size is the encoded size of a scalar of type t (0 for string and array).
func (t ValueType) size() int {
	if !t.Valid() || scalarTypes[t] == nil {
		return 0
	}
	return int(scalarTypes[t].Size())
}

// Value is one metadata value. V holds uint8, int8, uint16, int16, uint32,
// int32, float32, bool, string, uint64, int64 or float64 according to Type,
// or an Array when Type is TypeArray.
type Value struct {
	Type ValueType
	V    any
}

// Array is an array value. Values is a typed slice matching Elem: []uint8,
// []int8, []uint16, []int16, []uint32, []int32, []float32, []bool, []string,
// []uint64, []int64, []float64, or []Array for nested arrays.
type Array struct {
	Elem   ValueType
	Values any
}

// Len is the number of elements of the array (0 if Values is not a slice).
func (a Array) Len() int {
	rv := reflect.ValueOf(a.Values)
	if rv.Kind() != reflect.Slice {
		return 0
	}
	return rv.Len()
}

// Index returns element i (0 <= i < Len()) as the Go type Values holds it:
// uint8, ..., float64, bool, string, or Array.
func (a Array) Index(i int) any { return reflect.ValueOf(a.Values).Index(i).Interface() }

// KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	Name   string
	Type   ggml.Type
	Shape  []int64 // ne order: Shape[0] is the row length (fastest varying)
	Offset uint64  // relative to the start of the data section
	Size   int64   // bytes
}

// Elements is the number of elements (the product of Shape).
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Rows is the number of rows of length Shape[0].
func (t *TensorInfo) Rows() int64 {
	if len(t.Shape) == 0 || t.Shape[0] == 0 {
		return 0
	}
	return t.Elements() / t.Shape[0]
}

// RowBytes is the size in bytes of one row.
func (t *TensorInfo) RowBytes() int64 {
	if r := t.Rows(); r > 0 {
		return t.Size / r
	}
	return 0
}

// File is a parsed GGUF file. All fields are read-only after Open.
type File struct {
	Path       string
	Version    uint32
	Alignment  uint64
	DataOffset int64 // absolute offset of the data section
	Size       int64 // file size in bytes
	KV         []KV
	Tensors    []TensorInfo

	data    []byte
	kvIdx   map[string]int
	tIdx    map[string]int
	release func() error
	fh      *os.File // the mapped file's descriptor (nil when not mapped)
}

// Close releases the mapping. Slices returned by Data must not be used after.
func (f *File) Close() error {
	if f == nil {
		return nil
	}
	rel := f.release
	f.release = nil
	f.data = nil
	if f.fh != nil {
		f.fh.Close()
		f.fh = nil
	}
	if rel != nil {
		return rel()
	}
	return nil
}

// Bytes is the whole file (the mapping); nil after Close.
func (f *File) Bytes() []byte { return f.data }

// Get returns the value stored under key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIdx[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// lookup is conv of the value stored under key; false when there is none.
func lookup[T any](f *File, key string, conv func(Value) (T, bool)) (T, bool) {
	v, ok := f.Get(key)
	if !ok {
		var zero T
		return zero, false
	}
	return conv(v)
}

// as is the conversion for a value that must be of type t (Go type T).
func as[T any](t ValueType) func(Value) (T, bool) {
	return func(v Value) (T, bool) {
		if v.Type != t {
			var zero T
			return zero, false
		}
		x, ok := v.V.(T)
		return x, ok
	}
}

// String returns a string value.
func (f *File) String(key string) (string, bool) { return lookup(f, key, as[string](TypeString)) }

// Uint returns an integer value of any integer type if it is non-negative.
func (f *File) Uint(key string) (uint64, bool) { return lookup(f, key, Value.Uint) }

// Int returns an integer value of any integer type if it fits in int64.
func (f *File) Int(key string) (int64, bool) { return lookup(f, key, Value.Int) }

// Float returns a float32 or float64 value, or an integer value as float64.
func (f *File) Float(key string) (float64, bool) { return lookup(f, key, Value.Float) }

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) { return lookup(f, key, as[bool](TypeBool)) }

// Strings returns an array of strings (shared, do not modify).
func (f *File) Strings(key string) ([]string, bool) {
	a, ok := f.array(key)
	if !ok || a.Elem != TypeString {
		return nil, false
	}
	s, ok := a.Values.([]string)
	return s, ok
}

// Float32s returns a float32 array (shared, do not modify), or a float64 or
// integer array converted to float32.
func (f *File) Float32s(key string) ([]float32, bool) {
	a, ok := f.array(key)
	if !ok {
		return nil, false
	}
	switch v := a.Values.(type) {
	case []float32:
		return v, true
	case []float64:
		return convert[float32](v), true
	}
	ints, ok := a.int64s()
	if !ok {
		return nil, false
	}
	return convert[float32](ints), true
}

// Int32s returns an integer array of any integer element type as []int32.
// It fails if a value does not fit in int32. An []int32 array is shared.
func (f *File) Int32s(key string) ([]int32, bool) {
	a, ok := f.array(key)
	if !ok {
		return nil, false
	}
	if v, ok := a.Values.([]int32); ok {
		return v, true
	}
	ints, ok := a.int64s()
	if !ok {
		return nil, false
	}
	out := make([]int32, len(ints))
	for i, x := range ints {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

func (f *File) array(key string) (Array, bool) { return lookup(f, key, as[Array](TypeArray)) }

// int64s converts an integer array to []int64; it fails for non-integer
// element types and for uint64 values above MaxInt64.
func (a Array) int64s() ([]int64, bool) {
	rv := reflect.ValueOf(a.Values)
	if rv.Kind() != reflect.Slice {
		return nil, false
	}
	out := make([]int64, rv.Len())
	for i := range out {
		x, ok := intOf(rv.Index(i))
		if !ok {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// intOf is an integer of any width as int64; false for other kinds and for
// unsigned values above MaxInt64.
func intOf(rv reflect.Value) (int64, bool) {
	switch rv.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u), true
		}
	}
	return 0, false
}

// convert copies numbers into a new slice of type U (the caller has
// checked they fit).
func convert[U, T uint8 | int8 | uint16 | int16 | uint32 | int32 | uint64 | int64 | float32 | float64](v []T) []U {
	out := make([]U, len(v))
	for i, x := range v {
		out[i] = U(x)
	}
	return out
}

// Int returns the value of any integer type if it fits in int64.
func (v Value) Int() (int64, bool) { return intOf(reflect.ValueOf(v.V)) }

// Uint returns the value of any integer type if it is non-negative.
func (v Value) Uint() (uint64, bool) {
	if x, ok := v.V.(uint64); ok {
		return x, true
	}
	i, ok := v.Int()
	if !ok || i < 0 {
		return 0, false
	}
	return uint64(i), true
}

// Float returns a float32 or float64 value, or an integer value as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	}
	i, ok := v.Int()
	return float64(i), ok
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tIdx[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Data returns the bytes of tensor t as a slice of the mapping (no copy).
// The slice is read-only and valid until Close. It returns nil if t does not
// lie inside this file's data section or the file is closed.
func (f *File) Data(t *TensorInfo) []byte {
	if t == nil || f.data == nil || t.Size < 0 {
		return nil
	}
	dataLen := uint64(int64(len(f.data)) - f.DataOffset)
	if f.DataOffset > int64(len(f.data)) || t.Offset > dataLen || uint64(t.Size) > dataLen-t.Offset {
		return nil
	}
	start := f.DataOffset + int64(t.Offset)
	end := start + t.Size
	return f.data[start:end:end]
}

// Architecture is general.architecture ("" if absent).
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}
