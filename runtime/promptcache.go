package runtime

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Prompt cache files (woolly run --prompt-cache FILE) hold a session's
// first positions: their token ids and the f16 K and V rows of every
// layer, so a later run on the same model skips the prefix it shares.
//
// Layout, little-endian:
//
//	magic "WOOLLYPC", version u32 (1)
//	model file size u64, SHA-256 of the model's GGUF header (the bytes
//	before the tensor data: metadata and tensor descriptions)
//	layers u32, KV dim u32, KV type u32 (1: f16), context u32, tokens u32
//	tokens [tokens]i32
//	per layer: K rows [tokens*KVdim]u16, then V rows
//	SHA-256 of everything above
//
// A reader checks the header against the model and the file's size
// against the header before reading rows, and the checksum before the
// state is used.
const (
	promptCacheMagic   = "WOOLLYPC"
	promptCacheVersion = 1
	promptCacheF16     = 1
	promptCacheHeader  = 8 + 4 + 8 + 32 + 5*4
)

// ErrPromptCache marks a prompt cache file that does not belong to the model
// or is damaged.
var ErrPromptCache = errors.New("prompt cache")

// modelIdentity is the model file's size and the SHA-256 of its header.
func (m *Model) modelIdentity() (uint64, [32]byte) {
	b := m.file.Bytes()
	end := m.file.DataOffset
	if end < 0 || end > int64(len(b)) {
		end = int64(len(b))
	}
	return uint64(len(b)), sha256.Sum256(b[:end])
}

// PromptCacheSupported reports why the session's state cannot go into a
// prompt cache file (nil: it can).
func (s *Session) PromptCacheSupported() error { return s.promptCacheCheck() }

func (s *Session) promptCacheCheck() error {
	if s.rec != nil {
		return fmt.Errorf("%w: %s keeps a recurrent state that prompt cache files do not hold", ErrPromptCache, s.model.cfg.Arch)
	}
	if s.model.kvQuant() {
		k, v := s.model.CacheTypes()
		return fmt.Errorf("%w: prompt cache files hold an f16 KV cache; this model's is %v/%v (cache-type-k/-v)", ErrPromptCache, k, v)
	}
	return nil
}

// WritePromptCache writes the session's first n positions as a prompt cache
// file. Models with a recurrent state (qwen35) are refused.
func (s *Session) WritePromptCache(w io.Writer, n int) error {
	if err := s.promptCacheCheck(); err != nil {
		return err
	}
	if n <= 0 || n > s.pos {
		return fmt.Errorf("%w: %d positions asked of a session holding %d", ErrPromptCache, n, s.pos)
	}
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	size, id := s.model.modelIdentity()
	hdr := make([]byte, 0, promptCacheHeader)
	hdr = append(hdr, promptCacheMagic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, promptCacheVersion)
	hdr = binary.LittleEndian.AppendUint64(hdr, size)
	hdr = append(hdr, id[:]...)
	kvd := s.model.cfg.KVDim()
	for _, v := range []int{len(s.kcache), kvd, promptCacheF16, s.nCtx, n} {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(v))
	}
	bw.Write(hdr)
	buf := make([]byte, 0, 64<<10)
	for _, t := range s.tokens[:n] {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
		if len(buf) >= 64<<10 {
			bw.Write(buf)
			buf = buf[:0]
		}
	}
	bw.Write(buf)
	e := n * kvd
	for i := range s.kcache {
		for _, rows := range [][]uint16{halfs(s.kcache[i][:2*e]), halfs(s.vcache[i][:2*e])} {
			for len(rows) > 0 {
				c := min(len(rows), 32<<10)
				buf = buf[:0]
				for _, x := range rows[:c] {
					buf = binary.LittleEndian.AppendUint16(buf, x)
				}
				bw.Write(buf)
				rows = rows[c:]
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// ReadPromptCache replaces the session's state by the prompt cache file r
// of size bytes: its positions and tokens (the last logits are not kept,
// so evaluate at least one token before reading them; Generate does).
// A file of another model, of other dimensions, longer than the session's
// context, truncated, padded or damaged is refused with an error naming
// the problem (wrapping ErrPromptCache) and leaves the session empty.
func (s *Session) ReadPromptCache(r io.Reader, size int64) error {
	if err := s.promptCacheCheck(); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrPromptCache, fmt.Sprintf(format, a...))
	}
	if size < promptCacheHeader+32 {
		return bad("file of %d bytes is shorter than a header", size)
	}
	h := sha256.New()
	br := bufio.NewReader(r)
	read := func(p []byte) error { // hashes what it returns
		_, err := io.ReadFull(br, p)
		h.Write(p)
		return err
	}
	hdr := make([]byte, promptCacheHeader)
	if err := read(hdr); err != nil {
		return bad("reading the header: %v", err)
	}
	if string(hdr[:8]) != promptCacheMagic {
		return bad("not a Woolly prompt cache file (magic %q)", hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != promptCacheVersion {
		return bad("version %d, this build reads %d", v, promptCacheVersion)
	}
	msize, id := s.model.modelIdentity()
	if binary.LittleEndian.Uint64(hdr[12:]) != msize || !bytes.Equal(hdr[20:52], id[:]) {
		return bad("made with another model file (size or GGUF header differ)")
	}
	f := make([]uint32, 5)
	for i := range f {
		f[i] = binary.LittleEndian.Uint32(hdr[52+4*i:])
	}
	layers, kvd, typ, ctx, n := f[0], f[1], f[2], f[3], f[4]
	if int64(layers) != int64(len(s.kcache)) || int64(kvd) != int64(s.model.cfg.KVDim()) {
		return bad("%d layers of KV dim %d, the model has %d of %d", layers, kvd, len(s.kcache), s.model.cfg.KVDim())
	}
	if typ != promptCacheF16 {
		return bad("KV type %d, want %d (f16)", typ, promptCacheF16)
	}
	if n == 0 || int64(n) > int64(s.nCtx) {
		return bad("%d positions (saved with context %d) do not fit the context of %d", n, ctx, s.nCtx)
	}
	want := int64(promptCacheHeader) + 4*int64(n) + 2*2*int64(layers)*int64(n)*int64(kvd) + 32
	if size != want {
		return bad("file is %d bytes, its header says %d (truncated or damaged)", size, want)
	}
	// From here on the session's buffers are overwritten: empty it on error.
	s.pos = 0
	s.tokens = s.tokens[:0]
	if s.rec != nil {
		s.rec.clear()
	}
	buf := make([]byte, 64<<10)
	toks := make([]int32, 0, n)
	nv := s.model.cfg.NVocab
	for len(toks) < int(n) {
		c := min(int(n)-len(toks), len(buf)/4)
		if err := read(buf[:4*c]); err != nil {
			return bad("reading tokens: %v", err)
		}
		for i := 0; i < c; i++ {
			t := int32(binary.LittleEndian.Uint32(buf[4*i:]))
			if t < 0 || int(t) >= nv {
				return bad("token %d is not in the vocabulary of %d", t, nv)
			}
			toks = append(toks, t)
		}
	}
	e := int(n) * int(kvd)
	for i := range s.kcache {
		for _, rows := range [][]uint16{halfs(s.kcache[i][:2*e]), halfs(s.vcache[i][:2*e])} {
			for len(rows) > 0 {
				c := min(len(rows), len(buf)/2)
				if err := read(buf[:2*c]); err != nil {
					return bad("reading KV rows: %v", err)
				}
				for j := range rows[:c] {
					rows[j] = binary.LittleEndian.Uint16(buf[2*j:])
				}
				rows = rows[c:]
			}
		}
	}
	sum := h.Sum(nil)
	var got [32]byte
	if _, err := io.ReadFull(br, got[:]); err != nil {
		return bad("reading the checksum: %v", err)
	}
	if !bytes.Equal(sum, got[:]) {
		return bad("checksum mismatch (the file is damaged)")
	}
	s.tokens = append(s.tokens, toks...)
	s.pos = int(n)
	return nil
}
