package runtime

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQwen35Trace is a diagnostic, not a check: with WOOLLY_TRACE_MODEL (a
// GGUF) and WOOLLY_TRACE_DIR set it evaluates WOOLLY_TRACE_TOKENS (comma-
// separated ids, default 1,500,1000,2000,3000,4000,5000,6000) in one batch
// and writes the tensors traceHook sees as DIR/NAME-LAYER.f32 (float32 LE),
// the names llama.cpp's graph uses, for tools/tensordump/compare.py.
func TestQwen35Trace(t *testing.T) {
	model, dir := os.Getenv("WOOLLY_TRACE_MODEL"), os.Getenv("WOOLLY_TRACE_DIR")
	if model == "" || dir == "" {
		t.Skip("diagnostic: set WOOLLY_TRACE_MODEL and WOOLLY_TRACE_DIR")
	}
	toks := os.Getenv("WOOLLY_TRACE_TOKENS")
	if toks == "" {
		toks = "1,500,1000,2000,3000,4000,5000,6000"
	}
	var ids []int32
	for _, f := range strings.Split(toks, ",") {
		v, err := strconv.Atoi(f)
		require.NoError(t, err)
		ids = append(ids, int32(v))
	}
	m := loadPath(t, model, LoadOptions{Threads: 2, PrefixCache: Ptr(int64(0))})
	last, suffix := 0, ""
	traceHook = func(name string, layer int, data []float32) {
		if layer < 0 { // the FFN's tensors: the layer last traced
			layer = last
		}
		last = layer
		b := make([]byte, 4*len(data))
		for i, v := range data {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d%s.f32", name, layer, suffix)), b, 0o644))
	}
	defer func() { traceHook = nil }()
	s := newSession(t, m, 0)
	evalAll(t, s, ids)
	// WOOLLY_TRACE_THEN: ids decoded one at a time after the batch, their
	// tensors named NAME-LAYER#2.f32, #3, ... (tensordump's --then).
	if then := os.Getenv("WOOLLY_TRACE_THEN"); then != "" {
		for k, f := range strings.Split(then, ",") {
			v, err := strconv.Atoi(f)
			require.NoError(t, err)
			suffix = fmt.Sprintf("#%d", k+2)
			_, err = s.Eval([]int32{int32(v)}, false)
			require.NoError(t, err)
		}
	}
}
