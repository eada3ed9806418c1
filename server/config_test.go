package server

import (
	"testing"
	"time"

	"github.com/woolly-llm/woolly/runtime"
)

// Unset settings get the defaults (DefaultMaxQueue, DefaultKeepAlive);
// an explicit 0 keeps its own meaning (no waiting; unload when idle); a
// negative queue is an error.
func TestConfigUnsetVersusZero(t *testing.T) {
	newS := func(c Config) *Server {
		t.Helper()
		c.ModelsDir = t.TempDir()
		s, err := New(c, newFakeBackend())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := newS(Config{})
	if s.models.maxQueue != DefaultMaxQueue || s.models.keepAlive != DefaultKeepAlive {
		t.Errorf("unset: queue %d keep-alive %v, want %d and %v", s.models.maxQueue, s.models.keepAlive, DefaultMaxQueue, DefaultKeepAlive)
	}
	s = newS(Config{MaxQueue: runtime.Ptr(0), KeepAlive: runtime.Ptr(time.Duration(0))})
	if s.models.maxQueue != 0 || s.models.keepAlive != 0 {
		t.Errorf("explicit 0: queue %d keep-alive %v, want 0 and 0", s.models.maxQueue, s.models.keepAlive)
	}
	s = newS(Config{MaxQueue: runtime.Ptr(7), KeepAlive: runtime.Ptr(-time.Second)})
	if s.models.maxQueue != 7 || s.models.keepAlive != -time.Second {
		t.Errorf("values: queue %d keep-alive %v", s.models.maxQueue, s.models.keepAlive)
	}
	if _, err := New(Config{ModelsDir: t.TempDir(), MaxQueue: runtime.Ptr(-1)}, newFakeBackend()); err == nil {
		t.Error("a negative queue was accepted")
	}
}
