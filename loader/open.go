package loader

import (
	"errors"
	"fmt"
	"os"
)

// Open maps the GGUF file at path read-only and parses it. Close the File to
// release the mapping.
//
// A mapped file must not shrink while it is mapped: reading a page past the
// new end raises SIGBUS, which kills the process (Go reports it as a fatal
// fault with a stack; from C kernels it is a fatal signal). Open checks that
// the size did not change while it mapped and parsed the file, and keeps the
// descriptor so that Check can tell later, before the weights are used, that
// the file was cut; a file rewritten in place at the same size cannot be
// told apart (replacing a file by rename is safe: the mapping keeps the old
// one).
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			fh.Close()
		}
	}()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	b, release, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := Parse(b)
	if err != nil {
		if release != nil {
			release()
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	f.release = release
	if release != nil { // mapped: keep the descriptor for Check
		f.fh, keep = fh, true
		if err := f.Check(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// ErrTruncated is wrapped by Check's error when the mapped file shrank.
var ErrTruncated = errors.New("model file truncated while mapped")

// Check reports whether the mapped file still holds every mapped byte: an
// error wrapping ErrTruncated, naming both sizes, when it shrank (using the
// weights would then fault). Files read into memory always pass.
func (f *File) Check() error {
	if f == nil || f.fh == nil {
		return nil
	}
	st, err := f.fh.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if st.Size() < int64(len(f.data)) {
		return fmt.Errorf("%s: %w: it is now %d bytes, %d when loaded (reload the model once the file is complete)",
			f.Path, ErrTruncated, st.Size(), len(f.data))
	}
	return nil
}
