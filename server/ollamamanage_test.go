package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Ollama's model-management routes answer a JSON error in Ollama's shape
// saying what to do instead, and change nothing in the models directory.
func TestOllamaManagementRoutes(t *testing.T) {
	s, ts := newTestServer(t, Config{}, newFakeBackend())
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/pull", `{"model":"llama3.2"}`},
		{"POST", "/api/push", `{"model":"tiny"}`},
		{"POST", "/api/create", `{"model":"mine","from":"tiny"}`},
		{"POST", "/api/copy", `{"source":"tiny","destination":"tiny2"}`},
		{"DELETE", "/api/delete", `{"model":"tiny"}`},
	} {
		r := do(t, ts, c.method, c.path, c.body)
		var e struct{ Error string }
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != 501 || e.Error == "" || strings.Contains(e.Error, "no route") {
			t.Errorf("%s %s: %d %s; want 501 with an Ollama error", c.method, c.path, r.status, r.body)
		}
		op := strings.TrimPrefix(c.path, "/api/")
		if !strings.HasPrefix(e.Error, op+": ") {
			t.Errorf("%s: %q does not start with %q", c.path, e.Error, op+": ")
		}
		want := map[string]string{"pull": "woolly import", "push": "models directory", "create": "woolly import",
			"copy": "woolly cp", "delete": "woolly rm"}[op]
		if !strings.Contains(e.Error, want) {
			t.Errorf("%s: %q does not name %q", c.path, e.Error, want)
		}
	}
	if r := do(t, ts, "GET", "/api/pull", ""); r.status != 405 {
		t.Errorf("GET /api/pull: %d", r.status)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.ModelsDir, "tiny.gguf")); err != nil {
		t.Errorf("delete removed the model: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.ModelsDir, "tiny2.gguf")); err == nil {
		t.Errorf("copy made a file")
	}
}
