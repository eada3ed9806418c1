package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/internal/shared"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"qwen3": "qwen3", "qwen3:latest": "qwen3", "qwen3.gguf": "qwen3", "qwen3:latest.gguf": "qwen3",
		"qwen3:0.6b": "qwen3:0.6b", "Llama-3.2-1B-Q4_K_M": "Llama-3.2-1B-Q4_K_M", "a b": "a b",
	} {
		got, err := Canonical(in)
		if err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ":latest", ".gguf", "../x", "a/b", `a\b`, "/abs", ".hidden", "a:b:c", ":tag", "name:", "a\x00b", "a\nb", "x..y"} {
		if got, err := Canonical(bad); err == nil {
			t.Errorf("Canonical(%q) = %q, want an error", bad, got)
		} else if ne := (*NameError)(nil); !errors.As(err, &ne) {
			t.Errorf("Canonical(%q): %v is not a NameError", bad, err)
		}
	}
	if Display("qwen3") != "qwen3:latest" || Display("qwen3:0.6b") != "qwen3:0.6b" {
		t.Error("Display")
	}
}

func TestDirDefaultAndEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(Env, "")
	d, err := Dir()
	if err != nil || d != filepath.Join(home, ".woolly", "models") {
		t.Fatalf("Dir() = %q, %v", d, err)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("the default directory was not created: %v", err)
	}
	other := filepath.Join(t.TempDir(), "a", "b")
	t.Setenv(Env, other)
	if d, err := Dir(); err != nil || d != other {
		t.Fatalf("Dir() with %s = %q, %v", Env, d, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("WOOLLY_MODELS's directory was not created")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	t.Setenv(Env, file)
	if _, err := Dir(); err == nil {
		t.Error("a file as the models directory was accepted")
	}
}

func testModel(t *testing.T) string {
	return filepath.Join(shared.Dir(t), "models", "stories260K-Q8_0.gguf")
}

func TestImportResolveListCopyRemove(t *testing.T) {
	src := testModel(t)
	dir := t.TempDir()
	want, _ := os.ReadFile(src)

	n, err := Import(dir, src, "", ImportOptions{})
	if err != nil || n != "stories260K-Q8_0" {
		t.Fatalf("Import = %q, %v", n, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, n+".gguf")); string(got) != string(want) {
		t.Fatal("the imported copy differs from the file")
	}
	if _, err := Import(dir, src, "", ImportOptions{}); err == nil {
		t.Fatal("importing over an existing model without Force")
	} else if ee := (*ExistsError)(nil); !errors.As(err, &ee) {
		t.Fatalf("overwrite: %v", err)
	}
	if _, err := Import(dir, src, "", ImportOptions{Force: true}); err != nil {
		t.Fatalf("Force: %v", err)
	}
	// The model's own file (or a link to it) brought in over itself: refused, kept.
	own := filepath.Join(dir, n+".gguf")
	for _, o := range []ImportOptions{{Force: true}, {Force: true, Link: true}} {
		if _, err := Import(dir, own, "", o); err == nil || !strings.Contains(err.Error(), "already") {
			t.Errorf("import of %s over itself (%+v): %v", own, o, err)
		}
		if got, _ := os.ReadFile(own); string(got) != string(want) {
			t.Fatalf("import over itself (%+v) lost the model", o)
		}
	}
	if n, err := Import(dir, src, "tiny:latest", ImportOptions{Link: true}); err != nil || n != "tiny" {
		t.Fatalf("Import --link = %q, %v", n, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "tiny.gguf")); err != nil || !filepath.IsAbs(target) {
		t.Fatalf("the link: %q, %v", target, err)
	}
	if _, err := Import(dir, src, "tiny:q8", ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not a GGUF file, a missing file, a bad name: errors, nothing written.
	junk := filepath.Join(t.TempDir(), "junk.gguf")
	os.WriteFile(junk, []byte("not a model at all"), 0o644)
	if _, err := Import(dir, junk, "", ImportOptions{}); err == nil {
		t.Error("a non-GGUF file was imported")
	}
	if _, err := Import(dir, filepath.Join(dir, "absent.gguf"), "", ImportOptions{}); err == nil {
		t.Error("a missing file was imported")
	}
	if _, err := Import(dir, src, "../escape", ImportOptions{}); err == nil {
		t.Error("a path as the name was accepted")
	}

	for in, want := range map[string]string{"tiny": "tiny", "tiny:latest": "tiny", "tiny.gguf": "tiny", "tiny:q8": "tiny:q8"} {
		n, p, err := Resolve(dir, in)
		if err != nil || n != want || p != filepath.Join(dir, want+".gguf") {
			t.Errorf("Resolve(%q) = %q %q %v", in, n, p, err)
		}
	}
	if _, _, err := Resolve(dir, "tiny:q4"); err == nil {
		t.Error("an absent tag resolved")
	} else if nf := (*NotFoundError)(nil); !errors.As(err, &nf) {
		t.Errorf("absent tag: %v", err)
	}

	// Hidden, foreign and broken files are not models.
	os.WriteFile(filepath.Join(dir, ".import-1.tmp"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "broken.gguf"))
	names := func() []string {
		es, err := List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, e := range es {
			ns = append(ns, e.Name)
		}
		return ns
	}
	if got := names(); len(got) != 3 || got[0] != "stories260K-Q8_0" || got[1] != "tiny" || got[2] != "tiny:q8" {
		t.Fatalf("List = %q", got)
	}

	if n, err := Copy(dir, "tiny:q8", "copy"); err != nil || n != "copy" {
		t.Fatalf("Copy = %q, %v", n, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "copy.gguf")); string(got) != string(want) {
		t.Fatal("the copy differs")
	}
	if _, err := Copy(dir, "tiny", "linked"); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "linked.gguf")); err != nil || target != src && !filepath.IsAbs(target) {
		t.Fatalf("copy of a link: %q, %v", target, err)
	}
	if _, err := Copy(dir, "tiny", "copy"); err == nil {
		t.Error("Copy over an existing model")
	}
	if _, err := Copy(dir, "nothing", "x"); err == nil {
		t.Error("Copy of a missing model")
	}

	if _, err := Remove(dir, "tiny"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Fatal("removing a linked model removed its target")
	}
	if _, err := Remove(dir, "tiny"); err == nil {
		t.Error("removing twice")
	}
	if got := names(); len(got) != 4 || got[0] != "copy" || got[1] != "linked" {
		t.Fatalf("after rm: %q", got)
	}
}

func TestLooksLikePath(t *testing.T) {
	src := testModel(t)
	if !LooksLikePath(src) || !LooksLikePath("./x") || LooksLikePath("qwen3") || LooksLikePath("absent.gguf") {
		t.Error("LooksLikePath")
	}
}

// A file that is not GGUF is refused with one mention of its path (the
// loader's error names it already).
func TestImportNotGGUFNamesTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "notes.gguf")
	if err := os.WriteFile(file, []byte("# not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Import(dir, file, "", ImportOptions{})
	if err == nil || strings.Count(err.Error(), file) != 1 || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Fatalf("error %v: want the path once and why", err)
	}
}
