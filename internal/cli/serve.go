package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/woolly-llm/woolly/server"
)

// envOr returns the environment variable's value, or def when unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// parseQueue reads --max-queue: a count, 0 or more.
func parseQueue(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a count of requests, 0 or more, not %q", s)
	}
	return n, nil
}

// parseParallel reads --parallel: a count, 1 or more, or 0 (automatic).
func parseParallel(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a count of sequences, 1 or more (0: from the KV budget), not %q", s)
	}
	return n, nil
}

// parseKVBudget reads --kv-budget: a size above 0 (512M, 4G).
func parseKVBudget(s string) (int64, error) {
	n, err := parseSize(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("want a size above 0, e.g. 4G, not %q", s)
	}
	return n, nil
}

// parseKeepAlive reads a keep-alive: a duration ("5m") or seconds ("300");
// negative keeps models loaded.
func parseKeepAlive(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("keep-alive %q is neither a duration nor seconds", s)
	}
	return time.Duration(n * float64(time.Second)), nil
}

func envInt(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not an integer", name, v)
	}
	return n, nil
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	// A bad environment variable is an error naming it (all the bad ones),
	// before the flags are parsed.
	port, errPort := envInt("WOOLLY_PORT", 8080)
	maxQueue, errQueue := addOptional(fs, "max-queue", "WOOLLY_MAX_QUEUE",
		fmt.Sprintf("requests that may wait for a model; more get 503 (0: none may wait; default %d; env WOOLLY_MAX_QUEUE)", server.DefaultMaxQueue),
		parseQueue)
	parallel, errParallel := addOptional(fs, "parallel", "WOOLLY_PARALLEL",
		fmt.Sprintf("requests one model generates at once, batched together; more wait in the queue (default 0: as many KV caches of the model's context as fit in --kv-budget, at most %d; env WOOLLY_PARALLEL)", server.MaxAutoParallel),
		parseParallel)
	kvBudget, errBudget := addOptional(fs, "kv-budget", "WOOLLY_KV_BUDGET",
		fmt.Sprintf("`SIZE` the KV caches of one model's slots may take together, which sets the slots when --parallel is 0 (default a quarter of memory, here %dM; env WOOLLY_KV_BUDGET)", server.DefaultKVBudget()>>20),
		parseKVBudget)
	keep, errKeep := addOptional(fs, "keep-alive", "WOOLLY_KEEP_ALIVE",
		fmt.Sprintf("how long an idle model stays loaded (0: unload after each request, -1: forever; default %v; env WOOLLY_KEEP_ALIVE)", server.DefaultKeepAlive),
		parseKeepAlive)
	threadsDef, errThreads := envInt("WOOLLY_THREADS", 0)
	host := fs.String("host", envOr("WOOLLY_HOST", "127.0.0.1"), "address to bind (env WOOLLY_HOST)")
	fs.IntVar(&port, "port", port, "port (env WOOLLY_PORT; 11434 for clients that expect Ollama's)")
	models := fs.String("models", envOr("WOOLLY_MODELS", ""), "models `directory`: NAME is DIR/NAME.gguf (env WOOLLY_MODELS; default ~/.woolly/models)")
	apiKey := fs.String("api-key", envOr("WOOLLY_API_KEY", ""), "require this key as Bearer token or x-api-key (env WOOLLY_API_KEY)")
	metricsKey := fs.String("metrics-key", envOr("WOOLLY_METRICS_KEY", ""),
		"require this key on /metrics, which is open otherwise, even with --api-key (may be the same key; env WOOLLY_METRICS_KEY)")
	allowedHosts := fs.String("allowed-hosts", envOr("WOOLLY_ALLOWED_HOSTS", ""),
		"comma-separated host `names` answered besides localhost and loopback addresses when bound to loopback (\"*\": any; env WOOLLY_ALLOWED_HOSTS)")
	cors := fs.String("cors-origin", envOr("WOOLLY_CORS_ORIGINS", ""), "comma-separated browser `origins` allowed (env WOOLLY_CORS_ORIGINS)")
	timeoutS := fs.String("timeout", envOr("WOOLLY_TIMEOUT", "0"), "per-request time limit, e.g. 5m (0: none; env WOOLLY_TIMEOUT)")
	bodyTimeoutS := fs.String("body-timeout", envOr("WOOLLY_BODY_TIMEOUT", server.DefaultBodyTimeout.String()),
		"time a client may take to send a request body; slower ones get 408 (env WOOLLY_BODY_TIMEOUT)")
	threads := fs.Int("t", threadsDef, "threads per model (0: physical cores; env WOOLLY_THREADS)")
	nctx := fs.Int("c", 0, "context length cap per model (0: the model's, at most the runtime's default)")
	prefix, errPrefix := prefixFlag(fs, "WOOLLY_PREFIX_CACHE")
	if err := errors.Join(errPort, errQueue, errParallel, errBudget, errKeep, errThreads, errPrefix); err != nil {
		return err
	}
	removedFlag(fs, "dequant-cache", "WOOLLY_DEQUANT_CACHE")
	tf := addTemplateFlags(fs)
	kvTypes := addKVTypeFlags(fs)
	if err := parseFlags(fs, stripIgnored(stderr, fs.Name(), args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := removedEnv("WOOLLY_DEQUANT_CACHE"); err != nil {
		return err
	}
	chatTemplate, err := tf.override(fs)
	if err != nil {
		return err
	}
	if *models == "" { // the models directory of run, list, import, ...
		if *models, err = defaultModelsDir(); err != nil {
			return err
		}
	}
	if err := checkThreads(fs, *threads); err != nil {
		return err
	}
	if *nctx < 0 {
		return usageError(fs, "-c %d: want 0 (each model's context) or a context length", *nctx)
	}
	if err := kvTypes.check(fs); err != nil {
		return err
	}
	timeout, err := time.ParseDuration(*timeoutS)
	if err != nil || timeout < 0 {
		return usageError(fs, "--timeout %q: want a duration, 0 or more, e.g. 5m", *timeoutS)
	}
	bodyTimeout, err := time.ParseDuration(*bodyTimeoutS)
	if err != nil || bodyTimeout <= 0 {
		return usageError(fs, "--body-timeout %q: want a duration above 0, e.g. 60s", *bodyTimeoutS)
	}
	var hosts []string
	for _, h := range strings.Split(*allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	var origins []string
	for _, o := range strings.Split(*cors, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	var kvb int64 // 0: the server's default
	if kvBudget.v != nil {
		kvb = *kvBudget.v
	}
	logger := log.New(stderr, "woolly serve: ", log.LstdFlags)
	caches := server.NewCacheStats()
	srv, err := server.New(server.Config{ModelsDir: *models, APIKey: *apiKey, MetricsKey: *metricsKey, CORSOrigins: origins, MaxQueue: maxQueue.v, Parallel: parallel.v, KVBudget: kvb,
		Timeout: timeout, BodyTimeout: bodyTimeout, KeepAlive: keep.v, Threads: *threads, Logger: logger,
		LocalOnly: isLoopback(*host), AllowedHosts: hosts, ChatTemplate: chatTemplate},
		server.RuntimeBackend{ContextLength: *nctx, PrefixCache: prefix.v,
			CacheTypeK: *kvTypes.k, CacheTypeV: *kvTypes.v, Caches: caches})
	if err != nil {
		return err
	}
	defer srv.Close()
	// /metrics: woolly_prefix_cache_* (hits, misses, hit_rate, evictions,
	// bytes, budget, time_saved_seconds, ...).
	srv.RegisterStats("prefix_cache", caches.Prefix)

	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	if *apiKey == "" && !isLoopback(*host) {
		logger.Printf("warning: listening on %s without an API key", *host)
	}
	base, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return base }, ErrorLog: logger}
	logger.Printf("listening on http://%s (models in %s)", ln.Addr(), *models)

	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-sig.Done():
	}
	stop()
	// Requests in flight get shutdownGrace to finish; then their contexts
	// end, which every stage (queue, template, prompt, generation) checks,
	// so the process is gone within 10 s of the signal.
	logger.Printf("shutting down: finishing requests in flight (%v at most)", shutdownGrace)
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		cancelAll() // stop the generations still running
		hs.Close()
	}
	<-served
	srv.Close() // waits for the handlers, which stop once canceled
	logger.Printf("stopped")
	return nil
}

// shutdownGrace is how long requests in flight may run on after SIGTERM.
const shutdownGrace = 5 * time.Second

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
