package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/quant"
	"github.com/woolly-llm/woolly/synth"
)

// Test helpers shared by the package's tests: loading models and running
// them, failing the test on any error.

// loadPath loads the model file at path; the model is closed when the test
// ends.
func loadPath(t testing.TB, path string, o LoadOptions) *Model {
	t.Helper()
	m, err := Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// loadShared loads the shared model name (models/name.gguf of the shared
// data), or the file name when it is an absolute path.
func loadShared(t testing.TB, name string, o LoadOptions) *Model {
	t.Helper()
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(sharedDir(t), "models", name+".gguf")
	}
	return loadPath(t, path, o)
}

// loadConfig loads the model file at path with one thread and returns its
// configuration; the model is closed at once.
func loadConfig(t testing.TB, path string) Config {
	t.Helper()
	m, err := Load(path, LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return m.Config()
}

// newSession opens a session of nCtx positions on m (0: the model's
// context length).
func newSession(t testing.TB, m *Model, nCtx int) *Session {
	t.Helper()
	s, err := m.NewSession(nCtx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// evalAll evaluates toks in s and returns the logits of every position.
func evalAll(t testing.TB, s *Session, toks []int32) []float32 {
	t.Helper()
	l, err := s.Eval(toks, true)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// followUp runs two turns of a conversation on m, four greedy tokens each:
// seq, then seq, turn 1's reply and extra. Turn 2's reply must be that of
// fresh (a model without a prefix cache); it returns both turns.
func followUp(t *testing.T, m, fresh *Model, seq []int32, extra ...int32) (turn1, turn2 *GenerateResult) {
	t.Helper()
	opts := func(toks []int32) GenerateOptions {
		return GenerateOptions{Tokens: toks, MaxTokens: 4, Sampler: SamplerOptions{Temperature: 0, RepeatPenalty: 1, Seed: 1}}
	}
	turn1, err := m.Generate(context.Background(), opts(seq), nil)
	require.NoError(t, err)
	next := append(append(slices.Clone(seq), turn1.Tokens...), extra...)
	turn2, err = m.Generate(context.Background(), opts(next), nil)
	require.NoError(t, err)
	want, err := fresh.Generate(context.Background(), opts(next), nil)
	require.NoError(t, err)
	require.Equal(t, want.Tokens, turn2.Tokens)
	return turn1, turn2
}

// synthMini writes `woolly synth --preset preset --type typ` (seed 1; vocab
// the vocabulary file, "" for synth's built-in one) into a temporary
// directory as file, requires its sha256 to be sha (the bytes the
// references in testdata/refDir were made from) and returns its path.
func synthMini(t testing.TB, preset, typ, vocab, file, sha, refDir string) string {
	t.Helper()
	p, err := synth.FindPreset(preset)
	require.NoError(t, err)
	path := writeSynth(t, p, typ, vocab, file)
	require.Equal(t, sha, fileSHA256(t, path), "synth %s bytes changed: remake testdata/%s (README.md)", preset, refDir)
	return path
}

// writeSynth writes synth's model of preset p as typ (seed 1; vocab as
// for synthMini) into a temporary directory as file and returns its path.
func writeSynth(t testing.TB, p synth.Preset, typ, vocab, file string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), file)
	ft, err := quant.ParseFileType(typ)
	require.NoError(t, err)
	_, err = synth.WriteFile(path, synth.Options{Preset: p, Type: ft, VocabPath: vocab, Seed: 1, Threads: 2})
	require.NoError(t, err)
	return path
}

// fileSHA256 is the sha256 of the file at path, in hex.
func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
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

// refParity compares m with llama.cpp's references refs of the mini name:
// prompt ids; its procedure (the prompt as one batch, then each greedy id
// decoded alone), which must give the reference's bits (≤ 1e-6) when
// bits is set; the teacher-forced sequence (teacherForced) as one batch,
// token by token and in uneven chunks, within tol, except that with
// longTol > 0 a prompt of 64 or more tokens evaluated token by token or in
// chunks (another attention path than the reference's rows) is held to
// longTol under the keys "token (long)" and "chunks (long)"; and the
// greedy ids and text. It logs the worst |Δlogit| of each way.
func refParity(t *testing.T, m *Model, name string, refs map[string]refLogits, tol, longTol float64, bits bool) {
	t.Helper()
	nv := m.Info().NVocab
	worst := map[string]float64{}
	for tag, ref := range refs {
		ids, err := m.Tokenizer().Encode(ref.Prompt, m.Tokenizer().AddBOS(), true)
		require.NoError(t, err)
		require.Equal(t, ref.PromptIDs, ids, "%s: prompt ids", tag)
		seq, tops := teacherForced(ref)

		s := newSession(t, m, 0)
		pr := evalAll(t, s, ref.PromptIDs)
		for i := range ref.PromptIDs {
			worst["procedure"] = max(worst["procedure"], compareTop(t, fmt.Sprintf("%s prompt pos %d", tag, i), pr[i*nv:(i+1)*nv], ref.Positions[i].Top, tol))
		}
		for k := 1; k < len(ref.Greedy.Steps); k++ {
			row, err := s.Eval([]int32{ref.Greedy.IDs[k-1]}, false)
			require.NoError(t, err)
			worst["procedure"] = max(worst["procedure"], compareTop(t, fmt.Sprintf("%s step %d", tag, k), row, ref.Greedy.Steps[k].Top, tol))
		}

		s.Reset()
		all := evalAll(t, s, seq)
		for i := range seq {
			worst["batch"] = max(worst["batch"], compareTop(t, fmt.Sprintf("%s batch pos %d", tag, i), all[i*nv:(i+1)*nv], tops[i], tol))
		}
		ttol, tk, ck := tol, "token", "chunks"
		if longTol > 0 && len(ref.PromptIDs) >= 64 {
			ttol, tk, ck = longTol, "token (long)", "chunks (long)"
		}
		s.Reset()
		for i, id := range seq {
			row, err := s.Eval([]int32{id}, false)
			require.NoError(t, err)
			worst[tk] = max(worst[tk], compareTop(t, fmt.Sprintf("%s token pos %d", tag, i), row, tops[i], ttol))
		}
		s.Reset()
		for i := 0; i < len(seq); {
			n := min(len(seq)-i, 1+(i*7)%23) // 1, 8, 16, ... tokens per pass
			rows, err := s.Eval(seq[i:i+n], true)
			require.NoError(t, err)
			for j := 0; j < n; j++ {
				worst[ck] = max(worst[ck], compareTop(t, fmt.Sprintf("%s chunked pos %d", tag, i+j), rows[j*nv:(j+1)*nv], tops[i+j], ttol))
			}
			i += n
		}

		res, err := m.Generate(context.Background(), GenerateOptions{Prompt: ref.Prompt, MaxTokens: len(ref.Greedy.IDs), NCtx: 512}, nil)
		require.NoError(t, err)
		require.Equal(t, ref.Greedy.IDs, res.Tokens, "%s: greedy ids", tag)
		require.Equal(t, ref.Greedy.Text, res.Text, "%s: greedy text", tag)
	}
	t.Logf("%s max |Δlogit| vs llama.cpp: its procedure %.3g; teacher-forced batch %.3g, token by token %.3g (long %.3g), chunked %.3g (long %.3g); tolerance %g (long %g)",
		name, worst["procedure"], worst["batch"], worst["token"], worst["token (long)"], worst["chunks"], worst["chunks (long)"], tol, longTol)
	if bits && worst["procedure"] > 1e-6 {
		// The JSON prints 9 digits: the reference's bits.
		t.Errorf("%s: max |Δlogit| %.3g following llama.cpp's procedure, want the reference's bits (≤ 1e-6)", name, worst["procedure"])
	}
	for k, v := range worst {
		lim := tol
		if strings.HasSuffix(k, "(long)") {
			lim = longTol
		}
		if v > lim {
			t.Errorf("%s: max |Δlogit| %.3g exceeds %g", k, v, lim)
		}
	}
}

// badFile is a model file rewritten (rewriteModel: keys set, nil deleting
// one; the tensor drop removed) and the text its load error must contain.
type badFile struct {
	name string
	set  map[string]*loader.Value
	drop string
	want string
}

// requireBadFiles runs one subtest per case (named prefix+name): the file
// at path rewritten by it fails to load with an error containing want.
func requireBadFiles(t *testing.T, path, prefix string, cases []badFile) {
	t.Helper()
	for _, c := range cases {
		t.Run(prefix+c.name, func(t *testing.T) {
			bad := rewriteModel(t, path, c.set, c.drop)
			_, err := Load(bad, LoadOptions{Threads: 1})
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// miniPerplexity is the perplexity of the model at path over the shared
// dev text (c = 128, as llama-perplexity ran it: -f drops one trailing
// newline), after requiring the chunk count of testdata/dir/ppl.json and a
// reference figure for name; it returns Woolly's figure and llama.cpp's.
func miniPerplexity(t *testing.T, dir, name, path string) (got, want float64) {
	t.Helper()
	var ref struct {
		Chunks int                `json:"chunks"`
		PPL    map[string]float64 `json:"ppl"`
	}
	readJSON(t, filepath.Join("testdata", dir, "ppl.json"), &ref)
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "ref", "text", "dev.txt"))
	require.NoError(t, err)
	text := strings.TrimSuffix(string(b), "\n")
	m := loadPath(t, path, LoadOptions{Threads: 2})
	res, err := m.Perplexity(context.Background(), text, 128, nil)
	require.NoError(t, err)
	require.Equal(t, ref.Chunks, res.Chunks, name)
	want = ref.PPL[name]
	require.NotZero(t, want, name)
	t.Logf("%s: PPL %.4f, llama.cpp %.4f", name, res.PPL, want)
	return res.PPL, want
}
