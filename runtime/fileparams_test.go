package runtime

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/woolly-llm/woolly/loader"
)

// TestInfoParamsAndFileType: ModelInfo counts every element of every
// tensor and names the file type by its 2-D tensors, for a decoder and an
// encoder.
func TestInfoParamsAndFileType(t *testing.T) {
	for _, c := range []struct{ path, fileType string }{
		{filepath.Join(sharedDir(t), "models", "synth-llama-mini-Q4_K_M.gguf"), "Q4_K_M"},
		{filepath.Join(sharedDir(t), "models", "synth-llama-mini-F16.gguf"), "F16"},
		{encoderMini(t, "bert-mini"), "Q8_0"},
	} {
		f, err := loader.Open(c.path)
		require.NoError(t, err)
		var n int64
		for _, ti := range f.Tensors {
			e := int64(1)
			for _, d := range ti.Shape {
				e *= d
			}
			n += e
		}
		require.NoError(t, f.Close())
		m := loadPath(t, c.path, LoadOptions{Threads: 1})
		info := m.Info()
		require.Equal(t, n, info.NParams, c.path)
		require.Equal(t, c.fileType, info.FileType, c.path)
	}
}
