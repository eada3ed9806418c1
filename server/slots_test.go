package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/woolly-llm/woolly/runtime"
)

// loadedSlots is the slots of a loaded model.
func loadedSlots(t *testing.T, s *Server, name string) int {
	s.models.mu.Lock()
	defer s.models.mu.Unlock()
	e := s.models.loaded[name]
	if e == nil || e.model == nil {
		t.Fatalf("model %s is not loaded", name)
	}
	return e.slots
}

func TestAutoSlots(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		budget, perPos int64
		nctx, cap      int
		want           int
	}{
		{6 << 30, 22528, 2048, 16, 16},               // TinyLlama-shaped, 44 MiB a slot: the cap
		{6 << 30, 22528, 2048, 32, 32},               // a higher cap
		{256 * mib, 22528, 2048, 16, 5},              // 256 MiB / 44 MiB
		{256 * mib, 22528, 4096, 16, 2},              // twice the context, half the slots
		{10 * mib, 22528, 2048, 16, 1},               // not even one fits: still one
		{3 * 44 * mib, 44 * mib / 2048, 2048, 16, 3}, // exactly three
		{3*44*mib - 1, 44 * mib / 2048, 2048, 16, 2},
		{1 << 40, 0, 2048, 16, DefaultParallel}, // KV size unknown
		{1 << 40, 22528, 0, 16, DefaultParallel},
		{1 << 40, 0, 2048, 2, 2},
		{1 << 40, 1 << 62, 1 << 20, 16, 1}, // overflow
	} {
		if got := autoSlots(c.budget, c.perPos, c.nctx, c.cap); got != c.want {
			t.Errorf("autoSlots(%d, %d, %d, %d) = %d, want %d", c.budget, c.perPos, c.nctx, c.cap, got, c.want)
		}
	}
}

// props reads /props of the real model: total_slots and n_ctx.
func props(t *testing.T, url string) (slots, nctx int) {
	res, err := http.Get(url + "/props?model=" + realModel)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var p struct {
		TotalSlots int `json:"total_slots"`
		Default    struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.NewDecoder(res.Body).Decode(&p); res.StatusCode != 200 || err != nil {
		t.Fatalf("/props: %d %v", res.StatusCode, err)
	}
	return p.TotalSlots, p.Default.NCtx
}

// The slots come from the KV budget unless --parallel sets them, and
// /props and /api/ps report them.
func TestSlotsFromBudget(t *testing.T) {
	realModelsDir(t)
	m, err := runtime.Load(realModelsDir(t)+"/"+realModel+".gguf", runtime.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	perPos, defCtx := m.KVBytesPerPosition(), m.Info().DefaultCtx
	m.Close()
	if perPos <= 0 {
		t.Fatalf("KV bytes per position %d", perPos)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want func(nctx int) int
	}{
		{"default", Config{}, func(int) int { return MaxAutoParallel }}, // a tiny model: the cap
		{"budget for 3", Config{KVBudget: -1}, func(int) int { return 3 }},
		{"budget below one", Config{KVBudget: 1}, func(int) int { return 1 }},
		{"explicit", Config{Parallel: runtime.Ptr(2), KVBudget: 1}, func(int) int { return 2 }},
		{"explicit above the cap", Config{Parallel: runtime.Ptr(MaxAutoParallel + 3)}, func(int) int { return MaxAutoParallel + 3 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg.KVBudget == -1 { // three slots of the default context, and a bit
				cfg.KVBudget = 3*perPos*int64(defCtx) + perPos
			}
			url, stop, srv := startRealServer(t, cfg)
			defer stop()
			slots, nctx := props(t, url)
			if nctx != defCtx {
				t.Fatalf("n_ctx %d, the test assumed %d", nctx, defCtx)
			}
			if want := c.want(nctx); slots != want || loadedSlots(t, srv, realModel) != want {
				t.Errorf("total_slots %d (registry %d), want %d", slots, loadedSlots(t, srv, realModel), want)
			}
			res, err := http.Get(url + "/api/ps")
			if err != nil {
				t.Fatal(err)
			}
			var ps struct{ Models []struct{ Slots int } }
			json.NewDecoder(res.Body).Decode(&ps)
			res.Body.Close()
			if len(ps.Models) != 1 || ps.Models[0].Slots != slots {
				t.Errorf("/api/ps: %+v, want one model of %d slots", ps, slots)
			}
		})
	}
}

// At default settings, 8 concurrent streaming clients all get their first
// token before any of them finishes: none waits for another's slot.
func TestDefaultSlotsServeEight(t *testing.T) {
	url, stop := startReal(t, Config{})
	defer stop()
	// Load the model first so that loading is not in the timings.
	if st, b := post(t, url+"/api/generate", `{"model":"`+realModel+`","prompt":"Hi","stream":false,"options":{"num_predict":1}}`); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	const clients, tokens = 8, 100
	var mu sync.Mutex
	var firsts, dones []time.Time
	var errs []error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Go(func() {
			<-start
			body := fmt.Sprintf(`{"model":"%s","prompt":"Once upon a time, client %d","options":{"temperature":0,"num_predict":%d}}`, realModel, i, tokens)
			res, err := http.Post(url+"/api/generate", "application/json", strings.NewReader(body))
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			n, first := 0, time.Time{}
			var last struct {
				Done      bool   `json:"done"`
				EvalCount int    `json:"eval_count"`
				Response  string `json:"response"`
			}
			for sc.Scan() {
				if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
					break
				}
				if first.IsZero() && !last.Done {
					first = time.Now()
				}
				n++
			}
			done := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if res.StatusCode != 200 || !last.Done || first.IsZero() || last.EvalCount < 2 {
				errs = append(errs, fmt.Errorf("client %d: status %d, %d frames, last %+v", i, res.StatusCode, n, last))
				return
			}
			if last.EvalCount < tokens {
				t.Logf("client %d stopped after %d tokens", i, last.EvalCount)
			}
			firsts = append(firsts, first)
			dones = append(dones, done)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(firsts) != clients {
		t.Fatalf("%d of %d clients finished", len(firsts), clients)
	}
	lastFirst, firstDone := firsts[0], dones[0]
	for i := range firsts {
		if firsts[i].After(lastFirst) {
			lastFirst = firsts[i]
		}
		if dones[i].Before(firstDone) {
			firstDone = dones[i]
		}
	}
	if !lastFirst.Before(firstDone) {
		t.Errorf("the last first token came %v after the first client finished: clients waited for slots",
			lastFirst.Sub(firstDone).Round(time.Millisecond))
	}
}
