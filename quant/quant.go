// Package quant converts float32 weights to ggml's block formats, with the
// same algorithms (and so the same quality) as llama.cpp's reference
// quantizers without an importance matrix.
//
// The K-quants search per-sub-block scales and mins (Q4_K, Q5_K) or signed
// scales (Q6_K) and then quantize those scales against one super-block scale;
// the 32-element types follow ggml's simple rules (Q4_0: d = max / -8, where
// max is the signed value of largest magnitude). The quantizers are written
// in Go; QuantizeFile reads quantized input tensors through package
// kernels' dequantization. Quantize spreads rows over goroutines.
package quant

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/woolly-llm/woolly/ggml"
)

// rowFunc quantizes one row (a whole number of blocks) of x into y.
type rowFunc func(x []float32, y []byte)

var rowFuncs = map[ggml.Type]rowFunc{
	ggml.F32:  rowF32,
	ggml.F16:  rowF16,
	ggml.BF16: rowBF16,
	ggml.Q4_0: rowQ4_0,
	ggml.Q4_1: rowQ4_1,
	ggml.Q5_0: rowQ5_0,
	ggml.Q5_1: rowQ5_1,
	ggml.Q8_0: rowQ8_0,
	ggml.Q4_K: rowQ4K,
	ggml.Q5_K: rowQ5K,
	ggml.Q6_K: rowQ6K,
	ggml.Q2_K: rowQ2K,
	ggml.Q3_K: rowQ3K,

	ggml.IQ4_NL: rowIQ4NL,
	ggml.IQ4_XS: rowIQ4XS,
	ggml.MXFP4:  rowMXFP4,
}

// validators check the output of a type's quantizer where ggml's row
// validation (which llama-quantize runs) can reject it: dst holds whole
// rows of rowBytes bytes.
var validators = map[ggml.Type]func(dst []byte, rowBytes int) error{
	ggml.MXFP4: checkMXFP4,
}

// Supported reports whether Woolly can write tensors of type t.
func Supported(t ggml.Type) bool { _, ok := rowFuncs[t]; return ok }

// QuantizeRow converts src (a whole number of t's blocks) into dst, which
// must be exactly t.RowBytes(len(src)) bytes.
func QuantizeRow(t ggml.Type, src []float32, dst []byte) error {
	f, err := check(t, src, len(src), dst)
	if err != nil {
		return err
	}
	f(src, dst)
	if v := validators[t]; v != nil {
		return v(dst, len(dst))
	}
	return nil
}

// Quantize converts the rows of src (each rowLen elements) into dst, one
// row after another, using up to threads goroutines (0 = GOMAXPROCS). The
// result does not depend on the number of threads.
func Quantize(t ggml.Type, src []float32, rowLen int, dst []byte, threads int) error {
	f, err := check(t, src, rowLen, dst)
	if err != nil {
		return err
	}
	nrows := len(src) / rowLen
	rb := len(dst) / nrows
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// Chunks of rows of roughly 64K elements keep goroutines busy without
	// scheduling overhead per row.
	chunk := max(1, 65536/rowLen)
	nchunks := (nrows + chunk - 1) / chunk
	threads = min(threads, nchunks)
	if threads <= 1 {
		for r := 0; r < nrows; r++ {
			f(src[r*rowLen:(r+1)*rowLen], dst[r*rb:(r+1)*rb])
		}
		return validate(t, dst, rb)
	}
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Go(func() {
			for {
				mu.Lock()
				c := next
				next++
				mu.Unlock()
				if c >= nchunks {
					return
				}
				for r := c * chunk; r < min(nrows, (c+1)*chunk); r++ {
					f(src[r*rowLen:(r+1)*rowLen], dst[r*rb:(r+1)*rb])
				}
			}
		})
	}
	wg.Wait()
	return validate(t, dst, rb)
}

func validate(t ggml.Type, dst []byte, rowBytes int) error {
	if v := validators[t]; v != nil {
		return v(dst, rowBytes)
	}
	return nil
}

func check(t ggml.Type, src []float32, rowLen int, dst []byte) (rowFunc, error) {
	f, ok := rowFuncs[t]
	if !ok {
		return nil, fmt.Errorf("quant: cannot write tensors of type %v", t)
	}
	if rowLen <= 0 || len(src)%rowLen != 0 {
		return nil, fmt.Errorf("quant: %d values are not a whole number of rows of %d", len(src), rowLen)
	}
	rb, err := t.RowBytes(int64(rowLen))
	if err != nil {
		return nil, fmt.Errorf("quant: %w", err)
	}
	if want := rb * int64(len(src)/rowLen); int64(len(dst)) != want {
		return nil, fmt.Errorf("quant: %v output for %d values needs %d bytes, got %d", t, len(src), want, len(dst))
	}
	return f, nil
}

// nearestInt rounds to the nearest integer, ties to even, exactly as ggml's
// nearest_int does (by adding 1.5·2^23 and reading the mantissa). Valid for
// |f| < 2^22. The explicit float32(f) keeps a caller's product, once this is
// inlined, from being fused with the addition into an FMA.
func nearestInt(f float32) int {
	v := float32(f) + 12582912
	return int(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// getF16 reads a little-endian f16 as float32.
func getF16(b []byte) float32 { return ggml.F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

func putF16(b []byte, f float32) {
	h := ggml.F32ToF16(f)
	b[0] = byte(h)
	b[1] = byte(h >> 8)
}

func rowF32(x []float32, y []byte) {
	for i, v := range x {
		u := math.Float32bits(v)
		y[4*i], y[4*i+1], y[4*i+2], y[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
}

func rowF16(x []float32, y []byte) {
	for i, v := range x {
		putF16(y[2*i:], v)
	}
}

// rowBF16 rounds to nearest even like ggml's fp32_to_bf16 (NaNs stay quiet NaNs).
func rowBF16(x []float32, y []byte) {
	for i, v := range x {
		h := ggml.F32ToBF16(v)
		y[2*i], y[2*i+1] = byte(h), byte(h>>8)
	}
}
