package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/synth"
)

// synthMini writes `woolly synth --preset preset --type typ` (seed 1; vocab
// the vocabulary file, "" for synth's built-in one) into a temporary
// directory as file, requires its sha256 to be sha (the bytes the
// references in testdata/refDir were made from) and returns its path.
func synthMini(t testing.TB, preset, typ, vocab, file, sha, refDir string) string {
	t.Helper()
	p, err := synth.FindPreset(preset)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), file)
	ft, err := quant.ParseFileType(typ)
	require.NoError(t, err)
	_, err = synth.WriteFile(path, synth.Options{Preset: p, Type: ft, VocabPath: vocab, Seed: 1, Threads: 2})
	require.NoError(t, err)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	require.Equal(t, sha, hex.EncodeToString(h.Sum(nil)), "synth %s bytes changed: remake testdata/%s (README.md)", preset, refDir)
	return path
}

// miniRefs reads llama.cpp's references testdata/dir/base.*.json, keyed by
// their file name without .json.
func miniRefs(t *testing.T, dir, base string) map[string]refLogits {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", dir, base+".*.json"))
	require.NotEmpty(t, files)
	out := map[string]refLogits{}
	for _, f := range files {
		var r refLogits
		readJSON(t, f, &r)
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = r
	}
	return out
}
