package quant

import (
	"testing"

	"github.com/woolly-llm/woolly/ggml"
)

func BenchmarkQuantizeRow(b *testing.B) {
	x := gaussianRows(4096, 1)
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q5_K, ggml.Q6_K, ggml.Q8_0, ggml.Q4_0,
		ggml.Q2_K, ggml.Q3_K, ggml.IQ4_NL, ggml.IQ4_XS} {
		rb, _ := ty.RowBytes(4096)
		y := make([]byte, rb)
		b.Run(ty.String(), func(b *testing.B) {
			b.SetBytes(4 * 4096)
			for b.Loop() {
				QuantizeRow(ty, x, y)
			}
		})
	}
}
