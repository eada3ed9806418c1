package runtime

import (
	"bufio"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
)

// pool is a persistent set of worker goroutines. run hands the same
// function to every worker (worker 0 is the caller) and waits for all of
// them; each worker picks its share of the op from its index. One op runs at
// a time; callers from several sessions are serialized.
type pool struct {
	n    int
	mu   sync.Mutex
	work []chan func(int)
	wg   sync.WaitGroup
}

func newPool(n int) *pool {
	if n < 1 {
		n = 1
	}
	p := &pool{n: n, work: make([]chan func(int), n)}
	for i := 1; i < n; i++ {
		ch := make(chan func(int), 1)
		p.work[i] = ch
		go func(id int) {
			for f := range ch {
				f(id)
				p.wg.Done()
			}
		}(i)
	}
	return p
}

// run calls f(0) .. f(n-1) concurrently and returns when all have returned.
func (p *pool) run(f func(worker int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wg.Add(p.n - 1)
	for i := 1; i < p.n; i++ {
		p.work[i] <- f
	}
	f(0)
	p.wg.Wait()
}

// close stops the workers.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 1; i < p.n; i++ {
		if p.work[i] != nil {
			close(p.work[i])
			p.work[i] = nil
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

// PhysicalCores counts the physical cores of this machine: unique (package,
// core) pairs from /sys or /proc/cpuinfo on Linux, runtime.NumCPU otherwise.
func PhysicalCores() int {
	if n := coresFromSys(); n > 0 {
		return min(n, goruntime.NumCPU())
	}
	if n := coresFromCPUInfo(); n > 0 {
		return min(n, goruntime.NumCPU())
	}
	return goruntime.NumCPU()
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
