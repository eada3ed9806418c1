package loader

import (
	"fmt"
	"os"
)

// Open maps the GGUF file at path read-only and parses it. Close the File to
// release the mapping.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close() // the mapping stays valid after the descriptor is closed
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
	return f, nil
}
