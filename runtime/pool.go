package runtime

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a persistent set of worker goroutines that share out the chunks
// of one op at a time. The caller is worker 0 and works too; idle workers
// spin briefly on the job sequence number before they park, so the short
// gaps between the ops of a token (norms, activation quantization) cost no
// wake-up. Chunks are claimed dynamically: a worker that is late (woken
// slowly, or preempted on a busy machine) finds the chunks already done by
// the others instead of holding up the op. One op runs at a time; callers
// from several sessions are serialized.
//
// A chunk that panics (a kernel's misuse check, an index out of range) is
// recovered on the worker that ran it, the op's other chunks still run, and
// runChunks then panics on the caller's goroutine with a *workerPanic
// holding the first panic's value and the stack of the goroutine that
// raised it; the pool stays usable.
type pool struct {
	n        int
	mu       sync.Mutex
	seq      atomic.Uint64       // bumped for every published job
	cur      atomic.Pointer[job] // the latest job
	quit     atomic.Bool
	sleeping []atomic.Bool                // worker i is parked (or about to) on wake[i]
	wake     []chan struct{}              // capacity 1
	wait     atomic.Pointer[atomic.Int64] // profiling: ns the caller waits for the others (nil: off)
}

// job is one op split into n chunks; f(wk, c) runs chunk c on worker wk
// (wk < pool.n, distinct for concurrently running chunks). The chunks are
// cut into one contiguous part per worker: worker wk claims the chunks of
// part wk in order, then helps with the others' (part wk+1, ...), so each
// worker reads one sequential stream of rows while nobody waits for a late
// worker's share. (With interleaved, one part: chunks in order to
// whoever is free, WOOLLY_CHUNKS=interleaved.)
type job struct {
	f     func(wk, c int)
	n     int64
	parts []jobPart
	done  atomic.Int64
	fin   chan struct{}               // capacity 1: sent by whoever finishes the last chunk
	fault atomic.Pointer[workerPanic] // the first chunk's panic (nil: none)
}

// workerPanic is a panic raised by a chunk of a pool job, re-raised on the
// job's caller: the original value and the stack where it was raised.
type workerPanic struct {
	value any
	stack []byte
}

func (w *workerPanic) Error() string {
	return fmt.Sprintf("%v\n\n[panicked in a pool job or batch step; the stack where it was raised:]\n%s", w.value, w.stack)
}

// Unwrap gives the original value when it is an error (errors.Is/As see it).
func (w *workerPanic) Unwrap() error {
	err, _ := w.value.(error)
	return err
}

// jobPart is chunks [next, end) of a job, on a cache line of its own.
type jobPart struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

func newJob(f func(wk, c int), n, parts int) *job {
	j := &job{f: f, n: int64(n), parts: make([]jobPart, parts), fin: make(chan struct{}, 1)}
	for k := range j.parts {
		j.parts[k].next.Store(int64(k * n / parts))
		j.parts[k].end = int64((k + 1) * n / parts)
	}
	return j
}

func (j *job) work(wk int) {
	np := len(j.parts)
	for k := 0; k < np; k++ {
		p := &j.parts[(wk+k)%np]
		for {
			c := p.next.Add(1) - 1
			if c >= p.end {
				break
			}
			j.chunk(wk, int(c))
		}
	}
}

// chunk runs chunk c on worker wk and counts it done, even when it panics:
// the panic is kept (the first one) for the caller to re-raise.
func (j *job) chunk(wk, c int) {
	defer func() {
		if r := recover(); r != nil {
			j.fault.CompareAndSwap(nil, &workerPanic{value: r, stack: debug.Stack()})
		}
		if j.done.Add(1) == j.n {
			j.fin <- struct{}{}
		}
	}()
	j.f(wk, c)
}

// interleavedChunks is WOOLLY_CHUNKS=interleaved: every job one part.
var interleavedChunks = os.Getenv("WOOLLY_CHUNKS") == "interleaved"

// spinFor is how long an idle worker polls for the next job, and the caller
// for the last chunks, before parking. Between the ops of one token the
// gaps are a few microseconds; longer spins only burn CPU that other
// processes on a busy machine could use (100 us measured no better).
const spinFor = 20 * time.Microsecond

func newPool(n int) *pool {
	if n < 1 {
		n = 1
	}
	p := &pool{n: n, sleeping: make([]atomic.Bool, n), wake: make([]chan struct{}, n)}
	for i := 1; i < n; i++ {
		p.wake[i] = make(chan struct{}, 1)
		go p.worker(i)
	}
	return p
}

func (p *pool) worker(id int) {
	var seen uint64
	for {
		s := p.seq.Load()
		if s == seen {
			s = p.spinSeq(seen)
		}
		if s == seen { // park; announce it, then re-check so a publish in between is not missed
			p.sleeping[id].Store(true)
			if s = p.seq.Load(); s == seen {
				<-p.wake[id]
			}
			p.sleeping[id].Store(false)
			continue
		}
		seen = s
		if p.quit.Load() {
			return
		}
		if j := p.cur.Load(); j != nil {
			j.work(id)
		}
	}
}

// spinSeq polls the job sequence number for up to spinFor.
func (p *pool) spinSeq(seen uint64) uint64 {
	var t0 time.Time
	for i := 1; ; i++ {
		if s := p.seq.Load(); s != seen {
			return s
		}
		if i%64 == 0 {
			if t0.IsZero() {
				t0 = time.Now()
			} else if time.Since(t0) > spinFor {
				return seen
			}
		}
	}
}

// publish makes j the current job and wakes parked workers.
func (p *pool) publish(j *job) {
	p.cur.Store(j)
	p.seq.Add(1)
	for i := 1; i < p.n; i++ {
		if p.sleeping[i].Load() {
			select {
			case p.wake[i] <- struct{}{}:
			default:
			}
		}
	}
}

// runChunks calls f(wk, c) once for every chunk c in [0, n), spread over the
// workers, and returns when all have returned. Workers running at the same
// time have distinct wk (< p.n), so wk may index per-worker scratch. If a
// chunk panics, runChunks panics with a *workerPanic once every chunk has
// returned.
func (p *pool) runChunks(n int, f func(wk, c int)) {
	p.runChunksWait(n, spinFor, f)
}

// runChunksWait is runChunks with the caller, once its share is done,
// polling for the others' last chunks for up to wait before it blocks.
func (p *pool) runChunksWait(n int, wait time.Duration, f func(wk, c int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 1 || n == 1 {
		for c := 0; c < n; c++ {
			f(0, c)
		}
		return
	}
	parts := p.n
	if interleavedChunks {
		parts = 1
	}
	j := newJob(f, n, parts)
	p.publish(j)
	defer j.raise()
	j.work(0)
	if j.done.Load() == j.n {
		return
	}
	t0 := time.Now()
	if w := p.wait.Load(); w != nil {
		defer func() { w.Add(int64(time.Since(t0))) }()
	}
	for i := 1; ; i++ {
		if j.done.Load() == j.n {
			return
		}
		if i%64 == 0 && time.Since(t0) > wait {
			break
		}
	}
	<-j.fin
}

// raise re-raises a chunk's panic on the caller (after the job is done).
func (j *job) raise() {
	if w := j.fault.Load(); w != nil {
		panic(w)
	}
}

// run calls f(0) .. f(n-1) concurrently and returns when all have returned.
// Each index is run once, by whichever worker claims it first (the caller
// included), so f must not assume which goroutine runs it.
func (p *pool) run(f func(worker int)) {
	p.runChunks(p.n, func(_, c int) { f(c) })
}

// close stops the workers.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quit.Swap(true) {
		return
	}
	p.cur.Store(nil)
	p.seq.Add(1)
	for i := 1; i < p.n; i++ {
		select {
		case p.wake[i] <- struct{}{}:
		default:
		}
	}
}

// split returns worker w's share [r0, r1) of n rows divided among nw
// workers, in chunks that are multiples of align rows.
func split(n, w, nw, align int) (int, int) {
	if align < 1 {
		align = 1
	}
	chunk := (n + nw - 1) / nw
	chunk = (chunk + align - 1) / align * align
	r0 := min(w*chunk, n)
	r1 := min(r0+chunk, n)
	return r0, r1
}

// PhysicalCores counts the cores worth one worker each, the default thread
// count: on macOS the performance cores (sysctl hw.perflevel0.physicalcpu,
// falling back to hw.physicalcpu, as llama.cpp does: efficiency cores would
// hold back every barrier); on Linux the unique (package, core) pairs from
// /sys or /proc/cpuinfo; runtime.NumCPU otherwise.
func PhysicalCores() int {
	if n := performanceCores(sysctlUint32); n > 0 {
		return min(n, goruntime.NumCPU())
	}
	if n := coresFromSys(); n > 0 {
		return min(n, goruntime.NumCPU())
	}
	if n := coresFromCPUInfo(); n > 0 {
		return min(n, goruntime.NumCPU())
	}
	return goruntime.NumCPU()
}

// performanceCores asks sysctl (macOS) for the performance-core count, then
// for the physical-core count; 0 where neither answers (other systems).
func performanceCores(sysctl func(name string) (uint32, error)) int {
	for _, name := range []string{"hw.perflevel0.physicalcpu", "hw.physicalcpu"} {
		if n, err := sysctl(name); err == nil && n > 0 {
			return int(n)
		}
	}
	return 0
}

func coresFromSys() int {
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology")
	seen := map[string]bool{}
	for _, d := range dirs {
		core, err1 := os.ReadFile(filepath.Join(d, "core_id"))
		pkg, err2 := os.ReadFile(filepath.Join(d, "physical_package_id"))
		if err1 != nil || err2 != nil {
			return 0
		}
		seen[strings.TrimSpace(string(pkg))+"/"+strings.TrimSpace(string(core))] = true
	}
	return len(seen)
}

func coresFromCPUInfo() int {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	seen := map[string]bool{}
	phys, core := "", ""
	sc := bufio.NewScanner(f)
	flush := func() {
		if core != "" {
			seen[phys+"/"+core] = true
		}
		phys, core = "", ""
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			core = strings.TrimSpace(v)
		}
	}
	flush()
	return len(seen)
}
