package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	modelnames "github.com/woolly-llm/woolly/internal/models"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// registry resolves model names inside the models directory, loads models on
// demand, runs up to parallel generations at a time per model (the model
// batches them) with a bounded wait queue,
// and unloads models after their keep-alive.
type registry struct {
	dir          string
	dirForms     []string // dir as given, absolute and with links resolved: scrubbed from errors
	backend      Backend
	keepAlive    time.Duration
	maxQueue     int
	parallel     int   // slots per model; 0: chosen at load from kvBudget (autoSlots)
	kvBudget     int64 // bytes the KV caches of one model's slots may take (auto slots)
	threads      int
	chatTemplate string // Config.ChatTemplate: replaces every model's template
	metrics      *metrics
	log          *log.Logger

	mu      sync.Mutex
	loaded  map[string]*entry
	waiting int // requests admitted but not yet generating (the queue)
	files   map[string]*fileInfo
	closed  bool
}

// entry is one loaded (or loading) model.
type entry struct {
	name, path string
	ready      chan struct{} // closed when loading ended; then model or err is set
	model      Model
	err        error
	loadDur    time.Duration
	tmpl       *chat.Template
	tmplErr    error
	sem        chan struct{} // a slot per generation running; made at load, before ready closes

	// guarded by registry.mu: the model's slots (until it is loaded, the
	// most it may get)
	slots int

	// guarded by registry.mu
	users     int           // leases held or waited for
	keepAlive time.Duration // < 0: forever
	expires   time.Time
	lastUsed  time.Time
	timer     *time.Timer
}

// fileInfo caches what Inspect and hashing found for a file version.
type fileInfo struct {
	size    int64
	modTime time.Time
	meta    ModelMeta
	digest  string
}

func newRegistry(cfg Config, backend Backend, m *metrics, lg *log.Logger) (*registry, error) {
	fi, err := os.Stat(cfg.ModelsDir)
	if err != nil {
		return nil, fmt.Errorf("models directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("models directory %s is not a directory", cfg.ModelsDir)
	}
	dirs := []string{cfg.ModelsDir}
	if abs, err := filepath.Abs(cfg.ModelsDir); err == nil {
		dirs = append(dirs, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			dirs = append(dirs, real)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) }) // longest first
	return &registry{dir: cfg.ModelsDir, dirForms: dirs, backend: backend, keepAlive: *cfg.KeepAlive, maxQueue: *cfg.MaxQueue,
		parallel: *cfg.Parallel, kvBudget: cfg.KVBudget, threads: cfg.Threads, chatTemplate: cfg.ChatTemplate, metrics: m, log: lg,
		loaded: map[string]*entry{}, files: map[string]*fileInfo{}}, nil
}

// quotedMagic is the loader's "bad magic" text, which quotes a file's
// first bytes.
var quotedMagic = regexp.MustCompile(`bad magic "(?:[^"\\]|\\.)*"`)

// maxErrorText bounds an error message sent to a client.
const maxErrorText = 1024

// scrub makes an error message fit for a client: file paths are made
// relative to the models directory (NAME.gguf), the directory itself is
// not named, a file's bytes are not quoted, and the text is cut to
// maxErrorText bytes.
func (r *registry) scrub(msg string) string {
	for _, d := range r.dirForms {
		if d == "" || d == "." {
			continue
		}
		msg = strings.ReplaceAll(msg, d+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, d, "the models directory")
	}
	msg = quotedMagic.ReplaceAllString(msg, "bad magic")
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return msg
}

// resolve maps a model name to its file as the command line does
// (internal/models): "NAME", "NAME:latest" and "NAME.gguf" name
// DIR/NAME.gguf, "NAME:TAG" names DIR/NAME:TAG.gguf. Paths are refused.
func (r *registry) resolve(name string) (string, string, error) {
	if name == "" {
		return "", "", badRequest("no model given")
	}
	n, err := modelnames.Canonical(name)
	if err != nil {
		why := err.Error()
		if ne, ok := err.(*modelnames.NameError); ok {
			why = ne.Why
		}
		return "", "", badRequest("invalid model name %s: %s", quoteShort(name), why)
	}
	p := filepath.Join(r.dir, n+modelnames.Ext)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return "", "", &httpError{http.StatusNotFound, fmt.Sprintf("model %s not found", quoteShort(name))}
	}
	return n, p, nil
}

// listing is one model file of the directory.
type listing struct {
	Name    string
	File    string // base name, relative to the models directory
	Size    int64
	ModTime time.Time
	Meta    ModelMeta
	MetaErr error
}

// list returns the directory's models sorted by name, with their metadata.
func (r *registry) list() ([]listing, error) {
	des, err := os.ReadDir(r.dir)
	if err != nil {
		return nil, err
	}
	var out []listing
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), modelnames.Ext)
		if n, err := modelnames.Canonical(name); !ok || err != nil || n != name {
			continue
		}
		fi, err := os.Stat(filepath.Join(r.dir, de.Name()))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		l := listing{Name: name, File: de.Name(), Size: fi.Size(), ModTime: fi.ModTime()}
		l.Meta, l.MetaErr = r.inspect(filepath.Join(r.dir, de.Name()), fi)
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// describe returns one model's listing.
func (r *registry) describe(name string) (listing, error) {
	n, p, err := r.resolve(name)
	if err != nil {
		return listing{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return listing{}, &httpError{http.StatusNotFound, fmt.Sprintf("model %s not found", quoteShort(name))}
	}
	l := listing{Name: n, File: filepath.Base(p), Size: fi.Size(), ModTime: fi.ModTime()}
	l.Meta, l.MetaErr = r.inspect(p, fi)
	return l, nil
}

func (r *registry) cached(p string, fi os.FileInfo) *fileInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.files[p]
	if c == nil || c.size != fi.Size() || !c.modTime.Equal(fi.ModTime()) {
		return nil
	}
	return c
}

// meta applies the server's chat template override to a model's meta.
func (r *registry) meta(m ModelMeta) ModelMeta {
	switch {
	case r.chatTemplate == "":
	case slices.Contains(chat.BuiltinNames(), r.chatTemplate):
		m.ChatTemplate, m.ChatFormat = "", r.chatTemplate
	default:
		m.ChatTemplate, m.ChatFormat = r.chatTemplate, ""
	}
	return m
}

func (r *registry) inspect(p string, fi os.FileInfo) (ModelMeta, error) {
	if c := r.cached(p, fi); c != nil {
		return c.meta, nil
	}
	meta, err := r.backend.Inspect(p)
	if err != nil {
		return ModelMeta{}, err
	}
	meta = r.meta(meta)
	r.mu.Lock()
	r.files[p] = &fileInfo{size: fi.Size(), modTime: fi.ModTime(), meta: meta}
	r.mu.Unlock()
	return meta, nil
}

// digest is the file's SHA-256 in hex, cached per file version.
func (r *registry) digest(file string) string {
	p := filepath.Join(r.dir, file)
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	if c := r.cached(p, fi); c != nil && c.digest != "" {
		return c.digest
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	d := hex.EncodeToString(h.Sum(nil))
	r.mu.Lock()
	if c := r.files[p]; c != nil && c.size == fi.Size() && c.modTime.Equal(fi.ModTime()) {
		c.digest = d
	}
	r.mu.Unlock()
	return d
}

// lease is a request's turn on a loaded model.
type lease struct {
	r        *registry
	e        *entry
	loadDur  time.Duration // time this request spent loading the model
	released bool
}

func (l *lease) model() Model { return l.e.model }

var errQueueFull = &httpError{http.StatusServiceUnavailable, "server busy: the request queue is full"}

// acquire waits for the model's turn: loading it if needed, queueing behind
// other requests. ctx bounds the wait.
func (r *registry) acquire(ctx context.Context, name string, threads int) (*lease, error) {
	n, p, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &httpError{http.StatusServiceUnavailable, "server shutting down"}
	}
	// Only a request that will wait behind others (every slot busy) takes
	// a queue slot.
	if e := r.loaded[n]; e != nil && e.users >= e.slots && r.waiting >= r.maxQueue {
		r.mu.Unlock()
		return nil, errQueueFull
	}
	r.waiting++
	r.metrics.queueDepth.Set(float64(r.waiting))
	e := r.loaded[n]
	loader := e == nil
	if loader {
		e = &entry{name: n, path: p, ready: make(chan struct{}), slots: r.maxSlots(), keepAlive: r.keepAlive}
		r.loaded[n] = e
	}
	e.users++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	r.mu.Unlock()

	l := &lease{r: r, e: e}
	fail := func(err error) (*lease, error) {
		r.mu.Lock()
		r.waiting--
		r.metrics.queueDepth.Set(float64(r.waiting))
		r.mu.Unlock()
		l.finish(nil, false)
		return nil, err
	}
	if loader {
		r.load(e, threads)
		l.loadDur = e.loadDur
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if e.err != nil {
		return fail(e.err)
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	r.mu.Lock()
	r.waiting--
	r.metrics.queueDepth.Set(float64(r.waiting))
	r.mu.Unlock()
	return l, nil
}

func (r *registry) load(e *entry, threads int) {
	if threads <= 0 {
		threads = r.threads
	}
	start := time.Now()
	m, err := r.backend.Load(e.path, threads)
	e.loadDur = time.Since(start)
	if err != nil {
		e.err = &httpError{http.StatusInternalServerError, fmt.Sprintf("loading model %q: %v", e.name, err)}
		r.log.Printf("%v", e.err)
		r.mu.Lock()
		if r.loaded[e.name] == e {
			delete(r.loaded, e.name)
		}
		r.mu.Unlock()
		close(e.ready)
		return
	}
	meta := r.meta(m.Meta())
	e.tmpl, e.tmplErr = meta.template()
	switch {
	case e.tmplErr == nil && r.chatTemplate != "":
		r.log.Printf("model %s: chat template replaced by --chat-template (%s)", e.name, e.tmpl.Kind())
	case e.tmplErr != nil:
		r.log.Printf("model %s: %v", e.name, e.tmplErr)
	case e.tmpl.Default:
		r.log.Printf("model %s has no chat template; chat requests use ChatML", e.name)
	case e.tmpl.Kind() != "jinja":
		r.log.Printf("model %s: chat template rendered by the built-in %s format", e.name, e.tmpl.Kind())
	}
	slots := r.slotsFor(e.name, meta)
	e.sem = make(chan struct{}, slots)
	r.log.Printf("loaded model %s in %v", e.name, e.loadDur.Round(time.Millisecond))
	r.mu.Lock()
	e.slots = slots
	if r.closed || r.loaded[e.name] != e { // shut down while loading
		r.mu.Unlock()
		m.Close()
		e.err = &httpError{http.StatusServiceUnavailable, "server shutting down"}
		close(e.ready)
		return
	}
	e.model = m
	r.metrics.modelsLoaded.Set(float64(r.countLoaded()))
	r.mu.Unlock()
	close(e.ready)
}

// maxSlots is the most slots a model may get: --parallel, or the cap of
// the automatic choice.
func (r *registry) maxSlots() int {
	if r.parallel > 0 {
		return r.parallel
	}
	return MaxAutoParallel
}

// slotsFor chooses a loaded model's slots (--parallel, or as many KV
// caches of its default context as fit in the KV budget) and logs the
// choice.
func (r *registry) slotsFor(name string, meta ModelMeta) int {
	if r.parallel > 0 {
		r.log.Printf("model %s: %d slots (--parallel)", name, r.parallel)
		return r.parallel
	}
	n := autoSlots(r.kvBudget, meta.KVBytesPerPos, meta.DefaultCtx, MaxAutoParallel)
	if meta.KVBytesPerPos > 0 && meta.DefaultCtx > 0 {
		r.log.Printf("model %s: %d slots (KV cache %d MiB each at context %d; KV budget %d MiB, at most %d slots; set with --parallel or --kv-budget)",
			name, n, meta.KVBytesPerPos*int64(meta.DefaultCtx)>>20, meta.DefaultCtx, r.kvBudget>>20, MaxAutoParallel)
	} else {
		r.log.Printf("model %s: %d slots (its KV size is unknown)", name, n)
	}
	return n
}

func (r *registry) countLoaded() int {
	n := 0
	for _, e := range r.loaded {
		if e.model != nil {
			n++
		}
	}
	return n
}

// release ends the lease; keepAlive (nil: keep the model's current setting)
// sets how long the model stays loaded once idle (0 unloads it now, < 0 never).
func (l *lease) release(keepAlive *time.Duration) {
	<-l.e.sem
	l.finish(keepAlive, true)
}

func (l *lease) finish(keepAlive *time.Duration, used bool) {
	if l.released {
		return
	}
	l.released = true
	r, e := l.r, l.e
	var unload Model
	r.mu.Lock()
	e.users--
	if keepAlive != nil {
		e.keepAlive = *keepAlive
	}
	if used {
		e.lastUsed = time.Now()
	}
	if e.users == 0 && e.model != nil && r.loaded[e.name] == e {
		switch {
		case e.keepAlive == 0:
			delete(r.loaded, e.name)
			unload = e.model
		case e.keepAlive > 0:
			e.expires = time.Now().Add(e.keepAlive)
			e.timer = time.AfterFunc(e.keepAlive, func() { r.expire(e) })
		default:
			e.expires = time.Time{}
		}
	}
	r.metrics.modelsLoaded.Set(float64(r.countLoaded()))
	r.mu.Unlock()
	if unload != nil {
		unload.Close()
		r.log.Printf("unloaded model %s", e.name)
	}
}

func (r *registry) expire(e *entry) {
	r.mu.Lock()
	if r.loaded[e.name] != e || e.users > 0 || time.Now().Before(e.expires) {
		r.mu.Unlock()
		return
	}
	delete(r.loaded, e.name)
	r.metrics.modelsLoaded.Set(float64(r.countLoaded()))
	r.mu.Unlock()
	e.model.Close()
	releaseMemory()
	r.log.Printf("unloaded model %s after keep-alive", e.name)
}

// unload drops an idle model now (keep_alive 0 without a prompt); a model
// in use is unloaded when its last request ends.
func (r *registry) unload(name string) error {
	n, _, err := r.resolve(name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	e := r.loaded[n]
	if e == nil {
		r.mu.Unlock()
		return nil
	}
	e.keepAlive = 0
	var m Model
	if e.users == 0 && e.model != nil {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(r.loaded, n)
		m = e.model
	}
	r.metrics.modelsLoaded.Set(float64(r.countLoaded()))
	r.mu.Unlock()
	if m != nil {
		m.Close()
		releaseMemory()
		r.log.Printf("unloaded model %s", n)
	}
	return nil
}

// running describes a loaded model for /api/ps and the Ole model list.
type running struct {
	Name     string
	Expires  time.Time // zero: never
	LastUsed time.Time
	Meta     ModelMeta
	Slots    int // generations it runs at once
}

func (r *registry) running() []running {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []running
	for _, e := range r.loaded {
		if e.model == nil {
			continue
		}
		exp := e.expires
		if e.users > 0 && e.keepAlive > 0 {
			exp = time.Now().Add(e.keepAlive)
		}
		out = append(out, running{Name: e.name, Expires: exp, LastUsed: e.lastUsed, Meta: r.meta(e.model.Meta()), Slots: e.slots})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUsed.After(out[j].LastUsed) })
	return out
}

func (r *registry) isLoaded(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.loaded[name]
	return e != nil && e.model != nil
}

// close unloads every model; later requests get 503.
func (r *registry) close() error {
	r.mu.Lock()
	r.closed = true
	var ms []Model
	for n, e := range r.loaded {
		if e.timer != nil {
			e.timer.Stop()
		}
		if e.model != nil {
			ms = append(ms, e.model)
		}
		delete(r.loaded, n)
	}
	r.metrics.modelsLoaded.Set(0)
	r.mu.Unlock()
	var first error
	for _, m := range ms {
		if err := m.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// releaseMemory gives the memory of an unloaded model (KV cache, prefix
// cache, scratch: hundreds of MB) back to the system now, as Ollama's
// runner process exiting does, instead of whenever the Go runtime gets to
// it: one garbage collection per unload.
func releaseMemory() { debug.FreeOSMemory() }

// slotCount is the entry's slots, read under the registry's lock.
func (e *entry) slotCount(r *registry) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.slots
}

// KVReporter is implemented by a Model that can tell how many token
// positions the KV caches of its running generations hold (prompt, reused
// prefix and generated tokens). The server turns it into the KV-cache
// utilization of /metrics.
type KVReporter interface {
	KVTokens() int64
}

// loadState is a snapshot of the registry's load for /metrics and /readyz.
type loadState struct {
	running, waiting int
	loading          bool  // a model is being loaded
	queueFull        bool  // the next request for a busy model would get a 503
	kvUsed, kvCap    int64 // token positions in use / that the loaded models' slots hold
}

func (r *registry) state() loadState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := loadState{waiting: r.waiting}
	for _, e := range r.loaded {
		if e.model == nil {
			select {
			case <-e.ready: // failed load, not yet removed
			default:
				st.loading = true
			}
			continue
		}
		st.running += len(e.sem)
		slots := cap(e.sem) // the model's slot count, whatever set it
		if e.users >= slots && r.waiting >= r.maxQueue {
			st.queueFull = true
		}
		st.kvCap += int64(slots) * int64(e.model.Meta().DefaultCtx)
		if k, ok := e.model.(KVReporter); ok {
			st.kvUsed += k.KVTokens()
		}
	}
	return st
}
