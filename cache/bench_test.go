package cache

import "testing"

func BenchmarkGetHit(b *testing.B) {
	c, _ := New[string, []float32](1<<30, Options[string, []float32]{})
	c.Add("k", make([]float32, 16), 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Get("k")
	}
}

func BenchmarkGetParallelHit(b *testing.B) {
	c, _ := New[int, int](1<<30, Options[int, int]{})
	for i := 0; i < 64; i++ {
		c.Add(i, i, 8)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Get(i & 63)
			i++
		}
	})
}
