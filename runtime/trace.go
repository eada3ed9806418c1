package runtime

// traceHook, when set (by a test: see TestQwen35Trace), receives the
// intermediate tensors of each pass by the names llama.cpp's graph gives
// them (without the "-layer" suffix), for finding where the two part;
// layer -1: the layer of the previous call.
// data is only valid during the call. Nil in normal use: no cost.
var traceHook func(name string, layer int, data []float32)

func trace(name string, layer int, data []float32) {
	if traceHook != nil {
		traceHook(name, layer, data)
	}
}
