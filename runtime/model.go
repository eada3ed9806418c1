package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime/gbnf"
	"github.com/woolly-llm/woolly/runtime/grammar"
	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

// LoadOptions configure Load.
type LoadOptions struct {
	// Threads is the number of workers for matrix products and attention;
	// 0 means the number of physical cores.
	Threads int
	// ContextLength is the default context of new sessions; 0 means the
	// model's training context, capped at DefaultMaxContext.
	ContextLength int
	// Attention chooses the attention numerics (default AttentionDefault).
	Attention AttentionMode
	// PrefixCache is the byte budget of the model's prefix KV cache, which
	// keeps snapshots of recent sequences so that a request sharing a
	// prefix with an earlier one evaluates only its new tokens: nil (unset)
	// means DefaultPrefixCache, 0 turns reuse off (Ptr(int64(0))).
	PrefixCache *int64
	// Pack chooses whether Load repacks the matrices of the types the
	// kernel set packs (kernels.PackRows) into row-interleaved groups in
	// memory of their own, dropping their file pages: same results, the
	// resident size of the file (docs/packed-weights.md).
	Pack PackMode
	// CacheTypeK and CacheTypeV are the types a session's KV cache keeps
	// K and V rows in, as llama.cpp's --cache-type-k/-v: "f16" (the
	// default, ""), "q8_0" or "q4_0" (see ParseCacheType). A quantized
	// type takes about half (q8_0) or a quarter (q4_0) of f16's memory and
	// switches attention to the reference's one-row flash-attention path
	// for such a cache (kernels.AttentionKVQ); it needs a head size that
	// is a multiple of 32 (gemma4: every layer's) and the default
	// attention mode.
	CacheTypeK, CacheTypeV string
}

// ParseCacheType reads a KV cache type name as llama.cpp spells it: f16,
// q8_0 or q4_0 (any case; "" is f16).
func ParseCacheType(s string) (kernels.Type, error) {
	switch strings.ToLower(s) {
	case "", "f16":
		return kernels.F16, nil
	case "q8_0":
		return kernels.Q8_0, nil
	case "q4_0":
		return kernels.Q4_0, nil
	}
	return 0, fmt.Errorf("cache type %q: want f16, q8_0 or q4_0", s)
}

// PackMode is LoadOptions.Pack.
type PackMode int

const (
	// PackDefault follows WOOLLY_PACK (1: on, 0: off) and, when it is
	// unset, packDefault (off: on x86-64 the packed kernels measured no
	// faster end to end on a shared machine; see packed.go).
	PackDefault PackMode = iota
	// PackOn repacks the weights.
	PackOn
	// PackOff keeps every matrix in the file mapping as it is.
	PackOff
)

// AttentionMode chooses how attention is computed. llama.cpp's CPU flash
// attention has two numerical paths, and matching them is what keeps the
// logits of quantized models within 1e-6 of the reference instead of ~0.2.
type AttentionMode int

const (
	// AttentionDefault reproduces the reference bit for bit: below 64 query
	// rows (generation, short prompts) Q and V in f16 with an online softmax
	// (kernels.AttentionF16Acc), from 64 rows on its tiled f32 path
	// (kernels.AttentionTiled); perplexity identical to llama.cpp. Both
	// kernels read the f16 cache in place.
	AttentionDefault AttentionMode = iota
	// AttentionExact is AttentionDefault (kept for callers that ask for the
	// exact numerics by name).
	AttentionExact
)

// DefaultMaxContext caps the default session context when the model's
// training context is larger (llama.cpp's default n_ctx is 4096 too).
const DefaultMaxContext = 4096

// maxBatch is the largest number of tokens one forward pass evaluates.
const maxBatch = 512

// Model is a loaded GGUF model. Its methods are safe for concurrent use;
// each Session is used by one goroutine at a time.
type Model struct {
	file *loader.File
	cfg  *Config
	w    *Weights
	tok  *tokenizer.Tokenizer
	pool *pool
	prof atomic.Pointer[profiler] // nil unless profiling (SetProfiling)
	info ModelInfo
	nCtx int
	kvK  kernels.Type // the KV cache's types (LoadOptions.CacheTypeK/V)
	kvV  kernels.Type

	caches  modelCaches
	grammar lazy[*grammar.Vocab] // constrain.go
	gbnf    lazy[*gbnf.Vocab]

	releaseHuge func() error // unmaps the huge-page copy of the matrices (nil: none)
	releasePack func() error // unmaps the packed matrices (nil: none)

	enc *encoder // encoder embedding models (encoder.go); nil for the decoders
}

// ModelInfo describes a loaded model.
type ModelInfo struct {
	Name          string // general.name, or the file's base name without .gguf
	Path          string
	Architecture  string
	ContextLength int   // training context ({arch}.context_length)
	NParams       int64 // number of weights
	FileType      string
	ChatTemplate  string // tokenizer.chat_template ("" when absent)
	SizeBytes     int64
	NEmbd         int
	NLayer        int
	NHead         int
	NHeadKV       int
	NVocab        int
	Threads       int
	DefaultCtx    int // context of NewSession(0)
	// PackedBytes is how many bytes of weights Load repacked
	// (LoadOptions.Pack), PackTime how long that took.
	PackedBytes int64
	PackTime    time.Duration
}

// Load opens a GGUF file and prepares it for inference. The weights stay
// in the file mapping, except on Linux, where the layer and output matrices
// move to transparent huge pages by default (same bytes, same resident
// size; WOOLLY_HUGEPAGES=0 turns it off; see moveToHugePages).
func Load(path string, o LoadOptions) (*Model, error) {
	f, err := loader.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := newModel(f, o)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil {
		m.info.SizeBytes = st.Size()
	}
	if m.enc != nil { // encoders: weights stay in the mapping as they are
		return m, nil
	}
	if packEnabled(o) {
		t0 := time.Now()
		release, n, err := packWeights(m.w, m.info.Threads, wantHugePages())
		m.releasePack = release
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		m.info.PackedBytes, m.info.PackTime = n, time.Since(t0)
	}
	m.releaseHuge = moveToHugePages(m.w)
	return m, nil
}

func newModel(f *loader.File, o LoadOptions) (*Model, error) {
	if o.Threads < 0 || o.ContextLength < 0 {
		return nil, errors.New("threads and context length must not be negative")
	}
	if o.Attention < AttentionDefault || o.Attention > AttentionExact {
		return nil, fmt.Errorf("unknown attention mode %d", o.Attention)
	}
	if _, _, err := cacheTypes(nil, o); err != nil { // the names, before the file is read
		return nil, err
	}
	if arch := f.Architecture(); isEncoderArch(arch) {
		return newEncoderModel(f, o, arch)
	}
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	kvK, kvV, err := cacheTypes(cfg, o)
	if err != nil {
		return nil, err
	}
	w, err := WeightsFromGGUF(f, cfg)
	if err != nil {
		return nil, err
	}
	if err := w.checkExperts(); err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if tok.NumTokens() > cfg.NVocab {
		return nil, fmt.Errorf("vocabulary has %d tokens but token_embd.weight has %d rows", tok.NumTokens(), cfg.NVocab)
	}
	threads := o.Threads
	if threads == 0 {
		threads = PhysicalCores()
	}
	m := &Model{file: f, cfg: cfg, w: w, tok: tok, kvK: kvK, kvV: kvV}
	m.nCtx = o.ContextLength
	if m.nCtx == 0 {
		m.nCtx = min(cfg.NCtxTrain, DefaultMaxContext)
	}
	m.info = ModelInfo{
		Path: f.Path, Architecture: cfg.Arch, ContextLength: cfg.NCtxTrain,
		NEmbd: cfg.NEmbd, NLayer: cfg.NLayer, NHead: cfg.NHead, NHeadKV: cfg.NHeadKV,
		NVocab: cfg.NVocab, Threads: threads, DefaultCtx: m.nCtx,
	}
	m.info.Name, _ = f.String("general.name")
	if m.info.Name == "" {
		m.info.Name = strings.TrimSuffix(filepath.Base(f.Path), ".gguf")
	}
	m.info.ChatTemplate, _ = f.String("tokenizer.chat_template")
	m.info.NParams, m.info.FileType = fileParams(f)
	m.info.SizeBytes = f.Size
	if err := m.initCaches(o); err != nil {
		return nil, err
	}
	m.pool = newPool(threads)
	return m, nil
}

// Close releases the workers and the file mapping.
func (m *Model) Close() error {
	m.closeCaches()
	m.pool.close()
	var err error
	if m.releaseHuge != nil {
		err = m.releaseHuge()
		m.releaseHuge = nil
	}
	if m.releasePack != nil {
		err = errors.Join(err, m.releasePack())
		m.releasePack = nil
	}
	return errors.Join(err, m.file.Close())
}

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Info describes the model.
func (m *Model) Info() ModelInfo { return m.info }

// Config returns the model's hyperparameters.
func (m *Model) Config() Config { return *m.cfg }

// fileParams counts the parameters of f's tensors and names its file type
// (fileTypeName over the 2-D tensors' element counts per type).
func fileParams(f *loader.File) (nparams int64, fileType string) {
	counts := map[kernels.Type]int64{}
	for _, t := range f.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		nparams += n
		if len(t.Shape) == 2 {
			counts[t.Type] += n
		}
	}
	return nparams, fileTypeName(f, counts)
}

func fileTypeName(f *loader.File, counts map[kernels.Type]int64) string {
	if _, name, ok := f.FileType(); ok && name != "" {
		return name
	}
	best, bestN := kernels.F32, int64(-1)
	for t, n := range counts {
		if n > bestN || (n == bestN && t < best) {
			best, bestN = t, n
		}
	}
	return best.String()
}

// Session is one sequence with its own KV cache. It is not safe for
// concurrent use.
type Session struct {
	model  *Model
	nCtx   int
	pos    int
	tokens []int32
	kcache [][]byte // per layer [nCtx] rows of KVDim values of model.kvK (f16 by default, like the reference's cache)
	vcache [][]byte // the same in model.kvV
	// rec is the recurrent state of the linear-attention layers after the
	// pos cached tokens (nil for models without them). It cannot be rolled
	// back: Truncate keeps all positions or none.
	rec   *recurrentState
	ckpts []recCheckpoint // copies of rec at earlier positions, ascending (recsnap.go)
	st    *fwdState       // scratch of its own passes (nil in a batch: the batch's steps have theirs)
	last  []float32       // logits of the last evaluated position [NVocab]
	batch *Batch          // the batch it evaluates through, or nil
	// hiddenOut makes forward write the final-normed hidden rows instead
	// of logits (Embed's sessions, never in a batch).
	hiddenOut bool
}

// CheckFile reports whether the model file still holds every byte that was
// mapped (loader.File.Check): an error wrapping loader.ErrTruncated when it
// was cut underneath the model, whose weights would then fault (SIGBUS).
// NewSession checks; long-lived sessions should check before each use.
func (m *Model) CheckFile() error { return m.file.Check() }

// NewSession makes a session with a KV cache of nCtx positions (0: the
// model's default context). It fails when the model file was truncated
// since the model was loaded (CheckFile).
func (m *Model) NewSession(nCtx int) (*Session, error) {
	return m.newSession(nCtx, true)
}

// newSession makes a session, with forward scratch of its own if scratch.
func (m *Model) newSession(nCtx int, scratch bool) (*Session, error) {
	if m.enc != nil {
		return nil, ErrEmbeddingOnly
	}
	if nCtx < 0 {
		return nil, fmt.Errorf("context length %d is negative", nCtx)
	}
	if nCtx == 0 {
		nCtx = m.nCtx
	}
	if err := m.CheckFile(); err != nil {
		return nil, err
	}
	c := m.cfg
	if err := checkKVSize(c, nCtx, m.kvRowBytes(), totalMemory()); err != nil {
		return nil, err
	}
	s := &Session{model: m, nCtx: nCtx, kcache: make([][]byte, c.NLayer), vcache: make([][]byte, c.NLayer)}
	kb, vb := m.kvRows()
	for i := range s.kcache {
		if j := c.kvSource(i); j != i { // gemma4: a layer reading an earlier layer's cache
			s.kcache[i], s.vcache[i] = s.kcache[j], s.vcache[j]
			continue
		}
		s.kcache[i] = make([]byte, nCtx*kb)
		s.vcache[i] = make([]byte, nCtx*vb)
	}
	if c.hasRecurrent() {
		s.rec = newRecurrentState(c)
	}
	if scratch {
		s.st = newFwdState(c, min(maxBatch, nCtx), nCtx, m.pool.n)
	}
	s.last = make([]float32, c.NVocab)
	return s, nil
}

// checkKVSize refuses a KV cache of nCtx positions that could not be
// allocated: larger than the machine's memory (mem bytes; 0: unknown) or
// than an int can count. A plain make of that size is a fatal error, not
// an error a caller can handle. rowBytes is one position's K and V bytes
// in one layer.
func checkKVSize(c *Config, nCtx int, rowBytes int64, mem uint64) error {
	per := uint64(c.NLayer) * uint64(rowBytes) // K and V, every layer
	if per == 0 {
		return nil
	}
	if uint64(nCtx) > (1<<62)/per || uint64(nCtx)*uint64(c.KVDim()) > 1<<40 {
		return fmt.Errorf("context length %d: its KV cache is too large to allocate", nCtx)
	}
	if need := uint64(nCtx) * per; mem > 0 && need > mem {
		return fmt.Errorf("context length %d: its KV cache needs %d MiB, more than the machine's %d MiB of memory",
			nCtx, need>>20, mem>>20)
	}
	return nil
}

// Pos is the number of positions in the cache.
func (s *Session) Pos() int { return s.pos }

// NCtx is the capacity of the cache.
func (s *Session) NCtx() int { return s.nCtx }

// Tokens are the ids in the cache, in order (do not modify).
func (s *Session) Tokens() []int32 { return s.tokens[:s.pos] }

// Model returns the model the session belongs to.
func (s *Session) Model() *Model { return s.model }

// Reset empties the cache.
func (s *Session) Reset() {
	s.pos, s.tokens = 0, s.tokens[:0]
	if s.rec != nil {
		s.rec.clear()
		s.ckpts = s.ckpts[:0]
	}
}

// Truncate drops every position from pos on, keeping the first pos.
func (s *Session) Truncate(pos int) error {
	if pos < 0 || pos > s.pos {
		return fmt.Errorf("truncate to %d: the cache holds %d positions", pos, s.pos)
	}
	if s.rec != nil {
		if err := s.rollbackRec(pos); err != nil {
			return err
		}
	}
	s.pos = pos
	s.tokens = s.tokens[:pos]
	return nil
}

// Eval appends tokens to the sequence and returns logits: the last row
// [NVocab], or with allLogits every row [len(tokens)][NVocab] (row i is the
// distribution of the token after tokens[i]). The returned slice is new.
func (s *Session) Eval(tokens []int32, allLogits bool) ([]float32, error) {
	all, err := s.eval(tokens, allLogits)
	if err != nil {
		return nil, err
	}
	if allLogits {
		return all, nil
	}
	return append([]float32(nil), s.last...), nil
}

// EvalInto is Eval(tokens, false) with the last row's logits copied into
// logits, which must hold exactly NVocab values, instead of a new slice: a
// loop that evaluates one token at a time reuses one buffer and allocates
// nothing per token.
func (s *Session) EvalInto(tokens []int32, logits []float32) error {
	if nv := s.model.cfg.NVocab; len(logits) != nv {
		return fmt.Errorf("logits buffer of %d values: the vocabulary has %d", len(logits), nv)
	}
	if _, err := s.eval(tokens, false); err != nil {
		return err
	}
	copy(logits, s.last)
	return nil
}

// eval is Eval without the copy of the last row (kept in s.last).
func (s *Session) eval(tokens []int32, allLogits bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("no tokens to evaluate")
	}
	if s.pos+len(tokens) > s.nCtx {
		return nil, fmt.Errorf("context full: %d positions used + %d new tokens > context length %d", s.pos, len(tokens), s.nCtx)
	}
	nv := s.model.cfg.NVocab
	for _, t := range tokens {
		if t < 0 || int(t) >= nv {
			return nil, fmt.Errorf("token id %d out of range [0, %d)", t, nv)
		}
	}
	if s.batch != nil {
		return s.batch.eval(s, tokens, allLogits)
	}
	var all []float32
	if allLogits {
		all = make([]float32, len(tokens)*nv)
	}
	nb := s.st.nBatch
	for b := 0; b < len(tokens); b += nb {
		chunk := tokens[b:min(b+nb, len(tokens))]
		n := len(chunk)
		switch {
		case allLogits:
			s.forward(chunk, 0, all[b*nv:(b+n)*nv])
		case b+n == len(tokens):
			s.forward(chunk, n-1, s.last)
		default:
			s.forward(chunk, n, nil)
		}
		s.pos += n
		s.tokens = append(s.tokens[:s.pos-n], chunk...)
	}
	if allLogits {
		copy(s.last, all[(len(tokens)-1)*nv:])
	}
	return all, nil
}

// TotalMemory is the machine's RAM in bytes (0: unknown; only Linux asks).
func TotalMemory() uint64 { return totalMemory() }

// KVBytesPerPosition is the memory one context position of a session's KV
// cache takes: K and V in their cache types, every layer. A session of
// nCtx positions allocates nCtx times this when it is made.
func (m *Model) KVBytesPerPosition() int64 {
	return int64(m.cfg.NLayer) * m.kvRowBytes()
}

// CacheTypes are the types of the sessions' K and V caches.
func (m *Model) CacheTypes() (k, v kernels.Type) { return m.kvK, m.kvV }

// kvRows is the bytes of one position's K row and V row in one layer.
func (m *Model) kvRows() (k, v int) {
	kvd := int64(m.cfg.KVDim())
	kb, _ := m.kvK.RowBytes(kvd)
	vb, _ := m.kvV.RowBytes(kvd)
	return int(kb), int(vb)
}

// kvRowBytes is one position's K and V bytes in one layer.
func (m *Model) kvRowBytes() int64 {
	k, v := m.kvRows()
	return int64(k + v)
}

// kvQuant reports whether a cache type is quantized (the AttentionKVQ path).
func (m *Model) kvQuant() bool { return m.kvK != kernels.F16 || m.kvV != kernels.F16 }

// cacheTypes reads o's cache types and checks them against the model's
// configuration (nil: the names only).
func cacheTypes(cfg *Config, o LoadOptions) (k, v kernels.Type, err error) {
	if k, err = ParseCacheType(o.CacheTypeK); err != nil {
		return 0, 0, fmt.Errorf("cache-type-k: %w", err)
	}
	if v, err = ParseCacheType(o.CacheTypeV); err != nil {
		return 0, 0, fmt.Errorf("cache-type-v: %w", err)
	}
	if k == kernels.F16 && v == kernels.F16 {
		return k, v, nil
	}
	if cfg != nil && cfg.G4 != nil { // gemma4: every layer's head size counts
		for il, hd := range cfg.G4.HeadDim {
			if hd%32 != 0 {
				return 0, 0, fmt.Errorf("cache types %v/%v: a quantized KV cache needs head sizes that are a multiple of 32; this %s model has %d (layer %d)", k, v, cfg.Arch, hd, il)
			}
		}
	}
	if cfg != nil && cfg.HeadDim%32 != 0 {
		return 0, 0, fmt.Errorf("cache types %v/%v: a quantized KV cache needs a head size that is a multiple of 32; this %s model has %d", k, v, cfg.Arch, cfg.HeadDim)
	}
	return k, v, nil
}
