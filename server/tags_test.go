package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Names with a tag (woolly import FILE name:tag writes DIR/name:tag.gguf)
// are served under that name; :latest is the untagged file.
func TestTaggedNames(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tiny.gguf", "tiny:q8.gguf", ".hidden.gguf", "a:b:c.gguf"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("GGUF tiny"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, ts := newHTTPTestServer(t, Config{ModelsDir: dir}, newFakeBackend())
	r := do(t, ts, "GET", "/api/tags", "")
	wantStatus(t, r, 200)
	var tags struct {
		Models []struct{ Name, Model string }
	}
	json.Unmarshal(r.body, &tags)
	var names []string
	for _, m := range tags.Models {
		names = append(names, m.Name+"="+m.Model)
	}
	if strings.Join(names, ",") != "tiny:latest=tiny:latest,tiny:q8=tiny:q8" {
		t.Fatalf("tags %v", names)
	}
	for model, status := range map[string]int{"tiny:q8": 200, "tiny:latest": 200, "tiny": 200, "tiny.gguf": 200,
		"tiny:q4": 404, "../tiny": 400, "a:b:c": 400, ".hidden": 400} {
		r := do(t, ts, "POST", "/api/show", `{"model":"`+model+`"}`)
		if r.status != status {
			t.Errorf("/api/show %q: %d, want %d (%s)", model, r.status, status, r.body)
		}
	}
	r = do(t, ts, "POST", "/api/generate", `{"model":"tiny:q8","prompt":"x","stream":false,"keep_alive":"1m","options":{"num_predict":2}}`)
	wantStatus(t, r, 200)
	r = do(t, ts, "GET", "/api/ps", "")
	if !strings.Contains(string(r.body), `"name":"tiny:q8"`) {
		t.Errorf("/api/ps: %s", r.body)
	}
}
