package quant

import (
	"testing"

	"github.com/woolly-llm/woolly/kernels"
)

func BenchmarkQuantizeRow(b *testing.B) {
	x := gaussianRows(4096, 1)
	for _, ty := range []kernels.Type{kernels.Q4_K, kernels.Q5_K, kernels.Q6_K, kernels.Q8_0, kernels.Q4_0,
		kernels.Q2_K, kernels.Q3_K, kernels.IQ4_NL, kernels.IQ4_XS} {
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
