// Package models is the models directory of the command line: where a model
// name (as Ollama users type them: "qwen3", "qwen3:latest", "qwen3:0.6b")
// finds its GGUF file, and the verbs that manage the directory (list,
// import, copy, remove).
//
// A model named NAME is the file DIR/NAME.gguf; a tag is part of the file
// name (qwen3:0.6b is DIR/qwen3:0.6b.gguf) except the tag latest, which is
// the untagged name (qwen3:latest is DIR/qwen3.gguf), as the server's
// Ollama API resolves names (contracts.md, "Server").
package models

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/woolly-llm/woolly/loader"
)

// Env is the environment variable naming the models directory.
const Env = "WOOLLY_MODELS"

// Ext is the file extension of a model in the directory.
const Ext = ".gguf"

// Home is Woolly's directory in the user's home (~/.woolly): the default
// models directory is under it, and so are the chat history and saved
// conversations.
func Home() (string, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for ~/.woolly: %w", err)
	}
	return filepath.Join(h, ".woolly"), nil
}

// DefaultDir is the models directory when WOOLLY_MODELS is unset or empty:
// ~/.woolly/models.
func DefaultDir() (string, error) {
	h, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "models"), nil
}

// Dir returns the models directory (WOOLLY_MODELS, else ~/.woolly/models),
// created when it does not exist yet.
func Dir() (string, error) {
	d, err := DirPath()
	if err != nil {
		return "", err
	}
	return d, Ensure(d)
}

// DirPath returns the models directory like Dir, without creating it (to
// look a name up, an absent directory has no models).
func DirPath() (string, error) {
	if d := os.Getenv(Env); d != "" {
		return d, nil
	}
	return DefaultDir()
}

// Ensure creates the directory d (and its parents) when it does not exist;
// an existing file that is not a directory is an error.
func Ensure(d string) error {
	fi, err := os.Stat(d)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("models directory %s is not a directory", d)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("models directory: %w", err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("creating the models directory: %w", err)
	}
	return nil
}

// NameError is a model name that cannot name a file of the directory.
type NameError struct {
	Name, Why string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("invalid model name %q: %s", e.Name, e.Why)
}

// Canonical returns the name a model is stored under: NAME:latest and
// NAME.gguf are NAME; NAME:TAG stays NAME:TAG. A name that is empty, looks
// like a path (a slash, "..", a leading dot), has more than one colon, an
// empty part around its colon, or control characters is an error.
func Canonical(name string) (string, error) {
	n := strings.TrimSuffix(name, Ext)
	n = strings.TrimSuffix(n, ":latest")
	switch {
	case n == "":
		return "", &NameError{name, "empty"}
	case strings.ContainsAny(n, `/\`) || strings.Contains(n, "..") || filepath.IsAbs(n):
		return "", &NameError{name, "names are files of the models directory, not paths"}
	case strings.HasPrefix(n, "."):
		return "", &NameError{name, "a name may not start with a dot"}
	case strings.Count(n, ":") > 1:
		return "", &NameError{name, "want NAME or NAME:TAG (one colon)"}
	}
	if base, tag, ok := strings.Cut(n, ":"); ok && (base == "" || tag == "") {
		return "", &NameError{name, "want NAME or NAME:TAG (neither part empty)"}
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f {
			return "", &NameError{name, "control characters"}
		}
	}
	return n, nil
}

// Display is how a stored name is shown (Ollama's habit, as /api/tags
// lists them): an untagged name gets :latest.
func Display(canonical string) string {
	if strings.Contains(canonical, ":") {
		return canonical
	}
	return canonical + ":latest"
}

// NotFoundError is a valid name with no file in the directory.
type NotFoundError struct {
	Name, Dir string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("model %q not found in %s ('woolly list' shows the models; 'woolly import FILE [NAME]' adds one)", e.Name, e.Dir)
}

// Path returns the file a name is stored in (whether or not it exists).
func Path(dir, name string) (string, error) {
	n, err := Canonical(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, n+Ext), nil
}

// Resolve returns the canonical name and the file of an existing model.
func Resolve(dir, name string) (string, string, error) {
	n, err := Canonical(name)
	if err != nil {
		return "", "", err
	}
	p := filepath.Join(dir, n+Ext)
	fi, err := os.Stat(p) // a symbolic link (woolly import --link) counts by its target
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", &NotFoundError{name, dir}
		}
		return "", "", err
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("model %q: %s is not a regular file", name, p)
	}
	return n, p, nil
}

// LooksLikePath reports whether a model argument is a file path rather than
// a name: it has a path separator or ends in .gguf and exists as a file.
// run and chat take either.
func LooksLikePath(arg string) bool {
	if strings.ContainsAny(arg, `/\`) {
		return true
	}
	if strings.HasSuffix(arg, Ext) {
		if fi, err := os.Stat(arg); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// Entry is one model of the directory.
type Entry struct {
	Name    string // canonical
	Path    string
	Size    int64
	ModTime time.Time
	Link    string // the target when the file is a symbolic link
}

// List returns the directory's models sorted by name. Files that are not
// models (no .gguf, hidden, an invalid name, a broken link) are left out.
func List(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, de := range des {
		base, ok := strings.CutSuffix(de.Name(), Ext)
		if !ok {
			continue
		}
		if n, err := Canonical(base); err != nil || n != base {
			continue
		}
		p := filepath.Join(dir, de.Name())
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		e := Entry{Name: base, Path: p, Size: fi.Size(), ModTime: fi.ModTime()}
		if de.Type()&fs.ModeSymlink != 0 {
			e.Link, _ = os.Readlink(p)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ExistsError is a destination name that is taken.
type ExistsError struct{ Name string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("model %q exists already (remove it first, or pass --force)", e.Name)
}

// ImportOptions says how a file comes into the directory.
type ImportOptions struct {
	Link  bool // a symbolic link to the file (its absolute path) instead of a copy
	Force bool // replace a model of that name
}

// NameFromFile is the name a file is imported under when none is given: its
// base name without .gguf.
func NameFromFile(file string) string {
	return strings.TrimSuffix(filepath.Base(file), Ext)
}

// Import brings the GGUF file into the directory as name (NameFromFile when
// name is empty): a copy, or a symbolic link with o.Link. The file must open
// as GGUF; the copy is written beside its destination and renamed into
// place, so a failed copy leaves nothing behind. It returns the canonical
// name.
func Import(dir, file, name string, o ImportOptions) (string, error) {
	if name == "" {
		name = NameFromFile(file)
	}
	n, err := Canonical(name)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", file)
	}
	f, err := loader.Open(file)
	if err != nil {
		return "", err // the loader's errors name the file
	}
	f.Close()
	dst := filepath.Join(dir, n+Ext)
	if dfi, err := os.Stat(dst); err == nil && os.SameFile(fi, dfi) {
		return "", fmt.Errorf("%s is the model %q already", file, n) // replacing it by a copy or link of itself would lose it
	}
	if err := checkFree(dst, n, o.Force); err != nil {
		return "", err
	}
	if o.Link {
		abs, err := filepath.Abs(file)
		if err != nil {
			return "", err
		}
		return n, replaceWith(dst, func(tmp string) error { return os.Symlink(abs, tmp) })
	}
	return n, copyFile(file, dst)
}

// Copy makes dst a second name for the model src: a symbolic link stays a
// link to the same file; a file is hard-linked when the file system allows
// it, else copied.
func Copy(dir, src, dst string) (string, error) {
	_, sp, err := Resolve(dir, src)
	if err != nil {
		return "", err
	}
	dn, err := Canonical(dst)
	if err != nil {
		return "", err
	}
	dp := filepath.Join(dir, dn+Ext)
	if err := checkFree(dp, dn, false); err != nil {
		return "", err
	}
	if target, err := os.Readlink(sp); err == nil {
		return dn, replaceWith(dp, func(tmp string) error { return os.Symlink(target, tmp) })
	}
	if err := os.Link(sp, dp); err == nil {
		return dn, nil
	}
	return dn, copyFile(sp, dp)
}

// Remove deletes a model (a link, not its target).
func Remove(dir, name string) (string, error) {
	n, err := Canonical(name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, n+Ext)
	if _, err := os.Lstat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &NotFoundError{name, dir}
		}
		return "", err
	}
	return n, os.Remove(p)
}

func checkFree(p, name string, force bool) error {
	if _, err := os.Lstat(p); err == nil {
		if !force {
			return &ExistsError{name}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// replaceWith creates a temporary name beside dst with make, then renames
// it over dst.
func replaceWith(dst string, make func(tmp string) error) error {
	tmp := filepath.Join(filepath.Dir(dst), fmt.Sprintf(".import-%d-%d.tmp", os.Getpid(), time.Now().UnixNano()))
	if err := make(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return replaceWith(dst, func(tmp string) error {
		out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
			return fmt.Errorf("copying %s: %w", src, err)
		}
		return nil
	})
}
