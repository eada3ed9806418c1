package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/server"
)

// ServeOptions choose what Serve measures: for each client count C, C
// clients at once each stream one /api/generate request of Gen tokens from
// a short prompt of their own, through a real HTTP server on loopback.
type ServeOptions struct {
	Model    string // GGUF path
	Clients  []int  // client counts (each ≥ 1)
	Gen      int    // tokens each request generates
	Threads  int    // model threads (0: the runtime's default)
	Parallel int    // the server's --parallel (0: its default, chosen from the KV budget)
	Reps     int    // rounds per client count (≥ 1), after one warm-up round
}

// ServeResult is one client count's figures, the median over the rounds.
type ServeResult struct {
	Clients    int     `json:"clients"`
	TokensPerS float64 `json:"tokens_per_s"` // all clients' generated tokens / round wall time
	StreamTPS  float64 `json:"stream_tokens_per_s"`
	TTFTMedian float64 `json:"ttft_median_s"` // time to first token, median client
	TTFTMax    float64 `json:"ttft_max_s"`    // slowest client's
	Tokens     int     `json:"tokens"`        // generated in the median round
	Wall       float64 `json:"wall_s"`
}

// Serve runs the serving benchmark.
func Serve(ctx context.Context, o ServeOptions) ([]ServeResult, error) {
	if len(o.Clients) == 0 || o.Gen < 1 || o.Reps < 1 {
		return nil, errors.New("serve bench: need client counts, a generation length ≥ 1 and ≥ 1 round")
	}
	maxC := 0
	for _, c := range o.Clients {
		if c < 1 {
			return nil, fmt.Errorf("serve bench: %d clients", c)
		}
		maxC = max(maxC, c)
	}
	if o.Parallel < 0 {
		return nil, fmt.Errorf("serve bench: --parallel %d is negative", o.Parallel)
	}
	dir, file := filepath.Split(o.Model)
	name := strings.TrimSuffix(file, ".gguf")
	if dir == "" {
		dir = "."
	}
	srv, err := server.New(server.Config{ModelsDir: dir, Threads: o.Threads, Parallel: runtime.Ptr(o.Parallel),
		MaxQueue: runtime.Ptr(maxC), KeepAlive: runtime.Ptr(time.Duration(-1))}, server.RuntimeBackend{})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/api/generate"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxC}}
	defer client.CloseIdleConnections()

	round := 0
	var out []ServeResult
	for _, c := range o.Clients {
		var rounds []ServeResult
		for r := 0; r <= o.Reps; r++ { // round 0 warms up
			round++
			res, err := serveRound(ctx, client, url, name, c, o.Gen, round)
			if err != nil {
				return nil, err
			}
			if r > 0 {
				rounds = append(rounds, res)
			}
		}
		slices.SortFunc(rounds, func(a, b ServeResult) int { return int((a.TokensPerS - b.TokensPerS) * 1e6) })
		out = append(out, rounds[len(rounds)/2])
	}
	return out, nil
}

// serveRound runs c clients at once, each streaming one request.
func serveRound(ctx context.Context, client *http.Client, url, model string, c, gen, round int) (ServeResult, error) {
	type one struct {
		ttft   time.Duration
		tokens int
		genDur time.Duration
		err    error
	}
	res := make([]one, c)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range c {
		wg.Go(func() {
			// A short prompt of its own per client and round: no prefix reuse.
			body, _ := json.Marshal(map[string]any{"model": model, "raw": true, "stream": true,
				"prompt":  fmt.Sprintf("%d.%d Once upon a time", round, i),
				"options": map[string]any{"num_predict": gen, "temperature": 0, "seed": i}})
			req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(string(body)))
			if err != nil {
				res[i].err = err
				return
			}
			req.Header.Set("Content-Type", "application/json") // the server takes JSON bodies only
			r, err := client.Do(req)
			if err != nil {
				res[i].err = err
				return
			}
			defer r.Body.Close()
			if r.StatusCode != http.StatusOK {
				res[i].err = fmt.Errorf("status %s", r.Status)
				return
			}
			sc := bufio.NewScanner(r.Body)
			for sc.Scan() {
				var f struct {
					Response     string `json:"response"`
					Done         bool   `json:"done"`
					EvalCount    int    `json:"eval_count"`
					EvalDuration int64  `json:"eval_duration"`
					Error        string `json:"error"`
				}
				if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
					res[i].err = fmt.Errorf("bad frame %q: %v", sc.Text(), err)
					return
				}
				if f.Error != "" {
					res[i].err = errors.New(f.Error)
					return
				}
				if res[i].ttft == 0 && !f.Done {
					res[i].ttft = time.Since(start)
				}
				if f.Done {
					res[i].tokens, res[i].genDur = f.EvalCount, time.Duration(f.EvalDuration)
				}
			}
			res[i].err = sc.Err()
		})
	}
	wg.Wait()
	wall := time.Since(start)
	out := ServeResult{Clients: c, Wall: wall.Seconds()}
	var ttfts []float64
	var streamTPS float64
	for i, r := range res {
		if r.err != nil {
			return out, fmt.Errorf("client %d: %w", i, r.err)
		}
		out.Tokens += r.tokens
		ttfts = append(ttfts, r.ttft.Seconds())
		if r.genDur > 0 {
			streamTPS += float64(r.tokens) / r.genDur.Seconds()
		}
	}
	slices.Sort(ttfts)
	out.TokensPerS = float64(out.Tokens) / wall.Seconds()
	out.StreamTPS = streamTPS / float64(c)
	out.TTFTMedian, out.TTFTMax = ttfts[len(ttfts)/2], ttfts[len(ttfts)-1]
	return out, nil
}
